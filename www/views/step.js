// Step view: the real numbers of one head for one query token, step by step:
// q = row of Q, each key's k_j, the score q·k_j, ÷√d_k, the mask, softmax, and the output
// Σ_j p_j v_j. input.step is the answer of model.step(text, kind, layer, head).

import { canvasScale, clear, drawMatrix, drawStrips, drawTitle, diverging, fitHeight, fitText, fmt, font, maxAbs, pooledFor, rgb, textLines, viridis } from './common.js';
import { tokenLabel } from '../core/tokens.js';
import { drain, NEW_TASK } from '../core/slices.js';
import { KIND_NAMES } from './head.js';
import { kvGroupOf, numHeads } from '../core/analysis.js';

const ROW_H = 22;
const MIN_ROW_H = 13; // the least a table row gets to fit the box (its 12 px numbers still apart)
const NARROW_OUTPUT_X = 136; // the narrow table's output strip, after its label
const TABLE_FOOT = 70; // under the table: Σ p and the output strip
// Keys listed at most: past this, the keys with the largest p (in text order) and one line for
// the rest. 512 rows made a 11,000 px canvas that no one reads and that took 60 ms to allocate.
export const MAX_KEY_ROWS = 64;

const labelsMemo = new WeakMap(); // step answer → its query and key tokens as shown

/** The step answer's tokens as shown (tokenLabel): { q, k }. */
function labels(s) {
  if (!labelsMemo.has(s)) labelsMemo.set(s, { q: s.query_tokens.map(tokenLabel), k: s.key_tokens.map(tokenLabel) });
  return labelsMemo.get(s);
}

/** Indices of the keys listed for query row `qi`, in text order. */
function listedKeys(s, qi) {
  const tk = s.key_tokens.length;
  const all = [...Array(tk).keys()];
  if (tk <= MAX_KEY_ROWS) return all;
  const p = s.probs.subarray(qi * tk, (qi + 1) * tk);
  return all
    .sort((a, b) => p[b] - p[a] || a - b)
    .slice(0, MAX_KEY_ROWS)
    .sort((a, b) => a - b);
}

/**
 * The layout of the parts state.stepPart shows, fitted to the box's height (state.boxHeight):
 * one query's table with rows from MIN_ROW_H to ROW_H px, then (part 'both') or alone
 * ('matrices') the panels, each at most as large as still fits.
 */
function geometry(ctx, s, state, width) {
  const part = state.stepPart || 'query';
  const boxH = fitHeight(state);
  const dk = s.d_k;
  const cell = Math.max(1, Math.min(6, Math.floor(192 / dk)));
  const stripW = cell * dk;
  const keys = listedKeys(s, queryIndex(s, state));
  const omitted = s.key_tokens.length - keys.length;
  ctx.font = font(12);
  let lw = 60;
  for (const j of keys) lw = Math.max(lw, ctx.measureText(labels(s).k[j]).width + 12);
  // The full table (k_j and v_j as strips in every row) when it fits the width; on a narrow
  // screen (a phone) the numbers alone, narrower, with q and the output as strips above and
  // below (every row's k_j and v_j are in the matrices part).
  const full = [['token', Math.min(140, Math.ceil(lw))], ['k', stripW], ['score', 74], ['scaled', 74], ['mask', 44], ['p', 120], ['v', stripW]];
  const fullWidth = full.reduce((x, [, w]) => x + w + 12, 8);
  const narrow = fullWidth > width;
  const cols = narrow ? [['token', Math.min(84, Math.ceil(lw))], ['score', 56], ['scaled', 56], ['mask', 44], ['p', 76]] : full;
  const gap = narrow ? 8 : 12;
  let x = 8;
  const xs = {};
  const ws = {};
  for (const [name, w] of cols) {
    xs[name] = x;
    ws[name] = w;
    x += w + gap;
  }
  const labelW = ws.token;
  // Narrow: q's strip after its "q =", the output's after its label, as wide as the screen allows.
  const stripCell = narrow ? Math.max(1, Math.min(cell, Math.floor((width - 8 - NARROW_OUTPUT_X) / dk))) : cell;
  if (narrow) [xs.k, xs.v] = [36, NARROW_OUTPUT_X];
  const top = 142;
  const rows = keys.length + (omitted ? 1 : 0);
  const w = Math.max(width, x);
  const table = part !== 'matrices';
  const rowH = part === 'query' ? Math.max(MIN_ROW_H, Math.min(ROW_H, Math.floor((boxH - top - TABLE_FOOT) / (rows + 1)))) : ROW_H;
  const tableEnd = table ? top + rowH * (rows + 1) + TABLE_FOOT : 0;
  const tableGeom = { part, narrow, cell: stripCell, stripW: stripCell * dk, labelW, xs, ws, top, rowH, keys, omitted };
  if (part === 'query') return { ...tableGeom, panels: [], width: w, height: tableEnd };
  const laid = fittedPanels(s, w, tableEnd, part === 'matrices' ? boxH : Infinity);
  return { ...tableGeom, panels: laid.panels, panelsTop: tableEnd, width: w, height: laid.height };
}

/** The panels under `top` (their section's title first), as large as fit `height` (down to MIN_PANEL). */
function fittedPanels(s, width, top, height) {
  // A [tokens × d_model] panel is twice as wide as its side: never wider than the box.
  let side = Math.max(MIN_PANEL / 2, Math.min(PANEL, Math.floor((width - 16) / 2)));
  let laid = panelLayout(s, width, top + PANELS_HEAD, side);
  while (laid.height > height && side > MIN_PANEL) {
    side = Math.max(MIN_PANEL, Math.floor(side * 0.85));
    laid = panelLayout(s, width, top + PANELS_HEAD, side);
  }
  return laid;
}

// ------------------------------------------------------------------ all queries at once
// The head's whole computation as matrices, each labelled, the followed query's row outlined
// through all of those whose rows are queries. Hover reads a cell out; a click on a query row
// follows that query.

const PANEL = 168; // px: a panel's longer side at most (more cells than pixels are pooled)
const MIN_PANEL = 72; // px: the least a panel's longer side gets to fit the box
const PANEL_CELL = 14; // px: a cell at most
const PANELS_HEAD = 40; // the section's title line
const PANEL_TITLE = 30; // above each panel: its name and shape

const matricesMemo = new WeakMap(); // step answer → its matrices (sized, drawn and hovered often)

/** The matrices of a step() answer: { id, title, note, data, rows, cols, rowSide, colSide, scale, maxAbs }. */
function matrices(s) {
  if (!matricesMemo.has(s)) matricesMemo.set(s, drain(matricesSteps(s)));
  return matricesMemo.get(s);
}

/** The panels' numbers made ahead in steps (slices.js): 8 matrices of 512² at 512 tokens. */
export function* prepare(input, state, width) {
  const s = input.step;
  if (!s) return;
  // Not in the task that wrote the controls (a query picker of 256 tokens and its layout).
  yield NEW_TASK;
  if (!matricesMemo.has(s)) matricesMemo.set(s, yield* matricesSteps(s));
  const part = state.stepPart || 'query';
  if (part === 'query') return;
  for (const p of fittedPanels(s, width, 0, part === 'matrices' ? fitHeight(state) : Infinity).panels) {
    pooledFor(p.data, p.rows, p.cols, p.w, p.h, canvasScale());
    yield;
  }
}

function* matricesSteps(s) {
  const dk = s.d_k;
  const tq = s.query_tokens.length;
  const tk = s.key_tokens.length;
  const masked = new Float32Array(s.scaled.length);
  for (let i = 0; i < masked.length; i++) masked[i] = s.mask[i] > 0.5 ? s.scaled[i] : -Infinity;
  const m = (id, title, note, data, rows, rowSide, cols, colSide, scale) => ({ id, title, note, data, rows, cols, rowSide, colSide, scale });
  const list = [
    m('q', 'Q', 'queries × d_k', s.q, tq, 'q', dk, 'dim', 'signed'),
    m('k', 'K', 'keys × d_k', s.k, tk, 'k', dk, 'dim', 'signed'),
    m('v', 'V', 'keys × d_k', s.v, tk, 'k', dk, 'dim', 'signed'),
    m('scores', 'QKᵀ', 'scores', s.scores, tq, 'q', tk, 'k', 'signed'),
    m('scaled', '÷√d_k', `÷ ${Math.sqrt(dk).toFixed(2)}`, s.scaled, tq, 'q', tk, 'k', 'signed'),
    m('masked', '+ mask', 'grey = −∞', masked, tq, 'q', tk, 'k', 'signed'),
    m('probs', 'softmax', 'rows sum to 1', s.probs, tq, 'q', tk, 'k', 'positive'),
    m('output', 'softmax · V', 'output', s.output, tq, 'q', dk, 'dim', 'signed'),
  ];
  // Where the heads meet: all heads' outputs side by side, ×Wᴼ (+ bᴼ), + x, then the norm —
  // after the residual add (post-norm: BERT, the translator; the block's output) or, in Llama
  // (pre-norm, no bias) and GPT-2 (pre-norm, with bias), RMSNorm or LayerNorm of the residual
  // stream: the feed-forward's input.
  const D = s.d_model;
  if (D && s.concat) {
    const wide = (id, title, note, data) => ({ ...m(id, title, note, data, tq, 'q', D, 'dim', 'signed'), wide: true });
    const rms = s.block_norm === 'pre_rms_norm';
    const pre = rms || s.block_norm === 'pre_layer_norm';
    const proj = rms ? '× Wᴼ' : '× Wᴼ + bᴼ';
    list.push(
      { ...wide('concat', 'Concat(heads)', `${D / dk} heads side by side; this one outlined`, s.concat), band: [s.head * dk, dk] },
      wide('projected', proj, 'output projection', s.projected),
      wide('block_input', 'x', 'the block’s input (residual stream)', s.block_input),
      wide('residual', `x + (${proj})`, pre ? 'residual add: the attention block’s output' : 'residual add', s.residual),
      wide('normed', rms ? 'RMSNorm' : 'LayerNorm', pre ? 'the feed-forward’s input' : 'the block’s output', s.normed),
    );
  }
  for (const mat of list) {
    yield;
    mat.maxAbs = finiteMaxAbs(mat.data);
  }
  return list;
}

function panelLayout(s, width, top, side = PANEL) {
  const panels = [];
  let x = 8;
  let y = top;
  let rowH = 0;
  for (const mat of matrices(s)) {
    // Square cells; a [tokens × d_model] matrix gets twice the width and cells as tall as fit.
    const cw = mat.wide ? Math.min(PANEL_CELL, (2 * side) / mat.cols) : Math.min(PANEL_CELL, side / Math.max(mat.rows, mat.cols));
    const ch = mat.wide ? Math.min(PANEL_CELL, side / mat.rows) : cw;
    const w = mat.cols * cw;
    const h = mat.rows * ch;
    const pw = Math.max(w, 120);
    if (x > 8 && x + pw > width - 8) {
      x = 8;
      y += rowH + 16;
      rowH = 0;
    }
    panels.push({ ...mat, x, y: y + PANEL_TITLE, w, h, cw, ch });
    x += pw + 18;
    rowH = Math.max(rowH, PANEL_TITLE + h);
  }
  return { panels, height: y + rowH + 24 };
}

const colLabel = (s, side, j) => (side === 'dim' ? `dim ${j + 1}` : side === 'k' ? labels(s).k[j] : labels(s).q[j]);

function* drawPanels(ctx, s, g, qi, focus, theme, title) {
  drawTitle(ctx, fitText(ctx, title, g.width - 16), theme, g.panelsTop + 6);
  textLines(ctx, ['Hover a cell for its number; click a query row to follow that query through all of them.'], 8, g.panelsTop + 24, theme, 11, g.width - 16);
  for (const p of g.panels) {
    ctx.font = font(11, 600);
    ctx.fillStyle = theme.fg;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    ctx.fillText(fitText(ctx, p.title, Math.max(p.w, 120)), p.x, p.y - 16);
    ctx.font = font(10);
    ctx.fillStyle = theme.muted;
    ctx.fillText(fitText(ctx, `[${p.rows} × ${p.cols}] ${p.note}`, Math.max(p.w, 120)), p.x, p.y - 4);
    const scale = p.maxAbs || 1;
    const colour = p.scale === 'positive' ? (v) => viridis(v / scale) : (v) => (Number.isFinite(v) ? diverging(v / scale, theme.dark) : MASKED);
    drawMatrix(ctx, p.data, p.rows, p.cols, p.x, p.y, p.w, p.h, colour);
    ctx.strokeStyle = theme.faint;
    ctx.lineWidth = 1;
    ctx.strokeRect(p.x - 0.5, p.y - 0.5, p.w + 1, p.h + 1);
    if (p.band) {
      ctx.strokeStyle = theme.fg;
      ctx.lineWidth = 1.5;
      ctx.strokeRect(p.x + p.band[0] * p.cw - 1, p.y - 3, p.band[1] * p.cw + 2, p.h + 6);
    }
    if (p.rowSide === 'q') {
      ctx.strokeStyle = theme.accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(p.x - 1, p.y + qi * p.ch - 1, p.w + 2, Math.max(2, p.ch) + 2);
    }
    if (focus && focus.panel === p.id) {
      ctx.strokeStyle = theme.fg;
      ctx.lineWidth = 1.5;
      ctx.strokeRect(p.x + focus.col * p.cw - 1.5, p.y + focus.row * p.ch - 1.5, Math.max(2, p.cw) + 3, Math.max(2, p.ch) + 3);
    }
    yield;
  }
}

const MASKED = [110, 110, 110]; // −∞: not a colour of the scale

function finiteMaxAbs(a) {
  let m = 0;
  for (let i = 0; i < a.length; i++) if (Number.isFinite(a[i]) && Math.abs(a[i]) > m) m = Math.abs(a[i]);
  return m;
}

export function hitTest(geom, x, y) {
  if (!geom || !geom.panels) return null;
  for (const p of geom.panels) {
    if (x < p.x || y < p.y || x >= p.x + p.w || y >= p.y + p.h) continue;
    const row = Math.min(p.rows - 1, Math.floor((y - p.y) / p.ch));
    const col = Math.min(p.cols - 1, Math.floor((x - p.x) / p.cw));
    return { panel: p.id, row, col, queryRow: p.rowSide === 'q' ? row : null };
  }
  return null;
}

/**
 * The keyboard cursor's next matrix cell: `]` / `[` along a row, `}` / `{` down a column, from
 * one matrix into the next at its end (the panels in drawing order, as one wrapped sequence).
 */
export function moveHit(geom, hit, key) {
  const ps = geom && geom.panels ? geom.panels.filter((p) => p.rows > 0 && p.cols > 0) : [];
  if (!ps.length || !['[', ']', '{', '}'].includes(key)) return null;
  const hitOf = (p, row, col) => ({ panel: p.id, row, col, queryRow: p.rowSide === 'q' ? row : null });
  let k = hit ? ps.findIndex((p) => p.id === hit.panel) : -1;
  if (k < 0) return hitOf(ps[0], 0, 0);
  const p = ps[k];
  let row = Math.min(p.rows - 1, hit.row);
  let col = Math.min(p.cols - 1, hit.col);
  const forward = key === ']' || key === '}';
  if (key === ']' || key === '[') {
    col += forward ? 1 : -1;
    if (col >= p.cols) [row, col] = [row + 1, 0];
    if (col < 0) [row, col] = [row - 1, p.cols - 1];
  } else row += forward ? 1 : -1;
  if (row >= 0 && row < p.rows) return hitOf(p, row, col);
  k = (k + (forward ? 1 : -1) + ps.length) % ps.length;
  const q = ps[k];
  return forward ? hitOf(q, 0, Math.min(col, q.cols - 1)) : hitOf(q, q.rows - 1, key === '[' ? q.cols - 1 : Math.min(col, q.cols - 1));
}

/** What a hovered matrix cell reads: its matrix, row token, column and the number. */
export function hoverText(input, state, hit) {
  const s = input.step;
  if (!s || !hit) return null;
  const p = matrices(s).find((m) => m.id === hit.panel);
  if (!p) return null;
  const v = p.data[hit.row * p.cols + hit.col];
  const rowTok = p.rowSide === 'q' ? labels(s).q[hit.row] : labels(s).k[hit.row];
  return `${p.title} (${p.note}): row ${hit.row + 1} “${rowTok}”, ${p.colSide === 'dim' ? '' : 'key '}${colLabel(s, p.colSide, hit.col)} = ${Number.isFinite(v) ? v.toPrecision(6) : '−∞'}`;
}

export function size(ctx, input, state, width) {
  if (!input.step) return { width, height: 80 };
  const g = geometry(ctx, input.step, state, width);
  return { width: g.width, height: g.height };
}

function strip(ctx, vals, x, y, cell, h, scale, dark) {
  for (let i = 0; i < vals.length; i++) {
    ctx.fillStyle = rgb(diverging(vals[i] / scale, dark));
    ctx.fillRect(x + i * cell, y, cell, h);
  }
}

/** The query row the view follows: state.query inside the answer's queries. */
export function queryIndex(s, state) {
  const tq = s.query_tokens.length;
  return Math.min(Math.max(0, state.query | 0), Math.max(0, tq - 1));
}

export function* draw(ctx, input, state, theme, width) {
  const s = input.step;
  if (!s) {
    clear(ctx, width, 80, theme);
    textLines(ctx, ['Computing…'], 12, 12, theme);
    return { width, height: 80 };
  }
  const g = geometry(ctx, s, state, width);
  clear(ctx, g.width, g.height, theme);
  const qi = queryIndex(s, state);
  const focus = state.focus && 'panel' in state.focus ? state.focus : null;
  if (g.part === 'matrices') {
    yield* drawPanels(ctx, s, g, qi, focus, theme, `Layer ${s.layer + 1} · head ${s.head + 1} · ${KIND_NAMES[s.kind] || s.kind}: every matrix, all queries at once`);
    return g;
  }
  const dk = s.d_k;
  const tq = s.query_tokens.length;
  const tk = s.key_tokens.length;
  const row = (a, width2 = tk) => a.subarray(qi * width2, (qi + 1) * width2);
  const q = row(s.q, dk);
  const scores = row(s.scores);
  const scaled = row(s.scaled);
  const mask = row(s.mask);
  const probs = row(s.probs);
  const out = row(s.output, dk);
  const qkScale = Math.max(maxAbs(q), maxAbs(s.k)) || 1;
  const vScale = Math.max(maxAbs(s.v), maxAbs(out)) || 1;

  ctx.font = font(14, 600);
  drawTitle(ctx, fitText(ctx, `Layer ${s.layer + 1} · head ${s.head + 1} · ${KIND_NAMES[s.kind] || s.kind}`, g.width - 16), theme);
  const prov = (s.q_source === s.kv_source ? `Q, K and V all come from the ${s.q_source}.` : `Q comes from the ${s.q_source}; K and V come from the ${s.kv_source}.`) + sharedKv(input, s);
  textLines(
    ctx,
    [
      prov,
      `scores = q·Kᵀ  →  ÷√d_k (d_k = ${dk}, √d_k = ${Math.sqrt(dk).toFixed(3)})  →  + mask (0 or −∞)  →  softmax p  →  output = Σ p_j · v_j`,
    ],
    8,
    26,
    theme,
    12,
    g.width - 16,
  );
  // The query row
  ctx.font = font(12, 600);
  ctx.fillStyle = theme.fg;
  ctx.textBaseline = 'middle';
  ctx.fillText(fitText(ctx, `query ${qi + 1}/${tq}: “${labels(s).q[qi]}”`, Math.max(240, g.width - 24)), 8, 78);
  ctx.font = font(11);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'right';
  ctx.fillText('q =', g.xs.k - 4, 100);
  strip(ctx, q, g.xs.k, 92, g.cell, 16, qkScale, theme.dark);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'left';
  const qNote = g.xs.k + g.stripW + 8;
  ctx.fillText(fitText(ctx, `(${dk} numbers, colour = sign and size, ±${fmt(qkScale)})`, g.width - qNote - 8), qNote, 100);

  // Table header
  const hy = g.top - 14;
  ctx.font = font(11, 600);
  ctx.fillStyle = theme.muted;
  const heads = [
    ['token', 'key token'],
    ['k', 'k_j'],
    ['score', 'q·k_j'],
    ['scaled', '÷√d_k'],
    ['mask', '+ mask'],
    ['p', 'softmax p_j'],
    ['v', 'v_j'],
  ];
  for (const [k, label] of heads) if (g.ws[k]) ctx.fillText(label, g.xs[k], hy);

  // Every key's k_j and v_j (v fades with the weight p_j that takes it into the output).
  const signed = (scale) => (v) => diverging(v / scale, theme.dark);
  const listedRows = (m) => {
    const out = new Float32Array(g.keys.length * dk);
    g.keys.forEach((j, r) => out.set(m.subarray(j * dk, (j + 1) * dk), r * dk));
    return out;
  };
  // In steps: at 64 keys × d_k 64 (SmolLM2) the strips and the rows took 40–70 ms in one task.
  if (!g.narrow) {
    drawStrips(ctx, listedRows(s.k), g.keys.length, dk, g.xs.k, g.top, g.rowH, 3, g.cell, signed(qkScale));
    yield;
    drawStrips(ctx, listedRows(s.v), g.keys.length, dk, g.xs.v, g.top, g.rowH, 3, g.cell, signed(vScale), (r) => 0.25 + 0.75 * Math.min(1, probs[g.keys[r]] * 2));
    yield;
  }
  ctx.font = font(12);
  for (let r = 0; r < g.keys.length; r++) {
    if (r % 16 === 15) yield;
    const j = g.keys[r];
    const y = g.top + r * g.rowH;
    const cy = y + g.rowH / 2;
    const visible = mask[j] > 0.5;
    ctx.fillStyle = visible ? theme.fg : theme.muted;
    ctx.textAlign = 'left';
    ctx.font = font(12);
    ctx.fillText(fitText(ctx, labels(s).k[j], g.labelW - 6), g.xs.token, cy);
    ctx.font = font(12, 400, true);
    ctx.textAlign = 'right';
    ctx.fillStyle = visible ? theme.fg : theme.muted;
    ctx.fillText(fmt(scores[j], 3), g.xs.score + g.ws.score - 4, cy);
    // The scaled score is a number for every key; the mask is added to it: 0 keeps it, −∞
    // (a future position of a causal model) takes it out of the softmax.
    ctx.fillText(fmt(scaled[j], 3), g.xs.scaled + g.ws.scaled - 4, cy);
    ctx.textAlign = 'center';
    ctx.fillText(visible ? '0' : '−∞', g.xs.mask + g.ws.mask / 2, cy);
    // probability bar + number
    const p = probs[j];
    ctx.fillStyle = theme.accent;
    ctx.globalAlpha = 0.35;
    ctx.fillRect(g.xs.p, y + 4, (g.ws.p - 50) * Math.min(1, p), g.rowH - 8);
    ctx.globalAlpha = 1;
    ctx.fillStyle = theme.fg;
    ctx.textAlign = 'right';
    ctx.fillText(p.toFixed(4), g.xs.p + g.ws.p - 2, cy);
  }
  let psum = 0;
  for (let j = 0; j < tk; j++) psum += probs[j];
  if (g.omitted) {
    let rest = psum;
    for (const j of g.keys) rest -= probs[j];
    ctx.font = font(12);
    ctx.textAlign = 'left';
    ctx.fillStyle = theme.muted;
    const text = `… ${g.omitted} more keys hold p = ${Math.max(0, rest).toFixed(4)} in all (listed: the ${g.keys.length} with the largest p, in text order)`;
    ctx.fillText(fitText(ctx, text, g.width - 16), g.xs.token, g.top + g.keys.length * g.rowH + g.rowH / 2);
  }
  // Sum line and output
  const sy = g.top + (g.keys.length + (g.omitted ? 1 : 0)) * g.rowH + 6;
  ctx.strokeStyle = theme.faint;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(8, sy - 3);
  ctx.lineTo(g.width - 8, sy - 3);
  ctx.stroke();
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'right';
  ctx.font = font(12, 400, true);
  ctx.fillText(`Σ = ${psum.toFixed(4)}`, g.xs.p + g.ws.p - 2, sy + g.rowH / 2);
  ctx.textAlign = 'right';
  ctx.font = font(11);
  ctx.fillText('output = Σ p_j v_j =', g.xs.v - 6, sy + g.rowH * 1.5 + 4);
  strip(ctx, out, g.xs.v, sy + g.rowH + 8, g.cell, 16, vScale, theme.dark);
  if (g.part === 'both') yield* drawPanels(ctx, s, g, qi, focus, theme, 'All queries at once: every matrix of this head');
  return g;
}

/** Grouped-query attention: which key/value head this query head reads K and V from, and with
 *  which other query heads; '' where every head has its own. */
function sharedKv(input, s) {
  const g = kvGroupOf(input.kvHeads, s.kind, numHeads(input.result, s.kind), s.head);
  return g ? ` K and V are key/value head ${g.kv + 1}'s, which query heads ${g.first + 1}–${g.last + 1} share (grouped-query attention).` : '';
}

export function describe(input, state) {
  const s = input.step;
  if (!s) return 'Step view: computing';
  const qi = queryIndex(s, state);
  const tk = s.key_tokens.length;
  const probs = Array.from(s.probs.subarray(qi * tk, (qi + 1) * tk));
  const best = probs.indexOf(Math.max(...probs));
  return `Step view, layer ${s.layer + 1}, head ${s.head + 1}, query "${labels(s).q[qi]}": softmax puts ${fmt(probs[best], 3)} on "${labels(s).k[best]}"`;
}
