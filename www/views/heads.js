// Head overview: every layer × head of one attention kind as a cell coloured by the head's label
// (what its attention mostly does on this text: sink, previous token, …; src/heads.rs) and
// shaded by the score behind that label, with a legend. Hover reads out the head's scores;
// click opens it in the head view. The data is the model's heads() answer (input.heads), not the
// attention maps. The sortable ranking beside it is DOM (www/shell/heads-table.js).

import { clear, drawTitle, fitHeight, fitText, font, gridStep, textLines, wrapWords } from './common.js';
import { KIND_NAMES } from './head.js';
import { kvGroupOf, kvGroupSize } from '../core/analysis.js';
import { HEAD_LABELS, SCORES } from '../core/head-scores.js';

/** Labels in legend order (core/head-scores.js), with their colours (Okabe–Ito, readable by colour-blind readers). */
const COLOR = { sink: '#d55e00', previous: '#0072b2', next: '#56b4e9', self: '#009e73', delimiter: '#cc79a7', induction: '#e69f00', broad: '#7f7f7f', mixed: '#b8b8b8' };
export const LABELS = HEAD_LABELS.map(([k, text]) => [k, COLOR[k], text]);

export { SCORES };

const SUBTITLE = 'Colour: what the head mostly does on this text; shade: the share of weight behind it (pale = weak). Hover a cell for its scores, click to open the head.';
const MIN_CELL = 16;
const MAX_CELL = 40;
const FIT_CELL = 9; // the smallest a cell gets to fit the box (its layer numbers are drawn every few)
const LEFT = 40;
const LEGEND_SIDE_W = 280; // the legend in one column beside the grid
const GROUP_GAP = 6; // px between the query heads of two key/value heads (GQA)
const GROUP_HEAD = 14; // the row above the head numbers that names each key/value head

/** The heads of the state's kind, as a layers × heads lookup. */
function headsOf(input, state) {
  const all = (input.heads && input.heads.heads) || [];
  const list = all.filter((h) => h.kind === state.kind);
  const L = list.reduce((m, h) => Math.max(m, h.layer + 1), 0);
  const H = list.reduce((m, h) => Math.max(m, h.head + 1), 0);
  const at = new Map(list.map((h) => [h.layer * H + h.head, h]));
  return { list, L, H, at };
}

/** A colour `c` (#rrggbb) mixed with the background by `t` (0 = background, 1 = the colour). */
function shade(c, t, bg) {
  const p = (s, i) => Number.parseInt(s.slice(1 + 2 * i, 3 + 2 * i), 16);
  const b = bg.length === 7 ? bg : '#ffffff';
  const k = 0.25 + 0.75 * Math.max(0, Math.min(1, t));
  const ch = (i) => Math.round(p(b, i) + (p(c, i) - p(b, i)) * k);
  return `rgb(${ch(0)},${ch(1)},${ch(2)})`;
}

function geometry(ctx, input, state, width) {
  const { L, H } = headsOf(input, state);
  ctx.font = font(11);
  const subtitle = wrapWords(ctx, SUBTITLE, width - 16);
  // Grouped-query attention: the query heads stand in groups under the key/value head they read.
  const group = kvGroupSize(input.kvHeads, state.kind, H);
  const gap = group > 1 ? GROUP_GAP : 0;
  const gaps = (H / group - 1) * gap;
  const top = 34 + subtitle.length * 15 + 18 + (group > 1 ? GROUP_HEAD : 0); // title, subtitle, K/V heads, head numbers
  const boxH = fitHeight(state);
  // Cells as wide as `room` px allows and as tall as the box (state.boxHeight) allows, legend aside.
  const cellFor = (room, legendH) => Math.max(FIT_CELL, Math.min(Math.max(MIN_CELL, Math.min(MAX_CELL, Math.floor((room - gaps) / Math.max(1, H)))), Math.floor((boxH - top - 12 - legendH) / Math.max(1, L))));
  // The legend in two columns under the grid, or in one beside it where that fits the box and the
  // grid does not (SmolLM2's 30 layers in a 390 px box) or gets larger cells.
  const belowH = Math.ceil(LABELS.length / 2) * 18 + 8;
  const besideH = LABELS.length * 18 + 8;
  const below = cellFor(width - LEFT - 12, belowH);
  const beside = cellFor(width - LEFT - 36 - LEGEND_SIDE_W, 0);
  const belowFits = top + L * below + 12 + belowH <= boxH;
  const aside = top + besideH + 12 <= boxH && (!belowFits || beside > below);
  const cell = aside ? beside : below;
  const gridH = L * cell;
  const legend = aside
    ? { x: LEFT + H * cell + gaps + 24, y: top, columns: 1, colW: LEGEND_SIDE_W }
    : { x: 8, y: top + gridH + 12, columns: 2, colW: Math.max(140, Math.floor((width - 16) / 2)) };
  const height = aside ? top + Math.max(gridH, besideH) + 12 : legend.y + belowH;
  // x of each head's column (after the gaps between the key/value heads' groups before it)
  const headX = Array.from({ length: H }, (_, h) => h * cell + Math.floor(h / group) * gap);
  return { L, H, cell, top, left: LEFT, group, gap, headX, subtitle, legend, width: Math.max(width, LEFT + H * cell + gaps + 12), height };
}

/** Left edge of head h's column. */
const headX = (g, h) => g.left + g.headX[h];

export function size(ctx, input, state, width) {
  if (!input.heads) return { width, height: 80 };
  const g = geometry(ctx, input, state, width);
  return { width: g.width, height: g.height };
}

/** → { layer, head } under (x, y), or null. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.cell) return null;
  const k = Math.floor((x - geom.left) / (geom.group * geom.cell + geom.gap)); // the key/value head's group
  const h = k * geom.group + Math.floor((x - geom.left - k * (geom.group * geom.cell + geom.gap)) / geom.cell);
  const l = Math.floor((y - geom.top) / geom.cell);
  if (h < 0 || l < 0 || h >= geom.H || l >= geom.L || h >= (k + 1) * geom.group) return null;
  return { layer: l, head: h };
}

/** The keyboard cursor's next (layer, head) cell (common.js gridStep). */
export function moveHit(geom, hit, key) {
  const at = geom && geom.cell ? gridStep(hit && 'layer' in hit ? [hit.layer, hit.head] : null, geom.L, geom.H, key) : null;
  return at && { layer: at[0], head: at[1] };
}

export function draw(ctx, input, state, theme, width, height) {
  clear(ctx, width, height, theme);
  if (!input.heads) {
    textLines(ctx, ['Computing the head scores…'], 8, 8, theme, 13);
    return {};
  }
  const g = geometry(ctx, input, state, width);
  const { at } = headsOf(input, state);
  drawTitle(ctx, fitText(ctx, `Head overview · ${KIND_NAMES[state.kind] || state.kind}`, width - 16), theme);
  textLines(ctx, g.subtitle, 8, 26, theme, 11, width - 16);
  ctx.font = font(10);
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'bottom';
  for (let h = 0; h < g.H; h++) if (g.cell >= 22 || h % 2 === 0) ctx.fillText(String(h + 1), headX(g, h) + g.cell / 2, g.top - 3);
  if (g.group > 1) {
    // Each key/value head over the query heads that read it, with a bracket.
    for (let k = 0; k < g.H / g.group; k++) {
      const x0 = headX(g, k * g.group);
      const w = g.group * g.cell;
      ctx.fillText(fitText(ctx, w >= 60 ? `K/V head ${k + 1}` : `K/V ${k + 1}`, w), x0 + w / 2, g.top - 17);
      ctx.fillRect(x0 + 1, g.top - 16, w - 2, 1);
    }
  }
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  const every = Math.ceil(11 / g.cell); // layer numbers 11 px apart at least (a fitted 30-layer grid)
  for (let l = 0; l < g.L; l += every) ctx.fillText(`L${l + 1}`, g.left - 6, g.top + (l + 0.5) * g.cell);
  for (let l = 0; l < g.L; l++) {
    for (let h = 0; h < g.H; h++) {
      const s = at.get(l * g.H + h);
      if (!s) continue;
      ctx.fillStyle = shade(COLOR[s.label] || COLOR.mixed, s.score, theme.bg);
      ctx.fillRect(headX(g, h) + 1, g.top + l * g.cell + 1, g.cell - 2, g.cell - 2);
    }
  }
  // The selected head (state.layer, state.head) and the hovered one are outlined.
  const outline = (l, h, color, w) => {
    ctx.strokeStyle = color;
    ctx.lineWidth = w;
    ctx.strokeRect(headX(g, h) + 0.5, g.top + l * g.cell + 0.5, g.cell - 1, g.cell - 1);
  };
  if (state.layer < g.L && state.head < g.H) outline(state.layer, state.head, theme.fg, 1.5);
  const f = state.focus;
  if (f && f.layer !== undefined && f.layer < g.L && f.head < g.H) outline(f.layer, f.head, theme.accent, 2.5);
  // Legend: swatches in one or two columns.
  ctx.font = font(11);
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  const { columns, colW } = g.legend;
  LABELS.forEach(([key, color, text], i) => {
    const x = g.legend.x + (i % columns) * colW;
    const y = g.legend.y + Math.floor(i / columns) * 18 + 8;
    ctx.fillStyle = color;
    ctx.fillRect(x, y - 6, 12, 12);
    ctx.fillStyle = theme.fg;
    ctx.fillText(fitText(ctx, `${key}: ${text}`, colW - 24), x + 18, y);
  });
  return g;
}

const num = (v) => (v === null || v === undefined ? '–' : v.toFixed(3));

/** The scores of one head as one line of text. */
export function scoresText(s) {
  const parts = SCORES.filter(([k]) => k !== 'score' && s[k] !== null && s[k] !== undefined).map(([k]) => `${k} ${num(s[k])}`);
  return `Layer ${s.layer + 1}, head ${s.head + 1}: ${s.label} (${num(s.score)}) · ${parts.join(' · ')}`;
}

export function hoverText(input, state, hit) {
  if (!hit || !input.heads) return null;
  const { at, H } = headsOf(input, state);
  const s = at.get(hit.layer * H + hit.head);
  return s ? scoresText(s) + kvGroupText(input, state.kind, H, hit.head) : null;
}

/** " · reads K/V head k with heads a–b" under grouped-query attention, else ''. */
export function kvGroupText(input, kind, H, h) {
  const g = kvGroupOf(input.kvHeads, kind, H, h);
  return g ? ` · reads K/V head ${g.kv + 1} with heads ${g.first + 1}–${g.last + 1}` : '';
}

export function describe(input, state) {
  if (!input.heads) return 'Head overview: computing the head scores';
  const { list, L, H } = headsOf(input, state);
  const counts = {};
  for (const s of list) counts[s.label] = (counts[s.label] || 0) + 1;
  const summary = LABELS.filter(([k]) => counts[k]).map(([k]) => `${counts[k]} ${k}`).join(', ');
  const group = kvGroupSize(input.kvHeads, state.kind, H);
  const gqa = group > 1 ? ` The query heads stand in ${H / group} groups of ${group}, each under the key/value head they share.` : '';
  return `Head overview, ${KIND_NAMES[state.kind] || state.kind}: ${L} layers × ${H} heads; ${summary}.${gqa} Hover a cell for its scores, click to open the head.`;
}

/** The heads of the state's kind sorted by `sort` ("key" descending, "key.asc" ascending). */
export function ranked(input, state) {
  const { list } = headsOf(input, state);
  const [key, dir] = String(state.sort || 'score').split('.');
  const sign = dir === 'asc' ? 1 : -1;
  const val = (s) => (s[key] === null || s[key] === undefined ? -Infinity : s[key]);
  return list.slice().sort((a, b) => {
    const va = val(a);
    const vb = val(b);
    if (va === vb) return a.layer - b.layer || a.head - b.head;
    if (va === -Infinity) return 1;
    if (vb === -Infinity) return -1;
    return sign * (va - vb);
  });
}
