// Side-panel chart: the attention entropy of every head of the current layer and kind, as bars
// drawn by plotters-canvas in the wasm (drawBarChart), on the page's main thread. The wasm
// returns each bar's geometry in CSS px, so hovering a bar names its head and entropy and a click
// can select that head.
//
//   const geom = drawChart(canvas, wasmModule, input, state, theme, width);
//   const hit = hitTest(geom, x, y);            // → { head } | null
//   text = hit ? hoverText(input, state, hit) : describe(input, state);
//
// The bars are each head's normalised entropy H (core/analysis.js entropy: the model view's H,
// the head overview's "broad"): 0 = every query looks at one key, 1 = uniform over the keys it
// can see (the dashed line). Computed on the maps as shown when filters (hidden special tokens,
// merged sub-words) or the value-weighted measure change them, and the chart's title says so.

import { headEntropies, prepareLayer, prepareLayerSteps } from '../core/analysis.js';
import { chartTheme, font, prepareCanvas } from './common.js';
import { KIND_NAMES } from './head.js';

const CHART_HEIGHT = 180;

/** The chart's numbers made ahead, a head per step (slices.js), so drawChart finds them made. */
export function* prepare(input, state) {
  if (!input || !input.result) return;
  const prep = yield* prepareLayerSteps(input.result, { ...state, agg: 'head' }, input.specials);
  if (!prep || !prep.rows || !prep.cols) return;
  headEntropies(prep);
  yield;
  entropyData(input, state);
}

const dataMemo = new WeakMap(); // prepared layer → its entropy data (drawn, described, hovered)

/** Per-head entropies of the current layer and kind → { values, uniform, layer, kind, … } or null. */
function entropyData(input, state) {
  if (!input || !input.result) return null;
  const prep = prepareLayer(input.result, { ...state, agg: 'head' }, input.specials);
  if (!prep || !prep.rows || !prep.cols) return null;
  if (!dataMemo.has(prep)) dataMemo.set(prep, entropyDataOf(prep));
  return dataMemo.get(prep);
}

function entropyDataOf(prep) {
  const values = Float32Array.from(headEntropies(prep), (e) => e.normalised);
  return { values, shownAsMade: !!prep.scores, layer: prep.layer, kind: prep.kind, nHeads: prep.nHeads, rows: prep.rows, cols: prep.cols };
}

/** Heads the current state singles out (outlined in the chart). */
function selectedHeads(state, nHeads) {
  if (state.agg && state.agg !== 'head') return [];
  if (state.view === 'head' && state.heads && state.heads.length) return state.heads.filter((h) => h < nHeads);
  if (state.view === 'head' && !state.heads) return [];
  return [Math.min(state.head | 0, nHeads - 1)];
}

/**
 * Draw the chart into `canvas` (`width` CSS px wide, CHART_HEIGHT tall) with the wasm module
 * `mod` (the namespace of pkg/attnviz.js after its default() init). state.focusHead (transient)
 * is outlined as hovered. Returns the geometry for hitTest(): { width, height, plot, bars }.
 */
export function drawChart(canvas, mod, input, state, theme, width, height = CHART_HEIGHT) {
  const d = entropyData(input, state);
  const ctx = prepareCanvas(canvas, width, height);
  if (!d || !mod || typeof mod.drawBarChart !== 'function') {
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, width, height);
    ctx.fillStyle = theme.muted;
    ctx.font = font(12);
    ctx.textAlign = 'left';
    ctx.textBaseline = 'top';
    ctx.fillText(d ? 'Loading the chart…' : 'No attention of this kind.', 8, 8);
    return { width, height, bars: [], plot: null };
  }
  const scale = canvas.width / width;
  ctx.setTransform(1, 0, 0, 1, 0, 0); // plotters draws in device pixels
  const labels = Array.from(d.values, (_, h) => String(h + 1));
  const geom = mod.drawBarChart(canvas, d.values, labels, {
    title: `Entropy H per head · layer ${d.layer + 1}${d.shownAsMade ? '' : ' · as shown'}`,
    scale,
    reference: 1,
    reference_label: 'uniform',
    y_label: 'H',
    x_label: 'head',
    selected: selectedHeads(state, d.nHeads),
    hovered: Number.isInteger(state.focusHead) ? state.focusHead : undefined,
    theme: chartTheme(theme), // bar h in series colour h: headColor(h)
  });
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  canvas.setAttribute('aria-label', describe(input, state));
  return { ...geom, bars: geom.bars.map((b) => ({ ...b, head: b.index })) };
}

/** The head whose column is under (x, y) (CSS px of the chart canvas) → { head } or null. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.plot || !geom.bars) return null;
  const p = geom.plot;
  // The column above the axis and the head number under it.
  if (y < p.y || y > p.y + p.h + 18) return null;
  for (const b of geom.bars) if (x >= b.slot_x && x < b.slot_x + b.slot_w) return { head: b.index };
  return null;
}

/** "head 3: H = 0.72 (0 focused … 1 uniform)" */
export function hoverText(input, state, hit) {
  const d = entropyData(input, state);
  if (!d || !hit || !(hit.head >= 0 && hit.head < d.nHeads)) return '';
  return `head ${hit.head + 1}: H = ${d.values[hit.head].toFixed(2)} (0 focused … 1 uniform)`;
}

export function describe(input, state) {
  const d = entropyData(input, state);
  if (!d) return 'Entropy per head: no data';
  let lo = 0;
  let hi = 0;
  d.values.forEach((v, h) => {
    if (v < d.values[lo]) lo = h;
    if (v > d.values[hi]) hi = h;
  });
  return `Attention entropy per head, layer ${d.layer + 1}, ${KIND_NAMES[d.kind] || d.kind}: most focused head ${lo + 1} (H ${d.values[lo].toFixed(2)}), most diffuse head ${hi + 1} (H ${d.values[hi].toFixed(2)}); uniform would be 1`;
}
