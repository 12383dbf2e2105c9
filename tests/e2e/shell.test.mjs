// The one shell (issue 8): defects a new user hit, each checked the way the user meets it.
// Every test opens its own page state (a permalink) so any one of them runs alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { watchMainThread } from './main-thread.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/', verbose: true }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const hash = (o) => `#${new URLSearchParams(o).toString()}`;

/** Open the page at a permalink and wait until it has drawn that model and text. */
async function openAt(params, viewport = { width: 1280, height: 900 }) {
  const app = await openApp(browser, server.url + hash(params));
  await setViewport(app.page, viewport);
  if (params.t !== undefined) {
    await app.page.waitForFunction((t) => window.attnvizDebug.text === t, params.t, { timeout: 180_000 });
  }
  return app;
}

async function waitDrawn(page, pred, arg, timeout = 60_000) {
  await page.waitForFunction(pred, arg, { timeout });
  return page.evaluate(() => ({ ...window.attnvizDebug }));
}

test('the head view opens on one head, not all of them overlapping (defect 2)', async () => {
  const app = await openApp(browser, server.url);
  try {
    const d = await app.page.evaluate(() => window.attnvizDebug.state);
    assert.deepEqual(d.heads, [0], 'first open shows head 1 alone');
    const pressed = await app.page.$$eval('#heads .swatch[aria-pressed=true]', (bs) => bs.map((b) => b.textContent));
    assert.deepEqual(pressed, ['1']);
    // "all heads" is still one key away, and is what a permalink with hs=all restores.
    await app.page.click('#heads-all');
    await waitDrawn(app.page, () => window.attnvizDebug.state.heads === null);
    assert.match(app.page.url(), /hs=all/);
  } finally {
    await app.close();
  }
});

test('cross view with merged sub-words: the step scrubber counts the words the map shows (defect 3)', async () => {
  const t = 'The cat sat on the mat.';
  const app = await openAt({ m: 'en-pt-tiny', t, v: 'cross', mw: '1' });
  try {
    const d = await app.page.evaluate(() => ({ ...window.attnvizDebug }));
    const pieces = d.targetTokens.length;
    const max = Number(await app.page.$eval('#step', (e) => e.max));
    const out = await app.page.$eval('#step-out', (e) => e.textContent);
    const words = Number(/\/ (\d+)/.exec(out)[1]);
    assert.ok(words < pieces, `merging should join pieces (${pieces}) into fewer words, got ${words}`);
    assert.equal(max + 1, words, `scrubber max ${max} + 1 must equal the map's ${words} rows`);
    // The last step is the last word as the map labels it, not a piece.
    await app.page.$eval('#step', (e, v) => {
      e.value = String(v);
      e.dispatchEvent(new Event('input', { bubbles: true }));
    }, max);
    await waitDrawn(app.page, (m) => window.attnvizDebug.state.step === m, max);
    const last = await app.page.$eval('#step-out', (e) => e.textContent);
    assert.match(last, new RegExp(`^${words} / ${words}: `));
    assert.ok(!/▁/.test(last.split(': ')[1]), `merged words carry no SentencePiece marks: ${last}`);
  } finally {
    await app.close();
  }
});

test('a permalink restores the pinned token; one naming an unknown model says so (defect 4)', async () => {
  const t = 'The animal didn\'t cross the street because it was tired.';
  const app = await openAt({ m: 'minilm-l6', t, l: '4', h: '2', hs: '2', p: 'q10' });
  try {
    const st = await app.page.evaluate(() => window.attnvizDebug.state);
    assert.deepEqual(st.pin, { side: 'q', index: 10 });
    const d = await app.page.evaluate(() => window.attnvizDebug);
    assert.equal(d.tokens[10], 'it');
    assert.match(await app.page.$eval('#side-title', (e) => e.textContent), /from this query \(pinned\)/);
    assert.ok((await app.page.$$('#top-list li')).length > 0, 'the pinned token lists its top weights');
    // Unpinning writes the permalink without it.
    await app.page.keyboard.press('Escape');
    await waitDrawn(app.page, () => window.attnvizDebug.state.pin === null);
    assert.ok(!/[#&]p=/.test(app.page.url()), app.page.url());
  } finally {
    await app.close();
  }
  const bad = await openApp(browser, server.url + hash({ m: 'gpt-17', t: 'hello' }));
  try {
    const notice = bad.page.locator('#notice');
    assert.equal(await notice.isVisible(), true, 'the unknown model is reported');
    const text = await notice.textContent();
    assert.match(text, /gpt-17/);
    assert.match(text, /not available/);
    assert.match(text, /minilm-l6/);
  } finally {
    await bad.close();
  }
});

test('typing with all heads shown at 128 tokens keeps the main thread within budget (defect 7)', async () => {
  const words = [];
  while (words.length < 120) words.push(...'the cat sat on the mat and the dog ran'.split(' '));
  const t = words.slice(0, 120).join(' ');
  const app = await openAt({ m: 'minilm-l6', t, hs: 'all' });
  try {
    // Start-up (the side panel's chart loads its wasm after the first draw) is not typing.
    await waitDrawn(app.page, () => window.attnvizDebug.chartBars > 0);
    const watch = await watchMainThread(app.page);
    await app.page.focus('#text');
    await app.page.keyboard.press('End');
    for (const ch of ' and more') {
      await app.page.keyboard.type(ch);
      await new Promise((r) => setTimeout(r, 120));
    }
    await waitDrawn(app.page, (x) => window.attnvizDebug.text === x, `${t} and more`);
    await new Promise((r) => setTimeout(r, 300));
    const d = await app.page.evaluate(() => ({ tokens: window.attnvizDebug.tokens.length, heads: window.attnvizDebug.state.heads }));
    assert.ok(d.tokens >= 120 && d.tokens <= 130, `about 128 tokens, got ${d.tokens}`);
    assert.equal(d.heads, null, 'all heads shown');
    await watch.take('typing');
    await watch.check();
    // Fitted to the box, 128 tokens are drawn through a window (views/head.js); at "fit width"
    // every token is, and the faintest of the ~190k candidate lines are left out (the drawing
    // says so); hovering a token draws every one of its lines.
    assert.equal((await app.page.evaluate(() => window.attnvizDebug.headWindow())).windowed, true);
    await app.page.selectOption('#zoom', 'width');
    await waitDrawn(app.page, () => window.attnvizDebug.state.zoom === 'width' && window.attnvizDebug.headWindow() && !window.attnvizDebug.headWindow().windowed);
    const from = await app.page.evaluate(() => window.attnvizDebug.linesFrom);
    assert.ok(from > 0, 'the line budget left faint lines out');
    const pt = await app.page.evaluate(() => window.attnvizDebug.tokenPoint('q', 5));
    const box = await app.page.locator('canvas#view').boundingBox();
    await app.page.mouse.move(box.x + pt.x, box.y + pt.y);
    await waitDrawn(app.page, () => window.attnvizDebug.linesFrom === 0);
  } finally {
    await app.close();
  }
});

test('past 512 tokens the truncation is a visible warning and typing runs at most one forward behind (defect 8)', async () => {
  const t = Array.from({ length: 700 }, (_, i) => `word${i % 50}`).join(' ');
  const app = await openAt({ m: 'minilm-l6', t: 'short' });
  try {
    // Paste the long text at once (as a user does), then type 12 characters fast.
    await app.page.$eval('#text', (e, v) => {
      e.value = v;
      e.dispatchEvent(new Event('input', { bubbles: true }));
    }, t);
    await waitDrawn(app.page, (x) => window.attnvizDebug.text === x, t, 120_000);
    const warn = app.page.locator('#truncation');
    assert.equal(await warn.isVisible(), true, 'the truncation warning is shown');
    assert.equal(await warn.getAttribute('role'), 'alert');
    assert.match(await warn.textContent(), /only its first 512 tokens/);
    const box = await warn.boundingBox();
    assert.ok(box.height >= 24, `the warning is more than a small grey line (${box.height}px high)`);

    // The forwards the page asks the worker for and their answers, each with its time (an
    // answer's: when its message event was made, before the page's handler and what its promise
    // runs next, which may be the next request), and the time of each keystroke.
    await app.page.evaluate(() => {
      const f = (window.forwards = { posts: [], answers: [], keys: [] });
      const ids = new Set();
      const orig = Worker.prototype.postMessage;
      Worker.prototype.postMessage = function (m, ...rest) {
        if (m && m.type === 'attend') {
          if (!this.forwardsWatched) {
            this.forwardsWatched = true;
            this.addEventListener('message', (e) => {
              if (e.data && e.data.type !== 'progress' && ids.delete(e.data.id)) f.answers.push(e.timeStamp);
            });
          }
          ids.add(m.id);
          f.posts.push({ at: performance.now(), text: m.text });
        }
        return orig.call(this, m, ...rest);
      };
      document.getElementById('text').addEventListener('input', (e) => f.keys.push(e.timeStamp));
    });
    await app.page.focus('#text');
    await app.page.keyboard.press('End');
    const typed = ' abcdefghijk';
    const t0 = Date.now();
    await app.page.keyboard.type(typed, { delay: 15 });
    const typingMs = Date.now() - t0;
    await waitDrawn(app.page, (x) => window.attnvizDebug.text === x, `${t}${typed}`, 120_000);
    const f = await app.page.evaluate(() => window.forwards);
    const latency = await app.page.evaluate(() => window.attnvizDebug.lastLatencyMs);
    const lastKey = Math.max(...f.keys);
    const answeredWhileTyping = f.answers.filter((at) => at <= lastKey).length;
    // In flight: requests posted and not answered yet, over time (an answer first at a tie).
    const timeline = [...f.posts.map((p) => [p.at, 1]), ...f.answers.map((at) => [at, -1])].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let inFlight = 0;
    let maxInFlight = 0;
    for (const [, d] of timeline) maxInFlight = Math.max(maxInFlight, (inFlight += d));
    console.log(`typing ${typed.length} characters at 512 tokens: ${typingMs} ms to type, ${f.posts.length} forwards posted, ${answeredWhileTyping} answered while typing, last keystroke → drawn ${latency == null ? '?' : latency.toFixed(0)} ms`);
    assert.equal(f.keys.length, typed.length, 'every keystroke reached the text box');
    // Coalescing, whatever the machine's speed: never two forwards in flight, so during the typing
    // at most one more forward than answers came, and after it one more (the newest text, owed).
    assert.equal(maxInFlight, 1, `forwards in flight at once: ${maxInFlight}`);
    assert.ok(f.posts.length <= answeredWhileTyping + 2, `${typed.length} keystrokes posted ${f.posts.length} forwards while ${answeredWhileTyping} answers came: at most one in flight and one owed`);
    // The newest text is the one asked for last and the one drawn.
    assert.equal(f.posts.at(-1).text, `${t}${typed}`);
    assert.equal(await app.page.evaluate(() => window.attnvizDebug.text), await app.page.inputValue('#text'));
    // Back under the limit, the warning goes away.
    await app.page.$eval('#text', (e) => {
      e.value = 'a short one';
      e.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await waitDrawn(app.page, () => window.attnvizDebug.text === 'a short one', null, 120_000);
    assert.equal(await warn.isVisible(), false);
  } finally {
    await app.close();
  }
});

test('a first visit downloads each script and the wasm once; progress is in MiB (defect 9)', async () => {
  const logFrom = server.stderr.length;
  const context = await browser.newContext();
  const page = await context.newPage();
  const progressTexts = [];
  await page.exposeFunction('recordProgress', (t) => progressTexts.push(t));
  await page.addInitScript(() => {
    new MutationObserver(() => {
      const e = document.getElementById('progress-text');
      if (e && e.textContent) window.recordProgress(e.textContent);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  try {
    await page.goto(server.url);
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 180_000 });
    // The wasm build the worker loaded (pkg/relaxed/ in Chromium, pkg/ without relaxed SIMD).
    const dir = await page.evaluate(() => window.attnvizDebug.build.dir);
    // The service worker is registered after the first draw and fills its cache: wait for it.
    await page.waitForFunction(async (dir) => {
      const reg = await navigator.serviceWorker.getRegistration();
      if (!reg || !reg.active) return false;
      const keys = await caches.keys();
      for (const k of keys) {
        if (!k.startsWith('attnviz-shell')) continue;
        const c = await caches.open(k);
        if ((await c.keys()).some((r) => r.url.endsWith(`/${dir}attnviz_bg.wasm`))) return true;
      }
      return false;
    }, dir, { timeout: 60_000, polling: 200 });
    const log = server.stderr.slice(logFrom);
    const counts = {};
    for (const m of log.matchAll(/"GET (\S+) HTTP\/[\d.]+" 200 /g)) counts[m[1]] = (counts[m[1]] || 0) + 1;
    for (const f of ['/page/app.js', '/core/session.js', '/views/index.js', '/worker/worker.js', `/${dir}attnviz.js`, `/${dir}attnviz_bg.wasm`]) {
      assert.equal(counts[f], 1, `${f} downloaded ${counts[f] || 0} times: ${JSON.stringify(counts)}`);
    }
    const twice = Object.entries(counts).filter(([, n]) => n > 1);
    assert.deepEqual(twice, [], 'nothing is downloaded twice');
    // The bar shows the download in MiB, then (a cold first forward can take a while) the layer
    // the forward is at.
    const downloads = progressTexts.filter((t) => !/^layer \d+ of 6$/.test(t));
    assert.ok(downloads.length > 0, 'the model download showed its progress');
    for (const t of downloads) assert.match(t, /^\d+\.\d MiB \/ \d+\.\d MiB$/);
  } finally {
    await context.close();
  }
});

test('a repeat visit rewrites only the shell files that changed into the service worker\'s cache', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const ready = () => page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 180_000 });
  // The x-test-mark header of each file's copy in the shell cache (null: no mark; undefined: no copy).
  const marks = (files) => page.evaluate(async (files) => {
    const name = (await caches.keys()).find((k) => k.startsWith('attnviz-shell'));
    const cache = name && await caches.open(name);
    return Promise.all(files.map(async (f) => {
      const res = cache && await cache.match(new URL(f, location.href));
      return res ? res.headers.get('x-test-mark') : undefined;
    }));
  }, files);
  const until = async (what, pred) => {
    for (const end = Date.now() + 60_000; Date.now() < end; await page.waitForTimeout(100)) if (pred(await marks(what))) return;
    assert.fail(`cache copies of ${what.join(', ')}: ${JSON.stringify(await marks(what))}`);
  };
  try {
    await page.goto(server.url);
    await ready();
    const dir = await page.evaluate(() => window.attnvizDebug.build.dir);
    const kept = ['page/app.js', `${dir}attnviz_bg.wasm`];
    const changed = 'core/session.js';
    // Once the worker has cached them, mark each copy: two with the server's validators as they
    // are, one claiming an older version.
    await until([...kept, changed], (m) => m.every((x) => x === null));
    await page.evaluate(async ({ kept, changed }) => {
      const cache = await caches.open((await caches.keys()).find((k) => k.startsWith('attnviz-shell')));
      const mark = async (f, older) => {
        const url = new URL(f, location.href);
        const res = await cache.match(url);
        const headers = new Headers(res.headers);
        headers.set('x-test-mark', 'kept copy');
        if (older) headers.set('last-modified', 'Thu, 01 Jan 1970 00:00:00 GMT');
        await cache.put(url, new Response(await res.blob(), { status: res.status, headers }));
      };
      for (const f of kept) await mark(f, false);
      await mark(changed, true);
    }, { kept, changed });
    assert.deepEqual(await marks([...kept, changed]), ['kept copy', 'kept copy', 'kept copy']);
    await page.reload();
    await ready();
    // The older copy is replaced by what the server sent...
    await until([changed], ([m]) => m === null);
    await page.waitForTimeout(500);
    // ...and the copies of the same version are not written again (the wasm build is 2.8 MB).
    assert.deepEqual(await marks(kept), ['kept copy', 'kept copy']);
  } finally {
    await context.close();
  }
});

test('view tabs and kind tabs control a tab panel labelled by the selected tab (defect 10)', async () => {
  const app = await openAt({ m: 'en-pt-tiny', t: 'The cat sat on the mat.' });
  try {
    const check = () => app.page.evaluate(() => {
      const out = [];
      for (const tab of document.querySelectorAll('[role=tab]')) {
        if (tab.hidden) continue;
        const panel = document.getElementById(tab.getAttribute('aria-controls') || '');
        out.push({ id: tab.id, panelRole: panel && panel.getAttribute('role'), selected: tab.getAttribute('aria-selected') === 'true', labelledBy: panel ? panel.getAttribute('aria-labelledby') || '' : '' });
      }
      return out;
    });
    let tabs = await check();
    assert.ok(tabs.length >= 6, `view tabs and kind tabs: ${tabs.length}`);
    for (const t of tabs) assert.equal(t.panelRole, 'tabpanel', `${t.id} controls a tabpanel`);
    for (const t of tabs.filter((x) => x.selected)) assert.ok(t.labelledBy.split(' ').includes(t.id), `panel labelled by ${t.id}`);
    await app.page.click('[role=tab][data-view=heatmap]');
    await waitDrawn(app.page, () => window.attnvizDebug.view === 'heatmap');
    tabs = await check();
    const sel = tabs.filter((x) => x.selected).map((x) => x.id);
    assert.ok(sel.includes('tab-view-heatmap'), sel.join());
    assert.ok(tabs.find((x) => x.id === 'tab-view-heatmap').labelledBy.includes('tab-view-heatmap'));
  } finally {
    await app.close();
  }
});

test('a step-view widget whose model changes draws the new model\'s numbers', async () => {
  const { page, close } = await openWidget(browser, server.url, { model: 'minilm', text: 'The cat sat on the mat.', view: 'step' });
  try {
    const label = () => page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
    await page.waitForFunction(() => /query "\[CLS\]"/.test(document.getElementById('w')?.shadowRoot.querySelector('canvas').getAttribute('aria-label') || ''), null, { timeout: 180_000 });
    await page.evaluate(() => document.getElementById('w').setAttribute('model', 'en-pt'));
    await page.waitForFunction(() => /query "▁The"/.test(document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label') || ''), null, { timeout: 180_000 });
    assert.match(await label(), /^Step view, layer 1, head 1, query "▁The"/);
  } finally {
    await close();
  }
});
