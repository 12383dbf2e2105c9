// View state and its URL-hash encoding (permalinks). Pure: no DOM access except through the
// arguments given.

import { MEASURES } from './measures.js';
import { VIEW_IDS, viewAvailable, viewSpec as viewFor } from './views.js';
import { SCORES } from './head-scores.js';
import { WEIGHTS } from './weights.js';

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

/** What the step view shows — one query's computation, every matrix of the head, or both (one
 *  under the other) — as [value, the hosts' picker label]. */
export const STEP_PART_CHOICES = [['query', 'one query, step by step'], ['matrices', 'all queries: every matrix'], ['both', 'both']];
export const STEP_PARTS = STEP_PART_CHOICES.map(([v]) => v);

/** How big a view is drawn — 'fit' its box, a multiple of the box, or 'width' (as tall as it
 *  takes) — as [value, the hosts' picker label]. */
export const ZOOM_CHOICES = [['fit', 'fit'], ['1.5', '1.5×'], ['2', '2×'], ['3', '3×'], ['width', 'fit width']];
export const ZOOMS = ZOOM_CHOICES.map(([v]) => v);

/** The size a view is asked to fit for `zoom` in a box of boxWidth × boxHeight CSS px. */
export function zoomedBox(zoom, boxWidth, boxHeight) {
  if (zoom === 'width' || !(boxHeight > 0)) return { width: boxWidth, height: Infinity };
  const z = Number(zoom) || 1;
  return { width: Math.floor(boxWidth * z), height: Math.floor(boxHeight * z) };
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
    hz: null, // heatmap zoom: { z (×), row, col (the first shown) }, or null: the whole map
    win: null, // head view on a long text: the window's first token (null: around the pin, else the start; a causal decoder's end)
    lensCell: null, // the logit lens's pinned cell: { layer, position }
    // Generation (models whose info says generates: true)
    gen: 0, // tokens to generate after the prompt (0 = the prompt only)
    temperature: 0, // 0 = greedy; > 0 samples from softmax(logits / temperature)
    topK: 0, // sample among the k most likely tokens (0 = all)
    seed: 0, // the sampler's seed
    gstep: null, // the scrubbed generation step (0-based), or null: after the last token
    sort: 'score', // head overview ranking: a score column, ".asc" appended for lowest first
    measure: 'raw', // raw | value-norm (‖α f(x)‖, Kobayashi et al. 2020): what the maps draw
    compare: '', // sentence B ("Compare with…"), drawn beside the text in the head view and heatmap; '' = none
    weights: 'auto', // auto (int8 for the first map, then the exact f32 file in the background) | int8 | exact: for a model with int8 weights (weights.js)
    stepPart: 'query', // step view: query (one query, step by step) | matrices (all queries at once) | both
    zoom: 'fit', // fit (the whole view in its box) | 1.5 | 2 | 3 (× the box: scroll for detail) | width (the box's width, as tall as it takes)
    compareModel: '', // B of a comparison computed from the text itself by other weights ('int8' | 'exact') or another model (its id); '' = none
  };
}

const clampInt = (v, lo, hi, dflt) => {
  const n = Number.parseInt(v, 10);
  if (!Number.isFinite(n)) return dflt;
  return Math.min(hi, Math.max(lo, n));
};

/** Short names a widget's `model` and `view` attributes take besides the ids. */
const MODEL_ALIASES = { minilm: 'minilm-l6', 'en-pt': 'en-pt-tiny', smollm2: 'smollm2-135m', paper: 'paper-transformer' };
const VIEW_ALIASES = { grid: 'model', ...Object.fromEntries(VIEW_IDS.map((v) => [v, v])) };

const rounded = (x) => String(Math.round(x * 1000) / 1000);
const unlessDefault = (name, write = String) => (v) => (v && v !== defaultState()[name] ? write(v) : null);
/** An index counted from 1 in an attribute (as the page shows it), from 0 inside. */
const fromOne = (raw) => {
  const v = Number.parseInt(raw, 10);
  return Number.isFinite(v) && v >= 1 ? v - 1 : null;
};
const countProblem = (name, raw, extra = '') => (fromOne(raw) === null ? `${name}="${raw}" is not a number from 1 (${extra}they count from 1, as the page shows them); ignored` : null);
const oneOf = (name, values, used) => (raw) => (values.includes(raw) ? null : `${name}="${raw}" is not one of ${values.join(', ')}; ${used} used`);
const inRange = (name, lo, hi) => (raw) => {
  const x = Number.parseFloat(raw);
  if (!Number.isFinite(x)) return `${name}="${raw}" is not a number; ignored`;
  return x < lo || x > hi ? `${name}="${raw}" is outside ${lo}–${hi}; ${x < lo ? lo : hi} used` : null;
};
const GEN_PARAMS = { gen: 'g', temperature: 'tp', topK: 'tk', seed: 'sd', gstep: 'gs' };
const GEN_ATTRS = { gen: 'generate', temperature: 'temperature', topK: 'top-k', seed: 'seed', gstep: 'generate-step' };
/** A generation field: read with its siblings by generationOptions (base: what gstep counts from). */
const genField = (name, write) => ({
  name,
  param: GEN_PARAMS[name],
  attr: GEN_ATTRS[name],
  write,
  fromLink: (raw, s, get) => generationOptions(get, GEN_PARAMS, 0)[name],
  fromAttr: (raw, s, get, only) => {
    if (raw !== null || only === GEN_ATTRS[name]) s[name] = generationOptions(get, GEN_ATTRS, 1)[name];
  },
});

/**
 * The view state's fields: the one table the permalink (encodeState, decodeState) and the
 * widget's attributes (fromAttributes; attention-viz.js observes every `attr`) are read from.
 * name: the state field; param: its permalink key; write(value) → the permalink string, or null
 * to leave it out; fromLink(raw, state, get) → its value from a permalink (raw: null when absent);
 * attr: its <attention-viz> attribute, if it has one; fromAttr(raw, state, get, only) writes what
 * the attribute says into the state (raw: null when absent or not the one that changed); problem(raw)
 * → what is wrong with a value given, said as a console warning (null: nothing).
 */
export const FIELDS = [
  {
    name: 'model', param: 'm', attr: 'model', write: String,
    fromLink: (raw, s) => (raw === null ? s.model : raw.slice(0, 256)),
    fromAttr: (raw, s) => { if (raw) s.model = MODEL_ALIASES[raw] || raw; },
  },
  {
    name: 'text', param: 't', attr: 'text', write: (v) => capText(v),
    fromLink: (raw, s) => (raw === null ? s.text : capText(raw)),
    fromAttr: (raw, s) => { if (raw !== null) s.text = raw; },
  },
  {
    name: 'compare', param: 'c', attr: 'compare', write: (v) => (v ? capText(v) : null),
    fromLink: (raw) => (raw === null ? '' : capText(raw)),
    fromAttr: (raw, s, get, only) => { if (raw !== null || only === 'compare') s.compare = raw || ''; },
  },
  {
    name: 'view', param: 'v', attr: 'view', write: unlessDefault('view'),
    fromLink: (raw, s) => (VIEW_IDS.includes(raw) ? raw : s.view),
    fromAttr: (raw, s) => { if (VIEW_ALIASES[raw]) s.view = VIEW_ALIASES[raw]; },
    problem: (raw) => (VIEW_ALIASES[raw] ? null : `view="${raw}" is not a view (${Object.keys(VIEW_ALIASES).join(', ')}); ignored`),
  },
  {
    // (after view: a view that cannot show cross-attention takes the widget back to encoder self-attention)
    name: 'kind', param: 'k', attr: 'kind', write: unlessDefault('kind'),
    fromLink: (raw, s) => (KINDS.includes(raw) ? raw : s.kind),
    fromAttr: (raw, s, get, only) => {
      if (KINDS.includes(raw)) s.kind = raw;
      else if (only === 'view' && s.kind === 'cross' && !viewFor(s.view).forceKind) s.kind = 'encoder_self';
    },
    problem: (raw) => (KINDS.includes(raw) ? null : `kind="${raw}" is not an attention kind (${KINDS.join(', ')}); ignored`),
  },
  {
    name: 'layer', param: 'l', attr: 'layer', write: String,
    fromLink: (raw, s) => (raw === null ? s.layer : clampInt(raw, 0, 1000, 0)),
    fromAttr: (raw, s) => { if (fromOne(raw) !== null) s.layer = fromOne(raw); },
    problem: (raw) => countProblem('layer', raw),
  },
  {
    // head="mean": the mean over heads; head="N": that head alone
    name: 'head', param: 'h', attr: 'head', write: String,
    fromLink: (raw, s) => (raw === null ? s.head : clampInt(raw, 0, 1000, 0)),
    fromAttr: (raw, s) => {
      if (raw === 'mean') s.agg = 'mean';
      else if (fromOne(raw) !== null) Object.assign(s, { head: fromOne(raw), agg: 'head', heads: [fromOne(raw)] });
    },
    problem: (raw) => (raw === 'mean' ? null : countProblem('head', raw, 'or "mean"; ')),
  },
  {
    name: 'heads', param: 'hs', write: (v) => (String(v) === String(defaultState().heads) ? null : v ? v.join('.') : 'all'),
    fromLink: (raw, s) => {
      if (raw === null) return s.heads;
      if (raw === 'all') return null;
      const hs = raw.split('.').map((x) => Number.parseInt(x, 10)).filter((x) => Number.isFinite(x) && x >= 0 && x < 1000);
      return hs.length ? [...new Set(hs)].sort((a, b) => a - b) : null;
    },
  },
  { name: 'agg', param: 'a', write: unlessDefault('agg'), fromLink: (raw, s) => (AGGS.includes(raw) ? raw : s.agg) },
  { name: 'hideSpecial', param: 'sp', write: (v) => (v ? '1' : null), fromLink: (raw) => raw === '1' },
  { name: 'merge', param: 'mw', write: (v) => (v ? '1' : null), fromLink: (raw) => raw === '1' },
  {
    name: 'threshold', param: 'th', write: (v) => (v ? rounded(v) : null),
    fromLink: (raw, s) => {
      if (raw === null) return s.threshold;
      const t = Number.parseFloat(raw);
      return Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
    },
  },
  {
    name: 'query', param: 'q', attr: 'query', write: (v) => (v ? String(v) : null),
    fromLink: (raw, s) => (raw === null ? s.query : clampInt(raw, 0, 100000, 0)),
    fromAttr: (raw, s) => { if (fromOne(raw) !== null) s.query = fromOne(raw); },
    problem: (raw) => countProblem('query', raw),
  },
  { name: 'step', param: 's', write: (v) => (v ? String(v) : null), fromLink: (raw, s) => (raw === null ? s.step : clampInt(raw, 0, 100000, 0)) },
  {
    name: 'pin', param: 'p', write: (v) => (v ? `${v.side}${v.index}` : null),
    fromLink: (raw) => {
      const pin = /^([qk])(\d{1,6})$/.exec(raw || '');
      return pin ? { side: pin[1], index: Number(pin[2]) } : null;
    },
  },
  {
    name: 'hz', param: 'hz', write: (v) => (v && v.z > 1 ? `${v.z}.${v.row}.${v.col}` : null),
    fromLink: (raw) => {
      const z = /^(\d{1,2}(?:\.\d{1,2})?)\.(\d{1,6})\.(\d{1,6})$/.exec(raw || '');
      return z && Number(z[1]) > 1 ? { z: Number(z[1]), row: Number(z[2]), col: Number(z[3]) } : null;
    },
  },
  {
    name: 'win', param: 'hw', write: (v) => (Number.isInteger(v) ? String(v) : null),
    fromLink: (raw) => (raw === null ? null : clampInt(raw, 0, 100000, null)),
  },
  {
    name: 'lensCell', param: 'lc', write: (v) => (v ? `${v.layer}.${v.position}` : null),
    fromLink: (raw) => {
      const cell = /^(\d{1,4})\.(\d{1,6})$/.exec(raw || '');
      return cell ? { layer: Number(cell[1]), position: Number(cell[2]) } : null;
    },
  },
  { ...genField('gen', (v) => (v ? String(v) : null)), problem: inRange('generate', 0, GEN_MAX) },
  { ...genField('temperature', (v) => (v ? rounded(v) : null)), problem: inRange('temperature', 0, TEMPERATURE_MAX) },
  genField('topK', (v) => (v ? String(v) : null)),
  genField('seed', (v) => (v ? String(v) : null)),
  { ...genField('gstep', (v) => (v === null || v === undefined ? null : String(v))), problem: (raw) => countProblem('generate-step', raw) },
  {
    name: 'measure', param: 'ms', attr: 'measure', write: unlessDefault('measure'),
    fromLink: (raw) => (MEASURES.includes(raw) ? raw : 'raw'),
    fromAttr: (raw, s, get, only) => { if (raw !== null || only === 'measure') s.measure = raw === 'value-norm' ? 'value-norm' : 'raw'; },
    problem: oneOf('measure', MEASURES, 'raw'),
  },
  {
    name: 'weights', param: 'w', attr: 'weights', write: unlessDefault('weights'),
    fromLink: (raw) => (WEIGHTS.includes(raw) ? raw : 'auto'),
    fromAttr: (raw, s, get, only) => { if (raw !== null || only === 'weights') s.weights = WEIGHTS.includes(raw) ? raw : 'auto'; },
    problem: oneOf('weights', WEIGHTS, 'auto'),
  },
  {
    name: 'stepPart', param: 'sx', attr: 'step-part', write: unlessDefault('stepPart'),
    fromLink: (raw) => (STEP_PARTS.includes(raw) ? raw : 'query'),
    fromAttr: (raw, s, get, only) => { if (raw !== null || only === 'step-part') s.stepPart = STEP_PARTS.includes(raw) ? raw : 'query'; },
    problem: oneOf('step-part', STEP_PARTS, 'query'),
  },
  {
    name: 'zoom', param: 'z', attr: 'zoom', write: unlessDefault('zoom'),
    fromLink: (raw) => (ZOOMS.includes(raw) ? raw : 'fit'),
    fromAttr: (raw, s, get, only) => { if (raw !== null || only === 'zoom') s.zoom = ZOOMS.includes(raw) ? raw : 'fit'; },
    problem: oneOf('zoom', ZOOMS, 'fit'),
  },
  {
    name: 'compareModel', param: 'cm', attr: 'compare-model', write: (v) => v || null,
    fromLink: (raw) => (raw ? raw.slice(0, 256) : ''),
    fromAttr: (raw, s, get, only) => { if (raw !== null || only === 'compare-model') s.compareModel = raw ? MODEL_ALIASES[raw] || raw : ''; },
  },
  {
    name: 'sort', param: 'so', write: unlessDefault('sort'),
    fromLink: (raw) => {
      const so = /^([a-z]+)(\.asc)?$/.exec(raw || '');
      return so && SCORE_KEYS.includes(so[1]) ? so[0] : 'score';
    },
  },
];

/** The attributes of <attention-viz> that are state fields, in the table's order. */
export const STATE_ATTRIBUTES = FIELDS.filter((f) => f.attr).map((f) => f.attr);

/**
 * State → "m=..&t=..&v=.." (without the leading #). Only what differs from the defaults is written
 * (model, text, layer and head always). The text is cut to PERMALINK_TEXT_MAX characters
 * (permalinkTruncated(s) tells whether it was).
 */
export function encodeState(s) {
  const p = new URLSearchParams();
  for (const f of FIELDS) {
    const v = f.write(s[f.name]);
    if (v !== null) p.set(f.param, v);
  }
  return p.toString();
}

/** "#m=..&t=.." → partial state merged over `base`; unknown or bad values fall back. */
export function decodeState(hash, base = defaultState()) {
  const s = { ...base };
  const str = (hash || '').replace(/^#/, '');
  if (!str) return s;
  const p = new URLSearchParams(str);
  const get = (k) => p.get(k);
  for (const f of FIELDS) s[f.name] = f.fromLink(get(f.param), s, get);
  return s;
}

/**
 * A widget's attributes → state `s` (changed in place and returned) and the problems to warn
 * about: all of them at the start (`only` null), then only the one that changed (so a change of
 * layer does not undo what the reader typed; a change of view reads kind again). get(attr) →
 * the attribute's value or null.
 */
export function fromAttributes(get, only, s) {
  const a = (n) => (only && n !== only && !(only === 'view' && n === 'kind') ? null : get(n));
  const problems = [];
  for (const f of FIELDS) {
    if (!f.attr) continue;
    const raw = a(f.attr);
    f.fromAttr(raw, s, a, only);
    const problem = raw !== null && f.problem ? f.problem(raw) : null;
    if (problem) problems.push(problem);
  }
  return { state: s, problems };
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
