// Masked cells are drawn as masked, not as weight 0 (issue 44, item 3): in SmolLM2's model view
// the upper triangle of every map (keys after the query, taken out of the softmax) is blank like
// the canvas behind the maps, as in the heatmap; the lower triangle holds the weights' colours.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser, setViewport } from './harness.mjs';
import { waitDrawn } from './cli-helpers.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

const TEXT = 'The cat sat'; // 3 tokens: cells of a few px even in small maps

/** The canvas's colour at CSS px (x, y) of canvas#view, as [r, g, b]. */
const pixel = (page, x, y) => page.evaluate(([sx, sy]) => {
  const c = document.querySelector('canvas#view');
  const dpr = c.width / c.getBoundingClientRect().width;
  return Array.from(c.getContext('2d').getImageData(Math.floor(sx * dpr), Math.floor(sy * dpr), 1, 1).data.slice(0, 3));
}, [x, y]);

const close = (a, b) => Math.max(...a.map((v, i) => Math.abs(v - b[i]))) <= 3;

test('model view, SmolLM2: every map’s masked upper triangle is blank like the background, its lower triangle coloured', { timeout: 240_000 }, async () => {
  const app = await openApp(browser, `${server.url}#${new URLSearchParams({ m: 'smollm2-135m', v: 'model', t: TEXT })}`, { timeout: 180_000 });
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 1600 });
    await waitDrawn(page, (t) => window.attnvizDebug.text === t && window.attnvizDebug.view === 'model' && window.attnvizDebug.modelGrid(), TEXT);
    const g = await page.evaluate(() => window.attnvizDebug.modelGrid());
    const n = (await page.evaluate(() => window.attnvizDebug.tokens)).length;
    assert.ok(n >= 3 && g.cell / n >= 3, `${n} tokens in ${g.cell} px maps`);
    const bg = await pixel(page, g.left + g.cell + (g.pitchX - g.cell) / 2, g.top + g.cell / 2); // between two maps
    const step = g.cell / n;
    for (const [layer, head] of [[0, 0], [3, 5], [g.layers - 1, g.heads - 1]]) {
      const x0 = g.left + g.headX[head] + Math.floor(layer / g.layersPerColumn) * g.columnPitch;
      const y0 = g.top + (layer % g.layersPerColumn) * g.layerPitch + Math.floor(head / g.cols) * g.pitchY;
      // Row 0 sees key 0 only: its last key is masked; the last row sees every key.
      const masked = await pixel(page, x0 + (n - 0.5) * step, y0 + 0.5 * step);
      const seen = await pixel(page, x0 + 0.5 * step, y0 + (n - 0.5) * step);
      assert.ok(close(masked, bg), `L${layer + 1} H${head + 1}: a masked cell is rgb(${masked}), the background rgb(${bg})`);
      assert.ok(!close(seen, bg), `L${layer + 1} H${head + 1}: a visible cell is coloured, not blank`);
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
