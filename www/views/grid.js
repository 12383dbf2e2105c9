// Model view: every layer × head of one attention kind as a small map, with each head's mean
// row entropy (normalised: 0 = every query looks at one key, 1 = uniform). Click opens a head.

import { entropy, numHeads, numLayers, prepareLayer } from '../analysis.js';
import { clear, drawTitle, drawMatrix, font, headColor, maxOf, textLines, viridis } from './common.js';
import { KIND_NAMES } from './head.js';

function geometry(input, state, width) {
  const L = numLayers(input.result, state.kind);
  const H = numHeads(input.result, state.kind);
  const left = 34;
  const cell = Math.max(28, Math.min(110, Math.floor((width - left - 12) / Math.max(1, H)) - 6));
  const pitchX = cell + 6;
  const pitchY = cell + 22;
  const top = 48;
  return { L, H, left, top, cell, pitchX, pitchY, width: Math.max(width, left + H * pitchX + 12), height: top + L * pitchY + 8 };
}

export function size(ctx, input, state, width) {
  const g = geometry(input, state, width);
  return { width: g.width, height: g.height };
}

export function hitTest(geom, x, y) {
  if (!geom) return null;
  const h = Math.floor((x - geom.left) / geom.pitchX);
  const l = Math.floor((y - geom.top) / geom.pitchY);
  if (h < 0 || l < 0 || h >= geom.H || l >= geom.L) return null;
  if (x - geom.left - h * geom.pitchX > geom.cell || y - geom.top - l * geom.pitchY > geom.cell + 16) return null;
  return { layer: l, head: h };
}

/** Normalised entropies [layer][head] after the current filters (also used for ARIA text). */
export function entropies(input, state) {
  const L = numLayers(input.result, state.kind);
  const out = [];
  for (let l = 0; l < L; l++) {
    const prep = prepareLayer(input.result, { ...state, layer: l, agg: 'head' }, input.specials);
    out.push(prep.heads.map((m) => entropy(m, prep.rows, prep.cols).normalised));
  }
  return out;
}

export function draw(ctx, input, state, theme, width) {
  const g = geometry(input, state, width);
  clear(ctx, g.width, g.height, theme);
  drawTitle(ctx, `All layers × heads · ${KIND_NAMES[state.kind] || state.kind}`, theme);
  textLines(ctx, ['Each map: queries down, keys across, scaled to its own maximum. H = normalised entropy (0 focused … 1 uniform).'], 8, 26, theme, 11, g.width - 16);
  const ent = entropies(input, state);
  ctx.font = font(11);
  for (let h = 0; h < g.H; h++) {
    ctx.fillStyle = headColor(h);
    ctx.fillRect(g.left + h * g.pitchX, g.top - 5, g.cell, 3);
  }
  for (let l = 0; l < g.L; l++) {
    const prep = prepareLayer(input.result, { ...state, layer: l, agg: 'head' }, input.specials);
    const y = g.top + l * g.pitchY;
    ctx.fillStyle = theme.muted;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    ctx.fillText(`L${l + 1}`, g.left - 6, y + g.cell / 2);
    for (let h = 0; h < g.H; h++) {
      const x = g.left + h * g.pitchX;
      const m = prep.heads[h];
      const mx = maxOf(m) || 1;
      drawMatrix(ctx, m, prep.rows, prep.cols, x, y, g.cell, g.cell, (v) => viridis(v / mx));
      const selected = l === state.layer && h === state.head;
      ctx.strokeStyle = selected ? theme.accent : theme.faint;
      ctx.lineWidth = selected ? 3 : 1;
      ctx.strokeRect(x - (selected ? 1.5 : 0.5), y - (selected ? 1.5 : 0.5), g.cell + (selected ? 3 : 1), g.cell + (selected ? 3 : 1));
      ctx.fillStyle = theme.muted;
      ctx.textAlign = 'center';
      ctx.textBaseline = 'top';
      ctx.fillText(g.cell >= 44 ? `H${h + 1} ${ent[l][h].toFixed(2)}` : ent[l][h].toFixed(2), x + g.cell / 2, y + g.cell + 3);
    }
  }
  return g;
}

export function describe(input, state) {
  const L = numLayers(input.result, state.kind);
  const H = numHeads(input.result, state.kind);
  return `Model view: ${L} layers × ${H} heads of ${KIND_NAMES[state.kind] || state.kind}; click a map to open it in the head view`;
}
