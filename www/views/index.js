// The views registry: the one list of views. Each entry says what the view is called, which
// attention kinds it can show, which controls it uses, how a hit on its canvas changes the view
// state, and what the side panel says. The page's tabs, the widget and permalinks read this list;
// nothing else names the views.

import { VIEW_SPECS } from '../core/views.js';
import * as compare from './compare.js';
import * as cross from './cross.js';
import * as grid from './grid.js';
import * as head from './head.js';
import * as heads from './heads.js';
import * as heatmap from './heatmap.js';
import * as lens from './lens.js';
import * as parts from './parts.js';
import * as positions from './positions.js';
import * as qk from './qk.js';
import * as step from './step.js';

const sameToken = (a, b) => !!a && !!b && a.side === b.side && a.index === b.index;

/**
 * What each view adds to its entry of core/views.js (the fields there: id, label, kinds, controls,
 * the data it needs):
 *   module             — the drawing module (size, draw, hitTest, describe)
 *   hover(hit, s)      → { focus } (a transient highlight) or { text } (a side-panel read-out)
 *   click(hit, s)      → a state patch, or null
 *   scroll(geom, units, page, at, s) → a state patch for the wheel (units: 3 a notch, at: the
 *                        pointer in CSS px) or PageUp/PageDown (page: true, units' sign), or null:
 *                        nothing to move (the page scrolls instead); from state s, which a quick
 *                        second notch has changed before the geometry of its drawing is there
 *   zoomKeys           — + and − are the wheel (3 units) at the keyboard cursor, or the centre
 *   side(input, s, focus) → { title, hint, items: [{ label, weight }] }
 */
const BEHAVIOURS = [
  {
    id: 'head',
    module: head,
    // A long text's minimap strips: read out, and a click moves the window there.
    hover: (hit, s, input) => (hit && hit.strip ? { focus: null, text: head.hoverText(input, s, hit) } : { focus: hit, text: null }),
    click(hit, s) {
      if (hit && hit.strip) return { win: hit.win };
      const { at, ...token } = hit || {};
      const pin = hit && !sameToken(hit, s.pin) ? token : null;
      return at !== undefined ? { pin, win: at } : { pin };
    },
    scroll: (geom, units, page, at, s) => head.scrolled(geom, units, page, s.win),
    side(input, s, focus) {
      const f = focus || s.pin;
      if (!f) return { title: 'Details', hint: 'Hover a token to see only its lines and its top weights; click to pin it.', items: [] };
      const tokLabel = f.side === 'q' ? 'query' : 'key';
      // Comparing: the weights of the side the pointer is on (B's own; A's for A and the difference).
      const b = input.compare && input.compare.result && f.panel === 'b';
      const mix = head.combined(b ? compare.inputB(input) : input, s);
      return {
        title: `${input.compare ? (b ? 'B: ' : 'A: ') : ''}Top weights ${f.side === 'q' ? 'from' : 'to'} this ${tokLabel}${s.pin && sameToken(f, s.pin) ? ' (pinned)' : ''}${mix.short ? ` · ${mix.short}` : ''}`,
        hint: mix.long,
        items: head.topWeights(b ? compare.inputB(input) : input, s, f, 8),
      };
    },
  },
  {
    id: 'model',
    module: grid,
    hover: (hit, s, input) => ({ text: hit ? grid.hoverText(input, s, hit) : null }),
    click: (hit) => (hit ? { view: 'head', layer: hit.layer, head: hit.head, heads: [hit.head], agg: 'head' } : null),
  },
  {
    id: 'heatmap',
    module: heatmap,
    hover: (hit, s, input) => ({ focus: hit, text: hit ? heatmap.hoverText(input, s, hit) : null }),
    click: () => null,
    // A long text's map: the wheel (and + / −) zooms to exact cells, PageUp / PageDown move.
    scroll: (geom, units, page, at, s) => heatmap.zoomBy(geom, units, page, at, s.hz),
    zoomKeys: true,
  },
  {
    id: 'cross',
    module: cross,
    hover: () => ({}),
    click: (hit) => (hit ? { step: hit.step } : null),
  },
  {
    id: 'step',
    module: step,
    hover: (hit, s, input) => ({ focus: hit, text: hit ? step.hoverText(input, s, hit) : null }),
    click: (hit) => (hit && hit.queryRow !== null ? { query: hit.queryRow } : null),
  },
  {
    id: 'positions',
    module: positions,
    hover: (hit, s, input) => ({ focus: hit, text: hit ? positions.hoverText(input, s, hit) : null }),
    click: () => null,
    side(input) {
      const t = input.positions;
      return {
        title: 'Positional encodings',
        hint: t ? `${positions.paperNote(t)} Hover the heatmap or a line for the value added at one position and dim.` : 'Loading the position table…',
        items: [],
      };
    },
  },
  {
    id: 'heads',
    module: heads,
    hover: (hit, s, input) => ({ focus: hit, text: hit ? heads.hoverText(input, s, hit) : null }),
    click: (hit) => (hit ? { view: 'head', layer: hit.layer, head: hit.head, heads: [hit.head], agg: 'head', pin: null } : null),
  },
  {
    id: 'qk',
    module: qk,
    hover: (hit, s, input) => ({ focus: hit, text: hit ? qk.hoverText(input, s, hit) : null }),
    click: (hit, s) => ({ pin: hit && !sameToken(hit, s.pin) ? hit : null }),
  },
  {
    id: 'lens',
    module: lens,
    hover: (hit, s, input) => ({ focus: hit, text: hit ? lens.hoverText(input, s, hit) : null }),
    click: (hit, s) => ({ lensCell: hit && !(s.lensCell && s.lensCell.layer === hit.layer && s.lensCell.position === hit.position) ? hit : null }),
  },
  {
    id: 'parts',
    module: parts,
    hover: (hit, s, input) => ({ focus: hit, text: hit ? parts.hoverText(input, s, hit) : null }),
    click: (hit, s) => ({ pin: hit && !sameToken(hit, s.pin) ? hit : null }),
  },
];

/** The one list of views: each entry of core/views.js with its drawing, hover and click. */
export const VIEWS = VIEW_SPECS.map((spec) => ({ ...spec, ...BEHAVIOURS.find((b) => b.id === spec.id) }));

export { kindShown, VIEW_IDS, viewAvailable } from '../core/views.js';

/** The entry of a view id (the head view for an unknown id). */
export function viewFor(id) {
  return VIEWS.find((v) => v.id === id) || VIEWS[0];
}

/** The drawing module for a view and its input: the comparison of two sentences (compare.js)
 *  when the session gives a second one (input.compare), else the view's own. */
export function moduleFor(id, input) {
  return input && input.compare ? compare : viewFor(id).module;
}

/** A view's hover answer, for a hit in one panel of a comparison too (hit.panel 'a' | 'b' | 'd'). */
export function viewHover(s, hit, input) {
  if (hit && hit.panel === 'd') return { focus: hit, text: compare.diffText(input, s, hit) };
  return viewFor(s.view).hover(hit, s, hit && hit.panel === 'b' ? compare.inputB(input) : input);
}
