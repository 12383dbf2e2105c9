// Glue shared by the page and the widget: pick a view, size the canvas for it, draw, label it;
// and export the same view as PNG or SVG.

import { prepareCanvas } from './views/common.js';
import { viewFor } from './views/index.js';
import { SvgContext } from './svg.js';

/** Draw view `name` into a canvas `width` CSS pixels wide; returns geometry for hit tests. */
export function render(canvas, name, input, state, theme, width) {
  const v = viewFor(name).module;
  const t0 = performance.now();
  const sz = v.size(canvas.getContext('2d'), input, state, width);
  const ctx = prepareCanvas(canvas, sz.width, sz.height);
  const geom = v.draw(ctx, input, state, theme, sz.width, sz.height) || {};
  geom.drawMs = performance.now() - t0;
  canvas.setAttribute('aria-label', v.describe(input, state));
  canvas.dataset.view = name;
  canvas.dataset.kind = state.kind;
  canvas.dataset.layer = String(state.layer);
  canvas.dataset.head = String(state.head);
  return geom;
}

/** The same view as an SVG document string. */
export function toSvg(name, input, state, theme, width) {
  const v = viewFor(name).module;
  const probe = new SvgContext(1, 1);
  const sz = v.size(probe, input, state, width);
  const ctx = new SvgContext(sz.width, sz.height);
  v.draw(ctx, input, state, theme, sz.width, sz.height);
  return ctx.toString();
}

/**
 * Pointer input on a view's canvas, the same for the page and the widget: the view's hitTest
 * under the pointer goes to session.hover, a click to session.click. geomOf() → the last geometry.
 */
export function bindCanvas(canvas, session, geomOf) {
  const hitAt = (e) => {
    const geom = geomOf();
    if (!session.result || !geom) return null;
    const r = canvas.getBoundingClientRect();
    return viewFor(session.state.view).module.hitTest(geom, e.clientX - r.left, e.clientY - r.top);
  };
  canvas.addEventListener('pointermove', (e) => {
    const hit = hitAt(e);
    canvas.style.cursor = hit && viewFor(session.state.view).click(hit, session.state, session.input()) ? 'pointer' : 'default';
    session.hover(hit);
  });
  canvas.addEventListener('pointerleave', () => session.hover(null));
  canvas.addEventListener('click', (e) => session.click(hitAt(e)));
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

export function pngBlob(canvas) {
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG export failed'))), 'image/png'));
}

export function exportName(state, ext) {
  const what = state.agg === 'head' ? `h${state.head + 1}` : state.agg;
  return `attnviz-${state.model}-${state.view}-${state.kind}-l${state.layer + 1}-${what}.${ext}`;
}
