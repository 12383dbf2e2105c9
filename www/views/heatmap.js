// Heatmap view: one head (or the mean over heads, or rollout) as a query × key matrix with
// token labels and a colour bar. On a real canvas the wasm plotters-canvas renderer is used when
// the shell supplies it (input.plotters); the JS drawing below serves SVG export and fallback.

import { prepareLayer } from '../analysis.js';
import { clear, drawTitle, colorBar, drawMatrix, fitText, fmt, font, maxOf, maxTextWidth, textLines, viridis } from './common.js';
import { KIND_NAMES } from './head.js';

export function matrixFor(input, state) {
  const prep = prepareLayer(input.result, state, input.specials);
  if (!prep) return null;
  const agg = state.agg === 'head' ? null : state.agg;
  const mat = agg ? prep.mean : prep.heads[Math.min(state.head, prep.nHeads - 1)];
  const what = agg === 'rollout' ? 'rollout' : agg === 'mean' ? 'mean over heads' : `head ${Math.min(state.head, prep.nHeads - 1) + 1}`;
  return { prep, mat, title: `Layer ${prep.layer + 1} · ${what} · ${KIND_NAMES[prep.kind] || prep.kind}` };
}

function geometry(ctx, m, width) {
  const { prep } = m;
  ctx.font = font(12);
  const rowLabelW = Math.min(150, Math.ceil(maxTextWidth(ctx, prep.rowLabels)) + 10);
  const colLabelH = Math.min(120, Math.ceil(maxTextWidth(ctx, prep.colLabels) * 0.72) + 18);
  const barW = 70;
  const avail = width - rowLabelW - barW - 24;
  const cell = Math.max(6, Math.min(44, Math.floor(avail / Math.max(1, prep.cols))));
  const top = 30 + prep.notes.length * 15 + colLabelH;
  const left = 8 + rowLabelW;
  const w = left + cell * prep.cols + barW + 8;
  return { rowLabelW, colLabelH, cell, top, left, rows: prep.rows, cols: prep.cols, width: Math.max(width, w), height: top + cell * prep.rows + 16 };
}

export function size(ctx, input, state, width) {
  const m = matrixFor(input, state);
  if (!m) return { width, height: 80 };
  const g = geometry(ctx, m, width);
  if (input.plotters) return { width, height: Math.max(320, Math.min(900, g.height + 40)) };
  return { width: g.width, height: g.height };
}

export function hitTest(geom, x, y) {
  if (!geom || !geom.cell) return null;
  const j = Math.floor((x - geom.left) / geom.cell);
  const i = Math.floor((y - geom.top) / geom.cell);
  if (i < 0 || j < 0 || i >= geom.rows || j >= geom.cols) return null;
  return { row: i, col: j };
}

export function draw(ctx, input, state, theme, width, height) {
  const m = matrixFor(input, state);
  if (!m) {
    clear(ctx, width, 80, theme);
    textLines(ctx, ['No attention of this kind for this input.'], 12, 12, theme);
    return { width, height: 80 };
  }
  const { prep, mat } = m;
  if (input.plotters && !ctx.isSvg && ctx.canvas) {
    // plotters-canvas draws in device pixels of the whole canvas.
    const dpr = ctx.canvas.width / width;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, ctx.canvas.width, ctx.canvas.height);
    try {
      input.plotters(ctx.canvas, mat, prep.rows, prep.cols, prep.rowLabels, prep.colLabels, { title: m.title, dark: !!theme.dark, scale: dpr });
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      return { width, height, plotters: true };
    } catch (e) {
      console.warn('drawHeatmap failed, drawing the JS heatmap instead:', e);
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    }
  }
  const g = geometry(ctx, m, width);
  clear(ctx, g.width, g.height, theme);
  drawTitle(ctx, m.title, theme);
  textLines(ctx, prep.notes, 8, 28, theme, 11, g.width - 16);

  const hi = maxOf(mat) || 1;
  drawMatrix(ctx, mat, prep.rows, prep.cols, g.left, g.top, g.cell * prep.cols, g.cell * prep.rows, (v) => viridis(v / hi));

  // Values in cells when there is room
  if (g.cell >= 30) {
    ctx.font = font(10);
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (let i = 0; i < prep.rows; i++) {
      for (let j = 0; j < prep.cols; j++) {
        const v = mat[i * prep.cols + j];
        ctx.fillStyle = v / hi > 0.6 ? '#111' : '#eee';
        ctx.fillText(v.toFixed(2).replace(/^0/, ''), g.left + (j + 0.5) * g.cell, g.top + (i + 0.5) * g.cell);
      }
    }
  }
  // Row labels
  ctx.font = font(Math.min(12, Math.max(8, g.cell - 2)));
  ctx.fillStyle = theme.fg;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  const showEvery = g.cell >= 9 ? 1 : Math.ceil(9 / g.cell);
  for (let i = 0; i < prep.rows; i += showEvery) ctx.fillText(fitText(ctx, prep.rowLabels[i], g.rowLabelW - 6), g.left - 5, g.top + (i + 0.5) * g.cell);
  // Column labels, rotated
  ctx.textAlign = 'left';
  for (let j = 0; j < prep.cols; j += showEvery) {
    ctx.save();
    ctx.translate(g.left + (j + 0.5) * g.cell, g.top - 5);
    ctx.rotate(-Math.PI / 4);
    ctx.fillText(fitText(ctx, prep.colLabels[j], g.colLabelH * 1.3), 0, 0);
    ctx.restore();
  }
  ctx.font = font(11);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'bottom';
  ctx.fillText('keys →', g.left, g.top - g.colLabelH + 8);
  // Colour bar
  const bx = g.left + g.cell * prep.cols + 14;
  colorBar(ctx, bx, g.top, 14, Math.max(60, Math.min(260, g.cell * prep.rows)), 0, hi, (v) => viridis(v / hi), theme);
  ctx.strokeStyle = theme.faint;
  ctx.lineWidth = 1;
  ctx.strokeRect(g.left - 0.5, g.top - 0.5, g.cell * prep.cols + 1, g.cell * prep.rows + 1);
  return g;
}

export function cellText(input, state, hit) {
  const m = matrixFor(input, state);
  if (!m || !hit) return '';
  const v = m.mat[hit.row * m.prep.cols + hit.col];
  return `${m.prep.rowLabels[hit.row]} → ${m.prep.colLabels[hit.col]}: ${fmt(v, 3)}`;
}

export function describe(input, state) {
  const m = matrixFor(input, state);
  if (!m) return 'Heatmap: no data';
  return `Heatmap, ${m.title}: ${m.prep.rows} query rows × ${m.prep.cols} key columns`;
}

