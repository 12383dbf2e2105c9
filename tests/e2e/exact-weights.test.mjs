// Issue 26: the numbers on screen are the model's. MiniLM's first map comes from its int8 weights;
// its exact f32 weights follow in the background (first-visit.test.mjs measures that visit), are
// kept for the next visit, are not fetched on a connection that saves data or when a permalink
// asks for int8; and one text is compared through two weight sets (int8 vs exact) with the
// difference map, in the page (picker and permalink) and the widget (compare-model).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { cliAt, cliBlock, cliJson, waitDrawn } from './cli-helpers.mjs';
import { drawnAfter } from './widget-helpers.mjs';

const TEXT = "The animal didn't cross the street because it was too tired.";
const F32_FILE = '/minilm/model.safetensors';
const INT8_FILE = '/minilm/model.int8.safetensors';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** The weight files a context requests over the network (the worker's too), by path. */
function watchWeights(context) {
  const seen = [];
  context.on('request', (req) => {
    const p = new URL(req.url()).pathname;
    if (p.endsWith(F32_FILE) || p.endsWith(INT8_FILE)) seen.push(p);
  });
  return seen;
}

const status = (page) => page.textContent('#status');

test('a later visit starts from the exact weights kept in this browser: the first map is exact and no weights are downloaded again', async () => {
  // One browser profile (one context: one cache) for both visits.
  const context = await browser.newContext();
  try {
    const first = await openPageIn(context, server.url);
    assert.match(await status(first), /exact f32 weights · /, 'the first visit ends on the exact weights');
    await first.close();
    const seen = watchWeights(context);
    const again = await openPageIn(context, server.url, { settle: false });
    assert.match(await status(again), /^all-MiniLM-L6-v2 · exact f32 weights · /, 'the first map of the second visit is already exact');
    await again.waitForTimeout(1500);
    assert.deepEqual(seen, [], 'no weights were downloaded on the second visit');
    await again.close();
  } finally {
    await context.close();
  }
});

/** A page of `url` in `context`, once its first map is drawn (settled unless `settle: false`). */
async function openPageIn(context, url, { settle = true } = {}) {
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000, polling: 100 });
  if (settle) await page.waitForFunction(() => !window.attnvizDebug.computing, null, { timeout: 120_000, polling: 100 });
  return page;
}

test('on a connection that asks to save data the exact weights are not fetched, and the status line says so; picking “exact f32 only” fetches them', async () => {
  const seen = [];
  const app = await openApp(browser, server.url, {
    settle: false,
    onContext: async (context) => {
      await context.addInitScript(() => Object.defineProperty(Navigator.prototype, 'connection', { get: () => ({ saveData: true, effectiveType: '4g' }) }));
      context.on('request', (req) => seen.push(new URL(req.url()).pathname));
    },
  });
  const { page } = app;
  try {
    await page.waitForFunction(() => /exact f32 weights not fetched/.test(document.getElementById('status').textContent), null, { timeout: 30_000 });
    assert.match(await status(page), /int8 weights \(exact f32 weights not fetched on the browser asks to save data: pick “exact” weights to fetch them\)/);
    await page.waitForTimeout(1500);
    assert.ok(!seen.some((p) => p.endsWith(F32_FILE)), 'the f32 weights were not requested');
    assert.equal(await page.evaluate(() => window.attnvizDebug.computing), false, 'nothing is pending');
    await page.selectOption('#weights', 'exact');
    await page.waitForFunction(() => /^all-MiniLM-L6-v2 · exact f32 weights · /.test(document.getElementById('status').textContent), null, { timeout: 120_000 });
    assert.ok(seen.some((p) => p.endsWith(F32_FILE)), 'the f32 weights were fetched once asked for');
    assert.match(await page.evaluate(() => location.hash), /[#&]w=exact(&|$)/, 'the permalink says exact');
  } finally {
    await app.close();
  }
});

test('a permalink with w=int8 keeps the int8 weights: the exact file is never fetched, and the picker says int8 only', async () => {
  const seen = [];
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, w: 'int8' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { onContext: (context) => context.on('request', (req) => seen.push(new URL(req.url()).pathname)) });
  const { page } = app;
  try {
    await page.waitForTimeout(1500);
    assert.match(await status(page), /^all-MiniLM-L6-v2 · int8 weights · 16 tokens/);
    assert.ok(!seen.some((p) => p.endsWith(F32_FILE)), 'the f32 weights were not requested');
    assert.equal(await page.inputValue('#weights'), 'int8');
    const drawn = await page.evaluate(() => window.attnvizDebug.attentions());
    const int8 = cliJson('attend', '--model', 'models/minilm', '--text', TEXT, '--weights', 'int8');
    const flat = int8.attentions[3].data.flat(2);
    assert.ok(flat.every((v, i) => Math.abs(v - drawn[3].data[i]) < 1e-4), 'layer 4 is the int8 weights’ (CLI --weights int8)');
  } finally {
    await app.close();
  }
});

/**
 * A context whose requests for the f32 weights never get an answer (a slow connection, held), and
 * what became of them: { onContext, requested, failed } (failed: the request stopped by the page).
 */
function holdExactWeights() {
  const held = { requested: 0, failed: [] };
  held.onContext = async (context) => {
    await context.route(`**${F32_FILE}`, () => { held.requested++; }); // never answered
    context.on('requestfailed', (req) => {
      if (new URL(req.url()).pathname.endsWith(F32_FILE)) held.failed.push(req.failure()?.errorText);
    });
  };
  return held;
}

test('page: while the exact weights download, the status line names their size beside a Stop button; Stop keeps the int8 weights (picker, permalink) and ends the download', async () => {
  const held = holdExactWeights();
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { settle: false, onContext: held.onContext });
  const { page } = app;
  try {
    await page.waitForFunction(() => /int8 weights \(exact f32 weights loading: [\d.]+ MiB \/ 87\.\d MiB\)/.test(document.getElementById('status').textContent), null, { timeout: 60_000 });
    assert.ok(await page.isVisible('#stop-exact'), 'no Stop button while the exact weights download');
    assert.equal(held.requested, 1);
    await page.click('#stop-exact');
    await page.waitForFunction(() => document.getElementById('stop-exact').hidden && /^all-MiniLM-L6-v2 · int8 weights · 16 tokens/.test(document.getElementById('status').textContent));
    assert.doesNotMatch(await status(page), /exact f32/);
    assert.equal(await page.inputValue('#weights'), 'int8');
    await page.waitForFunction(() => /[#&]w=int8(&|$)/.test(location.hash));
    // The worker stopped the download: the request ended, from the page's side.
    for (let i = 0; i < 50 && !held.failed.length; i++) await page.waitForTimeout(100);
    assert.equal(held.failed.length, 1, 'the f32 download was not stopped');
    // Typing still draws, from the int8 weights.
    await page.fill('#text', 'The cat sat.');
    await page.waitForFunction(() => window.attnvizDebug.text === 'The cat sat.' && window.attnvizDebug.weights === 'int8');
    assert.equal(held.requested, 1, 'the f32 weights were asked for again');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: its footer names the exact weights’ download and its size beside a Stop button; Stop keeps the int8 weights and ends the download', async () => {
  const held = holdExactWeights();
  const { page, close } = await openWidget(browser, server.url, { model: 'minilm', text: TEXT }, { onContext: held.onContext });
  try {
    const foot = () => page.locator('#w >> .foot').innerText();
    await page.waitForFunction(() => /int8 weights \(exact f32 weights loading: [\d.]+ MiB \/ 87\.\d MiB\)/.test(document.getElementById('w').shadowRoot.querySelector('.foot').textContent), null, { timeout: 60_000 });
    await page.locator('#w >> .stop-exact').click();
    await page.waitForFunction(() => document.getElementById('w').shadowRoot.querySelector('.stop-exact').hidden);
    assert.doesNotMatch(await foot(), /exact f32/);
    assert.match(await foot(), /16 tokens · int8 weights · /);
    for (let i = 0; i < 50 && !held.failed.length; i++) await page.waitForTimeout(100);
    assert.equal(held.failed.length, 1, 'the f32 download was not stopped');
  } finally {
    await close();
  }
});

/** The panels of a comparison, by name ('a', 'b', 'd'). */
const panels = async (page) => Object.fromEntries((await page.evaluate(() => window.attnvizDebug.comparePanels())).map((p) => [p.panel, p]));

/** The heatmap cell where the CLI's int8 and f32 weights differ most, of head `h` of block `layer`. */
function widestCell(layer, h) {
  const f32 = cliBlock(cliJson('attend', '--model', 'models/minilm', '--text', TEXT).attentions, 'encoder_self', layer);
  const int8 = cliBlock(cliJson('attend', '--model', 'models/minilm', '--text', TEXT, '--weights', 'int8').attentions, 'encoder_self', layer);
  let best = { gap: -1 };
  for (let i = 0; i < f32.query_len; i++) {
    for (let j = 0; j < f32.key_len; j++) {
      const gap = Math.abs(cliAt(f32, h, i, j) - cliAt(int8, h, i, j));
      if (gap > best.gap) best = { gap, i, j, f32: cliAt(f32, h, i, j), int8: cliAt(int8, h, i, j) };
    }
  }
  return best;
}

test('page: “this text: int8 (A) vs exact f32 weights (B)” draws both maps and the difference map; hovering a difference cell reads B − A with the CLI’s int8 and f32 weights; the permalink keeps it', async () => {
  const layer = 3;
  const head = 1;
  const want = widestCell(layer, head);
  assert.ok(want.gap > 5e-3, `int8 and f32 differ by ${want.gap} at most in layer ${layer + 1}, head ${head + 1}`);
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: 'heatmap', l: String(layer), h: String(head) }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1400, height: 1400 });
    await page.selectOption('#compare-model', 'exact');
    await waitDrawn(page, () => { const p = window.attnvizDebug.comparePanels(); return p && p.length === 3; });
    assert.match(await page.evaluate(() => location.hash), /[#&]cm=exact(&|$)/);
    // A is int8 by the comparison's choice: the status line says so, not that exact ones come next.
    assert.match(await status(page), /^all-MiniLM-L6-v2 · int8 weights · 16 tokens/);
    assert.equal(await page.isHidden('#compare'), true, 'the second sentence box is not asked for: B is this text');
    const aria = await page.getAttribute('canvas#view', 'aria-label');
    assert.match(aria, /^Comparison of all-MiniLM-L6-v2, int8 weights \(A\) and all-MiniLM-L6-v2, exact f32 weights \(B\) on one text\./);
    assert.match(aria, /Aligned token by token: A and B have the same tokens \(16\)/);
    const ps = await panels(page);
    const d = ps.d;
    const x = d.x + d.g.left + (want.j + 0.5) * d.g.cell;
    const y = d.y + d.g.top + (want.i + 0.5) * d.g.cell;
    await page.evaluate((yy) => { document.getElementById('canvas-wrap').scrollTop = Math.max(0, yy - 200); }, y);
    const r = await page.locator('canvas#view').boundingBox();
    await page.mouse.move(r.x + x, r.y + y);
    await page.waitForFunction(() => document.getElementById('side-hint').textContent.startsWith('B − A, query'));
    const text = await page.textContent('#side-hint');
    const m = /: ([+−-][\d.]+) \(A ([\d.]+), B ([\d.]+)\)/.exec(text);
    assert.ok(m, text);
    assert.ok(Math.abs(Number(m[2]) - want.int8) < 6e-4, `A is int8: ${text}; CLI int8 ${want.int8}`);
    assert.ok(Math.abs(Number(m[3]) - want.f32) < 6e-4, `B is exact: ${text}; CLI f32 ${want.f32}`);
    assert.ok(Math.abs(Number(m[1].replace('−', '-')) - (want.f32 - want.int8)) < 1.1e-3, `B − A: ${text}; CLI ${want.f32 - want.int8}`);

    // The permalink in a new page draws the same comparison.
    const link = await page.evaluate(() => location.href);
    const again = await openApp(browser, link);
    try {
      await waitDrawn(again.page, () => { const p = window.attnvizDebug.comparePanels(); return p && p.length === 3; });
      assert.equal(await again.page.inputValue('#compare-model'), 'exact');
    } finally {
      await again.close();
    }
    // Back to a second sentence: the box returns, the comparison ends while it is empty.
    await page.selectOption('#compare-model', '');
    await page.waitForFunction(() => !document.getElementById('compare').hidden && !/Comparison/.test(document.querySelector('canvas#view').getAttribute('aria-label')));
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: a second sentence compared with the exact weights chosen is drawn (B by the same weights as A)', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: 'The cat sat on the mat.', c: 'The dog sat on the mat.', v: 'heatmap', w: 'exact' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await waitDrawn(page, () => { const p = window.attnvizDebug.comparePanels(); return p && p.length === 3; });
    assert.deepEqual(await page.evaluate(() => window.attnvizDebug.compareTokens), ['[CLS]', 'the', 'dog', 'sat', 'on', 'the', 'mat', '.', '[SEP]']);
    assert.match(await status(page), /exact f32 weights/);
  } finally {
    await app.close();
  }
});

test('widget: compare-model="exact" draws the text by int8 (A) and exact (B) weights with the difference map; removing the attribute ends it', async () => {
  const w = await openWidget(browser, server.url, { model: 'minilm', text: TEXT, view: 'heatmap', layer: '4', head: '2', 'compare-model': 'exact' });
  const { page } = w;
  const label = () => page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
  try {
    await drawnAfter(page);
    await page.waitForFunction(() => /Difference B − A · Layer 4 · head 2/.test(document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label')), null, { timeout: 120_000 });
    assert.match(await label(), /^Comparison of all-MiniLM-L6-v2, int8 weights \(A\) and all-MiniLM-L6-v2, exact f32 weights \(B\) on one text\./);
    const want = widestCell(3, 1);
    const at = await page.evaluate(({ i, j }) => {
      const el = document.getElementById('w');
      const d = el.shell.geom().panels.find((p) => p.panel === 'd');
      const c = el.shadowRoot.querySelector('canvas').getBoundingClientRect();
      const y = c.top + window.scrollY + d.y + d.g.top + (i + 0.5) * d.g.cell;
      window.scrollTo(0, Math.max(0, y - 200));
      const c2 = el.shadowRoot.querySelector('canvas').getBoundingClientRect();
      return { x: c2.left + d.x + d.g.left + (j + 0.5) * d.g.cell, y: c2.top + d.y + d.g.top + (i + 0.5) * d.g.cell };
    }, want);
    await page.mouse.move(at.x, at.y);
    await page.waitForFunction(() => /^B − A, query/.test(document.getElementById('w').shadowRoot.querySelector('.readout').textContent));
    const text = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('.readout').textContent);
    const m = /: ([+−-][\d.]+) \(A ([\d.]+), B ([\d.]+)\)/.exec(text);
    assert.ok(m && Math.abs(Number(m[2]) - want.int8) < 6e-4 && Math.abs(Number(m[3]) - want.f32) < 6e-4, `${text}; CLI int8 ${want.int8}, f32 ${want.f32}`);
    await page.evaluate(() => document.getElementById('w').removeAttribute('compare-model'));
    await page.waitForFunction(() => /^Heatmap/.test(document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label')), null, { timeout: 60_000 });
  } finally {
    await w.close();
  }
});
