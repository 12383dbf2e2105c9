// Head view: the bipartite graph. Query tokens on the left, key tokens on the right, one colour
// per head, line opacity = attention weight ÷ the largest weight drawn (the scale is written in
// the drawing), so that one diffuse head (max 0.13, say) reads as well as a sharp one. With
// several heads drawn, each query–key pair gets one line, in the colour of the head that weights
// it most (a legend says which colour is which head): twelve translucent lines on one path
// blended into one grey-brown. Lines are batched by colour and opacity level so that 128 tokens
// × 12 heads stay within one frame.
//
// Long texts (more tokens than fit the box at MIN_ROW_H): a window of readable rows, the same
// positions on both sides (state.win, its first token; by default around the pinned token, else
// the start, or the end for a causal decoder, whose last rows see the whole text), and beside
// each column a strip of the whole text, the minimap: where the weight of the focus goes (or,
// with nothing in focus, of the window's tokens), with the window outlined. The wheel, PageUp /
// PageDown and a click on a strip move the window; [ ] move the pin and the window follows it.

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
const WINDOW_ROW_H = 16; // a windowed view's rows: 11 px labels
const MIN_WINDOW = 8; // the fewest tokens a window shows, however short the box
const STRIP_W = 10; // a minimap strip's width
const STRIP_GAP = 8; // between a strip and its token labels

/** The opacity scale of a drawing: the largest weight among the lines it may draw (rows
 *  r.iFrom…r.iTo against columns r.jFrom…r.jTo of a matrix `cols` wide). */
function opacityScale(mat, cols, r, threshold = 0) {
  let mx = 0;
  for (let i = r.iFrom; i < r.iTo; i++) {
    const row = i * cols;
    for (let j = r.jFrom; j < r.jTo; j++) {
      const w = mat[row + j];
      if (w > mx && w >= threshold) mx = w;
    }
  }
  return mx;
}

/**
 * The query rows and key columns whose lines a drawing may show: those of the window, and of
 * them only the focused token's when a token is in focus (none when it is outside the window).
 */
function lineRange(focus, win) {
  const r = { iFrom: win.q0, iTo: win.q0 + win.nq, jFrom: win.k0, jTo: win.k0 + win.nk };
  if (focus && focus.side === 'q') [r.iFrom, r.iTo] = focus.index >= r.iFrom && focus.index < r.iTo ? [focus.index, focus.index + 1] : [0, 0];
  if (focus && focus.side === 'k') [r.jFrom, r.jTo] = focus.index >= r.jFrom && focus.index < r.jTo ? [focus.index, focus.index + 1] : [0, 0];
  return r;
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
function headerLayout(ctx, prep, state, width, windowed = false) {
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
  // A windowed drawing says which tokens it shows and how to move (windowText).
  const windowY = windowed ? y : null;
  if (windowed) y += 2 * CAPTION_H;
  const notesY = y + 2;
  y = notesY + prep.notes.length * 16;
  const columnsY = y;
  return { title, scaleY, leftOutY, legend, windowY, notesY, columnsY, headerH: columnsY + 16 };
}

/** The font size of the token labels in rows `rowH` px tall. */
const labelPxOf = (rowH) => (rowH > 16 ? 13 : rowH > 13 ? 11 : 10);

/**
 * The first token of a window of `shown` of `count` positions: state.win, else around the
 * pinned token, else the start (the end for a causal decoder, whose last rows see every key).
 */
function windowStart(prep, state, count, shown) {
  if (count <= shown) return 0;
  let start = state.win;
  if (!Number.isInteger(start)) {
    const pin = state.pin;
    start = pin ? pin.index - Math.floor(shown / 2) : prep.kind === 'decoder_self' ? count - shown : 0;
  }
  return Math.min(Math.max(0, start), count - shown);
}

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
  let windowed = false;
  let shown = n;
  const fitH = fitHeight(state);
  // Rows as tall as fit the box (state.boxHeight), down to MIN_ROW_H; the font follows the row,
  // the label column the font, and the header's lines the width: two passes. Tokens that do not
  // fit at MIN_ROW_H are drawn through a window of readable rows, with a strip on each side.
  // (A third pass when the second turned the window on: its strips widen the drawing.)
  for (let pass = 0, flipped = false; pass < 2 || (pass < 3 && flipped); pass++) {
    px = labelPxOf(rowH);
    ctx.font = font(px);
    labelW = Math.min(170, Math.max(40, Math.ceil(maxTextWidth(ctx, prep.rowLabels.concat(prep.colLabels))) + 8));
    const strips = windowed ? 2 * (STRIP_W + STRIP_GAP) : 0;
    // A fixed point: draw() is handed the width size() returned (total + 16) and must lay out the same.
    gap = Math.max(120, Math.min(380, width - 2 * labelW - strips - 16));
    total = 2 * labelW + gap + strips;
    header = headerLayout(ctx, prep, state, total + 16, windowed);
    const room = fitH - header.headerH - 16;
    flipped = !windowed && room < n * least;
    windowed = windowed || flipped;
    if (windowed) {
      rowH = Math.max(least, WINDOW_ROW_H);
      shown = Math.min(n, Math.max(MIN_WINDOW, Math.floor(room / rowH)));
    } else {
      rowH = Math.max(least, Math.min(rowH, Math.floor(room / Math.max(1, n))));
    }
  }
  // The canvas is only as wide as the drawing (CSS centres it): at 512 tokens it was ~7,750 px
  // tall unwindowed, and every frame that changes it copies all of its pixels to the compositor
  // (a 1,280 px wide one took 44–53 ms per copy in software rendering).
  const x0 = 8 + (windowed ? STRIP_W + STRIP_GAP : 0);
  const nq = Math.min(prep.rows, shown);
  const nk = Math.min(prep.cols, shown);
  const win = { windowed, shown, q0: windowStart(prep, state, prep.rows, nq), k0: windowStart(prep, state, prep.cols, nk), nq, nk };
  const leftX = x0 + labelW; // right edge of the query labels
  const rightX = x0 + labelW + gap; // left edge of the key labels
  const top = header.headerH + 4;
  return {
    rowH,
    px,
    labelW,
    header,
    headerH: header.headerH,
    leftX,
    rightX,
    win,
    // The minimaps: the whole text on the height of the window's rows.
    strips: windowed ? { top, h: shown * rowH, qX: 8, kX: rightX + labelW + STRIP_GAP, w: STRIP_W } : null,
    width: total + 16,
    height: header.headerH + shown * rowH + 16,
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

/**
 * What is at (x, y)? A token → { side: 'q'|'k', index }; on a minimap strip → { strip: 'q'|'k',
 * index (the token there), win (the window's first token were it centred there) }; or null.
 */
export function hitTest(geom, x, y) {
  if (!geom || y < geom.headerH) return null;
  const { win, strips } = geom;
  if (strips && y >= strips.top && y < strips.top + strips.h) {
    const side = x >= strips.qX - 3 && x <= strips.qX + strips.w + 3 ? 'q' : x >= strips.kX - 3 && x <= strips.kX + strips.w + 3 ? 'k' : null;
    if (side) {
      const count = side === 'q' ? geom.rows : geom.cols;
      const index = Math.min(count - 1, Math.floor(((y - strips.top) / strips.h) * count));
      const values = geom.stripValues && geom.stripValues[side];
      return { strip: side, index, weight: values ? values[index] : null, what: geom.stripWhat && geom.stripWhat[side], win: Math.max(0, Math.min(count - win.shown, index - Math.floor(win.shown / 2))) };
    }
  }
  const i = Math.floor((y - geom.headerH - 4) / geom.rowH);
  // A windowed drawing's token says where the window stands (at), so that pinning it keeps the window there.
  const at = win.windowed ? { at: Math.max(win.q0, win.k0) } : {};
  if (x >= geom.leftX - geom.labelW - 4 && x <= geom.leftX + 6 && i >= 0 && i < win.nq) return { side: 'q', index: win.q0 + i, ...at };
  if (x >= geom.rightX - 6 && x <= geom.rightX + geom.labelW + 4 && i >= 0 && i < win.nk) return { side: 'k', index: win.k0 + i, ...at };
  return null;
}

/** Where token `index` of `side` is drawn (CSS px, its label's inner edge), or null outside the window. */
export function tokenPoint(geom, side, index) {
  if (!geom || !geom.win) return null;
  const [from, count] = side === 'q' ? [geom.win.q0, geom.win.nq] : [geom.win.k0, geom.win.nk];
  if (index < from || index >= from + count) return null;
  return { x: side === 'q' ? geom.leftX - 10 : geom.rightX + 10, y: geom.headerH + 4 + (index - from) * geom.rowH + geom.rowH / 2 };
}

/**
 * The window moved by `tokens` (negative: up), or by pages of it ('page' × sign), from `win`
 * (state.win) or else where the drawing stands: a state patch { win }, or null where the drawing
 * has no window or it is already at that end.
 */
export function scrolled(geom, tokens, page = false, win = null) {
  const w = geom && geom.win;
  if (!w || !w.windowed) return null;
  const by = page ? Math.sign(tokens) * Math.max(1, w.shown - 1) : tokens;
  const last = Math.max(geom.rows - w.nq, geom.cols - w.nk);
  // From the window asked for last (state.win), which the drawing may not show yet.
  const from = Number.isInteger(win) ? Math.min(Math.max(0, win), last) : Math.max(w.q0, w.k0);
  const to = Math.min(last, Math.max(0, from + by));
  return to === from ? null : { win: to };
}

/** The window's first token, kept where it is, or moved so that `index` of `side` is in it (a
 *  moved pin): a patch { win }, or {} where the drawing has no window. */
export function following(geom, side, index) {
  const w = geom && geom.win;
  if (!w || !w.windowed) return {};
  const [from, count] = side === 'q' ? [w.q0, w.nq] : [w.k0, w.nk];
  if (index >= from && index < from + count) return { win: Math.max(w.q0, w.k0) };
  return { win: index < from ? index : index - count + 1 };
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
function* budgetLevel(mat, cols, r, threshold, toLevel) {
  const perLevel = new Uint32Array(LEVELS);
  for (let i = r.iFrom; i < r.iTo; i++) {
    const row = i * cols;
    for (let j = r.jFrom; j < r.jTo; j++) {
      const w = mat[row + j];
      if (w >= threshold) perLevel[Math.min(LEVELS - 1, Math.floor(w * toLevel))]++;
    }
    if (i % 128 === 127) yield;
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

  const { win } = g;
  const yq = (i) => g.headerH + 4 + (i - win.q0) * g.rowH + g.rowH / 2;
  const yk = (j) => g.headerH + 4 + (j - win.k0) * g.rowH + g.rowH / 2;
  const focus = state.focus || null;
  const ls = layers(prep, state);
  const C = prep.cols;
  const drawn = yield* strongestLines(ls);
  const range = lineRange(focus, win);
  // Opacity = weight ÷ scale, the largest weight among the lines this drawing may show.
  const scale = opacityScale(drawn.mat, C, range, state.threshold || 0);
  const threshold = Math.max(MIN_OPACITY * scale, state.threshold || 0, 1e-9);
  const toLevel = scale > 0 ? LEVELS / scale : 0;
  g.alphaScale = scale;
  const minLevel = focus ? 0 : yield* budgetLevel(drawn.mat, C, range, threshold, toLevel);
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
  if (win.windowed) windowText(prep, win, focus, ls.length > 1).forEach((line, k) => ctx.fillText(fitText(ctx, line, g.width - 16), 8, hd.windowY + k * CAPTION_H));

  // Lines, batched per (colour, opacity level)
  ctx.lineWidth = g.rowH > 16 ? 2 : 1;
  ctx.lineCap = 'butt';
  const x1 = g.leftX + 4;
  const x2 = g.rightX - 4;
  const buckets = ls.map(() => Array.from({ length: LEVELS }, () => []));
  for (let i = range.iFrom; i < range.iTo; i++) {
    const row = i * C;
    for (let j = range.jFrom; j < range.jTo; j++) {
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
        ctx.moveTo(x1, yq(seg[s]));
        ctx.lineTo(x2, yk(seg[s + 1]));
        ctx.stroke();
      }
    }
    yield;
  }
  ctx.globalAlpha = 1;

  // Labels of the window's tokens (text only; token strings are never parsed as markup)
  ctx.font = font(g.px);
  ctx.textBaseline = 'middle';
  function* drawLabels(labels, side, from, count, y) {
    for (let i = from; i < from + count; i++) {
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
  yield* drawLabels(prep.rowLabels, 'q', win.q0, win.nq, yq);
  yield* drawLabels(prep.colLabels, 'k', win.k0, win.nk, yk);

  // The minimaps: the whole text, where the focus's weight goes, the window outlined.
  if (g.strips) {
    const colour = ls.length === 1 && ls[0].color ? ls[0].color : theme.accent;
    const strongest = ls.length > 1 ? ", the strongest head's" : '';
    g.stripWhat = { q: stripWhat(prep, focus, 'q') + strongest, k: stripWhat(prep, focus, 'k') + strongest };
    g.stripValues = { q: stripValues(drawn.mat, prep.rows, C, 'q', focus, win), k: stripValues(drawn.mat, prep.rows, C, 'k', focus, win) };
    const st = g.strips;
    drawStrip(ctx, g.stripValues.q, st.qX, st, win.q0, win.nq, focus && focus.side === 'q' ? focus.index : null, colour, theme);
    drawStrip(ctx, g.stripValues.k, st.kX, st, win.k0, win.nk, focus && focus.side === 'k' ? focus.index : null, colour, theme);
  }
  return g;
}

/** What the values of the strip of `side` are (stripValues), for its read-out. */
function stripWhat(prep, focus, side) {
  if (side === 'k' && focus && focus.side === 'q') return `from “${prep.rowLabels[focus.index] ?? ''}” (the focused query)`;
  if (side === 'q' && focus && focus.side === 'k') return `to “${prep.colLabels[focus.index] ?? ''}” (the focused key)`;
  return side === 'k' ? "from the window's queries" : "to the window's keys";
}

/** What a windowed drawing shows and how to move it, and what its strips show: two caption lines. */
function windowText(prep, win, focus, several) {
  const span = (from, count, of) => `${from + 1}–${from + count} of ${of}`;
  const shown = prep.rows === prep.cols && win.q0 === win.k0 ? `tokens ${span(win.q0, win.nq, prep.rows)}` : `queries ${span(win.q0, win.nq, prep.rows)}, keys ${span(win.k0, win.nk, prep.cols)}`;
  let strips = "strips: the window's weights over the whole text";
  if (focus && (focus.side === 'q' || focus.side === 'k')) {
    const label = (focus.side === 'q' ? prep.rowLabels : prep.colLabels)[focus.index] ?? '';
    const inside = focus.side === 'q' ? focus.index >= win.q0 && focus.index < win.q0 + win.nq : focus.index >= win.k0 && focus.index < win.k0 + win.nk;
    strips = focus.side === 'q' ? `keys' strip: the weights from “${label}”` : `queries' strip: the weights to “${label}”`;
    if (!inside) strips += ' (outside the window)';
  }
  if (several) strips += ', each the strongest head\'s';
  return [`${shown} drawn · the wheel, PgUp/PgDn or a click on a strip moves the window`, strips];
}

/**
 * A strip's values, one per token of `side` over the whole text, from the lines' matrix (rows ×
 * cols): a query strip, the weight each query gives the focused key; a key strip, the weight the
 * focused query gives each key; without such a focus, the weight the window's tokens of the
 * other side give or take.
 */
function stripValues(mat, rows, cols, side, focus, win) {
  if (side === 'k') {
    const out = new Float32Array(cols);
    if (focus && focus.side === 'q' && focus.index < rows) return mat.slice(focus.index * cols, (focus.index + 1) * cols);
    for (let i = win.q0; i < win.q0 + win.nq; i++) for (let j = 0; j < cols; j++) out[j] += mat[i * cols + j];
    return out;
  }
  const out = new Float32Array(rows);
  const [from, to] = focus && focus.side === 'k' && focus.index < cols ? [focus.index, focus.index + 1] : [win.k0, win.k0 + win.nk];
  for (let i = 0; i < rows; i++) for (let j = from; j < to; j++) out[i] += mat[i * cols + j];
  return out;
}

/** One minimap strip at x: the values pooled to its pixel rows (the largest in each), the window
 *  [from, from + count) outlined, the focused token (index or null) marked across it. */
function drawStrip(ctx, values, x, st, from, count, index, colour, theme) {
  const n = values.length;
  ctx.fillStyle = theme.faint;
  ctx.fillRect(x, st.top, st.w, st.h);
  const bins = Math.max(1, Math.min(n, Math.floor(st.h)));
  const pooled = new Float32Array(bins);
  let max = 0;
  for (let t = 0; t < n; t++) {
    const b = Math.min(bins - 1, Math.floor((t * bins) / n));
    if (values[t] > pooled[b]) pooled[b] = values[t];
    if (values[t] > max) max = values[t];
  }
  const binH = st.h / bins;
  ctx.fillStyle = colour;
  for (let b = 0; b < bins; b++) {
    if (!(pooled[b] > 0) || !(max > 0)) continue;
    ctx.globalAlpha = Math.min(1, pooled[b] / max);
    ctx.fillRect(x, st.top + b * binH, st.w, binH + 0.25);
  }
  ctx.globalAlpha = 1;
  const at = (t) => st.top + (t / n) * st.h;
  ctx.strokeStyle = theme.fg;
  ctx.lineWidth = 1;
  ctx.strokeRect(x - 2.5, at(from) - 0.5, st.w + 5, Math.max(3, at(from + count) - at(from)) + 1);
  if (index !== null && index < n) {
    ctx.fillStyle = theme.fg;
    ctx.fillRect(x - 4, at(index + 0.5) - 1, st.w + 8, 2);
  }
}

/** The read-out of a minimap strip under the pointer (text, never markup). */
export function hoverText(input, state, hit) {
  if (!hit || !hit.strip) return null;
  const prep = prepareLayer(input.result, state, input.specials);
  if (!prep) return null;
  const label = (hit.strip === 'q' ? prep.rowLabels : prep.colLabels)[hit.index] ?? '';
  const weight = hit.weight === null || hit.weight === undefined ? '' : `: ${fmt(hit.weight, 3)} ${hit.what || ''}`;
  return `${hit.strip === 'q' ? 'Query' : 'Key'} ${hit.index + 1} “${label}”${weight}. Click to move the window here.`;
}

export function describe(input, state, geom = null) {
  const prep = prepareLayer(input.result, state, input.specials);
  if (!prep) return 'Head view: no data';
  const hs = state.agg === 'head' ? activeHeads(state, prep.nHeads).map((h) => h + 1).join(', ') : state.agg;
  const colours = legendHeads(prep, state) ? ', each line in the colour of the head that weights it most' : '';
  const w = geom && geom.win && geom.win.windowed ? geom.win : null;
  const shown = w ? `; queries ${w.q0 + 1}–${w.q0 + w.nq} and keys ${w.k0 + 1}–${w.k0 + w.nk} drawn, the whole text in a strip beside each column` : '';
  return `Head view, ${KIND_NAMES[prep.kind] || prep.kind}${measureTag(state)}, layer ${prep.layer + 1}, heads ${hs}: ${prep.rows} query tokens linked to ${prep.cols} key tokens${colours}${shown}`;
}
