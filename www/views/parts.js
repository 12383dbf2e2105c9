// Score parts: why one head's query attends where it does. Each key's pre-softmax score
// q·k/√d_k (input.step.scaled) is drawn as a stacked bar of the parts it exactly sums to
// (input.step.score_parts, src/nn/score_parts.rs):
//   embedding — the first layer: token·token, token·position, position·token, position·position
//               and the bias terms (segment embedding, LayerNorm β, projection biases);
//   bias      — later layers: the inputs' product, and the biases' terms (two of them the same
//               for every key, so they cannot change the softmax);
//   rotary    — Llama: the rotated dimension pairs, grouped into fast, middle and slow ones.
// A sentence reads the bars for the hovered, pinned or most-attended key: which part sets it apart
// from the query's other keys (the softmax sees only differences between keys).

import { clear, drawTitle, fitHeight, fitText, fmt, font, textLines, wrapWords } from './common.js';
import { tokenLabel } from '../core/tokens.js';
import { KIND_NAMES } from './head.js';
import { queryIndex } from './step.js';

const ROW_H = 22;
const MIN_ROW_H = 13;
const MAX_ROWS = 64; // keys listed at most: those with the largest p, in text order
const BAND_COUNT = 3;
// Colour-blind-safe (Okabe–Ito) colours of the groups, in the legend's order.
const COLORS = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#8c8c8c', '#56b4e9'];

const BASIS_NOTES = {
  embedding: 'First layer: the input is token + position, so q and k each split into a token part, a position part and the bias terms; each bar is the key’s score q·k/√d_k split into their products.',
  bias: 'After the first layer token and position are mixed; q = x·W_Q + b_Q and k = x·W_K + b_K split the score into the inputs’ product and the biases’ terms.',
  rotary: 'Rotary positions turn each pair of dimensions by the distance between the tokens: the score is a sum over the pairs. Fast pairs change within a few tokens (position), slow ones barely turn (content).',
};

const groupsMemo = new WeakMap(); // step answer → its groups

/**
 * The bars' segments of a step answer: [{ name, color, parts: [part indices], constant }], where
 * `constant` marks a group that is the same for every key of a query (the softmax ignores it).
 */
export function groups(s) {
  if (groupsMemo.has(s)) return groupsMemo.get(s);
  const sp = s.score_parts;
  let list = [];
  if (sp && sp.basis === 'rotary') {
    const n = sp.names.length;
    const size = Math.ceil(n / BAND_COUNT);
    const period = (i) => (2 * Math.PI) / sp.frequencies[i];
    const span = (a, b) => `${fmt(period(a), 0)}–${fmt(period(b), 0)}`;
    const bandName = ['fast pairs', 'middle pairs', 'slow pairs'];
    for (let b = 0; b * size < n; b++) {
      const from = b * size;
      const to = Math.min(n, from + size) - 1;
      list.push({ name: `${bandName[b]} ${from + 1}–${to + 1} (period ${span(from, to)} tokens)`, short: bandName[b], parts: range(from, to + 1) });
    }
  } else if (sp && sp.basis === 'embedding') {
    const own = ['token·token', 'token·position', 'position·token', 'position·position'];
    list = own.map((name) => ({ name, short: name, parts: [sp.names.indexOf(name)] }));
    list.push({ name: 'bias terms', short: 'bias terms', parts: sp.names.map((n, i) => (own.includes(n) ? -1 : i)).filter((i) => i >= 0) });
  } else if (sp) {
    // bias: the query's bias against every key's input changes with the key; a query's input
    // against the key bias, and bias·bias, do not.
    list = sp.names.map((name, i) => ({ name, short: name, parts: [i], constant: name === 'input·bias' || name === 'bias·bias' }));
  }
  list.forEach((g, i) => (g.color = COLORS[i % COLORS.length]));
  groupsMemo.set(s, list);
  return list;
}

const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);

/** Group g's value for query i and key j. */
function groupValue(s, g, i, j) {
  const tq = s.query_tokens.length;
  const tk = s.key_tokens.length;
  let v = 0;
  for (const p of g.parts) v += s.score_parts.values[(p * tq + i) * tk + j];
  return v;
}

/** The visible keys of query i listed (at most MAX_ROWS: the largest p), in text order, and how many visible keys were left out. */
function listedKeys(s, i) {
  const tk = s.key_tokens.length;
  const visible = range(0, tk).filter((j) => s.mask[i * tk + j] > 0.5);
  if (visible.length <= MAX_ROWS) return { keys: visible, omitted: 0, masked: tk - visible.length };
  const keys = visible.sort((a, b) => s.probs[i * tk + b] - s.probs[i * tk + a] || a - b).slice(0, MAX_ROWS).sort((a, b) => a - b);
  return { keys, omitted: visible.length - keys.length, masked: tk - visible.length };
}

/** What each group adds to key j over the mean of the query's visible keys (what the softmax sees). */
function deviations(s, i, j, keys) {
  return groups(s).map((g) => {
    let mean = 0;
    for (const k of keys) mean += groupValue(s, g, i, k);
    mean /= keys.length || 1;
    return { g, value: groupValue(s, g, i, j), dev: groupValue(s, g, i, j) - mean };
  });
}

/** The sentence that reads key j's bar for query i. */
export function reading(s, i, j) {
  const tk = s.key_tokens.length;
  const visible = range(0, tk).filter((k) => s.mask[i * tk + k] > 0.5);
  const devs = deviations(s, i, j, visible);
  const key = tokenLabel(s.key_tokens[j]);
  const sum = devs.map(({ g, value }) => `${g.short} ${fmt(value)}`).join(' + ').replace(/\+ −/g, '− ');
  const head = `“${key}” (p = ${fmt(s.probs[i * tk + j], 3)}): score ${fmt(s.scaled[i * tk + j])} = ${sum}.`;
  if (visible.length < 2) return `${head} It is the only key this query sees.`;
  const moving = devs.filter((d) => !d.g.constant);
  const top = moving.reduce((a, b) => (Math.abs(b.dev) > Math.abs(a.dev) ? b : a), moving[0]);
  const total = moving.reduce((a, d) => a + Math.abs(d.dev), 0) || 1;
  const share = Math.abs(top.dev) / total;
  const side = top.dev >= 0 ? 'raises' : 'lowers';
  const against = `Against this query’s average key, ${top.g.short} ${side} it most (${top.dev >= 0 ? '+' : '−'}${fmt(Math.abs(top.dev))}, ${Math.round(100 * share)}% of what differs)`;
  return `${head} ${against}: ${meaning(s.score_parts.basis, top.g, share, key)}`;
}

/** What the dominant group says to a class. */
function meaning(basis, g, share, key) {
  const mostly = share >= 0.5 ? 'mostly' : 'partly';
  if (basis === 'embedding') {
    if (g.short === 'token·token') return `${mostly} content: the two tokens themselves, wherever they stand.`;
    if (g.short === 'position·position') return `${mostly} position: this head looks at where “${key}” stands, not at what it is.`;
    if (g.short === 'bias terms') return `${mostly} the layer’s own offsets (biases, segment), the same kind of pull on every token.`;
    if (g.short === 'token·position') return `${mostly} the query token’s content against where “${key}” stands (token·position).`;
    return `${mostly} where the query stands against what “${key}” is (position·token).`;
  }
  if (basis === 'rotary') {
    if (g.short === 'fast pairs') return `${mostly} fast-turning pairs: the distance between the two tokens decides (positional).`;
    if (g.short === 'slow pairs') return `${mostly} slow pairs, which barely turn over this text: the vectors’ content decides.`;
    return `${mostly} middle pairs: both the distance and the content matter.`;
  }
  if (g.short === 'bias·input') return `${mostly} the query’s bias against this key’s input: a preference every query of this head shares.`;
  return `${mostly} the two inputs’ product: what this query’s state and this key’s state say to each other.`;
}

function geometry(ctx, s, state, width) {
  const boxH = fitHeight(state);
  ctx.font = font(11);
  const note = wrapWords(ctx, s.score_parts ? BASIS_NOTES[s.score_parts.basis] : '', width - 16);
  const legendTop = 48 + note.length * 15;
  // Legend: one swatch and name per group, wrapped.
  ctx.font = font(11);
  const legend = [];
  let x = 8;
  let y = legendTop;
  for (const g of s.score_parts ? groups(s) : []) {
    const w = 18 + ctx.measureText(g.name + (g.constant ? ' (same for every key)' : '')).width + 14;
    if (x > 8 && x + w > width - 8) [x, y] = [8, y + 18];
    legend.push({ g, x, y });
    x += w;
  }
  const qi = queryIndex(s, state);
  const { keys, omitted, masked } = listedKeys(s, qi);
  // A phone's width: narrower labels and numbers, so that the bars keep most of it.
  const narrow = width < 560;
  ctx.font = font(12);
  let labelW = 60;
  for (const j of keys) labelW = Math.max(labelW, Math.min(narrow ? 84 : 140, ctx.measureText(tokenLabel(s.key_tokens[j])).width + 12));
  const top = y + 34;
  const foot = 96; // the reading under the table
  const rows = keys.length + (omitted || masked ? 1 : 0);
  const rowH = Math.max(MIN_ROW_H, Math.min(ROW_H, Math.floor((boxH - top - foot) / Math.max(1, rows))));
  const scoreW = narrow ? 56 : 70;
  const pW = narrow ? 56 : 96;
  const barX = 8 + labelW + 8;
  const barW = Math.max(narrow ? 80 : 160, width - barX - scoreW - pW - 24);
  const height = top + rows * rowH + foot;
  return { note, legend, keys, omitted, masked, qi, labelW, top, rowH, barX, barW, scoreX: barX + barW + 8, scoreW, pX: barX + barW + scoreW + 16, pW, width: Math.max(width, barX + barW + scoreW + pW + 24), height };
}

export function size(ctx, input, state, width) {
  if (!input.step) return { width, height: 80 };
  const g = geometry(ctx, input.step, state, width);
  return { width: g.width, height: g.height };
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
  const qi = g.qi;
  const tk = s.key_tokens.length;
  drawTitle(ctx, fitText(ctx, `Score parts · layer ${s.layer + 1} · head ${s.head + 1} · ${KIND_NAMES[s.kind] || s.kind} · query “${tokenLabel(s.query_tokens[qi])}”`, g.width - 16), theme);
  if (!s.score_parts) {
    textLines(ctx, ['This model offers no exact split of its scores (no projection biases and no rotary positions).'], 8, 30, theme, 12, g.width - 16);
    return { ...g, rows: [] };
  }
  textLines(ctx, g.note, 8, 28, theme, 11, g.width - 16);
  ctx.font = font(11);
  ctx.textBaseline = 'middle';
  for (const { g: grp, x, y } of g.legend) {
    ctx.fillStyle = grp.color;
    ctx.fillRect(x, y + 2, 12, 10);
    ctx.fillStyle = theme.fg;
    ctx.textAlign = 'left';
    ctx.fillText(grp.name + (grp.constant ? ' (same for every key)' : ''), x + 16, y + 7);
  }
  const gs = groups(s);
  // One scale for every bar: the largest positive and negative stacks of the listed keys.
  let neg = 0;
  let pos = 0;
  const stacks = g.keys.map((j) => gs.map((grp) => groupValue(s, grp, qi, j)));
  for (const vals of stacks) {
    neg = Math.max(neg, vals.reduce((a, v) => a + Math.max(0, -v), 0));
    pos = Math.max(pos, vals.reduce((a, v) => a + Math.max(0, v), 0));
  }
  const unit = g.barW / (neg + pos || 1);
  const zeroX = g.barX + neg * unit;
  ctx.font = font(11, 600);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'alphabetic';
  ctx.fillText('key token', 8, g.top - 8);
  ctx.fillText('parts of q·k/√d_k (left of the line: negative)', g.barX, g.top - 8);
  ctx.textAlign = 'right';
  ctx.fillText('score', g.scoreX + g.scoreW - 4, g.top - 8);
  ctx.fillText(g.pW < 90 ? 'p' : 'softmax p', g.pX + g.pW - 2, g.top - 8);
  const focus = state.focus && state.focus.side === 'k' ? state.focus.index : null;
  const rows = [];
  for (let r = 0; r < g.keys.length; r++) {
    if (r % 16 === 15) yield;
    const j = g.keys[r];
    const y = g.top + r * g.rowH;
    const cy = y + g.rowH / 2;
    if (focus === j) {
      ctx.fillStyle = theme.hover;
      ctx.fillRect(4, y, g.width - 8, g.rowH);
    }
    ctx.font = font(12);
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = theme.fg;
    ctx.fillText(fitText(ctx, tokenLabel(s.key_tokens[j]), g.labelW - 6), 8, cy);
    // Positive parts stacked right of the zero line, negative ones left of it, in legend order.
    let right = zeroX;
    let left = zeroX;
    const segments = [];
    stacks[r].forEach((v, k) => {
      const w = Math.abs(v) * unit;
      const x = v >= 0 ? right : left - w;
      if (v >= 0) right += w;
      else left -= w;
      ctx.fillStyle = gs[k].color;
      ctx.fillRect(x, y + 3, w, g.rowH - 6);
      segments.push({ group: gs[k].name, value: v, x, w });
    });
    ctx.font = font(12, 400, true);
    ctx.textAlign = 'right';
    ctx.fillStyle = theme.fg;
    ctx.fillText(fmt(s.scaled[qi * tk + j], 3), g.scoreX + g.scoreW - 4, cy);
    const p = s.probs[qi * tk + j];
    ctx.fillStyle = theme.accent;
    ctx.globalAlpha = 0.35;
    ctx.fillRect(g.pX, y + 4, Math.max(0, g.pW - 50) * Math.min(1, p), g.rowH - 8);
    ctx.globalAlpha = 1;
    ctx.fillStyle = theme.fg;
    ctx.fillText(p.toFixed(3), g.pX + g.pW - 2, cy);
    rows.push({ key: j, y, h: g.rowH, segments });
  }
  ctx.strokeStyle = theme.fg;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(zeroX + 0.5, g.top - 4);
  ctx.lineTo(zeroX + 0.5, g.top + g.keys.length * g.rowH + 2);
  ctx.stroke();
  let y = g.top + g.keys.length * g.rowH;
  if (g.omitted || g.masked) {
    const said = [g.omitted ? `${g.omitted} more keys with smaller p are not listed` : '', g.masked ? `${g.masked} later keys are masked for this query` : ''].filter(Boolean).join('; ');
    textLines(ctx, [said], 8, y + 2, theme, 11, g.width - 16);
    y += g.rowH;
  }
  // The reading: the hovered or pinned key, else the one the query attends to most.
  const best = g.keys.reduce((a, j) => (s.probs[qi * tk + j] > s.probs[qi * tk + a] ? j : a), g.keys[0]);
  const read = focus !== null && g.keys.includes(focus) ? focus : best;
  ctx.font = font(12);
  const lines = read === undefined ? [] : wrapWords(ctx, reading(s, qi, read), g.width - 16);
  ctx.fillStyle = theme.fg;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  lines.slice(0, 5).forEach((l, k) => ctx.fillText(l, 8, y + 8 + k * 16));
  return { ...g, rows, zeroX, unit, readKey: read, reading: lines.join(' ') };
}

/** → { side: 'k', index } of the key row under (x, y), or null. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.rows) return null;
  const row = geom.rows.find((r) => y >= r.y && y < r.y + r.h);
  return row && x >= 0 && x < geom.width ? { side: 'k', index: row.key } : null;
}

/** The keyboard cursor's next key row (`]` / `}` down, `[` / `{` up, wrapping around). */
export function moveHit(geom, hit, key) {
  if (!geom || !geom.rows || !geom.rows.length || !['[', ']', '{', '}'].includes(key)) return null;
  const k = hit ? geom.rows.findIndex((r) => r.key === hit.index) : -1;
  if (k < 0) return { side: 'k', index: geom.rows[0].key };
  const n = geom.rows.length;
  return { side: 'k', index: geom.rows[(k + (key === ']' || key === '}' ? 1 : -1) + n) % n].key };
}

/** A key row's read-out: every group's value and the reading. */
export function hoverText(input, state, hit) {
  const s = input.step;
  if (!s || !s.score_parts || !hit || hit.side !== 'k' || hit.index >= s.key_tokens.length) return null;
  return reading(s, queryIndex(s, state), hit.index);
}

export function describe(input, state) {
  const s = input.step;
  if (!s) return 'Score parts: computing';
  if (!s.score_parts) return `Score parts of layer ${s.layer + 1}, head ${s.head + 1}: this model offers no exact split`;
  const qi = queryIndex(s, state);
  const tk = s.key_tokens.length;
  let best = 0;
  for (let j = 1; j < tk; j++) if (s.probs[qi * tk + j] > s.probs[qi * tk + best]) best = j;
  return `Score parts of layer ${s.layer + 1}, head ${s.head + 1}, query "${tokenLabel(s.query_tokens[qi])}": ${reading(s, qi, best)}`;
}
