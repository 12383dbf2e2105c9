// One forward per text feeds every view (issue 39, item 1): with the step view or the head
// overview open, typing asks the worker for one attend per text and nothing else (before, each
// text cost a second forward, step() or heads(), that the drawing waited for); what these views
// draw is of the text in the box. Changing the step view's head on an unchanged text costs one
// step() and no forward of the maps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser } from './harness.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

const hash = (o) => `#${new URLSearchParams(o).toString()}`;
const FORWARD_TIMEOUT = 180_000; // SmolLM2's first download and forward on a busy 2-core machine

/** From now on, window.workerRequests lists what the page posts to the worker: { type, text, step }. */
function watchRequests(page) {
  return page.evaluate(() => {
    if (window.workerRequests) {
      window.workerRequests.length = 0;
      return;
    }
    const seen = (window.workerRequests = []);
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (m, ...rest) {
      if (m && typeof m === 'object' && m.type) seen.push({ type: m.type, text: m.text, step: m.step || null });
      return post.call(this, m, ...rest);
    };
  });
}

/** Type `more` at the end of the text box, 80 ms a key, and wait until it is drawn and quiet. */
async function typeAndWait(page, more) {
  await page.focus('#text');
  await page.keyboard.press('End');
  await page.keyboard.type(more, { delay: 80 });
  const box = await page.inputValue('#text');
  await page.waitForFunction((t) => window.attnvizDebug.text === t && !window.attnvizDebug.computing && !window.attnvizDebug.drawing, box, { timeout: FORWARD_TIMEOUT, polling: 50 });
  return box;
}

for (const [model, text] of [['minilm-l6', 'The cat sat'], ['en-pt-tiny', 'The cat sat'], ['smollm2-135m', 'The cat sat']]) {
  test(`${model}: typing with the step view or the head overview open costs one forward per text`, async () => {
    const app = await openApp(browser, server.url + hash({ m: model, v: 'step', t: text }), { timeout: FORWARD_TIMEOUT });
    const { page } = app;
    try {
      await page.waitForFunction((t) => window.attnvizDebug.text === t && window.attnvizDebug.step, text, { timeout: FORWARD_TIMEOUT });

      // The step view: each text typed is one attend that brings the head's internals along.
      await watchRequests(page);
      const typed = await typeAndWait(page, ' on');
      let asked = await page.evaluate(() => window.workerRequests);
      const state = await page.evaluate(() => window.attnvizDebug.state);
      assert.ok(asked.length >= 1, 'the new text was computed');
      assert.deepEqual([...new Set(asked.map((r) => r.type))], ['attend'], `only forwards of the maps were asked for: ${asked.map((r) => r.type).join(', ')}`);
      for (const r of asked) assert.deepEqual(r.step, { kind: state.kind, layer: state.layer, head: state.head }, 'each forward asked for the step view’s head');
      assert.equal(asked.at(-1).text, typed);
      let d = await page.evaluate(() => window.attnvizDebug);
      assert.ok(d.step, 'the step view has its head’s internals');
      assert.deepEqual(d.step.keyTokens, d.tokens, 'the step view’s keys are the tokens of the text in the box');

      // Another head on the same text: its internals alone, no forward of the maps.
      await watchRequests(page);
      const before = d.drawCount;
      await page.click('#heads .swatch[data-head="1"]');
      await page.waitForFunction((n) => window.attnvizDebug.drawCount > n && window.attnvizDebug.step && window.attnvizDebug.step.head === 1 && !window.attnvizDebug.computing && !window.attnvizDebug.drawing, before, { timeout: FORWARD_TIMEOUT });
      asked = await page.evaluate(() => window.workerRequests);
      assert.deepEqual(asked.map((r) => r.type), ['step'], 'a new head on an unchanged text is one step()');

      // The head overview: its scores come with every forward.
      await page.click('[role=tab][data-view=heads]');
      await page.waitForFunction(() => window.attnvizDebug.headsGrid() && window.attnvizDebug.headsGrid().scores, null, { timeout: FORWARD_TIMEOUT });
      await watchRequests(page);
      const typed2 = await typeAndWait(page, ' it');
      asked = await page.evaluate(() => window.workerRequests);
      assert.deepEqual([...new Set(asked.map((r) => r.type))], ['attend'], `only forwards of the maps were asked for: ${asked.map((r) => r.type).join(', ')}`);
      for (const r of asked) assert.equal(r.step, null, 'the head overview asks for no head’s internals');
      const grid = await page.evaluate(() => {
        const g = window.attnvizDebug.headsGrid();
        return { text: g.scores.text, count: g.scores.heads.length, cells: g.layers * g.heads, induction: g.scores.heads.some((h) => h.induction !== null) };
      });
      assert.equal(grid.text, typed2, 'the head overview’s scores are of the text in the box');
      assert.ok(grid.count >= grid.cells && grid.cells > 0, `every head has scores (${grid.count} for ${grid.cells} cells)`);
      assert.equal(grid.induction, model === 'smollm2-135m', 'a causal model’s heads carry their induction score');
      d = await page.evaluate(() => window.attnvizDebug);
      assert.equal(d.text, await page.inputValue('#text'));
    } finally {
      await app.close();
    }
  });
}
