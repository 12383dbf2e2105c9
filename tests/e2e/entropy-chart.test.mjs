// Issue 8: plotters-canvas draws what users see — the per-head entropy bars of one layer in the
// page's side panel — and the mouse works on them, at devicePixelRatio 2. The bars are found as a
// reader finds them, by their colour in the canvas' pixels (one colour per head); the real mouse
// is moved over each one, and the read-out under the chart must name that head and its entropy,
// computed here from the CLI's attention weights. The column above a short bar belongs to it too,
// left of the plot is no bar, leaving the chart restores the hint, and a click shows that head.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser } from './harness.mjs';
import { cliJson, cliBlock, cliAt } from './cli-helpers.mjs';

const TEXT = 'The animal did not cross the street because it was too tired.';
const LAYER = 2;
const CHART = 'canvas#entropy-chart';
// views/common.js HEAD_COLORS: what a reader matches a bar to a head swatch by
const HEAD_COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#ff9da7', '#9c755f', '#7f7fff', '#2ca58d', '#d4a017'];
const HINT = /^Normalised entropy H of each head’s rows/;

// Normalised entropy H per head from the CLI's weights: the mean over query rows of −Σ p ln p ÷
// ln(keys the row sees), every key for an encoder (docs/entropy.md).
const block = cliBlock(cliJson('attend', '--model', 'models/minilm', '--text', TEXT).attentions, 'encoder_self', LAYER);
const want = [];
for (let h = 0; h < block.heads; h++) {
  let tot = 0;
  for (let i = 0; i < block.query_len; i++) {
    let s = 0;
    for (let j = 0; j < block.key_len; j++) s += cliAt(block, h, i, j);
    let e = 0;
    for (let j = 0; j < block.key_len; j++) {
      const p = cliAt(block, h, i, j) / s;
      if (p > 0) e -= p * Math.log(p);
    }
    tot += e;
  }
  want.push(tot / block.query_len / Math.log(block.key_len));
}

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/**
 * The bars as drawn: for each head colour, the box (CSS px of the canvas) of the pixels of that
 * colour (within 3 per channel), or null.
 */
function barsByColour(page) {
  return page.evaluate(([sel, colours]) => {
    const c = document.querySelector(sel);
    const dpr = c.width / c.getBoundingClientRect().width;
    const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    const rgb = colours.map((hex) => [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16)));
    const box = colours.map(() => null);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 4;
        for (let h = 0; h < rgb.length; h++) {
          const [r, g, b] = rgb[h];
          if (Math.abs(data[i] - r) > 3 || Math.abs(data[i + 1] - g) > 3 || Math.abs(data[i + 2] - b) > 3) continue;
          const bx = box[h] || (box[h] = { x0: x, x1: x, y0: y, y1: y, n: 0 });
          bx.x0 = Math.min(bx.x0, x);
          bx.x1 = Math.max(bx.x1, x);
          bx.y0 = Math.min(bx.y0, y);
          bx.y1 = Math.max(bx.y1, y);
          bx.n++;
        }
      }
    }
    return { dpr, bars: box.map((b) => b && { x: (b.x0 + b.x1 + 1) / 2 / dpr, top: b.y0 / dpr, bottom: (b.y1 + 1) / dpr, w: (b.x1 - b.x0 + 1) / dpr, n: b.n }) };
  }, [CHART, HEAD_COLORS]);
}

test('entropy chart: the mouse over each bar reads out that head and its entropy (from the CLI weights); above a short bar, left of the plot, off the chart, and a click', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, l: String(LAYER), h: '0' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { fresh: true, contextOptions: { deviceScaleFactor: 2, viewport: { width: 1280, height: 900 } } });
  const { page } = app;
  try {
    // The chart comes once its wasm has loaded, after the first map.
    await page.waitForFunction(() => window.attnvizDebug.chartBars > 0, null, { timeout: 60_000 });
    await page.locator(CHART).scrollIntoViewIfNeeded();
    const readout = () => page.textContent('#chart-readout');
    assert.match(await readout(), HINT);
    const { dpr, bars } = await barsByColour(page);
    assert.equal(dpr, 2, 'the test runs at devicePixelRatio 2');
    assert.equal(block.heads, 12);
    bars.forEach((b, h) => assert.ok(b && b.n > 20, `no bar of head ${h + 1}'s colour ${HEAD_COLORS[h]} is drawn`));
    // One bar per head, left to right in head order, none overlapping.
    for (let h = 1; h < bars.length; h++) assert.ok(bars[h].x - bars[h].w / 2 > bars[h - 1].x + bars[h - 1].w / 2 - 0.5, `bars ${h} and ${h + 1} overlap`);
    // Bar heights follow the entropies (the axis starts at 0): the ratio of any two matches.
    const base = Math.max(...bars.map((b) => b.bottom));
    const heights = bars.map((b) => base - b.top);
    const k = heights.reduce((a, ht, h) => a + ht * want[h], 0) / want.reduce((a, w) => a + w * w, 0);
    heights.forEach((ht, h) => assert.ok(Math.abs(ht - want[h] * k) <= 1.5, `bar ${h + 1} is ${ht.toFixed(1)} px tall, ${(want[h] * k).toFixed(1)} px for its entropy ${want[h].toFixed(3)}`));

    const box = await page.locator(CHART).boundingBox();
    // The pointer starts beside the chart in one move: the map, left of the side column, is not
    // on its way (a token hovered there lists its weights above the chart, which moves it down).
    await page.mouse.move(box.x + box.width / 2, box.y + box.height + 4);
    const hover = async (x, y, re, how) => {
      await page.mouse.move(box.x + x, box.y + y, { steps: 3 });
      try {
        await page.waitForFunction(([src]) => new RegExp(src).test(document.getElementById('chart-readout').textContent), [re.source], { timeout: 10_000, polling: 50 });
      } catch {
        assert.fail(`${how}: the read-out says "${await readout()}"`);
      }
      return readout();
    };
    for (let h = 0; h < bars.length; h++) {
      const b = bars[h];
      const text = await hover(b.x, (b.top + b.bottom) / 2, new RegExp(`^head ${h + 1}:`), `over bar ${h + 1}`);
      const m = /^head (\d+): H = ([\d.]+) \(0 focused … 1 uniform\)$/.exec(text);
      assert.ok(m, `read-out "${text}"`);
      assert.ok(Math.abs(Number(m[2]) - want[h]) < 0.006, `head ${h + 1}: "${text}" but its H is ${want[h].toFixed(3)}`);
    }
    // The column above the shortest bar is that bar's too.
    const lo = heights.indexOf(Math.min(...heights));
    await hover(bars[lo].x, bars[lo].top - 10, new RegExp(`^head ${lo + 1}:`), `10 px above the shortest bar (${lo + 1})`);
    // Left of the plot (the value axis) is no bar: back to the hint.
    await hover(4, (bars[0].top + bars[0].bottom) / 2, HINT, 'left of the plot');
    // Over a bar again, then off the chart: the hint again.
    await hover(bars[5].x, bars[5].bottom - 2, /^head 6:/, 'over bar 6');
    await hover(box.width / 2, box.height + 40, HINT, 'off the chart');
    // A click on a bar shows that head alone (the permalink says so).
    await page.mouse.click(box.x + bars[7].x, box.y + bars[7].bottom - 2);
    await page.waitForFunction(() => window.attnvizDebug.state && window.attnvizDebug.state.head === 7 && !window.attnvizDebug.drawing, null, { timeout: 20_000 });
    await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('h') === '7', null, { timeout: 10_000 });
    const st = await page.evaluate(() => window.attnvizDebug.state);
    assert.deepEqual([st.head, st.heads, st.agg], [7, [7], 'head']);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
