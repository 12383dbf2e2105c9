// Glue shared by the page and the widget: pick a view, size the canvas for it, draw, label it;
// and export the same view as PNG or SVG.

import { canvasScale, context2d, prepareCanvas } from '../views/common.js';
import { moduleFor, viewFor } from '../views/index.js';
import { SvgContext } from '../views/svg.js';
import { COMPARE_VIEWS } from '../core/views.js';
import { drain, isSteps, NEW_TASK, runSliced } from '../core/slices.js';
import { capText, TEXT_MAX } from '../core/state.js';
import { listen } from '../base/timing.js';
import { click, clickLeavesView, hover, scrollPatch } from './pointer.js';
import { exportLabel } from './prose.js';

const LARGE_CANVAS_PX = 1_000_000;
const WHEEL_TOKENS = 3; // units of a view's scroll (tokens of the head view's window) a wheel notch makes

/**
 * The state a view draws with in a box of box.width × box.height CSS px: state.boxHeight is the
 * height it fits its layout into (Infinity: as tall as it takes). The width is the views' own
 * argument.
 */
export const fitted = (state, box) => (state.boxHeight === box.height ? state : { ...state, boxHeight: box.height });

/**
 * Draw view `name` into a canvas fitted to `box` ({ width, height } CSS px: state.zoom's, see
 * zoomedBox), as steps (slices.js): first the view's preparation (the canvas keeps its last
 * drawing meanwhile), then the drawing. Returns geometry for hit tests. A view's `prepare` and
 * `draw` may each be a generator (paused between units of work) or a plain function.
 */
export function* renderSteps(canvas, name, input, drawState, theme, box, { buffered = false } = {}) {
  const v = moduleFor(name, input);
  const state = fitted(drawState, box);
  const width = box.width;
  const t0 = performance.now();
  if (v.prepare) yield* v.prepare(input, state, width);
  const sz = v.size(context2d(canvas), input, state, width);
  // A canvas's first operation after a resize allocates its pixels (~10–20 ns each), so on a
  // large canvas that starts a task of its own, and so does the copy of the finished drawing.
  const large = sz.width * sz.height * canvasScale() ** 2 > LARGE_CANVAS_PX;
  // Off screen only when the size stays (typing, hovering): a new size clears the canvas anyway,
  // and a second large canvas would double the allocation.
  buffered = buffered && canvas.style.width === `${Math.round(sz.width)}px` && canvas.style.height === `${Math.round(sz.height)}px`;
  if (large) yield NEW_TASK;
  const ctx = buffered ? backBuffer(canvas, sz.width, sz.height) : prepareCanvas(canvas, sz.width, sz.height);
  if (large) yield NEW_TASK;
  const drawn = v.draw(ctx, input, state, theme, sz.width, sz.height);
  const geom = (isSteps(drawn) ? yield* drawn : drawn) || {};
  if (buffered) {
    if (large) yield NEW_TASK;
    const shown = prepareCanvas(canvas, sz.width, sz.height);
    shown.setTransform(1, 0, 0, 1, 0, 0);
    const w = canvas.width;
    const h = canvas.height;
    shown.clearRect(0, 0, w, h); // a theme's background may be transparent
    shown.drawImage(ctx.canvas, 0, 0, w, h, 0, 0, w, h);
  }
  geom.drawMs = performance.now() - t0;
  canvas.setAttribute('aria-label', v.describe(input, state, geom));
  canvas.dataset.view = name;
  canvas.dataset.compare = input.compare ? '1' : '';
  canvas.dataset.kind = state.kind;
  canvas.dataset.layer = String(state.layer);
  canvas.dataset.head = String(state.head);
  return geom;
}

const backBuffers = new WeakMap();

/** The off-screen twin of a canvas, at least width×height CSS px (it only grows: no new
 *  allocation per drawing), as a ctx scaled to CSS px. */
function backBuffer(canvas, width, height) {
  let b = backBuffers.get(canvas);
  if (!b) backBuffers.set(canvas, (b = document.createElement('canvas')));
  const dpr = canvasScale();
  const w = Math.round(Math.max(1, width) * dpr);
  const h = Math.round(Math.max(1, height) * dpr);
  if (b.width < w || b.height < h) {
    b.width = Math.max(b.width, w);
    b.height = Math.max(b.height, h);
  }
  const ctx = context2d(b);
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  return ctx;
}

/**
 * The drawings of one canvas, each run in slices (slices.js): a new draw() stops one still
 * running, so only the newest state is ever drawn. `busy` while one runs. Once a drawing has
 * taken more than one slice, the next ones are made off screen and shown whole, so hovering or
 * typing at 512 tokens never shows a half-made frame.
 */
export function slicedPainter(canvas) {
  let running = null; // { cancel } of the drawing still running
  let slow = false; // the last drawing took several slices
  return {
    get busy() {
      return running !== null;
    },
    draw(name, input, state, theme, box, done, failed) {
      if (running) running.cancel();
      // The first slice runs inside runSliced(), and may finish there: `run` is cleared at the end.
      const run = { cancel: () => {} };
      const end = () => {
        if (running === run) running = null;
      };
      running = run;
      run.cancel = runSliced(
        renderSteps(canvas, name, input, state, theme, box, { buffered: slow }),
        (geom, slices) => {
          end();
          slow = slices > 1;
          done(geom);
        },
        (e) => {
          end();
          failed(e);
        },
        'draw:slice',
      );
    },
  };
}

/** The same view as an SVG document string, laid out for `box` as on screen; `description` (what
 *  it shows) goes into its <desc>. */
export function toSvg(name, input, drawState, theme, box, description = '') {
  const v = moduleFor(name, input);
  const state = fitted(drawState, box);
  const width = box.width;
  const probe = new SvgContext(1, 1);
  const sz = v.size(probe, input, state, width);
  const ctx = new SvgContext(sz.width, sz.height);
  if (description) ctx.describe(description);
  const drawn = v.draw(ctx, input, state, theme, sz.width, sz.height);
  if (isSteps(drawn)) drain(drawn);
  return ctx.toString();
}

/**
 * Pointer input on a view's canvas, the same for the page and the widget: the view's hitTest
 * under the pointer goes to pointer.js's hover, a click to its click. geomOf() → the last geometry.
 * A finger or pen has no hover: touching an item reads it out, and the read-out stays when the
 * finger lifts (the browser then reports the pointer leaving) until another item is touched.
 * Where a click would leave the view (a model-view map, a head-overview cell), the first tap on an
 * item only reads it out, and a second tap on the same item opens it, so its read-out is reachable.
 */
export function bindCanvas(canvas, session, geomOf) {
  const hitAt = (e) => {
    const geom = geomOf();
    if (!session.result || !geom) return null;
    const r = canvas.getBoundingClientRect();
    return moduleFor(session.state.view, session.input()).hitTest(geom, e.clientX - r.left, e.clientY - r.top);
  };
  listen('canvas', canvas, 'pointermove', (e) => {
    const hit = hitAt(e);
    canvas.style.cursor = hit && viewFor(session.state.view).click(hit, session.state, session.input()) ? 'pointer' : 'default';
    hover(session, hit);
  });
  let touched = null; // the item the last tap read out (JSON of its hit), on a touch screen
  let secondTap = false; // this touch is on that item again
  listen('canvas', canvas, 'pointerdown', (e) => {
    if (e.pointerType === 'mouse') {
      touched = null;
      secondTap = false;
      return;
    }
    const hit = hitAt(e);
    const key = JSON.stringify(hit);
    secondTap = !!hit && key === touched;
    touched = key;
    hover(session, hit);
  });
  listen('canvas', canvas, 'pointerleave', (e) => {
    if (e.pointerType === 'mouse') hover(session, null);
  });
  // The wheel moves what a view scrolls inside itself (the head view's window on a long text, the
  // heatmap's zoom): WHEEL_TOKENS units a notch (100 px, or 3 lines), a trackpad's small steps
  // summed until they make one. Where the view has nothing to move that way, the page scrolls.
  let wheelTokens = 0;
  listen('canvas', canvas, 'wheel', (e) => {
    if (!e.deltaY) return;
    if (e.deltaMode === 2) {
      const p = scrollPatch(session, geomOf(), e.deltaY, true); // pages
      if (!p) return;
      e.preventDefault();
      session.patch(p);
      return;
    }
    const tokens = e.deltaMode === 1 ? e.deltaY : (e.deltaY / 100) * WHEEL_TOKENS;
    if (Math.sign(tokens) !== Math.sign(wheelTokens)) wheelTokens = 0;
    wheelTokens += tokens;
    const whole = Math.trunc(wheelTokens);
    const r = canvas.getBoundingClientRect();
    // Less than a unit so far: kept from the page, if the view can move that way at all.
    const p = scrollPatch(session, geomOf(), whole || Math.sign(tokens), false, { x: e.clientX - r.left, y: e.clientY - r.top });
    if (!p) return;
    e.preventDefault();
    if (!whole) return;
    wheelTokens -= whole;
    session.patch(p);
  }, { passive: false });
  listen('canvas', canvas, 'click', (e) => {
    const hit = hitAt(e);
    if (touched !== null && !secondTap && clickLeavesView(session, hit)) return; // first tap: read-out
    touched = null;
    click(session, hit);
  });
}

/** A text box that types into the session, holding at most TEXT_MAX characters (a longer
 *  paste, or a script setting the value, is cut; textLimitNotice says so). */
export function bindTextBox(box, session) {
  box.maxLength = TEXT_MAX;
  // The browser cuts a paste to maxLength without a word: a paste longer than the room left is
  // noted (session.textCut), so that textLimitNotice says so, and only then.
  let pasted = false;
  listen('text', box, 'paste', (e) => {
    const text = e.clipboardData ? e.clipboardData.getData('text') : '';
    const room = TEXT_MAX - (box.value.length - Math.abs(box.selectionEnd - box.selectionStart));
    pasted = text.length > room;
  });
  listen('text', box, 'input', () => {
    const over = box.value.length > TEXT_MAX;
    if (over) box.value = capText(box.value, TEXT_MAX);
    session.textCut = over || pasted;
    pasted = false;
    session.setText(box.value);
  });
}

/** The "Compare with…" box of the page or the widget: its text is sentence B (session.setCompare). */
export function bindCompareBox(box, session) {
  box.maxLength = TEXT_MAX;
  listen('compare', box, 'input', () => session.setCompare(box.value));
}

/** Trigger a download of a Blob (no request leaves the page: it is an object URL). */
export function download(blob, filename) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

/** The canvas as a PNG; `description` (what it shows) goes into an iTXt "Description" chunk. */
export async function pngBlob(canvas, description = '') {
  const png = await new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG export failed'))), 'image/png'));
  return description ? withText(new Uint8Array(await png.arrayBuffer()), 'Description', description) : png;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes) => {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};

/** A PNG with an iTXt chunk (UTF-8 text, uncompressed: PNG spec §11.3.4.5) before its IEND. */
function withText(png, keyword, text) {
  const enc = new TextEncoder();
  // keyword \0, compression flag 0, method 0, language tag "" \0, translated keyword "" \0, text
  const data = new Uint8Array([...enc.encode(keyword), 0, 0, 0, 0, 0, ...enc.encode(text)]);
  const chunk = new Uint8Array(12 + data.length);
  const view = new DataView(chunk.buffer);
  view.setUint32(0, data.length);
  chunk.set(enc.encode('iTXt'), 4);
  chunk.set(data, 8);
  view.setUint32(8 + data.length, crc32(chunk.subarray(4, 8 + data.length)));
  const iend = png.length - 12; // the IEND chunk closes every PNG the canvas writes
  return new Blob([png.subarray(0, iend), chunk, png.subarray(iend)], { type: 'image/png' });
}

/**
 * Save the view as a file, the page's and the widget's one way: 'png' (the canvas's pixels, with an
 * iTXt Description of what drew them) or 'svg' (the view drawn again as vectors in the `box` it
 * is drawn in, the same sentence in its <desc>); the file name says the model, weights, view,
 * kind, layer, head and the generation step scrubbed. → the sentence to show.
 */
export async function saveView(kind, { canvas, session, theme, box }) {
  const label = exportLabel(session);
  if (kind === 'png') {
    download(await pngBlob(canvas, label.description), exportName(session.state, 'png', label));
    return `PNG saved (${canvas.width}×${canvas.height} px).`;
  }
  const svg = toSvg(session.state.view, session.input(), { ...session.state, focus: session.state.pin }, theme, box, label.description);
  download(new Blob([svg], { type: 'image/svg+xml' }), exportName(session.state, 'svg', label));
  return 'SVG saved.';
}

/** attnviz-<model>[-int8|-f32]-<view>[-compare[-<B's weights or model>]]-<kind>-l<layer>-<head or mean>[-step<k>].<ext>
 *  (the tags: exportLabel's) */
export function exportName(state, ext, { weightsTag = '', stepTag = '' } = {}) {
  const what = state.agg === 'head' ? `h${state.head + 1}` : state.agg;
  const vs = state.compareModel ? `-${state.compareModel === 'exact' ? 'f32' : state.compareModel}` : '';
  const cmp = (state.compare || state.compareModel) && COMPARE_VIEWS.includes(state.view) ? `-compare${vs}` : '';
  return `attnviz-${state.model}${weightsTag ? `-${weightsTag}` : ''}-${state.view}${cmp}-${state.kind}-l${state.layer + 1}-${what}${stepTag ? `-${stepTag}` : ''}.${ext}`;
}
