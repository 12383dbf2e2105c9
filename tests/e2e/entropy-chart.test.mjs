// Issue 8: plotters-canvas draws what users see — the per-head entropy bars of one layer — and
// its hit-testing works: the geometry the wasm returns (CSS px) lands on the drawn pixels at
// devicePixelRatio 2, each bar hit-tests to its head, and the hover text gives that head's
// entropy, checked against the entropy computed here from the real model's weights.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser } from './harness.mjs';
import { realResult } from './views-helpers.mjs';

const TEXT = 'The animal did not cross the street because it was too tired.';
const LAYER = 2;

let server;
let browser;
let context;
let page;
before(async () => {
  server = await startServer({ prefix: '/' });
  browser = await launchBrowser();
  // The page's origin (for its modules and the worker), at devicePixelRatio 2.
  context = await browser.newContext({ deviceScaleFactor: 2 });
  page = await context.newPage();
  await page.goto(server.url, { waitUntil: 'load' });
  await realResult(page, TEXT);
});
after(async () => {
  await context?.close();
  await browser?.close();
  await server?.close();
});

test('entropy bars: wasm geometry matches the pixels, each bar hit-tests to its head, hover gives its entropy', async () => {
  const out = await page.evaluate(async ([t, layer]) => {
    // A module instance of our own (the query makes it one): the page loads its own copy for its chart.
    const wasm = await import('./pkg/attnviz.js?entropy-test');
    await wasm.default({ module_or_path: new URL('./pkg/attnviz_bg.wasm', location.href) });
    const chart = await import('./views/entropy-chart.js');
    const common = await import('./views/common.js');
    const { result, specials } = window.__real[t];
    const input = { result, specials };
    const state = { view: 'heatmap', kind: 'encoder_self', layer, head: 4, heads: null, agg: 'head', hideSpecial: false, merge: false };
    const canvas = document.createElement('canvas');
    document.body.prepend(canvas);
    const geom = chart.drawChart(canvas, wasm, input, state, common.LIGHT, 250);
    const dpr = canvas.width / 250;
    const img = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const px = (x, y) => {
      const o = (Math.floor(y * dpr) * canvas.width + Math.floor(x * dpr)) * 4;
      return Array.from(img.data.slice(o, o + 3));
    };
    // Entropy per head computed here: mean over query rows of −Σ p ln p.
    const b = result.attentions.find((a) => a.kind === 'encoder_self' && a.layer === layer);
    const n = b.query_len * b.key_len;
    const want = [];
    for (let h = 0; h < b.heads; h++) {
      let tot = 0;
      for (let i = 0; i < b.query_len; i++) {
        let s = 0;
        for (let j = 0; j < b.key_len; j++) s += b.data[h * n + i * b.key_len + j];
        let e = 0;
        for (let j = 0; j < b.key_len; j++) {
          const p = b.data[h * n + i * b.key_len + j] / s;
          if (p > 0) e -= p * Math.log(p);
        }
        tot += e;
      }
      want.push(tot / b.query_len);
    }
    const bars = geom.bars.map((bar) => {
      const cx = bar.x + bar.w / 2;
      return {
        head: bar.head,
        h: bar.h,
        inside: px(cx, bar.y + bar.h / 2),
        above: px(cx, bar.y - 4),
        hit: chart.hitTest(geom, cx, bar.y + bar.h / 2),
        hitAbove: chart.hitTest(geom, cx, geom.plot.y + 2),
        text: chart.hoverText(input, state, chart.hitTest(geom, cx, bar.y + bar.h / 2)),
        color: common.headColor(bar.head),
      };
    });
    const miss = chart.hitTest(geom, geom.plot.x - 20, geom.plot.y + geom.plot.h / 2);
    canvas.remove();
    return { dpr, heads: b.heads, want, bars, miss, width: geom.width, height: geom.height };
  }, [TEXT, LAYER]);
  assert.equal(out.dpr, 2, 'the test runs at devicePixelRatio 2');
  assert.equal(out.bars.length, out.heads);
  assert.equal(out.miss, null, 'left of the plot is no bar');
  const rgb = (hex) => [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
  for (const b of out.bars) {
    assert.deepEqual(b.hit, { head: b.head });
    assert.deepEqual(b.hitAbove, { head: b.head }, 'the column above a short bar selects it too');
    const m = /^head (\d+): ([\d.]+) nats/.exec(b.text);
    assert.ok(m, `hover text "${b.text}"`);
    assert.equal(Number(m[1]), b.head + 1);
    assert.ok(Math.abs(Number(m[2]) - out.want[b.head]) < 0.006, `head ${b.head + 1}: "${b.text}" but the entropy is ${out.want[b.head].toFixed(3)}`);
    if (b.h >= 8) {
      const d = Math.max(...rgb(b.color).map((v, k) => Math.abs(v - b.inside[k])));
      assert.ok(d <= 3, `inside bar ${b.head + 1}: rgb(${b.inside}) is not its colour ${b.color}`);
    }
    const da = Math.max(...rgb(b.color).map((v, k) => Math.abs(v - b.above[k])));
    assert.ok(da > 30, `4 px above bar ${b.head + 1} is still its colour: the geometry is off`);
  }
});
