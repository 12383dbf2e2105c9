//! Maps on demand: a forward can keep what its maps are made of (each attention call's queries
//! and the keys they saw: `MapSources`) and compute any head's rows again. They must be the
//! maps the forward recorded, bit for bit, for every kind of attention: an encoder's, a
//! translator's decoder (one call per decode step, the cross-attention's keys fixed), and a
//! causal decoder's that reuses its previous forward's cache while the user types.

use attnviz::models::{Asks, Model};
use attnviz::result::{Attended, GenerateOptions};
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
