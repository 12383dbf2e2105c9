// The page (issue 4): typing redraws, layer/head/kind/view switches, translation, step view vs
// the CLI, PNG/SVG export, permalinks, no request leaving the origin; and the README screenshots.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launchBrowser, openApp, setViewport, downloadBytes } from './harness.mjs';
import { cliBinary } from './cli-helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
// Two tests here assert nothing a wrong page would fail, so `make test` skips them: the README's
// screenshots run in `make screenshots` (which names the folder for them, docs/screenshots) and
// the keystroke → drawn timing in `make bench` (ATTNVIZ_BENCH=1).
const SHOTS = process.env.ATTNVIZ_SCREENSHOTS_DIR ? path.resolve(ROOT, process.env.ATTNVIZ_SCREENSHOTS_DIR) : null;
const ONLY_IN_SCREENSHOTS = { skip: !SHOTS && 'runs in make screenshots' };
const ONLY_IN_BENCH = { skip: process.env.ATTNVIZ_BENCH !== '1' && 'runs in make bench' };

let server;
let browser;
let app; // one page shared by most tests; each test first puts it into the state it needs (showState)

before(async () => {
  server = await startServer({ prefix: '/' });
  browser = await launchBrowser();
  app = await openApp(browser, server.url);
  await setViewport(app.page, { width: 1280, height: 900 });
});

after(async () => {
  // The shared page, after whichever of the tests above ran: nothing left its origin, nothing threw.
  if (app) {
    assert.deepEqual(app.outsideRequests, [], 'the shared page made requests outside its origin');
    assert.deepEqual(app.pageErrors, [], 'the shared page threw');
  }
  await app?.close();
  await browser?.close();
  await server?.close();
});

const dbg = (page) => page.evaluate(() => ({ ...window.attnvizDebug, step: window.attnvizDebug.step, hash: location.hash }));

/** Run `action`, then wait until the page has drawn again (drawCount grew) and `until` holds. */
async function afterDraw(page, action, until = () => true, timeout = 60_000) {
  const before = await page.evaluate(() => window.attnvizDebug.drawCount);
  await action();
  const t0 = Date.now();
  for (;;) {
    const d = await dbg(page);
    if (d.drawCount > before && until(d)) return d;
    if (Date.now() - t0 > timeout) throw new Error(`no matching redraw within ${timeout} ms; last debug: ${JSON.stringify({ ...d, step: d.step && '…' }).slice(0, 1500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Fraction of non-background pixels and number of distinct colours of the main canvas. */
function canvasInk(page, selector = 'canvas#view') {
  return page.evaluate((sel) => {
    const c = document.querySelector(sel);
    const ctx = c.getContext('2d');
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    const bg = [data[0], data[1], data[2]];
    let ink = 0;
    const colours = new Set();
    for (let i = 0; i < data.length; i += 4 * 7) {
      if (Math.abs(data[i] - bg[0]) + Math.abs(data[i + 1] - bg[1]) + Math.abs(data[i + 2] - bg[2]) > 30) ink++;
      if (colours.size < 5000) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    }
    return { ink: ink / (data.length / 28), colours: colours.size, width: c.width, height: c.height };
  }, selector);
}

const SENTENCE = 'Colorless green ideas sleep furiously.';
// Permalink fields the page leaves out when they hold their default value.
const HASH_DEFAULTS = { v: 'head', k: 'encoder_self', a: 'head', th: '0', q: '0', s: '0' };
const sortedParams = (p) => [...p].map(([k, v]) => `${k}=${v}`).sort().join('&');

/**
 * Put the shared page into the state a permalink describes — MiniLM, SENTENCE, layer 0, head 0 and
 * every other field at its default unless `params` says otherwise — and wait until that is drawn.
 * Each test starts with this, so it passes alone (--test-name-pattern) or after any other test.
 */
async function showState(page, params = {}) {
  const want = new URLSearchParams({ m: 'minilm-l6', t: SENTENCE, l: '0', h: '0', ...params });
  for (const [k, v] of Object.entries(HASH_DEFAULTS)) if (want.get(k) === v) want.delete(k);
  const target = sortedParams(want);
  // Setting the hash the page already has fires no hashchange: then set the same fields reordered.
  const current = await page.evaluate(() => location.hash.replace(/^#/, ''));
  const hash = want.toString() === current ? new URLSearchParams([...want].reverse()).toString() : want.toString();
  return afterDraw(
    page,
    () => page.evaluate((h) => { location.hash = h; }, hash),
    (d) => sortedParams(new URLSearchParams(d.hash.replace(/^#/, ''))) === target && d.state.pin === null,
    180_000,
  );
}

async function selectModel(page, id) {
  await afterDraw(page, () => page.selectOption('#model', id), (d) => d.modelId === id, 180_000);
}

test('the default model is drawn in the head view with its tokens, and the status line says so', async () => {
  const { page } = app;
  const d = await showState(page);
  assert.equal(d.modelId, 'minilm-l6');
  assert.ok(d.drawCount >= 1);
  assert.equal(d.tokens[0], '[CLS]');
  assert.equal(d.tokens.at(-1), '[SEP]');
  assert.equal(await page.getAttribute('canvas#view', 'data-view'), 'head');
  const status = await page.textContent('#status');
  assert.match(status, new RegExp(`${d.tokens.length} tokens`));
  assert.match(status, /ms per forward/);
  const ink = await canvasInk(page);
  assert.ok(ink.ink > 0.01 && ink.colours > 20, `head view looks blank: ${JSON.stringify(ink)}`);
  const label = await page.getAttribute('canvas#view', 'aria-label');
  assert.match(label, /Head view/);
});

test('typing a sentence redraws the view with the new tokens', async () => {
  const { page } = app;
  await showState(page, { t: 'The cat sat on the mat.' });
  await page.fill('#text', '');
  const d = await afterDraw(
    page,
    () => page.type('#text', 'Colorless green ideas sleep furiously.', { delay: 15 }),
    (x) => x.text === 'Colorless green ideas sleep furiously.',
  );
  assert.equal(d.tokens[0], '[CLS]');
  assert.ok(d.tokens.includes('green') && d.tokens.includes('ideas'), JSON.stringify(d.tokens));
  assert.ok(d.tokens.some((t) => t.startsWith('##')), `expected a sub-word piece in ${JSON.stringify(d.tokens)}`);
  assert.equal(d.tokens.at(-1), '[SEP]');
  assert.ok(d.lastForwardMs > 0);
  // The canvas is labelled with the new token count.
  const label = await page.getAttribute('canvas#view', 'aria-label');
  assert.match(label, new RegExp(`${d.tokens.length} query tokens`));
  // The permalink follows the text.
  const hash = await page.evaluate(() => decodeURIComponent(location.hash.replace(/\+/g, ' ')));
  assert.match(hash, /Colorless green ideas sleep furiously\./);
});

test('layer, head, view and filters can be switched with the mouse and the keyboard', async () => {
  const { page } = app;
  await showState(page);
  // Layer via the select
  await afterDraw(page, () => page.selectOption('#layer', '3'), (x) => x.state.layer === 3);
  assert.equal(await page.getAttribute('canvas#view', 'data-layer'), '3');
  // Layer via the keyboard (focus the canvas, not a text field)
  await page.focus('canvas#view');
  await afterDraw(page, () => page.keyboard.press('ArrowDown'), (x) => x.state.layer === 4);
  await afterDraw(page, () => page.keyboard.press('ArrowUp'), (x) => x.state.layer === 3);
  // Head via the keyboard: → shows the next head alone
  let d = await afterDraw(page, () => page.keyboard.press('ArrowRight'), (x) => x.state.head === 1);
  assert.deepEqual(d.state.heads, [1]);
  // Double-click a head swatch: only that head
  d = await afterDraw(page, () => page.dblclick('#heads .swatch[data-head="5"]'), (x) => x.state.head === 5);
  assert.deepEqual(d.state.heads, [5]);
  assert.equal(await page.getAttribute('#heads .swatch[data-head="5"]', 'aria-pressed'), 'true');
  assert.equal(await page.getAttribute('#heads .swatch[data-head="4"]', 'aria-pressed'), 'false');
  await afterDraw(page, () => page.click('#heads-all'), (x) => x.state.heads === null);
  // Views
  for (const v of ['model', 'heatmap', 'step', 'head']) {
    await afterDraw(page, () => page.click(`#views [data-view="${v}"]`), (x) => x.view === v && (v !== 'step' || !!x.step));
    assert.equal(await page.getAttribute('canvas#view', 'data-view'), v);
    const ink = await canvasInk(page);
    assert.ok(ink.ink > 0.005, `view ${v} looks blank: ${JSON.stringify(ink)}`);
  }
  // Model view: clicking a small map opens it in the head view
  await afterDraw(page, () => page.click('#views [data-view="model"]'), (x) => x.view === 'model');
  const box = await page.locator('canvas#view').boundingBox();
  // Same layout as views/grid.js: 34 px of layer labels, then cells of `cell` px every cell + 6.
  const cell = Math.max(28, Math.min(110, Math.floor((box.width - 46) / 12) - 6));
  d = await afterDraw(page, () => page.mouse.click(box.x + 34 + 2 * (cell + 6) + cell / 2, box.y + 48 + (cell + 22) + cell / 2), (x) => x.view === 'head');
  assert.equal(d.state.layer, 1, JSON.stringify(d.state));
  assert.equal(d.state.head, 2, JSON.stringify(d.state));
  assert.deepEqual(d.state.heads, [2]);
  // Aggregates: a pinned query token's top weights under rollout (through layers 1–2) are not
  // those of layer 2's head mean.
  await page.mouse.move(0, 0);
  await page.focus('canvas#view');
  await afterDraw(page, () => page.keyboard.press(']'), (x) => !!x.state.pin);
  const topList = () => page.$$eval('#top-list li', (lis) => lis.map((li) => li.textContent));
  await afterDraw(page, () => page.selectOption('#agg', 'rollout'), (x) => x.state.agg === 'rollout');
  const rolloutTop = await topList();
  await afterDraw(page, () => page.selectOption('#agg', 'mean'), (x) => x.state.agg === 'mean');
  const meanTop = await topList();
  assert.ok(rolloutTop.length >= 3 && meanTop.length >= 3, JSON.stringify({ rolloutTop, meanTop }));
  assert.notDeepEqual(rolloutTop, meanTop, 'rollout shows the same weights as the head mean');
  await afterDraw(page, () => page.keyboard.press('Escape'), (x) => x.state.pin === null);
  // Filters (their <details> may already be open: it is not part of the permalink)
  if (!(await page.isVisible('#hide-special'))) await page.click('#filters summary');
  d = await afterDraw(page, () => page.check('#hide-special'), (x) => x.state.hideSpecial);
  let label = await page.getAttribute('canvas#view', 'aria-label');
  assert.match(label, new RegExp(`${d.tokens.length - 2} query tokens`), 'special tokens should be hidden');
  d = await afterDraw(page, () => page.check('#merge'), (x) => x.state.merge);
  label = await page.getAttribute('canvas#view', 'aria-label');
  const pieces = d.tokens.filter((t) => t.startsWith('##')).length;
  assert.match(label, new RegExp(`${d.tokens.length - 2 - pieces} query tokens`), 'sub-words should be merged into words');
  const notes = await page.textContent('#notes');
  assert.match(notes, /renormalised/);
  assert.match(notes, /summed/);
  await afterDraw(page, () => page.uncheck('#merge'), (x) => !x.state.merge);
  await afterDraw(page, () => page.uncheck('#hide-special'), (x) => !x.state.hideSpecial);
  await afterDraw(page, () => page.selectOption('#agg', 'head'), (x) => x.state.agg === 'head');
});

test('hovering a token lists its top weights; clicking pins it', async () => {
  const { page } = app;
  await showState(page);
  const box = await page.locator('canvas#view').boundingBox();
  const pt = await page.evaluate(() => window.attnvizDebug.tokenPoint('q', 2));
  assert.ok(pt, 'no point for query token 2');
  await page.mouse.move(box.x + pt.x, box.y + pt.y);
  await page.waitForFunction(() => document.querySelectorAll('#top-list li').length > 0, null, { timeout: 10_000 });
  await page.mouse.click(box.x + pt.x, box.y + pt.y);
  await page.waitForFunction(() => !!window.attnvizDebug.state.pin, null, { timeout: 10_000 });
  const pinned = await page.evaluate(() => window.attnvizDebug.state.pin);
  assert.ok(pinned, 'clicking a query label did not pin it');
  assert.equal(pinned.side, 'q');
  assert.equal(pinned.index, 2);
  const items = await page.$$eval('#top-list li', (lis) => lis.map((li) => li.textContent));
  assert.ok(items.length >= 3, `top weights not listed: ${JSON.stringify(items)}`);
  await page.mouse.move(0, 0);
  // Keyboard: ] pins the next query token, Esc unpins.
  await page.focus('canvas#view');
  let d = await afterDraw(page, () => page.keyboard.press(']'), (x) => x.state.pin && x.state.pin.index === 3);
  assert.equal(d.state.pin.side, 'q');
  assert.ok((await page.$$('#top-list li')).length >= 3);
  await afterDraw(page, () => page.keyboard.press('Escape'), (x) => x.state.pin === null);
});

test('PNG export is a non-blank image; SVG export has the token labels as text', async () => {
  const { page } = app;
  await showState(page); // head view of SENTENCE, which has "green"
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
  assert.match(dl.suggestedFilename(), /\.png$/);
  const bytes = await downloadBytes(dl);
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'not a PNG');
  const stats = await page.evaluate(async (b64) => {
    const blob = new Blob([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], { type: 'image/png' });
    const bmp = await createImageBitmap(blob);
    const c = new OffscreenCanvas(bmp.width, bmp.height);
    const ctx = c.getContext('2d');
    ctx.drawImage(bmp, 0, 0);
    const { data } = ctx.getImageData(0, 0, bmp.width, bmp.height);
    const colours = new Set();
    for (let i = 0; i < data.length; i += 4 * 5) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    return { w: bmp.width, h: bmp.height, colours: colours.size };
  }, bytes.toString('base64'));
  assert.ok(stats.w > 200 && stats.h > 100 && stats.colours > 20, `PNG looks blank: ${JSON.stringify(stats)}`);

  const [svgDl] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
  assert.match(svgDl.suggestedFilename(), /\.svg$/);
  const svg = (await downloadBytes(svgDl)).toString('utf8');
  const head = svg.slice(0, 300);
  assert.ok(svg.startsWith('<?xml'), head);
  assert.ok(/<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/.test(svg), head);
  assert.ok(svg.includes('>green</text>'), 'the token "green" is not an SVG text element');
  assert.ok(svg.includes('<path '), 'no lines in the SVG');
});

test('a permalink restores the exact state in a new page', async () => {
  const { page } = app;
  await showState(page);
  const text = 'The bank <b>by</b> the river & "quotes" 😀 猫';
  await afterDraw(page, () => page.fill('#text', text), (x) => x.text === text);
  const want0 = (await dbg(page)).state;
  const layer = (want0.layer + 1) % 6;
  await afterDraw(page, () => page.selectOption('#layer', String(layer)), (x) => x.state.layer === layer);
  await afterDraw(page, () => page.click('#views [data-view="heatmap"]'), (x) => x.view === 'heatmap');
  await afterDraw(page, () => page.click('#heads .swatch[data-head="7"]'), (x) => x.state.head === 7);
  await afterDraw(page, () => page.selectOption('#agg', 'mean'), (x) => x.state.agg === 'mean');
  if (!(await page.isVisible('#hide-special'))) await page.click('#filters summary');
  await afterDraw(page, () => page.setChecked('#hide-special', !want0.hideSpecial), (x) => x.state.hideSpecial === !want0.hideSpecial);
  const url = await page.evaluate(() => location.href);
  const want = (await dbg(page)).state;
  // The token text is shown as text, never parsed as HTML.
  assert.equal(await page.locator('b').count(), 0);

  const second = await app.context.newPage();
  await second.goto(url);
  await second.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000 });
  const got = await second.evaluate(() => window.attnvizDebug.state);
  for (const k of ['model', 'text', 'view', 'kind', 'layer', 'head', 'heads', 'agg', 'hideSpecial', 'merge', 'threshold']) {
    assert.deepEqual(got[k], want[k], `permalink lost ${k}`);
  }
  assert.equal(await second.inputValue('#text'), want.text);
  assert.equal(await second.getAttribute('canvas#view', 'data-view'), 'heatmap');
  await second.close();
});

test('the step view probabilities equal the CLI JSON for the same sentence, layer and head', async () => {
  const { page } = app;
  const text = 'The cat sat on the mat.';
  const layer = 2;
  const head = 3;
  const cli = cliBinary();
  // The settled page draws MiniLM's f32 weights (int8 ones draw the first map only): so does the CLI.
  const json = JSON.parse(execFileSync(cli, ['attend', '--model', path.join(ROOT, 'models', 'minilm'), '--text', text, '--format', 'json'], { maxBuffer: 1 << 28 }).toString());
  const block = json.attentions.find((a) => a.kind === 'encoder_self' && a.layer === layer);
  const [H, Tq, Tk] = block.shape;
  assert.equal(H, 12);
  const want = block.data.slice(head * Tq * Tk, (head + 1) * Tq * Tk);

  const hash = new URLSearchParams({ m: 'minilm-l6', t: text, v: 'step', l: String(layer), h: String(head), q: '2' }).toString();
  const d = await afterDraw(
    page,
    () => page.evaluate((h) => { location.hash = h; }, hash),
    (x) => x.step && x.step.layer === layer && x.step.head === head && x.text === text,
  );
  assert.equal(await page.getAttribute('canvas#view', 'data-view'), 'step');
  assert.deepEqual(d.step.keyTokens, json.tokens.source);
  assert.equal(d.step.probs.length, want.length);
  let maxDiff = 0;
  for (let i = 0; i < want.length; i++) maxDiff = Math.max(maxDiff, Math.abs(d.step.probs[i] - want[i]));
  assert.ok(maxDiff < 1e-5, `step-view probabilities differ from the CLI by ${maxDiff}`);
  // The same numbers are the head's row in attend(): the canvas names the query token.
  const label = await page.getAttribute('canvas#view', 'aria-label');
  assert.match(label, /query "cat"/);
});

test('the translator shows "O gato sentou-se no tapete." and its cross-attention', async () => {
  const { page } = app;
  await showState(page); // MiniLM: the translator is then picked with the model menu
  await selectModel(page, 'en-pt-tiny');
  await page.fill('#text', '');
  const d = await afterDraw(page, () => page.type('#text', 'The cat sat on the mat.', { delay: 10 }), (x) => x.text === 'The cat sat on the mat.' && x.outputText);
  assert.equal(d.outputText, 'O gato sentou-se no tapete.');
  assert.equal((await page.textContent('#output')).trim(), 'O gato sentou-se no tapete.');
  assert.ok(d.targetTokens.length >= 5);
  // The kind tabs offer cross-attention; the cross view draws and its scrubber moves the step.
  const kinds = await page.$$eval('#kinds [role=tab]', (b) => b.map((x) => x.dataset.kind));
  assert.ok(kinds.includes('encoder_self') && kinds.includes('cross'), JSON.stringify(kinds));
  await afterDraw(page, () => page.click('#kinds [data-kind="cross"]'), (x) => x.state.kind === 'cross');
  await afterDraw(page, () => page.click('#views [data-view="cross"]'), (x) => x.view === 'cross');
  const s = await afterDraw(page, () => page.fill('#step', '1'), (x) => x.state.step === 1);
  assert.equal(s.state.step, 1);
  const label = await page.getAttribute('canvas#view', 'aria-label');
  assert.match(label, /decode step 2 of/);
  assert.match(label, /gato/);
  const ink = await canvasInk(page);
  assert.ok(ink.ink > 0.01, `cross view looks blank: ${JSON.stringify(ink)}`);
  // The step view of cross-attention labels provenance: Q from the decoder, K and V from the encoder.
  const st = await afterDraw(page, () => page.click('#views [data-view="step"]'), (x) => x.view === 'step' && x.step && x.step.kind === 'cross');
  assert.ok(st.step.queryTokens.length === d.targetTokens.length);
});

test('screenshots of the head view and the cross-attention view for the README', ONLY_IN_SCREENSHOTS, async () => {
  mkdirSync(SHOTS, { recursive: true });
  const shoot = async (hash, file, until, prepare) => {
    const page = await app.context.newPage();
    await setViewport(page, { width: 1200, height: 860 });
    await page.goto(`${server.url}#${hash}`);
    await page.waitForFunction(until, null, { timeout: 180_000, polling: 100 });
    if (prepare) await prepare(page);
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(SHOTS, file) });
    await page.close();
  };
  // Layer 4, head 2 of MiniLM links "it" to "animal"; hovering "it" shows its lines and top weights.
  const text = "The animal didn't cross the street because it was too tired.";
  await shoot(
    new URLSearchParams({ m: 'minilm-l6', t: text, l: '3', h: '1', hs: '1' }).toString(),
    'head-view.png',
    () => document.body.dataset.state === 'ready' && window.attnvizDebug.view === 'head',
    async (page) => {
      const i = (await dbg(page)).tokens.indexOf('it');
      const pt = await page.evaluate((k) => window.attnvizDebug.tokenPoint('q', k), i);
      const box = await page.locator('canvas#view').boundingBox();
      await page.mouse.move(box.x + pt.x, box.y + pt.y);
      await page.waitForFunction(() => document.querySelectorAll('#top-list li').length > 0);
    },
  );
  await shoot(
    new URLSearchParams({ m: 'en-pt-tiny', t: 'The cat sat on the mat.', v: 'cross', k: 'cross', l: '1', h: '0', a: 'mean', s: '1' }).toString(),
    'cross-view.png',
    () => document.body.dataset.state === 'ready' && window.attnvizDebug.modelId === 'en-pt-tiny' && window.attnvizDebug.view === 'cross',
  );
  for (const f of ['head-view.png', 'cross-view.png']) assert.ok(readFileSync(path.join(SHOTS, f)).length > 10_000, `${f} is too small`);
});

test('performance: keystroke → drawn latency and the 128-token head view (reported, not asserted)', ONLY_IN_BENCH, async (t) => {
  const { page } = app;
  const sentence = 'the quick brown fox jumps over the lazy dog near the old river bank';
  const typeAndMeasure = async () => {
    await page.fill('#text', '');
    const lat = [];
    const fwd = [];
    const over = [];
    for (const ch of sentence) {
      const d = await afterDraw(page, () => page.type('#text', ch), (x) => x.text.endsWith(ch) && x.lastLatencyMs != null);
      lat.push(d.lastLatencyMs);
      fwd.push(d.lastForwardMs);
      over.push(d.lastLatencyMs - d.lastForwardMs);
    }
    const q = (arr, p) => {
      const a = arr.slice(-50).sort((x, y) => x - y);
      return a[Math.min(a.length - 1, Math.floor(p * a.length))];
    };
    return { p50: q(lat, 0.5), p95: q(lat, 0.95), fwd50: q(fwd, 0.5), over50: q(over, 0.5), n: Math.min(50, lat.length), d: await dbg(page) };
  };
  await showState(page);
  const line = (r) => `p50 ${r.p50.toFixed(1)} ms, p95 ${r.p95.toFixed(1)} ms (of which wasm forward p50 ${r.fwd50.toFixed(1)} ms; page overhead p50 ${r.over50.toFixed(1)} ms)`;
  await selectModel(page, 'en-pt-tiny');
  await afterDraw(page, () => page.click('#views [data-view="cross"]'), (x) => x.view === 'cross');
  const tr = await typeAndMeasure();
  t.diagnostic(`translator keystroke → drawn (cross view), last ${tr.n} keystrokes, ${tr.d.tokens.length} source tokens at the end: ${line(tr)}`);

  await selectModel(page, 'minilm-l6');
  await afterDraw(page, () => page.click('#views [data-view="head"]'), (x) => x.view === 'head');
  await afterDraw(page, () => page.click('#heads-all'), (x) => x.state.heads === null);
  const mini = await typeAndMeasure();
  t.diagnostic(`MiniLM keystroke → drawn (head view, 12 heads), last ${mini.n} keystrokes, ${mini.d.tokens.length} tokens at the end: ${line(mini)}`);

  const words = [];
  while (words.length < 126) words.push(...'the cat sat on the mat and the dog ran'.split(' '));
  const long = words.slice(0, 126).join(' ');
  const d = await afterDraw(page, () => page.fill('#text', long), (x) => x.text === long);
  const draws = [];
  await page.focus('canvas#view');
  for (let i = 0; i < 6; i++) {
    const e = await afterDraw(page, () => page.keyboard.press(i % 2 ? 'ArrowUp' : 'ArrowDown'), () => true);
    draws.push(e.lastDrawMs);
  }
  t.diagnostic(`head view, ${d.tokens.length} tokens × 12 heads (layer switch, incl. filtering): draw ${draws.map((x) => x.toFixed(1)).join(', ')} ms; forward ${d.lastForwardMs.toFixed(1)} ms`);
  assert.equal(d.tokens.length, 128);
});

test('a second visit works offline (service worker + model files in the Cache API)', async () => {
  const { page, context } = app;
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
  await context.setOffline(true);
  const second = await context.newPage();
  try {
    await second.goto(server.url);
    await second.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state), null, { timeout: 120_000 });
    const st = await second.evaluate(() => ({ state: document.body.dataset.state, status: document.getElementById('status').textContent, model: window.attnvizDebug.modelId }));
    assert.equal(st.state, 'ready', st.status);
    assert.equal(st.model, 'minilm-l6');
  } finally {
    await second.close();
    await context.setOffline(false);
  }
});

test('a reader’s page loads no test hooks: debug.js only under automation (navigator.webdriver) or with ?debug', async () => {
  const loaded = (page) => page.evaluate(() => ({
    hooks: 'attnvizDebug' in window,
    debugJs: performance.getEntriesByType('resource').some((e) => new URL(e.name).pathname.endsWith('/page/debug.js')),
  }));
  // A reader's browser, as far as the page can tell: navigator.webdriver is false.
  const reader = await openApp(browser, server.url, {
    onContext: (c) => c.addInitScript(() => Object.defineProperty(Navigator.prototype, 'webdriver', { get: () => false })),
  });
  try {
    assert.equal(await reader.page.evaluate(() => navigator.webdriver), false);
    assert.deepEqual(await loaded(reader.page), { hooks: false, debugJs: false }, 'a reader’s page fetched or ran the test hooks');
    // The same reader asking for them.
    const asked = await reader.context.newPage();
    try {
      await asked.goto(`${server.url}?debug`);
      await asked.waitForFunction(() => document.body.dataset.state === 'ready' && window.attnvizDebug.drawCount > 0, null, { timeout: 120_000 });
      assert.deepEqual(await loaded(asked), { hooks: true, debugJs: true });
      assert.equal(await asked.evaluate(() => window.attnvizDebug.modelId), 'minilm-l6');
    } finally {
      await asked.close();
    }
    assert.deepEqual(reader.pageErrors, []);
  } finally {
    await reader.close();
  }
  // A test's page (under Playwright) has them without asking.
  assert.deepEqual(await loaded(app.page), { hooks: true, debugJs: true });
});

test('no request leaves the page origin: a first visit that picks every model, shows every view, types, exports and opens its permalink', async () => {
  // A page of its own (the shared one's requests depend on which tests ran before), on a first
  // visit: the service worker installs and fetches what it caches in this test too.
  const own = await openApp(browser, server.url, { fresh: true });
  const { page } = own;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    const settled = () => page.waitForFunction(() => !window.attnvizDebug.computing && !window.attnvizDebug.drawing, null, { timeout: 120_000, polling: 100 });
    const models = await page.$$eval('#model option', (os) => os.map((o) => o.value));
    assert.deepEqual(models.slice().sort(), ['en-pt-tiny', 'minilm-l6', 'paper-transformer', 'smollm2-135m'], 'the picker offers the built-in models');
    const shown = [];
    for (const id of models) {
      if ((await dbg(page)).modelId !== id) await selectModel(page, id);
      const text = `The ${id} reads this sentence.`;
      await page.fill('#text', '');
      await afterDraw(page, () => page.type('#text', text, { delay: 5 }), (x) => x.text === text);
      const views = await page.$$eval('#views [role=tab]', (ts) => ts.filter((t) => !t.hidden).map((t) => t.dataset.view));
      for (const v of views) {
        if ((await dbg(page)).view !== v) await afterDraw(page, () => page.click(`#views [data-view="${v}"]`), (x) => x.view === v, 120_000);
        await settled();
        shown.push(`${id}/${v}`);
      }
      for (const button of ['#export-png', '#export-svg']) {
        const [dl] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
        assert.ok((await downloadBytes(dl)).length > 1000, `${id}: ${dl.suggestedFilename()}`);
      }
    }
    for (const v of ['head', 'model', 'heatmap', 'step', 'positions', 'heads', 'qk']) assert.ok(shown.includes(`minilm-l6/${v}`), `MiniLM's ${v} view was shown: ${shown.join(' ')}`);
    assert.ok(shown.includes('en-pt-tiny/cross'), `the translator's cross view was shown: ${shown.join(' ')}`);
    // Its permalink, opened in a second tab of the same browser.
    const second = await own.context.newPage();
    try {
      await second.goto(page.url());
      await second.waitForFunction(() => document.body.dataset.state === 'ready' && !window.attnvizDebug.computing, null, { timeout: 120_000 });
    } finally {
      await second.close();
    }
    assert.deepEqual(own.outsideRequests, [], 'requests outside the page origin');
    assert.deepEqual(own.pageErrors, []);
  } finally {
    await own.close();
  }
});
