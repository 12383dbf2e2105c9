// What the page and the widget say in words, written once: the status line, the side panel's
// notes, the generation panel's sentences, the model picker's labels. The session holds the
// facts (core/session.js); these functions turn them into English. Token strings and user text
// in these sentences go into the DOM with textContent only.

import { blockAt } from '../core/analysis.js';
import { VALUE_NORM_NOTE } from '../core/measures.js';
import { downloadBytes } from '../core/session.js';
import { hasInt8, weightsName } from '../core/weights.js';
import { tokenLabel } from '../core/tokens.js';
import { note as compareNote } from '../views/compare.js';
import { moduleFor, viewFor } from '../views/index.js';

/** Bytes as the picker and the status line say them. */
const MB = (bytes) => `${Math.round(bytes / 1e6)} MB`;


/** How a model is named in the picker: its name and what it costs to download the first time. */
export function modelLabel(m) {
  const bytes = downloadBytes(m);
  if (m.user) return `${m.name} · ${(bytes / 1e6).toFixed(1)} MB`; // kept here: nothing to download
  return bytes ? `${m.name || m.id} · ${MB(bytes)}` : m.name || m.id;
}

export const SINK_NOTE = 'Most heads of a causal model put most of their weight on the first token, whatever it is: it acts as a no-op “attention sink” where a head parks the weight it does not need (Xiao et al. 2023, “Efficient Streaming Language Models with Attention Sinks”).';

/** Sentences on the filters in use, for the side panel. */
function filterNotes(s, input) {
  const ctl = viewFor(s.view).controls;
  const notes = [];
  if (input.compare) notes.push(compareNote(input, s));
  else if (s.compare || s.compareModel) notes.push('The comparison with B (“Compare with…”) is drawn in the head view and the heatmap.');
  if (s.measure === 'value-norm' && ctl.measure) notes.push(VALUE_NORM_NOTE);
  if (s.hideSpecial) notes.push('Special tokens are hidden and each row is renormalised to sum to 1.');
  if (s.merge) notes.push('Sub-word pieces are merged into words: weights to a word are summed over its pieces (keys), and a word’s row is the average of its pieces’ rows (queries).');
  if (s.threshold > 0 && ctl.threshold) notes.push(`Lines with weight below ${s.threshold.toFixed(2)} are hidden.`);
  if (s.agg === 'rollout' && ctl.agg) notes.push('Rollout (Abnar & Zuidema 2020): per layer 0.5·mean over heads + 0.5·identity, rows renormalised, multiplied through the layers up to this one.');
  return notes;
}

export const mib = (bytes) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** A download's progress in words: bytes of the total, and which header while one is read (a Hub
 *  model's, before its weights); '' with no total. */
export const progressText = (p) => (p && p.total ? `${p.reading ? `${p.reading}: ` : ''}${mib(p.loaded)} / ${mib(p.total)}` : '');

const KIND_WORD = { encoder_self: 'encoder', decoder_self: 'decoder', cross: 'cross-attention' };

/** Where a forward slower than BUSY_AFTER_MS is, from the worker's progress: { at: "decoder
 *  layer 2 of 6" (the kind named when the model has several), layer (1-based), layers }, or null
 *  (none that slow, or no progress yet). */
function forwardAt(session) {
  const f = session.busy && session.forwardProgress;
  const layers = f && session.info && session.info.layers ? session.info.layers[f.kind] : 0;
  if (!layers) return null;
  const kind = (session.info.kinds || []).length > 1 ? `${KIND_WORD[f.kind] || f.kind} ` : '';
  return { at: `${kind}layer ${f.layer + 1} of ${layers}`, layer: f.layer + 1, layers };
}

/** What a forward slower than BUSY_AFTER_MS is doing, for the status line: "computing…", and
 *  with the worker's progress the layer it is at ("computing: decoder layer 2 of 6…"); '' when
 *  no forward is that slow. */
export function computingText(session) {
  if (!session.busy) return '';
  const f = forwardAt(session);
  return f ? `computing: ${f.at}…` : 'computing…';
}

/** What a progress bar shows, or null for none: a model's download (bytes), else a slow
 *  forward's layers (the layer it finished of its kind's). */
export function progressBar(session) {
  const p = session.progress;
  if (p) return { value: p.loaded, max: p.total || 1, text: progressText(p), label: 'Model download' };
  const f = forwardAt(session);
  return f && { value: f.layer, max: f.layers, text: f.at, label: 'Forward progress' };
}

/** The status line while a model loads: its download size the first time (then it is kept). */
export function loadingText(session) {
  const p = session.progress;
  if (p && p.reading) return `Reading ${progressText(p)}…`;
  const m = session.manifest;
  if (!m) return 'Loading…';
  const bytes = downloadBytes(m, session.weightsInUse());
  const big = bytes > 20e6 ? ` (${MB(bytes)}, downloaded on first use, then kept in this browser)` : '';
  return `Loading ${m.name || m.id}${big}…`;
}


/**
 * What B of a comparison can be, as [value (state.compareModel), label] for a picker: a second
 * sentence (''), this text by the model's other weights (where it has int8 ones), or by another
 * model of the same architecture (one with the same tokenizer aligns token by token; compare.js
 * says when they do not). Empty without a model.
 */
export function compareChoices(session) {
  const m = session.manifest;
  if (!m || session.supplied) return [];
  const out = [['', 'a second sentence (B)']];
  if (hasInt8(m)) out.push(['exact', 'this text: int8 (A) vs exact f32 weights (B)'], ['int8', 'this text: exact f32 (A) vs int8 weights (B)']);
  for (const o of (session.catalog && session.catalog.models) || []) {
    if (o.id !== m.id && o.architecture === m.architecture) out.push([o.id, `this text: ${m.name || m.id} (A) vs ${o.name || o.id} (B)`]);
  }
  const cm = session.state.compareModel;
  if (cm && !out.some(([v]) => v === cm)) out.push([cm, `this text: ${cm} (B, not available here)`]);
  return out;
}

/** A GGUF model's weights as its file stores them (its file name's quantisation, e.g. Q4_1): the
 *  model as published, dequantised block by block in the kernel; no f32 copy exists to load. */
function ggufWeights(m) {
  const q = m.format === 'gguf' && /(?:^|[._-])(Q\d_[01K]|Q\d_K_[SML]|BF16|F16|F32)(?=[._-]|$)/i.exec((m.files || [])[0] || '');
  return q ? `${q[1].toUpperCase()} weights, the file’s own` : null;
}

/** Where the exact weights are while int8 ones drew the map ('auto' weights), or null. */
function exactNote(session) {
  const e = session.exact;
  if (session.state.weights !== 'auto' || !session.manifest || e.model !== session.manifest.id) return null;
  if (session.state.compareModel === 'int8' || session.state.compareModel === 'exact') return null; // A's weights are the comparison's
  if (e.phase === 'loading') return `exact f32 weights loading: ${mib(e.loaded)} / ${mib(e.total)}`;
  if (e.phase === 'skipped') return `exact f32 weights not fetched on ${e.why}: pick “exact” weights to fetch them`;
  if (e.phase === 'failed') return `the exact f32 weights could not be loaded: ${e.why}`;
  return e.phase === 'ready' ? 'exact f32 weights next' : null;
}

/** The wasm build the worker runs, as the status lines name it: "wasm SIMD (pkg/)"; or null. */
export function buildText(session) {
  const b = session.catalog && session.catalog.build;
  return b ? `${b.label} (${b.dir})` : null;
}

/**
 * What the status line says: { text, weights (which weights drew the map, or null for a model
 * with one set), truncation (a warning or null), output (translation or continuation, or
 * null), outputLabel }.
 */
export function summary(session) {
  const r = session.result;
  const m = session.manifest;
  const name = m ? m.name || m.id : session.state.model;
  if (!r) return { text: session.phase === 'loading' ? loadingText(session) : '', weights: null, truncation: null, catchingUp: null, coverage: null, output: null, outputLabel: null };
  const n = r.tokens.source.length;
  const tgt = (r.tokens.target || []).length;
  const drawn = m ? weightsName(m, session.drawnWeights()) || ggufWeights(m) : null;
  const exact = drawn && session.drawnWeights() !== 'exact' ? exactNote(session) : null;
  const weights = exact ? `${drawn} (${exact})` : drawn;
  const parts = [name, weights, `${n} token${n === 1 ? '' : 's'}`].filter(Boolean);
  const c = session.compareProgress;
  if (c) parts.push(`B’s weights loading: ${mib(c.loaded)} / ${mib(c.total)}`);
  if (tgt) parts.push(`${tgt} ${r.generation ? 'generated' : 'output'} token${tgt === 1 ? '' : 's'}`);
  if (session.forwardMs != null) parts.push(`${session.forwardMs.toFixed(1)} ms per forward`);
  const max = session.info && session.info.max_positions;
  const truncation = r.truncated
    ? `Your text is longer than this model reads: only its first ${n} tokens${max ? ` (the model’s maximum is ${max} positions)` : ''} are shown. Shorten the text to see all of it.`
    : null;
  // A translation says how much of the text was read and translated (a tiny translator may end
  // a long text's translation early, and the source is cut at the model's maximum).
  let coverage = null;
  if (r.output_text != null && !r.generation) {
    const read = r.truncated ? `Read the first ${n} tokens of the text (the rest is past what the model reads)` : `Read all ${n} tokens of the text`;
    const ended = r.stop_reason === 'max_length'
      ? ', cut at the model’s length limit: the end of the text is not translated.'
      : n >= 24 && tgt < 0.6 * n
        ? ', and the model ended it early: parts of a long text may be left out (translate it a sentence or two at a time).'
        : '.';
    coverage = `${read}; the translation has ${tgt} token${tgt === 1 ? '' : 's'}${ended}`;
  }
  // The drawn answer is of an older text while a newer one is computed (typing faster than the model).
  const catchingUp = session.catchingUp ? 'catching up with the text…' : null;
  return { text: parts.join(' · '), weights, truncation, catchingUp, coverage, output: r.output_text ?? null, outputLabel: r.generation ? 'Continuation' : 'Translation' };
}

/** What the side panel (page) or read-out line (widget) says: { title, hint, items, notes }. */
export function details(session) {
  const s = session.state;
  const input = session.input();
  const view = viewFor(s.view);
  const base = view.side ? view.side(input, s, session.focus) : { title: 'Details', hint: moduleFor(s.view, input).describe(input, s), items: [] };
  return { ...base, hint: session.hoverText || base.hint, notes: filterNotes(s, input) };
}


/**
 * What a shell's generation panel shows, or null for a model that does not generate:
 * { n, tokens: [label], step, steps (G), chosen (label or null), stepText, topTitle,
 *   top: [{ label, p, chosen }], stopText, sampling, sink }.
 */
export function generationText(session) {
  if (!session.generates()) return null;
  const r = session.result;
  const g = r && r.generation;
  const s = session.state;
  const sampling = s.temperature > 0 ? `sampled at temperature ${s.temperature}${s.topK ? `, top-k ${s.topK}` : ''}, seed ${s.seed}` : 'greedy (the most likely token each time)';
  const base = { n: s.gen, tokens: [], step: 0, steps: 0, chosen: null, stepText: '', topTitle: '', top: [], stopText: '', sampling, sink: SINK_NOTE };
  if (!g) return base;
  const tokens = (r.tokens.target || []).map(tokenLabel);
  const G = tokens.length;
  const step = session.genStep();
  const fed = r.tokens.source.concat(r.tokens.target || []);
  const before = tokenLabel(fed[g.prompt_len - 1 + step] ?? '');
  const dist = step < G ? g.steps[step] : null;
  const chosenId = dist ? dist.id : null;
  const top = ((dist ? dist.top : g.next) || []).map((t) => ({ label: tokenLabel(t.token), p: t.p, chosen: t.id === chosenId }));
  const chosen = dist ? tokenLabel(dist.token) : null;
  const stepText = !G ? '' : step < G ? `step ${step + 1} of ${G}: after “${before}” the model chose “${chosen}”` : `after all ${G} token${G === 1 ? '' : 's'}: what would come next`;
  const topTitle = step < G ? `Top 5 next tokens at step ${step + 1} (after “${before}”)` : `Top 5 next tokens after “${before}”`;
  let stopText = '';
  const max = (session.info && session.info.max_positions) || fed.length;
  if (G && r.stop_reason === 'eos') stopText = `Stopped at the end-of-text token after ${G} token${G === 1 ? '' : 's'}.`;
  else if (G < s.gen) stopText = `Generated ${G} of ${s.gen} tokens: the model reads at most ${max} positions, prompt and continuation together${G ? '' : ', and the prompt fills them'}.`;
  else if (G && r.truncated) stopText = `The prompt was cut to its first ${g.prompt_len} tokens, so that it and the ${G} generated fit in the model’s ${max} positions.`;
  // The heads' scores are Rust's (src/heads.rs, shipped with each block): `first` is a head's mean
  // weight on the first token over the prompt and the continuation.
  const block = blockAt(r, 'decoder_self', s.layer);
  const sinks = block && block.scores && block.query_len > 2 ? block.scores.filter((h) => h.first > 0.5).length : null;
  const sink = sinks !== null ? `${SINK_NOTE} Here, in layer ${s.layer + 1}, ${sinks} of ${block.heads} heads put more than half their weight on the first token.` : SINK_NOTE;
  return { ...base, tokens, step, steps: G, chosen, stepText, topTitle, top, stopText, sink };
}

/**
 * What an exported image says it shows (the PNG's Description, the SVG's <desc>), and the tag its
 * file name carries: the model, which weights drew the map (a model with int8 and exact weights),
 * the view, the generation step it shows (a generation's maps are of one step) and the text.
 * → { description, weightsTag ('int8' | 'f32' | ''), stepTag ('step2' while step 2 is scrubbed, or '') }.
 */
export function exportLabel(session) {
  const m = session.manifest;
  const r = session.resultFor;
  const weights = m ? weightsName(m, session.drawnWeights()) : null;
  const view = viewFor(session.state.view).label;
  const own = m && !weights ? ggufWeights(m) : null;
  const c = session.compareInput();
  const vs = c && c.what === 'model' ? `compared with ${c.nameB} (B − A drawn)` : null;
  const g = generationText(session);
  const step = !g || !g.steps ? null : g.step < g.steps ? `generation step ${g.step + 1} of ${g.steps} (choosing “${g.chosen}”)` : `generation: all ${g.steps} token${g.steps === 1 ? '' : 's'}`;
  const parts = ['attnviz', m ? m.name || m.id : session.state.model, weights || own, view, vs, step].filter(Boolean);
  return {
    description: `${parts.join(' · ')}: “${r ? r.text : session.state.text}”`,
    weightsTag: weights ? (session.drawnWeights() === 'exact' ? 'f32' : 'int8') : '',
    stepTag: g && g.steps && g.step < g.steps ? `step${g.step + 1}` : '',
  };
}

/** GQA: which key/value head the selected query head shares, and with which heads; or null. */
export function headNote(session) {
  const g = session.kvGroup();
  if (!g) return null;
  const H = session.numHeads();
  const h = Math.min(H - 1, session.state.head);
  const kv = H / (g.last - g.first + 1);
  return `Query head ${h + 1} shares K/V head ${g.kv + 1} with heads ${g.first + 1}–${g.last + 1} (grouped-query attention: ${H} query heads, ${kv} key/value heads).`;
}
