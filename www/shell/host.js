// What every host of attnviz (the page, the <attention-viz> widget, the notebook widget) does
// around the views, written once: one drawing per frame however many state changes came in it,
// drawn in slices (render.js slicedPainter), the geometry that hit tests and keys read, a redraw
// when the map's box is resized or the colour scheme changes, pointer and keys on the map, and
// the choices both hosts' controls offer (controlChoices). A host builds its own DOM, binds it to
// the session and to this shell, and writes what they hold; it never changes the session's
// state itself.

import { stepLabels, tokensFor } from '../core/analysis.js';
import { bindCanvas, slicedPainter } from './render.js';
import { themeOf } from '../views/common.js';
import { tokenLabel } from '../core/tokens.js';
import { pressKey } from './keys.js';
import { kindShown, viewFor } from '../views/index.js';
import { onFrame, timed } from '../base/timing.js';
import { STEP_PART_CHOICES, ZOOM_CHOICES, zoomedBox } from '../core/state.js';
import { headNote } from './prose.js';

/**
 * Mount the drawing loop of one host on `session`.
 * - `name`: the host's name in the timing log ('page', 'widget').
 * - `canvas`, `box`: the map and the box it scrolls in (its width is the drawing's).
 * - `themeRoot`: the element whose CSS custom properties colour the views.
 * - `width()`: the width to draw at, read before `sync()` changes the DOM (no forced layout).
 *   The height a view fits (state.zoom 'fit') is the box's max-height (boxHeight).
 * - `sync()`: write the session's state into the host's controls, before each drawing.
 * - `drawn(geom, result, state, input)`: after a drawing has finished (at 512 tokens, some tasks
 *   after it began).
 * - `failed(error)`: a drawing threw.
 */
export function mountShell({ name, session, canvas, box: boxEl, themeRoot, width, sync, drawn, failed }) {
  const painter = slicedPainter(canvas);
  let geom = null; // where the last drawing put things, for hit tests and keys
  let queued = false;
  let lastWidth = 0;
  let lastHeight = 0;

  function scheduleDraw() {
    if (queued || !session.result) return;
    queued = true;
    onFrame(`${name}:frame`, () => {
      queued = false;
      draw();
    });
  }

  const theme = themeOf(themeRoot, scheduleDraw);

  /** What the view is fitted to: state.zoom of the box's width and max-height. */
  function drawBox() {
    const h = boxHeight(boxEl);
    return { ...zoomedBox(session.state.zoom, width(), h), boxHeight: h };
  }

  function draw() {
    const r = session.result;
    if (!r) return;
    // Maps the view draws that are still in the worker (a long text's other layers): asked for,
    // and drawn when they come (the session's 'state'); the old drawing stays meanwhile.
    if (session.mapsMissing() || session.thumbnailsMissing()) {
      session.mapsLane.run();
      session.thumbnailsLane.run();
      return;
    }
    const s = session.state;
    const box = drawBox();
    lastHeight = box.boxHeight;
    sync();
    const input = session.input();
    painter.draw(s.view, input, session.drawState(), theme(), box, (g) => {
      geom = g;
      session.drawn();
      drawn(g, r, s, input);
    }, failed);
  }

  bindCanvas(canvas, session, () => geom);
  const resize = new ResizeObserver(timed(`${name}:resize`, () => {
    const w = boxEl.clientWidth;
    if (Math.abs(w - lastWidth) > 4) {
      lastWidth = w;
      scheduleDraw();
    }
  }));
  // A taller or shorter window changes the height a view fits (a widget's box's max-height is in
  // vh; the page's follows the room left on the screen, page/map-room.js, which redraws itself).
  const windowResized = timed(`${name}:window-resize`, () => {
    if (Math.abs(boxHeight(boxEl) - lastHeight) > 4) scheduleDraw();
  });

  return {
    draw,
    scheduleDraw,
    theme,
    /** The box views are drawn in now ({ width, height } CSS px: exports lay out in it too). */
    box: drawBox,
    /** The last drawing's geometry (null before the first). */
    geom: () => geom,
    /** A drawing is queued for the next frame or still being made. */
    get busy() {
      return queued || painter.busy;
    },
    /** A drawing is still being made (at 512 tokens it takes several tasks). */
    get drawing() {
      return painter.busy;
    },
    observe: () => {
      resize.observe(boxEl);
      window.addEventListener('resize', windowResized);
    },
    disconnect: () => {
      resize.disconnect();
      window.removeEventListener('resize', windowResized);
    },
    /**
     * A key pressed on the map or, for a host that takes keys page-wide, anywhere outside text
     * fields: true when the session did something with it (the event's default is then prevented).
     */
    key(e) {
      const t = e.target;
      if (e.ctrlKey || e.metaKey || e.altKey) return false;
      if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.isContentEditable)) return false;
      // Arrow keys move between tabs; Enter and space press buttons, links and summaries.
      if (t && t.getAttribute && t.getAttribute('role') === 'tab' && (e.key === 'ArrowLeft' || e.key === 'ArrowRight')) return false;
      if (t && (t.tagName === 'BUTTON' || t.tagName === 'A' || t.tagName === 'SUMMARY') && (e.key === 'Enter' || e.key === ' ')) return false;
      if (!pressKey(session, e.key, geom)) return false;
      e.preventDefault();
      return true;
    },
  };
}

/** The height a view is fitted to: its box's max-height (the page's room left on the first
 *  screen, a widget's `height` or its default), less the box's borders; Infinity for a box
 *  without one. */
export function boxHeight(box) {
  const cs = getComputedStyle(box);
  const h = Number.parseFloat(cs.maxHeight);
  if (!(h > 0)) return Infinity;
  const borders = cs.boxSizing === 'border-box' ? Number.parseFloat(cs.borderTopWidth) + Number.parseFloat(cs.borderBottomWidth) : 0;
  return Math.floor(h - borders);
}

/** How each kind of attention is named in every host's picker. */
export const KIND_LABEL = { encoder_self: 'Encoder self-attention', decoder_self: 'Decoder self-attention', cross: 'Cross-attention' };

/** How a layer is named in every host's picker: "3 of 6". */
export const layerLabel = (layer, layers) => `${layer + 1} of ${layers}`;

/**
 * What the controls of the current view offer, the same for every host: which controls the view
 * has, the layer, head, query and decode-step choices as [value, label] pairs, and what is
 * chosen. A host renders these (selects, swatches, a range) and binds their events to the
 * session.
 */
export function controlChoices(session) {
  const s = session.state;
  const view = viewFor(s.view);
  const ctl = view.controls;
  const kind = kindShown(s);
  const L = session.numLayers();
  const H = session.numHeads();
  // An encoder-decoder's three attentions; none where the view picks its own (cross) or shows none.
  const kinds = view.forceKind || view.kindless || !session.shape ? [] : session.shape.kinds;
  const out = {
    controls: ctl,
    kinds: kinds.map((k) => [k, KIND_LABEL[k] || k]),
    kind: s.kind,
    layers: [...Array(L).keys()].map((l) => [String(l), layerLabel(l, L)]),
    layer: String(s.layer),
    heads: H,
    /** The one value of a single head picker: a head, 'all' (multi-head views), 'kv' (the heads
     *  sharing the selected head's key/value head) or 'mean'. */
    head: ctl.agg && s.agg !== 'head' ? 'mean' : ctl.heads === 'multi' && !s.heads ? 'all' : ctl.heads === 'multi' && session.showsKvGroup() ? 'kv' : String(s.head),
    /** Grouped-query attention in a multi-head view: the toggle that shows the heads sharing the
     *  selected head's key/value head: { label, on }, or null. */
    kvGroup: kvGroupChoice(session, ctl),
    headNote: ctl.heads ? headNote(session) : null,
    queries: [],
    query: String(s.query),
    step: null,
    stepParts: STEP_PART_CHOICES,
    stepPart: s.stepPart,
    zooms: ZOOM_CHOICES,
    zoom: s.zoom,
  };
  if (ctl.query && session.result) out.queries = tokensFor(session.result, kind).q.map((t, i) => [String(i), `${i + 1}: ${tokenLabel(t)}`]);
  if (ctl.step && session.result) {
    // The scrubber counts what the map shows as rows (words when sub-words are merged).
    const labels = stepLabels(session.input(), s);
    const at = Math.min(s.step, Math.max(0, labels.length - 1));
    out.step = { max: Math.max(0, labels.length - 1), value: at, text: labels.length ? `${at + 1} / ${labels.length}: ${labels[at]}` : '' };
  }
  return out;
}

/** The K/V group toggle's label and state (controlChoices' kvGroup). */
function kvGroupChoice(session, ctl) {
  const g = ctl.heads === 'multi' ? session.kvGroup() : null;
  if (!g) return null;
  return { label: `K/V head ${g.kv + 1}: heads ${g.first + 1}–${g.last + 1}`, on: session.showsKvGroup() };
}
