// The lesson page (issue 8, defect 5): no widget is clipped, and the pronoun example does what its
// text promises: in the widget's layer and head, the query "it" attends most to the animal when it
// is "tired" and to the road when it is "wide", with the numbers the lesson prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installInkProbe, loadEveryWidget, openApp, useServerAndBrowser, setViewport } from './harness.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** Open `path` at a given viewport size, every widget loaded, and wait for the page's ready state. */
async function openAt(path, viewport) {
  const app = await openApp(browser, `${server.url}${path}`);
  await loadEveryWidget(app.page);
  if (viewport) {
    await setViewport(app.page, viewport);
    // The widgets redraw for their new width on a resize observer: wait until every canvas has
    // been redrawn at the new size (its CSS width follows the wrapper) and nothing is queued.
    await app.page.waitForTimeout(300);
    await app.page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  }
  return app;
}

/**
 * For every <attention-viz>: the box of its map wrapper, the drawn canvas (CSS px), the wrapper's
 * overflow, whether the wrapper lies inside the widget and the widget inside the viewport, and the
 * rightmost canvas column that is not background (a drawing cut at the canvas edge reaches it).
 */
async function widgetBoxes(page) {
  await installInkProbe(page);
  return page.evaluate(() => [...document.querySelectorAll('attention-viz')].map((w) => {
    const c = w.shadowRoot.querySelector('canvas');
    // The map's box: the nearest element around the canvas that scrolls (or would, if needed).
    let wrap = c.parentElement;
    while (wrap && !/auto|scroll/.test(getComputedStyle(wrap).overflowX + getComputedStyle(wrap).overflowY)) wrap = wrap.parentElement;
    wrap = wrap || c.parentElement;
    const cr = c.getBoundingClientRect();
    const wr = wrap.getBoundingClientRect();
    const hr = w.getBoundingClientRect();
    const cs = getComputedStyle(wrap);
    const rightInk = window.rightInkColumn(c);
    return {
      id: w.id,
      view: c.dataset.view,
      canvas: { w: cr.width, h: cr.height, px: c.width },
      wrap: { w: wrap.clientWidth, h: wrap.clientHeight, sw: wrap.scrollWidth, sh: wrap.scrollHeight, ox: cs.overflowX, oy: cs.overflowY },
      wrapInHost: wr.left >= hr.left - 0.5 && wr.right <= hr.right + 0.5,
      hostInViewport: hr.left >= -0.5 && hr.right <= document.documentElement.clientWidth + 0.5,
      rightInk,
    };
  }));
}

test('no widget on the lesson page is clipped: at 1280 px each map fits its box; at 375 px every map is reachable', async () => {
  const app = await openAt('examples.html', { width: 1280, height: 900 });
  try {
    const boxes = await widgetBoxes(app.page);
    assert.equal(boxes.length, 5);
    for (const b of boxes) {
      const s = JSON.stringify(b);
      assert.ok(b.canvas.w <= b.wrap.w + 0.5, `${b.id}: the ${b.view} map is ${b.canvas.w} px wide in a ${b.wrap.w} px box: ${s}`);
      assert.ok(b.canvas.h <= b.wrap.h + 0.5, `${b.id}: the ${b.view} map is ${b.canvas.h} px tall in a ${b.wrap.h} px box: ${s}`);
      assert.ok(b.wrapInHost && b.hostInViewport, `${b.id} sticks out of its widget or the page: ${s}`);
      assert.ok(b.rightInk >= 0 && b.rightInk < b.canvas.px - 1, `${b.id}: the drawing runs into the canvas's right edge: ${s}`);
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }

  const phone = await openAt('examples.html', { width: 375, height: 740 });
  try {
    const { page } = phone;
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 375), 'the lesson page scrolls sideways at 375 px');
    const boxes = await widgetBoxes(page);
    for (const b of boxes) {
      const s = JSON.stringify(b);
      assert.ok(b.wrapInHost && b.hostInViewport, `${b.id} sticks out of its widget or the page at 375 px: ${s}`);
      assert.ok(b.rightInk >= 0 && b.rightInk < b.canvas.px - 1, `${b.id}: the drawing runs into the canvas's right edge: ${s}`);
      // Wider or taller than its box: the box scrolls that way and the whole canvas is inside its scroll area.
      if (b.canvas.w > b.wrap.w + 0.5) {
        assert.ok(['auto', 'scroll'].includes(b.wrap.ox) && b.wrap.sw >= b.canvas.w - 0.5, `${b.id}: the right of the map cannot be reached: ${s}`);
      }
      if (b.canvas.h > b.wrap.h + 0.5) {
        assert.ok(['auto', 'scroll'].includes(b.wrap.oy) && b.wrap.sh >= b.canvas.h - 0.5, `${b.id}: the bottom of the map cannot be reached: ${s}`);
      }
    }
    // The head and cross views reflow to a phone's width (the step view's columns scroll).
    for (const b of boxes.filter((x) => x.view === 'head' || x.view === 'cross')) {
      assert.ok(b.canvas.w <= b.wrap.w + 0.5, `${b.id}: the ${b.view} map is ${b.canvas.w} px wide in a ${b.wrap.w} px box at 375 px`);
    }
  } finally {
    await phone.close();
  }
});

/** The head's softmax row of the query "it" for `text`, computed by the page's step view. */
async function itRow(text, layer, head) {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: text, v: 'step', l: String(layer), h: String(head) }).toString();
  const app = await openApp(browser, `${server.url}index.html#${hash}`);
  try {
    const handle = await app.page.waitForFunction(
      ([t, l, h]) => {
        const d = window.attnvizDebug;
        return d && d.text === t && d.step && d.step.layer === l && d.step.head === h && d.step.kind === 'encoder_self' ? { keys: d.step.keyTokens, queries: d.step.queryTokens, probs: d.step.probs } : null;
      },
      [text, layer, head],
      { timeout: 60_000, polling: 100 },
    );
    const { keys, queries, probs } = await handle.jsonValue();
    const q = queries.indexOf('it');
    assert.ok(q >= 0, `no token "it" in ${JSON.stringify(queries)}`);
    const row = probs.slice(q * keys.length, (q + 1) * keys.length);
    return { keys, row, top: keys[row.indexOf(Math.max(...row))] };
  } finally {
    await app.close();
  }
}

test('lesson 1: in the widget\'s layer and head, "it" attends most to the animal when tired and to the road when wide, as the text says', async () => {
  const app = await openApp(browser, `${server.url}examples.html`);
  let widget;
  let claims;
  let typed;
  try {
    const { page } = app;
    widget = await page.evaluate(() => {
      const w = document.getElementById('ex-pronoun');
      return { ...w.viewState, textAttr: w.getAttribute('text') };
    });
    // The widget shows one head of one layer (not a mean, not all heads overlapping).
    assert.equal(widget.view, 'head');
    assert.equal(widget.agg, 'head');
    assert.deepEqual(widget.heads, [widget.head]);
    assert.match(widget.text, /\btired\b/);
    // The lesson text names that layer and head (1-based, as the widget's controls show them).
    const para = await page.evaluate(() => {
      // The text between the example's heading and the widget.
      let text = '';
      for (let e = document.querySelector('#ex-pronoun').closest('.example').previousElementSibling; e && e.tagName !== 'H2'; e = e.previousElementSibling) text = e.textContent + text;
      return text;
    });
    assert.match(para, new RegExp(`layer ${widget.layer + 1}, head ${widget.head + 1}\\b`));
    claims = await page.$$eval('.lesson .w[data-text][data-key]', (els) => els.map((e) => ({ text: e.dataset.text, key: e.dataset.key, value: Number(e.textContent) })));

    // Type the "wide" sentence into the widget: it redraws the same layer and head.
    const wide = widget.text.replace(/\btired\b/, 'wide');
    const drawn = page.evaluate(() => new Promise((resolve) => {
      document.getElementById('ex-pronoun').addEventListener('attention-change', (e) => resolve(e.detail), { once: true });
    }));
    await page.locator('#ex-pronoun textarea').fill(wide);
    typed = await drawn;
    assert.equal(typed.text, wide);
    assert.equal(typed.layer, widget.layer);
    assert.equal(typed.head, widget.head);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }

  const tired = await itRow(widget.text, widget.layer, widget.head);
  const wide = await itRow(typed.text, widget.layer, widget.head);
  assert.deepEqual(wide.keys, typed.tokens, 'the page and the widget tokenise the sentence alike');
  const fmt = (r) => r.keys.map((k, j) => `${k} ${r.row[j].toFixed(2)}`).join(', ');
  assert.equal(tired.top, 'animal', `tired: "it" attends most to "${tired.top}": ${fmt(tired)}`);
  // The "wide" sentence's road noun: the noun after "cross the" in the widget's text.
  const road = widget.text.match(/cross the (\w+)/)[1];
  assert.equal(wide.top, road, `wide: "it" attends most to "${wide.top}", not "${road}": ${fmt(wide)}`);
  // The numbers the lesson prints are the model's.
  assert.ok(claims.length >= 2, 'the lesson prints the weights it talks about');
  for (const c of claims) {
    const r = c.text === 'tired' ? tired : wide;
    const w = r.row[r.keys.indexOf(c.key)];
    assert.ok(Math.abs(w - c.value) <= 0.0051, `the lesson says ${c.value} from "it" to "${c.key}" (${c.text}); the model gives ${w.toFixed(3)}`);
  }
});

test('the lesson page loads each widget as it comes near the screen: before any scroll only the first one’s model and one wasm build; scrolling to the translator loads and draws it', async () => {
  // Issue 44 item 6: the three widgets loaded at once (127.8 MB before any scroll).
  const paths = [];
  const app = await openApp(browser, `${server.url}examples.html`, {
    contextOptions: { viewport: { width: 1280, height: 720 } },
    // (the service worker's own requests left out: data-offline has it copy the files the page
    // fetched, from the HTTP cache)
    onContext: (context) => context.on('request', (req) => {
      if (!req.serviceWorker()) paths.push(new URL(req.url()).pathname);
    }),
  });
  const { page } = app;
  const states = () => page.evaluate(() => Object.fromEntries([...document.querySelectorAll('attention-viz')].map((w) => [w.id, w.dataset.state])));
  try {
    await page.waitForTimeout(1000);
    assert.deepEqual(await states(), { 'ex-pronoun': 'ready', 'ex-cross': 'waiting', 'ex-step': 'waiting', 'ex-paper-self': 'waiting', 'ex-paper-cross': 'waiting' });
    assert.match(await page.locator('#ex-cross >> .msg').innerText(), /Loads when scrolled into view/);
    assert.ok(!paths.some((p) => p.includes('/models/en-pt/')), `the translator was fetched before any scroll: ${paths.filter((p) => p.includes('/models/'))}`);
    assert.equal(paths.filter((p) => p.endsWith('.wasm')).length, 1, `wasm fetches: ${paths.filter((p) => p.endsWith('.wasm'))}`);
    // The snippet a teacher copies loads lazily too.
    assert.match(await page.textContent('.snippet[data-for="ex-cross"] code'), /loading="lazy"/);
    await page.locator('#ex-cross').scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.getElementById('ex-cross').dataset.state === 'ready', null, { timeout: 120_000 });
    assert.ok(paths.some((p) => p.includes('/models/en-pt/')), 'the translator was not fetched once scrolled to');
    assert.match(await page.locator('#ex-cross >> .out').innerText(), /gato/);
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'ready');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
