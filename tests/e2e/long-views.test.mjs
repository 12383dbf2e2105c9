// Issue 40, views made for long texts. The head view: a window of readable rows instead of a
// wall of 12 px ones, with a minimap strip of the whole text beside each column (where the
// focus's weight goes, the window outlined); every way to move it is performed and what is drawn
// then is read: the wheel, PageUp / PageDown, a click on a strip, [ ] moving the pin (the window
// follows), the permalink (hw=), a strip's read-out, a causal decoder's default window at the
// end, SVG export, the widget. The heatmap, whose cells are a few pixels wide: the wheel zooms to
// exact cells around the pointer (and + / − at the keyboard cursor), PageUp / PageDown move the
// zoomed rows, the zoom is in the permalink (hz=), and every read-out names the whole map's cell.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { cliAt, cliBlock, cliJson, waitDrawn } from './cli-helpers.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

// 40 sentences: about 240 MiniLM tokens, far more than fit a 900 px screen at 12 px a row.
const LONG = Array.from({ length: 40 }, (_, i) => `The cat number ${i} sat down.`).join(' ');
const VIEW = 'canvas#view';
const win = (page) => page.evaluate(() => window.attnvizDebug.headWindow());
const hashOf = (o) => `#${new URLSearchParams(o).toString()}`;

/** The page on LONG (MiniLM's exact weights, 1280 × 900) with the permalink's `extra`, drawn. */
async function openLong(extra = {}) {
  const app = await openApp(browser, server.url + hashOf({ m: 'minilm-l6', t: LONG, w: 'exact', ...extra }));
  await setViewport(app.page, { width: 1280, height: 900 });
  const view = extra.v || 'head';
  await waitDrawn(app.page, ([t, v]) => window.attnvizDebug.text === t && window.attnvizDebug.view === v && !!(v === 'head' ? window.attnvizDebug.headWindow() : window.attnvizDebug.heatmapGrid()), [LONG, view]);
  return app;
}

/**
 * The window once the page has drawn one that `want` describes and has nothing left to draw:
 * { q0 } its first token, { after } a first token past that, { atEnd: n } ending at token n,
 * { focus } the focused token's index (with the strips' values drawn for it), {} any.
 */
async function windowWhen(page, want = {}) {
  await page.waitForFunction((wt) => {
    const w = window.attnvizDebug.headWindow();
    if (!w) return false;
    if ('q0' in wt && w.q0 !== wt.q0) return false;
    if ('after' in wt && !(w.q0 > wt.after)) return false;
    if ('atEnd' in wt && w.q0 !== wt.atEnd - w.shown) return false;
    const f = window.attnvizDebug.focus;
    if ('focus' in wt && !(f && f.index === wt.focus && w.values)) return false;
    return true;
  }, want, { timeout: 30_000, polling: 50 });
  await waitDrawn(page, () => true);
  return win(page);
}

const hashParam = (page, k) => page.evaluate((key) => new URLSearchParams(location.hash.slice(1)).get(key), k);

/** The pixel (r, g, b) at CSS (x, y) of the view's canvas. */
const pixel = (page, x, y) => page.evaluate(([px, py]) => {
  const c = document.querySelector('canvas#view');
  const k = c.width / c.clientWidth;
  const d = c.getContext('2d').getImageData(Math.round(px * k), Math.round(py * k), 1, 1).data;
  return [d[0], d[1], d[2]];
}, [x, y]);

test('page: a long text is drawn through a window with a strip of the whole text; the wheel, PageUp/PageDown and the strips move it', async () => {
  const app = await openLong();
  const { page } = app;
  try {
    const n = (await page.evaluate(() => window.attnvizDebug.tokens.length));
    assert.ok(n > 200, `${n} tokens`);
    let w = await win(page);
    assert.equal(w.windowed, true);
    assert.equal(w.q0, 0, 'an encoder starts at the first token');
    assert.ok(w.shown >= 8 && w.shown < n, `${w.shown} of ${n} tokens shown`);
    assert.equal(w.nq, w.shown);
    // The canvas fits the screen instead of being n × 12 px tall.
    const box = await page.locator(VIEW).boundingBox();
    assert.ok(box.height < 900, `canvas ${box.height} px tall`);
    assert.equal(await page.evaluate(() => window.attnvizDebug.tokenPoint('q', window.attnvizDebug.headWindow().shown)), null, 'a token past the window has no place');
    const aria = await page.getAttribute(VIEW, 'aria-label');
    assert.match(aria, new RegExp(`queries 1–${w.shown} and keys 1–${w.shown} drawn`));

    // Hover query 5: the key strip is its whole row over every key, the CLI's weights.
    const cli = cliBlock(cliJson('attend', '--model', 'models/minilm', '--text', LONG, '--layers', '0').attentions, 'encoder_self', 0);
    const pt = await page.evaluate(() => window.attnvizDebug.tokenPoint('q', 5));
    await page.mouse.move(box.x + pt.x, box.y + pt.y);
    w = await windowWhen(page, { focus: 5 });
    assert.equal(w.values.k.length, n);
    let worst = 0;
    w.values.k.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - cliAt(cli, 0, 5, j)))));
    assert.ok(worst < 1e-4, `the key strip differs from query 5's row of the CLI by ${worst}`);
    // Its strongest key is drawn in the head's colour at full strength in the strip.
    const top = w.values.k.indexOf(Math.max(...w.values.k));
    const y = w.strips.top + ((top + 0.5) / n) * w.strips.h;
    const ink = await pixel(page, w.strips.kX + w.strips.w / 2, y);
    const headColour = await page.evaluate(async () => (await import('/views/common.js')).headColor(0));
    const want = [1, 3, 5].map((i) => Number.parseInt(headColour.slice(i, i + 2), 16));
    assert.ok(ink.every((c, i) => Math.abs(c - want[i]) <= 12), `the strip at key ${top}: ${ink} vs ${want}`);
    assert.match(await page.textContent('#side-title'), /Top weights from this query/);
    await page.mouse.move(box.x + 2, box.y + box.height + 40);

    // The wheel: one notch (deltaY 100 px) moves the window 3 tokens down, and the permalink says so.
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, 100);
    w = await windowWhen(page, { after: 0 });
    assert.equal(w.q0, 3, 'one notch (100 px) = 3 tokens');
    assert.equal(await hashParam(page, 'hw'), '3');
    assert.equal(await page.evaluate(() => window.attnvizDebug.tokenPoint('q', 2)), null);
    assert.ok(await page.evaluate(() => window.attnvizDebug.tokenPoint('q', 3)), 'the window\'s first token is drawn');
    // Wheel up past the start: back at 0, and then the page scrolls instead (nothing to move).
    await page.mouse.wheel(0, -400);
    w = await windowWhen(page, { q0: 0 });
    assert.equal(await hashParam(page, 'hw'), '0');

    // PageDown / PageUp: a window's height less one token.
    await page.focus(VIEW);
    await page.keyboard.press('PageDown');
    w = await windowWhen(page, { after: 0 });
    assert.equal(w.q0, w.shown - 1);
    await page.keyboard.press('PageUp');
    w = await windowWhen(page, { q0: 0 });

    // A click on the key strip near its end centres the window there: the last token is drawn.
    await page.mouse.click(box.x + w.strips.kX + w.strips.w / 2, box.y + w.strips.top + w.strips.h - 2);
    w = await windowWhen(page, { after: 0 });
    assert.equal(w.q0, n - w.shown, 'the window ends at the last token');
    assert.ok(await page.evaluate((last) => window.attnvizDebug.tokenPoint('k', last), n - 1));
    // Hovering a strip reads out its token and value, as text.
    await page.mouse.move(box.x + w.strips.qX + w.strips.w / 2, box.y + w.strips.top + 1);
    await page.waitForFunction(() => /^Query 1 “\[CLS\]”: [\d.]+ to the window's keys\. Click to move the window here\.$/.test(document.getElementById('side-hint').textContent), null, { timeout: 10_000 });

    // [ ] move the pin to the next / previous query, and the window follows it: from nothing
    // pinned, ] pins query 1, which is above this window.
    await page.mouse.move(box.x + 2, box.y + box.height + 40);
    await page.focus(VIEW);
    await page.keyboard.press(']');
    w = await windowWhen(page, { q0: 0 });
    assert.deepEqual(await page.evaluate(() => window.attnvizDebug.state.pin), { side: 'q', index: 0 });
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /queries 1–/);
    // [ from query 1 wraps to the last, and the window goes to the end.
    await page.keyboard.press('[');
    w = await windowWhen(page, { atEnd: n });
    assert.deepEqual(await page.evaluate(() => window.attnvizDebug.state.pin), { side: 'q', index: n - 1 });
    // Clicking a token in the window pins it and keeps the window where it is.
    const at = w.q0;
    const p2 = await page.evaluate((i) => window.attnvizDebug.tokenPoint('q', i), at + 2);
    await page.mouse.click(box.x + p2.x, box.y + p2.y);
    await page.waitForFunction((i) => window.attnvizDebug.state.pin && window.attnvizDebug.state.pin.index === i, at + 2);
    w = await windowWhen(page);
    assert.equal(w.q0, at);
    assert.equal(await hashParam(page, 'p'), `q${at + 2}`);

    // Another layer keeps the window; another view and back starts again (token indices change meaning there).
    await page.keyboard.press('ArrowDown');
    w = await windowWhen(page);
    assert.equal(await page.evaluate(() => window.attnvizDebug.state.layer), 1);
    assert.equal(w.q0, at);

    // SVG export draws the same window and its caption.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
    const svg = await (await import('node:fs/promises')).readFile(await download.path(), 'utf8');
    assert.match(svg, new RegExp(`tokens ${at + 1}–${at + w.shown} of ${n} drawn`));
  } finally {
    await app.close();
  }
});

test('page: a permalink opens the window where it was (hw=), and a short text has none', async () => {
  const app = await openLong({ hw: '50' });
  const { page } = app;
  try {
    const w = await win(page);
    assert.equal(w.q0, 50);
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /queries 51–/);
    await page.fill('#text', 'A short sentence.');
    await waitDrawn(page, () => window.attnvizDebug.text === 'A short sentence.');
    const short = await win(page);
    assert.equal(short.windowed, false);
    assert.equal(short.strips, null);
    assert.equal(short.q0, 0);
  } finally {
    await app.close();
  }
});

test('page: a causal decoder\'s window starts at the end of the text, where its last rows see every key', async () => {
  const text = Array.from({ length: 30 }, (_, i) => `Line ${i} of the story.`).join(' ');
  const app = await openApp(browser, server.url + hashOf({ m: 'smollm2-135m', t: text }));
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    await waitDrawn(page, (t) => window.attnvizDebug.text === t && window.attnvizDebug.modelId === 'smollm2-135m' && !!window.attnvizDebug.headWindow(), text);
    const n = await page.evaluate(() => window.attnvizDebug.tokens.length);
    const w = await win(page);
    assert.equal(w.windowed, true);
    assert.equal(w.q0, n - w.shown);
    assert.ok(await page.evaluate((last) => window.attnvizDebug.tokenPoint('q', last), n - 1), 'the last token is drawn');
  } finally {
    await app.close();
  }
});

test('widget: the same window and strips, moved by the wheel and PageDown', async () => {
  const { page, close } = await openWidget(browser, server.url, { model: 'minilm', text: LONG });
  const windowOf = () => page.evaluate(() => {
    const w = document.getElementById('w');
    const g = w.shell && !w.shell.busy ? w.shell.geom() : null;
    return g && g.win ? { ...g.win, strips: g.strips } : null;
  });
  const until = (q0) => page.waitForFunction((want) => {
    const w = document.getElementById('w');
    const g = w.shell && !w.shell.busy ? w.shell.geom() : null;
    return !!g && !!g.win && g.win.q0 === want;
  }, q0, { timeout: 120_000, polling: 50 });
  try {
    await setViewport(page, { width: 1280, height: 900 });
    await until(0);
    const w = await windowOf();
    assert.equal(w.windowed, true);
    assert.ok(w.strips && w.strips.h > 0);
    const box = await page.locator('#w >> canvas').first().boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + Math.min(box.height / 2, 300));
    await page.mouse.wheel(0, 100);
    await until(3);
    await page.locator('#w >> canvas').first().focus();
    await page.keyboard.press('PageDown');
    await until(3 + w.shown - 1);
  } finally {
    await close();
  }
});

// ---------------------------------------------------------------- the heatmap

const grid = (page) => page.evaluate(() => window.attnvizDebug.heatmapGrid());

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
  const app = await openLong({ v: 'heatmap', l: '1', h: '3' });
  const { page } = app;
  try {
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
  const app = await openLong({ v: 'heatmap', hz: '8.40.100' });
  const { page } = app;
  try {
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
