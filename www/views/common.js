// Shared drawing helpers for the views. A "ctx" is a CanvasRenderingContext2D or the SVG
// builder from ../svg.js (same subset of the API); views never touch the DOM otherwise.

import { listen } from '../base/timing.js';

// One colour per head (Tableau-like, readable on light and dark backgrounds); the wasm charts'
// series (bars, lines) cycle through them too (chartTheme).
export const HEAD_COLORS = [
  '#4e79a7', '#f28e2b', '#e15759', '#59a14f', '#b07aa1', '#76b7b2',
  '#edc948', '#ff9da7', '#9c755f', '#7f7fff', '#2ca58d', '#d4a017',
  '#8c564b', '#17becf', '#bcbd22', '#e377c2',
];
export const headColor = (h) => HEAD_COLORS[h % HEAD_COLORS.length];

const FONT_STACK = 'system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", "Noto Sans Arabic", "Noto Sans Hebrew", "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji", "DejaVu Sans", sans-serif';
const MONO_STACK = 'ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace';

// theme.css's colours, for a drawing made where no stylesheet is (tests/e2e/core-session.test.mjs
// checks they agree).
export const LIGHT = { dark: false, bg: '#ffffff', fg: '#1d2330', muted: '#5f6b7a', faint: '#d8dde4', accent: '#0b6bcb', hover: '#fff3bf' };
export const DARK = { dark: true, bg: '#14171c', fg: '#e6e9ee', muted: '#9aa5b4', faint: '#2f3540', accent: '#5aa9ff', hover: '#4a4220' };

// The diverging scale of signed values (diverging(): the views' signed maps; chartTheme: the
// positions chart's heatmap): blue at −1, the scheme's neutral at 0, red at +1.
export const DIVERGING = {
  light: { negative: '#2166ac', zero: '#f7f7f7', positive: '#b2182b' },
  dark: { negative: '#2166ac', zero: '#282c34', positive: '#b2182b' },
};
const rgbStops = (stops) => Object.fromEntries(Object.entries(stops).map(([k, hex]) => [k, [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16))]));
const DIVERGING_RGB = { light: rgbStops(DIVERGING.light), dark: rgbStops(DIVERGING.dark) };

/**
 * The theme as the wasm charts take it (src/wasm/charts.rs ChartTheme): every chart call passes
 * `theme: chartTheme(theme)`, so plotters draws with the views' colours, their diverging scale
 * and their head colours for its series. A colour the wasm cannot read falls back to the same
 * palette there (charts.rs LIGHT, DARK, SERIES).
 */
export function chartTheme(theme) {
  return { dark: !!theme.dark, bg: theme.bg, fg: theme.fg, muted: theme.muted, faint: theme.faint, ...DIVERGING[theme.dark ? 'dark' : 'light'], series: HEAD_COLORS };
}

/**
 * Colours resolved against the used colour scheme of `el` (a widget: its shadow root's), so that
 * light-dark() picks its light or its dark half as the CSS of that element does: { dark, colors }
 * (each a computed "rgb(…)", or null for a value that is no colour).
 */
function resolveColors(el, values) {
  const probe = document.createElement('span');
  probe.style.display = 'none';
  (el.shadowRoot || el).appendChild(probe);
  try {
    const cs = getComputedStyle(probe);
    probe.style.color = 'light-dark(rgb(0, 0, 0), rgb(255, 255, 255))';
    const dark = cs.color === 'rgb(255, 255, 255)';
    const colors = values.map((v) => {
      probe.style.color = '';
      probe.style.color = v;
      return probe.style.color ? cs.color : null;
    });
    return { dark, colors };
  } finally {
    probe.remove();
  }
}

/**
 * The theme from CSS custom properties of an element. Light or dark as the element's own colour
 * scheme is (its page's color-scheme, and where that allows both, the reader's preference) unless
 * --av-dark says which; a property given as light-dark(…) is resolved against that scheme. So a
 * widget follows the page it is in: light on a page that declares no dark scheme, even when the
 * reader prefers dark.
 */
export function readTheme(el) {
  const prefersDark = typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches;
  if (!el || typeof getComputedStyle !== 'function') return { ...(prefersDark ? DARK : LIGHT) };
  const cs = getComputedStyle(el);
  const keys = ['bg', 'fg', 'muted', 'faint', 'accent', 'hover'];
  const vals = keys.map((k) => cs.getPropertyValue(`--av-${k}`).trim());
  const d = cs.getPropertyValue('--av-dark').trim();
  const probe = !d || vals.some((v) => v.includes('light-dark('));
  const r = probe && typeof document !== 'undefined' ? resolveColors(el, vals) : null;
  const dark = d ? d === '1' : r ? r.dark : prefersDark;
  const t = { ...(dark ? DARK : LIGHT) };
  keys.forEach((k, i) => {
    const v = r && vals[i].includes('light-dark(') ? r.colors[i] : vals[i];
    if (v) t[k] = v;
  });
  t.dark = dark;
  return t;
}

/**
 * The 2D context of a view canvas. Drawn on the CPU: our drawings are images, text and lines
 * that the CPU rasterises quickly, while a GPU canvas (software GPU on many machines) spent
 * 50–150 ms per resize of a 512-token drawing allocating and uploading its texture.
 */
export function context2d(canvas) {
  return canvas.getContext('2d', { willReadFrequently: true });
}

/**
 * readTheme(el), read again only after the colour scheme changes or forget() is called:
 * reading CSS custom properties forces a style recalculation (10–30 ms on a large page).
 */
export function themeOf(el, onChange) {
  let theme = null;
  if (typeof matchMedia === 'function') {
    listen('theme', matchMedia('(prefers-color-scheme: dark)'), 'change', () => {
      theme = null;
      if (onChange) onChange();
    });
  }
  const get = () => theme || (theme = readTheme(el));
  get.forget = () => {
    theme = null;
  };
  return get;
}

/** Size a canvas for CSS pixels × devicePixelRatio; returns a ctx scaled to CSS pixels. */
export function prepareCanvas(canvas, width, height) {
  const dpr = canvasScale();
  const w = Math.max(1, Math.round(width));
  const h = Math.max(1, Math.round(height));
  if (canvas.width !== Math.round(w * dpr)) canvas.width = Math.round(w * dpr);
  if (canvas.height !== Math.round(h * dpr)) canvas.height = Math.round(h * dpr);
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const ctx = context2d(canvas);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

export function font(px, weight = 400, mono = false) {
  return `${weight} ${px}px ${mono ? MONO_STACK : FONT_STACK}`;
}

/** Shorten text to fit maxWidth (measured with the ctx's current font). */
export function fitText(ctx, text, maxWidth) {
  const s = String(text);
  if (ctx.measureText(s).width <= maxWidth) return s;
  const chars = Array.from(s); // keep surrogate pairs (emoji) whole
  let lo = 0;
  let hi = chars.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${chars.slice(0, mid).join('')}…`).width <= maxWidth) lo = mid;
    else hi = mid - 1;
  }
  return `${chars.slice(0, lo).join('')}…`;
}

const widthMemo = new WeakMap(); // labels array → Map(font → px): 512 labels are measured per layout pass

/** Widest label, in px, with the ctx's current font. */
export function maxTextWidth(ctx, labels) {
  const key = `${ctx.isSvg ? 'svg' : 'canvas'} ${ctx.font}`; // SVG export estimates widths its own way
  let per = widthMemo.get(labels);
  if (per && per.has(key)) return per.get(key);
  let m = 0;
  for (const l of labels) m = Math.max(m, ctx.measureText(String(l)).width);
  if (!per) widthMemo.set(labels, (per = new Map()));
  per.set(key, m);
  return m;
}

// Viridis, sampled at 9 stops and interpolated (perceptually ordered, colour-blind safe).
const VIRIDIS = [
  [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37],
];
export function viridis(t) {
  // Called per cell (262,144 times for a 512-token map): no intermediate arrays.
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const a = VIRIDIS[i];
  const b = VIRIDIS[i + 1];
  return [Math.round(a[0] + (b[0] - a[0]) * f), Math.round(a[1] + (b[1] - a[1]) * f), Math.round(a[2] + (b[2] - a[2]) * f)];
}

/** Diverging blue–neutral–red for signed values in [-1, 1] (DIVERGING). */
export function diverging(t, dark) {
  const x = Math.min(1, Math.max(-1, Number.isFinite(t) ? t : 0));
  const stops = dark ? DIVERGING_RGB.dark : DIVERGING_RGB.light;
  const mid = stops.zero;
  const end = x < 0 ? stops.negative : stops.positive;
  const f = Math.abs(x);
  return [0, 1, 2].map((i) => Math.round(mid[i] + (end[i] - mid[i]) * f));
}

export const rgb = (c) => `rgb(${c[0]},${c[1]},${c[2]})`;

/** Pool a rows×cols matrix down to tr×tc, keeping in each output cell the entry of largest |value|. */
export function poolAbsMax(data, rows, cols, tr, tc) {
  const out = new Float32Array(tr * tc);
  const colOf = new Int32Array(cols);
  for (let j = 0; j < cols; j++) colOf[j] = Math.floor((j * tc) / cols);
  for (let i = 0; i < rows; i++) {
    const o = Math.floor((i * tr) / rows) * tc;
    const r = i * cols;
    for (let j = 0; j < cols; j++) {
      const v = data[r + j];
      const k = o + colOf[j];
      if (Math.abs(v) > Math.abs(out[k])) out[k] = v;
    }
  }
  return out;
}

/** Device pixels per CSS pixel of the canvases (what prepareCanvas scales by). */
export function canvasScale() {
  return Math.max(1, Math.min(3, (typeof devicePixelRatio === 'number' && devicePixelRatio) || 1));
}

const pooledMemo = new WeakMap(); // matrix → Map("tr×tc" → pooled): redraws and hovers reuse it

/**
 * The matrix as drawn into w×h CSS px at `scale` device px per CSS px: pooled to at most one
 * cell per device pixel (memoised; a view's prepare step calls it so drawing finds it made).
 */
export function pooledFor(data, rows, cols, w, h, scale) {
  const tr = Math.max(1, Math.min(rows, Math.ceil(h * scale)));
  const tc = Math.max(1, Math.min(cols, Math.ceil(w * scale)));
  if (tr >= rows && tc >= cols) return { data, rows, cols };
  let per = pooledMemo.get(data);
  if (!per) pooledMemo.set(data, (per = new Map()));
  const key = `${tr}x${tc}`;
  if (!per.has(key)) per.set(key, { data: poolAbsMax(data, rows, cols, tr, tc), rows: tr, cols: tc });
  return per.get(key);
}

const LUT_FROM_CELLS = 16384;
const LUT_SIZE = 1024;

/** colorOf sampled at LUT_SIZE points over the range of `data` (within one unit of colorOf for
 *  a continuous scale): a 512-token map has 262,144 cells to colour. */
function colourTable(data, colorOf) {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(hi > lo)) return colorOf;
  const table = Array.from({ length: LUT_SIZE }, (_, k) => colorOf(lo + ((hi - lo) * k) / (LUT_SIZE - 1)));
  const step = (LUT_SIZE - 1) / (hi - lo);
  return (v) => table[Math.round((v - lo) * step)] || colorOf(v);
}

/**
 * Draw a rows×cols matrix into the rectangle (x, y, w, h). colorOf(v) → [r,g,b].
 * On a canvas: one ImageData blitted without smoothing. In SVG: one rect per cell.
 */
export function drawMatrix(ctx, data, rows, cols, x, y, w, h, colorOf) {
  if (!rows || !cols) return;
  // More cells than pixels (a 512-token map in a 110 px thumbnail): pool first, keeping in each
  // pixel the value of largest magnitude, so a sharp weight stays visible and the work is per pixel.
  const t = !ctx.isSvg && typeof ctx.getTransform === 'function' ? ctx.getTransform() : null;
  ({ data, rows, cols } = pooledFor(data, rows, cols, w, h, t ? Math.hypot(t.a, t.b) || 1 : 1));
  if (ctx.isSvg || typeof OffscreenCanvas === 'undefined' && typeof document === 'undefined') {
    const cw = w / cols;
    const ch = h / rows;
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) {
        ctx.fillStyle = rgb(colorOf(data[i * cols + j]));
        ctx.fillRect(x + j * cw, y + i * ch, cw + 0.02, ch + 0.02);
      }
    }
    return;
  }
  const off = typeof OffscreenCanvas !== 'undefined' ? new OffscreenCanvas(cols, rows) : Object.assign(document.createElement('canvas'), { width: cols, height: rows });
  const octx = off.getContext('2d');
  const img = octx.createImageData(cols, rows);
  const colour = rows * cols > LUT_FROM_CELLS ? colourTable(data, colorOf) : colorOf;
  for (let i = 0, n = rows * cols; i < n; i++) {
    const c = colour(data[i]);
    img.data[i * 4] = c[0];
    img.data[i * 4 + 1] = c[1];
    img.data[i * 4 + 2] = c[2];
    img.data[i * 4 + 3] = 255;
  }
  octx.putImageData(img, 0, 0);
  const smooth = ctx.imageSmoothingEnabled;
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, x, y, w, h);
  ctx.imageSmoothingEnabled = smooth;
}

/**
 * Blanks a causal map's masked cells (row i's keys from maskedFrom[i] on: later positions, taken
 * out of the softmax) in the background colour, over a rows×cols matrix drawn at (x, y, w, h):
 * they are not weights of 0, and must not look like them. One path, one fill.
 */
export function blankMasked(ctx, maskedFrom, rows, cols, x, y, w, h, theme) {
  if (!maskedFrom || !rows || !cols) return;
  const cw = w / cols;
  const ch = h / rows;
  ctx.fillStyle = theme.bg;
  ctx.beginPath();
  for (let i = 0; i < rows; i++) if (maskedFrom[i] < cols) ctx.rect(x + maskedFrom[i] * cw, y + i * ch, (cols - maskedFrom[i]) * cw, ch);
  ctx.fill();
}

const maxMemo = new WeakMap(); // large matrices are re-scanned on every redraw otherwise

/**
 * Each row of a rows×cols matrix as a strip of cells `cell` px wide: row i fills
 * (x, y0 + i·pitch + inset) … height pitch − 2·inset, with opacity alphaOf(i) (default 1).
 * colorOf(v) → [r,g,b]. On a canvas: one image for all rows (a 512-row table drew 33,000 rects).
 */
export function drawStrips(ctx, data, rows, cols, x, y0, pitch, inset, cell, colorOf, alphaOf = () => 1) {
  if (!rows || !cols) return;
  if (ctx.isSvg || (typeof OffscreenCanvas === 'undefined' && typeof document === 'undefined')) {
    const alpha = ctx.globalAlpha;
    for (let i = 0; i < rows; i++) {
      ctx.globalAlpha = alpha * alphaOf(i);
      for (let j = 0; j < cols; j++) {
        ctx.fillStyle = rgb(colorOf(data[i * cols + j]));
        ctx.fillRect(x + j * cell, y0 + i * pitch + inset, cell, pitch - 2 * inset);
      }
    }
    ctx.globalAlpha = alpha;
    return;
  }
  const pitchPx = Math.max(1, Math.round(pitch));
  const off = typeof OffscreenCanvas !== 'undefined' ? new OffscreenCanvas(cols, rows * pitchPx) : Object.assign(document.createElement('canvas'), { width: cols, height: rows * pitchPx });
  const octx = off.getContext('2d');
  const img = octx.createImageData(cols, rows * pitchPx);
  const px = img.data;
  for (let i = 0; i < rows; i++) {
    const a = Math.round(255 * Math.min(1, Math.max(0, alphaOf(i))));
    for (let j = 0; j < cols; j++) {
      const c = colorOf(data[i * cols + j]);
      for (let r = inset; r < pitchPx - inset; r++) {
        const o = ((i * pitchPx + r) * cols + j) * 4;
        px[o] = c[0];
        px[o + 1] = c[1];
        px[o + 2] = c[2];
        px[o + 3] = a;
      }
    }
  }
  octx.putImageData(img, 0, 0);
  const smooth = ctx.imageSmoothingEnabled;
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, x, y0, cols * cell, rows * pitchPx);
  ctx.imageSmoothingEnabled = smooth;
}

/** Max of an array (0 for empty). */
export function maxOf(a) {
  if (a.length >= 4096 && maxMemo.has(a)) return maxMemo.get(a);
  let m = 0;
  for (let i = 0; i < a.length; i++) if (a[i] > m) m = a[i];
  if (a.length >= 4096) maxMemo.set(a, m);
  return m;
}

export function maxAbs(a) {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const v = Math.abs(a[i]);
    if (v > m) m = v;
  }
  return m;
}

/** A vertical colour bar with min/max labels. */
export function colorBar(ctx, x, y, w, h, lo, hi, colorOf, theme, label) {
  const steps = 64;
  for (let i = 0; i < steps; i++) {
    const t = 1 - i / (steps - 1);
    ctx.fillStyle = rgb(colorOf(lo + (hi - lo) * t));
    ctx.fillRect(x, y + (i * h) / steps, w, h / steps + 0.5);
  }
  ctx.strokeStyle = theme.faint;
  ctx.lineWidth = 1;
  ctx.strokeRect(x, y, w, h);
  ctx.fillStyle = theme.muted;
  ctx.font = font(11);
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText(fmt(hi), x + w + 4, y);
  ctx.textBaseline = 'bottom';
  ctx.fillText(fmt(lo), x + w + 4, y + h);
  if (label) {
    ctx.textBaseline = 'middle';
    ctx.fillText(label, x + w + 4, y + h / 2);
  }
}

/**
 * The keyboard cursor on a rows × cols grid of read-outs (views' moveHit): `]` / `[` the next /
 * previous cell in reading order, `}` / `{` the cell below / above, wrapping around. → [row,
 * col]: the first cell from nowhere, null for an empty grid or another key.
 */
export function gridStep(at, rows, cols, key) {
  const d = { ']': 1, '[': -1, '}': cols, '{': -cols }[key];
  if (!(rows > 0 && cols > 0) || d === undefined) return null;
  if (!at) return [0, 0];
  const n = rows * cols;
  const k = (((Math.min(rows - 1, at[0]) * cols + Math.min(cols - 1, at[1]) + d) % n) + n) % n;
  return [Math.floor(k / cols), k % cols];
}

export function fmt(v, digits = 2) {
  if (!Number.isFinite(v)) return v > 0 ? '∞' : v < 0 ? '−∞' : '–';
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e4 || a < 1e-3)) return v.toExponential(1).replace('-', '−');
  return v.toFixed(digits).replace('-', '−');
}

/** Fill the background (so PNG/SVG exports are not transparent). */
/** The bold title line every view draws at its top left. */
export function drawTitle(ctx, text, theme, y = 6) {
  ctx.fillStyle = theme.fg;
  ctx.font = font(14, 600);
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText(text, 8, y);
}

export function clear(ctx, width, height, theme) {
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, width, height);
}

/** Write lines of text; returns the y below the last one. */
export function textLines(ctx, lines, x, y, theme, px = 12, maxWidth = 1e9) {
  ctx.font = font(px);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  for (const l of lines) {
    ctx.fillText(fitText(ctx, l, maxWidth), x, y);
    y += px + 4;
  }
  return y;
}

/** Greedy word wrap of one line of text to maxWidth (measured with the ctx's current font). */
export function wrapWords(ctx, text, maxWidth) {
  const lines = [];
  let cur = '';
  for (const word of String(text).split(' ')) {
    const next = cur ? `${cur} ${word}` : word;
    if (cur && ctx.measureText(next).width > maxWidth) {
      lines.push(cur);
      cur = word;
    } else cur = next;
  }
  if (cur) lines.push(cur);
  return lines;
}

/** How a title names the value-weighted measure (raw weights are not named). */
export const MEASURE_TAG = 'value-weighted ‖αf‖';

/** " · value-weighted ‖αf‖" for a state drawing value norms, else ''. */
export const measureTag = (state) => (state.measure === 'value-norm' ? ` · ${MEASURE_TAG}` : '');

/** The height a view fits its layout into (render.js fitted: the box's, by state.zoom);
 *  Infinity when there is none (as tall as the width's layout makes it). */
export const fitHeight = (state) => (state && state.boxHeight > 0 ? state.boxHeight : Infinity);
