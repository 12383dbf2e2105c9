// Logit lens (nostalgebraist 2020): what the residual stream after each layer would predict if
// the network stopped there, through the model's own final norm and unembedding
// (result.logit_lens, src/nn/probe.rs record_lens_through). A layers × positions table: each cell
// the top token of that layer at that position, shaded by its probability and marked when it is
// already the model's own answer (the last layer's). Hover a cell for its top 5; click pins it
// (state.lensCell), and its top 5 stand under the table with their probabilities.

import { clear, drawTitle, fitHeight, fitText, font, gridStep, textLines, wrapWords } from './common.js';
import { tokensFor } from '../core/analysis.js';
import { tokenLabel } from '../core/tokens.js';

const MIN_COL = 16; // a column at least (its token then shows in the read-out only)
const MAX_COL = 96;
const MIN_ROW = 5; // a row at least (30 layers in a projected lesson's box)
const MAX_ROW = 22;
const TEXT_ROW = 10; // rows from this height on print their token
const LEFT = 64; // the layer labels
const DETAIL_W = 330; // the pinned (or hovered) cell's five candidates: beside the table where it leaves room
const DETAIL_H = 132; // … else under it

const NOTES = {
  decoder_self: 'Each column is a position of the text; each cell, the token that layer would predict next there if the model stopped after it (its final norm and unembedding read the layer’s output). The last row is the model’s own prediction. Shade: the token’s probability; ● it is already the model’s answer.',
  cross: 'Each column is a decode step (headed by the token it chose); each cell, the token that decoder layer would have chosen there if the decoder stopped after it (the output matrix reads the layer’s output). The last row is the model’s own choice. Shade: the token’s probability; ● it is already the model’s answer.',
};

/** The lens of a result, with the tokens its columns follow: { kind, top, labels } or null. */
function lensOf(input) {
  const lens = input.result && input.result.logit_lens;
  if (!lens || !lens.top.length) return null;
  const labels = tokensFor(input.result, lens.kind).q.map(tokenLabel);
  return { kind: lens.kind, top: lens.top, labels, positions: lens.top[0].length };
}

function geometry(ctx, input, state, width) {
  const lens = lensOf(input);
  ctx.font = font(11);
  const note = lens ? wrapWords(ctx, NOTES[lens.kind] || NOTES.decoder_self, width - 16) : [];
  const top = 34 + note.length * 15 + 22; // title, note, column headers
  if (!lens) return { top, note, width, height: 80 };
  const L = lens.top.length;
  const T = lens.positions;
  const col = Math.max(MIN_COL, Math.min(MAX_COL, Math.floor((width - LEFT - 12) / Math.max(1, T))));
  const tableRight = LEFT + T * col;
  const beside = width - tableRight - 24 >= DETAIL_W;
  const rowH = Math.max(MIN_ROW, Math.min(MAX_ROW, Math.floor((fitHeight(state) - top - (beside ? 0 : DETAIL_H) - 8) / Math.max(1, L))));
  const detail = beside ? { x: tableRight + 24, y: top } : { x: 8, y: top + L * rowH + 10 };
  const height = beside ? top + Math.max(L * rowH, DETAIL_H) + 8 : top + L * rowH + DETAIL_H;
  return { top, note, L, T, col, rowH, left: LEFT, detailAt: detail, width: Math.max(width, tableRight + 12), height };
}

export function size(ctx, input, state, width) {
  const g = geometry(ctx, input, state, width);
  return { width: g.width, height: g.height };
}

/** The cell under the pointer, else the pinned one (state.lensCell): { layer, position } or null. */
function focusCell(state) {
  const f = state.focus && state.focus.position !== undefined ? state.focus : null;
  return f || state.lensCell || null;
}

export function draw(ctx, input, state, theme, width) {
  const g = geometry(ctx, input, state, width);
  clear(ctx, g.width, g.height, theme);
  const lens = lensOf(input);
  drawTitle(ctx, 'Logit lens · what each layer would predict', theme);
  if (!lens) {
    textLines(ctx, ['Computing the logit lens…'], 8, 30, theme, 12);
    return { width: g.width, height: g.height };
  }
  textLines(ctx, g.note, 8, 26, theme, 11, g.width - 16);
  const last = lens.top[g.L - 1];
  // Column headers: the token each column follows (or, for a translator, chose).
  ctx.font = font(11, 600);
  ctx.fillStyle = theme.fg;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'bottom';
  for (let p = 0; p < g.T; p++) ctx.fillText(fitText(ctx, lens.labels[p] ?? '', g.col - 4), g.left + (p + 0.5) * g.col, g.top - 4);
  const accent = theme.accent;
  const every = Math.ceil(12 / g.rowH); // layer labels 12 px apart at least
  for (let l = 0; l < g.L; l++) {
    const y = g.top + l * g.rowH;
    ctx.font = font(10);
    ctx.fillStyle = theme.muted;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    if (l % every === 0 || l === g.L - 1) ctx.fillText(l === g.L - 1 ? `L${l + 1} out` : `L${l + 1}`, g.left - 6, y + g.rowH / 2);
    for (let p = 0; p < g.T; p++) {
      const best = lens.top[l][p] && lens.top[l][p][0];
      if (!best) continue;
      const x = g.left + p * g.col;
      const final = last[p] && last[p][0] && last[p][0].id === best.id;
      ctx.fillStyle = accent;
      ctx.globalAlpha = 0.08 + 0.6 * best.p;
      ctx.fillRect(x + 1, y + 1, g.col - 2, g.rowH - 2);
      ctx.globalAlpha = 1;
      if (g.rowH < TEXT_ROW || g.col < 28) {
        // Too small for its token: a dot where it is already the model's answer.
        if (final) {
          ctx.fillStyle = theme.fg;
          ctx.fillRect(x + g.col / 2 - 1, y + g.rowH / 2 - 1, 2, 2);
        }
        continue;
      }
      ctx.fillStyle = theme.fg;
      ctx.textAlign = 'left';
      ctx.font = font(Math.min(11, g.rowH - 3), final ? 600 : 400);
      ctx.fillText(fitText(ctx, `${final ? '● ' : ''}${tokenLabel(best.token)}`, g.col - 6), x + 3, y + g.rowH / 2);
    }
  }
  const f = focusCell(state);
  if (f && f.layer < g.L && f.position < g.T) {
    ctx.strokeStyle = theme.fg;
    ctx.lineWidth = 2;
    ctx.strokeRect(g.left + f.position * g.col + 0.5, g.top + f.layer * g.rowH + 0.5, g.col - 1, g.rowH - 1);
  }
  // The focused cell's five candidates, as bars.
  const { x: dx, y: dy } = g.detailAt;
  if (g.rowH < TEXT_ROW || g.col < 28) {
    // A fitted box too small for the tokens (SmolLM2's 30 layers): say how to read them.
    textLines(ctx, ['The cells are too small for their tokens here: hover one, or pick Zoom → width.'], dx, dy + 112, theme, 11, Math.min(DETAIL_W + 80, g.width - dx - 8));
  }
  const detail = f && f.layer < g.L && f.position < g.T ? lens.top[f.layer][f.position] : null;
  ctx.textBaseline = 'top';
  ctx.textAlign = 'left';
  if (!detail) {
    const hintLines = wrapWords(ctx, 'Hover a cell for its five most probable tokens; click to keep them here.', Math.min(DETAIL_W, g.width - dx - 8));
    textLines(ctx, hintLines, dx, dy, theme, 11, g.width - dx - 8);
    return { ...g, detail: null };
  }
  ctx.font = font(12, 600);
  ctx.fillStyle = theme.fg;
  ctx.fillText(fitText(ctx, cellTitle(lens, f), Math.min(DETAIL_W + 80, g.width - dx - 8)), dx, dy);
  const barW = Math.max(40, Math.min(180, g.width - dx - 200));
  detail.forEach((t, i) => {
    const y = dy + 20 + i * 18;
    ctx.font = font(12);
    ctx.fillStyle = theme.fg;
    ctx.fillText(fitText(ctx, tokenLabel(t.token), 100), dx, y);
    ctx.fillStyle = accent;
    ctx.globalAlpha = 0.6;
    ctx.fillRect(dx + 108, y + 2, Math.max(1, barW * t.p), 12);
    ctx.globalAlpha = 1;
    ctx.fillStyle = theme.fg;
    ctx.font = font(12, 400, true);
    ctx.fillText(t.p.toFixed(3), dx + 116 + barW, y);
  });
  return { ...g, detail: { layer: f.layer, position: f.position, top: detail.map(({ token, p }) => ({ token, p })) } };
}

/** "Layer 12 after “capital”" (or, for a translator, "at the step that chose “gato”"). */
function cellTitle(lens, f) {
  const where = lens.kind === 'cross' ? `at the step that chose “${lens.labels[f.position] ?? ''}”` : `after “${lens.labels[f.position] ?? ''}”`;
  return `Layer ${f.layer + 1}${f.layer === lens.top.length - 1 ? ' (the model’s output)' : ''} ${where}`;
}

/** → { layer, position } under (x, y), or null. */
export function hitTest(geom, x, y) {
  if (!geom || !geom.col) return null;
  const position = Math.floor((x - geom.left) / geom.col);
  const layer = Math.floor((y - geom.top) / geom.rowH);
  if (position < 0 || layer < 0 || position >= geom.T || layer >= geom.L) return null;
  return { layer, position };
}

/** The keyboard cursor's next cell (common.js gridStep: [ ] along a layer, { } across layers). */
export function moveHit(geom, hit, key) {
  const at = geom && geom.col ? gridStep(hit && 'layer' in hit ? [hit.layer, hit.position] : null, geom.L, geom.T, key) : null;
  return at && { layer: at[0], position: at[1] };
}

/** A cell's read-out: its five candidates with their probabilities. */
export function hoverText(input, state, hit) {
  const lens = lensOf(input);
  const cell = lens && hit && lens.top[hit.layer] && lens.top[hit.layer][hit.position];
  if (!cell) return null;
  return `${cellTitle(lens, hit)}: ${cell.map((t) => `${tokenLabel(t.token)} ${t.p.toFixed(3)}`).join(', ')}`;
}

export function describe(input) {
  const lens = lensOf(input);
  if (!lens) return 'Logit lens: computing';
  const L = lens.top.length;
  // The first layer whose top token at the last position is already the model's answer.
  const p = lens.positions - 1;
  const answer = lens.top[L - 1][p] && lens.top[L - 1][p][0];
  let from = L - 1; // the first layer from which on the answer stays on top
  while (answer && from > 0 && lens.top[from - 1][p] && lens.top[from - 1][p][0] && lens.top[from - 1][p][0].id === answer.id) from--;
  const said = answer ? ` At the last ${lens.kind === 'cross' ? 'step' : 'position'} the model's answer “${tokenLabel(answer.token)}” (${answer.p.toFixed(3)}) is the top token from layer ${from + 1} on.` : '';
  return `Logit lens: ${L} layers × ${lens.positions} ${lens.kind === 'cross' ? 'decode steps' : 'positions'}, each cell the token that layer would predict.${said}`;
}
