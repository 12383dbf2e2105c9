// Compare two sentences (issue 12), or two weight sets or models on one text (issue 26): the head
// view or the heatmap of A (the text, by the model in use) and of B (the "Compare with…" text; or
// the text by the model's other weights or another model, input.compare.what === 'model') side by
// side, drawn from one view state (layer, head, measure, filters, hovered token), and under them
// the difference map B − A where the two maps align. Not a view of its own: the registry (index.js, moduleFor) draws the head view and the
// heatmap through this module while input.compare is set (session.js sets it).
//
// Alignment rule (said in the drawing and the side panel): the maps are compared position by
// position, so A and B need as many tokens (after the filters); positions whose tokens differ are
// labelled "a/b". Otherwise no difference map, and the drawing says why ("7 vs 9 tokens").

import { isSteps } from '../core/slices.js';
import { clear, diverging, fitHeight, fitText, fmt, font, maxAbs, maxOf, measureTag } from './common.js';
import * as head from './head.js';
import * as heatmap from './heatmap.js';

const BASES = { head, heatmap };
const GAP = 16;
const LABEL_H = 24; // the "A: …" / "B: …" line above each side
const MSG_H = 44; // the line that says why there is no difference map
const MIN_SIDE = 240; // px: the least width a side gets beside the other (else they stack)
// The least token label: each map gets half the box, which drew them at 8–10 px, unreadable
// projected; the maps grow (the box scrolls) rather than shrink their labels under this, up to
// READABLE_TOKENS tokens a side (at 512, 12 px labels made canvases of 7,000 px a side).
const LABEL_PX = 12;
const READABLE_TOKENS = 64;
const tokenCount = (r) => (r ? r.tokens.source.length + (r.tokens.target || []).length : 0);

/** The input of side B: A's, with B's result. */
export const inputB = (input) => ({ ...input, result: input.compare.result });

const steps = function* (x) {
  return isSteps(x) ? yield* x : x;
};

const meanMemo = new WeakMap(); // prep → Map(heads → their mean): one array per map, so diffMemo hits

/**
 * The matrix a side shows, as the difference map compares it: the heatmap's; in the head view
 * with its heads selected, the one head drawn, or the mean of the heads drawn.
 */
function matrixOf(input, state) {
  if (state.view !== 'head' || state.agg !== 'head') return heatmap.matrixFor(input, state);
  const hs = state.heads && state.heads.length ? state.heads : null;
  if (!hs) return heatmap.matrixFor(input, { ...state, agg: 'mean' }); // every head drawn
  const m = heatmap.matrixFor(input, { ...state, head: hs[0] });
  if (!m || hs.length === 1) return m;
  const { prep } = m;
  let per = meanMemo.get(prep);
  if (!per) meanMemo.set(prep, (per = new Map()));
  const key = hs.join('.');
  if (!per.has(key)) {
    const mat = new Float32Array(prep.rows * prep.cols);
    for (const h of hs) for (let i = 0; i < mat.length; i++) mat[i] += prep.heads[h][i] / hs.length;
    per.set(key, mat);
  }
  const mat = per.get(key);
  return { prep, mat, max: maxOf(mat) || 1, title: `Layer ${prep.layer + 1} · mean of heads ${hs.map((h) => h + 1).join(', ')} · ${head.KIND_NAMES[prep.kind] || prep.kind}${measureTag(state)}` };
}

const diffMemo = new WeakMap(); // A's matrix → Map(B's matrix → the difference): hovers reuse it

/**
 * The difference map of a state: { m (a heatmap matrix: prep, mat, max, lo, title), text (the
 * alignment rule as applied) } or { m: null, text (why there is none) }; null while B is computed.
 */
export function difference(input, state) {
  const c = input.compare;
  if (!c || !c.result) return null;
  const mA = matrixOf(input, state);
  const mB = matrixOf(inputB(input), state);
  if (!mA || !mB) return { m: null, text: `No attention of this kind${c.what === 'text' ? ' in one of the two sentences' : ', layer or head in one of the two'}: no difference map.` };
  const a = mA.prep;
  const b = mB.prep;
  if (a.rows !== b.rows || a.cols !== b.cols) {
    const sizes = a.rows === a.cols && b.rows === b.cols ? `${a.cols} vs ${b.cols} tokens` : `${a.rows}×${a.cols} vs ${b.rows}×${b.cols} query × key tokens`;
    return { m: null, text: `${sizes}: no difference map (A and B are compared position by position, so they need as many tokens each).` };
  }
  let per = diffMemo.get(mA.mat);
  if (!per) diffMemo.set(mA.mat, (per = new WeakMap()));
  if (!per.has(mB.mat)) {
    const mat = new Float32Array(mA.mat.length);
    for (let i = 0; i < mat.length; i++) mat[i] = mB.mat[i] - mA.mat[i];
    const both = (la, lb) => la.map((t, i) => (t === lb[i] ? t : `${t}/${lb[i]}`));
    const rowLabels = both(a.rowLabels, b.rowLabels);
    const colLabels = both(a.colLabels, b.colLabels);
    const changed = (la, lb) => la.filter((t, i) => t !== lb[i]).length;
    // Self-attention: queries and keys are the same tokens; cross-attention: target and source.
    const self = a.rows === a.cols && changed(a.rowLabels, a.colLabels) === 0;
    const differ = self ? changed(a.colLabels, colLabels) : changed(a.rowLabels, rowLabels) + changed(a.colLabels, colLabels);
    const n = self ? `${a.cols}` : `${a.rows} queries × ${a.cols} keys`;
    const text = differ
      ? `Aligned position by position: A and B have as many tokens (${n}), ${differ} position${differ === 1 ? '' : 's'} hold${differ === 1 ? 's' : ''} different tokens (labelled A/B).`
      : `Aligned token by token: A and B have the same tokens (${n}).`;
    const M = Math.max(maxAbs(mat), 1e-6); // a symmetric scale: white is "no change"
    const prep = { rows: a.rows, cols: a.cols, rowLabels, colLabels, rowGroups: rowLabels.map((_, i) => [i]), notes: [text] };
    per.set(mB.mat, { m: { prep, mat, max: M, lo: -M, A: mA.mat, B: mB.mat }, text });
  }
  const d = per.get(mB.mat);
  // The title is of the state (the same matrices are drawn under another title while norms are computed).
  return { ...d, m: { ...d.m, title: `Difference B − A · ${mA.title}` } };
}

/** Where the two sides and the difference map go: side by side, or on a narrow screen (a phone,
 *  less than MIN_SIDE for each) A above B, each as wide as the box. */
function layout(ctx, input, state, width) {
  const base = BASES[state.view];
  const stacked = Math.floor((width - GAP) / 2) < MIN_SIDE;
  const half = stacked ? width : Math.floor((width - GAP) / 2);
  // A fitted drawing (state.boxHeight) gives the sides and the difference map an equal share
  // (the line saying why there is no map takes its own height only).
  const d = difference(input, state);
  const rows = stacked ? 2 : 1; // rows of sides
  const shares = d && d.m ? rows + 1 : rows;
  const free = fitHeight(state) - rows * (LABEL_H + GAP) - (d && d.m ? 0 : MSG_H);
  const readable = Math.max(tokenCount(input.result), tokenCount(input.compare.result)) <= READABLE_TOKENS;
  const part = { ...state, boxHeight: Math.max(160, Math.floor(free / shares)), minLabelPx: readable ? LABEL_PX : 0 };
  const sA = base.size(ctx, input, part, half);
  const sB = input.compare.result ? base.size(ctx, inputB(input), part, half) : { width: half, height: 80 };
  const [bX, bY] = stacked ? [0, LABEL_H + sA.height + GAP + LABEL_H] : [sA.width + GAP, LABEL_H];
  const dY = (stacked ? bY + sB.height : LABEL_H + Math.max(sA.height, sB.height)) + GAP;
  const sD = d && d.m ? heatmap.matrixSize(ctx, d.m, width, part.boxHeight, part.minLabelPx) : { width, height: MSG_H };
  const sidesWidth = stacked ? Math.max(sA.width, sB.width) : sA.width + GAP + sB.width;
  return { base, half, part, stacked, sA, sB, bX, bY, d, dY, sD, width: Math.max(width, sidesWidth, sD.width), height: dY + sD.height };
}

/** Both sides' matrices and their difference made ahead, each in steps of its own (slices.js):
 *  at 512 tokens, B's map and the difference took one 30–60 ms task when made by size(). */
export function* prepare(input, state, width) {
  const base = BASES[state.view];
  yield* base.prepare(input, state, width);
  if (!input.compare.result) return;
  yield;
  yield* base.prepare(inputB(input), state, width);
  yield;
  difference(input, state);
  yield;
}

export function size(ctx, input, state, width) {
  const L = layout(ctx, input, state, width);
  return { width: L.width, height: L.height };
}

/** The side's name and its sentence, above it (typed text: drawn as text, never markup). */
function sideLabel(ctx, name, text, x, y, w, theme) {
  ctx.font = font(13, 600);
  ctx.fillStyle = theme.fg;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  const t = text.length > 300 ? Array.from(text).slice(0, 300).join('') : text; // more never fits
  ctx.fillText(fitText(ctx, `${name}: ${t}`, w - 16), x + 8, y + 4);
}

export function* draw(ctx, input, state, theme, width) {
  const c = input.compare;
  const L = layout(ctx, input, state, width);
  clear(ctx, L.width, L.height, theme);
  const geom = { width: L.width, height: L.height, view: state.view, panels: [] };
  const side = function* (name, inp, x, y, w) {
    ctx.save();
    ctx.translate(x, y);
    const g = yield* steps(L.base.draw(ctx, inp, L.part, theme, L.half));
    ctx.restore();
    geom.panels.push({ panel: name, x, y, w, h: g.height, g, module: L.base });
  };
  sideLabel(ctx, c.nameA ? `A (${c.nameA})` : 'A', c.textA, 0, 0, L.sA.width, theme);
  yield* side('a', input, 0, LABEL_H, L.sA.width);
  // B as drawn: a newer text or measure is being computed meanwhile (its drawing stays till then).
  sideLabel(ctx, c.nameB ? `B (${c.nameB})` : 'B', `${c.drawnText ?? c.text}${c.stale ? ' · updating…' : ''}`, L.bX, L.bY - LABEL_H, L.sB.width, theme);
  if (c.result) yield* side('b', inputB(input), L.bX, L.bY, L.sB.width);
  else {
    ctx.font = font(12);
    ctx.fillStyle = theme.muted;
    const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;
    const waiting = c.progress ? `Loading B’s weights: ${mib(c.progress.loaded)} / ${mib(c.progress.total)}…` : 'Computing B…';
    ctx.fillText(fitText(ctx, c.error ? `B could not be computed: ${c.error}` : waiting, L.sB.width - 16), L.bX + 8, L.bY + 8);
  }
  ctx.strokeStyle = theme.faint;
  ctx.lineWidth = 1;
  ctx.beginPath();
  if (L.stacked) {
    ctx.moveTo(0, L.bY - LABEL_H - GAP / 2);
    ctx.lineTo(L.width, L.bY - LABEL_H - GAP / 2);
  } else {
    ctx.moveTo(L.bX - GAP / 2, 0);
    ctx.lineTo(L.bX - GAP / 2, L.dY - GAP / 2);
  }
  ctx.moveTo(0, L.dY - GAP / 2);
  ctx.lineTo(L.width, L.dY - GAP / 2);
  ctx.stroke();
  yield;
  if (L.d && L.d.m) {
    // The diverging palette: blue where B attends less than A, red where more.
    const m = { ...L.d.m, color: (v) => diverging(v / L.d.m.max, theme.dark) };
    // A query token focused on either side outlines its row of differences.
    const f = state.focus;
    const st = f && f.side === 'q' && !('row' in f) ? { ...L.part, focus: null, pin: { side: 'q', index: f.index } } : L.part;
    ctx.save();
    ctx.translate(0, L.dY);
    const g = yield* heatmap.drawMatrixView(ctx, m, st, theme, L.width);
    ctx.restore();
    geom.panels.push({ panel: 'd', x: 0, y: L.dY, w: g.width, h: g.height, g, module: heatmap });
  } else {
    ctx.font = font(13, 600);
    ctx.fillStyle = theme.fg;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'top';
    ctx.fillText(fitText(ctx, L.d ? L.d.text : 'Difference map: waiting for B…', L.width - 16), 8, L.dY + 6);
  }
  return geom;
}

/**
 * What is under (x, y): the side's own hit with panel 'a' or 'b', or a difference cell
 * { row, col, panel: 'd' } that also names its query token (side 'q'), so the head view
 * focuses that query on both sides.
 */
export function hitTest(geom, x, y) {
  if (!geom || !geom.panels) return null;
  for (const p of geom.panels) {
    const lx = x - p.x;
    const ly = y - p.y;
    if (lx < 0 || ly < 0 || lx > p.w || ly > p.h) continue;
    const hit = p.module.hitTest(p.g, lx, ly);
    if (!hit) return null;
    return p.panel === 'd' ? { ...hit, panel: 'd', side: 'q', index: hit.row } : { ...hit, panel: p.panel };
  }
  return null;
}

/** The read-out of a difference cell: both tokens, B − A, and A's and B's values. */
export function diffText(input, state, hit) {
  const d = difference(input, state);
  if (!d || !d.m || hit.row >= d.m.prep.rows || hit.col >= d.m.prep.cols) return d ? d.text : '';
  const k = hit.row * d.m.prep.cols + hit.col;
  const signed = (v) => `${v >= 0 ? '+' : ''}${fmt(v, 3)}`;
  return `B − A, query “${d.m.prep.rowLabels[hit.row]}” (${hit.row + 1}) → key “${d.m.prep.colLabels[hit.col]}” (${hit.col + 1}): ${signed(d.m.mat[k])} (A ${fmt(d.m.A[k], 3)}, B ${fmt(d.m.B[k], 3)})`;
}

/** What the side panel notes: the alignment rule as applied, or why there is no difference map. */
export function note(input, state) {
  const d = difference(input, state);
  return d ? `Comparing A with B. ${d.text}` : 'Comparing A with B: computing B…';
}

export function describe(input, state) {
  const base = BASES[state.view];
  const c = input.compare;
  const d = difference(input, state);
  const b = c.result ? base.describe(inputB(input), state) : 'being computed';
  const diff = d && d.m ? `${d.m.title} (diverging: blue where B attends less, red where more, ±${fmt(d.m.max, 3)}). ${d.text}` : d ? d.text : '';
  const cut = (t) => t.replace(/\.$/, '');
  const what = c.what === 'model' ? `Comparison of ${c.nameA} (A) and ${c.nameB} (B) on one text` : c.what === 'supplied' ? `Comparison of ${c.nameA} (A) and ${c.nameB} (B)` : 'Comparison of two sentences';
  return `${what}. A: ${cut(base.describe(input, state))}. B: ${cut(b)}. ${diff}`;
}
