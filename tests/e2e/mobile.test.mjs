// The page on a phone (issue 8, defect 6): at 375 × 740 the model view and the cross view fit the
// screen (they reflow: heads wrap into rows, cross-attention tokens stack in two columns), the page
// never scrolls sideways and nothing is drawn past the canvas's edge. On a touch phone (issue 20:
// 390 × 844, isMobile, hasTouch, 3 device pixels per CSS px) the page and the widget are used
// with taps: on a view tab, on a token (pinned, its top weights read out as the CLI computes
// them), on a head of the model view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installInkProbe, mountWidget, openApp, useServerAndBrowser } from './harness.mjs';
import { cliAt, cliBlock, cliJson, waitDrawn } from './cli-helpers.mjs';

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

// ------------------------------------------------------------------------ a touch phone

const TOUCH_PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true };
const TEXT = 'The animal didn\'t cross the street because it was too tired.';
const LAYER = 3; // 0-based
const HEAD = 1;
const CLI = cliJson('attend', '--model', 'models/minilm', '--text', TEXT);
const cliHead = cliBlock(CLI.attentions, 'encoder_self', LAYER);
const TOKENS = CLI.tokens.source;
/** Query i's weights of head HEAD, largest first: [{ token, w }]. */
const cliTop = (i) => TOKENS.map((token, j) => ({ token, w: cliAt(cliHead, HEAD, i, j) })).sort((a, b) => b.w - a.w);

/** The page scrolls sideways? → { scrollW, clientW } */
const pageWidth = (page) => page.evaluate(() => ({ scrollW: document.documentElement.scrollWidth, clientW: document.documentElement.clientWidth, innerW: innerWidth }));

function assertNoSideScroll(w, what) {
  assert.ok(w.scrollW <= w.clientW && w.clientW <= 390, `${what}: the page is ${w.scrollW} px wide on a ${w.clientW} px screen (${JSON.stringify(w)})`);
}

/** Scroll the window so that a point of `canvasSel`'s canvas (CSS px from its top left) is on screen; → its client coordinates. */
function onScreen(page, canvasSel, x, y) {
  return page.evaluate(([sel, px, py]) => {
    const [host, inner] = sel.split(' >> ');
    const c = inner ? document.querySelector(host).shadowRoot.querySelector(inner) : document.querySelector(sel);
    const top = c.getBoundingClientRect().top + py;
    if (top < 80 || top > innerHeight - 80) window.scrollBy(0, top - innerHeight / 2);
    const r = c.getBoundingClientRect();
    return { x: r.left + px, y: r.top + py };
  }, [canvasSel, x, y]);
}

/** The canvas box's size and what it holds: nothing to scroll when scroll ≤ client. */
const canvasBox = (page) => page.evaluate(() => {
  const w = document.getElementById('canvas-wrap');
  return { scrollW: w.scrollWidth, boxW: w.clientWidth, scrollH: w.scrollHeight, boxH: w.clientHeight };
});

test('on a touch phone (390 × 844) every view of every default model fits its box, and a comparison stands its two sides one above the other', async () => {
  const READY = { step: () => !!window.attnvizDebug.step, positions: () => !!window.attnvizDebug.positionsChart(), heads: () => !!window.attnvizDebug.headsGrid(), qk: () => !!window.attnvizDebug.qkPoints(), parts: () => !!window.attnvizDebug.partsRows(), lens: () => !!(window.attnvizDebug.lensGrid() && window.attnvizDebug.lensGrid().lens) };
  for (const model of ['minilm-l6', 'en-pt-tiny', 'smollm2-135m']) {
    const app = await openApp(browser, `${server.url}#m=${model}&w=int8`, { contextOptions: TOUCH_PHONE, fresh: true });
    const { page } = app;
    try {
      const views = await page.$$eval('#views [role=tab]:not([hidden])', (ts) => ts.map((t) => t.dataset.view));
      for (const view of views) {
        await page.locator(`#views [role=tab][data-view=${view}]`).tap();
        if (READY[view]) await page.waitForFunction(READY[view], null, { timeout: 60_000 });
        await waitDrawn(page, (v) => window.attnvizDebug.view === v && document.getElementById('view').dataset.view === v, view);
        const b = await canvasBox(page);
        assert.ok(b.scrollW <= b.boxW + 1 && b.scrollH <= b.boxH + 1, `${model} ${view}: ${JSON.stringify(b)}`);
      }
      assert.deepEqual(app.pageErrors, []);
    } finally {
      await app.close();
    }
  }
  // A comparison on a phone: A above B, both as wide as the box (side by side they were 496 px).
  const app = await openApp(browser, `${server.url}#${new URLSearchParams({ m: 'minilm-l6', t: TEXT, c: 'The dog slept on the rug.' })}`, { contextOptions: TOUCH_PHONE, fresh: true });
  try {
    await waitDrawn(app.page, () => { const p = window.attnvizDebug.comparePanels(); return p && p.some((x) => x.panel === 'b'); });
    const b = await canvasBox(app.page);
    assert.ok(b.scrollW <= b.boxW + 1, `the comparison is ${b.scrollW} px wide in a ${b.boxW} px box`);
    const panels = await app.page.evaluate(() => window.attnvizDebug.comparePanels());
    const [a, bSide] = ['a', 'b'].map((k) => panels.find((p) => p.panel === k));
    assert.ok(bSide.y >= a.y + a.h && bSide.x === a.x, `B under A: ${JSON.stringify([a, bSide])}`);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('on a touch phone (390 × 844) the page fits the width in every view, a tap on a tab switches views, a tap on a token pins it and lists its top weights as the CLI computes them', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, l: String(LAYER), h: String(HEAD), hs: String(HEAD) }).toString();
  // A context of its own (fresh): a phone's viewport, touch and device pixels are the context's.
  const app = await openApp(browser, `${server.url}#${hash}`, { contextOptions: TOUCH_PHONE, fresh: true });
  const { page } = app;
  try {
    assert.equal(await page.evaluate(() => matchMedia('(pointer: coarse)').matches && navigator.maxTouchPoints > 0), true, 'a touch screen');
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    assertNoSideScroll(await pageWidth(page), 'head view');
    // Every view by a tap on its tab; none makes the page wider than the screen.
    const views = await page.$$eval('#views [role=tab]:not([hidden])', (ts) => ts.map((t) => t.dataset.view));
    assert.ok(views.length >= 6, `tabs: ${views}`);
    for (const v of views.filter((x) => x !== 'head').concat('head')) {
      const n = await page.evaluate(() => window.attnvizDebug.drawCount);
      await page.locator(`#views [data-view="${v}"]`).tap();
      await waitDrawn(page, ([view, k]) => window.attnvizDebug.view === view && window.attnvizDebug.drawCount > k, [v, n])
        .catch(async (e) => { throw new Error(`a tap on the ${v} tab did not show that view (it shows ${await page.evaluate(() => window.attnvizDebug.view)})`, { cause: e }); });
      assert.equal(await page.getAttribute('#views [role=tab][aria-selected=true]', 'data-view'), v);
      assertNoSideScroll(await pageWidth(page), `${v} view`);
    }
    // A tap on query token "it" pins it: the side panel lists its top weights, the CLI's.
    const i = TOKENS.indexOf('it');
    const p = await page.evaluate((k) => window.attnvizDebug.tokenPoint('q', k), i);
    const at = await onScreen(page, 'canvas#view', p.x, p.y);
    await page.touchscreen.tap(at.x, at.y);
    try {
      await page.waitForFunction(() => /\(pinned\)/.test(document.getElementById('side-title').textContent) && document.querySelectorAll('#top-list li').length > 0, null, { timeout: 10_000 });
    } catch (e) {
      throw new Error(`a tap on “it” did not pin it: side panel ${JSON.stringify(await page.textContent('#side-title'))}, state ${JSON.stringify(await page.evaluate(() => window.attnvizDebug.state.pin))}`, { cause: e });
    }
    assert.match(await page.textContent('#side-title'), /Top weights from this query \(pinned\)/);
    const items = await page.$$eval('#top-list li', (lis) => lis.map((li) => ({ tok: li.querySelector('.tok').textContent, w: Number(li.querySelector('.w').textContent) })));
    const want = cliTop(i);
    for (let k = 0; k < 3; k++) {
      assert.equal(items[k].tok, want[k].token, `item ${k + 1}: ${JSON.stringify(items.slice(0, 3))} vs CLI ${JSON.stringify(want.slice(0, 3))}`);
      assert.ok(Math.abs(items[k].w - want[k].w) < 6e-4, `item ${k + 1}: ${items[k].w} vs CLI ${want[k].w}`);
    }
    await page.waitForFunction((k) => location.hash.includes(`p=q${k}`), i);
    // A second tap on it unpins it.
    await page.touchscreen.tap(at.x, at.y);
    await page.waitForFunction(() => !/\(pinned\)/.test(document.getElementById('side-title').textContent) && !window.attnvizDebug.state.pin);
    assertNoSideScroll(await pageWidth(page), 'after the taps');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('on a touch phone the widget fits the width, a tap on a head of its model view reads it out and a second opens that head, a tap on a token pins it and reads out the CLI\'s top weights', async () => {
  const context = await browser.newContext(TOUCH_PHONE);
  try {
    const page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(`${server.url}examples.html`);
    await mountWidget(page, { model: 'minilm', text: TEXT, view: 'model' });
    await page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('w').dataset.state), null, { timeout: 120_000 });
    const w = () => page.evaluate(() => {
      const el = document.getElementById('w');
      const c = el.shadowRoot.querySelector('canvas');
      const wrap = el.shadowRoot.querySelector('.wrap');
      return { state: el.dataset.state, draws: Number(el.dataset.drawCount), view: c.dataset.view, layer: c.dataset.layer, head: c.dataset.head, host: el.getBoundingClientRect().width, canvas: c.getBoundingClientRect().width, wrap: wrap.clientWidth, readout: el.shadowRoot.querySelector('.readout').textContent };
    });
    let s = await w();
    assert.equal(s.state, 'ready');
    assertNoSideScroll(await pageWidth(page), 'the widget\'s model view');
    assert.ok(s.host <= 390 && s.canvas <= s.wrap + 0.5, `the model view is ${s.canvas} px wide in a ${s.wrap} px box: ${JSON.stringify(s)}`);
    // Tap head HEAD + 1 of layer LAYER + 1 in the grid of every head: its read-out; tap it again:
    // the head view of that head.
    const cell = await page.evaluate(([l, h]) => {
      const g = document.getElementById('w').shell.geom();
      const r = Math.floor(h / g.cols);
      const c = h % g.cols;
      return { x: g.left + c * g.pitchX + g.cell / 2, y: g.top + l * g.layerPitch + r * g.pitchY + g.cell / 2 };
    }, [LAYER, HEAD]);
    let at = await onScreen(page, '#w >> canvas', cell.x, cell.y);
    await page.touchscreen.tap(at.x, at.y);
    const readout = `Layer ${LAYER + 1}, head ${HEAD + 1}: H = `;
    await page.waitForFunction((want) => document.getElementById('w').shadowRoot.querySelector('.readout').textContent.startsWith(want), readout, { timeout: 10_000 })
      .catch(async (e) => { throw new Error(`a first tap on layer ${LAYER + 1}, head ${HEAD + 1} did not read it out: ${JSON.stringify(await w())}`, { cause: e }); });
    assert.equal((await w()).view, 'model', 'the first tap reads the map out and stays on the model view');
    at = await onScreen(page, '#w >> canvas', cell.x, cell.y);
    await page.touchscreen.tap(at.x, at.y);
    await page.waitForFunction((n) => Number(document.getElementById('w').dataset.drawCount) > n && document.getElementById('w').shadowRoot.querySelector('canvas').dataset.view === 'head', s.draws, { timeout: 10_000 })
      .catch(async (e) => { throw new Error(`a tap on layer ${LAYER + 1}, head ${HEAD + 1} did not open it: ${JSON.stringify(await w())}`, { cause: e }); });
    s = await w();
    assert.deepEqual([s.view, s.layer, s.head], ['head', String(LAYER), String(HEAD)]);
    assertNoSideScroll(await pageWidth(page), 'the widget\'s head view');
    // Tap query token "it": pinned, the read-out line gives its top weights (2 decimals), the CLI's.
    const i = TOKENS.indexOf('it');
    const tok = await page.evaluate((k) => {
      const g = document.getElementById('w').shell.geom();
      return { x: g.leftX - 10, y: g.headerH + 4 + k * g.rowH + g.rowH / 2 };
    }, i);
    at = await onScreen(page, '#w >> canvas', tok.x, tok.y);
    await page.touchscreen.tap(at.x, at.y);
    await page.waitForFunction(() => /\(pinned\)/.test(document.getElementById('w').shadowRoot.querySelector('.readout').textContent), null, { timeout: 10_000 })
      .catch(async (e) => { throw new Error(`a tap on “it” did not pin it: ${JSON.stringify(await w())}`, { cause: e }); });
    const text = (await w()).readout;
    assert.match(text, /^Top weights from this query \(pinned\): /);
    const items = [...text.replace(/^[^:]*: /, '').matchAll(/(\S+) (\d\.\d\d)(?:, |$)/g)].map((m) => ({ tok: m[1], w: Number(m[2]) }));
    const want = cliTop(i);
    assert.ok(items.length >= 3, text);
    for (let k = 0; k < 3; k++) {
      assert.equal(items[k].tok, want[k].token, `${text} vs CLI ${JSON.stringify(want.slice(0, 3))}`);
      assert.ok(Math.abs(items[k].w - want[k].w) < 0.006, `${text} vs CLI ${JSON.stringify(want.slice(0, 3))}`);
    }
    assert.equal(await page.evaluate(() => JSON.stringify(document.getElementById('w').viewState.pin)), JSON.stringify({ side: 'q', index: i }));
    assertNoSideScroll(await pageWidth(page), 'after the taps');
    assert.deepEqual(pageErrors, []);
  } finally {
    await context.close();
  }
});
