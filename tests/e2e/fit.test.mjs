// Issue 21 item 7: every view fits its box by default (a teacher projects it), at 1280×720 and
// 1920×1080, on all three default models, in the page and in the widget; a zoom control draws it
// larger for detail (the box then scrolls, and hover still reads the cell under the pointer), or
// as tall as it takes (fit width). The step view shows one of its parts (one query's table, every
// matrix) or both; the model view fitted to a wide box stands its layers in columns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MODELS as MODELS, PROJECTOR_SCREENS as SCREENS, openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { cliAt, cliBlock, cliJson, waitDrawn } from './cli-helpers.mjs';
import { drawnAfter } from './widget-helpers.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

// What each view draws from has arrived (the views that ask the model for more than attention).
const READY = {
  step: () => !!window.attnvizDebug.step,
  positions: () => !!window.attnvizDebug.positionsChart(),
  heads: () => !!window.attnvizDebug.headsGrid(),
  qk: () => !!window.attnvizDebug.qkPoints(),
  parts: () => !!window.attnvizDebug.partsRows(),
  lens: () => !!(window.attnvizDebug.lensGrid() && window.attnvizDebug.lensGrid().lens),
};
for (const v of ['head', 'model', 'heatmap', 'cross']) READY[v] = () => true;

const hint = (page) => page.evaluate(() => document.getElementById('side-hint').textContent);

/** How the page's map box holds its drawing: the canvas and the box's inner size and scroll size. */
const boxOf = (page) => page.evaluate(() => {
  const w = document.getElementById('canvas-wrap');
  const c = document.getElementById('view');
  return { view: c.dataset.view, canvasW: c.clientWidth, canvasH: c.clientHeight, boxW: w.clientWidth, boxH: w.clientHeight, scrollW: w.scrollWidth, scrollH: w.scrollHeight, maxH: getComputedStyle(w).maxHeight };
});

test('page: at 1280×720 and 1920×1080 every view of every default model fits its box (nothing to scroll), picked from its tab', async () => {
  for (const [width, height] of SCREENS) {
    for (const model of MODELS) {
      const app = await openApp(browser, `${server.url}#m=${model}&w=int8`, { contextOptions: { viewport: { width, height } } });
      try {
        const views = await app.page.evaluate(() => [...document.querySelectorAll('#views [role=tab]')].filter((t) => !t.hidden).map((t) => t.dataset.view));
        assert.ok(views.length >= 7, `${model}: ${views}`);
        for (const view of views) {
          await app.page.click(`#views [role=tab][data-view=${view}]`);
          await app.page.waitForFunction(READY[view], null, { timeout: 60_000 });
          await waitDrawn(app.page, (v) => window.attnvizDebug.view === v && document.getElementById('view').dataset.view === v, view);
          const b = await boxOf(app.page);
          const where = `${model} ${view} at ${width}×${height}: canvas ${b.canvasW}×${b.canvasH} in a box of ${b.boxW}×${b.boxH} (max-height ${b.maxH})`;
          assert.ok(b.scrollH <= b.boxH + 1 && b.scrollW <= b.boxW + 1, where);
          assert.ok(b.canvasH > 100, where);
        }
        assert.deepEqual(app.pageErrors, []);
      } finally {
        await app.close();
      }
    }
  }
});

test('page, zoom: 2× draws the heatmap twice the box and the box scrolls; a cell scrolled to reads the CLI’s weight; the permalink keeps the zoom; fit width is as tall as it takes', async () => {
  const text = 'The animal didn\'t cross the street because it was too tired.';
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', text);
  const app = await openApp(browser, `${server.url}#v=heatmap&l=3&h=2`, { contextOptions: { viewport: { width: 1280, height: 720 } } });
  const { page } = app;
  try {
    const fit = await boxOf(page);
    assert.ok(fit.scrollH <= fit.boxH + 1, JSON.stringify(fit));
    const cellFit = (await page.evaluate(() => window.attnvizDebug.heatmapGrid())).cell;
    await page.selectOption('#zoom', '2');
    await waitDrawn(page, (c) => window.attnvizDebug.heatmapGrid()?.cell > c, cellFit);
    const z = await boxOf(page);
    assert.ok(z.scrollH > z.boxH * 1.2, `2×: the drawing is taller than its box, which scrolls: ${JSON.stringify(z)}`);
    assert.match(await page.evaluate(() => location.hash), /[#&]z=2(&|$)/);
    // The last row's last cell: scroll the box to it, as a reader would, and hover it.
    const g = await page.evaluate(() => window.attnvizDebug.heatmapGrid());
    const [i, j] = [g.rows - 1, g.cols - 1];
    const at = await page.evaluate(([row, col]) => {
      const w = document.getElementById('canvas-wrap');
      const grid = window.attnvizDebug.heatmapGrid();
      w.scrollIntoView({ block: 'start' });
      w.scrollTop = grid.top + row * grid.cell - 100;
      w.scrollLeft = grid.left + col * grid.cell - 100;
      const r = document.getElementById('view').getBoundingClientRect();
      return { x: r.left + grid.left + (col + 0.5) * grid.cell, y: r.top + grid.top + (row + 0.5) * grid.cell };
    }, [i, j]);
    await page.mouse.move(at.x, at.y);
    await page.waitForFunction(([q, k]) => {
      const t = document.getElementById('side-hint').textContent;
      return t.includes(`(${q}) → key `) && t.includes(`” (${k}): `);
    }, [i + 1, j + 1]);
    const readout = await hint(page);
    const m = /: ([\d.]+)$/.exec(readout.trim());
    assert.ok(m, readout);
    const want = cliAt(cliBlock(cli.attentions, 'encoder_self', 3), 2, i, j); // l=3&h=2: counted from 0
    assert.ok(Math.abs(Number(m[1]) - want) < 6e-4, `${readout}; the CLI: ${want}`);
    // A reload keeps the zoom.
    await page.reload();
    // (the reloaded page installs its debug hook after its scripts load)
    await waitDrawn(page, () => window.attnvizDebug && window.attnvizDebug.heatmapGrid());
    assert.equal(await page.inputValue('#zoom'), '2');
    // Fit width: the box's width, as tall as the cells of that width make it (taller than the box).
    await page.selectOption('#zoom', 'width');
    await waitDrawn(page, () => window.attnvizDebug.state.zoom === 'width');
    const w = await boxOf(page);
    assert.ok(w.canvasW <= w.boxW && w.scrollH > w.boxH, JSON.stringify(w));
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, step view: “one query” is the table alone, “all queries” every matrix alone (hover reads a cell), “both” one under the other; the permalink keeps the part', async () => {
  const app = await openApp(browser, `${server.url}#v=step&l=1&h=3`, { contextOptions: { viewport: { width: 1280, height: 720 } } });
  const { page } = app;
  try {
    assert.equal(await page.isVisible('#step-part'), true);
    assert.deepEqual(await page.evaluate(() => window.attnvizDebug.stepPanels()), [], 'one query: no matrices');
    const queryOnly = await boxOf(page);
    await page.selectOption('#step-part', 'matrices');
    await waitDrawn(page, () => window.attnvizDebug.stepPanels()?.length > 8);
    const panels = await page.evaluate(() => window.attnvizDebug.stepPanels());
    assert.ok(panels.some((p) => p.id === 'probs') && panels[0].y < 120, 'the matrices start at the top');
    const m = await boxOf(page);
    assert.ok(m.scrollH <= m.boxH + 1, `every matrix fits: ${JSON.stringify(m)}`);
    assert.match(await page.evaluate(() => location.hash), /[#&]sx=matrices(&|$)/);
    const probs = panels.find((p) => p.id === 'probs');
    const r = await page.evaluate(() => document.getElementById('view').getBoundingClientRect().toJSON());
    await page.mouse.move(r.x + probs.x + probs.cw * 0.5, r.y + probs.y + probs.ch * 0.5);
    await page.waitForFunction(() => /^softmax \(rows sum to 1\): row 1 /.test(document.getElementById('side-hint').textContent));
    await page.selectOption('#step-part', 'both');
    await waitDrawn(page, () => window.attnvizDebug.state.stepPart === 'both' && window.attnvizDebug.stepPanels()?.length > 8);
    const both = await boxOf(page);
    assert.ok(both.scrollH > queryOnly.canvasH + 200, `both: the table and the matrices under it: ${JSON.stringify(both)}`);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, model view of SmolLM2 fitted to a 1280×720 box: its 30 layers stand in columns; hovering a map in the second column reads its layer, head and entropy, and a click opens it', async () => {
  const app = await openApp(browser, `${server.url}#m=smollm2-135m&v=model`, { contextOptions: { viewport: { width: 1280, height: 720 } } });
  const { page } = app;
  try {
    const g = await page.evaluate(() => window.attnvizDebug.modelGrid());
    assert.ok(g.layersPerColumn < 30 && g.cell >= 20, `layers in columns, maps of 20 px or more: ${JSON.stringify(g)}`);
    const layer = g.layersPerColumn + 2; // the third layer of the second column
    const head = 4;
    const r = await page.evaluate(() => document.getElementById('view').getBoundingClientRect().toJSON());
    const x = r.x + g.left + g.columnPitch + g.headX[head] + g.cell / 2;
    const y = r.y + g.top + 2 * g.layerPitch + g.cell / 2;
    await page.mouse.move(x, y);
    await page.waitForFunction((want) => document.getElementById('side-hint').textContent.startsWith(want), `Layer ${layer + 1}, head ${head + 1}: H = `);
    await page.mouse.click(x, y);
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    const s = await page.evaluate(() => window.attnvizDebug.state);
    assert.deepEqual([s.layer, s.head], [layer, head]);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: at 1280×720 its views fit its box (78% of the window, or its height attribute); zoom="width" and step-part="matrices" are taken as attributes', async () => {
  for (const [attrs, check] of [
    [{ model: 'smollm2', view: 'model', weights: 'int8' }, 'fits'],
    [{ model: 'minilm', view: 'heatmap', weights: 'int8' }, 'fits'],
    [{ model: 'minilm', view: 'step', weights: 'int8', height: '480' }, 'fits'],
    [{ model: 'minilm', view: 'step', weights: 'int8', 'step-part': 'matrices' }, 'fits'],
    [{ model: 'minilm', view: 'heatmap', weights: 'int8', zoom: 'width', height: '400' }, 'taller'],
  ]) {
    const w = await openWidget(browser, server.url, { text: 'The animal didn\'t cross the street because it was too tired.', ...attrs });
    try {
      await setViewport(w.page, { width: 1280, height: 720 });
      await drawnAfter(w.page);
      await w.page.waitForFunction(() => !document.getElementById('w').shell.busy);
      const b = await w.page.evaluate(() => {
        const el = document.getElementById('w');
        const box = el.shadowRoot.querySelector('.wrap');
        return { boxH: box.clientHeight, scrollH: box.scrollHeight, scrollW: box.scrollWidth, boxW: box.clientWidth, state: el.viewState };
      });
      const where = `${JSON.stringify(attrs)}: ${JSON.stringify(b)}`;
      if (attrs.height) assert.ok(b.boxH <= Number(attrs.height), where);
      else assert.ok(b.boxH <= 0.78 * 720 + 1, where);
      if (check === 'fits') assert.ok(b.scrollH <= b.boxH + 1 && b.scrollW <= b.boxW + 1, where);
      else assert.ok(b.scrollH > b.boxH, where);
      if (attrs['step-part']) assert.equal(b.state.stepPart, 'matrices');
      if (attrs.zoom) assert.equal(b.state.zoom, 'width');
    } finally {
      await w.close();
    }
  }
});
