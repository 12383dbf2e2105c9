// View state and its URL-hash encoding (permalinks). Pure: no DOM access except through the
// arguments given.

import { MEASURES } from './analysis.js';
import { VIEW_IDS, viewAvailable, viewFor } from './views/index.js';
import { SCORES } from './views/heads.js';

const SCORE_KEYS = SCORES.map(([k]) => k);

export const KINDS = ['encoder_self', 'decoder_self', 'cross'];
/** The most tokens a page or widget asks a model to generate. */
export const GEN_MAX = 64;
export const TEMPERATURE_MAX = 5;
const AGGS = ['head', 'mean', 'rollout'];

/**
 * The most characters (code points) of text a permalink holds, on write and on read alike: a
 * longer text is cut to its first PERMALINK_TEXT_MAX characters in the link, and
 * permalinkNotice() says so for the page to show.
 */
export const PERMALINK_TEXT_MAX = 4000;

/** The first `max` code points of `text` (a surrogate pair is never split). */
export function capText(text, max = PERMALINK_TEXT_MAX) {
  const t = String(text ?? '');
  if (t.length <= max) return t; // a code point is at least one UTF-16 unit
  let units = 0;
  for (let n = 0; n < max && units < t.length; n++) units += t.codePointAt(units) > 0xffff ? 2 : 1;
  return t.slice(0, units);
}

// 20000 → "20,000" (toLocaleString loads the locale data: 30 ms the first time)
const thousands = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

const cut = (t) => capText(t) !== String(t ?? '');

/** Whether a permalink of state `s` holds only the start of its text (or of its compare text). */
export function permalinkTruncated(s) {
  return cut(s.text) || cut(s.compare);
}

/** null, or the sentence a page shows while the permalink holds only the start of a text. */
export function permalinkNotice(s) {
  if (!permalinkTruncated(s)) return null;
  const which = !cut(s.compare) ? 'the text' : !cut(s.text) ? 'the “Compare with…” text' : 'each text';
  return `The permalink holds only the first ${thousands(PERMALINK_TEXT_MAX)} characters of ${which}.`;
}

/** Characters the text box holds: far past what any model reads (512 tokens ≈ 2,500
 *  characters), and laying out a 100,000-character paste held the page for 100–300 ms. */
export const TEXT_MAX = 20000;

/** null, or the sentence a page shows after a paste was cut to what the text box holds (`cut`:
 *  the text box saw it happen; a text that is exactly TEXT_MAX long lost nothing). */
export function textLimitNotice(s, cut) {
  if (!cut || String(s.text ?? '').length < TEXT_MAX) return null;
  return `The text box holds at most ${thousands(TEXT_MAX)} characters; the rest of a longer paste was left out.`;
}

export function defaultState() {
  return {
    model: 'minilm-l6',
    text: '',
    view: 'head',
    kind: 'encoder_self',
    layer: 0,
    head: 0, // the head for heatmap/step views and the "focused" head
    heads: [0], // heads shown in the head view: null = all (one head reads best on first open)
    agg: 'head', // head | mean | rollout
    hideSpecial: false,
    merge: false,
    threshold: 0,
    query: 0, // query token (row) for the step view
    step: 0, // decode step for the cross view
    pin: null, // pinned token in the head view: { side: 'q'|'k', index }
    // Generation (models whose info says generates: true)
    gen: 0, // tokens to generate after the prompt (0 = the prompt only)
    temperature: 0, // 0 = greedy; > 0 samples from softmax(logits / temperature)
    topK: 0, // sample among the k most likely tokens (0 = all)
    seed: 0, // the sampler's seed
    gstep: null, // the scrubbed generation step (0-based), or null: after the last token
    sort: 'score', // head overview ranking: a score column, ".asc" appended for lowest first
    measure: 'raw', // raw | value-norm (‖α f(x)‖, Kobayashi et al. 2020): what the maps draw
    compare: '', // sentence B ("Compare with…"), drawn beside the text in the head view and heatmap; '' = none
    weights: 'int8', // int8 (a quarter of the download, where a model has them) | exact (its f32 file)
  };
}

const clampInt = (v, lo, hi, dflt) => {
  const n = Number.parseInt(v, 10);
  if (!Number.isFinite(n)) return dflt;
  return Math.min(hi, Math.max(lo, n));
};

/**
 * State → "m=..&t=..&v=.." (without the leading #). Only non-default fields are written. The text
 * is cut to PERMALINK_TEXT_MAX characters (permalinkTruncated(s) tells whether it was).
 */
export function encodeState(s) {
  const d = defaultState();
  const p = new URLSearchParams();
  p.set('m', s.model);
  p.set('t', capText(s.text));
  if (s.compare) p.set('c', capText(s.compare));
  if (s.view !== d.view) p.set('v', s.view);
  if (s.kind !== d.kind) p.set('k', s.kind);
  p.set('l', String(s.layer));
  p.set('h', String(s.head));
  if (String(s.heads) !== String(d.heads)) p.set('hs', s.heads ? s.heads.join('.') : 'all');
  if (s.agg !== d.agg) p.set('a', s.agg);
  if (s.hideSpecial) p.set('sp', '1');
  if (s.merge) p.set('mw', '1');
  if (s.threshold) p.set('th', String(Math.round(s.threshold * 1000) / 1000));
  if (s.query) p.set('q', String(s.query));
  if (s.step) p.set('s', String(s.step));
  if (s.pin) p.set('p', `${s.pin.side}${s.pin.index}`);
  if (s.gen) p.set('g', String(s.gen));
  if (s.temperature) p.set('tp', String(Math.round(s.temperature * 1000) / 1000));
  if (s.topK) p.set('tk', String(s.topK));
  if (s.seed) p.set('sd', String(s.seed));
  if (s.gstep !== null && s.gstep !== undefined) p.set('gs', String(s.gstep));
  if (s.measure && s.measure !== d.measure) p.set('ms', s.measure);
  if (s.weights === 'exact') p.set('w', 'exact');
  if (s.sort && s.sort !== d.sort) p.set('so', s.sort);
  return p.toString();
}

/** "#m=..&t=.." → partial state merged over defaults; unknown / bad values fall back. */
export function decodeState(hash, base = defaultState()) {
  const s = { ...base };
  const str = (hash || '').replace(/^#/, '');
  if (!str) return s;
  const p = new URLSearchParams(str);
  if (p.has('m')) s.model = p.get('m').slice(0, 64);
  if (p.has('t')) s.text = capText(p.get('t'));
  s.compare = p.has('c') ? capText(p.get('c')) : '';
  if (p.has('v') && VIEW_IDS.includes(p.get('v'))) s.view = p.get('v');
  if (p.has('k') && KINDS.includes(p.get('k'))) s.kind = p.get('k');
  if (p.has('l')) s.layer = clampInt(p.get('l'), 0, 1000, 0);
  if (p.has('h')) s.head = clampInt(p.get('h'), 0, 1000, 0);
  if (p.get('hs') === 'all') s.heads = null;
  else if (p.has('hs')) {
    const hs = p
      .get('hs')
      .split('.')
      .map((x) => Number.parseInt(x, 10))
      .filter((x) => Number.isFinite(x) && x >= 0 && x < 1000);
    s.heads = hs.length ? [...new Set(hs)].sort((a, b) => a - b) : null;
  }
  if (p.has('a') && AGGS.includes(p.get('a'))) s.agg = p.get('a');
  s.hideSpecial = p.get('sp') === '1';
  s.merge = p.get('mw') === '1';
  if (p.has('th')) {
    const t = Number.parseFloat(p.get('th'));
    s.threshold = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
  }
  if (p.has('q')) s.query = clampInt(p.get('q'), 0, 100000, 0);
  if (p.has('s')) s.step = clampInt(p.get('s'), 0, 100000, 0);
  const pin = /^([qk])(\d{1,6})$/.exec(p.get('p') || '');
  s.pin = pin ? { side: pin[1], index: Number(pin[2]) } : null;
  s.measure = MEASURES.includes(p.get('ms')) ? p.get('ms') : 'raw';
  s.weights = p.get('w') === 'exact' ? 'exact' : 'int8';
  const so = /^([a-z]+)(\.asc)?$/.exec(p.get('so') || '');
  s.sort = so && SCORE_KEYS.includes(so[1]) ? so[0] : 'score';
  Object.assign(s, generationOptions((k) => p.get(k), { gen: 'g', temperature: 'tp', topK: 'tk', seed: 'sd', gstep: 'gs' }, 0));
  return s;
}

/**
 * The generation fields of a state read from strings (permalink parameters, widget attributes):
 * get(name) → string or null; names: field → parameter name; base: what gstep counts from (0 in
 * permalinks, 1 in attributes). Bad or missing values fall back to the defaults.
 */
export function generationOptions(get, names, base) {
  const d = defaultState();
  const num = (n) => {
    const v = get(names[n]);
    const x = v === null || v === undefined ? NaN : Number.parseFloat(v);
    return Number.isFinite(x) ? x : null;
  };
  const out = {};
  const gen = num('gen');
  out.gen = gen === null ? d.gen : Math.min(GEN_MAX, Math.max(0, Math.round(gen)));
  const t = num('temperature');
  out.temperature = t === null ? d.temperature : Math.min(TEMPERATURE_MAX, Math.max(0, t));
  const k = num('topK');
  out.topK = k === null ? d.topK : Math.min(100000, Math.max(0, Math.round(k)));
  const seed = num('seed');
  out.seed = seed === null ? d.seed : Math.min(0xffffffff, Math.max(0, Math.round(seed)));
  const gs = num('gstep');
  out.gstep = gs === null || gs < base ? d.gstep : Math.min(GEN_MAX, Math.round(gs) - base);
  return out;
}

/** Make layer/head/kind/query/step valid for a result's shape. */
export function clampToResult(s, shape) {
  // shape: { kinds: [...], layers: {kind: n}, heads: {kind: n}, rows: {kind: n}, cols: {kind: n}, targetLen }
  const out = { ...s };
  if (!viewAvailable(out.view, shape.kinds)) out.view = 'head';
  const forced = viewFor(out.view).forceKind;
  if (forced) out.kind = forced;
  if (!shape.kinds.includes(out.kind)) out.kind = shape.kinds[0];
  const L = shape.layers[out.kind] || 1;
  const H = shape.heads[out.kind] || 1;
  out.layer = Math.min(Math.max(0, out.layer), L - 1);
  out.head = Math.min(Math.max(0, out.head), H - 1);
  if (out.heads) {
    out.heads = out.heads.filter((h) => h < H);
    if (!out.heads.length || out.heads.length === H) out.heads = null;
  }
  if (out.agg === 'rollout' && out.kind === 'cross') out.agg = 'mean';
  const rows = shape.rows[out.kind] || 1;
  out.query = Math.min(Math.max(0, out.query), rows - 1);
  out.step = Math.min(Math.max(0, out.step), Math.max(0, (shape.targetLen || 1) - 1));
  if (out.pin && out.pin.index >= ((out.pin.side === 'q' ? shape.rows : shape.cols)[out.kind] || 0)) out.pin = null;
  // The scrubbed generation step: null (after the last token) once past what was generated.
  if (out.gstep !== null && out.gstep !== undefined && !(out.gstep < (shape.generated || 0))) out.gstep = null;
  return out;
}
