// Issue 44 item 1: a projected lesson shows the map without scrolling. At 1280×720 and 1920×1080
// the text box and the whole map box of the default view are on the first screen (scroll 0) for
// every default model, whatever that model adds above the map (the translator's translation and
// attention-kind tabs, SmolLM2's generation panel).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MODELS as MODELS, PROJECTOR_SCREENS as SCREENS, openApp, useServerAndBrowser } from './harness.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

// A sentence a teacher might type, longer than the examples: 17–22 tokens in each model.
const TYPED = 'The quick brown fox jumps over the lazy dog while the cat watches from the warm window sill.';

/** Where the text box and the map box are at scroll 0, and the viewport's size. */
const firstScreen = (page) => page.evaluate(() => {
  window.scrollTo(0, 0);
  const rect = (id) => document.getElementById(id).getBoundingClientRect().toJSON();
  const room = Number.parseFloat(getComputedStyle(document.getElementById('canvas-wrap')).maxHeight);
  return { text: rect('text'), map: rect('canvas-wrap'), room, width: innerWidth, height: innerHeight, scrollY };
});

const inside = (r, s) => r.top >= 0 && r.left >= 0 && r.bottom <= s.height && r.right <= s.width;

test('at 1280×720 and 1920×1080 the text box and the whole map box of the default view are on the first screen for every default model, also with a longer sentence typed', async () => {
  for (const [width, height] of SCREENS) {
    for (const model of MODELS) {
      const app = await openApp(browser, `${server.url}#m=${model}&w=int8`, { contextOptions: { viewport: { width, height } } });
      try {
        await app.page.waitForFunction(() => window.attnvizDebug.drawCount > 0 && !window.attnvizDebug.drawing);
        const s = await firstScreen(app.page);
        const where = `${model} at ${width}×${height}: ${JSON.stringify(s)}`;
        assert.equal(s.scrollY, 0, where);
        assert.ok(inside(s.text, s), `the text box: ${where}`);
        assert.ok(inside(s.map, s), `the map box: ${where}`);
        // A box squeezed to a strip would pass the above: the height views fit (the box's
        // max-height; a short drawing leaves the box shorter) stays usable, and where the screen
        // has the room, all of it is on the screen.
        assert.ok(s.room >= 0.4 * height, `the map box's height: ${where}`);
        assert.ok(s.map.top + s.room <= height, `the room left on the screen: ${where}`);
        // A longer sentence typed: the map is drawn smaller, and stays on the first screen (the
        // box of at least 500 px ran 30–150 px below a 720 px screen).
        await app.page.fill('#text', TYPED);
        await app.page.waitForFunction((t) => window.attnvizDebug.text === t && !window.attnvizDebug.drawing && !window.attnvizDebug.computing, TYPED);
        const typed = await firstScreen(app.page);
        assert.ok(inside(typed.map, typed), `the map box with a longer sentence: ${model} at ${width}×${height}: ${JSON.stringify(typed)}`);
        assert.deepEqual(app.pageErrors, []);
      } finally {
        await app.close();
      }
    }
  }
});
