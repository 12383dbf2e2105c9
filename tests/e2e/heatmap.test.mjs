// Issue 8, defect 1: the heatmap. Hovering a cell names its query token, its key token and its
// weight; the weights are printed in the cells when they fit; the key labels of up to 32 tokens
// are readable without scrolling (page ≈ 900 px, widget 600 px); the screen and the SVG export
// use the same colours. Checked on what the canvas really shows (its fillText calls and its
// pixels) against the weights of the real model computed in a worker of the test's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser, setViewport, downloadBytes } from './harness.mjs';
import { installTextLog, realResult, realWeight, textFrame, waitQuiet } from './views-helpers.mjs';

// 32 tokens with [CLS] and [SEP] for MiniLM (asserted below), all of them words.
const LONG = 'The quick brown fox jumps over the lazy dog while the old farmer watches from his porch and the children play near the river under a bright summer sky today';
const SHORT = 'The cat sat on the mat.';
const LAYER = 1;
const HEAD = 2;
const VIEW = 'canvas#view';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** Open the page at 1280 × 900 on `text`, layer LAYER, head HEAD; then show the heatmap tab. */
async function openHeatmap(text) {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: text, l: String(LAYER), h: String(HEAD) }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  await setViewport(page, { width: 1280, height: 900 });
  await installTextLog(page);
  const real = await realResult(page, text);
  await page.click('[role=tab][data-view=heatmap]');
  await page.waitForFunction(() => document.querySelector('canvas#view').dataset.view === 'heatmap');
  // Let every (re)draw land, e.g. a renderer loaded after the first draw.
  await waitQuiet(page, VIEW, 1500);
  return { app, page, tokens: real.tokens };
}

/** The labels of a drawn heatmap: query labels (horizontal, right-aligned) and key labels (turned). */
function labels(frame, tokens) {
  const set = new Set(tokens);
  const turned = (t) => Math.abs(Math.sin(t.angle)) > 0.2;
  const rows = frame.texts.filter((t) => !turned(t) && (t.align === 'right' || t.align === 'end') && set.has(t.text));
  const cols = frame.texts.filter((t) => turned(t));
  return { rows, cols };
}

test('page, 32 tokens: every key label is drawn whole, visible without scrolling and apart from its neighbours', async () => {
  const { app, page, tokens } = await openHeatmap(LONG);
  try {
    assert.equal(tokens.length, 32, `the sentence should have 32 tokens: ${tokens.join(' ')}`);
    const frame = await textFrame(page, VIEW);
    const { cols } = labels(frame, tokens);
    assert.deepEqual(cols.map((t) => t.text), tokens, 'one key label per token, in order, not shortened');
    const wrap = await page.evaluate(() => {
      const r = document.getElementById('canvas-wrap').getBoundingClientRect();
      return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
    });
    const visible = { left: Math.max(0, wrap.left), top: Math.max(0, wrap.top), right: Math.min(frame.view.width, wrap.right), bottom: Math.min(frame.view.height, wrap.bottom) };
    for (const t of cols) {
      // Both ends of the label, in window coordinates.
      const x0 = frame.rect.left + t.x;
      const y0 = frame.rect.top + t.y;
      const x1 = x0 + Math.cos(t.angle) * t.width;
      const y1 = y0 + Math.sin(t.angle) * t.width;
      for (const [x, y] of [[x0, y0], [x1, y1]]) {
        assert.ok(x >= visible.left && x <= visible.right && y >= visible.top && y <= visible.bottom,
          `key label "${t.text}" reaches (${x.toFixed(0)}, ${y.toFixed(0)}), outside the visible part of the map ${JSON.stringify(visible)}`);
      }
    }
    assertApart(cols);
  } finally {
    await app.close();
  }
});

/** The text of an element once it has stayed the same for 300 ms (at most 5 s). */
async function settledText(page, selector) {
  let last = await page.textContent(selector);
  let since = Date.now();
  const t0 = Date.now();
  while (Date.now() - since < 300 && Date.now() - t0 < 5000) {
    await new Promise((r) => setTimeout(r, 50));
    const now = await page.textContent(selector);
    if (now !== last) {
      last = now;
      since = Date.now();
    }
  }
  return last;
}

/** Neighbouring turned labels must be at least one font size apart, across their direction. */
function assertApart(cols) {
  for (let j = 1; j < cols.length; j++) {
    const a = cols[j - 1];
    const b = cols[j];
    const gap = Math.abs((b.x - a.x) * Math.sin(a.angle) - (b.y - a.y) * Math.cos(a.angle));
    assert.ok(gap >= a.px * 0.95, `key labels "${a.text}" and "${b.text}" overlap: ${gap.toFixed(1)} px apart for a ${a.px.toFixed(1)} px font`);
  }
}

test('page: hovering a cell shows its query token, key token and weight; the weights are printed in the cells', async () => {
  const { app, page, tokens } = await openHeatmap(SHORT);
  try {
    const frame = await textFrame(page, VIEW);
    const { rows, cols } = labels(frame, tokens);
    assert.equal(rows.length, tokens.length, `query labels: ${rows.map((t) => t.text).join(' ')}`);
    assert.equal(cols.length, tokens.length, `key labels: ${cols.map((t) => t.text).join(' ')}`);
    // Cells where query ≠ key, both words.
    const cells = [[2, 1], [3, 6], [6, 2], [1, 1]];
    for (const [i, j] of cells) {
      const want = await realWeight(page, SHORT, 'encoder_self', LAYER, HEAD, i, j);
      await page.mouse.move(frame.rect.left + cols[j].x, frame.rect.top + rows[i].y);
      const hint = await settledText(page, '#side-hint');
      // views/heatmap.js hoverText: query “TOKEN” (position) → key “TOKEN” (position): weight to 3 decimals.
      const named = `query “${tokens[i]}” (${i + 1}) → key “${tokens[j]}” (${j + 1}): `;
      assert.ok(hint.startsWith(named), `hover on (${tokens[i]}, ${tokens[j]}): "${hint}" is not "${named}…"`);
      const num = hint.slice(named.length);
      assert.match(num, /^\d\.\d{3}$/, `hover on (${tokens[i]}, ${tokens[j]}): "${hint}" does not end in the weight`);
      assert.ok(Math.abs(Number(num) - want) < 6e-4, `hover on (${tokens[i]}, ${tokens[j]}): "${hint}" but the weight is ${want.toFixed(4)}`);
    }
    // The weights in the cells: one number per cell, at its centre, equal to the weight (2 decimals).
    const colX = cols.map((t) => t.x);
    const rowY = rows.map((t) => t.y);
    let printed = 0;
    for (let i = 0; i < tokens.length; i++) {
      for (let j = 0; j < tokens.length; j++) {
        const t = frame.texts.find((x) => /^\d*\.\d\d$/.test(x.text) && Math.abs(x.x - colX[j]) < 1.5 && Math.abs(x.y - rowY[i]) < 1.5);
        assert.ok(t, `no weight printed in cell (${i}, ${j})`);
        const want = await realWeight(page, SHORT, 'encoder_self', LAYER, HEAD, i, j);
        assert.ok(Math.abs(Number(t.text) - want) <= 0.0051, `cell (${i}, ${j}) reads ${t.text}, weight ${want.toFixed(4)}`);
        printed++;
      }
    }
    assert.equal(printed, tokens.length ** 2);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: the SVG export has the colours of the screen, cell by cell', async () => {
  const { app, page, tokens } = await openHeatmap(SHORT);
  try {
    await page.mouse.move(0, 0);
    await waitQuiet(page, VIEW, 500);
    const frame = await textFrame(page, VIEW);
    const { rows, cols } = labels(frame, tokens);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
    const svg = (await downloadBytes(download)).toString('utf8');
    const rects = [...svg.matchAll(/<rect x="([\d.-]+)" y="([\d.-]+)" width="([\d.]+)" height="([\d.]+)" fill="rgb\((\d+),(\d+),(\d+)\)"/g)]
      .map((m) => m.slice(1).map(Number));
    assert.ok(rects.length >= tokens.length ** 2, `the SVG has ${rects.length} filled rects`);
    for (let i = 0; i < tokens.length; i++) {
      for (let j = 0; j < tokens.length; j++) {
        // A point inside the cell, off its printed number: 4 px right of the column's centre
        // line would still hit the text, so go near the cell's corner along the row's centre.
        const x = cols[j].x;
        const y = rows[i].y;
        const cellRect = rects.filter(([rx, ry, rw, rh]) => x >= rx && x < rx + rw && y >= ry && y < ry + rh).sort((a, b) => a[2] * a[3] - b[2] * b[3])[0];
        assert.ok(cellRect, `no SVG rect under cell (${i}, ${j})`);
        const px = cellRect[0] + 2.5;
        const py = cellRect[1] + 2.5;
        const screen = await page.evaluate(([sx, sy]) => {
          const c = document.querySelector('canvas#view');
          const dpr = c.width / c.getBoundingClientRect().width;
          return Array.from(c.getContext('2d').getImageData(Math.floor(sx * dpr), Math.floor(sy * dpr), 1, 1).data.slice(0, 3));
        }, [px, py]);
        const file = cellRect.slice(4, 7);
        const diff = Math.max(...file.map((v, k) => Math.abs(v - screen[k])));
        assert.ok(diff <= 3, `cell (${i}, ${j}): screen rgb(${screen}) vs SVG rgb(${file})`);
      }
    }
  } finally {
    await app.close();
  }
});

test('widget, 600 px, 32 tokens: the key labels are drawn whole, inside the map and apart', async () => {
  const app = await openApp(browser, server.url);
  const { page } = app;
  try {
    await installTextLog(page);
    const { tokens } = await realResult(page, LONG);
    assert.equal(tokens.length, 32);
    await page.evaluate(async (text) => {
      await import('./attention-viz.js');
      const w = document.createElement('attention-viz');
      w.id = 'hm';
      w.style.display = 'block';
      w.style.width = '600px';
      w.setAttribute('model', 'minilm');
      w.setAttribute('view', 'heatmap');
      w.setAttribute('layer', '2');
      w.setAttribute('text', text);
      document.body.prepend(w);
    }, LONG);
    const CANVAS = '#hm >> canvas';
    await page.waitForFunction(() => { const w = document.getElementById('hm'); return w && w.dataset.state === 'ready'; }, null, { timeout: 120_000 });
    await waitQuiet(page, CANVAS, 800);
    const frame = await textFrame(page, CANVAS);
    assert.ok(frame.rect.width <= 600, `the widget's map is ${frame.rect.width} px wide`);
    const { cols } = labels(frame, tokens);
    assert.deepEqual(cols.map((t) => t.text), tokens, 'one key label per token, in order, not shortened');
    for (const t of cols) {
      const x1 = t.x + Math.cos(t.angle) * t.width;
      const y1 = t.y + Math.sin(t.angle) * t.width;
      for (const [x, y] of [[t.x, t.y], [x1, y1]]) {
        assert.ok(x >= 0 && x <= frame.rect.width && y >= 0 && y <= frame.rect.height, `key label "${t.text}" leaves the map at (${x.toFixed(0)}, ${y.toFixed(0)})`);
      }
    }
    assertApart(cols);
  } finally {
    await app.close();
  }
});
