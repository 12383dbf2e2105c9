// Issue 12, the query/key space of one head: its query and key vectors (step()) pooled and
// projected on two principal components. Checked against a PCA computed here from the CLI's
// `attnviz step` numbers; hover rings the partner and draws lines to the query's top keys (the
// CLI's probabilities); click pins; arrow keys change the head; permalink, widget and exports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport, downloadBytes } from './harness.mjs';
import { canvasDigest, cliJson, waitDrawn } from './cli-helpers.mjs';
import { watchMainThread } from './main-thread.mjs';
import { decodePng, installTextLog, textFrame, waitQuiet } from './views-helpers.mjs';

const TEXT = 'The cat sat on the mat because it was warm.';
const LAYER = 1;
const HEAD = 2;
const VIEW = 'canvas#view';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const cliStep = (head) => cliJson('step', '--model', 'models/minilm', '--text', TEXT, '--kind', 'encoder_self', '--layer', String(LAYER), '--head', String(head));
const step = cliStep(HEAD);
const T = step.query_len;
const D = step.d_k;

/** The two principal axes of the pooled, centred q and k rows (Jacobi-free: power iteration from a
 *  random start, 2000 steps, deflation) and every point's coordinates on them: the T queries,
 *  then the keys. */
function referencePca(step) {
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
const ref = referencePca(step);

/** Do the points `pix` (CSS px) lie as `pcs` do, up to one scale, a shift and a sign per axis?
 *  Pairwise distances relative to the largest, which none of those change: the worst error. */
function layoutError(pix, pcs) {
  const dist = (P, a, b) => Math.hypot(P[a][0] - P[b][0], P[a][1] - P[b][1]);
  let maxPix = 0;
  let maxRef = 0;
  for (let a = 0; a < pix.length; a++) for (let b = 0; b < a; b++) {
    maxPix = Math.max(maxPix, dist(pix, a, b));
    maxRef = Math.max(maxRef, dist(pcs, a, b));
  }
  let worst = 0;
  for (let a = 0; a < pix.length; a++) for (let b = 0; b < a; b++) worst = Math.max(worst, Math.abs(dist(pix, a, b) / maxPix - dist(pcs, a, b) / maxRef));
  return worst;
}


test('page: every query and key is placed by the PCA of the CLI’s vectors; hover links to the partner and the top keys; click pins; keys change the head', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: 'qk', l: String(LAYER), h: String(HEAD) }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 1000 });
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
    const text = (await downloadBytes(svg)).toString('utf8');
    assert.match(text, /Query\/key space/);
    assert.ok(text.includes('>because<'), 'token labels in the SVG');
    const [png] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
    const pngBytes = (await downloadBytes(png));
    assert.equal(pngBytes.subarray(1, 4).toString(), 'PNG');
    const img = await decodePng(page, pngBytes);
    assert.ok(img.width > 100 && img.height > 100 && img.inked > 1000, `the PNG decodes to a drawing: ${JSON.stringify(img)}`);
    assert.match(png.suggestedFilename(), /-qk-/);
  } finally {
    await app.close();
  }
});

test('widget: view="qk" draws the query/key space of the given head: its title, every token labelled where the PCA of the CLI’s vectors puts it, other places for another head', async () => {
  const w = await openWidget(browser, server.url, { model: 'minilm', text: TEXT, view: 'qk', layer: String(LAYER + 1), head: String(HEAD + 1) });
  const { page } = w;
  const CANVAS = '#w >> canvas';
  // Each drawn label: keys first, then queries, at its point + (R + 2 = 6 px, 0) (views/qk.js).
  const drawn = async (head) => {
    await page.waitForFunction(([l, h]) => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label').startsWith(`Query/key space of layer ${l}, head ${h}:`), [LAYER + 1, head], { timeout: 60_000 });
    await waitQuiet(page, CANVAS, 500);
    const { texts } = await textFrame(page, CANVAS);
    const title = texts.find((t) => t.text.startsWith('Query/key space'));
    const at = texts.findIndex((t) => t.text === 'PC2 ↑');
    const labels = texts.slice(at + 1, at + 1 + step.key_len + T);
    return { title: title && title.text, keys: labels.slice(0, step.key_len), queries: labels.slice(step.key_len) };
  };
  try {
    // The log is in place before the widget draws its view (its model is still loading).
    await installTextLog(page);
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: 120_000 });
    const a = await drawn(HEAD + 1);
    assert.match(a.title || '', new RegExp(`^Query/key space · layer ${LAYER + 1} · head ${HEAD + 1} · `), `the drawn title: ${a.title}`);
    assert.deepEqual(a.keys.map((t) => t.text), step.key_tokens, 'a label per key, its token');
    assert.deepEqual(a.queries.map((t) => t.text), step.query_tokens, 'a label per query, its token');
    const places = (d) => d.queries.concat(d.keys).map((t) => [t.x, t.y]);
    const errA = layoutError(places(a), ref);
    assert.ok(errA < 0.01, `the labels lie as the PCA of head ${HEAD + 1}'s vectors: worst relative distance error ${errA.toFixed(4)}`);
    // Another head: its own vectors, so the tokens move to where that head's PCA puts them.
    await page.evaluate((h) => document.getElementById('w').setAttribute('head', h), String(HEAD + 2));
    const b = await drawn(HEAD + 2);
    assert.match(b.title || '', new RegExp(`^Query/key space · layer ${LAYER + 1} · head ${HEAD + 2} · `), `the drawn title: ${b.title}`);
    assert.deepEqual(b.queries.map((t) => t.text), step.query_tokens);
    const refB = referencePca(cliStep(HEAD + 1));
    const errB = layoutError(places(b), refB);
    assert.ok(errB < 0.01, `the labels lie as the PCA of head ${HEAD + 2}'s vectors: worst error ${errB.toFixed(4)}`);
    const same = layoutError(places(b), ref);
    assert.ok(same > 0.05, `head ${HEAD + 2} is not drawn as head ${HEAD + 1} was (${same.toFixed(3)})`);
  } finally {
    await w.close();
  }
});
