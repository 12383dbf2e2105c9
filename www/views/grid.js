// Model view: every layer × head of one attention kind as a small map, with each head's
// normalised entropy H (0 = every query looks at one key, 1 = uniform over the keys it can see:
// analysis.js entropy, the head overview's "broad"). Click opens a head.

import { blockAt, headEntropies, kvGroupSize, numHeads, numLayers, prepareLayer, prepareLayerSteps } from '../core/analysis.js';
import { blankMasked, canvasScale, clear, drawTitle, measureTag, drawMatrix, fitHeight, fitText, font, headColor, maxOf, pooledFor, textLines, viridis, wrapWords } from './common.js';
import { KIND_NAMES } from './head.js';
import { kvGroupText } from './heads.js';

const MIN_CELL = 28;
const LABELLED_CELL = 44; // from this size on, each map is labelled "H<n> <entropy>"
const LAYER_GAP = 10; // extra space between layers when one layer takes several rows
const LABEL_H = 22; // under a map: its label ("H3 0.42") and the next row's head colour
const BARE_H = 8; // under a map fitted without its label: the next row's head colour
const FIT_CELL = 8; // the smallest a map gets to fit the box
const MAX_LAYER_COLUMNS = 4; // a fitted grid's layers stand in at most this many columns
const GROUP_GAP = 6; // px between the query heads of two key/value heads (GQA), when a layer is one row
const GROUP_HEAD = 12; // the line above the first maps that names each key/value head
const SUBTITLE = 'Each map: queries down, keys across, scaled to its own maximum (blank: masked). H = normalised entropy (0 focused … 1 uniform over the keys a query can see).';
// When the maps drawn are not the model's own, their H is computed on what is drawn, and says so.
const FILTERED_NOTE = ' H of the maps as shown (filtered).';

/**
 * Layout: one row of H maps per layer when they fit at MIN_CELL or more; on narrow screens
 * (phones) each layer's heads reflow into several rows of `cols` maps, so the grid always fits
 * `width` instead of running off the right edge. Fitted to the box's height (state.boxHeight):
 * the layers stand in up to four columns side by side when that gives larger maps (SmolLM2's 30
 * layers of 9 heads in a wide box), and the maps shrink, without their labels (the read-out
 * under the pointer says them) when labelled ones would be under MIN_CELL.
 */
function cells(input, state, width, top = 64) {
  const L = numLayers(input.result, state.kind);
  const H = Math.max(1, numHeads(input.result, state.kind));
  const left = 34;
  const boxH = fitHeight(state);
  // Grouped-query attention: a layer's query heads stand in groups, GROUP_GAP apart, under the
  // key/value head they read (when the layer is one row of maps).
  const group = kvGroupSize(input.kvHeads, state.kind, H);
  const gaps = (H / group - 1) * GROUP_GAP;
  let best = null;
  for (let layerCols = 1; layerCols <= (Number.isFinite(boxH) ? MAX_LAYER_COLUMNS : 1); layerCols++) {
    const avail = Math.floor((width - left - 12 - (layerCols - 1) * left) / layerCols);
    // Columns of layers only where each layer is one row of its heads, all of them side by side
    // (as large as the column's width lets them be); one column reflows a layer's heads into
    // rows of maps of MIN_CELL or more on narrow screens.
    const widest = Math.min(110, Math.floor((avail - gaps) / H) - 6);
    if (layerCols > 1 && widest < FIT_CELL) break;
    let cols = H;
    if (layerCols === 1 && widest < MIN_CELL) {
      const maxCols = Math.max(1, Math.floor(avail / (MIN_CELL + 6)));
      const rowsPer = Math.ceil(H / maxCols);
      cols = Math.ceil(H / rowsPer); // balanced rows: 12 heads → 2 × 6, not 9 + 3
    }
    const rowsPerLayer = Math.ceil(H / cols);
    const layersPerColumn = Math.ceil(L / layerCols);
    let cell = layerCols === 1 ? Math.max(MIN_CELL, Math.min(110, Math.floor(avail / cols) - 6)) : widest;
    let labelH = LABEL_H;
    const rowPitch = Math.floor(((boxH - top - 8) / Math.max(1, layersPerColumn) - (rowsPerLayer > 1 ? LAYER_GAP : 0)) / rowsPerLayer);
    if (rowPitch < cell + labelH) {
      labelH = rowPitch - LABEL_H >= MIN_CELL ? LABEL_H : BARE_H;
      cell = Math.max(FIT_CELL, layerCols === 1 ? rowPitch - labelH : Math.min(cell, rowPitch - labelH));
    }
    if (!best || cell > best.cell) best = { cols, rowsPerLayer, layersPerColumn, cell, labelH };
  }
  const { cols, rowsPerLayer, layersPerColumn, cell, labelH } = best;
  const pitchX = cell + 6;
  const pitchY = cell + labelH;
  const layerPitch = rowsPerLayer * pitchY + (rowsPerLayer > 1 ? LAYER_GAP : 0);
  const grouped = group > 1 && rowsPerLayer === 1;
  // One column of layers: its maps, then the next column's layer numbers.
  const columnPitch = cols * pitchX + (grouped ? gaps : 0) + left;
  const shown = grouped ? group : 1;
  // x of each head's map within its column of layers (after the gaps between the groups before it)
  const headX = Array.from({ length: H }, (_, h) => (h % cols) * pitchX + (grouped ? Math.floor((h % cols) / group) * GROUP_GAP : 0));
  return { L, H, cols, rowsPerLayer, layersPerColumn, columnPitch, left, cell, pitchX, pitchY, layerPitch, labelled: labelH === LABEL_H, group: shown, groupGap: grouped ? GROUP_GAP : 0, headX };
}

/**
 * Layer l's maps as the model view draws them: `prep` (analysis.js prepareLayer), or for a long
 * text whose maps stayed in the worker, `thumbs` — the thumbnails it sent (result.thumbnails,
 * session-view-data.js: each map pooled to at most THUMBNAIL_SIZE² as drawMatrix pools) with
 * the block's own scores and mask; null while neither is here.
 */
function layerMaps(input, state, l) {
  const block = blockAt(input.result, state.kind, l);
  // (headData first: a scrubbed generation's prefix block makes its `data` whole when read)
  if (!block || block.headData || block.data) return { prep: prepareLayer(input.result, { ...state, layer: l, agg: 'head' }, input.specials) };
  const t = input.result.thumbnails && input.result.thumbnails[state.kind];
  if (!t) return null;
  // One object per layer of these thumbnails, so that maxOf's and pooledFor's memos (keyed by the
  // array) find what prepare() made, and redraws make nothing again.
  let per = thumbnailLayers.get(t.data);
  if (!per) thumbnailLayers.set(t.data, (per = []));
  if (per[l]) return per[l];
  const [tq, tk] = [block.query_len, block.key_len];
  const [rows, cols] = [Math.min(t.size, tq), Math.min(t.size, tk)];
  const n = rows * cols;
  const at = l * block.heads * n;
  const heads = Array.from({ length: block.heads }, (_, h) => t.data.subarray(at + h * n, at + (h + 1) * n));
  // A causal map's blank cells, in the map's own rows and keys: query i (of the last tq of tk
  // positions) sees keys 0 … i + tk − tq.
  const maskedFrom = state.kind === 'decoder_self' ? Int32Array.from({ length: tq }, (_, i) => Math.min(tk, i + 1 + tk - tq)) : null;
  per[l] = { thumbs: { heads, rows, cols, tq, tk, maskedFrom }, scores: block.scores };
  return per[l];
}

const thumbnailLayers = new WeakMap(); // a kind's thumbnails (result.thumbnails[kind].data) → [layer → layerMaps' answer]

function geometry(ctx, input, state, width) {
  ctx.font = font(11);
  const first = layerMaps(input, state, 0)?.prep ?? { scores: true };
  const subtitle = wrapWords(ctx, SUBTITLE + (first && !first.scores ? FILTERED_NOTE : ''), width - 16);
  const grouped = kvGroupSize(input.kvHeads, state.kind, numHeads(input.result, state.kind)) > 1;
  const top = 34 + subtitle.length * 15 + (grouped ? GROUP_HEAD : 0);
  const c = cells(input, state, width, top);
  const columns = Math.ceil(c.L / c.layersPerColumn);
  return {
    ...c, top, subtitle,
    width: Math.max(width, c.left + columns * c.columnPitch - c.left + 12),
    height: top + c.layersPerColumn * c.layerPitch + 8,
  };
}

/** Top-left corner of the map of (layer, head). */
function cellXY(g, l, h) {
  const column = Math.floor(l / g.layersPerColumn);
  return [g.left + column * g.columnPitch + g.headX[h], g.top + (l % g.layersPerColumn) * g.layerPitch + Math.floor(h / g.cols) * g.pitchY];
}

export function size(ctx, input, state, width) {
  const g = geometry(ctx, input, state, width);
  return { width: g.width, height: g.height };
}

export function hitTest(geom, x, y) {
  if (!geom || !geom.cols) return null;
  const column = Math.floor((x - geom.left) / geom.columnPitch);
  const inColumn = x - geom.left - column * geom.columnPitch;
  const k = Math.floor(inColumn / (geom.group * geom.pitchX + geom.groupGap)); // the key/value head's group
  const inGroup = inColumn - k * (geom.group * geom.pitchX + geom.groupGap);
  const c = k * geom.group + Math.floor(inGroup / geom.pitchX);
  const row = Math.floor((y - geom.top) / geom.layerPitch);
  const l = column * geom.layersPerColumn + row;
  if (column < 0 || c < 0 || row < 0 || c >= geom.cols || c >= (k + 1) * geom.group || row >= geom.layersPerColumn || l >= geom.L) return null;
  const inLayer = y - geom.top - row * geom.layerPitch;
  const r = Math.floor(inLayer / geom.pitchY);
  const h = r * geom.cols + c;
  if (r >= geom.rowsPerLayer || h >= geom.H) return null;
  if (inGroup - (c - k * geom.group) * geom.pitchX > geom.cell || inLayer - r * geom.pitchY > geom.pitchY - 6) return null;
  return { layer: l, head: h };
}

/** Normalised entropies [layer][head] after the current filters (also used for ARIA text). */
export function entropies(input, state) {
  const L = numLayers(input.result, state.kind);
  const out = [];
  for (let l = 0; l < L; l++) {
    const maps = layerMaps(input, state, l);
    out.push(maps && maps.prep ? headEntropies(maps.prep).map((e) => e.normalised) : ((maps && maps.scores) || []).map((sc) => sc.broad));
  }
  return out;
}

/** Every map's numbers made ahead, a head per step (slices.js): drawing then only paints. */
export function* prepare(input, state, width) {
  const { L, cell } = cells(input, state, width);
  const scale = canvasScale();
  for (let l = 0; l < L; l++) {
    const block = blockAt(input.result, state.kind, l);
    if (block && !block.headData && !block.data) {
      // Thumbnails: pooled to the cells here, as the maps below, so that drawing only paints.
      const maps = layerMaps(input, state, l);
      for (const m of maps ? maps.thumbs.heads : []) {
        maxOf(m);
        pooledFor(m, maps.thumbs.rows, maps.thumbs.cols, cell, cell, scale);
        yield;
      }
      continue;
    }
    const prep = yield* prepareLayerSteps(input.result, { ...state, layer: l, agg: 'head' }, input.specials);
    headEntropies(prep);
    for (const m of prep.heads) {
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
    for (let l = 0; l < g.L; l++) {
      if (g.rowsPerLayer === 1 && l % g.layersPerColumn) continue; // above each column's first layer
      const [x, y] = cellXY(g, l, h);
      ctx.fillRect(x, y - 5, g.cell, 3);
    }
  }
  if (g.group > 1) {
    // Above each column's first layer: the key/value head each group of query heads reads.
    ctx.fillStyle = theme.muted;
    ctx.font = font(10);
    ctx.textAlign = 'center';
    ctx.textBaseline = 'bottom';
    for (let l = 0; l < g.L; l += g.layersPerColumn) {
      for (let k = 0; k < g.H / g.group; k++) {
        const [x, y] = cellXY(g, l, k * g.group);
        const w = (g.group - 1) * g.pitchX + g.cell;
        ctx.fillText(fitText(ctx, w >= 60 ? `K/V head ${k + 1}` : `K/V ${k + 1}`, w), x + w / 2, y - 8);
        ctx.fillRect(x, y - 8, w, 1);
      }
    }
    ctx.font = font(11);
  }
  for (let l = 0; l < g.L; l++) {
    const maps = layerMaps(input, state, l);
    // (a map of the whole layer, or its thumbnail: its weights' largest is the map's)
    const { heads, rows, cols, maskedFrom, tq, tk } = maps && maps.prep ? { ...maps.prep, tq: maps.prep.rows, tk: maps.prep.cols } : maps ? maps.thumbs : { heads: [] };
    const [x0, y0] = cellXY(g, l, 0);
    ctx.fillStyle = theme.muted;
    ctx.font = font(11);
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    if ((l % g.layersPerColumn) % Math.ceil(12 / g.layerPitch) === 0) ctx.fillText(`L${l + 1}`, x0 - 6, y0 + g.cell / 2); // 12 px apart at least
    for (let h = 0; h < g.H; h++) {
      // A pause every 4 maps: a layer of 12 heads at 512 tokens took 27 ms in one step on a
      // quiet machine, 66 ms on a loaded one.
      if (h && h % 4 === 0) yield;
      const [x, y] = cellXY(g, l, h);
      const m = heads[h];
      if (m) {
        const mx = maxOf(m) || 1;
        drawMatrix(ctx, m, rows, cols, x, y, g.cell, g.cell, (v) => viridis(v / mx));
        blankMasked(ctx, maskedFrom, tq, tk, x, y, g.cell, g.cell, theme);
      }
      const selected = l === state.layer && h === state.head;
      ctx.strokeStyle = selected ? theme.accent : theme.faint;
      ctx.lineWidth = selected ? 3 : 1;
      ctx.strokeRect(x - (selected ? 1.5 : 0.5), y - (selected ? 1.5 : 0.5), g.cell + (selected ? 3 : 1), g.cell + (selected ? 3 : 1));
      if (!g.labelled || ent[l][h] === undefined) continue;
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

/** The read-out of the map under the pointer (a fitted grid draws no labels under its maps). */
export function hoverText(input, state, hit) {
  const ent = entropies(input, state)[hit.layer];
  const H = numHeads(input.result, state.kind);
  return ent && ent[hit.head] !== undefined ? `Layer ${hit.layer + 1}, head ${hit.head + 1}: H = ${ent[hit.head].toFixed(2)} (normalised entropy: 0 focused … 1 uniform)${kvGroupText(input, state.kind, H, hit.head)} · click to open it in the head view` : null;
}

export function describe(input, state) {
  const L = numLayers(input.result, state.kind);
  const H = numHeads(input.result, state.kind);
  const group = kvGroupSize(input.kvHeads, state.kind, H);
  const gqa = group > 1 ? `, in ${H / group} groups of ${group} query heads that share a key/value head` : '';
  return `Model view: ${L} layers × ${H} heads of ${KIND_NAMES[state.kind] || state.kind}${measureTag(state)}${gqa}; click a map to open it in the head view`;
}
