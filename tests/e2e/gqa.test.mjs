// Issue 43 item 3, grouped-query attention made visible: SmolLM2's 9 query heads read 3 key/value
// heads (query head h reads K/V head ⌊h / 3⌋). The model view and the head overview stand the
// heads in 3 groups under the K/V head they share, their read-outs say it, and the step view says
// which K/V head a query head reads. MiniLM, whose heads each have their own, is drawn as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { drawnAfter, widgetMenu } from './widget-helpers.mjs';
import { waitDrawn } from './cli-helpers.mjs';
import { textFrame, textLogFromStart, waitQuiet } from './views-helpers.mjs';

const VIEW = 'canvas#view';
const TEXT = 'The cat sat on the mat because it';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const hashOf = (o) => `#${new URLSearchParams(o).toString()}`;
const hint = (page) => page.textContent('#side-hint');

/** The three groups' maps are further apart than the maps within a group. */
function assertGrouped(headX, pitch, what) {
  const steps = headX.slice(1).map((x, h) => x - headX[h]);
  steps.forEach((d, h) => {
    if ((h + 1) % 3 === 0) assert.ok(d > pitch + 3, `${what}: heads ${h + 1} and ${h + 2} read other K/V heads, so a gap parts them (${d} px apart)`);
    else assert.equal(d, pitch, `${what}: heads ${h + 1} and ${h + 2} share a K/V head (${d} px apart)`);
  });
}

test('SmolLM2: the model view, the head overview and the step view show which key/value head each query head reads', async () => {
  const app = await openApp(browser, server.url + hashOf({ m: 'smollm2-135m', t: TEXT, v: 'model' }), { onContext: textLogFromStart });
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    // Model view: 3 groups of 3, each under its "K/V head k" label.
    await waitDrawn(page, () => window.attnvizDebug.view === 'model' && window.attnvizDebug.modelGrid());
    const g = await page.evaluate(() => window.attnvizDebug.modelGrid());
    assert.equal(g.group, 3);
    assertGrouped(g.headX, g.pitchX, 'model view');
    await waitQuiet(page, VIEW, 500);
    const labels = (await textFrame(page, VIEW)).texts.map((t) => t.text).filter((t) => /^K\/V( head)? \d$/.test(t));
    assert.deepEqual([...new Set(labels)].map((t) => t.replace('head ', '')), ['K/V 1', 'K/V 2', 'K/V 3'], `the groups are named: ${labels}`);
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /in 3 groups of 3 query heads that share a key\/value head/);
    // Hover the 5th head's map of layer 1: the read-out says its K/V head and the heads sharing it;
    // a click opens that head.
    const r = await page.locator(VIEW).boundingBox();
    await page.mouse.move(r.x + g.left + g.headX[4] + g.cell / 2, r.y + g.top + g.cell / 2);
    await page.waitForFunction(() => document.getElementById('side-hint').textContent.startsWith('Layer 1, head 5: '));
    assert.match(await hint(page), /reads K\/V head 2 with heads 4–6/);
    await page.mouse.click(r.x + g.left + g.headX[4] + g.cell / 2, r.y + g.top + g.cell / 2);
    await waitDrawn(page, () => window.attnvizDebug.view === 'head' && window.attnvizDebug.state.head === 4);
    assert.match(await page.textContent('#gqa-note'), /Query head 5 shares K\/V head 2 with heads 4–6/);
    // The K/V group toggle: the three heads that read those keys drawn together, then head 5 alone.
    assert.equal(await page.textContent('#heads-kv'), 'K/V head 2: heads 4–6');
    assert.equal(await page.getAttribute('#heads-kv', 'aria-pressed'), 'false');
    await page.click('#heads-kv');
    await waitDrawn(page, () => JSON.stringify(window.attnvizDebug.state.heads) === '[3,4,5]');
    assert.equal(await page.getAttribute('#heads-kv', 'aria-pressed'), 'true');
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /layer 1, heads 4, 5, 6: /);
    await page.click('#heads-kv');
    await waitDrawn(page, () => JSON.stringify(window.attnvizDebug.state.heads) === '[4]');
    assert.equal(await page.getAttribute('#heads-kv', 'aria-pressed'), 'false');

    // Head overview: the same groups; a cell of the last group reads its K/V head.
    await page.click('[role=tab][data-view=heads]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'heads' && window.attnvizDebug.headsGrid() && window.attnvizDebug.headsGrid().scores);
    const o = await page.evaluate(() => window.attnvizDebug.headsGrid());
    assert.equal(o.group, 3);
    assertGrouped(o.headX, o.cell, 'head overview');
    const r2 = await page.locator(VIEW).boundingBox();
    await page.mouse.move(r2.x + o.left + o.headX[7] + o.cell / 2, r2.y + o.top + 2.5 * o.cell);
    await page.waitForFunction(() => document.getElementById('side-hint').textContent.startsWith('Layer 3, head 8: '));
    assert.match(await hint(page), /reads K\/V head 3 with heads 7–9$/);
    // A click in the gap between two groups opens nothing.
    const gapX = r2.x + o.left + o.headX[3] - 2;
    await page.mouse.click(gapX, r2.y + o.top + 0.5 * o.cell);
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.attnvizDebug.view), 'heads');

    // Step view: the provenance line names the K/V head.
    await page.click('[role=tab][data-view=step]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'step' && window.attnvizDebug.step && window.attnvizDebug.step.head === 4);
    await waitQuiet(page, VIEW, 500);
    const said = (await textFrame(page, VIEW)).texts.map((t) => t.text).join(' ');
    assert.ok(said.includes("K and V are key/value head 2's, which query heads 4–6 share (grouped-query attention)."), said.slice(0, 400));
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget, SmolLM2: the Head menu offers the K/V group of the selected head and draws its three heads', async () => {
  const w = await openWidget(browser, server.url, { model: 'smollm2', text: TEXT, view: 'head', layer: '2', head: '8' });
  const { page } = w;
  try {
    await drawnAfter(page);
    const menu = await widgetMenu(page, 'Head');
    assert.ok(menu.options.includes('K/V head 3: heads 7–9'), `the Head menu: ${menu.options}`);
    await page.evaluate(() => {
      const select = [...document.getElementById('w').shadowRoot.querySelectorAll('.bar label')].find((x) => x.firstChild?.textContent.trim() === 'Head').querySelector('select');
      select.value = 'kv';
      select.dispatchEvent(new Event('change'));
    });
    await page.waitForFunction(() => (document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label') || '').includes('layer 2, heads 7, 8, 9: '), null, { timeout: 60_000 });
    assert.equal((await widgetMenu(page, 'Head')).value, 'kv');
  } finally {
    await w.close();
  }
});

test('MiniLM: every head has its own keys and values, so the model view and the overview have no groups', async () => {
  const app = await openApp(browser, server.url + hashOf({ m: 'minilm-l6', t: 'The cat sat.', v: 'model' }));
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.view === 'model' && window.attnvizDebug.modelGrid());
    const g = await page.evaluate(() => window.attnvizDebug.modelGrid());
    assert.equal(g.group, 1);
    assert.ok(g.headX.slice(1).every((x, h) => x - g.headX[h] === g.pitchX), 'evenly spaced heads');
    assert.doesNotMatch(await page.getAttribute(VIEW, 'aria-label'), /groups/);
    await page.click('[role=tab][data-view=head]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    assert.equal(await page.isHidden('#heads-kv'), true, 'no K/V group toggle without shared keys');
  } finally {
    await app.close();
  }
});
