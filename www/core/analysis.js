// Pure array maths on attention results (no DOM, no wasm): used by the views, the page and the
// widget alike. Every matrix is a row-major Float32Array [query][key].

import { drain } from './slices.js';
import { tokenLabel } from './tokens.js';

/** Kinds present in a result, in a stable teaching order. */
function resultKinds(result) {
  const order = ['encoder_self', 'decoder_self', 'cross'];
  const seen = new Set(result.attentions.map((a) => a.kind));
  return order.filter((k) => seen.has(k)).concat([...seen].filter((k) => !order.includes(k)));
}

/** Attention blocks of one kind, sorted by layer. */
function blocksOf(result, kind) {
  return result.attentions.filter((a) => a.kind === kind).sort((a, b) => a.layer - b.layer);
}

function getBlock(result, kind, layer) {
  return result.attentions.find((a) => a.kind === kind && a.layer === layer) || null;
}

export function numLayers(result, kind) {
  return blocksOf(result, kind).length;
}

export function numHeads(result, kind) {
  const b = blocksOf(result, kind)[0];
  return b ? b.heads : 0;
}

/** Kinds, layers, heads and query rows per kind of a result: what view state is clamped to. */
export function resultShape(result) {
  const kinds = resultKinds(result);
  const layers = {};
  const heads = {};
  const rows = {};
  const cols = {};
  for (const k of kinds) {
    layers[k] = numLayers(result, k);
    heads[k] = numHeads(result, k);
    const t = tokensFor(result, k);
    rows[k] = t.q.length;
    cols[k] = t.k.length;
  }
  const targetLen = (result.tokens.target || []).length;
  // generated: tokens a decoder-only model generated (the scrubber's steps run 0 … generated)
  return { kinds, layers, heads, rows, cols, targetLen, generated: result.generation ? targetLen : 0 };
}

const sidesMemo = new WeakMap(); // result → { side name → { tokens, words } }

/** The tokens and word ids of one side the result names (the schema's token_side). */
function sideOf(result, side) {
  if (!sidesMemo.has(result)) sidesMemo.set(result, {});
  const memo = sidesMemo.get(result);
  if (!memo[side]) {
    const src = result.tokens.source || [];
    const tgt = result.tokens.target || [];
    const ws = (result.word_ids && result.word_ids.source) || src.map(() => null);
    const wt = (result.word_ids && result.word_ids.target) || tgt.map(() => null);
    memo[side] = side === 'target' ? { tokens: tgt, words: wt } : side === 'source_then_target' ? { tokens: src.concat(tgt), words: ws.concat(wt) } : { tokens: src, words: ws };
  }
  return memo[side];
}

/** Query and key tokens (and word ids) that a kind's matrices are indexed by: the sides the
 *  model's result names for its blocks of that kind (Rust's one rule: src/result.rs
 *  `ForwardOutput::sides_of`; a decoder-only model's blocks run over the prompt, then what it
 *  generated). Blocks made without sides (tests, other tools) are the source's. */
export function tokensFor(result, kind) {
  const block = result.attentions.find((b) => b.kind === kind);
  const q = sideOf(result, (block && block.query_side) || 'source');
  const k = sideOf(result, (block && block.key_side) || 'source');
  return { q: q.tokens, k: k.tokens, qWords: q.words, kWords: k.words };
}

/** The [query][key] matrix of one head (a view into the block, not a copy; a prefix block
 *  copies it on first use). */
export function headMatrix(block, h) {
  if (block.headData) return block.headData(h);
  const n = block.query_len * block.key_len;
  return block.data.subarray(h * n, (h + 1) * n);
}

/**
 * One weight of a result: from query token `query` to key token `key` (a token as the model's
 * tokenizer writes it, its first occurrence, or a 0-based index) in `layer` (0-based) of `kind`,
 * of head `head` (0-based) or the mean over the heads ('mean'). null where the result has no
 * such block, head or token, or holds no map of that layer (a long text's, left in the worker).
 */
export function weightAt(result, { kind, layer, head = 'mean', query, key }) {
  const block = result && getBlock(result, kind, layer);
  if (!block || (!block.data && !block.headData)) return null;
  const tok = tokensFor(result, kind);
  const indexOf = (tokens, t, n) => {
    const i = Number.isInteger(t) ? t : tokens.indexOf(String(t));
    return i >= 0 && i < n ? i : -1;
  };
  const i = indexOf(tok.q, query, block.query_len);
  const j = indexOf(tok.k, key, block.key_len);
  const heads = head === 'mean' ? [...Array(block.heads).keys()] : [head];
  if (i < 0 || j < 0 || !heads.every((h) => Number.isInteger(h) && h >= 0 && h < block.heads)) return null;
  let sum = 0;
  for (const h of heads) sum += headMatrix(block, h)[i * block.key_len + j];
  return sum / heads.length;
}

/** Mean over the given heads (all heads by default). */
export const headMean = (block, heads) => drain(headMeanSteps(block, heads));

/** headMean as steps (slices.js): a pause after each head. */
function* headMeanSteps(block, heads) {
  const n = block.query_len * block.key_len;
  const out = new Float32Array(n);
  const list = heads && heads.length ? heads : [...Array(block.heads).keys()];
  for (const h of list) {
    const m = headMatrix(block, h);
    for (let i = 0; i < n; i++) out[i] += m[i];
    yield;
  }
  const inv = 1 / list.length;
  for (let i = 0; i < n; i++) out[i] *= inv;
  return out;
}

/** out = a·b for square n×n matrices, in bands of rows: yields between bands (rollout at 512 tokens is 134M multiply-adds per layer). */
function* matmulSquareSteps(a, b, n) {
  const out = new Float32Array(n * n);
  const band = Math.max(1, Math.floor(4_000_000 / (n * n))); // ~4M multiply-adds between yields
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < n; k++) {
      const aik = a[i * n + k];
      if (aik === 0) continue;
      const bo = k * n;
      const oo = i * n;
      for (let j = 0; j < n; j++) out[oo + j] += aik * b[bo + j];
    }
    if ((i + 1) % band === 0) yield;
  }
  return out;
}

/**
 * Attention rollout (Abnar & Zuidema 2020) through layers 0..upTo of square self-attention
 * blocks: A' = 0.5·mean_heads(A) + 0.5·I, rows renormalised, R = A'_upTo · … · A'_0.
 * As steps (see slices.js); rollout() runs them at once.
 */
export function* rolloutSteps(blocks, upTo = blocks.length - 1) {
  if (!blocks.length) return null;
  const n = blocks[0].query_len;
  let r = null;
  for (let l = 0; l <= upTo && l < blocks.length; l++) {
    const a = yield* headMeanSteps(blocks[l]);
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let j = 0; j < n; j++) {
        const v = 0.5 * a[i * n + j] + (i === j ? 0.5 : 0);
        a[i * n + j] = v;
        s += v;
      }
      if (s > 0) for (let j = 0; j < n; j++) a[i * n + j] /= s;
    }
    yield;
    r = r ? yield* matmulSquareSteps(a, r, n) : a;
  }
  return r;
}

export const rollout = (blocks, upTo) => drain(rolloutSteps(blocks, upTo));

const entropyMemo = new WeakMap(); // matrix → { rows, cols, visible, value }: views redraw the same maps often

/**
 * The attention entropy of one head's [rows][cols] map: the one definition (docs/entropy.md),
 * the same as Rust's `score_block` (src/heads.rs), whose numbers every block of a forward
 * carries in `scores` (headEntropies reads those for a map drawn as it is):
 * - nats: the mean over query rows of −Σ p·ln p (each row scaled to sum to 1);
 * - normalised (H): the mean, over the rows that can see more than one key, of that row's
 *   entropy ÷ ln(the keys it can see): 0 = every query looks at one key, 1 = uniform over what
 *   it can see. `visible[i]` is how many of the columns row i can see (causal self-attention:
 *   the keys up to the query, prepareLayer's maskedFrom); every column when null.
 */
export function entropy(mat, rows, cols, visible = null) {
  const m = entropyMemo.get(mat);
  if (m && m.rows === rows && m.cols === cols && m.visible === visible) return m.value;
  const value = rowEntropy(mat, rows, cols, visible);
  entropyMemo.set(mat, { rows, cols, visible, value });
  return value;
}

function rowEntropy(mat, rows, cols, visible) {
  if (!rows || !cols) return { nats: 0, normalised: 0 };
  let total = 0;
  let normalisedTotal = 0;
  let normalisedRows = 0;
  for (let i = 0; i < rows; i++) {
    let h = 0;
    let s = 0;
    for (let j = 0; j < cols; j++) s += mat[i * cols + j];
    if (s > 0) {
      for (let j = 0; j < cols; j++) {
        const p = mat[i * cols + j] / s;
        if (p > 0) h -= p * Math.log(p);
      }
    }
    total += h;
    const sees = visible ? visible[i] : cols;
    if (sees > 1) {
      normalisedTotal += h / Math.log(sees);
      normalisedRows++;
    }
  }
  return { nats: total / rows, normalised: normalisedRows ? normalisedTotal / normalisedRows : 0 };
}

/**
 * Every head's entropy ({ nats, normalised }) of a prepared layer: Rust's numbers (the block's
 * `scores`) where the maps are drawn as the model made them, the same definition computed on the
 * maps as shown where filters or the value-weighted measure changed them (prep.entropyOfShown).
 */
export function headEntropies(prep) {
  if (prep.scores) return prep.scores.map((s) => ({ nats: s.entropy, normalised: s.broad }));
  return prep.heads.map((m) => entropy(m, prep.rows, prep.cols, prep.maskedFrom));
}

const DEFAULT_SPECIALS = ['[CLS]', '[SEP]', '[PAD]', '[MASK]', '</s>', '<s>', '<pad>', '<|endoftext|>', '<|im_start|>', '<|im_end|>'];

function isSpecial(token, wordId, specials) {
  if (specials && specials.has(token)) return true;
  return DEFAULT_SPECIALS.includes(token);
}

/** Strip the word-start / continuation markers of WordPiece, SentencePiece and byte-level BPE. */
function cleanPiece(piece, first) {
  let p = piece;
  if (!first && p.startsWith('##')) p = p.slice(2);
  p = p.replace(/^[\u2581\u0120]/, '');
  return p;
}

/**
 * How rows and columns of a [query][key] matrix are grouped for display.
 * opts: { hideSpecial, merge, specials: string[] }.
 * Returns { rowGroups, colGroups: arrays of original-index arrays, rowLabels, colLabels,
 *           renorm: bool, notes: string[] }.
 */
export function makeTransform(tok, opts = {}) {
  const specials = new Set(opts.specials || []);
  const notes = [];
  const side = (tokens, words) => {
    const keep = [];
    for (let i = 0; i < tokens.length; i++) {
      if (opts.hideSpecial && isSpecial(tokens[i], words[i], specials)) continue;
      keep.push(i);
    }
    const groups = [];
    const labels = [];
    if (opts.merge) {
      let cur = null;
      let curWord;
      for (const i of keep) {
        const w = words[i];
        if (w !== null && w !== undefined && cur && curWord === w) {
          cur.push(i);
          labels[labels.length - 1] += cleanPiece(tokens[i], false);
        } else {
          cur = [i];
          curWord = w;
          groups.push(cur);
          labels.push(w === null || w === undefined ? tokens[i] : cleanPiece(tokens[i], true) || tokens[i]);
        }
      }
    } else {
      for (const i of keep) {
        groups.push([i]);
        labels.push(tokens[i]);
      }
    }
    return { groups, labels, hidden: tokens.length - keep.length };
  };
  const r = side(tok.q, tok.qWords);
  const c = tok.q === tok.k ? r : side(tok.k, tok.kWords);
  r.labels = r.labels.map(tokenLabel);
  if (c !== r) c.labels = c.labels.map(tokenLabel);
  if (opts.hideSpecial && (r.hidden || c.hidden)) notes.push('Special tokens hidden; each row renormalised to sum to 1.');
  if (opts.merge) notes.push('Sub-words merged into words: key weights summed, query rows averaged.');
  return {
    rowGroups: r.groups,
    colGroups: c.groups,
    rowLabels: r.labels,
    colLabels: c.labels,
    renorm: !!opts.hideSpecial,
    // nothing hidden or merged: matrices are used as they are (the common case, on every keystroke)
    identity: !r.hidden && !c.hidden && !opts.merge,
    notes,
  };
}

/** Apply a transform to one [Tq][Tk] matrix → Float32Array(rows*cols), read-only (the matrix itself for the identity). */
export function applyTransform(tr, mat, tq, tk) {
  if (tr.identity && mat.length === tq * tk) return mat;
  const R = tr.rowGroups.length;
  const C = tr.colGroups.length;
  const out = new Float32Array(R * C);
  for (let r = 0; r < R; r++) {
    const g = tr.rowGroups[r];
    for (const i of g) {
      const row = i * tk;
      let norm = 1;
      if (tr.renorm) {
        let s = 0;
        for (const cg of tr.colGroups) for (const j of cg) s += mat[row + j];
        norm = s > 0 ? 1 / s : 0;
      }
      const w = norm / g.length;
      for (let c = 0; c < C; c++) {
        let s = 0;
        for (const j of tr.colGroups[c]) s += mat[row + j];
        out[r * C + c] += s * w;
      }
    }
  }
  return out;
}

/**
 * Everything a matrix view needs for one kind and layer, after filters:
 * { rows, cols, rowLabels, colLabels, heads: Float32Array[] (per head), mean, notes, block }.
 * agg: 'head' | 'mean' | 'rollout'. For rollout `mean` holds the rollout through `layer`.
 */
const prepCache = new WeakMap();
export const prepareLayer = (result, state, specials) => drain(prepareLayerSteps(result, state, specials));

/** prepareLayer as steps (see slices.js): a pause after each head, and inside rollout. */
export function* prepareLayerSteps(result, state, specials) {
  const kind = state.kind;
  const key = [kind, state.layer, !!state.hideSpecial, !!state.merge, state.agg, !!state.rawRows].join('|');
  let per = prepCache.get(result);
  if (!per) prepCache.set(result, (per = new Map()));
  if (per.has(key)) return per.get(key);
  const block = getBlock(result, kind, state.layer);
  if (!block) return null;
  const tok = tokensFor(result, kind);
  const tr = makeTransform(tok, { hideSpecial: state.hideSpecial, merge: state.merge, specials });
  if (state.rawRows) tr.renorm = false; // read-outs of raw value norms: no row renormalised
  const tq = block.query_len;
  const tk = block.key_len;
  const heads = [];
  for (let h = 0; h < block.heads; h++) {
    heads.push(applyTransform(tr, headMatrix(block, h), tq, tk));
    if (!tr.identity || block.headData) yield; // a prefix block copies each head
  }
  const notes = tr.notes.slice();
  let mean = null;
  if (state.agg === 'rollout' && kind !== 'cross' && tq === tk) {
    const ro = yield* rolloutSteps(blocksOf(result, kind), state.layer);
    mean = applyTransform(tr, ro, tq, tk);
    notes.push(`Attention rollout through layers 1–${state.layer + 1} (Abnar & Zuidema 2020): 0.5·mean(heads) + 0.5·I per layer, rows renormalised, multiplied through the layers.`);
  } else if (state.agg === 'mean') {
    mean = applyTransform(tr, yield* headMeanSteps(block), tq, tk);
  }
  const prep = {
    kind,
    layer: state.layer,
    rows: tr.rowGroups.length,
    cols: tr.colGroups.length,
    rowLabels: tr.rowLabels,
    colLabels: tr.colLabels,
    rowGroups: tr.rowGroups,
    colGroups: tr.colGroups,
    heads,
    // The mean over heads, made when first read: the model view and one-head views never need it.
    get mean() {
      if (!mean) mean = applyTransform(tr, headMean(block), tq, tk);
      return mean;
    },
    /** The mean as steps (slices.js). */
    *meanSteps() {
      if (!mean) mean = applyTransform(tr, yield* headMeanSteps(block), tq, tk);
      return mean;
    },
    notes,
    nHeads: block.heads,
    maskedFrom: kind === 'decoder_self' ? maskedFrom(tr, tq, tk) : null,
    // Rust's per-head scores (entropy …) when the maps are the block's own, unfiltered.
    scores: tr.identity && block.scores && block.scores.length === block.heads ? block.scores : null,
  };
  per.set(key, prep);
  return prep;
}

/** The state the cross view draws in: cross-attention, rollout (self-attention only) as the mean. */
export function crossState(state) {
  return { ...state, kind: 'cross', agg: state.agg === 'rollout' ? 'mean' : state.agg };
}

/** The decode steps as the cross view shows them: target tokens, or words when sub-words are merged. */
export function stepLabels(input, state) {
  const prep = prepareLayer(input.result, crossState(state), input.specials);
  return prep ? prep.rowLabels : [];
}

/**
 * Causal self-attention: for each shown row, the first shown column whose keys are all in that
 * row's future (masked to −∞ before the softmax: no weight, not a small one); `cols` when none.
 * Query i (of tq, the last tq of tk positions) sees keys 0 … i + tk − tq.
 */
function maskedFrom(tr, tq, tk) {
  const first = new Int32Array(tr.rowGroups.length);
  tr.rowGroups.forEach((rows, r) => {
    const sees = Math.max(...rows) + tk - tq;
    const c = tr.colGroups.findIndex((cols) => Math.min(...cols) > sees);
    first[r] = c < 0 ? tr.colGroups.length : c;
  });
  return first;
}

/** The block of one kind and layer (or null). */
export function blockAt(result, kind, layer) {
  return getBlock(result, kind, layer);
}

/**
 * Grouped-query attention: how many query heads of `kind` share each key/value head (query head
 * h reads K/V head ⌊h / size⌋), given the model's key/value head counts `kvHeads` ({ kind: n });
 * 1 where every query head has its own.
 */
export function kvGroupSize(kvHeads, kind, heads) {
  const kv = kvHeads && kvHeads[kind];
  return heads && kv && kv < heads && heads % kv === 0 ? heads / kv : 1;
}

/** Grouped-query attention: the key/value head query head `h` reads and the query heads that share
 *  it, { kv, first, last } (counted from 0), or null where every query head has its own. */
export function kvGroupOf(kvHeads, kind, heads, h) {
  const size = kvGroupSize(kvHeads, kind, heads);
  if (size === 1) return null;
  const kv = Math.floor(Math.min(heads - 1, h) / size);
  return { kv, first: kv * size, last: kv * size + size - 1 };
}
