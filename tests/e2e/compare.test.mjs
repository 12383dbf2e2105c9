// Issue 12, comparing two sentences: "Compare with…" (page box, permalink c=, widget compare=)
// draws sentence B beside the text A in the heatmap and the head view, from one state (layer,
// head, measure, hovered token), with the difference map B − A where the maps align position by
// position and a message saying why where they don't. Every interaction is performed and what
// the user then sees is checked; typed text is drawn as text; PNG and SVG exports hold it all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport, downloadBytes } from './harness.mjs';
import { canvasDigest, cliAt, cliBlock, cliJson, waitDrawn } from './cli-helpers.mjs';
import { watchMainThread } from './main-thread.mjs';
import { decodePng } from './views-helpers.mjs';

const A = 'The cat sat on the mat.';
const B = 'The dog sat on the mat.'; // as many tokens as A; position 3 differs
const C = 'A cat sat on a very big mat.'; // 11 tokens against A's 9
const VIEW = 'canvas#view';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

async function openCompare(params) {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: A, c: B, l: '1', h: '2', hs: '2', ...params }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  await setViewport(app.page, { width: 1400, height: 1400 });
  await waitDrawn(app.page, (v) => window.attnvizDebug.view === v && window.attnvizDebug.compareTokens && window.attnvizDebug.comparePanels(), params.v || 'head');
  return app;
}

const panels = async (page) => Object.fromEntries((await page.evaluate(() => window.attnvizDebug.comparePanels())).map((p) => [p.panel, p]));

/** Move the pointer to (x, y) CSS px of the canvas, scrolling its box so that the point shows. */
async function pointAt(page, x, y, click = false) {
  await page.evaluate((yy) => {
    const w = document.getElementById('canvas-wrap');
    if (yy < w.scrollTop + 20 || yy > w.scrollTop + w.clientHeight - 20) w.scrollTop = Math.max(0, yy - 100);
    // and the window, as a reader scrolls to the part of the map box they look at
    const at = document.getElementById('view').getBoundingClientRect().top + yy;
    if (at < 20 || at > innerHeight - 20) window.scrollBy(0, at - innerHeight / 2);
  }, y);
  const r = await page.locator(VIEW).boundingBox();
  await page.mouse.move(r.x + x, r.y + y);
  if (click) await page.mouse.click(r.x + x, r.y + y);
}

const cellAt = (p, i, j) => [p.x + p.g.left + (j + 0.5) * p.g.cell, p.y + p.g.top + (i + 0.5) * p.g.cell];
const tokenAt = (p, side, i) => [p.x + (side === 'q' ? p.g.leftX - 10 : p.g.rightX + 10), p.y + p.g.headerH + 4 + i * p.g.rowH + p.g.rowH / 2];

/** A digest of the pixels of one panel (to see that it was redrawn). */
const panelDigest = (page, p) =>
  page.evaluate(([x, y, w, h]) => {
    const c = document.querySelector('canvas#view');
    const k = c.width / c.clientWidth;
    const d = c.getContext('2d').getImageData(Math.round(x * k), Math.round(y * k), Math.round(w * k), Math.round(h * k)).data;
    let s = 2166136261;
    for (let i = 0; i < d.length; i += 3) s = Math.imul(s ^ d[i], 16777619);
    return s >>> 0;
  }, [p.x, p.y, p.w, p.h]);

const hint = (page) => page.textContent('#side-hint');

/** The side panel's top weights as shown: [token, weight text] per line. */
const topList = (page) => page.$$eval('#top-list li', (lis) => lis.map((li) => [li.querySelector('.tok').textContent, li.querySelector('.w').textContent]));

/** What the side panel must list for query i of `text` in openCompare's state (layer 2, head 3,
 *  raw weights): the CLI's 8 largest weights of that row, strongest first. */
function cliTopWeights(text, i) {
  const r = cliJson('attend', '--model', 'models/minilm', '--text', text);
  const block = cliBlock(r.attentions, 'encoder_self', 1);
  return r.tokens.source.map((t, j) => [t, cliAt(block, 2, i, j)]).sort((a, b) => b[1] - a[1]).slice(0, 8);
}

/** The shown list is `want`: the same tokens in the same order, each weight to its 3 decimals. */
function assertTopWeights(shown, want, what) {
  const text = (l) => l.map(([t, w]) => `${t} ${typeof w === 'number' ? w.toFixed(4) : w}`).join(', ');
  assert.deepEqual(shown.map(([t]) => t), want.map(([t]) => t), `${what}: ${text(shown)} vs the CLI's ${text(want)}`);
  shown.forEach(([t, w], k) => assert.ok(Math.abs(Number(w) - want[k][1]) <= 5e-4 + 1e-6, `${what}, ${t}: ${w} vs the CLI's ${want[k][1]}`));
}
const number = (text) => Number(/: ([+−-]?[\d.]+)/.exec(text)[1].replace('−', '-'));

test('page, heatmap: A and B side by side with the difference map; hovering a cell on either side or the difference focuses it everywhere and reads B − A', async () => {
  const app = await openCompare({ v: 'heatmap' });
  const { page } = app;
  try {
    const ps = await panels(page);
    assert.deepEqual(Object.keys(ps).sort(), ['a', 'b', 'd']);
    assert.ok(ps.b.x >= ps.a.x + ps.a.w, 'B stands right of A');
    assert.ok(ps.d.y >= ps.a.y + ps.a.h, 'the difference map stands under them');
    const aria = await page.getAttribute(VIEW, 'aria-label');
    assert.match(aria, /^Comparison of two sentences\. A: Heatmap, Layer 2 · head 3 .*B: Heatmap, Layer 2 · head 3 .*Difference B − A · Layer 2 · head 3 · encoder self-attention \(diverging/);
    assert.match(aria, /Aligned position by position: A and B have as many tokens \(9\), 1 position holds different tokens/);
    assert.match(await page.textContent('#notes'), /Comparing A with B\. Aligned position by position/);
    assert.deepEqual(await page.evaluate(() => window.attnvizDebug.compareTokens), ['[CLS]', 'the', 'dog', 'sat', 'on', 'the', 'mat', '.', '[SEP]']);
    // Hover cell (2, 3) of A: its read-out, and B and the difference map are redrawn with it focused.
    const bBefore = await panelDigest(page, ps.b);
    const dBefore = await panelDigest(page, ps.d);
    await pointAt(page, ...cellAt(ps.a, 2, 3));
    await page.waitForFunction(() => /^query “cat” \(3\) → key “sat” \(4\)/.test(document.getElementById('side-hint').textContent));
    const a = number(await hint(page));
    await waitDrawn(page, () => window.attnvizDebug.focus && window.attnvizDebug.focus.panel === 'a');
    assert.notEqual(await panelDigest(page, ps.b), bBefore, 'B shows the hovered cell too');
    assert.notEqual(await panelDigest(page, ps.d), dBefore, 'the difference map shows the hovered cell too');
    // The same cell of B reads B's weight, the difference cell B − A.
    await pointAt(page, ...cellAt(ps.b, 2, 3));
    await page.waitForFunction(() => /^query “dog” \(3\) → key “sat” \(4\)/.test(document.getElementById('side-hint').textContent));
    const b = number(await hint(page));
    await pointAt(page, ...cellAt(ps.d, 2, 3));
    await page.waitForFunction(() => document.getElementById('side-hint').textContent.startsWith('B − A, query “cat/dog” (3) → key “sat” (4)'));
    const text = await hint(page);
    const m = /: ([+−-][\d.]+) \(A ([\d.]+), B ([\d.]+)\)/.exec(text);
    assert.ok(m, text);
    assert.ok(Math.abs(Number(m[1].replace('−', '-')) - (b - a)) < 2e-3, `${text} vs ${b} − ${a}`);
    assert.ok(Math.abs(Number(m[2]) - a) < 1e-3 && Math.abs(Number(m[3]) - b) < 1e-3, text);
    // Leaving the canvas clears the focus.
    await page.mouse.move(1, 1);
    await page.waitForFunction(() => !window.attnvizDebug.focus);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, head view: hover and click on B focus and pin the token on both sides; keys change layer, head and pin for both; the measure applies to both', async () => {
  const app = await openCompare({ v: 'head' });
  const { page } = app;
  try {
    let ps = await panels(page);
    const aBefore = await panelDigest(page, ps.a);
    // Hover query "dog" on B: its top weights (B's own) are listed, and A draws the same query's lines.
    await pointAt(page, ...tokenAt(ps.b, 'q', 2));
    await page.waitForFunction(() => document.getElementById('side-title').textContent === 'B: Top weights from this query');
    await waitDrawn(page, () => window.attnvizDebug.focus && window.attnvizDebug.focus.index === 2);
    assert.notEqual(await panelDigest(page, ps.a), aBefore, 'A shows the hovered query too');
    const wantB = cliTopWeights(B, 2);
    const wantA = cliTopWeights(A, 2);
    assert.notDeepEqual(wantB.map(([t]) => t), wantA.map(([t]) => t), 'A and B list other tokens for query 3');
    assertTopWeights(await topList(page), wantB, 'B, query “dog”');
    // Hover the same query on A: A's weights.
    await pointAt(page, ...tokenAt(ps.a, 'q', 2));
    await page.waitForFunction(() => document.getElementById('side-title').textContent === 'A: Top weights from this query');
    assertTopWeights(await topList(page), wantA, 'A, query “cat”');
    // Click it on B: pinned (the permalink holds it), and it stays after the pointer leaves.
    await pointAt(page, ...tokenAt(ps.b, 'q', 2), true);
    await page.waitForFunction(() => location.hash.includes('p=q2'));
    await page.mouse.move(1, 1);
    await page.waitForFunction(() => /\(pinned\)/.test(document.getElementById('side-title').textContent));
    // A difference cell focuses its query row on both sides and reads B − A.
    await pointAt(page, ...cellAt(ps.d, 3, 2));
    await page.waitForFunction(() => document.getElementById('side-hint').textContent.startsWith('B − A, query “sat” (4) → key “cat/dog” (3)'));
    assert.equal(await page.evaluate(() => window.attnvizDebug.focus.index), 3);
    await page.mouse.move(1, 1);
    // Keys: ↓ next layer, → next head, ] next pinned query, Esc unpins: both sides follow.
    await page.focus(VIEW);
    await page.keyboard.press('ArrowDown');
    await waitDrawn(page, () => window.attnvizDebug.state.layer === 2);
    await page.keyboard.press('ArrowRight');
    await waitDrawn(page, () => window.attnvizDebug.state.head === 3);
    let aria = await page.getAttribute(VIEW, 'aria-label');
    assert.match(aria, /A: Head view, encoder self-attention, layer 3, heads 4: .*B: Head view, encoder self-attention, layer 3, heads 4: /);
    assert.match(aria, /Difference B − A · Layer/);
    await page.keyboard.press(']');
    await waitDrawn(page, () => window.attnvizDebug.state.pin && window.attnvizDebug.state.pin.index === 3);
    await page.keyboard.press('Escape');
    await waitDrawn(page, () => !window.attnvizDebug.state.pin);
    // The measure switch: both sides and the difference are value-weighted.
    const before = await canvasDigest(page, VIEW);
    await page.selectOption('#measure', 'value-norm');
    await waitDrawn(page, () => window.attnvizDebug.state.measure === 'value-norm' && !window.attnvizDebug.computing);
    aria = await page.getAttribute(VIEW, 'aria-label');
    assert.equal((aria.match(/value-weighted ‖αf‖/g) || []).length, 3, `A, B and the difference name the measure: ${aria}`);
    assert.notEqual(await canvasDigest(page, VIEW), before);
    ps = await panels(page);
    assert.ok(ps.d, 'the difference map is drawn under the measure too');
    // Exports of the head view's comparison: the lines of both sides and the difference map.
    const [svg] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
    assert.match(svg.suggestedFilename(), /-head-compare-/);
    const text = (await downloadBytes(svg)).toString('utf8');
    assert.ok(text.includes(`>A: ${A}<`) && text.includes(`>B: ${B}<`) && text.includes('>dog<'), 'both sentences and their tokens');
    assert.match(text, /Difference B − A · Layer 3 · head 4 · encoder self-attention · value-weighted ‖αf‖/);
    assert.ok((text.match(/<path/g) || []).length >= 20, 'the lines of both sides');
    const [png] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
    const img = await decodePng(page, (await downloadBytes(png)));
    assert.ok(img.width > 500 && img.height > 400 && img.inked > 10000, `the PNG decodes to the drawing: ${JSON.stringify(img)}`);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: typing B of another length says why there is no difference map; typing B keeps the main thread within budget; the permalink keeps B; an empty B ends the comparison', async () => {
  const app = await openCompare({ v: 'heatmap' });
  const { page } = app;
  try {
    assert.equal(await page.inputValue('#compare'), B);
    const watch = await watchMainThread(page);
    await page.fill('#compare', '');
    await page.type('#compare', C, { delay: 20 });
    await waitDrawn(page, () => /9 vs 11 tokens: no difference map/.test(document.querySelector('canvas#view').getAttribute('aria-label')));
    await watch.take('typing B');
    await watch.check();
    assert.deepEqual(Object.keys(await panels(page)).sort(), ['a', 'b'], 'no difference map');
    assert.match(await page.textContent('#notes'), /9 vs 11 tokens: no difference map \(A and B are compared position by position/);
    // A stays what it was; the permalink holds B, and opening it draws the same comparison.
    assert.equal((await page.evaluate(() => window.attnvizDebug.tokens)).length, 9);
    await page.waitForFunction((c) => new URLSearchParams(location.hash.slice(1)).get('c') === c, C);
    const app2 = await openApp(browser, page.url());
    try {
      await waitDrawn(app2.page, () => window.attnvizDebug.compareTokens && window.attnvizDebug.compareTokens.length === 11);
      assert.equal(await app2.page.inputValue('#compare'), C);
      assert.match(await app2.page.getAttribute(VIEW, 'aria-label'), /9 vs 11 tokens/);
    } finally {
      await app2.close();
    }
    // Other views draw A alone and say where the comparison is.
    await page.click('[role=tab][data-view=model]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'model');
    assert.doesNotMatch(await page.getAttribute(VIEW, 'aria-label'), /Comparison/);
    assert.match(await page.textContent('#notes'), /drawn in the head view and the heatmap/);
    await page.click('[role=tab][data-view=heatmap]');
    await page.fill('#compare', '');
    await waitDrawn(page, () => window.attnvizDebug.view === 'heatmap' && !window.attnvizDebug.compareTokens);
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /^Heatmap/);
    await page.waitForFunction(() => !new URLSearchParams(location.hash.slice(1)).has('c'));
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: B is text, never markup, on the canvas and in the SVG; PNG and SVG exports hold both sides and the difference map', async () => {
  const evil = '<img src=x onerror="window.__xss=1">cat & dog';
  const app = await openCompare({ v: 'heatmap', c: evil });
  const { page } = app;
  try {
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.equal(await page.$$eval('img', (imgs) => imgs.length), 0);
    await page.fill('#compare', B);
    await waitDrawn(page, () => window.attnvizDebug.compareTokens && window.attnvizDebug.compareTokens[2] === 'dog' && window.attnvizDebug.comparePanels().length === 3);
    const [png] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
    assert.match(png.suggestedFilename(), /-heatmap-compare-/);
    const bytes = (await downloadBytes(png));
    const img = await decodePng(page, bytes);
    const canvas = await page.evaluate(() => ({ w: document.querySelector('canvas#view').width, h: document.querySelector('canvas#view').height }));
    assert.deepEqual([img.width, img.height], [canvas.w, canvas.h]);
    assert.ok(img.inked > img.width * img.height * 0.1, `the PNG is drawn on (${img.inked} pixels)`);
    const [svg] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
    const text = (await downloadBytes(svg)).toString('utf8');
    assert.ok(text.includes(`>A: ${A}<`) && text.includes(`>B: ${B}<`), 'both sentences');
    assert.match(text, /Difference B − A · Layer 2 · head 3/);
    assert.ok(text.includes('>cat/dog<'), 'the differing position is labelled A/B');
    assert.ok((text.match(/<rect/g) || []).length >= 3 * 81, 'the cells of A, B and the difference');
    // The difference map's palette is diverging: red and blue cells.
    const fills = [...text.matchAll(/fill="rgb\((\d+),(\d+),(\d+)\)"/g)].map((m) => m.slice(1).map(Number));
    assert.ok(fills.some(([r, , b]) => r > b + 60) && fills.some(([r, , b]) => b > r + 60), 'red and blue cells');
    // Typed markup stays text in the SVG too.
    await page.fill('#compare', evil);
    await waitDrawn(page, () => window.attnvizDebug.compareTokens && window.attnvizDebug.compareTokens.includes('<'));
    const [svg2] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
    const t2 = (await downloadBytes(svg2)).toString('utf8');
    assert.ok(t2.includes('B: &lt;img src=x onerror="window.__xss=1"&gt;cat &amp; dog'), 'escaped text');
    assert.ok(!/<img/.test(t2));
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: compare="…" draws both sentences and the difference map; its "Compare with…" box and the attribute change B', async () => {
  const w = await openWidget(browser, server.url, { model: 'minilm', text: A, compare: B, view: 'heatmap', layer: '2', head: '3', editable: '' });
  const { page } = w;
  const label = () => page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
  try {
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: 120_000 });
    await page.waitForFunction(() => /Difference B − A · Layer/.test(document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label')), null, { timeout: 60_000 });
    assert.equal(await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('textarea[aria-label="Compare with…"]').value), B);
    assert.equal(await page.evaluate(() => document.getElementById('w').viewState.compare), B);
    // Typing in the widget's box: another length, no difference map, and why.
    const box = page.locator('#w >> textarea[aria-label="Compare with…"]');
    await box.fill(C);
    await page.waitForFunction(() => /9 vs 11 tokens: no difference map/.test(document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label')), null, { timeout: 60_000 });
    // Hovering B's cell reads out B's weight (the widget's read-out line).
    const geom = await page.evaluate(() => document.getElementById('w').shell.geom().panels.map(({ panel, x, y, g }) => ({ panel, x, y, g: { left: g.left, top: g.top, cell: g.cell } })));
    const pb = geom.find((p) => p.panel === 'b');
    const r = await page.evaluate(() => {
      const c = document.getElementById('w').shadowRoot.querySelector('canvas').getBoundingClientRect();
      return { x: c.left, y: c.top };
    });
    await page.mouse.move(r.x + pb.x + pb.g.left + 6.5 * pb.g.cell, r.y + pb.y + pb.g.top + 2.5 * pb.g.cell);
    await page.waitForFunction(() => /query “cat” \(3\) → key “very” \(7\)/.test(document.getElementById('w').shadowRoot.querySelector('.readout').textContent));
    // The attribute: an empty compare ends the comparison.
    await page.evaluate(() => document.getElementById('w').setAttribute('compare', ''));
    await page.waitForFunction(() => /^Heatmap/.test(document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label')));
    assert.doesNotMatch(await label(), /Comparison/);
  } finally {
    await w.close();
  }
});

test('page, translator en-pt: cross-attention of two sentences aligns target × source position by position, and says so in those terms', async () => {
  const hash = new URLSearchParams({ m: 'en-pt-tiny', t: A, c: B, v: 'heatmap', k: 'cross', l: '1', a: 'mean' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.compareTokens && !window.attnvizDebug.computing);
    const aria = await page.getAttribute(VIEW, 'aria-label');
    // "O gato sentou-se no tapete." / "O cão sentou-se no tapete.": 10 target tokens each.
    assert.match(aria, /Difference B − A · Layer 2 · mean over heads · cross-attention \(target ← source\)/);
    assert.match(aria, /as many tokens \(10 queries × 8 keys\), 2 positions hold different tokens/);
    const ps = await panels(page);
    await pointAt(page, ...cellAt(ps.d, 1, 1));
    await page.waitForFunction(() => /^B − A, query “▁gato\/▁cão” \(2\) → key “▁cat\/▁dog” \(2\)/.test(document.getElementById('side-hint').textContent));
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, 512 tokens on both sides: comparing in the heatmap and the head view, and typing into B, keep the main thread within budget', async () => {
  const words = (k) => Array.from({ length: 600 }, (_, i) => ['alpha', 'beta', 'gamma', 'delta', 'the', 'cat'][(i + k) % 6]).join(' ');
  const hash = new URLSearchParams({ m: 'minilm-l6', t: words(0), v: 'heatmap' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.tokens.length === 512);
    const watch = await watchMainThread(page);
    await page.fill('#compare', words(1));
    await waitDrawn(page, () => window.attnvizDebug.compareTokens && window.attnvizDebug.compareTokens.length === 512 && !window.attnvizDebug.computing);
    await watch.take('heatmap');
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /Aligned position by position: A and B have as many tokens \(512\)/);
    await page.type('#compare', ' x', { delay: 30 });
    await waitDrawn(page, () => !window.attnvizDebug.computing);
    await watch.take('typing B');
    await page.click('[role=tab][data-view=head]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'head' && !window.attnvizDebug.computing);
    await watch.take('head view');
    await watch.check();
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
