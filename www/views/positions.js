// Positions view: the vectors the model adds to each token's embedding to say where it stands.
// The translator (Marian) adds a fixed sinusoid; BERT adds rows of a learned table; Llama adds
// nothing and rotates queries and keys instead (the table then holds the rotations' cos and sin,
// cos(p·θᵢ) in the first d_k/2 columns, sin(p·θᵢ) in the rest). The numbers
// are the model’s own (input.positions = AttnModel.positions(count): { kind, positions, dims, wave,
// data [positions × dims] }), drawn by plotters-canvas in the wasm (drawPositionsChart,
// input.charts = the main-thread wasm module) as a heatmap of position × dimension above a line
// chart of a few dimensions over position. The chart is drawn into an off-screen canvas once per
// table, width and theme, then copied into the view: the page's canvas, a PNG, and the SVG export
// (an embedded image) all hold the same chart. It is made in steps (the frame, then the heatmap in
// bands of 24 dims, ~10 ms each), so no task holds the page. Hover reads one value out: position,
// dim, value.

import { canvasScale, chartTheme, clear, drawTitle, fitHeight, font, gridStep, headColor, textLines, wrapWords } from './common.js';

const CHART_H = 500; // the plotters chart: heatmap + line chart
const HEAT_SHARE = 0.58; // the heatmap's share of it
const MIN_CHART_H = 200; // the least it gets to fit a box (the translator's at 1280×720: 341 px)
const LINE_COUNT = 4;

const dimsMemo = new WeakMap(); // table → its line dims

/** Dimensions drawn as lines: sin at a fast, a middle and a slow frequency and the fast cos
 *  (sinusoid), or the 4 that vary most over the positions shown (learned). */
export function lineDims(t) {
  if (!dimsMemo.has(t)) dimsMemo.set(t, lineDimsOf(t));
  return dimsMemo.get(t);
}

function lineDimsOf(t) {
  if (t.kind === 'sinusoidal' || t.kind === 'rotary') {
    const half = Math.floor(t.dims / 2);
    return [...new Set([0, Math.floor(half / 8), Math.floor(half / 4), half])].filter((d) => d < t.dims);
  }
  // Position 0 (BERT's [CLS]) has outliers of its own: the variance is over the others.
  const variance = new Float64Array(t.dims);
  const from = t.positions > 2 ? 1 : 0;
  const n = t.positions - from;
  for (let d = 0; d < t.dims; d++) {
    let s = 0;
    let s2 = 0;
    for (let p = from; p < t.positions; p++) {
      const v = t.data[p * t.dims + d];
      s += v;
      s2 += v * v;
    }
    variance[d] = s2 / n - (s / n) ** 2;
  }
  return [...variance.keys()]
    .sort((a, b) => variance[b] - variance[a] || a - b)
    .slice(0, LINE_COUNT)
    .sort((a, b) => a - b);
}

/** How a computed table's pair i frequency reads, from the model's own wave (base^(−i/denominator)). */
function frequencyFormula(t) {
  const { base, denominator } = t.wave;
  const half = t.dims / 2;
  const b = base.toLocaleString('en', { useGrouping: false });
  if (denominator === half) return `${b}^(−i/(d/2)) = ${b}^(−2i/d)`;
  if (denominator === half - 1) return `${b}^(−i/(d/2−1))`;
  return `${b}^(−i/${denominator})`;
}

/** The one or two sentences the view says about the paper's formula. */
export function paperNote(t) {
  if (t.kind === 'sinusoidal') {
    const same = t.wave.denominator === t.dims / 2 && t.wave.base === 10000;
    return (
      'The translator adds a fixed sinusoid, the family of the paper’s PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). ' +
      `Marian lays it out differently: dims 0–${t.dims / 2 - 1} are the sines and dims ${t.dims / 2}–${t.dims - 1} the cosines of the same angles (the paper interleaves them), and dim i’s frequency is ${frequencyFormula(t)}${same ? ', the paper’s' : ' rather than the paper’s 10000^(−2i/d)'}.`
    );
  }
  if (t.kind === 'rotary') {
    const last = t.dims / 2 - 1;
    return (
      'This model adds no position vector, neither the paper’s fixed sinusoid PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(…) nor a learned table: ' +
      `rotary positions (RoPE, Su et al. 2021) rotate each pair of query and key dimensions by the angle p·θᵢ, θᵢ = ${frequencyFormula(t).replace(/\bd\b/g, 'd_k')}${t.wave.base === 10000 ? ', the paper’s frequencies' : ', the paper’s form with its own base'}, so q·k depends on how far apart two tokens are. ` +
      `Shown for one head (d_k = ${t.dims}): cos(p·θᵢ) in dims 0–${last} and sin(p·θᵢ) in dims ${last + 1}–${t.dims - 1}; the fastest pair turns every ${period(t, 0).toFixed(1)} positions, the slowest every ${Math.round(period(t, last)).toLocaleString('en')}.`
    );
  }
  return (
    'This model does not compute its positions: row p of its learned position table (BERT’s position_embeddings, GPT-2’s wpe), trained with the rest of the model, is added to the token at position p. ' +
    'The paper’s fixed sinusoid, PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(…), is not used.'
  );
}

const KIND_TITLE = { sinusoidal: 'sinusoidal, computed', learned: 'learned weights', rotary: 'rotary (RoPE) angles, computed' };
const kindTitle = (t) => KIND_TITLE[t.kind] || t.kind;

/** What dim d of a computed table is: 'sin' or 'cos' (Marian: sines first; rotary: cosines first). */
function waveOf(t, d) {
  const first = d < t.dims / 2;
  return t.kind === 'rotary' ? (first ? 'cos' : 'sin') : first ? 'sin' : 'cos';
}

function layout(ctx, input, width, height = Infinity) {
  const t = input.positions;
  ctx.font = font(12);
  const note = t ? wrapWords(ctx, paperNote(t), Math.max(200, width - 16)) : [];
  const top = 30 + note.length * 16 + 28;
  // The chart as tall as the box lets it be (state.boxHeight), within MIN_CHART_H … CHART_H.
  const chartH = Math.round(Math.max(MIN_CHART_H, Math.min(CHART_H, height - top - 40)));
  return { note, top, chartH, height: top + chartH + 40 };
}

export function size(ctx, input, state, width) {
  if (!input.positions) return { width, height: 80 };
  return { width, height: layout(ctx, input, width, fitHeight(state)).height };
}

const scaleMemo = new WeakMap(); // table → its colour scale's end

/** The colour scale's end: the 99th percentile of |value| (a learned table's few outliers,
 *  e.g. at position 0, would otherwise leave the rest white); values beyond are full colour. */
export function colorMax(t) {
  if (!scaleMemo.has(t)) {
    const a = Float32Array.from(t.data, Math.abs).sort();
    scaleMemo.set(t, a[Math.min(a.length - 1, Math.floor(0.99 * a.length))] || 1);
  }
  return scaleMemo.get(t);
}

const chartMemo = new WeakMap(); // table → Map(key → { canvas, geom })
const BAND_DIMS = 24; // heatmap rows per plotters call: ~10 ms each for a 128-position table

/**
 * The plotters drawing of a table at this width and theme, made in steps (slices.js): the frame
 * (axes, lines) first, then the heatmap's cells in bands of dims, each call its own unit of work.
 * Memoised: hovering only redraws the JS overlay.
 */
function* chartSteps(mod, t, width, chartH, theme, dims) {
  const scale = canvasScale();
  const colours = chartTheme(theme); // line i in series colour i: headColor(i), as the legend says
  const key = JSON.stringify([width, chartH, scale, colours]);
  let per = chartMemo.get(t);
  if (!per) chartMemo.set(t, (per = new Map()));
  if (!per.has(key)) {
    const canvas = document.createElement('canvas');
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(chartH * scale);
    const opts = { scale, line_dims: dims, heat_height: Math.round(chartH * HEAT_SHARE), color_max: colorMax(t), theme: colours };
    const geom = mod.drawPositionsChart(canvas, t.data, t.positions, t.dims, { ...opts, no_heat: true });
    for (let d = 0; d < t.dims; d += BAND_DIMS) {
      yield;
      mod.drawPositionsChart(canvas, t.data, t.positions, t.dims, { ...opts, heat_dims: [d, d + BAND_DIMS] });
    }
    per.clear(); // one size at a time per table
    per.set(key, { canvas, geom });
  }
  return per.get(key);
}

export function* draw(ctx, input, state, theme, width, height) {
  const t = input.positions;
  const charts = input.charts && typeof document !== 'undefined' ? input.charts : null;
  // The chart first (in steps), so the canvas is cleared only once it is made.
  const g = layout(ctx, input, width, fitHeight(state));
  const c = t && charts ? yield* chartSteps(charts, t, width, g.chartH, theme, lineDims(t)) : null;
  clear(ctx, width, height, theme);
  if (!t) {
    drawTitle(ctx, 'Positions', theme);
    textLines(ctx, ['Loading the model’s position table…'], 8, 30, theme);
    return { width, height };
  }
  const n = input.result ? input.result.tokens.source.length : 0;
  drawTitle(ctx, `Positions · ${kindTitle(t)} · ${t.positions} positions × ${t.dims} dims`, theme);
  textLines(ctx, g.note, 8, 30, theme, 12, width - 16);
  const dims = lineDims(t);
  if (!c) {
    textLines(ctx, ['Loading the charts…'], 8, g.top, theme);
    return { width, height, table: t };
  }
  ctx.drawImage(c.canvas, 0, g.top, width, g.chartH);
  const off = (r) => ({ x: r.x, y: r.y + g.top, w: r.w, h: r.h });
  const heat = off(c.geom.heat);
  const lines = off(c.geom.lines);
  const xOf = (r, p) => r.x + ((p + 0.5) / t.positions) * r.w;

  // The positions the typed text uses, under the heatmap's title line.
  if (n > 0) {
    const x0 = xOf(heat, -0.5);
    const x1 = xOf(heat, Math.min(n, t.positions) - 0.5);
    ctx.fillStyle = theme.accent;
    ctx.fillRect(x0, heat.y - 7, Math.max(2, x1 - x0), 4);
    ctx.font = font(11);
    ctx.textAlign = 'left';
    ctx.textBaseline = 'bottom';
    ctx.fillText(`your text: positions 0–${n - 1}${n > t.positions ? ` (${t.positions} shown)` : ''}`, x0, heat.y - 9);
  }
  // Colour scale and the lines' legend, under the chart.
  ctx.font = font(11);
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  let x = 8;
  const y = g.top + g.chartH + 14;
  ctx.fillStyle = theme.muted;
  const m = c.geom.max_abs.toFixed(3);
  const scaleText = `heatmap: blue ≤ −${m} · white 0 · red ≥ +${m}   lines:`;
  ctx.fillText(scaleText, x, y);
  x += ctx.measureText(scaleText).width + 10;
  dims.forEach((d, i) => {
    ctx.fillStyle = headColor(i);
    ctx.fillRect(x, y - 2, 14, 4);
    ctx.fillStyle = theme.fg;
    const label = t.kind === 'learned' ? `dim ${d}` : `dim ${d} (${waveOf(t, d)}, period ${period(t, d).toFixed(1)})`;
    ctx.fillText(label, x + 18, y);
    x += 24 + ctx.measureText(label).width;
  });

  // The hovered value: a rule at its position across both charts and a ring on its line point.
  const f = state.focus;
  if (f && Number.isInteger(f.position) && f.position < t.positions) {
    ctx.strokeStyle = theme.fg;
    ctx.lineWidth = 1;
    for (const r of [heat, lines]) {
      const px = xOf(r, f.position);
      ctx.beginPath();
      ctx.moveTo(px, r.y);
      ctx.lineTo(px, r.y + r.h);
      ctx.stroke();
    }
    const py = heat.y + heat.h - ((f.dim + 0.5) / t.dims) * heat.h;
    ctx.strokeRect(xOf(heat, f.position) - 3, py - 3, 6, 6);
  }
  return { width, height, heat, lines, lo: c.geom.lo, hi: c.geom.hi, positions: t.positions, dims: t.dims, lineDims: dims, table: t };
}

/** Period in positions of dim d of a computed table: 2π / its frequency, as the model computes it. */
function period(t, d) {
  return (2 * Math.PI) / t.wave.frequencies[d];
}

/** (x, y) in CSS px → { position, dim, panel } or null: a heatmap cell, or the nearest line. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.heat || !geom.table) return null;
  const inside = (r) => x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h;
  const posAt = (r) => Math.max(0, Math.min(geom.positions - 1, Math.floor(((x - r.x) / r.w) * geom.positions)));
  if (inside(geom.heat)) {
    const h = geom.heat;
    const dim = Math.max(0, Math.min(geom.dims - 1, Math.floor(((h.y + h.h - y) / h.h) * geom.dims)));
    return { panel: 'heat', position: posAt(h), dim };
  }
  if (inside(geom.lines) && geom.lineDims.length) {
    const r = geom.lines;
    const position = posAt(r);
    const yOf = (v) => r.y + ((geom.hi - v) / (geom.hi - geom.lo)) * r.h;
    let best = geom.lineDims[0];
    for (const d of geom.lineDims) {
      if (Math.abs(yOf(geom.table.data[position * geom.dims + d]) - y) < Math.abs(yOf(geom.table.data[position * geom.dims + best]) - y)) best = d;
    }
    return { panel: 'lines', position, dim: best };
  }
  return null;
}

/** The keyboard cursor's next heatmap cell: `]` / `[` the next dimension, `}` / `{` the next
 *  position (common.js gridStep); the line chart shows the same values. */
export function moveHit(geom, hit, key) {
  const at = geom && geom.heat ? gridStep(hit && 'position' in hit ? [hit.position, hit.dim] : null, geom.positions, geom.dims, key) : null;
  return at && { panel: 'heat', position: at[0], dim: at[1] };
}

/** "position 5 · dim 17 = 0.123457 (sin)": the value the model adds there, to 6 significant digits. */
export function hoverText(input, state, hit) {
  const t = input.positions;
  if (!t || !hit || !(hit.position < t.positions && hit.dim < t.dims)) return '';
  const v = t.data[hit.position * t.dims + hit.dim];
  const what = t.kind === 'learned' ? ' (learned)' : ` (${waveOf(t, hit.dim)}, period ${period(t, hit.dim).toFixed(1)} positions)`;
  return `position ${hit.position} · dim ${hit.dim} = ${v.toPrecision(6)}${what}`;
}

export function describe(input) {
  const t = input.positions;
  if (!t) return 'Positions view: loading the position table';
  if (t.kind === 'rotary') return `Positions view: the rotary angles this model applies to queries and keys, ${t.positions} positions × ${t.dims} dims, as a heatmap and as lines of ${lineDims(t).length} dims over position. ${paperNote(t)}`;
  return `Positions view: the ${t.kind} position vectors this model adds to its token embeddings, ${t.positions} positions × ${t.dims} dims, as a heatmap and as lines of ${lineDims(t).length} dims over position. ${paperNote(t)}`;
}
