// Issue 12, the query/key space of one head: its query and key vectors (step()) pooled and
// projected on two principal components. Checked against a PCA computed here from the CLI's
// `attnviz step` numbers; hover rings the partner and draws lines to the query's top keys (the
// CLI's probabilities); click pins; arrow keys change the head; permalink, widget and exports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { openApp, openWidget, useServerAndBrowser } from './harness.mjs';
import { canvasDigest, cliJson, waitDrawn } from './cli-helpers.mjs';
import { watchMainThread } from './main-thread.mjs';
import { decodePng } from './views-helpers.mjs';

const TEXT = 'The cat sat on the mat because it was warm.';
const LAYER = 1;
const HEAD = 2;
const VIEW = 'canvas#view';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

const step = cliJson('step', '--model', 'models/minilm', '--text', TEXT, '--kind', 'encoder_self', '--layer', String(LAYER), '--head', String(HEAD));
const T = step.query_len;
const D = step.d_k;

/** The two principal axes of the pooled, centred q and k rows (Jacobi-free: power iteration from a
 *  random start, 2000 steps, deflation) and every point's coordinates on them. */
function referencePca() {
  const rows = [];
  for (let i = 0; i < T; i++) rows.push(step.q.slice(i * D, (i + 1) * D));
  for (let i = 0; i < step.key_len; i++) rows.push(step.k.slice(i * D, (i + 1) * D));
  const mean = Array(D).fill(0);
  for (const r of rows) r.forEach((v, j) => (mean[j] += v / rows.length));
  const X = rows.map((r) => r.map((v, j) => v - mean[j]));
  const C = Array.from({ length: D }, (_, a) => Array.from({ length: D }, (_, b) => X.reduce((s, x) => s + x[a] * x[b], 0) / rows.length));
  let seed = 7;
  const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) - 0.5;
  const axes = [];
  for (let c = 0; c < 2; c++) {
    let v = Array.from({ length: D }, rnd);
    let lambda = 0;
    for (let it = 0; it < 2000; it++) {
      const w = C.map((row) => row.reduce((s, x, j) => s + x * v[j], 0));
      lambda = Math.hypot(...w);
      v = w.map((x) => x / lambda);
    }
    axes.push(v);
    for (let a = 0; a < D; a++) for (let b = 0; b < D; b++) C[a][b] -= lambda * v[a] * v[b];
  }
  return X.map((x) => axes.map((ax) => x.reduce((s, v, j) => s + v * ax[j], 0)));
}
const ref = referencePca();


test('page: every query and key is placed by the PCA of the CLI’s vectors; hover links to the partner and the top keys; click pins; keys change the head', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: 'qk', l: String(LAYER), h: String(HEAD) }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await page.setViewportSize({ width: 1280, height: 1000 });
    await waitDrawn(page, () => window.attnvizDebug.view === 'qk' && window.attnvizDebug.qkPoints());
    const pts = await page.evaluate(() => window.attnvizDebug.qkPoints());
    assert.equal(pts.qs.length, T);
    assert.equal(pts.ks.length, step.key_len);
    // Pixel positions are the PCs up to one scale, a shift and a sign per axis: compare pairwise
    // distances, which none of those change (relative to the largest).
    const pix = pts.qs.concat(pts.ks);
    const dist = (P, a, b) => Math.hypot(P[a][0] - P[b][0], P[a][1] - P[b][1]);
    let maxPix = 0;
    let maxRef = 0;
    for (let a = 0; a < pix.length; a++) for (let b = 0; b < a; b++) {
      maxPix = Math.max(maxPix, dist(pix, a, b));
      maxRef = Math.max(maxRef, dist(ref, a, b));
    }
    for (let a = 0; a < pix.length; a++) for (let b = 0; b < a; b++) {
      assert.ok(Math.abs(dist(pix, a, b) / maxPix - dist(ref, a, b) / maxRef) < 0.01, `distance ${a}–${b}`);
    }
    // The labels are the tokens, drawn as canvas text.
    const label = await page.getAttribute(VIEW, 'aria-label');
    assert.match(label, new RegExp(`${T} queries and ${step.key_len} keys`));
    // Hover query 4 ("on"): the side panel names it and its top keys with the CLI's weights; the
    // partner key is ringed and lines go to the top keys.
    const r = await page.locator(VIEW).boundingBox();
    const qi = 4;
    await page.mouse.move(r.x + pts.qs[qi][0], r.y + pts.qs[qi][1]);
    await page.waitForFunction((i) => document.getElementById('side-hint').textContent.includes(`(${i + 1}) at (`), qi);
    const hint = await page.textContent('#side-hint');
    assert.ok(hint.startsWith(`query “${step.query_tokens[qi]}”`), hint);
    const probs = [...Array(step.key_len).keys()].map((j) => ({ j, p: step.probs[qi * step.key_len + j] })).sort((a, b) => b.p - a.p).slice(0, 3);
    for (const { j, p } of probs) assert.ok(hint.includes(`“${step.key_tokens[j]}” ${p.toFixed(3)}`), `${hint} lacks ${step.key_tokens[j]} ${p.toFixed(3)}`);
    await waitDrawn(page, (i) => window.attnvizDebug.qkPoints() && window.attnvizDebug.qkPoints().focusIndex === i, qi);
    const hov = await page.evaluate(() => window.attnvizDebug.qkPoints());
    assert.equal(hov.focusSide, 'q');
    assert.deepEqual(hov.lines.map((l) => l.j), probs.filter((x) => x.p > 0).map((x) => x.j), 'lines to the top keys, strongest first');
    // Click pins the query; the permalink holds view and pin; moving away keeps it.
    await page.mouse.click(r.x + pts.qs[qi][0], r.y + pts.qs[qi][1]);
    await page.waitForFunction(() => window.attnvizDebug.state.pin && window.attnvizDebug.state.pin.index === 4);
    await page.mouse.move(r.x + 2, r.y + r.height - 2);
    await page.waitForFunction(() => location.hash.includes('p=q4') && location.hash.includes('v=qk'));
    const pinned = await page.evaluate(() => window.attnvizDebug.qkPoints());
    assert.equal(pinned.focusIndex, 4, 'the pinned query stays ringed');
    const app2 = await openApp(browser, page.url());
    try {
      await waitDrawn(app2.page, () => window.attnvizDebug.qkPoints() && window.attnvizDebug.qkPoints().focusIndex === 4);
    } finally {
      await app2.close();
    }
    // Arrow right: the next head, other vectors, another drawing.
    const before = await canvasDigest(page, VIEW);
    await page.focus(VIEW);
    await page.keyboard.press('ArrowRight');
    await waitDrawn(page, (h) => window.attnvizDebug.state.head === h && window.attnvizDebug.step && window.attnvizDebug.step.head === h, HEAD + 1);
    assert.notEqual(await canvasDigest(page, VIEW), before);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: the query/key space draws in slices, the main thread within budget; SVG and PNG exports hold the points and token labels', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, l: String(LAYER), h: String(HEAD) }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    const watch = await watchMainThread(page);
    await page.click('[role=tab][data-view=qk]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'qk' && window.attnvizDebug.qkPoints());
    await watch.take('query/key space');
    await watch.check();
    const [svg] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
    const text = readFileSync(await svg.path(), 'utf8');
    assert.match(text, /Query\/key space/);
    assert.ok(text.includes('>because<'), 'token labels in the SVG');
    const [png] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
    const pngBytes = readFileSync(await png.path());
    assert.equal(pngBytes.subarray(1, 4).toString(), 'PNG');
    const img = await decodePng(page, pngBytes);
    assert.ok(img.width > 100 && img.height > 100 && img.inked > 1000, `the PNG decodes to a drawing: ${JSON.stringify(img)}`);
    assert.match(png.suggestedFilename(), /-qk-/);
  } finally {
    await app.close();
  }
});

test('widget: view="qk" draws the query/key space of the given head', async () => {
  const w = await openWidget(browser, server.url, { model: 'minilm', text: TEXT, view: 'qk', layer: String(LAYER + 1), head: String(HEAD + 1) });
  const { page } = w;
  try {
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: 120_000 });
    await page.waitForFunction(() => /Query\/key space of layer 2, head 3/.test(document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label')), null, { timeout: 60_000 });
  } finally {
    await w.close();
  }
});
