// The embeddable widget (issue 5): <attention-viz> on the lesson page, one shared worker,
// editing one widget redraws only that one, attributes update it, a path prefix works, and the
// iframe form draws and reports its height.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, loadEveryWidget, openApp } from './harness.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

/** For each widget: id, state, draw count, and how much of its canvas is not background. */
function widgetStats(page) {
  return page.evaluate(() => [...document.querySelectorAll('attention-viz')].map((w) => {
    const c = w.shadowRoot.querySelector('canvas');
    let ink = 0;
    let n = 0;
    if (c && c.width > 1) {
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      const bg = [data[0], data[1], data[2]];
      for (let i = 0; i < data.length; i += 4 * 11) {
        n++;
        if (Math.abs(data[i] - bg[0]) + Math.abs(data[i + 1] - bg[1]) + Math.abs(data[i + 2] - bg[2]) > 30) ink++;
      }
    }
    return { id: w.id, state: w.dataset.state, draws: Number(w.dataset.drawCount || 0), ink: n ? ink / n : 0, view: c && c.dataset.view, layer: c && c.dataset.layer, head: c && c.dataset.head, w: c && c.width, h: c && c.height };
  }));
}

async function checkExamples(prefix) {
  const server = await startServer({ prefix });
  let app;
  try {
    app = await openApp(browser, `${server.url}examples.html`);
    const { page } = app;
    await loadEveryWidget(page);
    const stats = await widgetStats(page);
    assert.equal(stats.length, 5, 'the lesson page should have five widgets');
    for (const s of stats) {
      assert.equal(s.state, 'ready', `${s.id} is not ready`);
      assert.ok(s.ink > 0.01, `${s.id} looks blank: ${JSON.stringify(s)}`);
    }
    assert.deepEqual(stats.map((s) => s.view), ['head', 'cross', 'step', 'head', 'cross']);
    // One model worker for the whole page, whatever the number of widgets (the shared-memory
    // build, where the page has 4 cores or more, adds at most 3 GEMM helpers, not one per widget).
    const urls = page.workers().map((w) => w.url());
    assert.equal(urls.filter((u) => !u.endsWith('/pool-helper.js')).length, 1, `workers: ${urls.join(', ')}`);
    assert.ok(urls.filter((u) => u.endsWith('/pool-helper.js')).length <= 3, `workers: ${urls.join(', ')}`);
    // The snippets shown are the widgets' own markup.
    const snippet = await page.textContent('.snippet[data-for="ex-cross"] code');
    assert.match(snippet, /<script type="module" src="attention-viz\.js"><\/script>/);
    assert.match(snippet, /model="en-pt"/);
    assert.match(snippet, /view="cross"/);
    // The translation is shown in the cross-attention widget.
    const out = await page.evaluate(() => document.getElementById('ex-cross').shadowRoot.querySelector('.out').textContent);
    assert.match(out, /O gato sentou-se no tapete\./);
    assert.deepEqual(app.pageErrors, []);
    assert.deepEqual(app.failedRequests, []);
    assert.deepEqual(app.outsideRequests, []);
    return { app, server };
  } catch (e) {
    await app?.close();
    await server.close();
    throw e;
  }
}

test('the lesson page draws its five widgets with one shared worker; typing redraws only that widget', async () => {
  const { app, server } = await checkExamples('/');
  try {
    const { page } = app;
    // Settled: a widget on 'auto' weights redraws once its exact ones are in (under load that came
    // after this point, and the step widget's second drawing was taken for one caused by typing).
    await page.waitForFunction(() => [...document.querySelectorAll('attention-viz')].every((w) => w.dataset.state !== 'ready' || (!w.session.pending && !w.shell.busy)), null, { timeout: 120_000 });
    const before = await widgetStats(page);
    // No globals leaked by the widget module.
    const leaked = await page.evaluate(() => ['AttentionViz', 'attnvizDebug', 'configure', 'Channel'].filter((k) => k in window));
    assert.deepEqual(leaked, []);

    const textarea = page.locator('#ex-pronoun textarea');
    await textarea.fill("The animal didn't cross the street because it was too wide.");
    await page.waitForFunction(
      (n) => Number(document.getElementById('ex-pronoun').dataset.drawCount) > n,
      before[0].draws,
      { timeout: 60_000 },
    );
    await page.waitForTimeout(400);
    const afterType = await widgetStats(page);
    assert.ok(afterType[0].draws > before[0].draws, 'the edited widget did not redraw');
    assert.equal(afterType[1].draws, before[1].draws, 'the cross-attention widget redrew');
    assert.equal(afterType[2].draws, before[2].draws, 'the step widget redrew');
    const tokens = await page.evaluate(() => new Promise((resolve) => {
      const w = document.getElementById('ex-pronoun');
      w.addEventListener('attention-change', (e) => resolve(e.detail.tokens), { once: true });
      w.setAttribute('layer', '2');
    }));
    assert.ok(tokens.includes('wide'), JSON.stringify(tokens));

    // Changing attributes updates the widget and emits attention-change with the state.
    const detail = await page.evaluate(() => new Promise((resolve) => {
      const w = document.getElementById('ex-step');
      w.addEventListener('attention-change', (e) => { if (e.detail.layer === 4 && e.detail.head === 0) resolve(e.detail); });
      w.setAttribute('layer', '5');
      w.setAttribute('head', '1');
    }));
    assert.equal(detail.view, 'step');
    const s = (await widgetStats(page))[2];
    assert.equal(s.layer, '4');
    assert.equal(s.head, '0');
    // Keyboard: focus a widget's map and move to the next layer.
    await page.focus('#ex-pronoun canvas');
    const layerBefore = (await widgetStats(page))[0].layer;
    await page.keyboard.press('ArrowDown');
    await page.waitForFunction((l) => document.getElementById('ex-pronoun').shadowRoot.querySelector('canvas').dataset.layer !== l, layerBefore);
    assert.equal(page.workers().filter((w) => !w.url().endsWith('/pool-helper.js')).length, 1);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
    await server.close();
  }
});

test('the widgets work when the site is served under a path prefix (/course/week3/)', async () => {
  const { app, server } = await checkExamples('/course/week3/');
  await app.close();
  await server.close();
});

test('the iframe form draws and reports its height to the parent', async () => {
  const server = await startServer({ prefix: '/' });
  let app;
  try {
    app = await openApp(browser, server.url);
    const { page } = app;
    const q = new URLSearchParams({ model: 'minilm', text: 'The cat sat on the mat.', view: 'heatmap', layer: '2', head: '3', id: 'one' }).toString();
    const msg = await page.evaluate((query) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no height message within 120 s')), 120_000);
      window.heightMessages = [];
      addEventListener('message', (e) => {
        if (!e.data || e.data.type !== 'attnviz:height') return;
        window.heightMessages.push(e.data.height);
        if (e.data.height > 150) {
          clearTimeout(timer);
          resolve({ ...e.data, sameOrigin: e.origin === location.origin });
        }
      });
      const f = document.createElement('iframe');
      f.src = `embed.html?${query}`;
      f.style.width = '700px';
      f.height = '100';
      document.body.appendChild(f);
    }), q);
    assert.equal(msg.id, 'one');
    assert.ok(msg.sameOrigin);
    const frame = page.frames().find((f) => f.url().includes('embed.html'));
    await frame.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const s = await frame.evaluate(() => {
      const w = document.querySelector('attention-viz');
      const c = w.shadowRoot.querySelector('canvas');
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      const colours = new Set();
      for (let i = 0; i < data.length; i += 4 * 13) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
      return { view: c.dataset.view, layer: c.dataset.layer, head: c.dataset.head, colours: colours.size, h: document.documentElement.scrollHeight };
    });
    assert.equal(s.view, 'heatmap');
    assert.equal(s.layer, '1');
    assert.equal(s.head, '2');
    assert.ok(s.colours > 10, `iframe widget looks blank: ${JSON.stringify(s)}`);
    // The last height the frame reported is its document's height once drawn (the parent sizes the
    // iframe by it); the frame may report a few times while it lays out, so wait up to 10 s for it.
    const deadline = Date.now() + 10_000;
    let heights;
    for (;;) {
      heights = await page.evaluate(() => ({
        reported: window.heightMessages.slice(),
        doc: document.querySelector('iframe').contentDocument.documentElement.scrollHeight,
      }));
      if (Math.abs(heights.reported.at(-1) - heights.doc) <= 2 || Date.now() > deadline) break;
      await page.waitForTimeout(100);
    }
    assert.ok(Math.abs(heights.reported.at(-1) - heights.doc) <= 2, `reported heights ${JSON.stringify(heights.reported)}, frame document ${heights.doc} px (${JSON.stringify(s)})`);
    assert.ok(heights.doc > 150, `the frame's document is only ${heights.doc} px tall`);
    assert.deepEqual(app.outsideRequests, []);
  } finally {
    await app?.close();
    await server.close();
  }
});

test('the iframe snippet, sizing its iframe by each report, settles: the map keeps a 560 px box (views fit it) instead of shrinking with the frame', async () => {
  const server = await startServer({ prefix: '/' });
  let app;
  try {
    app = await openApp(browser, server.url);
    const { page } = app;
    const q = new URLSearchParams({ model: 'minilm', weights: 'int8', text: 'The animal didn\'t cross the street because it was too tired.', view: 'heatmap' }).toString();
    await page.evaluate((query) => {
      // The README's snippet: each report sets its iframe's height.
      addEventListener('message', (e) => {
        if (!e.data || e.data.type !== 'attnviz:height') return;
        for (const f of document.querySelectorAll('iframe')) if (f.contentWindow === e.source) f.height = e.data.height;
      });
      const f = Object.assign(document.createElement('iframe'), { src: `embed.html?${query}`, height: '480' });
      f.style.width = '900px';
      document.body.appendChild(f);
    }, q);
    const frame = await (async () => {
      for (let i = 0; i < 600; i++) {
        const f = page.frames().find((x) => x.url().includes('embed.html'));
        if (f) return f;
        await page.waitForTimeout(100);
      }
      throw new Error('no iframe');
    })();
    await frame.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    const look = () => frame.evaluate(() => {
      const w = document.querySelector('attention-viz');
      const g = w.shell.geom();
      return { box: w.shadowRoot.querySelector('.wrap').clientHeight, cell: g.cell, frame: innerHeight };
    });
    await page.waitForTimeout(1500);
    const first = await look();
    await page.waitForTimeout(1500);
    const later = await look();
    assert.deepEqual(later, first, 'the frame and its map stay as they are');
    assert.ok(first.box <= 560 && first.box > 400 && first.cell >= 20, JSON.stringify(first));
  } finally {
    await app?.close();
    await server.close();
  }
});

test('a page on another origin can load the widget with data-base (one blob worker, CORS)', async () => {
  const files = await startServer({ prefix: '/static/attnviz/' }); // serves the built files
  const host = await startServer({ prefix: '/' }); // another port = another origin
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    // A host document of the other origin with no CSP of ours: the model index as plain JSON.
    await page.goto(`${host.url}models/index.json`);
    await page.evaluate((base) => {
      const s = document.createElement('script');
      s.type = 'module';
      s.src = `${base}attention-viz.js`;
      s.dataset.base = base;
      document.body.appendChild(s);
      const w = document.createElement('attention-viz');
      w.setAttribute('model', 'minilm');
      w.setAttribute('text', 'Teachers embed live attention maps.');
      w.setAttribute('view', 'heatmap');
      document.body.appendChild(w);
    }, files.url);
    await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('attention-viz')?.dataset.state), null, { timeout: 120_000 });
    const st = await page.evaluate(() => {
      const w = document.querySelector('attention-viz');
      return { state: w.dataset.state, msg: w.shadowRoot.querySelector('.msg').textContent, view: w.shadowRoot.querySelector('canvas').dataset.view };
    });
    assert.equal(st.state, 'ready', st.msg);
    assert.equal(st.view, 'heatmap');
    assert.notEqual(new URL(files.url).origin, new URL(host.url).origin);
    assert.equal(page.workers().length, 1);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    await host.close();
    await files.close();
  }
});
