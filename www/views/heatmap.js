// Heatmap view: one head (or the mean over heads, or rollout) as a query × key matrix with
// token labels, the weights printed in the cells when they fit, and a colour bar. The one
// renderer for the page, the widget, PNG and SVG export (the SVG builder speaks the same ctx
// API), so the palette and the layout are the same everywhere and hitTest() knows the cells.
//
// Layout (CSS px): title and notes on top; the key labels stand vertically above the matrix so
// that they are read without scrolling; query labels to the left; the colour bar to the right.
// state.focusCell = { row, col } (transient, the hovered cell; a { row, col } in state.focus is
// taken too) is outlined and its labels stressed. A pinned query (state.pin = { side: 'q', index },
// e.g. the query that chose a generated token) has its whole row outlined in the accent colour.

import { prepareLayer, prepareLayerSteps } from '../core/analysis.js';
import { rawCell, rawText } from '../core/measures.js';
import { blankMasked, clear, drawTitle, measureTag, colorBar, drawMatrix, fitHeight, fitText, fmt, font, gridStep, maxOf, maxTextWidth, textLines, viridis } from './common.js';
import { KIND_NAMES } from './head.js';

const BAR_W = 64; // colour bar + its tick labels
const MAX_CELL = 44;
// Long inputs fit the width (a 512-token map at 6 px was a 3,300 px square canvas that took
// 40 ms per frame to show); hovering a cell reads out its query, key and weight.
const MIN_CELL = 2;
const MAX_LABEL = 110; // longest label, px (longer ones are shortened with …)
// Zoom (state.hz = { z, row, col }: the factor and the first row and column shown): the wheel
// zooms around the pointer where the whole map's cells are smaller than ZOOMABLE_BELOW px, a
// notch (3 steps) doubling or halving; PageUp / PageDown move the zoomed rows.
const ZOOMABLE_BELOW = 14;
const ZOOM_STEP = 2 ** (1 / 3);
const NOTE_H = 15; // a note line under the title
const ZOOM_LEAST = 16; // the fewest rows or columns a zoom shows (so a short map is never zoomed)

/** The matrix the heatmap draws: { prep, mat, max, title } (the compare view reuses it). */
export function matrixFor(input, state) {
  const prep = prepareLayer(input.result, state, input.specials);
  if (!prep) return null;
  const agg = state.agg === 'head' ? null : state.agg;
  const head = Math.min(state.head, prep.nHeads - 1);
  const mat = agg ? prep.mean : prep.heads[head];
  const what = agg === 'rollout' ? 'rollout' : agg === 'mean' ? 'mean over heads' : `head ${head + 1}`;
  return { prep, mat, max: maxOf(mat) || 1, title: `Layer ${prep.layer + 1} · ${what} · ${KIND_NAMES[prep.kind] || prep.kind}${measureTag(state)}` };
}

/** How many of `n` rows (or columns) a zoom by `z` shows: zoomed() draws them, zoomBy places them. */
const zoomSpan = (n, z) => Math.min(n, Math.max(ZOOM_LEAST, Math.ceil(n / z)));

/**
 * The part of matrix m a zoom shows (state.hz; null or z ≤ 1: m itself): its rows and columns,
 * labels and mask, the same colour scale as the whole map, and `offset`, where it stands in the
 * whole ({ row, col, z, rows, cols }: hit tests and read-outs speak of the whole map's cells).
 */
export function zoomed(m, zoom) {
  if (!m || !zoom || !(zoom.z > 1)) return m;
  const { prep } = m;
  const nr = zoomSpan(prep.rows, zoom.z);
  const nc = zoomSpan(prep.cols, zoom.z);
  if (nr === prep.rows && nc === prep.cols) return m;
  const r0 = Math.min(Math.max(0, zoom.row | 0), prep.rows - nr);
  const c0 = Math.min(Math.max(0, zoom.col | 0), prep.cols - nc);
  const mat = new Float32Array(nr * nc);
  for (let i = 0; i < nr; i++) mat.set(m.mat.subarray((r0 + i) * prep.cols + c0, (r0 + i) * prep.cols + c0 + nc), i * nc);
  const span = (from, n, of) => `${from + 1}–${from + n} of ${of}`;
  const note = `Zoomed ${zoom.z < 10 ? zoom.z.toFixed(1) : Math.round(zoom.z)}×: queries ${span(r0, nr, prep.rows)}, keys ${span(c0, nc, prep.cols)} (exact cells; the wheel zooms, PgUp/PgDn move, + / − at the cursor).`;
  const sub = {
    ...prep,
    rows: nr,
    cols: nc,
    rowLabels: prep.rowLabels.slice(r0, r0 + nr),
    colLabels: prep.colLabels.slice(c0, c0 + nc),
    rowGroups: prep.rowGroups ? prep.rowGroups.slice(r0, r0 + nr) : prep.rowGroups,
    maskedFrom: prep.maskedFrom ? Array.from({ length: nr }, (_, i) => Math.min(nc, Math.max(0, prep.maskedFrom[r0 + i] - c0))) : null,
    notes: prep.notes.concat(note),
  };
  return { ...m, prep: sub, mat, offset: { row: r0, col: c0, z: zoom.z, rows: prep.rows, cols: prep.cols } };
}

/** The matrix the heatmap view draws in state s: matrixFor under its zoom. */
const shownMatrix = (input, s) => zoomed(matrixFor(input, s), s.hz);

/**
 * The heatmap's wheel (units: WHEEL steps, negative zooms in, at the pointer `at` in CSS px, or
 * null: the centre) or PageUp / PageDown (page: the rows shown, by units' sign) → a state patch
 * { hz }, or null: nothing to zoom or move (a map whose cells are large already, the limits).
 */
export function zoomBy(geom, units, page = false, at = null, asked = undefined) {
  if (!geom || !geom.cell) return null;
  const off = geom.offset || { row: 0, col: 0, z: 1, rows: geom.rows, cols: geom.cols };
  // The zoom asked for last (state.hz), which the drawing may not show yet: a quick second notch
  // zooms on from it, and the pointer's cell is read off the drawing on screen.
  const last = asked === undefined ? off : asked && asked.z > 1 ? asked : { row: 0, col: 0, z: 1 };
  if (page) {
    if (!(off.z > 1)) return null;
    const row = Math.min(Math.max(0, (last.row ?? off.row) + Math.sign(units) * Math.max(1, geom.rows - 1)), off.rows - geom.rows);
    return row === off.row && row === last.row ? null : { hz: { z: off.z, row, col: off.col } };
  }
  if (!(off.z > 1) && !(last.z > 1) && geom.cell >= ZOOMABLE_BELOW) return null;
  const z = Math.min(Math.max(1, Math.max(off.rows, off.cols) / ZOOM_LEAST), Math.max(1, last.z * ZOOM_STEP ** -units));
  if (Math.abs(z - last.z) < 1e-6) return null;
  if (z < 1.01) return { hz: null };
  // The cell under the pointer (or the centre) stays where it is: the zoomed cells' size and the
  // matrix's top predicted from the room this drawing's cells had, less the zoom's note line.
  const px = at ? at.x : geom.left + (geom.cell * geom.cols) / 2;
  const py = at ? at.y : geom.top + (geom.cell * geom.rows) / 2;
  const colUnder = off.col + Math.min(geom.cols, Math.max(0, (px - geom.left) / geom.cell));
  const rowUnder = off.row + Math.min(geom.rows, Math.max(0, (py - geom.top) / geom.cell));
  const nr = zoomSpan(off.rows, z);
  const nc = zoomSpan(off.cols, z);
  const noteH = off.z > 1 ? 0 : NOTE_H;
  const cell = Math.max(MIN_CELL, Math.min(MAX_CELL, Math.floor(geom.room.w / nc), Math.floor((geom.room.h - noteH) / nr)));
  const first = (under, at0, n, of) => Math.min(Math.max(0, Math.round(under - at0 / cell)), of - n);
  return { hz: { z: Math.round(z * 100) / 100, row: first(rowUnder, py - geom.top - noteH, nr, off.rows), col: first(colUnder, px - geom.left, nc, off.cols) } };
}

/** The one colour scale of the heatmap (screen, PNG and SVG): viridis over 0 … the map's max;
 *  a matrix may bring its own (m.color, the compare view's diverging difference map). */
const cellColor = (m) => m.color || ((v) => viridis(v / (m.max || 1)));

/** Black or white text, whichever reads on an [r, g, b] background. */
function inkOn(c) {
  const lum = (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]) / 255;
  return lum > 0.5 ? '#111111' : '#f4f4f4';
}

// Font size of the key labels for a cell pitch (px): as large as fits next to its neighbours.
const labelPx = (cell) => Math.max(9, Math.min(12, cell - 2));

/** The layout of matrix m in `width` × `height` CSS px (height: what it fits, state.boxHeight;
 *  Infinity = as tall as the width's cells make it), its labels at least minLabelPx (up to 12). */
function geometry(ctx, m, width, height = Infinity, minLabelPx = 0) {
  const { prep } = m;
  const avail = (rowLabelW) => width - 8 - rowLabelW - BAR_W - 8;
  const titleH = 28 + prep.notes.length * NOTE_H;
  // A causal map's legend of masked cells needs 116 px under the top.
  const availH = (colLabelH) => Math.max(prep.maskedFrom ? 116 : 0, height - titleH - colLabelH) - 16;
  // Cell pitch: the label widths depend on the font, which depends on the pitch; two passes.
  let cell = MAX_CELL;
  let rowLabelW = 0;
  let colLabelH = 0;
  for (let pass = 0; pass < 2; pass++) {
    const px = labelPx(cell);
    ctx.font = font(Math.min(12, Math.max(8, px)));
    rowLabelW = Math.min(MAX_LABEL, Math.ceil(maxTextWidth(ctx, prep.rowLabels)) + 10);
    ctx.font = font(11);
    rowLabelW = Math.max(rowLabelW, Math.ceil(ctx.measureText('queries ↓').width) + 10);
    ctx.font = font(px);
    colLabelH = Math.max(38, Math.min(MAX_LABEL, Math.ceil(maxTextWidth(ctx, prep.colLabels))) + 10);
    const fitsHeight = Math.floor(availH(colLabelH) / Math.max(1, prep.rows));
    cell = Math.max(MIN_CELL, minLabelPx + 2, Math.min(MAX_CELL, Math.floor(avail(rowLabelW) / Math.max(1, prep.cols)), fitsHeight));
  }
  const px = labelPx(cell);
  const top = titleH + colLabelH;
  // The room the cells had (zoomBy predicts a zoom's cells from it).
  const room = { w: avail(rowLabelW), h: availH(colLabelH) };
  const left = 8 + rowLabelW;
  const w = left + cell * prep.cols + BAR_W + 8;
  // A label every `every` cells when they would overlap (only above ~40 tokens in 600 px).
  const every = cell >= px + 1 ? 1 : Math.ceil((px + 1) / cell);
  return {
    rowLabelW,
    colLabelH,
    labelPx: px,
    room,
    every,
    cell,
    top,
    left,
    rows: prep.rows,
    cols: prep.cols,
    width: Math.max(width, w),
    // (a causal map's legend of masked cells stands under the colour bar)
    height: top + Math.max(cell * prep.rows + 16, prep.maskedFrom ? Math.max(60, Math.min(260, cell * prep.rows)) + 56 : 0),
  };
}

/** The layer's matrices made ahead, in steps (slices.js). */
export function* prepare(input, state) {
  yield* prepareLayerSteps(input.result, state, input.specials);
}

export function size(ctx, input, state, width) {
  return matrixSize(ctx, shownMatrix(input, state), width, fitHeight(state), state.minLabelPx);
}

/** The size of matrix m ({ prep, mat, max, title, lo?, color? }) drawn `width` px wide, fitted
 *  to `height`, its labels at least minLabelPx. */
export function matrixSize(ctx, m, width, height, minLabelPx = 0) {
  if (!m) return { width, height: 80 };
  const g = geometry(ctx, m, width, height, minLabelPx);
  return { width: g.width, height: g.height };
}

/** The cell under (x, y) in CSS px of the drawing → { row, col } of the whole map (a zoomed
 *  drawing's cells counted from the whole map's first), or null. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.cell) return null;
  const j = Math.floor((x - geom.left) / geom.cell);
  const i = Math.floor((y - geom.top) / geom.cell);
  if (i < 0 || j < 0 || i >= geom.rows || j >= geom.cols) return null;
  const off = geom.offset || { row: 0, col: 0 };
  return { row: off.row + i, col: off.col + j };
}

/** The keyboard cursor's next cell among those drawn (common.js gridStep). */
export function moveHit(geom, hit, key) {
  const off = (geom && geom.offset) || { row: 0, col: 0 };
  const from = hit && 'row' in hit ? [Math.max(0, hit.row - off.row), Math.max(0, hit.col - off.col)] : null;
  const at = geom && geom.cell ? gridStep(from, geom.rows, geom.cols, key) : null;
  return at && { row: off.row + at[0], col: off.col + at[1] };
}

/** Where cell (row, col) is drawn: { x, y, w, h } in CSS px. */
export function cellRect(geom, row, col) {
  return { x: geom.left + col * geom.cell, y: geom.top + row * geom.cell, w: geom.cell, h: geom.cell };
}

/** Does a weight printed as text fit in a cell? → the font size to print it with, or 0. */
function valuePx(ctx, cell, signed) {
  const px = Math.min(11, Math.floor(cell * 0.45));
  if (px < 8) return 0;
  ctx.font = font(px);
  return ctx.measureText(signed ? '−.00' : '.00').width + 4 <= cell ? px : 0;
}

// ".42", "1.00", and for a signed map (differences) "−.42" / "+.42" / "0" (under .005 either way).
const cellValue = (v, signed) => {
  if (signed && Math.abs(v) < 0.005) return '0';
  const s = Math.abs(v) >= 0.995 ? Math.abs(v).toFixed(2) : Math.abs(v).toFixed(2).replace(/^0/, '');
  return signed ? `${v < 0 ? '−' : '+'}${s}` : s;
};

export function* draw(ctx, input, state, theme, width) {
  const m = shownMatrix(input, state);
  if (!m) {
    clear(ctx, width, 80, theme);
    textLines(ctx, ['No attention of this kind for this input.'], 12, 12, theme);
    return { width, height: 80 };
  }
  return yield* drawMatrixView(ctx, m, state, theme, width);
}

/**
 * Draw matrix m = { prep (rows, cols, rowLabels, colLabels, rowGroups, notes), mat, max, title,
 * lo (the colour bar's low end, default 0), color (v → [r, g, b], default viridis over 0 … max) }
 * as the heatmap does; a signed map (lo < 0) prints its values with their sign.
 */
export function* drawMatrixView(ctx, m, state, theme, width) {
  const { prep, mat, max } = m;
  const lo = m.lo || 0;
  const colorOf = cellColor(m);
  const g = geometry(ctx, m, width, fitHeight(state), state.minLabelPx);
  g.offset = m.offset || null;
  const { cell, left, top } = g;
  // The focused cell, in the cells drawn (a zoom's are offset in the whole map).
  const off = m.offset || { row: 0, col: 0 };
  const whole = state.focusCell || (state.focus && 'row' in state.focus ? state.focus : null);
  const fc = whole && { row: whole.row - off.row, col: whole.col - off.col };
  const focus = fc && fc.row >= 0 && fc.col >= 0 && fc.row < prep.rows && fc.col < prep.cols ? fc : null;
  // The pinned query's row, in the rows as shown (filters may hide or merge tokens).
  const pinned = state.pin && state.pin.side === 'q' && prep.rowGroups ? prep.rowGroups.findIndex((grp) => grp.includes(state.pin.index)) : -1;
  g.pinnedRow = pinned;
  clear(ctx, g.width, g.height, theme);
  drawTitle(ctx, m.title, theme);
  textLines(ctx, prep.notes, 8, 28, theme, 11, g.width - 16);

  drawMatrix(ctx, mat, prep.rows, prep.cols, left, top, cell * prep.cols, cell * prep.rows, colorOf);
  // Masked cells (a causal model's future keys) are blank: the mask took them out of the softmax.
  const masked = prep.maskedFrom;
  blankMasked(ctx, masked, prep.rows, prep.cols, left, top, cell * prep.cols, cell * prep.rows, theme);
  yield;

  // The weights, in the cells, when they fit.
  const vpx = valuePx(ctx, cell, lo < 0);
  g.values = vpx > 0;
  if (vpx) {
    ctx.font = font(vpx);
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (let i = 0; i < prep.rows; i++) {
      for (let j = 0; j < (masked ? masked[i] : prep.cols); j++) {
        const v = mat[i * prep.cols + j];
        ctx.fillStyle = inkOn(colorOf(v));
        ctx.fillText(cellValue(v, lo < 0), left + (j + 0.5) * cell, top + (i + 0.5) * cell);
      }
    }
  }

  // Query labels, right-aligned left of their rows.
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  const rowPx = Math.min(12, Math.max(8, g.labelPx));
  for (let i = 0; i < prep.rows; i += g.every) {
    if (i % 128 === 127) yield; // 512 labels a side take several slices
    const on = (focus && focus.row === i) || i === pinned;
    ctx.font = font(rowPx, on ? 700 : 400);
    ctx.fillStyle = focus && !on ? theme.muted : theme.fg;
    ctx.fillText(fitText(ctx, prep.rowLabels[i], g.rowLabelW - 8), left - 5, top + (i + 0.5) * cell);
  }
  // Key labels, vertical (reading upwards) above their columns.
  ctx.textAlign = 'left';
  for (let j = 0; j < prep.cols; j += g.every) {
    if (j % 128 === 127) yield;
    const on = focus && focus.col === j;
    ctx.font = font(g.labelPx, on ? 700 : 400);
    ctx.fillStyle = focus && !on ? theme.muted : theme.fg;
    ctx.save();
    ctx.translate(left + (j + 0.5) * cell, top - 5);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(fitText(ctx, prep.colLabels[j], g.colLabelH - 10), 0, 0);
    ctx.restore();
  }
  // Axis names in the free corner left of the key labels.
  ctx.font = font(11);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'bottom';
  ctx.fillText('keys →', left - 5, top - 22);
  ctx.fillText('queries ↓', left - 5, top - 5);

  ctx.strokeStyle = theme.faint;
  ctx.lineWidth = 1;
  ctx.strokeRect(left - 0.5, top - 0.5, cell * prep.cols + 1, cell * prep.rows + 1);
  if (pinned >= 0) {
    ctx.lineWidth = 2;
    ctx.strokeStyle = theme.accent;
    ctx.strokeRect(left - 1, top + pinned * cell - 1, cell * prep.cols + 2, cell + 2);
  }
  if (focus) {
    const r = cellRect(g, focus.row, focus.col);
    ctx.lineWidth = 2;
    ctx.strokeStyle = theme.bg;
    ctx.strokeRect(r.x - 1, r.y - 1, r.w + 2, r.h + 2);
    ctx.strokeStyle = theme.fg;
    ctx.strokeRect(r.x - 3, r.y - 3, r.w + 6, r.h + 6);
  }
  // Colour bar: the same scale as the cells.
  const bx = left + cell * prep.cols + 12;
  const barH = Math.max(60, Math.min(260, cell * prep.rows));
  colorBar(ctx, bx, top, 12, barH, lo, max, colorOf, theme, lo < 0 ? '0' : undefined);
  if (masked) {
    // The legend of the blank cells, under the colour bar.
    ctx.fillStyle = theme.bg;
    ctx.strokeStyle = theme.muted;
    ctx.lineWidth = 1;
    ctx.fillRect(bx, top + barH + 12, 12, 12);
    ctx.strokeRect(bx + 0.5, top + barH + 12.5, 11, 11);
    ctx.font = font(10);
    ctx.fillStyle = theme.muted;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'top';
    ctx.fillText('masked', bx, top + barH + 28);
    ctx.fillText('(future)', bx, top + barH + 40);
  }
  return g;
}

/** Side-panel text for a hovered cell: query token, key token and the weight. */
export function hoverText(input, state, hit) {
  const m = matrixFor(input, state);
  if (!m || !hit || hit.row >= m.prep.rows || hit.col >= m.prep.cols) return '';
  const v = m.mat[hit.row * m.prep.cols + hit.col];
  if (m.prep.maskedFrom && hit.col >= m.prep.maskedFrom[hit.row]) return `query “${m.prep.rowLabels[hit.row]}” (${hit.row + 1}) → key “${m.prep.colLabels[hit.col]}” (${hit.col + 1}): masked (a later position: −∞ before the softmax, so no weight)`;
  const raw = rawText(rawCell(input, state, hit.row, hit.col));
  return `query “${m.prep.rowLabels[hit.row]}” (${hit.row + 1}) → key “${m.prep.colLabels[hit.col]}” (${hit.col + 1}): ${fmt(v, 3)}${raw ? ` (share of the row; ${raw})` : ''}`;
}

export function describe(input, state) {
  const m = shownMatrix(input, state);
  if (!m) return 'Heatmap: no data';
  const o = m.offset;
  const part = o ? `, zoomed to queries ${o.row + 1}–${o.row + m.prep.rows} and keys ${o.col + 1}–${o.col + m.prep.cols} of ${o.rows} × ${o.cols}` : '';
  return `Heatmap, ${m.title}: ${m.prep.rows} query rows × ${m.prep.cols} key columns${part}. Hover a cell for its weight.`;
}
