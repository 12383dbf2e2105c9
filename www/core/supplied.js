// Attention computed elsewhere (a Hugging Face model's `output_attentions=True` in PyTorch, a JSON
// file a course page ships), drawn by the same views as a forward of ours: `suppliedResult(data)`
// checks it and builds a result of the forward's shape (schema/attend.schema.json), which
// Session.showSupplied draws without a model. The argument names are BertViz's, so a notebook's
// `head_view(attention, tokens)` data carries over:
//
//   { tokens, attention, causal?, label?, specials? }         one stack (BERT, GPT-2, …)
//   { encoder_tokens, decoder_tokens, encoder_attention,      an encoder-decoder (Marian, T5, …)
//     decoder_attention, cross_attention, label?, specials? }
//
// Each attention is one entry per layer: nested arrays [heads][queries][keys] (a batch of one,
// [1][heads][queries][keys], as PyTorch returns it, is taken too) or { shape: [heads, queries,
// keys], data } with data a Float32Array or numbers, row-major. `causal`: the stack is a decoder
// (its maps are drawn masked above the diagonal). `specials`: the tokens "hide special tokens"
// hides. `compare`: a second set of one stack ({ tokens, attention, label? }: another sentence,
// model or checkpoint), drawn as B beside it in the head view and the heatmap with the difference
// map (Session.showSupplied). `head_scores`: the head overview's scores of these maps, one object per
// head as `attnviz heads` writes them (#/$defs/heads in schema/attend.schema.json; the notebook's
// kernel computes them with attnviz.heads): without them that view is not offered. Anything that does not fit throws an Error that names the argument
// and what was expected.

import { HEAD_LABEL_NAMES } from './head-scores.js';

const ROW_SUM_TOLERANCE = 1e-2; // float16 maps sum to 1 within about 1e-3
/** Set (true) on data whose numbers were checked where it was made (the notebook's kernel checks
 *  every weight before sending): the one pass over them is skipped, at 512 tokens × 144 maps a
 *  100 ms task. A symbol, so that no JSON can claim it. */
export const NUMBERS_CHECKED = Symbol('attention numbers checked where they were made');
export const MAX_SUPPLIED_TOKENS = 1024;

function tokenList(tokens, name) {
  if (!Array.isArray(tokens) || !tokens.length) throw new Error(`${name} must be a non-empty list of token strings`);
  if (tokens.length > MAX_SUPPLIED_TOKENS) throw new Error(`${name} has ${tokens.length} tokens; at most ${MAX_SUPPLIED_TOKENS} are drawn`);
  tokens.forEach((t, i) => {
    if (typeof t !== 'string') throw new Error(`${name}[${i}] is ${typeof t}, not a token string`);
  });
  return tokens.slice();
}

/** One layer's map as { heads, q, k, data: Float32Array }, from nested arrays or { shape, data }. */
function layerMap(layer, name) {
  if (layer && !Array.isArray(layer) && Array.isArray(layer.shape)) {
    const shape = layer.shape.length === 4 && layer.shape[0] === 1 ? layer.shape.slice(1) : layer.shape;
    if (shape.length !== 3 || !shape.every((n) => Number.isInteger(n) && n > 0)) {
      throw new Error(`${name}.shape is [${layer.shape}]; expected [heads, queries, keys]${layer.shape.length === 4 ? ' (a batch of more than one: pass one example)' : ''}`);
    }
    const [heads, q, k] = shape;
    if (!layer.data || layer.data.length !== heads * q * k) throw new Error(`${name}.data holds ${layer.data ? layer.data.length : 0} numbers; its shape [${shape}] needs ${heads * q * k}`);
    return { heads, q, k, data: layer.data instanceof Float32Array ? layer.data : Float32Array.from(layer.data) };
  }
  let maps = layer;
  if (Array.isArray(maps) && Array.isArray(maps[0]) && Array.isArray(maps[0][0]) && Array.isArray(maps[0][0][0])) {
    if (maps.length !== 1) throw new Error(`${name} has a batch of ${maps.length}; pass one example (attention[layer][i])`);
    maps = maps[0];
  }
  if (!Array.isArray(maps) || !Array.isArray(maps[0]) || !Array.isArray(maps[0][0])) throw new Error(`${name} must be [heads][queries][keys] numbers (or { shape, data })`);
  const heads = maps.length;
  const q = maps[0].length;
  const k = maps[0][0].length;
  const data = new Float32Array(heads * q * k);
  maps.forEach((rows, h) => {
    if (!Array.isArray(rows) || rows.length !== q) throw new Error(`${name}[${h}] has ${rows && rows.length} rows; head 0 has ${q}`);
    rows.forEach((row, i) => {
      if (!Array.isArray(row) || row.length !== k) throw new Error(`${name}[${h}][${i}] has ${row && row.length} keys; expected ${k}`);
      data.set(row, (h * q + i) * k);
    });
  });
  return { heads, q, k, data };
}

/** The blocks of one kind: every layer's map checked against the tokens it is between. */
function blocks(layers, name, kind, queries, keys, sides, checked) {
  if (!Array.isArray(layers) || !layers.length) throw new Error(`${name} must be a list with one map per layer`);
  let heads = 0;
  return layers.map((layer, l) => {
    const at = `${name}[${l}]`;
    const m = layerMap(layer, at);
    if (m.q !== queries.length || m.k !== keys.length) {
      throw new Error(`${at} is ${m.q}×${m.k} (queries × keys) but there are ${queries.length} query and ${keys.length} key tokens`);
    }
    if (l && m.heads !== heads) throw new Error(`${at} has ${m.heads} heads; layer 0 has ${heads}`);
    heads = m.heads;
    // One pass over every weight (37.7M at 512 tokens × 144 maps: kept to a tight loop).
    const d = m.data;
    for (let r = 0, o = 0; !checked && r < m.heads * m.q; r++) {
      let sum = 0;
      for (const end = o + m.k; o < end; o++) {
        const v = d[o];
        if (!(v >= 0) || v === Infinity) throw new Error(`${at}: head ${Math.floor(r / m.q)}, query ${r % m.q}, key ${o - r * m.k} is ${v}; attention weights are finite and ≥ 0`);
        sum += v;
      }
      if (Math.abs(sum - 1) > ROW_SUM_TOLERANCE) throw new Error(`${at}: the row of head ${Math.floor(r / m.q)}, query ${r % m.q} sums to ${sum.toFixed(4)}; attention rows sum to 1 (the softmax's output)`);
    }
    const [querySide, keySide] = sides;
    return { kind, layer: l, heads: m.heads, query_len: m.q, key_len: m.k, query_side: querySide, key_side: keySide, shape: [m.heads, m.q, m.k], data: m.data, scores: null };
  });
}

/** The result the views draw, from attention computed elsewhere (see the top of this file). */
export function suppliedResult(data) {
  if (!data || typeof data !== 'object') throw new Error('showAttention needs { tokens, attention } or { encoder_tokens, encoder_attention, … }');
  const label = typeof data.label === 'string' && data.label ? data.label : 'supplied attention';
  const checked = data[NUMBERS_CHECKED] === true;
  const twoStacks = 'encoder_attention' in data || 'decoder_attention' in data || 'cross_attention' in data;
  let source;
  let target = [];
  let attentions;
  if (twoStacks) {
    if ('attention' in data) throw new Error('give either attention (one stack) or encoder_attention/decoder_attention/cross_attention, not both');
    source = tokenList(data.encoder_tokens, 'encoder_tokens');
    attentions = [];
    if (data.encoder_attention) attentions.push(...blocks(data.encoder_attention, 'encoder_attention', 'encoder_self', source, source, ['source', 'source'], checked));
    if (data.decoder_attention || data.cross_attention) {
      target = tokenList(data.decoder_tokens, 'decoder_tokens');
      if (data.decoder_attention) attentions.push(...blocks(data.decoder_attention, 'decoder_attention', 'decoder_self', target, target, ['target', 'target'], checked));
      if (data.cross_attention) attentions.push(...blocks(data.cross_attention, 'cross_attention', 'cross', target, source, ['target', 'source'], checked));
    }
    if (!attentions.length) throw new Error('encoder_attention, decoder_attention and cross_attention are all empty');
  } else {
    source = tokenList(data.tokens, 'tokens');
    const kind = data.causal ? 'decoder_self' : 'encoder_self';
    attentions = blocks(data.attention, 'attention', kind, source, source, ['source', 'source'], checked);
  }
  return {
    model: label,
    text: source.join(' '),
    tokens: { source, target },
    word_ids: null,
    output_text: null,
    truncated: false,
    stop_reason: null,
    attentions,
    sentence_embedding: null,
    generation: null,
    forward_ms: null,
    value_norms: null,
  };
}


/**
 * The head scores given with supplied attention, checked against its result: one per head of
 * every block (kind, layer, head), each number finite or null, a label the overview colours. Null
 * when none are given; throws naming the first that does not fit.
 */
export function suppliedHeads(data, result) {
  const given = data.head_scores;
  if (given === undefined || given === null) return null;
  const wanted = new Map(result.attentions.flatMap((b) => Array.from({ length: b.heads }, (_, h) => [`${b.kind} ${b.layer} ${h}`, false])));
  if (!Array.isArray(given) || given.length !== wanted.size) throw new Error(`head_scores must hold one score object per head of every layer (${wanted.size})`);
  given.forEach((s, i) => {
    const key = s && `${s.kind} ${s.layer} ${s.head}`;
    if (!wanted.has(key) || wanted.get(key)) throw new Error(`head_scores[${i}] is ${key ? `${s.kind}, layer ${s.layer}, head ${s.head}` : 'not an object'}: not a head of these maps, or given twice`);
    wanted.set(key, true);
    if (!HEAD_LABEL_NAMES.includes(s.label)) throw new Error(`head_scores[${i}].label is ${JSON.stringify(s.label)}; one of ${HEAD_LABEL_NAMES.join(', ')}`);
    for (const [k, v] of Object.entries(s)) {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`head_scores[${i}].${k} is ${v}; scores are finite`);
    }
  });
  return { model: result.model, text: result.text, tokens: result.tokens, induction_tokens: null, heads: given };
}

/** The tokens "hide special tokens" hides for supplied attention: the ones given, else none. */
export function suppliedSpecials(data) {
  return Array.isArray(data && data.specials) ? data.specials.filter((t) => typeof t === 'string') : [];
}
