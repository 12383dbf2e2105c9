// Issue 21, item 9: the read-outs a mouse gets by hovering (a heatmap cell's weight, a step-view
// matrix cell, a position value, a head's scores, a query/key point) must be reachable by touch
// and by keyboard too, in every view that has them. On the page, in the widget, and on a phone:
// the keys [ ] { } walk the view's cells (or points) and read each out exactly as the mouse over
// that cell does; a tap reads a cell out and the read-out stays when the finger lifts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mountWidget, openApp, useServerAndBrowser } from './harness.mjs';
import { waitDrawn } from './cli-helpers.mjs';

const TEXT = 'The cat sat on the mat because it was tired.';
const TOUCH_PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true };

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

// Per view: the drawn geometry (the page's debug hook) and where item k of the walk [ ] } lands
// (the first cell, the next in reading order, then the one below it), in CSS px on the canvas.
const VIEWS = {
  heatmap: {
    geom: () => window.attnvizDebug.heatmapGrid(),
    at: (g, [r, c]) => ({ x: g.left + (c + 0.5) * g.cell, y: g.top + (r + 0.5) * g.cell }),
  },
  step: {
    geom: () => {
      const ps = window.attnvizDebug.stepPanels();
      return ps && ps.length ? ps.filter((p) => p.rows > 0 && p.cols > 0)[0] : null;
    },
    at: (p, [r, c]) => ({ x: p.x + (c + 0.5) * p.cw, y: p.y + (r + 0.5) * p.ch }),
  },
  positions: {
    geom: () => window.attnvizDebug.positionsChart(),
    // rows: positions (left to right), columns: dimensions (bottom up)
    at: (g, [pos, dim]) => ({ x: g.heat.x + ((pos + 0.5) / g.positions) * g.heat.w, y: g.heat.y + g.heat.h - ((dim + 0.5) / g.dims) * g.heat.h }),
  },
  heads: {
    geom: () => window.attnvizDebug.headsGrid(),
    at: (g, [l, h]) => ({ x: g.left + (h + 0.5) * g.cell, y: g.top + (l + 0.5) * g.cell }),
  },
  qk: {
    geom: () => window.attnvizDebug.qkPoints(),
    // the points in order: queries, then keys ([ ] and { } both step through them)
    at: (g, [, k]) => ({ x: g.qs[k][0], y: g.qs[k][1] }),
  },
  parts: {
    geom: () => window.attnvizDebug.partsRows(),
    // the key rows in order ([ ] and { } both step through them)
    at: (g, [, k]) => ({ x: 40, y: g.rows[k].y + g.rows[k].h / 2 }),
  },
};
// [ ] } from nothing: the first item, the next, the one below (for qk: the next point).
const WALK = [[']', [0, 0]], [']', [0, 1]], ['}', [1, 1]]];
const QK_WALK = [[']', [0, 0]], [']', [0, 1]], ['}', [0, 2]]]; // and the score parts' key rows

const hint = (page) => page.evaluate(() => document.getElementById('side-hint').textContent);

/** (x, y) on the page's canvas brought into the window (the canvas box and the page scrolled as
 *  needed) → where it is in the window. */
function onScreen(page, x, y) {
  return page.evaluate(([px, py]) => {
    const c = document.getElementById('view');
    const wrap = document.getElementById('canvas-wrap');
    const w = wrap.getBoundingClientRect();
    let r = c.getBoundingClientRect();
    if (r.top + py < w.top + 20 || r.top + py > w.bottom - 20) wrap.scrollTop += r.top + py - (w.top + w.height / 2);
    if (r.left + px < w.left + 20 || r.left + px > w.right - 20) wrap.scrollLeft += r.left + px - (w.left + w.width / 2);
    r = c.getBoundingClientRect();
    if (r.top + py < 80 || r.top + py > innerHeight - 80) window.scrollBy(0, r.top + py - innerHeight / 2);
    r = c.getBoundingClientRect();
    return { x: r.left + px, y: r.top + py };
  }, [x, y]);
}

const changed = (page, from, what) => page.waitForFunction((h) => document.getElementById('side-hint').textContent !== h, from, { timeout: 5_000 })
  .catch(() => assert.fail(`${what} (the side panel stays at "${from}")`));

test('page: in every view with hover read-outs, [ ] { } walk its cells and read each out as the mouse over that cell does', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    for (const [view, spec] of Object.entries(VIEWS)) {
      await page.locator(`#views [data-view="${view}"]`).click();
      if (view === 'step') await page.selectOption('#step-part', 'matrices'); // the matrices are what [ ] { } walk
      await waitDrawn(page, (v) => window.attnvizDebug.view === v, view);
      await page.waitForFunction(spec.geom, null, { timeout: 60_000 });
      for (const [key, item] of view === 'qk' || view === 'parts' ? QK_WALK : WALK) {
        // What the mouse over the item reads out (then the mouse leaves: the read-out goes).
        await page.locator('#text').hover();
        const idle = await hint(page);
        const g = await page.evaluate(spec.geom);
        const p = spec.at(g, item);
        const at = await onScreen(page, p.x, p.y);
        await page.mouse.move(at.x, at.y);
        await changed(page, idle, `${view}: the mouse over item ${item} read nothing out`);
        const byMouse = await hint(page);
        await page.locator('#text').hover();
        await changed(page, byMouse, `${view}: the read-out stayed after the mouse left the canvas`);
        // The keyboard: the same item, the same words.
        await page.focus('canvas#view');
        await page.keyboard.press(key);
        await page.waitForFunction((h) => document.getElementById('side-hint').textContent === h, byMouse, { timeout: 5_000 })
          .catch(async () => assert.fail(`${view}: ${key} read out "${await hint(page)}", the mouse over item ${item} "${byMouse}"`));
      }
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: Enter clicks the item under the keyboard cursor (a head of the head overview opens it)', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: 'heads' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.view === 'heads' && !!window.attnvizDebug.headsGrid());
    await page.focus('canvas#view');
    for (const key of [']', ']', '}']) await page.keyboard.press(key); // layer 2, head 2
    await page.keyboard.press('Enter');
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    const s = await page.evaluate(() => window.attnvizDebug.state);
    assert.deepEqual([s.view, s.layer, s.head, s.heads], ['head', 1, 1, [1]]);
  } finally {
    await app.close();
  }
});

test('phone: a tap on a heatmap cell reads it out, and the read-out stays when the finger lifts', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: 'heatmap' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { contextOptions: TOUCH_PHONE, fresh: true });
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.view === 'heatmap' && !!window.attnvizDebug.heatmapGrid());
    const g = await page.evaluate(() => window.attnvizDebug.heatmapGrid());
    const tokens = await page.evaluate(() => window.attnvizDebug.tokens);
    const [row, col] = [3, 1];
    const at = await page.evaluate(([x, y]) => {
      const c = document.getElementById('view');
      const top = c.getBoundingClientRect().top + y;
      if (top < 80 || top > innerHeight - 80) window.scrollBy(0, top - innerHeight / 2);
      const r = c.getBoundingClientRect();
      return { x: r.left + x, y: r.top + y };
    }, [g.left + (col + 0.5) * g.cell, g.top + (row + 0.5) * g.cell]);
    await page.touchscreen.tap(at.x, at.y);
    const want = `query “${tokens[row]}” (${row + 1}) → key “${tokens[col]}” (${col + 1})`;
    await page.waitForFunction((w) => document.getElementById('side-hint').textContent.startsWith(w), want, { timeout: 5_000 })
      .catch(async () => assert.fail(`a tap on cell (${row + 1}, ${col + 1}) reads "${await hint(page)}", not "${want}: …"`));
    await page.waitForTimeout(400);
    assert.ok((await hint(page)).startsWith(want), `the read-out went away after the tap: "${await hint(page)}"`);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

for (const [view, geomOf, name] of [
  ['model', () => window.attnvizDebug.modelGrid(), 'model-view map'],
  ['heads', () => window.attnvizDebug.headsGrid(), 'head-overview cell'],
]) {
  test(`phone: a first tap on a ${name} reads it out and stays; a second tap on it opens the head`, async () => {
    const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: view }).toString();
    const app = await openApp(browser, `${server.url}#${hash}`, { contextOptions: TOUCH_PHONE, fresh: true });
    const { page } = app;
    try {
      await waitDrawn(page, (f) => !!new Function(`return (${f})()`)(), geomOf.toString());
      const g = await page.evaluate((f) => new Function(`return (${f})()`)(), geomOf.toString());
      // Layer 2, head 2: the model view's map at its corner (a map is g.cell px wide), the
      // overview's cell at its centre.
      const [layer, head] = [1, 1];
      const spot = view === 'model'
        ? { x: g.left + (head % g.cols) * g.pitchX + g.cell / 2, y: g.top + (layer % g.layersPerColumn) * g.layerPitch + Math.floor(head / g.cols) * g.pitchY + g.cell / 2 }
        : { x: g.left + (head + 0.5) * g.cell, y: g.top + (layer + 0.5) * g.cell };
      let at = await onScreen(page, spot.x, spot.y);
      await page.touchscreen.tap(at.x, at.y);
      const want = `Layer ${layer + 1}, head ${head + 1}: ${view === 'model' ? 'H = ' : ''}`;
      await page.waitForFunction((w) => document.getElementById('side-hint').textContent.includes(w), want, { timeout: 5_000 })
        .catch(async () => assert.fail(`a tap reads "${await hint(page)}", not "${want}…"`));
      await page.waitForTimeout(400);
      let s = await page.evaluate(() => window.attnvizDebug.state);
      assert.equal(s.view, view, 'the first tap stays on the view, its read-out shown');
      assert.ok((await hint(page)).includes(want), `the read-out went away after the tap: "${await hint(page)}"`);
      at = await onScreen(page, spot.x, spot.y);
      await page.touchscreen.tap(at.x, at.y);
      await waitDrawn(page, () => window.attnvizDebug.view === 'head');
      s = await page.evaluate(() => window.attnvizDebug.state);
      assert.deepEqual([s.view, s.layer, s.head], ['head', layer, head]);
      assert.deepEqual(app.pageErrors, []);
    } finally {
      await app.close();
    }
  });
}

test('widget: the keyboard reads out the heatmap\'s cells ([ ] then }) in its read-out line', async () => {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${server.url}examples.html`);
    await mountWidget(page, { model: 'minilm', text: TEXT, view: 'heatmap' });
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready' && document.getElementById('w').shell.geom()?.cell, null, { timeout: 120_000 });
    const tokens = await page.evaluate(() => document.getElementById('w').session.result.tokens.source);
    const readout = () => page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('.readout').textContent);
    await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').focus());
    for (const [key, [r, c]] of WALK) {
      await page.keyboard.press(key);
      const want = `query “${tokens[r]}” (${r + 1}) → key “${tokens[c]}” (${c + 1})`;
      await page.waitForFunction((w) => document.getElementById('w').shadowRoot.querySelector('.readout').textContent.startsWith(w), want, { timeout: 5_000 })
        .catch(async () => assert.fail(`after ${key} the widget reads "${await readout()}", not "${want}: …"`));
    }
  } finally {
    await context.close();
  }
});
