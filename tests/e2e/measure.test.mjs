// Issue 12, the measure switch: "Raw weights" / "Value-weighted (‖αf‖)" (Kobayashi et al. 2020)
// in the page (a control, the permalink's `ms`) and the widget (measure="value-norm"). The switch
// changes what is drawn; the read-outs give the row share, the raw norm and the weight α, equal
// to what `attnviz attend --measure value-norm` prints; head mean and rollout work on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { canvasDigest, cliAt, cliBlock, cliJson, waitDrawn } from './cli-helpers.mjs';
import { watchMainThread } from './main-thread.mjs';
import { installTextLog, textFrame, waitQuiet } from './views-helpers.mjs';

const TEXT = 'The cat sat on the mat.';
const LAYER = 1;
const HEAD = 2;
const VIEW = 'canvas#view';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const cli = cliJson('attend', '--model', 'models/minilm', '--text', TEXT, '--measure', 'value-norm');
const norms = cliBlock(cli.value_norms, 'encoder_self', LAYER);
const weights = cliBlock(cli.attentions, 'encoder_self', LAYER);
const T = cli.tokens.source.length;
/** Row share of norm (h, i, j), its raw norm and weight; h = null: the mean over heads. */
function want(h, i, j) {
  const hs = h === null ? [...Array(norms.heads).keys()] : [h];
  let share = 0;
  let norm = 0;
  let alpha = 0;
  for (const k of hs) {
    let row = 0;
    for (let c = 0; c < T; c++) row += cliAt(norms, k, i, c);
    share += cliAt(norms, k, i, j) / row;
    norm += cliAt(norms, k, i, j);
    alpha += cliAt(weights, k, i, j);
  }
  return { share: share / hs.length, norm: norm / hs.length, alpha: alpha / hs.length };
}

const drawCount = (page) => page.evaluate(() => window.attnvizDebug.drawCount);

/** Hover heatmap cell (i, j); → the side panel's read-out once it names that cell. */
async function hoverCell(page, i, j) {
  const g = await page.evaluate(() => window.attnvizDebug.heatmapGrid());
  const r = await page.locator(VIEW).boundingBox();
  await page.mouse.move(r.x + g.left + (j + 0.5) * g.cell, r.y + g.top + (i + 0.5) * g.cell);
  await page.waitForFunction((n) => document.getElementById('side-hint').textContent.includes(`(${n}) → key`), i + 1);
  return page.textContent('#side-hint');
}

const READOUT = /: ([\d.]+) \(share of the row; ‖αf‖ ([\d.]+) · α ([\d.]+)\)/;

test('page: the switch redraws the heatmap (the main thread within budget), its read-out equals the CLI, the permalink keeps it', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: 'heatmap', l: String(LAYER), h: String(HEAD) }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    await waitDrawn(page, () => window.attnvizDebug.view === 'heatmap');
    assert.equal(await page.inputValue('#measure'), 'raw');
    assert.equal(await page.isVisible('#measure'), true, 'the measure switch is shown in the heatmap');
    const before = await canvasDigest(page, VIEW);
    const watch = await watchMainThread(page);
    const n0 = await drawCount(page);
    await page.selectOption('#measure', 'value-norm');
    await waitDrawn(page, (n) => window.attnvizDebug.drawCount > n && window.attnvizDebug.state.measure === 'value-norm', n0);
    await watch.take('switching the measure');
    await watch.check();
    assert.notEqual(await canvasDigest(page, VIEW), before, 'the value-weighted map differs from the raw one');
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /value-weighted/);
    assert.match(await page.textContent('#notes'), /Kobayashi et al\., EMNLP 2020/);
    for (const [i, j] of [[1, 2], [3, 6], [6, 0]]) {
      const m = READOUT.exec(await hoverCell(page, i, j));
      assert.ok(m, 'the read-out gives the share, the raw norm and α');
      const w = want(HEAD, i, j);
      assert.ok(Math.abs(Number(m[1]) - w.share) < 6e-4, `share ${m[1]} vs ${w.share}`);
      assert.ok(Math.abs(Number(m[2]) - w.norm) < 6e-4 * Math.max(1, w.norm), `norm ${m[2]} vs CLI ${w.norm}`);
      assert.ok(Math.abs(Number(m[3]) - w.alpha) < 6e-4, `α ${m[3]} vs CLI ${w.alpha}`);
    }
    // Mean over heads works on the measure: the mean of the row shares, the mean raw norm.
    await page.selectOption('#agg', 'mean');
    await waitDrawn(page, () => window.attnvizDebug.state.agg === 'mean');
    const m = READOUT.exec(await hoverCell(page, 2, 3));
    const w = want(null, 2, 3);
    assert.ok(Math.abs(Number(m[1]) - w.share) < 6e-4 && Math.abs(Number(m[2]) - w.norm) < 6e-4 * Math.max(1, w.norm), `mean: ${m[0]} vs ${JSON.stringify(w)}`);
    // Rollout runs on the row-normalised norms: a different map than rollout of the weights.
    await page.selectOption('#agg', 'rollout');
    await waitDrawn(page, () => window.attnvizDebug.state.agg === 'rollout');
    const rollVn = await canvasDigest(page, VIEW);
    await page.selectOption('#measure', 'raw');
    await waitDrawn(page, () => window.attnvizDebug.state.measure === 'raw');
    assert.notEqual(await canvasDigest(page, VIEW), rollVn, 'rollout of norms differs from rollout of weights');
    await page.selectOption('#measure', 'value-norm');
    await waitDrawn(page, () => window.attnvizDebug.state.measure === 'value-norm');
    // The permalink holds it; opening it gives the same state and drawing.
    await page.waitForFunction(() => location.hash.includes('ms=value-norm'));
    const url = page.url();
    const app2 = await openApp(browser, url);
    try {
      await waitDrawn(app2.page, () => window.attnvizDebug.state && window.attnvizDebug.state.measure === 'value-norm' && window.attnvizDebug.state.agg === 'rollout');
      assert.equal(await app2.page.inputValue('#measure'), 'value-norm');
      assert.match(await app2.page.getAttribute(VIEW, 'aria-label'), /value-weighted/);
    } finally {
      await app2.close();
    }
    // The step view stays raw: no switch there.
    await page.click('[role=tab][data-view=step]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'step');
    assert.equal(await page.isVisible('#measure'), false, 'no measure switch in the step view');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: head view and model view — the switch changes the drawing; a pinned token lists share, ‖αf‖ and α', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, l: String(LAYER), h: String(HEAD), hs: String(HEAD) }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    const rawHead = await canvasDigest(page, VIEW);
    await page.selectOption('#measure', 'value-norm');
    await waitDrawn(page, () => window.attnvizDebug.state.measure === 'value-norm');
    assert.notEqual(await canvasDigest(page, VIEW), rawHead, 'the head view changes with the measure');
    // Pin query token 3 ("sat") with a click: its top items give the share, the raw norm and α.
    const p = await page.evaluate(() => window.attnvizDebug.tokenPoint('q', 3));
    const r = await page.locator(VIEW).boundingBox();
    await page.mouse.click(r.x + p.x, r.y + p.y);
    await page.waitForFunction(() => document.querySelectorAll('#top-list li .raw').length > 0);
    const items = await page.$$eval('#top-list li', (lis) => lis.map((li) => ({ tok: li.querySelector('.tok').textContent, w: li.querySelector('.w').textContent, raw: li.querySelector('.raw').textContent })));
    const toks = cli.tokens.source;
    const first = items[0];
    const j = toks.indexOf(first.tok);
    assert.ok(j >= 0, `token ${first.tok}`);
    const w = want(HEAD, 3, j);
    const m = /‖αf‖ ([\d.]+) · α ([\d.]+)/.exec(first.raw);
    assert.ok(Math.abs(Number(first.w) - w.share) < 6e-4, `share ${first.w} vs ${w.share}`);
    assert.ok(Math.abs(Number(m[1]) - w.norm) < 6e-4 * Math.max(1, w.norm), `norm ${m[1]} vs ${w.norm}`);
    assert.ok(Math.abs(Number(m[2]) - w.alpha) < 6e-4, `α ${m[2]} vs ${w.alpha}`);
    // Model view: the grid of every head changes with the measure too.
    await page.click('[role=tab][data-view=model]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'model');
    const vnGrid = await canvasDigest(page, VIEW);
    await page.selectOption('#measure', 'raw');
    await waitDrawn(page, () => window.attnvizDebug.state.measure === 'raw');
    assert.notEqual(await canvasDigest(page, VIEW), vnGrid, 'the model view changes with the measure');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, translator en-pt: the switch redraws the cross-attention view, whose title and aria-label name the measure', async () => {
  const hash = new URLSearchParams({ m: 'en-pt-tiny', t: TEXT, v: 'cross', k: 'cross', l: '1', h: '3' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    await waitDrawn(page, () => window.attnvizDebug.view === 'cross' && !!window.attnvizDebug.outputText);
    assert.equal(await page.isVisible('#measure'), true, 'the measure switch is shown in the cross view');
    await installTextLog(page);
    const title = async () => {
      await waitQuiet(page, VIEW, 300);
      // the title's lines (it wraps in a narrow view): the bold 14 px texts
      return (await textFrame(page, VIEW)).texts.filter((t) => Math.round(t.px) === 14).map((t) => t.text).join(' ');
    };
    // Raw: nothing names a measure.
    await page.selectOption('#agg', 'mean');
    await waitDrawn(page, () => window.attnvizDebug.state.agg === 'mean');
    assert.match(await title(), /^Cross-attention/);
    assert.doesNotMatch(await title(), /value-weighted/);
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /^Cross-attention, layer 2/);
    const raw = await canvasDigest(page, VIEW);
    await page.selectOption('#measure', 'value-norm');
    await waitDrawn(page, () => window.attnvizDebug.state.measure === 'value-norm' && /value-weighted/.test(document.querySelector('canvas#view').getAttribute('aria-label')));
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /^Cross-attention · value-weighted ‖αf‖, layer 2/);
    assert.match(await title(), /value-weighted ‖αf‖/, 'the drawn title names the measure');
    assert.notEqual(await canvasDigest(page, VIEW), raw, 'the value-weighted cross map differs from the raw one');
    assert.match(await page.textContent('#notes'), /Kobayashi et al\., EMNLP 2020/);
    await page.waitForFunction(() => location.hash.includes('ms=value-norm'));
    // And back: the raw drawing again.
    await page.selectOption('#measure', 'raw');
    await waitDrawn(page, () => window.attnvizDebug.state.measure === 'raw' && !/value-weighted/.test(document.querySelector('canvas#view').getAttribute('aria-label')));
    assert.equal(await canvasDigest(page, VIEW), raw);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: measure="value-norm" draws the value-weighted map; changing the attribute redraws raw', async () => {
  const w = await openWidget(browser, server.url, { model: 'minilm', text: TEXT, view: 'heatmap', layer: String(LAYER + 1), head: String(HEAD + 1), measure: 'value-norm' });
  const { page } = w;
  try {
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: 120_000 });
    const sel = '#w >> canvas';
    const label = () => page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
    assert.match(await label(), /value-weighted/);
    assert.equal(await page.evaluate(() => document.getElementById('w').viewState.measure), 'value-norm');
    const vn = await canvasDigest(page, sel);
    const n = await page.evaluate(() => Number(document.getElementById('w').dataset.drawCount));
    await page.evaluate(() => document.getElementById('w').setAttribute('measure', 'raw'));
    await page.waitForFunction((k) => Number(document.getElementById('w').dataset.drawCount) > k, n);
    assert.doesNotMatch(await label(), /value-weighted/);
    assert.notEqual(await canvasDigest(page, sel), vn);
  } finally {
    await w.close();
  }
});

test('page, 512 tokens: switching to value-weighted and drawing it in every view keeps the main thread within budget', async () => {
  const long = Array.from({ length: 600 }, (_, i) => ['alpha', 'beta', 'gamma', 'delta', 'the', 'cat'][i % 6]).join(' ');
  const hash = new URLSearchParams({ m: 'minilm-l6', t: long, v: 'heatmap' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.view === 'heatmap' && window.attnvizDebug.tokens.length === 512);
    const watch = await watchMainThread(page);
    await page.selectOption('#measure', 'value-norm');
    await waitDrawn(page, () => window.attnvizDebug.state.measure === 'value-norm');
    await watch.take('switch');
    for (const [view, agg] of [['heatmap', 'rollout'], ['head', 'mean'], ['model', null]]) {
      await page.click(`[role=tab][data-view=${view}]`);
      if (agg) await page.selectOption('#agg', agg);
      await waitDrawn(page, ([v, a]) => window.attnvizDebug.view === v && (!a || window.attnvizDebug.state.agg === a), [view, agg]);
      await watch.take(`${view}/${agg}`);
    }
    await watch.check();
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /value-weighted/);
  } finally {
    await app.close();
  }
});
