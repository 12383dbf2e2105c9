// Head view: the bipartite graph. Query tokens on the left, key tokens on the right, one colour
// per head, line opacity = attention weight ÷ the largest weight drawn (the scale is written in
// the drawing), so that one diffuse head (max 0.13, say) reads as well as a sharp one. With
// several heads drawn, each query–key pair gets one line, in the colour of the head that weights
// it most (a legend says which colour is which head): twelve translucent lines on one path
// blended into one grey-brown. Lines are batched by colour and opacity level so that 128 tokens
// × 12 heads stay within one frame.

import { prepareLayer, prepareLayerSteps } from '../core/analysis.js';
import { rawCell, rawText } from '../core/measures.js';
import { clear, measureTag, fitHeight, fitText, fmt, font, headColor, maxTextWidth, textLines, wrapWords } from './common.js';

const LEVELS = 24; // opacity buckets
const LINE_BUDGET = 1000; // lines drawn at most while no token is hovered (see budgetLevel)
const MIN_OPACITY = 1 / LEVELS; // lines under the first opacity step (weight ÷ scale) are left out
const CAPTION_H = 14; // one 11 px caption line
const MIN_ROW_H = 12; // the least a token's row gets to fit the box (its label at 10 px)
const SWATCH_W = 34; // one head's legend entry: its colour and its number
const LEGEND_TEXT = 'line colour = the head that weights it most:';

/** The opacity scale of a drawing: the largest weight among the lines it may draw. */
function* opacityScale(mats, cols, rows, focus, threshold = 0) {
  let mx = 0;
  const iFrom = focus && focus.side === 'q' ? focus.index : 0;
  const iTo = focus && focus.side === 'q' ? Math.min(rows, focus.index + 1) : rows;
  const jFrom = focus && focus.side === 'k' ? focus.index : 0;
  const jTo = focus && focus.side === 'k' ? Math.min(cols, focus.index + 1) : cols;
  for (const m of mats) {
    for (let i = iFrom; i < iTo; i++) {
      const row = i * cols;
      for (let j = jFrom; j < jTo; j++) {
        const w = m[row + j];
        if (w > mx && w >= threshold) mx = w;
      }
    }
    yield; // a head per step: 12 heads × 512² weights
  }
  return mx;
}

/** "weight ÷ 0.13 (largest drawn)": how line opacity relates to weight in this drawing. */
function scaleText(scale) {
  if (!(scale > 0)) return '';
  if (scale >= 0.995) return 'line opacity = weight';
  return `line opacity = weight ÷ ${scale < 0.1 ? scale.toFixed(3) : scale.toFixed(2)} (largest drawn)`;
}

export const KIND_NAMES = {
  encoder_self: 'encoder self-attention',
  decoder_self: 'decoder self-attention (masked)',
  cross: 'cross-attention (target ← source)',
};

function activeHeads(state, nHeads) {
  const hs = state.heads && state.heads.length ? state.heads.filter((h) => h < nHeads) : [...Array(nHeads).keys()];
  return hs.length ? hs : [...Array(nHeads).keys()];
}

function titleText(prep, state) {
  const agg = state.agg === 'mean' ? ' · mean over heads' : state.agg === 'rollout' ? ' · rollout' : '';
  return `Layer ${prep.layer + 1} · ${KIND_NAMES[prep.kind] || prep.kind}${agg}${measureTag(state)}`;
}

/** The heads drawn one colour each, when there are several (else null: one head, or an aggregate). */
function legendHeads(prep, state) {
  if (state.agg === 'mean' || state.agg === 'rollout') return null;
  const hs = activeHeads(state, prep.nHeads);
  return hs.length > 1 ? hs : null;
}

/**
 * The header, top down: the title (wrapped), the opacity scale, the note on lines left out, the
 * colour legend when several heads are drawn, the filter notes, the column names. Every line
 * spans the drawing's width, so none is cut to the gap between the token columns.
 */
function headerLayout(ctx, prep, state, width) {
  const textW = width - 16;
  ctx.font = font(14, 600);
  const title = wrapWords(ctx, titleText(prep, state), textW);
  let y = 6 + title.length * 18 + 2;
  const scaleY = y;
  y += CAPTION_H;
  const leftOutY = y;
  y += CAPTION_H;
  let legend = null;
  const hs = legendHeads(prep, state);
  if (hs) {
    ctx.font = font(11);
    const textY = y;
    let x = 8 + Math.ceil(ctx.measureText(LEGEND_TEXT).width) + 8;
    const swatches = hs.map((h) => {
      if (x + SWATCH_W > width - 8) [x, y] = [8, y + CAPTION_H];
      const at = { h, x, y };
      x += SWATCH_W;
      return at;
    });
    legend = { textY, swatches };
    y += CAPTION_H;
  }
  const notesY = y + 2;
  y = notesY + prep.notes.length * 16;
  const columnsY = y;
  return { title, scaleY, leftOutY, legend, notesY, columnsY, headerH: columnsY + 16 };
}

/** The font size of the token labels in rows `rowH` px tall. */
const labelPxOf = (rowH) => (rowH > 16 ? 13 : rowH > 13 ? 11 : 10);

function geometry(ctx, prep, state, width) {
  const n = Math.max(prep.rows, prep.cols);
  // The least row: MIN_ROW_H, or as tall as labels of state.minLabelPx need (a comparison's).
  let least = MIN_ROW_H;
  while (labelPxOf(least) < (state.minLabelPx || 0) && least < 20) least++;
  let rowH = Math.max(least, prep.rows > 64 || prep.cols > 64 ? 15 : 20);
  let px;
  let labelW;
  let gap;
  let total;
  let header;
  // Rows as tall as fit the box (state.boxHeight), down to MIN_ROW_H; the font follows the row,
  // the label column the font, and the header's lines the width: two passes.
  for (let pass = 0; pass < 2; pass++) {
    px = labelPxOf(rowH);
    ctx.font = font(px);
    labelW = Math.min(170, Math.max(40, Math.ceil(maxTextWidth(ctx, prep.rowLabels.concat(prep.colLabels))) + 8));
    // A fixed point: draw() is handed the width size() returned (total + 16) and must lay out the same.
    gap = Math.max(120, Math.min(380, width - 2 * labelW - 16));
    total = 2 * labelW + gap;
    header = headerLayout(ctx, prep, state, total + 16);
    rowH = Math.max(least, Math.min(rowH, Math.floor((fitHeight(state) - header.headerH - 16) / Math.max(1, n))));
  }
  // The canvas is only as wide as the drawing (CSS centres it): at 512 tokens it is ~7,750 px
  // tall, and every frame that changes it copies all of its pixels to the compositor (a
  // 1,280 px wide one took 44–53 ms per copy in software rendering, over the 50 ms long-task line).
  const x0 = 8;
  return {
    rowH,
    px,
    labelW,
    header,
    headerH: header.headerH,
    leftX: x0 + labelW, // right edge of the query labels
    rightX: x0 + labelW + gap, // left edge of the key labels
    width: total + 16,
    height: header.headerH + n * rowH + 16,
  };
}

/** The layer's matrices made ahead, in steps (slices.js). */
export function* prepare(input, state) {
  yield* prepareLayerSteps(input.result, state, input.specials);
}

export function size(ctx, input, state, width) {
  const prep = prepareLayer(input.result, state, input.specials);
  if (!prep) return { width, height: 80 };
  const g = geometry(ctx, prep, state, width);
  return { width: g.width, height: g.height };
}

/** Which token is at (x, y)? → { side: 'q'|'k', index } or null. */
export function hitTest(geom, x, y) {
  if (!geom || y < geom.headerH) return null;
  const i = Math.floor((y - geom.headerH - 4) / geom.rowH);
  if (x >= geom.leftX - geom.labelW - 4 && x <= geom.leftX + 6 && i >= 0 && i < geom.rows) return { side: 'q', index: i };
  if (x >= geom.rightX - 6 && x <= geom.rightX + geom.labelW + 4 && i >= 0 && i < geom.cols) return { side: 'k', index: i };
  return null;
}

/** The matrices behind the drawing: per active head, or one aggregate. → [{ mat, color }] */
function layers(prep, state) {
  if (state.agg === 'mean' || state.agg === 'rollout') return [{ mat: prep.mean, color: null, h: -1 }];
  return activeHeads(state, prep.nHeads).map((h) => ({ mat: prep.heads[h], color: headColor(h), h }));
}

/**
 * What is drawn, one line per query–key pair: the weight of the head that weights the pair
 * most (`mat`) and which of `ls` that is (`strongest`, null with one layer). A step per head.
 */
function* strongestLines(ls) {
  if (ls.length === 1) return { mat: ls[0].mat, strongest: null };
  const n = ls[0].mat.length;
  const mat = new Float32Array(n);
  const strongest = new Uint8Array(n);
  for (let k = 0; k < ls.length; k++) {
    const m = ls[k].mat;
    for (let c = 0; c < n; c++) {
      if (m[c] > mat[c]) {
        mat[c] = m[c];
        strongest[c] = k;
      }
    }
    yield;
  }
  return { mat, strongest };
}

/** What the top weights combine: { short } for a title, { long } for a hint ('' for one head). */
export function combined(input, state) {
  const prep = prepareLayer(input.result, state, input.specials);
  if (!prep) return { short: '', long: '' };
  if (state.agg === 'mean') return { short: 'mean over heads', long: `The weights are the mean over the layer's ${prep.nHeads} heads.` };
  if (state.agg === 'rollout') return { short: 'rollout', long: 'The weights are the attention rollout up to this layer (all heads, residual included).' };
  const hs = legendHeads(prep, state);
  if (!hs) return { short: '', long: '' };
  const list = hs.length === prep.nHeads ? `all ${hs.length} heads` : `heads ${hs.map((h) => h + 1).join(', ')}`;
  return { short: `mean of ${list}`, long: `The weights are the mean of ${list}; each line shows its strongest head.` };
}

/** Top weights of a token (mean over the drawn heads: the side panel says so). → [{ label, weight }] */
export function topWeights(input, state, focus, k = 8) {
  const prep = prepareLayer(input.result, state, input.specials);
  if (!prep || !focus) return [];
  const ls = layers(prep, state);
  const C = prep.cols;
  const out = [];
  if (focus.side === 'q') {
    if (focus.index >= prep.rows) return [];
    for (let j = 0; j < C; j++) {
      let s = 0;
      for (const l of ls) s += l.mat[focus.index * C + j];
      out.push({ label: prep.colLabels[j], weight: s / ls.length, index: j });
    }
  } else {
    if (focus.index >= prep.cols) return [];
    for (let i = 0; i < prep.rows; i++) {
      let s = 0;
      for (const l of ls) s += l.mat[i * C + focus.index];
      out.push({ label: prep.rowLabels[i], weight: s / ls.length, index: i });
    }
  }
  out.sort((a, b) => b.weight - a.weight);
  const top = out.slice(0, k);
  if (input.result.measure === 'value-norm') {
    const heads = state.agg === 'head' ? activeHeads(state, prep.nHeads) : null;
    for (const it of top) it.extra = rawText(focus.side === 'q' ? rawCell(input, state, focus.index, it.index, heads) : rawCell(input, state, it.index, focus.index, heads));
  }
  return top;
}

/**
 * The lowest opacity level drawn when no token is hovered: at most LINE_BUDGET lines, the
 * faintest levels left out first (the strongest level is always kept). Thousands of overlapping
 * lines read no better than the strongest few thousand, and rasterising them blocked the main
 * thread for 50–100 ms per keystroke in software rendering.
 */
function* budgetLevel(ls, threshold, toLevel) {
  const perLevel = new Uint32Array(LEVELS);
  for (const l of ls) {
    const m = l.mat;
    for (let k = 0; k < m.length; k++) {
      const w = m[k];
      if (w >= threshold) perLevel[Math.min(LEVELS - 1, Math.floor(w * toLevel))]++;
    }
    yield;
  }
  let total = 0;
  for (let lvl = LEVELS - 1; lvl >= 0; lvl--) {
    total += perLevel[lvl];
    if (total > LINE_BUDGET) return total === perLevel[lvl] ? lvl : lvl + 1;
  }
  return 0;
}

/**
 * Draw the head view. input: { result, specials }, state: view state (+ transient `focus`),
 * returns the geometry for hitTest.
 */
export function* draw(ctx, input, state, theme, width) {
  const prep = prepareLayer(input.result, state, input.specials);
  const g0 = { width, height: 80 };
  if (!prep) {
    clear(ctx, width, 80, theme);
    textLines(ctx, ['No attention of this kind for this input.'], 12, 12, theme);
    return g0;
  }
  const g = geometry(ctx, prep, state, width);
  g.rows = prep.rows;
  g.cols = prep.cols;
  clear(ctx, g.width, g.height, theme);

  // Header
  const hd = g.header;
  ctx.fillStyle = theme.fg;
  ctx.font = font(14, 600);
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  hd.title.forEach((line, k) => ctx.fillText(line, 8, 6 + k * 18));
  textLines(ctx, prep.notes, 8, hd.notesY, theme, 11, g.width - 16);
  ctx.font = font(11);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'right';
  ctx.fillText('queries', g.leftX, hd.columnsY);
  ctx.textAlign = 'left';
  ctx.fillText('keys', g.rightX, hd.columnsY);
  if (hd.legend) {
    ctx.fillText(LEGEND_TEXT, 8, hd.legend.textY);
    for (const { h, x, y: sy } of hd.legend.swatches) {
      ctx.fillStyle = headColor(h);
      ctx.fillRect(x, sy + 2, 12, 8);
      ctx.fillStyle = theme.muted;
      ctx.fillText(String(h + 1), x + 15, sy);
    }
  }

  const y = (i) => g.headerH + 4 + i * g.rowH + g.rowH / 2;
  const focus = state.focus || null;
  const ls = layers(prep, state);
  const C = prep.cols;
  const drawn = yield* strongestLines(ls);
  // Opacity = weight ÷ scale, the largest weight among the lines this drawing may show.
  const scale = yield* opacityScale([drawn.mat], C, prep.rows, focus, state.threshold || 0);
  const threshold = Math.max(MIN_OPACITY * scale, state.threshold || 0, 1e-9);
  const toLevel = scale > 0 ? LEVELS / scale : 0;
  g.alphaScale = scale;
  const minLevel = focus ? 0 : yield* budgetLevel([drawn], threshold, toLevel);
  g.linesFrom = minLevel ? minLevel / toLevel : 0;
  ctx.font = font(11);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText(fitText(ctx, scaleText(scale), g.width - 16), 8, hd.scaleY);
  if (minLevel) {
    const hidden = `fainter lines (weight < ${fmt(g.linesFrom, 3)}) left out; hover a token for all of its lines`;
    ctx.fillText(fitText(ctx, hidden, g.width - 16), 8, hd.leftOutY);
  }

  // Lines, batched per (colour, opacity level)
  ctx.lineWidth = g.rowH > 16 ? 2 : 1;
  ctx.lineCap = 'butt';
  const x1 = g.leftX + 4;
  const x2 = g.rightX - 4;
  const buckets = ls.map(() => Array.from({ length: LEVELS }, () => []));
  const iFrom = focus && focus.side === 'q' ? focus.index : 0;
  const iTo = focus && focus.side === 'q' ? Math.min(prep.rows, focus.index + 1) : prep.rows;
  const jFrom = focus && focus.side === 'k' ? focus.index : 0;
  const jTo = focus && focus.side === 'k' ? Math.min(C, focus.index + 1) : C;
  for (let i = iFrom; i < iTo; i++) {
    const row = i * C;
    for (let j = jFrom; j < jTo; j++) {
      const w = drawn.mat[row + j];
      if (!(w >= threshold)) continue;
      const lvl = Math.min(LEVELS - 1, Math.floor(w * toLevel));
      buckets[drawn.strongest ? drawn.strongest[row + j] : 0][lvl].push(i, j);
    }
  }
  yield;
  for (let k = 0; k < ls.length; k++) {
    ctx.strokeStyle = ls[k].color || theme.accent;
    for (let lvl = minLevel; lvl < LEVELS; lvl++) {
      const seg = buckets[k][lvl];
      if (!seg.length) continue;
      ctx.globalAlpha = (lvl + 1) / LEVELS;
      // One path per line: a single path of crossing wide lines rasterises 4–5× slower.
      for (let s = 0; s < seg.length; s += 2) {
        ctx.beginPath();
        ctx.moveTo(x1, y(seg[s]));
        ctx.lineTo(x2, y(seg[s + 1]));
        ctx.stroke();
      }
    }
    yield;
  }
  ctx.globalAlpha = 1;

  // Labels (text only; token strings are never parsed as markup)
  ctx.font = font(g.px);
  ctx.textBaseline = 'middle';
  function* drawLabels(labels, side) {
    for (let i = 0; i < labels.length; i++) {
      if (i % 128 === 127) yield;
      const isFocus = focus && focus.side === side && focus.index === i;
      const xText = side === 'q' ? g.leftX - 4 : g.rightX + 4;
      const text = fitText(ctx, labels[i], g.labelW - 8);
      if (isFocus) {
        const w = ctx.measureText(text).width + 8;
        ctx.fillStyle = theme.hover;
        ctx.fillRect(side === 'q' ? xText - w + 4 : xText - 4, y(i) - g.rowH / 2 + 1, w, g.rowH - 2);
      }
      ctx.fillStyle = focus && !isFocus ? theme.muted : theme.fg;
      ctx.textAlign = side === 'q' ? 'right' : 'left';
      ctx.fillText(text, xText, y(i));
    }
  }
  yield* drawLabels(prep.rowLabels, 'q');
  yield* drawLabels(prep.colLabels, 'k');
  return g;
}

export function describe(input, state) {
  const prep = prepareLayer(input.result, state, input.specials);
  if (!prep) return 'Head view: no data';
  const hs = state.agg === 'head' ? activeHeads(state, prep.nHeads).map((h) => h + 1).join(', ') : state.agg;
  const colours = legendHeads(prep, state) ? ', each line in the colour of the head that weights it most' : '';
  return `Head view, ${KIND_NAMES[prep.kind] || prep.kind}${measureTag(state)}, layer ${prep.layer + 1}, heads ${hs}: ${prep.rows} query tokens linked to ${prep.cols} key tokens${colours}`;
}
