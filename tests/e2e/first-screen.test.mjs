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

// The least height the page gives the map box (www/page/map-room.js's MIN_ROOM_PX): below it the
// step view's table and SmolLM2's 30-layer model view would no longer fit legibly.
const MIN_ROOM = 500;

/** Where the text box and the map box are at scroll 0, and the viewport's size. */
const firstScreen = (page) => page.evaluate(() => {
  window.scrollTo(0, 0);
  const rect = (id) => document.getElementById(id).getBoundingClientRect().toJSON();
  const room = Number.parseFloat(getComputedStyle(document.getElementById('canvas-wrap')).maxHeight);
  return { text: rect('text'), map: rect('canvas-wrap'), room, width: innerWidth, height: innerHeight, scrollY };
});

const inside = (r, s) => r.top >= 0 && r.left >= 0 && r.bottom <= s.height && r.right <= s.width;

test('at 1280×720 and 1920×1080 the text box and the whole map box of the default view are on the first screen for every default model', async () => {
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
        if (height - s.map.top >= MIN_ROOM + 8) assert.ok(s.map.top + s.room <= height, `the room left on the screen: ${where}`);
        assert.deepEqual(app.pageErrors, []);
      } finally {
        await app.close();
      }
    }
  }
});
