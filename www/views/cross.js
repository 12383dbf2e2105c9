// Cross-attention view for encoder-decoder models: the target tokens (decoder queries) on top,
// the source tokens (encoder keys) below. At decode step t, target token t is highlighted and the
// source tokens light up by how much that step attended to them; below, the whole
// target × source matrix with row t outlined.

import { prepareLayer } from '../analysis.js';
import { clear, drawTitle, colorBar, drawMatrix, fitText, fmt, font, maxOf, maxTextWidth, rgb, textLines, viridis } from './common.js';

const CHIP_H = 26;
const GAP = 8;

function cstate(state) {
  return { ...state, kind: 'cross', agg: state.agg === 'rollout' ? 'mean' : state.agg };
}

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
  return { chips: out, width: Math.max(0, x - GAP) };
}

function geometry(ctx, prep, width) {
  const top = chips(ctx, prep.rowLabels, 120);
  const bottom = chips(ctx, prep.colLabels, 120);
  const inner = Math.max(top.width, bottom.width);
  const headerH = 66 + prep.notes.length * 15;
  const rowTop = headerH;
  const rowBottom = headerH + CHIP_H + 84;
  ctx.font = font(11);
  const labelW = Math.min(120, Math.ceil(maxTextWidth(ctx, prep.rowLabels)) + 10);
  const cell = Math.max(8, Math.min(30, Math.floor((Math.max(width, 200) - labelW - 90) / Math.max(1, prep.cols))));
  const colLabelH = Math.min(90, Math.ceil(maxTextWidth(ctx, prep.colLabels) * 0.72) + 14);
  const matTop = rowBottom + CHIP_H + 40 + colLabelH;
  const w = Math.max(width, inner + 32, labelW + cell * prep.cols + 100);
  return {
    top, bottom, inner, headerH, rowTop, rowBottom, labelW, cell, colLabelH, matTop,
    width: w,
    height: matTop + cell * prep.rows + 16,
    offTop: Math.max(16, (w - top.width) / 2),
    offBottom: Math.max(16, (w - bottom.width) / 2),
    rows: prep.rows,
    cols: prep.cols,
  };
}

export function size(ctx, input, state, width) {
  const prep = prepareLayer(input.result, cstate(state), input.specials);
  if (!prep) return { width, height: 80 };
  const g = geometry(ctx, prep, width);
  return { width: g.width, height: g.height };
}

/** Click on a target chip or a matrix row → { step }. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.top) return null;
  if (y >= geom.rowTop && y <= geom.rowTop + CHIP_H) {
    const i = geom.top.chips.findIndex((c) => x >= geom.offTop + c.x && x <= geom.offTop + c.x + c.w);
    if (i >= 0) return { step: i };
  }
  const mx = 8 + geom.labelW;
  if (y >= geom.matTop && y < geom.matTop + geom.cell * geom.rows && x >= mx - geom.labelW && x < mx + geom.cell * geom.cols) {
    return { step: Math.floor((y - geom.matTop) / geom.cell) };
  }
  return null;
}

export function matrixOf(input, state) {
  const prep = prepareLayer(input.result, cstate(state), input.specials);
  if (!prep) return null;
  const mat = state.agg === 'head' ? prep.heads[Math.min(state.head, prep.nHeads - 1)] : prep.mean;
  return { prep, mat };
}

export function draw(ctx, input, state, theme, width) {
  const m = matrixOf(input, state);
  if (!m) {
    clear(ctx, width, 80, theme);
    textLines(ctx, ['This model has no cross-attention (it is not an encoder-decoder).'], 12, 12, theme);
    return { width, height: 80 };
  }
  const { prep, mat } = m;
  const g = geometry(ctx, prep, width);
  clear(ctx, g.width, g.height, theme);
  const t = Math.min(Math.max(0, state.step | 0), prep.rows - 1);
  const C = prep.cols;
  const what = state.agg === 'head' ? `head ${Math.min(state.head, prep.nHeads - 1) + 1}` : 'mean over heads';

  drawTitle(ctx, `Cross-attention · layer ${prep.layer + 1} · ${what} · decode step ${t + 1} of ${prep.rows}`, theme);
  textLines(ctx, ['Queries come from the decoder (target), keys and values from the encoder (source).'].concat(prep.notes), 8, 26, theme, 11, g.width - 16);

  const row = mat.subarray(t * C, (t + 1) * C);
  const rowMax = maxOf(row) || 1;
  // Lines from the current target token to the source tokens
  const tc = g.top.chips[t];
  const sx = g.offTop + tc.x + tc.w / 2;
  const sy = g.rowTop + CHIP_H;
  ctx.strokeStyle = theme.accent;
  for (let j = 0; j < C; j++) {
    const w = row[j];
    if (w < Math.max(0.01, state.threshold || 0)) continue;
    const bc = g.bottom.chips[j];
    ctx.globalAlpha = Math.min(1, 0.15 + 0.85 * w);
    ctx.lineWidth = 1 + 7 * w;
    ctx.beginPath();
    ctx.moveTo(sx, sy);
    ctx.lineTo(g.offBottom + bc.x + bc.w / 2, g.rowBottom);
    ctx.stroke();
  }
  ctx.globalAlpha = 1;

  // Target chips
  ctx.font = font(13);
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'center';
  ctx.fillStyle = theme.muted;
  ctx.font = font(11);
  ctx.textAlign = 'left';
  ctx.fillText('target (decoder)', 8, g.rowTop - 10);
  ctx.fillText('source (encoder)', 8, g.rowBottom - 10);
  ctx.textAlign = 'center';
  g.top.chips.forEach((c, i) => {
    const x = g.offTop + c.x;
    ctx.fillStyle = i === t ? theme.accent : theme.bg;
    ctx.strokeStyle = i === t ? theme.accent : theme.faint;
    ctx.lineWidth = 1;
    ctx.fillRect(x, g.rowTop, c.w, CHIP_H);
    ctx.strokeRect(x + 0.5, g.rowTop + 0.5, c.w - 1, CHIP_H - 1);
    ctx.font = font(13, i === t ? 600 : 400);
    ctx.fillStyle = i === t ? theme.bg : i > t ? theme.muted : theme.fg;
    ctx.fillText(c.text, x + c.w / 2, g.rowTop + CHIP_H / 2);
  });
  // Source chips, background by weight
  g.bottom.chips.forEach((c, j) => {
    const x = g.offBottom + c.x;
    const v = row[j] / rowMax;
    ctx.fillStyle = rgb(viridis(v));
    ctx.fillRect(x, g.rowBottom, c.w, CHIP_H);
    ctx.strokeStyle = theme.faint;
    ctx.strokeRect(x + 0.5, g.rowBottom + 0.5, c.w - 1, CHIP_H - 1);
    ctx.font = font(13);
    ctx.fillStyle = v > 0.6 ? '#111' : '#f4f4f4';
    ctx.fillText(c.text, x + c.w / 2, g.rowBottom + CHIP_H / 2);
    ctx.font = font(10);
    ctx.fillStyle = theme.muted;
    ctx.fillText(row[j].toFixed(2), x + c.w / 2, g.rowBottom + CHIP_H + 9);
  });

  // The whole matrix, current step outlined
  const mx = 8 + g.labelW;
  const hi = maxOf(mat) || 1;
  drawMatrix(ctx, mat, prep.rows, C, mx, g.matTop, g.cell * C, g.cell * prep.rows, (v) => viridis(v / hi));
  ctx.strokeStyle = theme.accent;
  ctx.lineWidth = 2;
  ctx.strokeRect(mx - 1, g.matTop + t * g.cell - 1, g.cell * C + 2, g.cell + 2);
  ctx.font = font(Math.min(11, g.cell));
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  for (let i = 0; i < prep.rows; i++) {
    ctx.fillStyle = i === t ? theme.fg : theme.muted;
    ctx.fillText(fitText(ctx, prep.rowLabels[i], g.labelW - 6), mx - 5, g.matTop + (i + 0.5) * g.cell);
  }
  ctx.textAlign = 'left';
  ctx.fillStyle = theme.muted;
  for (let j = 0; j < C; j++) {
    ctx.save();
    ctx.translate(mx + (j + 0.5) * g.cell, g.matTop - 5);
    ctx.rotate(-Math.PI / 4);
    ctx.fillText(fitText(ctx, prep.colLabels[j], g.colLabelH * 1.3), 0, 0);
    ctx.restore();
  }
  colorBar(ctx, mx + g.cell * C + 14, g.matTop, 12, Math.max(60, Math.min(200, g.cell * prep.rows)), 0, hi, (v) => viridis(v / hi), theme);
  return g;
}

/** Text for screen readers and the side panel: which source tokens step t attended to most. */
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
  return `Cross-attention, layer ${prep.layer + 1}, decode step ${t + 1} of ${prep.rows} producing "${prep.rowLabels[t]}": most attended source tokens ${top.join(', ')}`;
}

/** The decode steps as the map shows them: target tokens, or words when sub-words are merged. */
export function stepLabels(input, state) {
  const prep = prepareLayer(input.result, cstate(state), input.specials);
  return prep ? prep.rowLabels : [];
}
