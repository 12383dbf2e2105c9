// Glue shared by the page and the widget: pick a view, size the canvas for it, draw, label it;
// and export the same view as PNG or SVG.

import * as cross from './views/cross.js';
import * as grid from './views/grid.js';
import * as head from './views/head.js';
import * as heatmap from './views/heatmap.js';
import * as step from './views/step.js';
import { prepareCanvas } from './views/common.js';
import { SvgContext } from './svg.js';

export const VIEW_MODULES = { head, model: grid, heatmap, cross, step };
export const VIEW_NAMES = {
  head: 'Head view',
  model: 'Model view',
  heatmap: 'Heatmap',
  cross: 'Cross-attention',
  step: 'Step view',
};

/** Draw view `name` into a canvas `width` CSS pixels wide; returns geometry for hit tests. */
export function render(canvas, name, input, state, theme, width) {
  const v = VIEW_MODULES[name] || head;
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
  const v = VIEW_MODULES[name] || head;
  const plain = { ...input, plotters: null };
  const probe = new SvgContext(1, 1);
  const sz = v.size(probe, plain, state, width);
  const ctx = new SvgContext(sz.width, sz.height);
  v.draw(ctx, plain, state, theme, sz.width, sz.height);
  return ctx.toString();
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
