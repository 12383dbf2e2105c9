// Issue 43 item 2, the logit lens: what each layer would predict if the network stopped there
// (its final norm and unembedding on the layer's output). The page's table is the CLI's
// `attnviz attend --lens` (top tokens and probabilities of every layer at every position), its
// last layer the model's own prediction; hover reads a cell's five candidates, a click pins them
// under the table and in the permalink, the keyboard walks the cells, and the table follows the
// text as it is typed. Translators have one over their decode steps; MiniLM has none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { cliJson, waitDrawn } from './cli-helpers.mjs';

const VIEW = 'canvas#view';
const TOL = 2e-4;

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const hashOf = (o) => `#${new URLSearchParams(o).toString()}`;
const cliLens = (model, text) => cliJson('attend', '--model', `models/${model}`, '--text', text, '--lens');
const lensDrawn = () => window.attnvizDebug.view === 'lens' && window.attnvizDebug.lensGrid() && window.attnvizDebug.lensGrid().lens;

/** The page's lens is the CLI's: the same top tokens (where the CLI's are apart by more than the
 *  tolerance) with the same probabilities. */
function assertSameLens(page, cli, what) {
  assert.equal(page.kind, cli.kind, what);
  assert.equal(page.top.length, cli.top.length, `${what}: layers`);
  cli.top.forEach((layer, l) => {
    assert.equal(page.top[l].length, layer.length, `${what}: positions of layer ${l + 1}`);
    layer.forEach((want, p) => {
      const got = page.top[l][p];
      want.forEach((t, i) => {
        const tied = want.some((u, k) => k !== i && Math.abs(u.p - t.p) < TOL);
        if (!tied) assert.equal(got[i].id, t.id, `${what}: layer ${l + 1}, position ${p}, candidate ${i + 1}`);
        assert.ok(Math.abs(got[i].p - t.p) < TOL, `${what}: layer ${l + 1}, position ${p}, candidate ${i + 1}: ${got[i].p} vs the CLI's ${t.p}`);
      });
    });
  });
}

test('page, SmolLM2: the lens is the CLI’s, its last layer the model’s next-token prediction; hover, click and keys read cells; it follows typing', async () => {
  const text = 'The capital of France is';
  const cli = cliLens('smollm2', text);
  const lens = cli.logit_lens;
  assert.equal(lens.kind, 'decoder_self');
  assert.equal(lens.top.length, 30);
  // The last layer at the last position is the model's own next-token distribution.
  assert.deepEqual(lens.top[29].at(-1).map((t) => t.id), cli.generation.next.map((t) => t.id));
  const app = await openApp(browser, server.url + hashOf({ m: 'smollm2-135m', t: text, v: 'lens' }));
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    await waitDrawn(page, lensDrawn);
    let g = await page.evaluate(() => window.attnvizDebug.lensGrid());
    assertSameLens(g.lens, lens, 'SmolLM2');
    assert.equal(g.positions, lens.top[0].length);
    const answer = lens.top[29].at(-1)[0].token.replace('Ġ', '␣');
    assert.match(await page.getAttribute(VIEW, 'aria-label'), new RegExp(`^Logit lens: 30 layers × ${g.positions} positions.*answer “${answer}”`));

    // Hover the cell of layer 20 at "France": its five candidates, as the CLI has them.
    const [L, P] = [19, 3];
    const r = await page.locator(VIEW).boundingBox();
    const at = (l, p) => [r.x + g.left + (p + 0.5) * g.col, r.y + g.top + (l + 0.5) * g.rowH];
    await page.mouse.move(...at(L, P));
    await page.waitForFunction(() => document.getElementById('side-hint').textContent.startsWith('Layer 20 after “'));
    const hint = await page.textContent('#side-hint');
    for (const t of lens.top[L][P]) assert.ok(hint.includes(`${t.p.toFixed(3)}`), `${hint} lacks ${t.token} ${t.p.toFixed(3)}`);
    // Click pins it: the permalink keeps it and its candidates stay under the table.
    await page.mouse.click(...at(L, P));
    await page.mouse.move(r.x + 4, r.y + 4);
    await page.waitForFunction(() => location.hash.includes('lc=19.3'));
    await waitDrawn(page, () => window.attnvizDebug.lensGrid().detail && window.attnvizDebug.lensGrid().detail.layer === 19);
    g = await page.evaluate(() => window.attnvizDebug.lensGrid());
    assert.deepEqual(g.detail.top.map((t) => t.token), lens.top[L][P].map((t) => t.token));
    // The keyboard: ] from nothing reads the first cell, then the next.
    await page.keyboard.press('Escape');
    await page.focus(VIEW);
    await page.keyboard.press(']');
    await page.keyboard.press(']');
    const second = `${lens.top[0][1][0].p.toFixed(3)}`;
    await page.waitForFunction((p) => {
      const t = document.getElementById('side-hint').textContent;
      return t.startsWith('Layer 1 after “') && t.includes(p);
    }, second);

    // Typing: the table follows the text in the box.
    const typed = `${text} Paris`;
    await page.focus('#text');
    await page.keyboard.press('End');
    await page.keyboard.type(' Paris', { delay: 80 });
    await waitDrawn(page, (t) => window.attnvizDebug.text === t && window.attnvizDebug.lensGrid() && window.attnvizDebug.lensGrid().lens, typed);
    g = await page.evaluate(() => window.attnvizDebug.lensGrid());
    assertSameLens(g.lens, cliLens('smollm2', typed).logit_lens, 'SmolLM2 after typing');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, the paper’s Transformer: a lens over the decode steps whose last layer chose each target token; MiniLM has no lens tab', async () => {
  const text = 'The black cat sees a red ball';
  const cli = cliLens('paper', text);
  const lens = cli.logit_lens;
  assert.equal(lens.kind, 'cross');
  assert.deepEqual(lens.top.at(-1).map((cands) => cands[0].token), cli.tokens.target, 'the last layer chose every target token');
  assert.deepEqual(lens.top.at(-1).map((cands) => cands.map((t) => t.id)), cli.decode_top.map((cands) => cands.map((t) => t.id)), 'the last layer is the decode step’s own candidates');
  const app = await openApp(browser, server.url + hashOf({ m: 'paper-transformer', t: text, v: 'lens' }));
  const { page } = app;
  try {
    await waitDrawn(page, lensDrawn);
    assertSameLens((await page.evaluate(() => window.attnvizDebug.lensGrid())).lens, lens, 'paper');
    // MiniLM predicts no tokens: no lens tab, and the page goes back to the head view.
    await page.selectOption('#model', 'minilm-l6');
    await waitDrawn(page, () => window.attnvizDebug.modelId === 'minilm-l6');
    assert.equal(await page.isHidden('[role=tab][data-view=lens]'), true);
    assert.equal(await page.evaluate(() => window.attnvizDebug.view), 'head');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: view="lens" draws the translator’s lens', async () => {
  const w = await openWidget(browser, server.url, { model: 'en-pt', text: 'The cat sat on the mat.', view: 'lens' });
  try {
    await w.page.waitForFunction(() => (document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label') || '').startsWith('Logit lens: 2 layers × '), null, { timeout: 120_000 });
  } finally {
    await w.close();
  }
});
