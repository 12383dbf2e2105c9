// Issue 8, defect 2: in the head view one diffuse head must still read. Its strongest line is
// drawn nearly opaque (opacity is scaled to the largest weight drawn, not the raw weight), and
// the drawing states that scale. Checked on the pixels of the head view module's drawing of the
// real model's most diffuse head, and on the text of the same drawing exported as SVG.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, openApp } from './harness.mjs';
import { realResult } from './views-helpers.mjs';

const TEXT = 'The animal did not cross the street because it was too tired to walk any further.';

let server;
let browser;
let app;
before(async () => {
  server = await startServer({ prefix: '/' });
  browser = await launchBrowser();
  app = await openApp(browser, server.url);
  await realResult(app.page, TEXT);
});
after(async () => {
  await app?.close();
  await browser?.close();
  await server?.close();
});

/** The encoder head (layer, head) whose largest weight is the smallest: the most diffuse one. */
function mostDiffuse(page) {
  return page.evaluate((t) => {
    const r = window.__real[t].result;
    let best = null;
    for (const b of r.attentions.filter((a) => a.kind === 'encoder_self')) {
      const n = b.query_len * b.key_len;
      for (let h = 0; h < b.heads; h++) {
        let mx = 0;
        let at = 0;
        for (let k = 0; k < n; k++) if (b.data[h * n + k] > mx) [mx, at] = [b.data[h * n + k], k];
        if (!best || mx < best.max) best = { layer: b.layer, head: h, max: mx, i: Math.floor(at / b.key_len), j: at % b.key_len };
      }
    }
    return best;
  }, TEXT);
}

test('one diffuse head alone: its strongest line is drawn nearly opaque, and the scale is written', async () => {
  const { page } = app;
  const d = await mostDiffuse(page);
  assert.ok(d.max < 0.35, `the most diffuse head should be diffuse (largest weight ${d.max})`);
  const out = await page.evaluate(async ([t, dd]) => {
    const head = await import('./views/head.js');
    const common = await import('./views/common.js');
    const { SvgContext } = await import('./views/svg.js');
    const { drain } = await import('./core/slices.js'); // a view's draw() runs as steps
    const { result, specials } = window.__real[t];
    const input = { result, specials };
    const state = { kind: 'encoder_self', layer: dd.layer, head: dd.head, heads: [dd.head], agg: 'head', threshold: 0, hideSpecial: false, merge: false, focus: null };
    const theme = common.LIGHT;
    const canvas = document.createElement('canvas');
    document.body.append(canvas);
    const probe = canvas.getContext('2d');
    const sz = head.size(probe, input, state, 900);
    const ctx = common.prepareCanvas(canvas, sz.width, sz.height);
    const g = drain(head.draw(ctx, input, state, theme, sz.width, sz.height));
    const dpr = canvas.width / sz.width;
    const img = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const px = (x, y) => {
      const o = (Math.round(y * dpr) * canvas.width + Math.round(x * dpr)) * 4;
      return [img.data[o], img.data[o + 1], img.data[o + 2]];
    };
    const hex = common.headColor(dd.head);
    const col = [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
    const bg = [255, 255, 255];
    // How far a pixel has gone from the background towards the head's colour (0 … 1).
    const strength = (p) => Math.max(...[0, 1, 2].map((k) => (Math.abs(col[k] - bg[k]) > 40 ? (bg[k] - p[k]) / (bg[k] - col[k]) : -1)));
    const yOf = (i) => g.headerH + 4 + i * g.rowH + g.rowH / 2;
    const x1 = g.leftX + 4;
    const x2 = g.rightX - 4;
    // Along the strongest line: the least inked sample (each the best of its 3 × 3 device pixels).
    let weakest = 1;
    for (let s = 0.15; s <= 0.851; s += 0.05) {
      const x = x1 + (x2 - x1) * s;
      const y = yOf(dd.i) + (yOf(dd.j) - yOf(dd.i)) * s;
      let best = 0;
      for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) best = Math.max(best, strength(px(x + dx / dpr, y + dy / dpr)));
      weakest = Math.min(weakest, best);
    }
    canvas.remove();
    const svg = new SvgContext(sz.width, sz.height);
    drain(head.draw(svg, input, state, theme, sz.width, sz.height));
    const texts = [...svg.root.querySelectorAll('text')].map((e) => e.textContent);
    return { weakest, texts };
  }, [TEXT, d]);
  assert.ok(out.weakest >= 0.6, `the strongest line of head ${d.head + 1} (layer ${d.layer + 1}, weight ${d.max.toFixed(3)}) is only ${(out.weakest * 100).toFixed(0)} % inked`);
  const scale = out.texts.find((s) => /opacity/.test(s) && /÷/.test(s));
  assert.ok(scale, `no opacity scale written in the drawing: ${out.texts.slice(0, 8).join(' | ')}`);
  const shown = Number(/÷\s*([\d.]+)/.exec(scale)[1]);
  assert.ok(Math.abs(shown - d.max) < 0.006, `the drawing says "${scale}" but the largest weight is ${d.max.toFixed(3)}`);
});

// Issue 21, item 8: with every head drawn, twelve translucent lines on one path blended into one
// grey-brown. Each query–key pair is now one line in the colour of the head that weights it
// most, a legend names the colours, and the side panel says its weights are combined.
test('all heads: each line has its strongest head\'s colour, a legend names them, the side panel says what is combined', async () => {
  const { page } = app;
  const out = await page.evaluate(async (t) => {
    const head = await import('./views/head.js');
    const common = await import('./views/common.js');
    const { SvgContext } = await import('./views/svg.js');
    const { drain } = await import('./core/slices.js');
    const { result, specials } = window.__real[t];
    const input = { result, specials };
    const block = result.attentions.find((a) => a.kind === 'encoder_self' && a.layer === 2);
    const n = block.query_len * block.key_len;
    // Query 3's pair with the largest weight in any head, and that head.
    const i = 3;
    let best = { w: 0, j: 0, h: 0 };
    for (let h = 0; h < block.heads; h++) {
      for (let j = 0; j < block.key_len; j++) {
        const w = block.data[h * n + i * block.key_len + j];
        if (w > best.w) best = { w, j, h };
      }
    }
    const state = { kind: 'encoder_self', layer: 2, head: 0, heads: [], agg: 'head', threshold: 0, hideSpecial: false, merge: false, focus: { side: 'q', index: i } };
    const canvas = document.createElement('canvas');
    document.body.append(canvas);
    const sz = head.size(canvas.getContext('2d'), input, state, 900);
    const ctx = common.prepareCanvas(canvas, sz.width, sz.height);
    const g = drain(head.draw(ctx, input, state, common.LIGHT, sz.width, sz.height));
    const dpr = canvas.width / sz.width;
    const img = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    const yOf = (k) => g.headerH + 4 + k * g.rowH + g.rowH / 2;
    // The most inked device pixel near 85 % of the way along the line (lines from one query
    // fan out: there only this one passes).
    const x = g.leftX + 4 + (g.rightX - g.leftX - 8) * 0.85;
    const y = yOf(i) + (yOf(best.j) - yOf(i)) * 0.85;
    let px = null;
    for (let dx = -2; dx <= 2; dx++) {
      for (let dy = -2; dy <= 2; dy++) {
        const o = (Math.round((y + dy / dpr) * dpr) * canvas.width + Math.round((x + dx / dpr) * dpr)) * 4;
        const p = [img.data[o], img.data[o + 1], img.data[o + 2]];
        if (!px || p[0] + p[1] + p[2] < px[0] + px[1] + px[2]) px = p;
      }
    }
    canvas.remove();
    const svg = new SvgContext(sz.width, sz.height);
    drain(head.draw(svg, input, { ...state, focus: null }, common.LIGHT, sz.width, sz.height));
    const texts = [...svg.root.querySelectorAll('text')].map((e) => e.textContent);
    return { px, hex: common.headColor(best.h), h: best.h, heads: block.heads, texts, describe: head.describe(input, state) };
  }, TEXT);
  // Over white, a line of colour c at opacity a is 255 − a·(255 − c) per channel: the same a in
  // every channel that the colour moves. A blend of several heads' colours has no single a.
  const col = [1, 3, 5].map((k) => parseInt(out.hex.slice(k, k + 2), 16));
  const alphas = [0, 1, 2].filter((k) => 255 - col[k] > 40).map((k) => (255 - out.px[k]) / (255 - col[k]));
  assert.ok(Math.min(...alphas) > 0.3, `the line to the strongest key is hardly inked: pixel ${out.px}, head ${out.h + 1}'s colour ${out.hex}`);
  assert.ok(Math.max(...alphas) - Math.min(...alphas) < 0.15,
    `the line to the strongest key is not head ${out.h + 1}'s colour ${out.hex}: pixel ${out.px} (per-channel opacity ${alphas.map((a) => a.toFixed(2))})`);
  assert.ok(out.texts.some((s) => /colour = the head that weights it most/.test(s)), `no colour legend: ${out.texts.slice(0, 10).join(' | ')}`);
  for (let h = 1; h <= out.heads; h++) assert.ok(out.texts.includes(String(h)), `the legend has no entry for head ${h}`);
  assert.match(out.describe, /colour of the head that weights it most/);

  // The page with every head drawn (key A): hovering a token says its weights are the mean.
  await page.mouse.move(0, 0);
  await page.keyboard.press('a');
  await page.waitForFunction(() => (!window.attnvizDebug.state.heads || window.attnvizDebug.state.heads.length > 1) && !window.attnvizDebug.drawing && !window.attnvizDebug.computing, null, { timeout: 30_000 });
  const box = await page.locator('canvas#view').boundingBox();
  const pt = await page.evaluate(() => window.attnvizDebug.tokenPoint('q', 2));
  assert.ok(pt, 'the page is not on the head view');
  await page.mouse.move(box.x + pt.x, box.y + pt.y);
  await page.waitForFunction(() => document.querySelectorAll('#top-list li').length > 0, null, { timeout: 10_000 });
  const hint = await page.locator('#side-hint').textContent();
  assert.match(hint, /mean of all \d+ heads/, `the side panel does not say its weights are combined: "${hint}"`);
  await page.mouse.move(0, 0);
});
