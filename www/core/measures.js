// What a view can draw besides the raw attention weights: the value-weighted norms (Kobayashi et
// al. 2020), as a result the views draw like weights (rows scaled to sum to 1), and the raw
// numbers behind a cell for the read-outs.

import { prepareLayer } from './analysis.js';

/** What a view can draw: raw attention weights α, or value-weighted norms ‖α_ij f_h(x_j)‖. */
export const MEASURES = ['raw', 'value-norm'];

/** The one sentence the side panel says about the value-weighted measure. */
export const VALUE_NORM_NOTE = 'Value-weighted (Kobayashi et al., EMNLP 2020): each weight is ‖α·f(x)‖, the size of what a key token actually adds to the query’s output (its attention weight times its value vector passed through the output projection), each query row scaled to sum to 1; read-outs give the raw norm and the attention weight α.';

/**
 * One block of value norms with each query row scaled to sum to 1, made per head on first use
 * (headData(h), read by headMatrix): a view that reads one layer scales one layer.
 */
function rowNormalisedBlock(block) {
  const T = block.key_len;
  const R = block.query_len;
  const n = R * T;
  const heads = new Array(block.heads).fill(null);
  const src = (h) => (block.headData ? block.headData(h) : block.data.subarray(h * n, (h + 1) * n));
  const headData = (h) => {
    if (!heads[h]) {
      const raw = src(h);
      const m = new Float32Array(n);
      for (let i = 0; i < R; i++) {
        let s = 0;
        for (let j = 0; j < T; j++) s += raw[i * T + j];
        const inv = s > 0 ? 1 / s : 0;
        for (let j = 0; j < T; j++) m[i * T + j] = raw[i * T + j] * inv;
      }
      heads[h] = m;
    }
    return heads[h];
  };
  const out = { ...block, headData };
  Object.defineProperty(out, 'data', {
    enumerable: true,
    get() {
      const all = new Float32Array(block.heads * n);
      for (let h = 0; h < block.heads; h++) all.set(headData(h), h * n);
      return all;
    },
  });
  return out;
}

const measureMemo = new WeakMap(); // result → its value-weighted twin

/**
 * The result as the views draw it under a measure. 'value-norm' (when the result holds
 * value_norms): `attentions` are the value norms with each query row scaled to sum to 1 (so line
 * widths, colours, head mean and rollout work as for weights), `normsResult` holds the raw norms
 * and `weightsResult` the raw weights, for read-outs. Any other measure: the result itself.
 */
export function measuredResult(result, measure) {
  if (!result || measure !== 'value-norm' || !result.value_norms) return result;
  if (measureMemo.has(result)) return measureMemo.get(result);
  const out = {
    ...result,
    attentions: result.value_norms.map(rowNormalisedBlock),
    measure: 'value-norm',
    normsResult: { ...result, attentions: result.value_norms },
    weightsResult: result,
  };
  measureMemo.set(result, out);
  return out;
}

/**
 * The raw numbers behind cell (row, col) of the map drawn in `state` (after filters), for a
 * value-weighted result: { norm: ‖α f(x)‖ (raw, as the CLI prints it), alpha: the attention
 * weight α } — each the same aggregate as the drawing (one head, or the mean over `heads`); null
 * for a raw result or rollout (no raw number behind it).
 */
export function rawCell(input, state, row, col, heads = null) {
  const r = input.result;
  if (!r || r.measure !== 'value-norm' || state.agg === 'rollout') return null;
  const st = { ...state, agg: 'head' };
  const n = prepareLayer(r.normsResult, { ...st, rawRows: true }, input.specials);
  const a = prepareLayer(r.weightsResult, st, input.specials);
  if (!n || !a || row >= n.rows || col >= n.cols) return null;
  const list = state.agg === 'mean' ? [...Array(n.nHeads).keys()] : heads && heads.length ? heads : [Math.min(state.head, n.nHeads - 1)];
  let norm = 0;
  let alpha = 0;
  for (const h of list) {
    norm += n.heads[h][row * n.cols + col];
    alpha += a.heads[h][row * a.cols + col];
  }
  return { norm: norm / list.length, alpha: alpha / list.length };
}

/** "‖αf‖ 1.234 · α 0.120": a value-weighted read-out's raw numbers, or ''. */
export function rawText(raw) {
  return raw ? `‖αf‖ ${raw.norm.toFixed(3)} · α ${raw.alpha.toFixed(3)}` : '';
}
