// Issue 44, item 11: a comparison's token labels were drawn at 8–10 px (each map gets half the
// box), unreadable on a projector. At 1280×720, in the head view and the heatmap, the labels of
// A, B and the difference map are at least 12 CSS px.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser } from './harness.mjs';
import { waitDrawn } from './cli-helpers.mjs';

let server;
let browser;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
});

const A = 'The animal didn’t cross the street because it was too tired to walk any further today.';
const B = 'The animal didn’t cross the road because it was far too wide to walk across today.';

test('a comparison’s token labels are at least 12 px in the head view and the heatmap', async () => {
  const app = await openApp(browser, `${server.url}#m=minilm-l6&t=${encodeURIComponent(A)}&c=${encodeURIComponent(B)}`);
  try {
    const { page } = app;
    assert.deepEqual(page.viewportSize(), { width: 1280, height: 720 });
    for (const view of ['head', 'heatmap']) {
      await page.click(`[role=tab][data-view=${view}]`);
      await waitDrawn(page, (v) => window.attnvizDebug.view === v && (window.attnvizDebug.comparePanels() || []).length === 3, view);
      const panels = await page.evaluate(() => window.attnvizDebug.comparePanels());
      for (const p of panels) assert.ok(p.g.labelPx >= 12, `${view}, panel ${p.panel}: labels at ${p.g.labelPx} px`);
      console.log(`# ${view}: labels ${panels.map((p) => `${p.panel} ${p.g.labelPx} px`).join(', ')}`);
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
