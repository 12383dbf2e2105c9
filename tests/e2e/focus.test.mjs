// Keyboard focus on the map (issue 8, defect 10): tabbing to the page's map canvas shows a focus
// ring that can be seen, i.e. pixels around the map's box change to a colour unlike the page's
// background on all four sides, not only a computed outline that its scrolling wrapper clips away.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mountWidget, openApp, useServerAndBrowser, setViewport } from './harness.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** Press Tab until `selector` has the focus (at most `max` presses); true when it did. */
async function tabTo(page, selector, max = 60) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((sel) => document.activeElement === document.querySelector(sel), selector)) return true;
  }
  return false;
}

/**
 * Compare two PNG screenshots of the same clip (decoded in the page) in a band of `band` px on
 * either side of the map box's edges: for each side, the fraction of positions along it where
 * some pixel changed to a colour far from the page background.
 */
function ringCoverage(page, before, after, clip, box, band) {
  return page.evaluate(async ([b64a, b64b, c, bx, bd]) => {
    const decode = async (b64) => {
      const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
      const bmp = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
      const cv = new OffscreenCanvas(bmp.width, bmp.height);
      const ctx = cv.getContext('2d');
      ctx.drawImage(bmp, 0, 0);
      return ctx.getImageData(0, 0, bmp.width, bmp.height);
    };
    const [A, B] = [await decode(b64a), await decode(b64b)];
    const bg = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
    const px = (img, x, y) => {
      const i = (Math.round(y) * img.width + Math.round(x)) * 4;
      return [img.data[i], img.data[i + 1], img.data[i + 2]];
    };
    const dist = (p, q) => Math.abs(p[0] - q[0]) + Math.abs(p[1] - q[1]) + Math.abs(p[2] - q[2]);
    const changedAt = (x, y) => {
      if (x < 0 || y < 0 || x >= A.width || y >= A.height) return false;
      const a = px(A, x, y);
      const b = px(B, x, y);
      return dist(a, b) > 60 && dist(b, bg) > 100;
    };
    // The box in screenshot coordinates.
    const L = bx.x - c.x;
    const T = bx.y - c.y;
    const R = L + bx.width;
    const Bm = T + bx.height;
    const side = (n, at) => {
      let hit = 0;
      for (let i = 0; i < n; i++) {
        for (let d = -bd; d <= bd; d++) {
          if (at(i, d)) {
            hit++;
            break;
          }
        }
      }
      return hit / n;
    };
    const w = Math.floor(bx.width) - 2 * bd;
    const h = Math.floor(bx.height) - 2 * bd;
    return {
      top: side(w, (i, d) => changedAt(L + bd + i, T + d)),
      bottom: side(w, (i, d) => changedAt(L + bd + i, Bm - 1 + d)),
      left: side(h, (i, d) => changedAt(L + d, T + bd + i)),
      right: side(h, (i, d) => changedAt(R - 1 + d, T + bd + i)),
    };
  }, [before.toString('base64'), after.toString('base64'), clip, box, band]);
}

test('tabbing to the map shows a visible focus ring around it', async () => {
  const app = await openApp(browser, server.url);
  try {
    const { page } = app;
    await setViewport(page, { width: 1280, height: 900 }); // (it waits for the redraw)
    // The visible part of the map: its scrolling wrapper's box (the canvas may be larger).
    const box = await page.evaluate(() => {
      const r = document.getElementById('canvas-wrap').getBoundingClientRect();
      return { x: r.x, y: r.y, width: r.width, height: Math.min(r.height, innerHeight - r.y - 12) };
    });
    assert.ok(box.height > 100, `the map is not on screen: ${JSON.stringify(box)}`);
    const clip = { x: Math.max(0, box.x - 12), y: Math.max(0, box.y - 12), width: box.width + 24, height: box.height + 24 };

    await page.focus('#text');
    const unfocused = await page.screenshot({ clip });
    assert.ok(await tabTo(page, 'canvas#view'), 'Tab never reaches the map canvas');
    assert.equal(await page.evaluate(() => document.activeElement.matches(':focus-visible')), true);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const focused = await page.screenshot({ clip });

    // The computed outline of the canvas or of the wrapper that shows it.
    const outline = await page.evaluate(() => {
      const bg = getComputedStyle(document.body).backgroundColor;
      return ['view', 'canvas-wrap'].map((id) => {
        const cs = getComputedStyle(document.getElementById(id));
        return { id, style: cs.outlineStyle, width: parseFloat(cs.outlineWidth), color: cs.outlineColor, bg };
      });
    });
    assert.ok(outline.some((o) => o.style !== 'none' && o.width >= 2 && o.color !== o.bg), `no visible outline: ${JSON.stringify(outline)}`);

    const cover = await ringCoverage(page, unfocused, focused, clip, box, 6);
    for (const [side, f] of Object.entries(cover)) {
      assert.ok(f >= 0.9, `the focus ring shows along only ${(f * 100).toFixed(0)} % of the map's ${side} edge: ${JSON.stringify(cover)} ${JSON.stringify(outline)}`);
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('a widget whose map is wider than its box shows the whole focus ring too', async () => {
  const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
  const page = await context.newPage();
  try {
    await page.goto(`${server.url}examples.html`);
    // One widget of our own, in the step view zoomed 2× (twice its 375 px page: its box scrolls;
    // fitted, the step view now narrows to the box), 420 px high so that its whole box, and
    // ring, fit the 740 px window.
    await mountWidget(page, { model: 'minilm', text: 'The cat sat on the mat.', view: 'step', height: '420', zoom: '2' });
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready' && /^Step view, layer/.test(document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label')) && !document.getElementById('w').shell.drawing, null, { timeout: 180_000 });
    const sizes = await page.evaluate(() => {
      const root = document.getElementById('w').shadowRoot;
      return { canvas: root.querySelector('canvas').getBoundingClientRect().width, wrap: root.querySelector('.wrap').clientWidth };
    });
    assert.ok(sizes.canvas > sizes.wrap, `the map should be wider than its box here: ${JSON.stringify(sizes)}`);
    const box = await page.evaluate(() => {
      const r = document.getElementById('w').shadowRoot.querySelector('.wrap').getBoundingClientRect();
      return { x: r.x, y: r.y, width: r.width, height: Math.min(r.height, innerHeight - r.y - 12) };
    });
    const clip = { x: Math.max(0, box.x - 6), y: Math.max(0, box.y - 6), width: Math.min(375 - Math.max(0, box.x - 6), box.width + 12), height: box.height + 12 };
    const unfocused = await page.screenshot({ clip });
    // Keyboard focus: Tab from the top of the page into the widget's canvas.
    let reached = false;
    for (let i = 0; i < 20 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.getElementById('w').shadowRoot.activeElement?.tagName === 'CANVAS');
    }
    assert.ok(reached, 'Tab never reaches the widget canvas');
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const focused = await page.screenshot({ clip });
    const cover = await ringCoverage(page, unfocused, focused, clip, box, 5);
    for (const [side, f] of Object.entries(cover)) {
      assert.ok(f >= 0.9, `the widget's focus ring shows along only ${(f * 100).toFixed(0)} % of its ${side} edge: ${JSON.stringify(cover)}`);
    }
  } finally {
    await context.close();
  }
});
