// What the pointer and the keyboard's cursor do on a view's canvas: the view reads out what is
// under them (views/index.js hover) and says what a click changes (its click → a state patch);
// the session keeps the highlight and read-out and applies the patch.

import { moduleFor, viewFor, viewHover } from '../views/index.js';

/** The pointer is over `hit` (the view's hitTest answer, or null). */
export function hover(session, hit) {
  session.showHover(viewHover(session.state, hit, session.input()));
}

/** A click (or Enter) on `hit`. */
export function click(session, hit) {
  const p = viewFor(session.state.view).click(hit, session.state, session.input());
  if (p) session.patch(p);
}

/** Would a click on `hit` leave the view (a model-view map or a head-overview cell opens the
 *  head view)? On a touch screen the first tap on such an item reads it out instead. */
export function clickLeavesView(session, hit) {
  const p = viewFor(session.state.view).click(hit, session.state, session.input());
  return !!(p && p.view && p.view !== session.state.view);
}

/**
 * The keyboard's way to every read-out the pointer gives: the view's next item (its moveHit)
 * from the last one read out, hovered as the pointer would. False where the view has none.
 */
export function moveCursor(session, key, geom) {
  const mod = moduleFor(session.state.view, session.input());
  const hit = mod.moveHit && geom ? mod.moveHit(geom, session.cursor, key) : null;
  if (!hit) return false;
  session.cursor = hit;
  hover(session, hit);
  return true;
}

/**
 * What the view scrolls inside itself, moved (views/index.js scroll: the wheel's `units` at the
 * pointer `at`, or a page by units' sign): the state patch to apply, or null where the view has
 * nothing to move (none in a comparison), so the page scrolls or the key does its default.
 */
export function scrollPatch(session, geom, units, page, at = null) {
  const view = viewFor(session.state.view);
  if (!view.scroll || !geom || !session.result || session.input().compare) return null;
  return view.scroll(geom, units, page, at, session.state);
}
