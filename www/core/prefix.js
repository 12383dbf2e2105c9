// A decoder-only result as it was after fewer positions: the scrubber's generation steps. Causal
// attention makes each earlier position's rows exactly what they were then, so a step's maps are
// the first rows and columns of the final ones (no forward needed).

/** Positions a result's maps cover (the prompt, then each generated token). */
export function fedLength(result) {
  return (result.tokens.source || []).length + (result.tokens.target || []).length;
}

const prefixMemo = new WeakMap(); // result → Map(n → its first n positions), the last PREFIXES_KEPT
const PREFIXES_KEPT = 2; // a prefix of every block of SmolLM2 at 256 positions is up to 70 MB

/**
 * The first n rows and columns of one attention block. Each head's matrix is copied on first
 * use (headData(h), read by headMatrix), so a view that reads one layer copies one layer.
 */
function prefixBlock(block, n) {
  const T = block.key_len;
  const heads = new Array(block.heads).fill(null);
  const headData = (h) => {
    if (!heads[h]) {
      const m = new Float32Array(n * n);
      const off = h * block.query_len * T;
      for (let i = 0; i < n; i++) m.set(block.data.subarray(off + i * T, off + i * T + n), i * n);
      heads[h] = m;
    }
    return heads[h];
  };
  // The full block's scores are not the prefix's: its views compute them on the prefix.
  const out = { ...block, query_len: n, key_len: n, shape: [block.heads, n, n], headData, scores: undefined };
  // Every head at once, for any reader of the whole block.
  Object.defineProperty(out, 'data', {
    enumerable: true,
    get() {
      const all = new Float32Array(block.heads * n * n);
      for (let h = 0; h < block.heads; h++) all.set(headData(h), h * n * n);
      return all;
    },
  });
  return out;
}

/**
 * A decoder-only result as it was when its first n positions had been fed: the prompt, then the
 * first n − prompt_len generated tokens, every self-attention block cut to its first n rows and
 * columns (causal attention: the rows are what they were then). Memoised per result and n; the
 * result itself for n ≥ its length.
 */
export function prefixResult(result, n) {
  if (!result || !result.generation || n >= fedLength(result)) return result;
  let per = prefixMemo.get(result);
  if (!per) prefixMemo.set(result, (per = new Map()));
  if (per.has(n)) {
    const hit = per.get(n);
    per.delete(n);
    per.set(n, hit); // most recently used last
    return hit;
  }
  const src = result.tokens.source || [];
  const tgt = result.tokens.target || [];
  const P = src.length;
  const cut = (pair) => (pair ? { source: (pair.source || []).slice(0, Math.min(n, P)), target: (pair.target || []).slice(0, Math.max(0, n - P)) } : pair);
  const out = {
    ...result,
    tokens: cut({ source: src, target: tgt }),
    word_ids: cut(result.word_ids),
    attentions: result.attentions.map((b) => (b.query_len === b.key_len && b.key_len > n ? prefixBlock(b, n) : b)),
  };
  if (result.value_norms) out.value_norms = result.value_norms.map((b) => (b.query_len === b.key_len && b.key_len > n ? prefixBlock(b, n) : b));
  per.set(n, out);
  while (per.size > PREFIXES_KEPT) per.delete(per.keys().next().value);
  return out;
}
