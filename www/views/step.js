// Step view: the real numbers of one head for one query token, step by step:
// q = row of Q, each key's k_j, the score q·k_j, ÷√d_k, the mask, softmax, and the output
// Σ_j p_j v_j. input.step is the answer of model.step(text, kind, layer, head).

import { clear, drawStrips, drawTitle, diverging, fitText, fmt, font, maxAbs, rgb, textLines } from './common.js';
import { KIND_NAMES } from './head.js';

const ROW_H = 22;
// Keys listed at most: past this, the keys with the largest p (in text order) and one line for
// the rest. 512 rows made a 11,000 px canvas that no one reads and that took 60 ms to allocate.
export const MAX_KEY_ROWS = 64;

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

function geometry(ctx, s, state, width) {
  const dk = s.d_k;
  const cell = Math.max(1, Math.min(6, Math.floor(192 / dk)));
  const stripW = cell * dk;
  const keys = listedKeys(s, queryIndex(s, state));
  const omitted = s.key_tokens.length - keys.length;
  ctx.font = font(12);
  let lw = 60;
  for (const j of keys) lw = Math.max(lw, ctx.measureText(s.key_tokens[j]).width + 12);
  const labelW = Math.min(140, Math.ceil(lw));
  const cols = [
    ['token', labelW],
    ['k', stripW],
    ['score', 74],
    ['scaled', 74],
    ['mask', 44],
    ['p', 120],
    ['v', stripW],
  ];
  let x = 8;
  const xs = {};
  for (const [name, w] of cols) {
    xs[name] = x;
    x += w + 12;
  }
  const top = 142;
  const rows = keys.length + (omitted ? 1 : 0);
  return { cell, stripW, labelW, xs, top, keys, omitted, width: Math.max(width, x), height: top + ROW_H * (rows + 1) + 70 };
}

export function size(ctx, input, state, width) {
  if (!input.step) return { width, height: 80 };
  const g = geometry(ctx, input.step, state, width);
  return { width: g.width, height: g.height };
}

export function hitTest() {
  return null;
}

function strip(ctx, vals, x, y, cell, h, scale, dark) {
  for (let i = 0; i < vals.length; i++) {
    ctx.fillStyle = rgb(diverging(vals[i] / scale, dark));
    ctx.fillRect(x + i * cell, y, cell, h);
  }
}

function queryIndex(s, state) {
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
  const dk = s.d_k;
  const tq = s.query_tokens.length;
  const tk = s.key_tokens.length;
  const qi = queryIndex(s, state);
  const row = (a, width2 = tk) => a.subarray(qi * width2, (qi + 1) * width2);
  const q = row(s.q, dk);
  const scores = row(s.scores);
  const scaled = row(s.scaled);
  const mask = row(s.mask);
  const probs = row(s.probs);
  const out = row(s.output, dk);
  const qkScale = Math.max(maxAbs(q), maxAbs(s.k)) || 1;
  const vScale = Math.max(maxAbs(s.v), maxAbs(out)) || 1;

  drawTitle(ctx, `Layer ${s.layer + 1} · head ${s.head + 1} · ${KIND_NAMES[s.kind] || s.kind}`, theme);
  const prov = s.q_source === s.kv_source ? `Q, K and V all come from the ${s.q_source}.` : `Q comes from the ${s.q_source}; K and V come from the ${s.kv_source}.`;
  textLines(
    ctx,
    [
      prov,
      `scores = q·Kᵀ  →  ÷√d_k (d_k = ${dk}, √d_k = ${Math.sqrt(dk).toFixed(3)})  →  mask  →  softmax p  →  output = Σ p_j · v_j`,
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
  ctx.fillText(fitText(ctx, `query ${qi + 1}/${tq}: “${s.query_tokens[qi]}”`, Math.max(240, g.width - 24)), 8, 78);
  ctx.font = font(11);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'right';
  ctx.fillText('q =', g.xs.k - 4, 100);
  strip(ctx, q, g.xs.k, 92, g.cell, 16, qkScale, theme.dark);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'left';
  ctx.fillText(`(${dk} numbers, colour = sign and size, ±${fmt(qkScale)})`, g.xs.k + g.stripW + 8, 100);

  // Table header
  const hy = g.top - 14;
  ctx.font = font(11, 600);
  ctx.fillStyle = theme.muted;
  const heads = [
    ['token', 'key token'],
    ['k', 'k_j'],
    ['score', 'q·k_j'],
    ['scaled', '÷√d_k'],
    ['mask', 'mask'],
    ['p', 'softmax p_j'],
    ['v', 'v_j'],
  ];
  for (const [k, label] of heads) ctx.fillText(label, g.xs[k], hy);

  // Every key's k_j and v_j (v fades with the weight p_j that takes it into the output).
  const signed = (scale) => (v) => diverging(v / scale, theme.dark);
  const listedRows = (m) => {
    const out = new Float32Array(g.keys.length * dk);
    g.keys.forEach((j, r) => out.set(m.subarray(j * dk, (j + 1) * dk), r * dk));
    return out;
  };
  drawStrips(ctx, listedRows(s.k), g.keys.length, dk, g.xs.k, g.top, ROW_H, 3, g.cell, signed(qkScale));
  drawStrips(ctx, listedRows(s.v), g.keys.length, dk, g.xs.v, g.top, ROW_H, 3, g.cell, signed(vScale), (r) => 0.25 + 0.75 * Math.min(1, probs[g.keys[r]] * 2));
  yield;
  ctx.font = font(12);
  for (let r = 0; r < g.keys.length; r++) {
    const j = g.keys[r];
    const y = g.top + r * ROW_H;
    const cy = y + ROW_H / 2;
    const visible = mask[j] > 0.5;
    ctx.fillStyle = visible ? theme.fg : theme.muted;
    ctx.textAlign = 'left';
    ctx.font = font(12);
    ctx.fillText(fitText(ctx, s.key_tokens[j], g.labelW - 6), g.xs.token, cy);
    ctx.font = font(12, 400, true);
    ctx.textAlign = 'right';
    ctx.fillStyle = visible ? theme.fg : theme.muted;
    ctx.fillText(fmt(scores[j], 3), g.xs.score + 70, cy);
    ctx.fillText(visible ? fmt(scaled[j], 3) : '−∞', g.xs.scaled + 70, cy);
    ctx.textAlign = 'center';
    ctx.fillText(visible ? '1' : '0', g.xs.mask + 16, cy);
    // probability bar + number
    const p = probs[j];
    ctx.fillStyle = theme.accent;
    ctx.globalAlpha = 0.35;
    ctx.fillRect(g.xs.p, y + 4, 70 * Math.min(1, p), ROW_H - 8);
    ctx.globalAlpha = 1;
    ctx.fillStyle = theme.fg;
    ctx.textAlign = 'right';
    ctx.fillText(p.toFixed(4), g.xs.p + 118, cy);
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
    ctx.fillText(fitText(ctx, text, g.width - 16), g.xs.token, g.top + g.keys.length * ROW_H + ROW_H / 2);
  }
  // Sum line and output
  const sy = g.top + (g.keys.length + (g.omitted ? 1 : 0)) * ROW_H + 6;
  ctx.strokeStyle = theme.faint;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(8, sy - 3);
  ctx.lineTo(g.width - 8, sy - 3);
  ctx.stroke();
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'right';
  ctx.font = font(12, 400, true);
  ctx.fillText(`Σ = ${psum.toFixed(4)}`, g.xs.p + 118, sy + ROW_H / 2);
  ctx.textAlign = 'right';
  ctx.font = font(11);
  ctx.fillText('output = Σ p_j v_j =', g.xs.v - 6, sy + ROW_H * 1.5 + 4);
  strip(ctx, out, g.xs.v, sy + ROW_H + 8, g.cell, 16, vScale, theme.dark);
  return g;
}

export function describe(input, state) {
  const s = input.step;
  if (!s) return 'Step view: computing';
  const qi = queryIndex(s, state);
  const tk = s.key_tokens.length;
  const probs = Array.from(s.probs.subarray(qi * tk, (qi + 1) * tk));
  const best = probs.indexOf(Math.max(...probs));
  return `Step view, layer ${s.layer + 1}, head ${s.head + 1}, query "${s.query_tokens[qi]}": softmax puts ${fmt(probs[best], 3)} on "${s.key_tokens[best]}"`;
}
