// Issue 40, the heatmap of a long text: its cells are a few pixels wide, so the wheel zooms to
// exact cells around the pointer (and + / − at the keyboard cursor), PageUp / PageDown move the
// zoomed rows, the zoom is in the permalink (hz=), and every read-out names the whole map's cell.
// Each is performed and what the page then shows is read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser, setViewport } from './harness.mjs';
import { cliAt, cliBlock, cliJson, waitDrawn } from './cli-helpers.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

// About 240 MiniLM tokens: 2–3 px cells in a 1,280 px screen.
const LONG = Array.from({ length: 40 }, (_, i) => `The cat number ${i} sat down.`).join(' ');
const VIEW = 'canvas#view';
const grid = (page) => page.evaluate(() => window.attnvizDebug.heatmapGrid());
const hashParam = (page, k) => page.evaluate((key) => new URLSearchParams(location.hash.slice(1)).get(key), k);

/** The grid once the page has drawn one whose zoom `want` describes: { z: null } the whole map,
 *  { zAbove } a zoom past that factor, { row } a zoom whose first row is that. */
async function gridWhen(page, want) {
  await page.waitForFunction((wt) => {
    const g = window.attnvizDebug.heatmapGrid();
    if (!g) return false;
    const o = g.offset;
    if ('z' in wt && wt.z === null && o) return false;
    if ('zAbove' in wt && !(o && o.z > wt.zAbove)) return false;
    if ('row' in wt && !(o && o.row === wt.row)) return false;
    return true;
  }, want, { timeout: 30_000, polling: 50 });
  await waitDrawn(page, () => true);
  return grid(page);
}

test('page: the wheel zooms a long heatmap to exact cells at the pointer; read-outs, PageUp/PageDown, + / − and the permalink follow', async () => {
  const app = await openApp(browser, server.url + `#${new URLSearchParams({ m: 'minilm-l6', t: LONG, w: 'exact', v: 'heatmap', l: '1', h: '3' })}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    await waitDrawn(page, (t) => window.attnvizDebug.text === t && window.attnvizDebug.view === 'heatmap' && !!window.attnvizDebug.heatmapGrid(), LONG);
    const n = await page.evaluate(() => window.attnvizDebug.tokens.length);
    let g = await grid(page);
    assert.equal(g.offset, null);
    assert.equal(g.rows, n);
    assert.ok(g.cell < 14, `cells of ${g.cell} px`);
    const wholeCell = g.cell;
    const box = await page.locator(VIEW).boundingBox();
    // Two notches up over cell (120, 60): 4× zoom, that cell still under the pointer.
    const at = { x: box.x + g.left + (60 + 0.5) * g.cell, y: box.y + g.top + (120 + 0.5) * g.cell };
    await page.mouse.move(at.x, at.y);
    await page.mouse.wheel(0, -100);
    await page.mouse.wheel(0, -100);
    g = await gridWhen(page, { zAbove: 3.9 });
    assert.ok(Math.abs(g.offset.z - 4) < 0.05, `zoom ${g.offset.z}`);
    assert.ok(g.rows < n / 3 && g.cell >= 3 * wholeCell, `${g.rows} rows of ${g.cell} px (the whole map's: ${wholeCell} px)`);
    const under = await page.evaluate(([x, y]) => {
      const gg = window.attnvizDebug.heatmapGrid();
      const r = document.querySelector('canvas#view').getBoundingClientRect();
      return { row: gg.offset.row + Math.floor((y - r.top - gg.top) / gg.cell), col: gg.offset.col + Math.floor((x - r.left - gg.left) / gg.cell) };
    }, [at.x, at.y]);
    assert.ok(Math.abs(under.row - 120) <= 1 && Math.abs(under.col - 60) <= 1, `the pointer's cell moved to ${JSON.stringify(under)}`);
    assert.equal(await hashParam(page, 'hz'), `${g.offset.z}.${g.offset.row}.${g.offset.col}`);
    assert.match(await page.getAttribute(VIEW, 'aria-label'), new RegExp(`zoomed to queries ${g.offset.row + 1}–${g.offset.row + g.rows} and keys ${g.offset.col + 1}–`));

    // Hovering a zoomed cell reads out the whole map's cell: its tokens, positions and the CLI's weight.
    // (the permalink's l=1 h=3 count from 0: layer 2, head 4)
    const cli = cliBlock(cliJson('attend', '--model', 'models/minilm', '--text', LONG, '--layers', '1').attentions, 'encoder_self', 1);
    const tokens = await page.evaluate(() => window.attnvizDebug.tokens);
    const cell = { row: g.offset.row + 3, col: g.offset.col + 5 };
    await page.mouse.move(box.x + g.left + (5 + 0.5) * g.cell, box.y + g.top + (3 + 0.5) * g.cell);
    await page.waitForFunction((c) => document.getElementById('side-hint').textContent.includes(`(${c.row + 1}) → key`), cell, { timeout: 10_000 });
    const hint = await page.textContent('#side-hint');
    const m = /query “(.*)” \((\d+)\) → key “(.*)” \((\d+)\): ([\d.]+)/.exec(hint);
    assert.ok(m, hint);
    assert.deepEqual([m[1], Number(m[2]), m[3], Number(m[4])], [tokens[cell.row], cell.row + 1, tokens[cell.col], cell.col + 1]);
    assert.ok(Math.abs(Number(m[5]) - cliAt(cli, 3, cell.row, cell.col)) <= 0.0006, `${m[5]} vs the CLI's ${cliAt(cli, 3, cell.row, cell.col)}`);

    // PageDown moves the zoomed rows a page down, PageUp back.
    await page.mouse.move(box.x + 2, box.y + box.height + 30);
    await page.focus(VIEW);
    const row0 = g.offset.row;
    await page.keyboard.press('PageDown');
    g = await gridWhen(page, { row: Math.min(row0 + g.rows - 1, n - g.rows) });
    await page.keyboard.press('PageUp');
    g = await gridWhen(page, { row: row0 });

    // − zooms out a notch at a time, back to the whole map (no hz= in the permalink); + zooms in again.
    await page.keyboard.press('-');
    g = await gridWhen(page, { zAbove: 1.9 });
    assert.ok(Math.abs(g.offset.z - 2) < 0.05, `zoom ${g.offset.z}`);
    await page.keyboard.press('-');
    g = await gridWhen(page, { z: null });
    assert.equal(g.rows, n);
    assert.equal(await hashParam(page, 'hz'), null);
    await page.keyboard.press('+');
    g = await gridWhen(page, { zAbove: 1.9 });
    // Another view and back: the token positions may differ there, so the zoom starts again.
    await page.click('#tab-view-head');
    await page.click('#tab-view-heatmap');
    g = await gridWhen(page, { z: null });
  } finally {
    await app.close();
  }
});

test('page: a permalink opens the heatmap zoomed (hz=), and the wheel over a short sentence\'s heatmap scrolls the page instead', async () => {
  const app = await openApp(browser, server.url + `#${new URLSearchParams({ m: 'minilm-l6', t: LONG, w: 'exact', v: 'heatmap', hz: '8.40.100' })}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    await waitDrawn(page, (t) => window.attnvizDebug.text === t && !!window.attnvizDebug.heatmapGrid(), LONG);
    const g = await grid(page);
    assert.deepEqual([g.offset.z, g.offset.row, g.offset.col], [8, 40, 100]);
    await page.fill('#text', 'The cat sat on the mat.');
    await waitDrawn(page, () => window.attnvizDebug.text === 'The cat sat on the mat.');
    const short = await grid(page);
    assert.equal(short.offset, null, 'a zoom past a short map shows all of it');
    assert.ok(short.cell >= 14);
    const box = await page.locator(VIEW).boundingBox();
    await page.mouse.move(box.x + short.left + short.cell, box.y + short.top + short.cell);
    await page.mouse.wheel(0, -100);
    await page.waitForTimeout(300);
    assert.equal((await grid(page)).offset, null, 'large cells: the wheel does not zoom');
  } finally {
    await app.close();
  }
});
