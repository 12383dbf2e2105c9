// Query/key space of one head (as AttentionViz shows it for corpora, here for the typed text):
// the head's query vectors q_i and key vectors k_j (from step(): [len, d_k] each) pooled,
// centred, and projected on their two principal components (step().qk_pca, from the symmetric
// eigendecomposition of the d_k × d_k covariance in Rust). Queries and keys in two colours,
// each labelled with its token.
// Hovering (or clicking, to pin) a point rings it and its partner (query i ↔ key i); from a
// query, lines go to its top keys, as wide as the attention weight.

import { clear, drawTitle, fitHeight, fitText, font, textLines, wrapWords } from './common.js';
import { tokenLabel } from '../core/tokens.js';
import { KIND_NAMES } from './head.js';

export const Q_COLOR = '#0072b2';
export const K_COLOR = '#d55e00';
const TOP_KEYS = 3;
const R = 4; // point radius, px
const SUBTITLE = 'Queries (blue ●) and keys (orange ■) of this head on the first two principal components of all of them together. A query lands near the keys it attends to when their dot product is large. Hover a point: its partner is ringed and a query’s lines go to its top keys.';

const pcaMemo = new WeakMap();

/**
 * PCA of the pooled rows of q ([tq, d]) and k ([tk, d]), computed in Rust (step().qk_pca: a
 * symmetric eigendecomposition of their covariance): { q: [[x, y]], k: [[x, y]], explained:
 * [share of variance on PC1, PC2], axes: [PC1, PC2] }. Memoised per step answer.
 */
export function qkPca(step) {
  if (pcaMemo.has(step)) return pcaMemo.get(step);
  const p = step.qk_pca;
  const d = step.d_k;
  const pairs = (xy) => Array.from({ length: xy.length / 2 }, (_, i) => [xy[2 * i], xy[2 * i + 1]]);
  const out = { q: pairs(p.q), k: pairs(p.k), explained: [p.explained[0], p.explained[1]], axes: [p.axes.slice(0, d), p.axes.slice(d, 2 * d)] };
  pcaMemo.set(step, out);
  return out;
}

function geometry(ctx, input, width, height = Infinity) {
  ctx.font = font(11);
  const subtitle = wrapWords(ctx, SUBTITLE, width - 16);
  const top = 34 + subtitle.length * 15 + 6;
  const plot = Math.max(200, Math.min(width - 16, 620, height - top - 24)); // a square: the box's height fits it
  return { top, left: 8, plot, subtitle, width, height: top + plot + 24 };
}

export function size(ctx, input, state, width) {
  if (!input.step) return { width, height: 80 };
  const g = geometry(ctx, input, width, fitHeight(state));
  return { width: g.width, height: g.height };
}

/** The top keys of query i (weight, key index), strongest first. */
export function topKeys(step, i, k = TOP_KEYS) {
  const tk = step.key_len;
  const row = [...Array(tk).keys()].map((j) => ({ j, p: step.probs[i * tk + j] }));
  return row.sort((a, b) => b.p - a.p).slice(0, k);
}

export function* draw(ctx, input, state, theme, width, height) {
  clear(ctx, width, height, theme);
  const s = input.step;
  if (!s) {
    textLines(ctx, ['Computing the head’s queries and keys…'], 8, 8, theme, 13);
    return {};
  }
  const g = geometry(ctx, input, width, fitHeight(state));
  const pca = qkPca(s);
  const kindName = KIND_NAMES[s.kind] || s.kind;
  drawTitle(ctx, fitText(ctx, `Query/key space · layer ${s.layer + 1} · head ${s.head + 1} · ${kindName} · PC1 ${(100 * pca.explained[0]).toFixed(0)}%, PC2 ${(100 * pca.explained[1]).toFixed(0)}% of the variance`, width - 16), theme);
  textLines(ctx, g.subtitle, 8, 26, theme, 11, width - 16);
  // Scale: both components to the plot square, equal units on both axes.
  const all = pca.q.concat(pca.k);
  let lo = [Infinity, Infinity];
  let hi = [-Infinity, -Infinity];
  for (const [a, b] of all) {
    lo = [Math.min(lo[0], a), Math.min(lo[1], b)];
    hi = [Math.max(hi[0], a), Math.max(hi[1], b)];
  }
  const span = Math.max(hi[0] - lo[0], hi[1] - lo[1]) || 1;
  const pad = 40;
  const unit = (g.plot - 2 * pad) / span;
  const cx = g.left + g.plot / 2;
  const cy = g.top + g.plot / 2;
  const mid = [(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2];
  const at = ([a, b]) => [cx + (a - mid[0]) * unit, cy - (b - mid[1]) * unit];
  ctx.strokeStyle = theme.faint;
  ctx.lineWidth = 1;
  ctx.strokeRect(g.left + 0.5, g.top + 0.5, g.plot - 1, g.plot - 1);
  ctx.font = font(10);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'top';
  ctx.fillText('PC1 →', g.left + g.plot - 4, g.top + g.plot + 4);
  ctx.textAlign = 'left';
  ctx.fillText('PC2 ↑', g.left + 4, g.top + 4);
  const qs = pca.q.map(at);
  const ks = pca.k.map(at);
  const qLabels = s.query_tokens.map(tokenLabel);
  const kLabels = s.key_tokens.map(tokenLabel);
  const f = state.focus && (state.focus.side === 'q' || state.focus.side === 'k') && state.focus.index !== undefined ? state.focus : null;
  // Lines from the focused query (or the partner query of a focused key) to its top keys.
  const qi = f ? (f.side === 'q' ? f.index : f.index < qs.length ? f.index : -1) : -1;
  const lines = [];
  if (qi >= 0 && qi < qs.length) {
    for (const { j, p } of topKeys(s, qi)) {
      if (!(p > 0)) continue;
      ctx.strokeStyle = Q_COLOR;
      ctx.globalAlpha = 0.35 + 0.65 * p;
      ctx.lineWidth = 1 + 5 * p;
      ctx.beginPath();
      ctx.moveTo(qs[qi][0], qs[qi][1]);
      ctx.lineTo(ks[j][0], ks[j][1]);
      ctx.stroke();
      lines.push({ j, p });
    }
    ctx.globalAlpha = 1;
  }
  yield;
  // Points, then labels (faded when a point is focused, except the ringed ones).
  const dim = (side, i) => f && !((side === f.side && i === f.index) || (side !== f.side && i === f.index) || (side === 'k' && lines.some((l) => l.j === i)));
  ctx.font = font(10);
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  const drawSide = function* (pts, side, labelsOf) {
    for (let i = 0; i < pts.length; i++) {
      const [x, y] = pts[i];
      ctx.globalAlpha = dim(side, i) ? 0.25 : 1;
      ctx.fillStyle = side === 'q' ? Q_COLOR : K_COLOR;
      if (side === 'q') {
        ctx.beginPath();
        ctx.arc(x, y, R, 0, 2 * Math.PI);
        ctx.fill();
      } else ctx.fillRect(x - R, y - R, 2 * R, 2 * R);
      ctx.fillStyle = theme.fg;
      ctx.fillText(labelsOf[i], x + R + 2, y);
      if (i % 64 === 63) yield;
    }
    ctx.globalAlpha = 1;
  };
  yield* drawSide(ks, 'k', kLabels);
  yield* drawSide(qs, 'q', qLabels);
  if (f) {
    const ring = (p, color) => {
      if (!p) return;
      ctx.strokeStyle = color;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(p[0], p[1], R + 4, 0, 2 * Math.PI);
      ctx.stroke();
    };
    ring(f.side === 'q' ? qs[f.index] : ks[f.index], theme.fg);
    ring(f.side === 'q' ? ks[f.index] : qs[f.index], theme.accent);
  }
  return { ...g, qs, ks, lines: lines.map((l) => ({ ...l, label: kLabels[l.j] })), focusIndex: f ? f.index : null, focusSide: f ? f.side : null };
}

/** → { side: 'q'|'k', index } of the nearest point within 8 px, or null. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.qs) return null;
  let best = null;
  let bd = 64;
  const look = (pts, side) => pts.forEach(([px, py], index) => {
    const d = (px - x) ** 2 + (py - y) ** 2;
    if (d <= bd) {
      bd = d;
      best = { side, index };
    }
  });
  look(geom.ks, 'k');
  look(geom.qs, 'q');
  return best;
}

/** The keyboard cursor's next point: the queries in order, then the keys, wrapping around
 *  (`]` / `}` forward, `[` / `{` back). */
export function moveHit(geom, hit, key) {
  if (!geom || !geom.qs || !['[', ']', '{', '}'].includes(key)) return null;
  const all = geom.qs.map((_, index) => ({ side: 'q', index })).concat(geom.ks.map((_, index) => ({ side: 'k', index })));
  if (!all.length) return null;
  const k = hit ? all.findIndex((h) => h.side === hit.side && h.index === hit.index) : -1;
  if (k < 0) return all[0];
  return all[(k + (key === ']' || key === '}' ? 1 : -1) + all.length) % all.length];
}

export function hoverText(input, state, hit) {
  const s = input.step;
  if (!s || !hit) return null;
  const pca = qkPca(s);
  if (hit.side === 'q') {
    if (hit.index >= s.query_len) return null;
    const [a, b] = pca.q[hit.index];
    const top = topKeys(s, hit.index).map(({ j, p }) => `“${tokenLabel(s.key_tokens[j])}” ${p.toFixed(3)}`).join(', ');
    return `query “${tokenLabel(s.query_tokens[hit.index])}” (${hit.index + 1}) at (${a.toFixed(2)}, ${b.toFixed(2)}); top keys: ${top}`;
  }
  if (hit.index >= s.key_len) return null;
  const [a, b] = pca.k[hit.index];
  return `key “${tokenLabel(s.key_tokens[hit.index])}” (${hit.index + 1}) at (${a.toFixed(2)}, ${b.toFixed(2)})`;
}

export function describe(input) {
  const s = input.step;
  if (!s) return 'Query/key space: computing';
  const pca = qkPca(s);
  return `Query/key space of layer ${s.layer + 1}, head ${s.head + 1}: ${s.query_len} queries and ${s.key_len} keys on two principal components (${(100 * (pca.explained[0] + pca.explained[1])).toFixed(0)}% of the variance). Hover a point for its token and top keys.`;
}
