//! Maps on demand: a forward can keep what its maps are made of (each attention call's queries
//! and the keys they saw: `MapSources`) and compute any head's rows again. They must be the
//! maps the forward recorded, bit for bit, for every kind of attention: an encoder's, a
//! translator's decoder (one call per decode step, the cross-attention's keys fixed), and a
//! causal decoder's that reuses its previous forward's cache while the user types.

use attnviz::models::{Asks, Model};
use attnviz::nn::probe::{KeepMaps, Site};
use attnviz::result::{Attended, AttentionKind, GenerateOptions};
use std::path::Path;

fn load(dir: &str) -> Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(dir);
    Model::load_dir(&path).unwrap_or_else(|e| panic!("{e} — run `make models` first"))
}

fn with_sources(m: &Model, text: &str, generate: usize) -> Attended {
    let options = GenerateOptions { max_new_tokens: generate, ..GenerateOptions::default() };
    let asks = Asks { sources: true, ..Asks::default() };
    m.attend_asking(text, &options, asks).unwrap().0
}

/// Every head of every block, computed again from the sources: the recorded map, bit for bit;
/// and rows asked for in pieces are the same rows.
fn assert_sources_remake_the_maps(a: &Attended, what: &str) {
    let sources = a.sources.as_ref().expect("sources asked for");
    assert_eq!(sources.len(), a.attentions.len(), "{what}: one per block");
    for b in &a.attentions {
        let s = sources
            .iter()
            .find(|s| (s.attention.site.kind, s.attention.site.layer) == (b.kind, b.layer))
            .expect("sources of each block");
        let (q, k) = (b.query_len, b.key_len);
        assert_eq!(
            (s.attention.heads, s.query_len(), s.key_len()),
            (b.heads, q, k),
            "{what}: {:?} {}",
            b.kind,
            b.layer
        );
        for h in 0..b.heads {
            let again = s.head_rows(h, 0..q);
            let recorded = &b.probs[h * q * k..(h + 1) * q * k];
            let same = again.iter().zip(recorded).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same && again.len() == recorded.len(),
                "{what}: {:?} layer {} head {h} differs",
                b.kind,
                b.layer
            );
        }
        let mid = q / 2;
        let pieces = [s.head_rows(b.heads - 1, 0..mid), s.head_rows(b.heads - 1, mid..q)].concat();
        assert_eq!(pieces, s.head_rows(b.heads - 1, 0..q), "{what}: rows in two pieces");
    }
}

#[test]
fn an_encoders_maps_are_remade_from_their_sources() {
    let m = load("minilm");
    for text in ["", "The animal didn't cross the street because it was too tired."] {
        assert_sources_remake_the_maps(&with_sources(&m, text, 0), text);
    }
}

#[test]
fn a_translators_maps_are_remade_from_their_sources() {
    let m = load("en-pt");
    let a = with_sources(&m, "The cat sat on the mat because it was warm.", 0);
    assert!(a.output.target_tokens.len() > 3, "decoded step by step");
    assert_sources_remake_the_maps(&a, "translator");
}

#[test]
fn a_causal_decoders_maps_are_remade_while_it_reuses_its_previous_forward() {
    let m = load("smollm2");
    // Typed at the end, deleted, edited in the middle, generated: each forward after the first
    // starts from the last one's cache and sources.
    for (text, generate) in [
        ("The cat sat", 0),
        ("The cat sat on the", 0),
        ("The cat sat", 0),
        ("The dog sat on", 3),
        ("The dog sat on the", 2),
    ] {
        assert_sources_remake_the_maps(&with_sources(&m, text, generate), text);
    }
}

/// A forward that keeps the maps of one layer (a long text's, sent to a view that draws that
/// layer) must score every head as one that keeps them all — the scores come from each row's
/// statistics, taken while the forward has the row — and keep that layer's map unchanged. For
/// the causal decoder each such forward continues the last one (typing, deleting, editing,
/// generating); the one it is compared with starts afresh.
#[test]
fn a_forward_keeping_one_layers_maps_scores_every_head_as_one_keeping_all() {
    type Texts<'a> = &'a [(&'a str, usize)];
    let cases: [(&str, AttentionKind, Texts); 3] = [
        ("minilm", AttentionKind::EncoderSelf, &[("The cat, tired, sat [SEP] on the mat.", 0)]),
        ("en-pt", AttentionKind::Cross, &[("The cat sat on the mat, because it was warm.", 0)]),
        (
            "smollm2",
            AttentionKind::DecoderSelf,
            &[
                ("The cat sat on the mat", 0),
                ("The cat sat on", 0),
                ("The cat sat on it, then", 2),
                ("The cat sat", 1),
                ("A cat sat.", 3),
            ],
        ),
    ];
    for (dir, kind, texts) in cases {
        let (continuing, fresh) = (load(dir), load(dir));
        let site = Site { kind, layer: 1 };
        for &(text, generate) in texts {
            let options =
                GenerateOptions { max_new_tokens: generate, ..GenerateOptions::default() };
            let keep_maps = KeepMaps::Within { bytes: 0, sites: vec![site] };
            let asks = Asks { sources: true, keep_maps, ..Asks::default() };
            let some = continuing.attend_asking(text, &options, asks).unwrap().0;
            fresh.forget_previous_forward();
            let all = fresh.attend_asking(text, &options, Asks::default()).unwrap().0;
            let what = format!("{dir} {text:?}");
            assert!(some.maps_left_out && !all.maps_left_out, "{what}");
            assert_eq!(some.attentions.len(), 1, "{what}: one layer's maps kept");
            let kept = &some.attentions[0];
            let same = all.attentions.iter().find(|b| (b.kind, b.layer) == (kind, 1)).unwrap();
            assert!(kept.probs == same.probs, "{what}: the kept map");
            assert_eq!(some.stats, all.stats, "{what}: rows' statistics");
            assert_eq!(some.scores, all.scores, "{what}: head scores");
            assert_eq!(some.stats.len(), all.attentions.len(), "{what}: every site's statistics");
        }
    }
}

/// The model view of a long text draws thumbnails the worker pools from the sources: each must
/// be the recorded map pooled the way the views pool a map they draw (`poolAbsMax` in
/// www/views/common.js: cell (i, j) into (⌊i·rows/q⌋, ⌊j·cols/k⌋), the entry of largest
/// magnitude), here written again as plainly as it reads, over more rows than one of the
/// thumbnail's row blocks and sizes that divide nothing.
#[test]
fn thumbnails_are_the_recorded_maps_pooled_as_the_views_pool_them() {
    let long: String = (0..30).map(|i| format!("The cat number {i} sat down. ")).collect();
    let cases = [
        ("minilm", long.as_str(), 0),
        ("en-pt", "The cat sat on the mat because it was warm.", 0),
        ("smollm2", "The cat sat on the mat", 3),
    ];
    for (dir, text, generate) in cases {
        let a = with_sources(&load(dir), text, generate);
        let sources = a.sources.as_ref().expect("sources asked for");
        for b in &a.attentions {
            let s = sources
                .iter()
                .find(|s| (s.attention.site.kind, s.attention.site.layer) == (b.kind, b.layer))
                .expect("sources of each block");
            let (q, k) = (b.query_len, b.key_len);
            for (rows, cols) in [(37, 23), (q.min(128), k.min(128)), (1, 1)] {
                let (rows, cols) = (rows.min(q), cols.min(k));
                let thumbs = s.thumbnails(rows, cols);
                assert_eq!(thumbs.len(), b.heads * rows * cols, "{dir} {:?} {}", b.kind, b.layer);
                for h in 0..b.heads {
                    let mut want = vec![0.0f32; rows * cols];
                    for i in 0..q {
                        for j in 0..k {
                            let v = b.probs[(h * q + i) * k + j];
                            let cell = &mut want[(i * rows / q) * cols + j * cols / k];
                            if v.abs() > cell.abs() {
                                *cell = v;
                            }
                        }
                    }
                    let got = &thumbs[h * rows * cols..(h + 1) * rows * cols];
                    assert!(
                        got == want.as_slice(),
                        "{dir} {:?} layer {} head {h}, {rows}×{cols}",
                        b.kind,
                        b.layer
                    );
                }
            }
        }
        assert!(
            a.attentions.iter().any(|b| b.query_len > 64) || dir != "minilm",
            "more rows than a block of them"
        );
    }
}
