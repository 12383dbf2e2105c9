//! What a forward records, passed down to every attention call: every attention map (and,
//! when asked, the value-weighted norms beside each), or every intermediate of one head for
//! the step view. Only [`super::attention`] hands results to it; the models pass it along.

use super::attention::MapSources;
use super::score_parts::{InputSplit, QkSplit};
use crate::error::{invalid_model, Error, Result};
use crate::heads::{token_class, BlockStats, RowStats};
use crate::result::{
    top_tokens, AttentionBlock, AttentionKind, BlockTrace, HeadRequest, HeadTrace, TopToken,
};
use crate::tensor::all_finite;
use crate::tensor::Mat;
use crate::tokenize::TextTokenizer;
use std::sync::Arc;

/// Where one attention call sits in a model: its kind and its 0-based layer within that kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub kind: AttentionKind,
    pub layer: usize,
}

/// What one attention call computed, with its shape stated (not re-derived from lengths).
pub(super) struct Recorded {
    pub heads: usize,
    pub query_len: usize,
    pub key_len: usize,
    /// `# [heads, query_len, key_len]` (empty when the probe did not want the map)
    pub probs: Vec<f32>,
    /// `# [heads, query_len]` what the head scores need of each row, when the probe asked
    /// ([`Probe::key_classes`]).
    pub stats: Option<Vec<RowStats>>,
    /// ‖f_h(x_j)‖ `# [heads, key_len]` when the probe asked for value norms.
    pub value_norms: Option<Vec<f32>>,
    /// The traced head's intermediates when this call holds it.
    pub trace: Option<HeadTrace>,
}

/// One attention call's maps `# [heads, query_len, key_len]` and its rows' statistics.
#[derive(Clone)]
struct Chunk {
    query_len: usize,
    key_len: usize,
    /// `None` once the site's maps are left out ([`KeepMaps::Within`]). Shared: a causal
    /// decoder keeps its recording for the next forward beside the one it returns.
    values: Option<Arc<Vec<f32>>>,
    /// `# [heads, query_len]` (attention maps; not value norms)
    stats: Option<Vec<RowStats>>,
}

/// Which attention maps a forward keeps (it computes all of them, and the rows' statistics of
/// all of them, either way).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum KeepMaps {
    #[default]
    All,
    /// All while they take at most `bytes` together; past that, only those of `sites` (the
    /// others are computed again from their [`MapSources`] when asked for).
    Within { bytes: usize, sites: Vec<Site> },
}

/// Every call at one site, in call order; keys grow from call to call with a KV cache.
#[derive(Clone)]
struct SiteRecord {
    site: Site,
    heads: usize,
    chunks: Vec<Chunk>,
}

fn non_finite(kind: AttentionKind, layer: usize) -> Error {
    invalid_model(format!("the {} attention of layer {} is NaN or infinite: the model's weights make its activations overflow", kind.as_str(), layer + 1))
}

/// What [`Probe::into_parts`] gives back.
pub struct Recordings {
    pub maps: Vec<AttentionBlock>,
    pub value_norms: Option<Vec<AttentionBlock>>,
    pub trace: Option<(HeadTrace, BlockTrace)>,
    /// The logit lens when asked for: `[layer][position]` top tokens.
    pub lens: Option<Vec<Vec<Vec<TopToken>>>>,
    /// What each site's maps are made of, when asked for (maps on demand).
    pub sources: Option<Vec<MapSources>>,
    /// Every site's rows' statistics (with the maps; empty when no maps were recorded).
    pub stats: Vec<BlockStats>,
    /// Whether some sites' maps were left out of `maps` ([`KeepMaps::Within`]).
    pub maps_left_out: bool,
}

/// What a forward records. Each attention call asks [`Probe::traced_head`] which of its heads
/// to trace, runs the one attention kernel, and hands the result to the probe; several calls at
/// one site (one per decode step) add query rows to the same block.
#[derive(Clone, Default)]
pub struct Probe {
    maps: bool,
    /// Also record value-weighted norms (Kobayashi et al. 2020) beside every map.
    value_norms: bool,
    head: Option<HeadRequest>,
    recorded: Vec<SiteRecord>,
    /// The same for α_ij·‖f_h(x_j)‖.
    recorded_norms: Vec<SiteRecord>,
    trace: Option<HeadTrace>,
    block: Option<BlockTrace>,
    /// The traced site's input split into parts (token, position, …), set by the family's
    /// embedding before the attention that reads it.
    input_split: Option<(Site, InputSplit)>,
    /// The traced head's query/key split of the coming call at the traced site.
    pending_split: Option<QkSplit>,
    /// Record the logit lens: what each layer's output would predict through the model's own
    /// final norm and unembedding.
    lens: bool,
    /// `[layer][position]` the lens's top tokens, positions in the order they were fed.
    lens_rows: Vec<Vec<Vec<TopToken>>>,
    /// Keep what each site's maps are made of ([`MapSources`]).
    sources: bool,
    recorded_sources: Vec<MapSources>,
    keep_maps: KeepMaps,
    /// Bytes of the maps recorded so far, and whether some were left out since.
    map_bytes: usize,
    maps_left_out: bool,
    /// The model's special tokens, when the head scores need the keys' classes
    /// ([`crate::heads::token_class`]).
    special_tokens: Option<Arc<[String]>>,
    /// The classes of the tokens fed so far on the encoder side and on the decoder side, by
    /// position: the keys of every attention call.
    encoder_classes: Vec<u8>,
    decoder_classes: Vec<u8>,
}

impl Probe {
    /// Records every attention map.
    pub fn attention_maps() -> Probe {
        Probe { maps: true, ..Probe::default() }
    }

    /// Records every attention map and, beside each, the value-weighted norms: f_h(x_j) =
    /// (x_j W_V^h + b_V^h) W_O^h is what key j sends through head h (its value, through the
    /// head's slice of the output projection, without the output bias); the recorded norm of
    /// query i, key j is α_ij·‖f_h(x_j)‖ = ‖α_ij f_h(x_j)‖ (Kobayashi et al., "Attention is Not
    /// Only a Weight", EMNLP 2020).
    pub fn attention_maps_and_value_norms() -> Probe {
        Probe { maps: true, value_norms: true, ..Probe::default() }
    }

    /// Records every intermediate of one head, and no maps.
    pub fn head(request: HeadRequest) -> Probe {
        Probe { head: Some(request), ..Probe::default() }
    }

    /// Records every attention map, the value-weighted norms when `value_norms`, and every
    /// intermediate of `head` when given: all that the views of one text need, from one forward.
    pub fn maps_and_head(value_norms: bool, head: Option<HeadRequest>) -> Probe {
        Probe { maps: true, value_norms, head, ..Probe::default() }
    }

    /// Also records the logit lens (see [`Probe::record_lens`]).
    pub fn with_lens(mut self, lens: bool) -> Probe {
        self.lens = lens;
        self
    }

    /// Also keeps what every map is made of (its queries and keys: [`MapSources`]), from which
    /// any head's rows are computed again exactly.
    pub fn with_sources(mut self, sources: bool) -> Probe {
        self.sources = sources;
        self
    }

    /// Keeps the maps `keep` says (all of them by default).
    pub fn keeping_maps(mut self, keep: KeepMaps) -> Probe {
        self.keep_maps = keep;
        self
    }

    /// Takes each map's rows' statistics for the head scores, the keys classed
    /// ([`crate::heads::token_class`], with the model's `special_tokens`) as the families feed
    /// their ids ([`Probe::tokens_fed`]).
    pub fn with_token_classes(mut self, special_tokens: Arc<[String]>) -> Probe {
        self.special_tokens = Some(special_tokens);
        self
    }

    /// A family names the tokens `ids` at positions `start..` of the sequence whose keys
    /// attention of `kind` reads (the encoder's or the decoder's), before the rows that read
    /// them, or, for a translator's decoder (its keys are named by the tokens it outputs), as
    /// each is chosen: the row already computed at that position then gets its own key's class.
    /// Only the ids fed are looked up (not the whole vocabulary: in wasm that first forward ran
    /// the tokenizer's code long enough to queue its optimisation ahead of the kernels').
    pub fn tokens_fed(
        &mut self,
        kind: AttentionKind,
        start: usize,
        ids: &[u32],
        tokenizer: &TextTokenizer,
    ) {
        let Some(special) = &self.special_tokens else { return };
        let class = |id: u32| tokenizer.id_to_token_opt(id).map_or(0, |t| token_class(&t, special));
        let fed: Vec<u8> = ids.iter().map(|&id| class(id)).collect();
        let decoder_side = kind.key_side() == "decoder";
        let classes =
            if decoder_side { &mut self.decoder_classes } else { &mut self.encoder_classes };
        classes.truncate(start);
        classes.resize(start, 0);
        classes.extend_from_slice(&fed);
        let sites = self.recorded.iter_mut().filter(|r| r.site.kind.key_side() == kind.key_side());
        for r in sites.filter(|r| r.site.kind != AttentionKind::Cross) {
            let mut first = 0;
            for c in &mut r.chunks {
                let rows = first..first + c.query_len;
                first = rows.end;
                let Some(stats) = &mut c.stats else { continue };
                for (p, class) in (start..).zip(&fed).filter(|(p, _)| rows.contains(p)) {
                    for h in 0..r.heads {
                        stats[h * c.query_len + p - rows.start].add_own_key(*class);
                    }
                }
            }
        }
    }

    /// Query rows recorded at `site` so far.
    pub(super) fn rows_recorded(&self, site: Site) -> usize {
        let record = self.recorded.iter().find(|r| r.site == site);
        record.map_or(0, |r| r.chunks.iter().map(|c| c.query_len).sum())
    }

    /// The classes of the keys attention of `kind` reads, when the rows' statistics are taken.
    pub(super) fn key_classes(&self, kind: AttentionKind) -> Option<&[u8]> {
        self.special_tokens.as_ref().filter(|_| self.maps)?;
        Some(match kind.key_side() {
            "encoder" => &self.encoder_classes,
            _ => &self.decoder_classes,
        })
    }

    /// Whether the attention calls should hand over their queries and keys.
    pub(super) fn wants_sources(&self) -> bool {
        self.sources
    }

    /// The sources of `site`'s maps, made by `make` on its first call.
    pub(super) fn sources_at(
        &mut self,
        site: Site,
        make: impl FnOnce() -> MapSources,
    ) -> &mut MapSources {
        let at = match self.recorded_sources.iter().position(|s| s.attention.site == site) {
            Some(i) => i,
            None => {
                self.recorded_sources.push(make());
                self.recorded_sources.len() - 1
            }
        };
        &mut self.recorded_sources[at]
    }

    /// Whether a family should run each layer's output through its unembedding.
    pub fn wants_lens(&self) -> bool {
        self.lens
    }

    /// Takes the logit lens of `layer` (0-based) at the positions fed next, in order.
    pub fn record_lens(&mut self, layer: usize, rows: impl IntoIterator<Item = Vec<TopToken>>) {
        if !self.lens {
            return;
        }
        if self.lens_rows.len() <= layer {
            self.lens_rows.resize(layer + 1, Vec::new());
        }
        self.lens_rows[layer].extend(rows);
    }

    /// The logit lens of the rows just fed: each layer's output `layers[l]` `# [T, d]` through
    /// `unembed` (the model's final norm, then its output matrix: `# [rows, vocab]`), every
    /// layer in one product, each row's top tokens (named by `token`) recorded for its layer.
    pub fn record_lens_through(
        &mut self,
        layers: &[Mat],
        unembed: impl Fn(&Mat) -> Mat,
        token: impl Fn(u32) -> String,
    ) {
        let Some(first) = layers.first().filter(|_| self.lens) else { return };
        let (t, d) = (first.rows(), first.cols());
        // # [L·T, d], layer-major
        let rows: Vec<f32> = layers.iter().flat_map(|x| x.as_slice().iter().copied()).collect();
        let logits = unembed(&Mat::from_vec(layers.len() * t, d, rows)); // [L·T, vocab]
        for l in 0..layers.len() {
            let tops: Vec<_> =
                (l * t..(l + 1) * t).map(|r| top_tokens(logits.row(r), &token)).collect();
            self.record_lens(l, tops);
        }
    }

    /// Whether the attention calls should compute ‖f_h(x_j)‖ for [`Recorded::value_norms`].
    pub(super) fn wants_value_norms(&self) -> bool {
        self.maps && self.value_norms
    }

    /// Whether one head's intermediates are being traced (the step view).
    pub fn is_tracing(&self) -> bool {
        self.head.is_some()
    }

    /// The head whose intermediates the attention call at `site` should keep, if any.
    pub fn traced_head(&self, site: Site) -> Option<usize> {
        self.head.filter(|r| r.kind == site.kind && r.layer == site.layer).map(|r| r.head)
    }

    /// Keeps the parts of the input of the attention at `site` (made only when its head is
    /// traced), for that attention's score parts.
    pub fn split_input(&mut self, site: Site, make: impl FnOnce() -> InputSplit) {
        if self.traced_head(site).is_some() {
            self.input_split = Some((site, make()));
        }
    }

    /// The input split kept for `site`, taken.
    pub(super) fn take_input_split(&mut self, site: Site) -> Option<InputSplit> {
        match self.input_split.take() {
            Some((s, split)) if s == site => Some(split),
            other => {
                self.input_split = other;
                None
            }
        }
    }

    /// The traced head's query/key split for the call about to be recorded.
    pub(super) fn offer_split(&mut self, split: Option<QkSplit>) {
        self.pending_split = split;
    }

    /// `previous` made to record what this probe records, when its recording of some positions
    /// can stand for this probe's: the same things (maps, value norms, the same traced head, …),
    /// and the maps this probe keeps among those it kept.
    pub(crate) fn continuing(&self, mut previous: Probe) -> Option<Probe> {
        let flags = |p: &Probe| (p.maps, p.value_norms, p.head, p.lens, p.sources);
        let same_keeping = match (&self.keep_maps, &previous.keep_maps) {
            (KeepMaps::Within { bytes, sites }, KeepMaps::Within { bytes: b, sites: kept }) => {
                bytes == b && (!previous.maps_left_out || sites.iter().all(|s| kept.contains(s)))
            }
            (now, then) => now == then,
        };
        let classes = self.special_tokens.is_some() == previous.special_tokens.is_some();
        (flags(self) == flags(&previous) && same_keeping && classes).then(|| {
            previous.keep_maps = self.keep_maps.clone();
            previous
        })
    }

    /// Keeps what was recorded for the first `n` positions of a causal forward: query rows
    /// `0..n` and keys `0..n` (the later keys were masked for those rows). A forward over a text
    /// whose first `n` tokens are the same records exactly this before its own rows.
    pub(crate) fn keep_first_positions(&mut self, n: usize) {
        for r in self.recorded.iter_mut().chain(&mut self.recorded_norms) {
            keep_first_rows(&mut r.chunks, r.heads, n);
        }
        if let Some(t) = &mut self.trace {
            t.keep_first_positions(n);
        }
        if let Some(b) = &mut self.block {
            b.keep_first_queries(n);
        }
        self.lens_rows.iter_mut().for_each(|rows| rows.truncate(n));
        self.recorded_sources.iter_mut().for_each(|s| s.keep_first_positions(n));
        self.decoder_classes.truncate(n);
        self.map_bytes = map_bytes(&self.recorded);
    }

    /// Whether the map of one more call at `site`, of `len` floats, is kept: every map while
    /// they fit [`KeepMaps::Within`]'s bytes; from the first that does not, those of its sites
    /// alone, and the others recorded so far are dropped.
    fn keeps_map(&mut self, site: Site, len: usize) -> bool {
        let keep = self.wants_map(site, len);
        let KeepMaps::Within { bytes, sites } = &self.keep_maps else { return keep };
        if !self.maps_left_out {
            self.map_bytes += 4 * len;
            if self.map_bytes > *bytes {
                self.maps_left_out = true;
                for r in self.recorded.iter_mut().filter(|r| !sites.contains(&r.site)) {
                    r.chunks.iter_mut().for_each(|c| c.values = None);
                }
            }
        }
        keep
    }

    /// Whether the map of the coming call at `site`, of `len` floats, will be kept (else the
    /// call needs no buffer for all its heads' maps at once).
    pub(super) fn wants_map(&self, site: Site, len: usize) -> bool {
        self.maps
            && match &self.keep_maps {
                KeepMaps::All => true,
                KeepMaps::Within { bytes, sites } => {
                    sites.contains(&site)
                        || (!self.maps_left_out && self.map_bytes + 4 * len <= *bytes)
                }
            }
    }

    /// Takes what one attention call at `site` computed.
    pub(super) fn record(&mut self, site: Site, r: Recorded) {
        let Recorded { heads, query_len, key_len, probs, stats, value_norms, trace } = r;
        if self.maps {
            if let Some(norms) = value_norms {
                // [heads, Tq, Tk] · [heads, 1, Tk]
                let weighted = probs
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        p * norms[(i / (key_len * query_len).max(1)) * key_len + i % key_len.max(1)]
                    })
                    .collect();
                push_chunk(
                    &mut self.recorded_norms,
                    site,
                    heads,
                    Chunk { query_len, key_len, values: Some(Arc::new(weighted)), stats: None },
                );
            }
            let values = self.keeps_map(site, heads * query_len * key_len).then(|| Arc::new(probs));
            push_chunk(
                &mut self.recorded,
                site,
                heads,
                Chunk { query_len, key_len, values, stats },
            );
        }
        if let Some(mut t) = trace {
            t.split = self.pending_split.take();
            match &mut self.trace {
                Some(prev) => prev.append_queries(t),
                None => self.trace = Some(t),
            }
        }
    }

    /// Takes the end of the attention block at `site` when its head is traced (`make` runs only
    /// then); successive calls (decode steps) add query rows.
    pub(super) fn record_block(&mut self, site: Site, make: impl FnOnce() -> BlockTrace) {
        if self.traced_head(site).is_none() {
            return;
        }
        let t = make();
        match &mut self.block {
            Some(prev) => prev.append_queries(t),
            None => self.block = Some(t),
        }
    }

    /// The recorded maps, one block per site, queries of successive calls concatenated. Rows
    /// of earlier calls, which saw fewer keys (a KV cache), end in zeros: keys that did not
    /// exist yet get no attention, as under a causal mask.
    pub fn into_attentions(self) -> Vec<AttentionBlock> {
        assemble(self.recorded)
    }

    /// An error naming the first layer whose recorded attention (or traced head) holds NaN or
    /// ∞: weights that overflow the activations give a map of NaN, never one to draw.
    pub fn check_finite(&self) -> Result<()> {
        // (a row of NaN has a NaN entropy: the statistics stand for the maps left out)
        let finite = |c: &Chunk| {
            c.values.as_ref().map_or(true, |v| all_finite(v))
                && c.stats.iter().flatten().all(|r| r.entropy.is_finite())
        };
        let bad_site =
            self.recorded.iter().chain(&self.recorded_norms).find(|r| !r.chunks.iter().all(finite));
        if let Some(r) = bad_site {
            return Err(non_finite(r.site.kind, r.site.layer));
        }
        match (&self.head, &self.trace) {
            (Some(h), Some(t))
                if ![&t.q, &t.k, &t.v, &t.scores, &t.probs, &t.output]
                    .iter()
                    .all(|v| all_finite(v)) =>
            {
                Err(non_finite(h.kind, h.layer))
            }
            _ => Ok(()),
        }
    }

    /// The maps and, when asked for, the value-weighted norms, laid out alike.
    pub fn into_maps_and_norms(self) -> (Vec<AttentionBlock>, Option<Vec<AttentionBlock>>) {
        let norms = self.value_norms.then(|| assemble(self.recorded_norms));
        (assemble(self.recorded), norms)
    }

    /// The traced head's intermediates and its block's end, all calls' queries concatenated.
    pub fn into_trace(self) -> Option<(HeadTrace, BlockTrace)> {
        Some((self.trace?, self.block.unwrap_or_default()))
    }

    /// Everything recorded: the maps, the value-weighted norms when asked for, and the traced
    /// head's intermediates with its block's end when one was traced.
    pub fn into_parts(self) -> Recordings {
        let norms = self.value_norms.then(|| assemble(self.recorded_norms));
        let trace = self.trace.map(|t| (t, self.block.unwrap_or_default()));
        let lens = self.lens.then_some(self.lens_rows);
        let sources = self.sources.then_some(self.recorded_sources);
        let stats = self.recorded.iter().filter_map(assemble_stats).collect();
        Recordings {
            maps: assemble(self.recorded),
            value_norms: norms,
            trace,
            lens,
            sources,
            stats,
            maps_left_out: self.maps_left_out,
        }
    }
}

fn push_chunk(list: &mut Vec<SiteRecord>, site: Site, heads: usize, chunk: Chunk) {
    match list.iter_mut().find(|r| r.site == site) {
        Some(r) => r.chunks.push(chunk),
        None => list.push(SiteRecord { site, heads, chunks: vec![chunk] }),
    }
}

/// The chunks of one site cut to query rows `0..n` and keys `0..n`.
fn keep_first_rows(chunks: &mut Vec<Chunk>, heads: usize, n: usize) {
    let mut start = 0;
    chunks.retain_mut(|c| {
        let first = start;
        start += c.query_len;
        if first >= n {
            return false;
        }
        let (q, tk) = ((n - first).min(c.query_len), c.key_len.min(n));
        if (q, tk) != (c.query_len, c.key_len) {
            // [heads, query_len, key_len] → [heads, q, tk]
            let values = c.values.as_ref().map(|values| {
                let mut kept = Vec::with_capacity(heads * q * tk);
                for head in values.chunks_exact((c.query_len * c.key_len).max(1)).take(heads) {
                    for row in head.chunks_exact(c.key_len.max(1)).take(q) {
                        kept.extend_from_slice(&row[..tk]);
                    }
                }
                Arc::new(kept)
            });
            // [heads, query_len] → [heads, q]
            let stats = c.stats.as_ref().map(|s| {
                s.chunks_exact(c.query_len.max(1))
                    .take(heads)
                    .flat_map(|h| &h[..q])
                    .copied()
                    .collect()
            });
            *c = Chunk { query_len: q, key_len: tk, values, stats };
        }
        true
    });
}

/// Bytes of the maps in `recorded`.
fn map_bytes(recorded: &[SiteRecord]) -> usize {
    let chunks = recorded.iter().flat_map(|r| &r.chunks);
    chunks.filter_map(|c| c.values.as_ref()).map(|v| 4 * v.len()).sum()
}

/// The rows' statistics of one site's calls, `[call][heads, q_i]` → `[heads, Σq_i]`.
fn assemble_stats(r: &SiteRecord) -> Option<BlockStats> {
    let chunks =
        r.chunks.iter().map(|c| Some((c, c.stats.as_deref()?))).collect::<Option<Vec<_>>>()?;
    let rows = (0..r.heads)
        .flat_map(|h| {
            chunks.iter().flat_map(move |(c, s)| &s[h * c.query_len..(h + 1) * c.query_len])
        })
        .copied()
        .collect();
    Some(BlockStats {
        kind: r.site.kind,
        layer: r.site.layer,
        heads: r.heads,
        query_len: r.chunks.iter().map(|c| c.query_len).sum(),
        key_len: r.chunks.iter().map(|c| c.key_len).max().unwrap_or(0),
        rows,
    })
}

/// One block per site whose maps were kept, from its calls' chunks: `[call][heads, q_i, Tk_i]`
/// → `[heads, Σq_i, Tk]`, the rows of calls with fewer keys padded with zeros.
fn assemble(recorded: Vec<SiteRecord>) -> Vec<AttentionBlock> {
    recorded
        .into_iter()
        .filter_map(|SiteRecord { site, heads, chunks }| {
            let query_len: usize = chunks.iter().map(|c| c.query_len).sum();
            let key_len = chunks.iter().map(|c| c.key_len).max().unwrap_or(0);
            let mut chunks: Vec<(usize, usize, Vec<f32>)> = chunks
                .into_iter()
                .map(|c| Some((c.query_len, c.key_len, Arc::unwrap_or_clone(c.values?))))
                .collect::<Option<_>>()?;
            let probs = if chunks.len() == 1 {
                chunks.pop().map(|c| c.2).unwrap_or_default()
            } else {
                // [call][heads, q_i, Tk_i] → [heads, Σq_i, Tk]
                let mut probs = Vec::with_capacity(heads * query_len * key_len);
                for h in 0..heads {
                    for (q, tk, values) in &chunks {
                        let (q, tk) = (*q, *tk);
                        for row in values[h * q * tk..(h + 1) * q * tk].chunks_exact(tk.max(1)) {
                            probs.extend_from_slice(row);
                            probs.resize(probs.len() + key_len - tk, 0.0);
                        }
                    }
                }
                probs
            };
            let (kind, layer) = (site.kind, site.layer);
            Some(AttentionBlock { kind, layer, heads, query_len, key_len, probs })
        })
        .collect()
}
