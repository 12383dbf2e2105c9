// The map box takes the height left on the first screen (issue 44: a projected lesson shows the
// text and the whole map without scrolling), not a fixed share of the window: what stands above
// it (the model row, the text, a translation or SmolLM2's generation row, the tabs) differs by
// model and changes as it is used. The box's max-height is the CSS variable --map-room, which
// shell/host.js's boxHeight reads as the height a view fits; a phone's stylesheet keeps 70vh.

import { listen, timed } from '../base/timing.js';

/** The least height the box gets, as a share of the window's, however much stands above it: the
 *  views fit a box this low with smaller rows and maps (at 1280×720 the translator leaves it 341 px). */
const LEAST_SHARE = 0.4;
/** Kept free under the box, so its bottom border is on the screen. */
const GAP_PX = 8;

/**
 * Keep `wrap`'s --map-room at the height from its top (at scroll 0) to the window's bottom, when
 * the window or any of `above` (the elements that push the box down) changes size; `changed()`
 * after each new height (a redraw: views are laid out for the height they fit).
 */
export function bindMapRoom(wrap, above, changed) {
  let room = 0;
  const measure = () => {
    const top = wrap.getBoundingClientRect().top + window.scrollY;
    const next = Math.max(Math.round(LEAST_SHARE * window.innerHeight), Math.floor(window.innerHeight - top - GAP_PX));
    if (Math.abs(next - room) < 2) return;
    room = next;
    wrap.style.setProperty('--map-room', `${next}px`);
    changed();
  };
  const observer = new ResizeObserver(timed('page:map-room', measure));
  for (const e of above) observer.observe(e);
  listen('page', window, 'resize', measure);
  measure();
}
