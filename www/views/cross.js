// Cross-attention view for encoder-decoder models: the target tokens (decoder queries) on top,
// the source tokens (encoder keys) below. At decode step t, target token t is highlighted and the
// source tokens light up by how much that step attended to them; below, the whole
// target × source matrix with row t outlined.

import { crossState as cstate, prepareLayer, prepareLayerSteps } from '../core/analysis.js';
import { MEASURE_TAG, measureTag, clear, drawTitle, colorBar, drawMatrix, fitHeight, fitText, fmt, font, maxOf, maxTextWidth, rgb, textLines, viridis, wrapWords } from './common.js';

const CHIP_H = 26;
const GAP = 8;
const STACK_PITCH = CHIP_H + 4; // chip pitch in the stacked (narrow) layout, at most
const MIN_STACK_PITCH = 18; // … and at least, when the chips shrink to fit the box's height
const NUM_W = 34; // room for a weight printed right of a source chip (stacked layout)
const MIN_LINES_W = 56; // the least room left between the two columns for the lines
const MIN_CELL = 2; // the matrix's least cell (px), where 8 px cells would not fit the width
const MIN_FIT_CELL = 4; // the least it gets to fit the box's height
const LABEL_PX = 8; // the least pitch (and font px) of the matrix's labels: below it, a label every few cells


function chips(ctx, labels, maxW) {
  ctx.font = font(13);
  const out = [];
  let x = 0;
  for (const l of labels) {
    const text = fitText(ctx, l, maxW);
    const w = Math.ceil(ctx.measureText(text).width) + 14;
    out.push({ text, x, w });
    x += w + GAP;
  }
  return { chips: out, width: Math.max(0, x - GAP), maxW: out.reduce((m, c) => Math.max(m, c.w), 0) };
}

/** The title parts joined by " · ", on as many lines as it takes to fit `width` (phones: two). */
function titleLines(ctx, parts, width) {
  ctx.font = font(14, 600);
  const lines = [];
  let cur = '';
  for (const part of parts) {
    const next = cur ? `${cur} · ${part}` : part;
    if (cur && ctx.measureText(next).width > width - 16) {
      lines.push(cur);
      cur = part;
    } else cur = next;
  }
  lines.push(cur);
  return lines.map((t) => fitText(ctx, t, width - 16));
}

/**
 * Two layouts of the target and source tokens. "rows" (wide screens): target tokens in a row on
 * top, source tokens in a row below, lines between. "stacked" (when a row would not fit `width`,
 * e.g. on a phone): target tokens in a column on the left, source tokens in a column on the
 * right, lines across, so every token stays readable without scrolling sideways.
 */
function geometry(ctx, prep, width, title, height = Infinity) {
  const w0 = Math.max(width, 200);
  const titles = titleLines(ctx, title, w0);
  ctx.font = font(11);
  const noteLines = ['Queries come from the decoder (target), keys and values from the encoder (source).'].concat(prep.notes)
    .flatMap((l) => wrapWords(ctx, l, w0 - 16));
  const headerH = 26 + (titles.length - 1) * 18 + noteLines.length * 15 + 25;
  let top = chips(ctx, prep.rowLabels, 120);
  let bottom = chips(ctx, prep.colLabels, 120);
  const mode = Math.max(top.width, bottom.width) + 32 <= w0 ? 'rows' : 'stacked';
  let rowTop;
  let rowBottom;
  let blockBottom;
  let colX = 0;
  let pitch = STACK_PITCH;
  ctx.font = font(11);
  const colTextW = maxTextWidth(ctx, prep.colLabels);
  const colLabelH = Math.min(90, Math.ceil(colTextW * 0.72) + 14);
  if (mode === 'rows') {
    rowTop = headerH;
    rowBottom = headerH + CHIP_H + 84;
    blockBottom = rowBottom + CHIP_H + 40;
  } else {
    // Both columns share what is left after the lines' room and the weights' labels.
    const chipMax = Math.max(40, Math.min(120, Math.floor((w0 - 16 - NUM_W - MIN_LINES_W) / 2)));
    top = chips(ctx, prep.rowLabels, chipMax - 14);
    bottom = chips(ctx, prep.colLabels, chipMax - 14);
    rowTop = headerH;
    colX = w0 - 8 - NUM_W - bottom.maxW;
    rowBottom = rowTop; // both columns start at the same height
    // The chips as tall as leave room for the matrix at its smallest (8 px cells) in the box.
    const n = Math.max(prep.rows, prep.cols, 1);
    const room = height - rowTop - 24 - colLabelH - 8 * prep.rows - 16;
    pitch = Math.max(MIN_STACK_PITCH, Math.min(STACK_PITCH, Math.floor(room / n)));
    blockBottom = rowTop + n * pitch + 24;
  }
  ctx.font = font(11);
  const labelW = Math.min(120, Math.ceil(maxTextWidth(ctx, prep.rowLabels)) + 10);
  // Matrix: 8 px left margin, labels, cells, then the colour bar (14 + 12) and its labels (~38).
  const matTop = blockBottom + colLabelH;
  // The matrix's cells as large as the width and the box's height (state.boxHeight) allow: down
  // to MIN_FIT_CELL where that fits the view in the box (the translator's in 370 px at 1280×720),
  // else 8 px and the box scrolls down to them (a long text); narrower still where the width
  // holds no more: a wider canvas at 256 source tokens (2,186 px for a 1,160 px box) cost a
  // 40–60 ms allocation and a sideways scroll. Labels then stand every few cells.
  const widthCell = Math.floor((w0 - labelW - 8 - 64) / Math.max(1, prep.cols));
  const heightCell = Math.floor((height - matTop - 16) / Math.max(1, prep.rows));
  const cell = Math.max(MIN_CELL, Math.min(30, widthCell, heightCell >= MIN_FIT_CELL ? heightCell : 8));
  const every = cell >= LABEL_PX ? 1 : Math.ceil(LABEL_PX / cell);
  // The last column's label is drawn at 45° up and to the right of its cell.
  const right = Math.max(64, cell / 2 + Math.min(colTextW, colLabelH * 1.3) * 0.71 + 8);
  const w = Math.max(w0, mode === 'rows' ? Math.max(top.width, bottom.width) + 32 : 0, Math.ceil(8 + labelW + cell * prep.cols + right));
  return {
    mode, titles, noteLines, top, bottom, headerH, rowTop, rowBottom, colX, labelW, cell, every, colLabelH, matTop,
    pitch, chipH: mode === 'rows' ? CHIP_H : pitch - 4,
    width: w,
    height: matTop + cell * prep.rows + 16,
    offTop: Math.max(16, (w - top.width) / 2),
    offBottom: Math.max(16, (w - bottom.width) / 2),
    rows: prep.rows,
    cols: prep.cols,
  };
}

function titleParts(prep, state) {
  const what = state.agg === 'head' ? `head ${Math.min(state.head, prep.nHeads - 1) + 1}` : 'mean over heads';
  const t = Math.min(Math.max(0, state.step | 0), prep.rows - 1);
  return [`Cross-attention`, `layer ${prep.layer + 1}`, what, `decode step ${t + 1} of ${prep.rows}`, ...(state.measure === 'value-norm' ? [MEASURE_TAG] : [])];
}

/** The box of target chip i / source chip j: { x, y, w } (height g.chipH). */
function targetBox(g, i) {
  const c = g.top.chips[i];
  return g.mode === 'rows' ? { x: g.offTop + c.x, y: g.rowTop, w: c.w } : { x: 8, y: g.rowTop + i * g.pitch, w: g.top.maxW };
}
function sourceBox(g, j) {
  const c = g.bottom.chips[j];
  return g.mode === 'rows' ? { x: g.offBottom + c.x, y: g.rowBottom, w: c.w } : { x: g.colX, y: g.rowBottom + j * g.pitch, w: g.bottom.maxW };
}

/** The layer's matrices made ahead, in steps (slices.js). */
export function* prepare(input, state) {
  yield* prepareLayerSteps(input.result, cstate(state), input.specials);
}

export function size(ctx, input, state, width) {
  const prep = prepareLayer(input.result, cstate(state), input.specials);
  if (!prep) return { width, height: 80 };
  const g = geometry(ctx, prep, width, titleParts(prep, state), fitHeight(state));
  return { width: g.width, height: g.height };
}

/** Click on a target chip or a matrix row → { step }. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.top) return null;
  for (let i = 0; i < geom.top.chips.length; i++) {
    const b = targetBox(geom, i);
    if (x >= b.x && x <= b.x + b.w && y >= b.y && y <= b.y + geom.chipH) return { step: i };
  }
  const mx = 8 + geom.labelW;
  if (y >= geom.matTop && y < geom.matTop + geom.cell * geom.rows && x >= mx - geom.labelW && x < mx + geom.cell * geom.cols) {
    return { step: Math.floor((y - geom.matTop) / geom.cell) };
  }
  return null;
}

function matrixOf(input, state) {
  const prep = prepareLayer(input.result, cstate(state), input.specials);
  if (!prep) return null;
  const mat = state.agg === 'head' ? prep.heads[Math.min(state.head, prep.nHeads - 1)] : prep.mean;
  return { prep, mat };
}

/** Drawn in steps (slices.js): at 256 source tokens one pass over lines, chips, matrix and labels
 *  took ~50 ms of the main thread. */
export function* draw(ctx, input, state, theme, width) {
  const m = matrixOf(input, state);
  if (!m) {
    clear(ctx, width, 80, theme);
    textLines(ctx, ['This model has no cross-attention (it is not an encoder-decoder).'], 12, 12, theme);
    return { width, height: 80 };
  }
  const { prep, mat } = m;
  const g = geometry(ctx, prep, width, titleParts(prep, state), fitHeight(state));
  clear(ctx, g.width, g.height, theme);
  const t = Math.min(Math.max(0, state.step | 0), prep.rows - 1);
  const C = prep.cols;

  g.titles.forEach((line, i) => {
    ctx.save();
    ctx.translate(0, i * 18);
    drawTitle(ctx, line, theme);
    ctx.restore();
  });
  textLines(ctx, g.noteLines, 8, 26 + (g.titles.length - 1) * 18, theme, 11, g.width - 16);

  const row = mat.subarray(t * C, (t + 1) * C);
  const rowMax = maxOf(row) || 1;
  const stacked = g.mode === 'stacked';
  // Lines from the current target token to the source tokens
  const tb = targetBox(g, t);
  const sx = stacked ? tb.x + tb.w : tb.x + tb.w / 2;
  const sy = stacked ? tb.y + g.chipH / 2 : g.rowTop + g.chipH;
  ctx.strokeStyle = theme.accent;
  for (let j = 0; j < C; j++) {
    const w = row[j];
    if (w < Math.max(0.01, state.threshold || 0)) continue;
    const bb = sourceBox(g, j);
    ctx.globalAlpha = Math.min(1, 0.15 + 0.85 * w);
    ctx.lineWidth = 1 + 7 * w;
    ctx.beginPath();
    ctx.moveTo(sx, sy);
    if (stacked) ctx.lineTo(bb.x, bb.y + g.chipH / 2);
    else ctx.lineTo(bb.x + bb.w / 2, g.rowBottom);
    ctx.stroke();
  }
  ctx.globalAlpha = 1;
  yield;

  // Column / row captions
  ctx.fillStyle = theme.muted;
  ctx.font = font(11);
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillText(stacked ? 'target' : 'target (decoder)', 8, g.rowTop - 10);
  ctx.fillText(stacked ? 'source' : 'source (encoder)', stacked ? g.colX : 8, g.rowBottom - 10);
  ctx.textAlign = 'center';
  // Target chips
  g.top.chips.forEach((c, i) => {
    const b = targetBox(g, i);
    ctx.fillStyle = i === t ? theme.accent : theme.bg;
    ctx.strokeStyle = i === t ? theme.accent : theme.faint;
    ctx.lineWidth = 1;
    ctx.fillRect(b.x, b.y, b.w, g.chipH);
    ctx.strokeRect(b.x + 0.5, b.y + 0.5, b.w - 1, g.chipH - 1);
    ctx.font = font(Math.min(13, g.chipH - 3), i === t ? 600 : 400);
    ctx.fillStyle = i === t ? theme.bg : i > t ? theme.muted : theme.fg;
    ctx.fillText(c.text, b.x + b.w / 2, b.y + g.chipH / 2);
  });
  yield;
  // Source chips, background by weight, the weight below (rows) or beside (stacked)
  for (let j = 0; j < g.bottom.chips.length; j++) {
    const c = g.bottom.chips[j];
    const b = sourceBox(g, j);
    const v = row[j] / rowMax;
    ctx.fillStyle = rgb(viridis(v));
    ctx.fillRect(b.x, b.y, b.w, g.chipH);
    ctx.strokeStyle = theme.faint;
    ctx.strokeRect(b.x + 0.5, b.y + 0.5, b.w - 1, g.chipH - 1);
    ctx.font = font(Math.min(13, g.chipH - 3));
    ctx.textAlign = 'center';
    ctx.fillStyle = v > 0.6 ? '#111' : '#f4f4f4';
    ctx.fillText(c.text, b.x + b.w / 2, b.y + g.chipH / 2);
    ctx.font = font(10);
    ctx.fillStyle = theme.muted;
    if (stacked) {
      ctx.textAlign = 'left';
      ctx.fillText(row[j].toFixed(2), b.x + b.w + 4, b.y + g.chipH / 2);
    } else ctx.fillText(row[j].toFixed(2), b.x + b.w / 2, b.y + g.chipH + 9);
    if (j % 64 === 63) yield;
  }
  yield;

  // The whole matrix, current step outlined
  const mx = 8 + g.labelW;
  const hi = maxOf(mat) || 1;
  drawMatrix(ctx, mat, prep.rows, C, mx, g.matTop, g.cell * C, g.cell * prep.rows, (v) => viridis(v / hi));
  ctx.strokeStyle = theme.accent;
  ctx.lineWidth = 2;
  ctx.strokeRect(mx - 1, g.matTop + t * g.cell - 1, g.cell * C + 2, g.cell + 2);
  yield;
  ctx.font = font(Math.min(11, Math.max(LABEL_PX, g.cell)));
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  for (let i = 0; i < prep.rows; i += g.every) {
    ctx.fillStyle = i === t ? theme.fg : theme.muted;
    ctx.fillText(fitText(ctx, prep.rowLabels[i], g.labelW - 6), mx - 5, g.matTop + (i + 0.5) * g.cell);
  }
  yield;
  ctx.textAlign = 'left';
  ctx.fillStyle = theme.muted;
  for (let j = 0; j < C; j += g.every) {
    ctx.save();
    ctx.translate(mx + (j + 0.5) * g.cell, g.matTop - 5);
    ctx.rotate(-Math.PI / 4);
    ctx.fillText(fitText(ctx, prep.colLabels[j], g.colLabelH * 1.3), 0, 0);
    ctx.restore();
  }
  colorBar(ctx, mx + g.cell * C + 14, g.matTop, 12, Math.max(60, Math.min(200, g.cell * prep.rows)), 0, hi, (v) => viridis(v / hi), theme);
  return g;
}

/** Text for screen readers and the side panel: which source tokens step t attended to most, and
 *  which tokens the model weighed at that step (its top 5, as the result lists them). */
export function describe(input, state) {
  const m = matrixOf(input, state);
  if (!m) return 'Cross-attention: this model has none';
  const { prep, mat } = m;
  const t = Math.min(Math.max(0, state.step | 0), prep.rows - 1);
  const row = Array.from(mat.subarray(t * prep.cols, (t + 1) * prep.cols));
  const top = row
    .map((w, j) => [w, j])
    .sort((a, b) => b[0] - a[0])
    .slice(0, 3)
    .map(([w, j]) => `${prep.colLabels[j]} ${fmt(w)}`);
  const said = `Cross-attention${measureTag(state)}, layer ${prep.layer + 1}, decode step ${t + 1} of ${prep.rows} producing "${prep.rowLabels[t]}": most attended source tokens ${top.join(', ')}`;
  const candidates = input.result.decode_top && input.result.decode_top[prep.rowGroups[t][0]];
  return candidates ? `${said}. The model's candidates at this step: ${candidates.map((c) => `${c.token} ${fmt(c.p, 3)}`).join(', ')}` : said;
}

