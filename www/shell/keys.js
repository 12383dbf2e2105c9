// The keys of the map, written once for every host: arrows move through layers and heads, a and
// m show all heads or their mean, Escape unpins, digits open the n-th tab, [ ] { } walk the
// view's items with a keyboard cursor and Enter clicks where it stands, PageUp / PageDown move
// what a view scrolls inside itself (the head view's window on a long text). The rules they apply
// (pin, hover, clamping) are the session's.

import { prepareLayer } from '../core/analysis.js';
import { following } from '../views/head.js';
import { viewFor } from '../views/index.js';
import { click, moveCursor, scrollPatch } from './pointer.js';

/** The centre of the cell under the keyboard cursor (CSS px), where it is drawn; else null. */
function cursorPoint(mod, geom, cursor) {
  const off = geom.offset || { row: 0, col: 0 };
  const row = cursor.row - off.row;
  const col = cursor.col - off.col;
  if (row < 0 || col < 0 || row >= geom.rows || col >= geom.cols) return null;
  const r = mod.cellRect(geom, row, col);
  return { x: r.x + r.w / 2, y: r.y + r.h / 2 };
}

/**
 * A key pressed on the map (or anywhere on the page outside text fields). Returns true when
 * the key did something, so the shell can preventDefault(). `geom` is the drawing's geometry
 * (the keyboard cursor moves on it: [ ] { }, Enter clicks where it is).
 */
export function pressKey(session, key, geom = null) {
  if (!session.result) return false;
  const s = session.state;
  const H = session.numHeads() || 1;
  const L = session.numLayers() || 1;
  switch (key) {
    case 'ArrowUp':
      session.patch({ layer: Math.max(0, s.layer - 1) });
      return true;
    case 'ArrowDown':
      session.patch({ layer: Math.min(L - 1, s.layer + 1) });
      return true;
    case 'ArrowLeft':
      session.soloHead((s.head + H - 1) % H);
      return true;
    case 'ArrowRight':
      session.soloHead((s.head + 1) % H);
      return true;
    case 'a':
    case 'A':
      session.allHeads();
      return true;
    case 'm':
    case 'M':
      session.patch({ agg: 'mean' });
      return true;
    case 'Escape':
      session.unpin();
      return true;
    case 'Enter': {
      // A click on the item under the keyboard cursor (the step view's query row, a head of
      // the overview, a point of the query/key space).
      if (!session.cursor || !viewFor(s.view).click(session.cursor, s, session.input())) return false;
      click(session, session.cursor);
      return true;
    }
    case '{':
    case '}':
      return moveCursor(session, key, geom);
    case 'PageUp':
    case 'PageDown':
    case '+':
    case '=':
    case '-': {
      // PageUp / PageDown move what the view scrolls; + and − zoom a view that zooms (the
      // heatmap), as the wheel does, at the keyboard cursor's cell or the centre.
      const view = viewFor(s.view);
      const page = key === 'PageUp' || key === 'PageDown';
      if (!page && !view.zoomKeys) return false;
      const at = !page && geom && session.cursor && view.module.cellRect && 'row' in session.cursor ? cursorPoint(view.module, geom, session.cursor) : null;
      const p = page ? scrollPatch(session, geom, key === 'PageUp' ? -1 : 1, true) : scrollPatch(session, geom, key === '-' ? 3 : -3, false, at);
      if (!p) return false;
      session.patch(p);
      return true;
    }
    case '[':
    case ']': {
      // Head view: pin the previous / next query token (its top weights are read out).
      if (s.view !== 'head') return moveCursor(session, key, geom);
      const prep = prepareLayer(session.shownResult(), s, session.input().specials);
      if (!prep || !prep.rows) return false;
      const i = s.pin && s.pin.side === 'q' ? s.pin.index : -1;
      const n = prep.rows;
      const index = key === ']' ? (i + 1) % n : (i - 1 + n) % n;
      // A long text's window follows the pin (views/head.js).
      session.patch({ pin: { side: 'q', index }, ...(session.input().compare ? {} : following(geom, 'q', index)) });
      return true;
    }
    default: {
      // Digit n opens the n-th tab the reader sees (a hidden tab, such as cross-attention for
      // a model without it, is not counted).
      const n = Number.parseInt(key, 10);
      const v = session.availableViews()[n - 1];
      if (!v || String(n) !== key) return false;
      session.patch({ view: v.id, pin: null });
      return true;
    }
  }
}
