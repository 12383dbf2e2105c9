// Model view: every layer × head of one attention kind as a small map, with each head's mean
// row entropy (normalised: 0 = every query looks at one key, 1 = uniform). Click opens a head.

import { entropy, numHeads, numLayers, prepareLayer, prepareLayerSteps } from '../core/analysis.js';
import { canvasScale, clear, drawTitle, measureTag, drawMatrix, fitText, font, headColor, maxOf, pooledFor, textLines, viridis, wrapWords } from './common.js';
import { KIND_NAMES } from './head.js';

const MIN_CELL = 28;
const LABELLED_CELL = 44; // from this size on, each map is labelled "H<n> <entropy>"
const LAYER_GAP = 10; // extra space between layers when one layer takes several rows
const SUBTITLE = 'Each map: queries down, keys across, scaled to its own maximum. H = normalised entropy (0 focused … 1 uniform).';

/**
 * Layout: one row of H maps per layer when they fit at MIN_CELL or more; on narrow screens
 * (phones) each layer's heads reflow into several rows of `cols` maps, so the grid always fits
 * `width` instead of running off the right edge.
 */
function cells(input, state, width) {
  const L = numLayers(input.result, state.kind);
  const H = Math.max(1, numHeads(input.result, state.kind));
  const left = 34;
  const avail = width - left - 12;
  let cols = H;
  if (Math.floor(avail / H) - 6 < MIN_CELL) {
    const maxCols = Math.max(1, Math.floor(avail / (MIN_CELL + 6)));
    const rowsPer = Math.ceil(H / maxCols);
    cols = Math.ceil(H / rowsPer); // balanced rows: 12 heads → 2 × 6, not 9 + 3
  }
  const rowsPerLayer = Math.ceil(H / cols);
  const cell = Math.max(MIN_CELL, Math.min(110, Math.floor(avail / cols) - 6));
  const pitchX = cell + 6;
  const pitchY = cell + 22;
  const layerPitch = rowsPerLayer * pitchY + (rowsPerLayer > 1 ? LAYER_GAP : 0);
  return { L, H, cols, rowsPerLayer, left, cell, pitchX, pitchY, layerPitch };
}

function geometry(ctx, input, state, width) {
  const { L, H, cols, rowsPerLayer, left, cell, pitchX, pitchY, layerPitch } = cells(input, state, width);
  ctx.font = font(11);
  const subtitle = wrapWords(ctx, SUBTITLE, width - 16);
  const top = 34 + subtitle.length * 15;
  return {
    L, H, cols, rowsPerLayer, left, top, cell, pitchX, pitchY, layerPitch, subtitle,
    width: Math.max(width, left + cols * pitchX + 12),
    height: top + L * layerPitch + 8,
  };
}

/** Top-left corner of the map of (layer, head). */
function cellXY(g, l, h) {
  return [g.left + (h % g.cols) * g.pitchX, g.top + l * g.layerPitch + Math.floor(h / g.cols) * g.pitchY];
}

export function size(ctx, input, state, width) {
  const g = geometry(ctx, input, state, width);
  return { width: g.width, height: g.height };
}

export function hitTest(geom, x, y) {
  if (!geom || !geom.cols) return null;
  const c = Math.floor((x - geom.left) / geom.pitchX);
  const l = Math.floor((y - geom.top) / geom.layerPitch);
  if (c < 0 || l < 0 || c >= geom.cols || l >= geom.L) return null;
  const inLayer = y - geom.top - l * geom.layerPitch;
  const r = Math.floor(inLayer / geom.pitchY);
  const h = r * geom.cols + c;
  if (r >= geom.rowsPerLayer || h >= geom.H) return null;
  if (x - geom.left - c * geom.pitchX > geom.cell || inLayer - r * geom.pitchY > geom.cell + 16) return null;
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

/** Every map's numbers made ahead, a head per step (slices.js): drawing then only paints. */
export function* prepare(input, state, width) {
  const { L, cell } = cells(input, state, width);
  const scale = canvasScale();
  for (let l = 0; l < L; l++) {
    const prep = yield* prepareLayerSteps(input.result, { ...state, layer: l, agg: 'head' }, input.specials);
    for (const m of prep.heads) {
      entropy(m, prep.rows, prep.cols);
      maxOf(m);
      pooledFor(m, prep.rows, prep.cols, cell, cell, scale);
      yield;
    }
  }
}

export function* draw(ctx, input, state, theme, width) {
  const g = geometry(ctx, input, state, width);
  clear(ctx, g.width, g.height, theme);
  ctx.font = font(14, 600);
  drawTitle(ctx, fitText(ctx, `All layers × heads · ${KIND_NAMES[state.kind] || state.kind}${measureTag(state)}`, g.width - 16), theme);
  textLines(ctx, g.subtitle, 8, 26, theme, 11, g.width - 16);
  const ent = entropies(input, state);
  ctx.font = font(11);
  // Each head's colour above its map: once above the first layer when a layer is one row, above
  // every map when the heads wrap (the column no longer says which head it is).
  for (let h = 0; h < g.H; h++) {
    ctx.fillStyle = headColor(h);
    for (let l = 0; l < (g.rowsPerLayer > 1 ? g.L : 1); l++) {
      const [x, y] = cellXY(g, l, h);
      ctx.fillRect(x, y - 5, g.cell, 3);
    }
  }
  for (let l = 0; l < g.L; l++) {
    const prep = prepareLayer(input.result, { ...state, layer: l, agg: 'head' }, input.specials);
    const [, y0] = cellXY(g, l, 0);
    ctx.fillStyle = theme.muted;
    ctx.font = font(11);
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    ctx.fillText(`L${l + 1}`, g.left - 6, y0 + g.cell / 2);
    for (let h = 0; h < g.H; h++) {
      const [x, y] = cellXY(g, l, h);
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
      // "H<n> <entropy>" when it fits under the map (10 px if need be), else the entropy alone.
      const label = `H${h + 1} ${ent[l][h].toFixed(2)}`;
      ctx.font = font(11);
      if (ctx.measureText(label).width > g.pitchX - 4) ctx.font = font(10);
      const fits = g.cell >= LABELLED_CELL && ctx.measureText(label).width <= g.pitchX - 4;
      if (!fits) ctx.font = font(11);
      ctx.fillText(fits ? label : ent[l][h].toFixed(2), x + g.cell / 2, y + g.cell + 3);
    }
    yield;
  }
  return g;
}

export function describe(input, state) {
  const L = numLayers(input.result, state.kind);
  const H = numHeads(input.result, state.kind);
  return `Model view: ${L} layers × ${H} heads of ${KIND_NAMES[state.kind] || state.kind}${measureTag(state)}; click a map to open it in the head view`;
}
