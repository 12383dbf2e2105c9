// Issue 44, item 11: going from one model to another. A permalink naming a model without a text
// (`#m=smollm2-135m`, no t=) shows that model's example and its map (it left the translator's map
// and translation on screen with "text is empty"); a view picked on one model is shown again when
// the user comes back to a model that has it (the cross view fell back to the head view for good),
// while a permalink's own view is the one shown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser } from './harness.mjs';
import { waitDrawn } from './cli-helpers.mjs';

let server;
let browser;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
});

const LONG = 300_000; // ms: SmolLM2's 98 MB on a first visit, on a shared 2-core machine

const seen = (page) => page.evaluate(() => {
  const d = window.attnvizDebug;
  return { model: d.modelId, text: d.text, view: d.view, status: d.status, output: d.outputText, box: document.getElementById('text').value, hash: location.hash, draws: d.drawCount };
});

/** Wait for a drawing after the `n`th of model `id` (and what `view` names, when given). */
const drawnOf = (page, id, n, view = null) => waitDrawn(page, ([m, c, v]) => window.attnvizDebug.modelId === m && window.attnvizDebug.drawCount > c && (!v || window.attnvizDebug.view === v), [id, n, view]);

test('a permalink naming SmolLM2 without t= after the translator shows SmolLM2’s example and its map, not the translator’s', { timeout: LONG }, async () => {
  const app = await openApp(browser, `${server.url}#m=en-pt-tiny&t=${encodeURIComponent('The dog ran home.')}`);
  try {
    const { page } = app;
    await drawnOf(page, 'en-pt-tiny', 0);
    const before = await seen(page);
    assert.ok(before.output, 'the translator shows a translation');
    await page.evaluate(() => { location.hash = 'm=smollm2-135m'; });
    // SmolLM2 drawn, or the status line saying why not (the old map then stays).
    await page.waitForFunction((n) => (window.attnvizDebug.modelId === 'smollm2-135m' && window.attnvizDebug.drawCount > n) || /empty/i.test(document.getElementById('status').textContent), before.draws, { timeout: LONG, polling: 100 });
    await waitDrawn(page, () => true);
    assert.doesNotMatch(await page.textContent('#status'), /empty/i);
    const s = await seen(page);
    assert.equal(s.text, 'The capital of France is', 'SmolLM2’s example is computed');
    assert.equal(s.box, s.text, 'and shown in the text box');
    assert.equal(s.output, null, 'no translation is left on screen');
    assert.doesNotMatch(s.status, /empty/i);
    assert.equal(await page.locator('#translation').isVisible(), false, 'the translation box is gone');
    const link = new URLSearchParams(s.hash.slice(1));
    assert.deepEqual([link.get('m'), link.get('t')], ['smollm2-135m', s.text], 'the permalink names them');

    // The same with the model in use: an emptied t= is its example again, not "text is empty".
    await page.evaluate(() => { location.hash = 'm=smollm2-135m&t=&v=heatmap'; });
    await waitDrawn(page, () => window.attnvizDebug.view === 'heatmap');
    const again = await seen(page);
    assert.equal(again.text, 'The capital of France is');
    assert.equal(again.box, again.text);
    assert.doesNotMatch(again.status, /empty/i);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('the view picked is kept across model switches: the translator’s cross view comes back after MiniLM (which has none)', { timeout: LONG }, async () => {
  const app = await openApp(browser, `${server.url}#m=en-pt-tiny`);
  try {
    const { page } = app;
    await drawnOf(page, 'en-pt-tiny', 0);
    let n = (await seen(page)).draws;
    await page.click('[role=tab][data-view=cross]');
    await drawnOf(page, 'en-pt-tiny', n, 'cross');
    n = (await seen(page)).draws;
    await page.selectOption('#model', 'minilm-l6');
    await drawnOf(page, 'minilm-l6', n);
    let s = await seen(page);
    assert.equal(s.view, 'head', 'MiniLM has no cross-attention: the head view');
    await page.selectOption('#model', 'en-pt-tiny');
    await drawnOf(page, 'en-pt-tiny', s.draws);
    s = await seen(page);
    assert.equal(s.view, 'cross', 'back on the translator, its cross view again');
    assert.equal(await page.getAttribute('[role=tab][data-view=cross]', 'aria-selected'), 'true');

    // A view both models have stays as it is.
    await page.click('[role=tab][data-view=heatmap]');
    await drawnOf(page, 'en-pt-tiny', s.draws, 'heatmap');
    s = await seen(page);
    await page.selectOption('#model', 'minilm-l6');
    await drawnOf(page, 'minilm-l6', s.draws);
    s = await seen(page);
    assert.equal(s.view, 'heatmap');

    // A permalink is exact: the view it names (the head view: no v=) wins over the one picked.
    await page.evaluate(() => { location.hash = 'm=minilm-l6&t=A+permalink+of+the+head+view.'; });
    await waitDrawn(page, (n) => window.attnvizDebug.drawCount > n && window.attnvizDebug.text === 'A permalink of the head view.', s.draws);
    assert.equal((await seen(page)).view, 'head');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

// The query/key view is one SmolLM2 has too, but its first forward asked for the head of the
// kind the translator had left (encoder self-attention, which a decoder lacks): it failed, and
// the translator's map stayed (page.test.mjs "no request leaves the page origin" hung on it).
test('the query/key view picked on the translator stays when SmolLM2 is picked, drawn from SmolLM2', { timeout: LONG }, async () => {
  const app = await openApp(browser, `${server.url}#m=en-pt-tiny&v=qk&k=cross`);
  try {
    const { page } = app;
    await drawnOf(page, 'en-pt-tiny', 0, 'qk');
    const n = (await seen(page)).draws;
    await page.selectOption('#model', 'smollm2-135m');
    await page.waitForFunction((c) => (window.attnvizDebug.modelId === 'smollm2-135m' && window.attnvizDebug.drawCount > c) || /^Error/.test(document.getElementById('status').textContent), n, { timeout: LONG, polling: 100 });
    assert.doesNotMatch(await page.textContent('#status'), /^Error/);
    await waitDrawn(page, () => window.attnvizDebug.qkPoints() !== null);
    const s = await seen(page);
    assert.deepEqual([s.model, s.view], ['smollm2-135m', 'qk']);
    assert.equal(await page.evaluate(() => window.attnvizDebug.state.kind), 'decoder_self');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
