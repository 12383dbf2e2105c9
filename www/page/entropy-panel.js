// The side panel's entropy chart (plotters-canvas, drawn by a main-thread copy of the wasm):
// one bar per head of the current layer; hover reads a bar's value out, click shows that head.

import * as entropyChart from '../views/entropy-chart.js';
import { kindShown } from '../views/index.js';
import { runSliced } from '../core/slices.js';
import { loadChartWasm } from '../core/chart-wasm.js';
import { listen } from '../base/timing.js';

const HINT = 'Normalised entropy H of each head’s rows (0 focused … 1 uniform). Hover a bar for its value; click it to show that head.';

/** el: { chart (canvas), chartBox, chartReadout }; theme(): the page's colours (the shell's, read
 *  once per colour scheme). Returns { draw } for the page's draw(). */
export function bindEntropyChart(el, session, theme) {
  let wasm = null;
  let loading = false;
  let geom = null;
  let hover = null; // the head under the pointer
  let cancel = null; // stops a chart still being prepared
  const chartState = () => ({ ...session.state, kind: kindShown(session.state), focusHead: hover });

  // Loaded after the first drawing: the worker has fetched the wasm (the same build) by then, so
  // the HTTP cache serves it as it is. The one main-thread instance (chart-wasm.js).
  function load() {
    loading = true;
    loadChartWasm(session.catalog.build)
      .then((m) => {
        wasm = m;
        draw();
      })
      .catch((e) => console.warn('entropy chart unavailable:', e.message));
  }

  function draw() {
    if (!session.result) return;
    if (!wasm && !loading) load();
    el.chartBox.hidden = false;
    if (cancel) cancel();
    const input = session.input();
    const state = chartState();
    const paint = () => {
      cancel = null;
      geom = entropyChart.drawChart(el.chart, wasm, input, state, theme(), Math.max(160, el.chartBox.clientWidth));
      if (hover === null) el.chartReadout.textContent = HINT;
    };
    cancel = runSliced(
      entropyChart.prepare(input, state),
      paint,
      (e) => {
        cancel = null;
        console.warn('entropy chart:', e.message);
      },
      'chart:slice',
    );
  }

  const hitAt = (e) => {
    const r = el.chart.getBoundingClientRect();
    return entropyChart.hitTest(geom, e.clientX - r.left, e.clientY - r.top);
  };
  listen('page', el.chart, 'pointermove', (e) => {
    const hit = hitAt(e);
    el.chart.style.cursor = hit ? 'pointer' : 'default';
    const h = hit ? hit.head : null;
    if (h === hover) return;
    hover = h;
    draw();
    el.chartReadout.textContent = hit ? entropyChart.hoverText(session.input(), chartState(), hit) : HINT;
  });
  listen('page', el.chart, 'pointerleave', () => {
    if (hover === null) return;
    hover = null;
    draw();
  });
  listen('page', el.chart, 'click', (e) => {
    const hit = hitAt(e);
    if (hit) session.soloHead(hit.head);
  });
  // geometry(): the last drawing's bars (none until the wasm has loaded)
  return { draw, geometry: () => geom };
}
