// The page on a phone (issue 8, defect 6): at 375 × 740 the model view and the cross view fit the
// screen (they reflow: heads wrap into rows, cross-attention tokens stack in two columns), the page
// never scrolls sideways and nothing is drawn past the canvas's edge.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installInkProbe, useServerAndBrowser } from './harness.mjs';

const PHONE = { width: 375, height: 740 };

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** Open the page (with `hash`) on a 375 px wide screen from the first paint; wait until ready. */
async function openPhone(hash) {
  const page = await browser.newPage({ viewport: PHONE });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${server.url}index.html${hash ? `#${hash}` : ''}`, { waitUntil: 'load' });
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state), null, { timeout: 120_000, polling: 100 });
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready', await page.evaluate(() => document.getElementById('status').textContent));
  return { page, pageErrors, close: () => page.close() };
}

/** Wait until the page has drawn `view` (for `modelId`) at least once after `since` draws. */
async function drawn(page, view, modelId, since) {
  await page.waitForFunction(
    ([v, m, n]) => {
      const d = window.attnvizDebug;
      return d && d.view === v && d.modelId === m && d.drawCount > n;
    },
    [view, modelId, since],
    { timeout: 60_000, polling: 100 },
  );
  // Let a resize-triggered redraw land.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/** Canvas vs its wrapper, the page's sideways scroll, and the rightmost non-background column. */
async function layout(page) {
  await installInkProbe(page);
  return page.evaluate(() => {
    const c = document.getElementById('view');
    const wrap = document.getElementById('canvas-wrap');
    const cr = c.getBoundingClientRect();
    const wr = wrap.getBoundingClientRect();
    const rightInk = window.rightInkColumn(c);
    return {
      view: c.dataset.view,
      canvas: { w: cr.width, h: cr.height, px: c.width, left: cr.left, right: cr.right },
      wrap: { w: wrap.clientWidth, left: wr.left, right: wr.left + wrap.clientLeft + wrap.clientWidth, ox: getComputedStyle(wrap).overflowX },
      pageWidth: document.documentElement.scrollWidth,
      viewport: document.documentElement.clientWidth,
      rightInk,
      ariaLabel: c.getAttribute('aria-label'),
    };
  });
}

function assertFits(l) {
  const s = JSON.stringify(l);
  assert.ok(l.pageWidth <= l.viewport, `the page scrolls sideways at ${l.viewport} px: ${s}`);
  assert.ok(l.canvas.w <= l.wrap.w + 0.5, `the ${l.view} view is ${l.canvas.w} px wide in a ${l.wrap.w} px wrapper: its right part is cut off: ${s}`);
  assert.ok(l.canvas.right <= l.wrap.right + 0.5, `the ${l.view} view's right edge lies outside its wrapper: ${s}`);
  assert.ok(l.rightInk >= 0 && l.rightInk < l.canvas.px - 1, `the ${l.view} view draws into the canvas's right edge: ${s}`);
}

test('at 375 px the model view reflows to the screen width: no part of it is cut off', async () => {
  const app = await openPhone('');
  try {
    const { page } = app;
    const n = await page.evaluate(() => window.attnvizDebug.drawCount);
    await page.click('#views [data-view="model"]');
    await drawn(page, 'model', 'minilm-l6', n);
    const l = await layout(page);
    assertFits(l);
    assert.equal(l.wrap.ox === 'auto' || l.wrap.ox === 'scroll', true, `the wrapper does not scroll: ${JSON.stringify(l)}`);
    assert.match(l.ariaLabel, /6 layers × 12 heads/);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('at 375 px the cross view reflows to the screen width: no part of it is cut off', async () => {
  const text = 'The cat sat on the mat.';
  const hash = new URLSearchParams({ m: 'en-pt-tiny', t: text, v: 'cross', k: 'cross', l: '1', a: 'mean' }).toString();
  const app = await openPhone(hash);
  try {
    const { page } = app;
    await drawn(page, 'cross', 'en-pt-tiny', 0);
    const l = await layout(page);
    assertFits(l);
    const d = await page.evaluate(() => ({ target: window.attnvizDebug.targetTokens, source: window.attnvizDebug.tokens }));
    assert.ok(d.target.length >= 5 && d.source.length >= 5, JSON.stringify(d));
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
