//! The one attention layer: queries of `heads` heads against keys and values of `kv_heads`
//! heads (grouped-query attention when fewer: query head h reads key/value head
//! h ÷ (heads ÷ kv_heads)), the mask, the KV cache, and the probe. This is the only code that
//! records attention maps, value norms and a head's internals; a family computes its
//! projections (its own PyTorch-shaped structs, named like its weights) and calls
//! [`MultiHead::attend`], then [`MultiHead::post_norm_output`] (x = LN(x + attn)) or
//! [`MultiHead::pre_norm_residual`] (x + attn and its norm, the feed-forward's input) for the
//! residual around it.
//!
//! Keys and values always sit in a [`KvCache`]: `[capacity, kv_dim]` for K and the transpose
//! `[kv_dim, capacity]` for V, preallocated and written a row (a column of Vᵀ) at a time in
//! place, so that a decode step reads the cache where it lies (strided views into the one GEMM
//! kernel) instead of copying it. With Vᵀ stored, each head's P·V is again `A · Bᵀ`.

use super::layers::{LayerNorm, Linear};
use super::probe::{Probe, Recorded, Site};
use super::score_parts::QkSplit;
use crate::heads::{ClassedKeys, RowStats};
use crate::result::{BlockNorm, BlockTrace, HeadTrace};
use crate::tensor::{
    matmul_bt, matmul_bt_cols, softmax_with_entropy, Mat, OutPtr, View, WeightMatrix,
    PARALLEL_FROM_MACS,
};
use std::cell::Cell;
use std::sync::Arc;

/// Which keys a query may see.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mask {
    /// Every key is visible (encoder self-attention, cross-attention).
    None,
    /// Query `i` sees keys `0..=first_query_position + i` (decoder self-attention).
    Causal { first_query_position: usize },
}

impl Mask {
    pub fn visible(&self, query: usize, key: usize) -> bool {
        key < self.visible_keys(query, key + 1)
    }

    /// How many of `key_len` keys query `query` sees: keys `0..n` (every mask is a prefix).
    pub fn visible_keys(&self, query: usize, key_len: usize) -> usize {
        match *self {
            Mask::None => key_len,
            Mask::Causal { first_query_position } => {
                (first_query_position + query + 1).min(key_len)
            }
        }
    }
}

thread_local! {
    /// Caches allocated on this thread (see [`kv_caches_allocated`]).
    static CACHES_ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

/// How many [`KvCache`]s this thread has allocated: a generation allocates one per layer
/// whatever the number of tokens it generates (the tests count it).
pub fn kv_caches_allocated() -> usize {
    CACHES_ALLOCATED.get()
}

/// One layer's keys and values: `k` `# [capacity, kv_dim]` row-major and `v_t`
/// `# [kv_dim, capacity]` (V transposed), both allocated once; rows `0..len` are written.
pub struct KvCache {
    kv_dim: usize,
    capacity: usize,
    len: usize,
    k: Vec<f32>,
    v_t: Vec<f32>,
}

impl KvCache {
    /// An empty cache for up to `capacity` positions of `kv_dim` values each.
    pub fn new(capacity: usize, kv_dim: usize) -> KvCache {
        CACHES_ALLOCATED.set(CACHES_ALLOCATED.get() + 1);
        KvCache {
            kv_dim,
            capacity,
            len: 0,
            k: vec![0.0; capacity * kv_dim],
            v_t: vec![0.0; kv_dim * capacity],
        }
    }

    /// A full cache of exactly these keys and values `# [Tk, kv_dim]` each (an encoder's
    /// self-attention, or the encoder side of cross-attention, computed once).
    pub fn of(k: Mat, v: &Mat) -> KvCache {
        CACHES_ALLOCATED.set(CACHES_ALLOCATED.get() + 1);
        let (len, kv_dim) = (k.rows(), k.cols());
        KvCache { kv_dim, capacity: len, len, k: k.into_vec(), v_t: v.transpose().into_vec() }
    }

    /// Positions written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Writes the keys and values of the next `k.rows()` positions in place.     # [T, kv_dim]
    pub fn append(&mut self, k: &Mat, v: &Mat) {
        let (t, len, cap) = (k.rows(), self.len, self.capacity);
        assert!(
            len + t <= cap && k.cols() == self.kv_dim && v.cols() == self.kv_dim && v.rows() == t,
            "KvCache: {t} more positions of {} do not fit {len} of {cap} × {}",
            k.cols(),
            self.kv_dim
        );
        self.k[len * self.kv_dim..(len + t) * self.kv_dim].copy_from_slice(k.as_slice());
        for r in 0..t {
            for (c, &x) in v.row(r).iter().enumerate() {
                self.v_t[c * cap + len + r] = x;
            }
        }
        self.len += t;
    }

    /// Room for `capacity` positions, keeping those written (the buffers move only when they
    /// grow: between forwards, never during one).
    pub fn reserve(&mut self, capacity: usize) {
        if capacity <= self.capacity {
            return;
        }
        let (old, len, kv_dim) = (self.capacity, self.len, self.kv_dim);
        self.k.resize(capacity * kv_dim, 0.0);
        let mut v_t = vec![0.0; kv_dim * capacity];
        for (row, old_row) in v_t.chunks_exact_mut(capacity).zip(self.v_t.chunks_exact(old.max(1)))
        {
            row[..len].copy_from_slice(&old_row[..len]);
        }
        self.v_t = v_t;
        self.capacity = capacity;
    }

    /// Forgets every position from `n` on (a causal prefix stays exactly what it was).
    pub fn keep_first(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    /// The buffers' addresses (they never move: the tests check it).
    pub fn buffers(&self) -> (*const f32, *const f32) {
        (self.k.as_ptr(), self.v_t.as_ptr())
    }

    /// Keys `# [len, kv_dim]`.
    fn keys(&self) -> View<'_> {
        View { data: &self.k, offset: 0, rows: self.len, cols: self.kv_dim, stride: self.kv_dim }
    }

    /// Vᵀ `# [kv_dim, len]`, rows strided by the capacity.
    fn values_t(&self) -> View<'_> {
        View {
            data: &self.v_t,
            offset: 0,
            rows: self.kv_dim,
            cols: self.len,
            stride: self.capacity,
        }
    }
}

/// Result of one multi-head attention call.
struct AttentionOutput {
    /// `# [Tq, heads·d_k]` concatenated head outputs (before the output projection)
    context: Mat,
    /// `# [heads, Tq, Tk]`
    probs: Vec<f32>,
    /// `# [heads, Tq]` what the head scores need of each row, when asked for
    stats: Option<Vec<RowStats>>,
    trace: Option<HeadTrace>,
}

/// Scores `# [rows, Tk]` (query rows `first_row..` of a call) → attention probabilities in
/// place: scaled by `scale`, masked, softmax; each row's entropy into `entropies` (as many as
/// it holds). The one place a map's values are made, in a forward and again from its sources.
fn scores_to_probs(
    block: &mut [f32],
    tk: usize,
    mask: Mask,
    first_row: usize,
    scale: f32,
    entropies: &mut [f32],
) {
    let mut scratch = Vec::with_capacity(tk);
    for (i, row) in block.chunks_exact_mut(tk.max(1)).enumerate() {
        // The visible keys scaled in one SIMD loop, the rest −∞.
        let (visible, masked) = row.split_at_mut(mask.visible_keys(first_row + i, tk));
        visible.iter_mut().for_each(|s| *s *= scale);
        masked.fill(f32::NEG_INFINITY);
        let entropy = softmax_with_entropy(row, &mut scratch);
        if let Some(e) = entropies.get_mut(i) {
            *e = entropy;
        }
    }
}

/// One attention call's part of [`MapSources`]: its queries and what they saw.
#[derive(Clone, Debug)]
struct QueryChunk {
    /// `# [query_len, heads·d_k]` (shared, as `keys`, with the copy a causal decoder keeps for
    /// its next forward)
    q: Arc<Vec<f32>>,
    query_len: usize,
    /// Keys there were at this call (`0..key_len` of the site's).
    key_len: usize,
    mask: Mask,
}

/// What one site's attention maps are made of, kept instead of the maps themselves (maps on
/// demand: a long text's maps would not fit in memory, but its queries and keys do): every call's
/// query rows and mask, and the keys `# [Tk, kv_heads·d_k]`. [`MapSources::head_rows`] computes
/// any rows of any head exactly as the forward did (the same GEMM, mask and softmax).
#[derive(Clone, Debug)]
pub struct MapSources {
    /// The attention whose maps these are: its site and heads.
    pub attention: MultiHead,
    chunks: Vec<QueryChunk>,
    /// `# [Tk, kv_heads·d_k]`
    keys: Arc<Vec<f32>>,
}

impl MapSources {
    fn new(attention: MultiHead) -> MapSources {
        MapSources { attention, chunks: Vec::new(), keys: Arc::default() }
    }

    /// Query rows of every call so far.
    pub fn query_len(&self) -> usize {
        self.chunks.iter().map(|c| c.query_len).sum()
    }

    /// Keys of the last call (every earlier call saw a prefix of them).
    pub fn key_len(&self) -> usize {
        self.keys.len() / self.attention.kv_dim().max(1)
    }

    /// Takes one call's queries `q` `# [Tq, heads·d_k]` and the keys of `kv` it has not seen.
    fn add_call(&mut self, q: &Mat, kv: &KvCache, mask: Mask) {
        let kv_dim = self.attention.kv_dim();
        let have = self.key_len();
        if kv.len() > have {
            Arc::make_mut(&mut self.keys)
                .extend_from_slice(&kv.k[have * kv_dim..kv.len() * kv_dim]);
        }
        let (query_len, key_len) = (q.rows(), kv.len());
        let q = Arc::new(q.as_slice().to_vec());
        self.chunks.push(QueryChunk { q, query_len, key_len, mask });
    }

    /// Forgets every position from `n` on: query rows `n..` and keys `n..` (a causal prefix
    /// reused by the next forward).
    pub(crate) fn keep_first_positions(&mut self, n: usize) {
        let d = self.attention.q_dim();
        let mut start = 0;
        self.chunks.retain_mut(|c| {
            let first = start;
            start += c.query_len;
            if first >= n {
                return false;
            }
            c.query_len = c.query_len.min(n - first);
            if c.q.len() > c.query_len * d {
                Arc::make_mut(&mut c.q).truncate(c.query_len * d);
            }
            c.key_len = c.key_len.min(n);
            true
        });
        let keys = n.min(self.key_len()) * self.attention.kv_dim();
        if self.keys.len() > keys {
            Arc::make_mut(&mut self.keys).truncate(keys);
        }
    }

    /// Head `head`'s map, query rows `rows` `# [rows, key_len()]`: each row as the forward
    /// computed it, and zero past the keys its call saw (as in a recorded map).
    pub fn head_rows(&self, head: usize, rows: std::ops::Range<usize>) -> Vec<f32> {
        let (attention, tk) = (&self.attention, self.key_len());
        let (d_k, q_dim, kv_dim) = (attention.d_k, attention.q_dim(), attention.kv_dim());
        let rows = rows.start.min(rows.end)..rows.end.min(self.query_len());
        let mut out = vec![0.0f32; rows.len() * tk];
        if head >= attention.heads {
            return out;
        }
        let g = attention.kv_head(head);
        let mut start = 0;
        for c in &self.chunks {
            let (first, last) = (start, start + c.query_len);
            start = last;
            let (a, b) = (rows.start.max(first), rows.end.min(last));
            if a >= b {
                continue;
            }
            let q = View { data: &c.q, offset: 0, rows: c.query_len, cols: q_dim, stride: q_dim };
            let keys =
                View { data: &self.keys, offset: 0, rows: c.key_len, cols: kv_dim, stride: kv_dim };
            // # [b − a, key_len of the call]
            let mut block = vec![0.0f32; (b - a) * c.key_len];
            matmul_bt(
                q.rows_range(a - first, b - a).cols(head * d_k, d_k),
                keys.cols(g * d_k, d_k),
                &mut block,
                0,
                c.key_len,
            );
            scores_to_probs(&mut block, c.key_len, c.mask, a - first, attention.scale(), &mut []);
            for (i, row) in block.chunks_exact(c.key_len.max(1)).enumerate() {
                let o = (a - rows.start + i) * tk;
                out[o..o + c.key_len].copy_from_slice(row);
            }
        }
        out
    }
}

impl MapSources {
    /// Every head's map pooled to a thumbnail, `# [heads, rows, cols]`: cell (i, j) of a map goes
    /// to thumbnail cell (⌊i·rows/query_len⌋, ⌊j·cols/key_len⌋) and each keeps the entry of
    /// largest magnitude (the pooling the views draw with, `www/views/common.js` poolAbsMax, so a
    /// sharp weight stays visible). The rows are computed [`THUMBNAIL_ROWS`] at a time through
    /// [`MapSources::head_rows`]: no whole map is held. `rows` and `cols` are at most the map's.
    pub fn thumbnails(&self, rows: usize, cols: usize) -> Vec<f32> {
        let (tq, tk) = (self.query_len(), self.key_len());
        let (rows, cols) = (rows.clamp(1, tq.max(1)), cols.clamp(1, tk.max(1)));
        let mut out = vec![0.0f32; self.attention.heads * rows * cols];
        let col_of: Vec<usize> = (0..tk).map(|j| j * cols / tk).collect();
        for (head, thumb) in out.chunks_exact_mut(rows * cols).enumerate() {
            for first in (0..tq).step_by(THUMBNAIL_ROWS) {
                let block = self.head_rows(head, first..(first + THUMBNAIL_ROWS).min(tq));
                for (i, row) in block.chunks_exact(tk.max(1)).enumerate() {
                    let o = (first + i) * rows / tq * cols;
                    for (&v, &c) in row.iter().zip(&col_of) {
                        let cell = &mut thumb[o + c];
                        if v.abs() > cell.abs() {
                            *cell = v;
                        }
                    }
                }
            }
        }
        out
    }
}

/// Query rows a thumbnail is computed from at a time (a 2,048-key block of them is 512 KiB).
const THUMBNAIL_ROWS: usize = 64;

/// One attention's heads and where it sits in its model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiHead {
    pub site: Site,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (`heads` unless they are shared: GQA).
    pub kv_heads: usize,
    pub d_k: usize,
}

impl MultiHead {
    /// `heads` query heads of `d_k` over `kv_heads` key/value heads.
    pub fn new(site: Site, heads: usize, kv_heads: usize, d_k: usize) -> MultiHead {
        MultiHead { site, heads, kv_heads, d_k }
    }

    /// `q` `# [Tq, heads·d_k]` attends to every key of `kv` (`# [Tk, kv_heads·d_k]`):
    /// softmax(mask(Q_h K_gᵀ / √d_k)) · V_g per head → the heads' outputs concatenated
    /// `# [Tq, heads·d_k]` (before the output projection `wo` `# [d, heads·d_k]`, which only
    /// the value norms read). The probe gets the maps `# [heads, Tq, Tk]`, the value norms when
    /// it asks, and the traced head's intermediates when it is this one's.
    pub fn attend(
        &self,
        q: &Mat,
        kv: &KvCache,
        mask: Mask,
        wo: &WeightMatrix,
        probe: &mut Probe,
    ) -> Mat {
        debug_assert_eq!((q.cols(), kv.kv_dim), (self.q_dim(), self.kv_dim()));
        let value_norms = probe.wants_value_norms().then(|| self.value_output_norms(kv, wo));
        // Queries follow the rows this site recorded so far (a decode step's is the next row).
        let classed = probe.key_classes(self.site.kind).map(|c| ClassedKeys::of(c, kv.len()));
        let rows = classed.as_ref().map(|c| (c, probe.rows_recorded(self.site)));
        let traced = probe.traced_head(self.site);
        let whole_map = traced.is_some()
            || value_norms.is_some()
            || probe.wants_map(self.site, self.heads * q.rows() * kv.len());
        let AttentionOutput { context, probs, stats, trace } =
            self.multi_head_attention(q, kv, mask, traced, rows, whole_map);
        super::progress::attention_done(self.site, q.rows());
        if probe.wants_sources() {
            probe.sources_at(self.site, || MapSources::new(*self)).add_call(q, kv, mask);
        }
        probe.record(
            self.site,
            Recorded {
                heads: self.heads,
                query_len: q.rows(),
                key_len: kv.len(),
                probs,
                stats,
                value_norms,
                trace,
            },
        );
        context
    }

    /// Offers the probe the traced head's query/key split for its score parts: by the input's
    /// parts (token, position, bias) when the family split this attention's input
    /// ([`Probe::split_input`]; a self-attention whose queries and keys read the same rows),
    /// else by the projection biases, which `wq` and `wk` (`# [heads·d_k]`, `# [kv_heads·d_k]`)
    /// hold. Runs only when this attention's head is traced; call it before [`Self::attend`].
    pub fn offer_split(&self, probe: &mut Probe, wq: &Linear, wk: &Linear) {
        let Some(h) = probe.traced_head(self.site) else { return };
        let split = match probe.take_input_split(self.site) {
            Some(input) => Some(input.project(wq, wk, (h, self.kv_head(h)), self.d_k)),
            None => self.bias_split(h, wq.bias.as_deref(), wk.bias.as_deref()),
        };
        probe.offer_split(split);
    }

    /// [`Self::offer_split`] by the projection biases alone (GPT-2's fused `c_attn`).
    pub fn offer_bias_split(&self, probe: &mut Probe, q_bias: &[f32], k_bias: &[f32]) {
        if let Some(h) = probe.traced_head(self.site) {
            let split = self.bias_split(h, Some(q_bias), Some(k_bias));
            probe.offer_split(split);
        }
    }

    /// [`Self::offer_split`] for rotary positions: dimension `pairs` of every head turn
    /// together by `frequencies` radians per position.
    pub fn offer_rotary_split(
        &self,
        probe: &mut Probe,
        pairs: &[(usize, usize)],
        frequencies: &[f64],
    ) {
        if probe.traced_head(self.site).is_some() {
            probe.offer_split(Some(QkSplit::Rotary {
                pairs: pairs.to_vec(),
                frequencies: frequencies.to_vec(),
            }));
        }
    }

    /// Head `h`'s slices of the query and key biases.
    fn bias_split(
        &self,
        h: usize,
        q_bias: Option<&[f32]>,
        k_bias: Option<&[f32]>,
    ) -> Option<QkSplit> {
        let d_k = self.d_k;
        let g = self.kv_head(h);
        Some(QkSplit::Bias {
            q_bias: q_bias?.get(h * d_k..(h + 1) * d_k)?.to_vec(),
            k_bias: k_bias?.get(g * d_k..(g + 1) * d_k)?.to_vec(),
        })
    }

    /// Key/value head of query head `h`.
    fn kv_head(&self, h: usize) -> usize {
        h / (self.heads / self.kv_heads)
    }

    /// Width of the queries, `heads·d_k`, and of the keys and values, `kv_heads·d_k`.
    fn q_dim(&self) -> usize {
        self.heads * self.d_k
    }

    fn kv_dim(&self) -> usize {
        self.kv_heads * self.d_k
    }

    /// What scores are scaled by: 1 / √d_k.
    fn scale(&self) -> f32 {
        1.0 / (self.d_k as f32).sqrt()
    }

    /// Scaled dot-product attention over every head: `softmax(mask(Q_h K_gᵀ / √d_k)) · V_g`.
    /// When `trace_head` is set, every intermediate of that head is returned too; with
    /// `classed` (the keys' classes, and the position of the first query in its sequence),
    /// every row's statistics (the head scores', taken while the row is at hand). Without
    /// `whole_map` the maps are not returned, and each head's is made in a buffer of its own.
    fn multi_head_attention(
        &self,
        q: &Mat,
        kv: &KvCache,
        mask: Mask,
        trace_head: Option<usize>,
        classed: Option<(&ClassedKeys, usize)>,
        whole_map: bool,
    ) -> AttentionOutput {
        let (heads, d_k) = (self.heads, self.d_k);
        let (tq, tk, d) = (q.rows(), kv.len(), q.cols());
        let scale = self.scale();
        let (keys, values_t) = (kv.keys(), kv.values_t());
        let mut probs = vec![0.0f32; if whole_map { heads * tq * tk } else { 0 }];
        let mut entropies = vec![0.0f32; heads * tq]; // # [heads, Tq], from each row's softmax
        let mut stats = vec![RowStats::default(); if classed.is_some() { heads * tq } else { 0 }];
        let mut context = Mat::zeros(tq, d);
        let (probs_out, entropies_out, stats_out, context_out) = (
            OutPtr(probs.as_mut_ptr()),
            OutPtr(entropies.as_mut_ptr()),
            OutPtr(stats.as_mut_ptr()),
            OutPtr(context.as_mut_slice().as_mut_ptr()),
        );
        // # [Tq, Tk] = Q_h · K_gᵀ: each head's scores, and again the traced head's after the loop.
        let scores_into = |h: usize, out: &mut [f32]| {
            matmul_bt(
                View::cols_of(q, h * d_k, d_k),
                keys.cols(self.kv_head(h) * d_k, d_k),
                out,
                0,
                tk,
            )
        };
        let head = |h: usize| {
            // SAFETY: head h alone writes probs[h·Tq·Tk ..][.. Tq·Tk], entropies[h·Tq ..][.. Tq],
            // the same of stats when it has them, and columns h·d_k.. h·d_k + d_k of context,
            // and the buffers outlive the loop.
            let mut own = Vec::new();
            let block = if whole_map {
                unsafe { std::slice::from_raw_parts_mut(probs_out.at(h * tq * tk), tq * tk) }
            } else {
                own.resize(tq * tk, 0.0);
                &mut own[..]
            };
            let row_entropies =
                unsafe { std::slice::from_raw_parts_mut(entropies_out.at(h * tq), tq) };
            scores_into(h, block);
            scores_to_probs(block, tk, mask, 0, scale, row_entropies);
            if let Some((classed, first_position)) = classed {
                let rows = unsafe { std::slice::from_raw_parts_mut(stats_out.at(h * tq), tq) };
                let probs_rows = block.chunks_exact(tk.max(1)).zip(row_entropies.iter());
                for (i, (s, (row, &e))) in rows.iter_mut().zip(probs_rows).enumerate() {
                    *s = RowStats::of(row, e, first_position + i, classed);
                }
            }
            // V_gᵀ `# [d_k, Tk]`: rows g·d_k.. of Vᵀ.
            let v_h = values_t.rows_range(self.kv_head(h) * d_k, d_k);
            let p_h = View { data: block, offset: 0, rows: tq, cols: tk, stride: tk };
            // # [Tq, d_k] = P_h · V_g, into its columns of context
            unsafe { matmul_bt_cols(p_h, v_h, context_out, h * d_k, d, 0..d_k) };
        };
        // Heads go to the pool's threads whole (their softmaxes too); inside one, a GEMM runs on
        // that thread alone. Below the GEMM's own threshold, waking helpers costs more than it saves.
        if 2 * heads * tq * tk * d_k >= PARALLEL_FROM_MACS {
            crate::pool::for_each_chunk(heads, &head);
        } else {
            (0..heads).for_each(head);
        }
        let trace = trace_head.filter(|&h| h < heads).map(|h| {
            // The traced head's scores again (the same GEMM gives the same values), before scaling
            // and masking; "scaled" shows every score ÷ √d_k, the mask row says which are cut.
            let mut scores = vec![0.0f32; tq * tk];
            scores_into(h, &mut scores);
            let scaled = scores.iter().map(|s| s * scale).collect();
            let mask_values = (0..tq * tk)
                .map(|ij| if mask.visible(ij / tk, ij % tk) { 1.0 } else { 0.0 })
                .collect();
            let g = self.kv_head(h);
            HeadTrace {
                d_k,
                query_len: tq,
                key_len: tk,
                q: q.cols_range(h * d_k, d_k).into_vec(),
                k: keys.cols(g * d_k, d_k).to_vec(),
                v: values_t.rows_range(g * d_k, d_k).transposed(),
                scores,
                scaled,
                mask: mask_values,
                probs: probs[h * tq * tk..(h + 1) * tq * tk].to_vec(),
                output: context.cols_range(h * d_k, d_k).into_vec(),
                split: None,
            }
        });
        AttentionOutput { context, probs, stats: classed.map(|_| stats), trace }
    }

    /// ‖f_h(x_j)‖ for every head h and key j, `# [heads, Tk]`: key j's value in head h (bias
    /// included; key/value head g's under GQA) sent through the head's columns of the output
    /// projection `wo` `# [d, heads·d_k]`: ‖v_g(x_j) · W_O[:, h]ᵀ‖ (Kobayashi et al., EMNLP
    /// 2020). The output bias is shared by all keys and left out.
    fn value_output_norms(&self, kv: &KvCache, wo: &WeightMatrix) -> Vec<f32> {
        let (tk, d, d_k) = (kv.len(), wo.rows(), self.d_k);
        let mut f = vec![0.0f32; tk * d]; // [Tk, d] for one head
        let mut norms = Vec::with_capacity(self.heads * tk);
        for h in 0..self.heads {
            let v_g = Mat::from_vec(
                tk,
                d_k,
                kv.values_t().rows_range(self.kv_head(h) * d_k, d_k).transposed(),
            ); // [Tk, d_k]
            wo.matmul_cols(&v_g, h * d_k, &mut f);
            norms.extend(
                f.chunks_exact(d.max(1)).map(|row| row.iter().map(|x| x * x).sum::<f32>().sqrt()),
            );
        }
        norms
    }

    /// The end of a post-norm attention block, the paper's Add & Norm (BERT's
    /// `attention.output`, Marian's `Wo` + `Wo_ln`): x = LN(x + attn), where attn = `context`
    /// `# [Tq, heads·d_k]` · Wᴼᵀ + bᴼ.                                           # [Tq, d]
    pub fn post_norm_output(
        &self,
        context: &Mat,
        x: &Mat,
        wo: &Linear,
        ln: &LayerNorm,
        probe: &mut Probe,
    ) -> Mat {
        let attn = wo.forward(context); // [Tq, d]
        let residual = x + &attn;
        let out = ln.forward(&residual);
        self.record_block(BlockNorm::PostLayerNorm, [x, context, &attn, &residual, &out], probe);
        out
    }

    /// The residual stream after a pre-norm block's attention (Llama, GPT-2): `x + attn`, and
    /// `norm` of it, the feed-forward's input, in that order; `heads` (the heads' outputs before
    /// Wᴼ, `# [Tq, heads·d_k]`) and `attn` (after it) are kept with them for the step view,
    /// `kind` saying which norm `norm` is.                                  # [Tq, d] each
    pub fn pre_norm_residual(
        &self,
        x: &Mat,
        heads: &Mat,
        attn: &Mat,
        (kind, norm): (BlockNorm, impl FnOnce(&Mat) -> Mat),
        probe: &mut Probe,
    ) -> (Mat, Mat) {
        let residual = x + attn;
        let normed = norm(&residual);
        self.record_block(kind, [x, heads, attn, &residual, &normed], probe);
        (residual, normed)
    }

    /// Keeps the stages of this attention's block for the step view, when its head is traced
    /// (they are copied only then): its input x, the heads' outputs side by side
    /// `# [Tq, heads·d_k]`, their projection by Wᴼ (what the attention adds to x), x + that, and
    /// the norm of it, each `# [Tq, d]`.
    fn record_block(&self, norm: BlockNorm, stages: [&Mat; 5], probe: &mut Probe) {
        let [input, concat, projected, residual, normed] = stages;
        probe.record_block(self.site, || BlockTrace {
            d_model: input.cols(),
            query_len: input.rows(),
            norm,
            concat: concat.as_slice().to_vec(),
            projected: projected.as_slice().to_vec(),
            input: input.as_slice().to_vec(),
            residual: residual.as_slice().to_vec(),
            normed: normed.as_slice().to_vec(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{AttentionKind, HeadRequest};

    fn mat(rows: usize, cols: usize, seed: f32) -> Mat {
        Mat::from_vec(
            rows,
            cols,
            (0..rows * cols).map(|i| (i as f32 * 0.37 + seed).sin()).collect(),
        )
    }

    fn row(m: &Mat, r: usize) -> Mat {
        Mat::from_vec(1, m.cols(), m.row(r).to_vec())
    }

    fn identity(d: usize) -> WeightMatrix {
        WeightMatrix::F32(Mat::from_vec(
            d,
            d,
            (0..d * d).map(|i| if i % (d + 1) == 0 { 1.0 } else { 0.0 }).collect(),
        ))
    }

    #[test]
    fn probe_concatenates_one_query_per_call_like_a_single_call() {
        // Three one-query calls at one site (incremental decoding) must give the block, and the
        // traced head, that one three-query call gives.
        let (q, k, v) = (mat(3, 8, 0.1), mat(5, 8, 0.2), mat(5, 8, 0.3));
        let site = Site { kind: AttentionKind::Cross, layer: 1 };
        let attn = MultiHead::new(site, 2, 2, 4);
        let kv = KvCache::of(k, &v);
        let request = HeadRequest { kind: AttentionKind::Cross, layer: 1, head: 1 };
        let (mut whole, mut whole_head) = (Probe::attention_maps(), Probe::head(request));
        let (mut steps, mut steps_head) = (Probe::attention_maps(), Probe::head(request));
        let wo = identity(8);
        attn.attend(&q, &kv, Mask::None, &wo, &mut whole);
        attn.attend(&q, &kv, Mask::None, &wo, &mut whole_head);
        for t in 0..3 {
            attn.attend(&row(&q, t), &kv, Mask::None, &wo, &mut steps);
            let other = Site { kind: AttentionKind::EncoderSelf, layer: 1 };
            assert_eq!(steps_head.traced_head(other), None);
            attn.attend(&row(&q, t), &kv, Mask::None, &wo, &mut steps_head);
        }
        let (a, b) = (whole.into_attentions(), steps.into_attentions());
        assert_eq!(a.len(), 1);
        assert_eq!((b[0].heads, b[0].query_len, b[0].key_len), (2, 3, 5));
        assert_eq!(a[0].probs, b[0].probs);
        let (x, y) = (whole_head.into_trace().unwrap().0, steps_head.into_trace().unwrap().0);
        assert_eq!((y.query_len, y.key_len), (3, 5));
        assert_eq!((x.q, x.scores, x.probs, x.output), (y.q, y.scores, y.probs, y.output));
    }

    #[test]
    fn a_cache_filled_step_by_step_is_written_in_place_and_gives_the_whole_attention() {
        // Four key/value heads shared by eight query heads; six positions fed 3, then 1, 1, 1.
        let (q, k, v) = (mat(6, 16, 0.4), mat(6, 8, 0.5), mat(6, 8, 0.6));
        let attn = MultiHead::new(Site { kind: AttentionKind::DecoderSelf, layer: 0 }, 8, 4, 2);
        let wo = identity(16);
        let mut whole = Probe::attention_maps_and_value_norms();
        let whole_context = attn.attend(
            &q,
            &KvCache::of(k.clone(), &v),
            Mask::Causal { first_query_position: 0 },
            &wo,
            &mut whole,
        );
        let rows = |m: &Mat, r: std::ops::Range<usize>| {
            Mat::from_vec(
                r.len(),
                m.cols(),
                m.as_slice()[r.start * m.cols()..r.end * m.cols()].to_vec(),
            )
        };
        let mut cache = KvCache::new(10, 8);
        let (buffers, capacity) = (cache.buffers(), cache.capacity());
        let mut steps = Probe::attention_maps_and_value_norms();
        let mut context = Vec::new();
        for (start, end) in [(0, 3), (3, 4), (4, 5), (5, 6)] {
            cache.append(&rows(&k, start..end), &rows(&v, start..end));
            assert_eq!((cache.buffers(), cache.capacity(), cache.len()), (buffers, capacity, end));
            context.extend(
                attn.attend(
                    &rows(&q, start..end),
                    &cache,
                    Mask::Causal { first_query_position: start },
                    &wo,
                    &mut steps,
                )
                .into_vec(),
            );
        }
        // The maps bit for bit; the context sums over fewer keys (a masked key adds a zero, in
        // another lane), so to rounding.
        for (x, y) in context.iter().zip(whole_context.as_slice()) {
            assert!((x - y).abs() <= 1e-6, "{x} vs {y}");
        }
        let ((a, an), (b, bn)) = (whole.into_maps_and_norms(), steps.into_maps_and_norms());
        assert_eq!(a[0].probs, b[0].probs);
        assert_eq!(an.unwrap()[0].probs, bn.unwrap()[0].probs);
    }

    #[test]
    fn a_cache_grown_between_forwards_keeps_its_positions() {
        let (k, v) = (mat(6, 4, 0.2), mat(6, 4, 0.3));
        let rows = |m: &Mat, r: std::ops::Range<usize>| {
            Mat::from_vec(r.len(), 4, m.as_slice()[r.start * 4..r.end * 4].to_vec())
        };
        let mut cache = KvCache::new(4, 4);
        cache.append(&rows(&k, 0..3), &rows(&v, 0..3));
        cache.reserve(2); // never shrinks
        assert_eq!(cache.capacity(), 4);
        cache.reserve(7);
        cache.append(&rows(&k, 3..6), &rows(&v, 3..6));
        let whole = KvCache::of(k.clone(), &v);
        assert_eq!((cache.len(), cache.capacity()), (6, 7));
        assert_eq!(cache.keys().to_vec(), whole.keys().to_vec());
        assert_eq!(cache.values_t().to_vec(), whole.values_t().to_vec());
    }

    #[test]
    fn grouped_query_heads_read_their_shared_key_value_head() {
        // Two query heads over one key/value head equal two heads over a repeated one.
        let (q, k, v) = (mat(4, 8, 0.7), mat(5, 4, 0.8), mat(5, 4, 0.9));
        let repeat = |m: &Mat| {
            Mat::from_vec(
                m.rows(),
                8,
                (0..m.rows())
                    .flat_map(|r| m.row(r).iter().chain(m.row(r)).copied().collect::<Vec<_>>())
                    .collect(),
            )
        };
        let site = Site { kind: AttentionKind::DecoderSelf, layer: 0 };
        let (shared, full) = (MultiHead::new(site, 2, 1, 4), MultiHead::new(site, 2, 2, 4));
        let (mut p, mut r) = (Probe::attention_maps(), Probe::attention_maps());
        let a = shared.attend(&q, &KvCache::of(k.clone(), &v), Mask::None, &identity(8), &mut p);
        let b = full.attend(
            &q,
            &KvCache::of(repeat(&k), &repeat(&v)),
            Mask::None,
            &identity(8),
            &mut r,
        );
        assert_eq!(a, b);
        assert_eq!(p.into_attentions()[0].probs, r.into_attentions()[0].probs);
    }

    #[test]
    fn causal_attention_masks_the_future_and_traces_one_head() {
        let (q, k, v) = (mat(4, 8, 1.1), mat(4, 8, 1.2), mat(4, 8, 1.3));
        let site = Site { kind: AttentionKind::DecoderSelf, layer: 0 };
        let out = MultiHead::new(site, 2, 2, 4).multi_head_attention(
            &q,
            &KvCache::of(k, &v),
            Mask::Causal { first_query_position: 0 },
            Some(1),
            None,
            true,
        );
        let t = out.trace.expect("trace requested");
        for i in 0..4 {
            let row = &out.probs[16 + i * 4..16 + i * 4 + 4];
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
            for (j, p) in row.iter().enumerate() {
                assert_eq!(j > i, *p == 0.0);
                assert_eq!(t.mask[i * 4 + j], if j > i { 0.0 } else { 1.0 });
            }
        }
        assert_eq!(&t.probs[..], &out.probs[16..32]);
        // Output of the traced head equals probs · V_h computed by hand.
        for i in 0..4 {
            for c in 0..4 {
                let e: f32 = (0..4).map(|j| t.probs[i * 4 + j] * t.v[j * 4 + c]).sum();
                assert!((e - t.output[i * 4 + c]).abs() < 1e-5);
            }
        }
    }
}
