// The fourth default model, the paper's Transformer (python/attnviz/paper_model.py trains it in
// make models): picked from the page's model menu and typed into, it translates as the CLI does;
// its three attention kinds are each offered and drawn (the decoder's masked: nothing above the
// diagonal); the cross view's decode-step scrubber, moved with the keyboard to "vermelha", shows
// the weight on "red" the lesson prints and the model's five candidates at that step. On the lesson page its two widgets draw the numbers the
// lesson's text gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadEveryWidget, openApp, useServerAndBrowser } from './harness.mjs';
import { cliAt, cliBlock, cliJson, waitDrawn } from './cli-helpers.mjs';
import { textFrame, textLogFromStart } from './views-helpers.mjs';

const MODEL = 'paper-transformer';
const TEXT = 'The black cat sees a red ball on the table.';
const cli = cliJson('attend', '--model', 'models/paper', '--text', TEXT);

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** The CLI's mean over heads of row `query` (a target token) of a block, by key token. */
function meanRow(kind, layer, query) {
  const b = cliBlock(cli.attentions, kind, layer);
  const keys = kind === 'cross' ? cli.tokens.source : cli.tokens.target;
  const i = cli.tokens.target.indexOf(query);
  return Object.fromEntries(keys.map((k, j) => {
    let s = 0;
    for (let h = 0; h < b.heads; h++) s += cliAt(b, h, i, j);
    return [k, s / b.heads];
  }));
}

test('the paper’s Transformer from the model menu: typed text translated as the CLI does, its three attention kinds drawn, the masked one masked, the cross view at "vermelha" reading "red"', async () => {
  const app = await openApp(browser, server.url, { fresh: true, onContext: textLogFromStart, contextOptions: { viewport: { width: 1280, height: 900 } } });
  const { page } = app;
  try {
    await page.selectOption('#model', MODEL);
    await waitDrawn(page, (m) => window.attnvizDebug.modelId === m, MODEL);
    await page.fill('#text', '');
    await page.type('#text', TEXT, { delay: 80 });
    await waitDrawn(page, (t) => window.attnvizDebug.state && window.attnvizDebug.state.text === t && window.attnvizDebug.outputText, TEXT);
    const d = await page.evaluate(() => ({ ...window.attnvizDebug, hash: location.hash }));
    assert.equal(d.modelId, MODEL);
    assert.equal(d.outputText, cli.output_text);
    assert.equal(cli.output_text, 'o gato preto vê uma bola vermelha na mesa.');
    assert.match(await page.locator('#output').innerText(), /o gato preto vê uma bola vermelha na mesa\./);
    assert.equal(new URLSearchParams(d.hash.slice(1)).get('m'), MODEL);
    assert.equal(new URLSearchParams(d.hash.slice(1)).get('t'), TEXT);

    // The three kinds are offered; the decoder's self-attention is drawn from the CLI's numbers, masked.
    const kinds = await page.$$eval('#kinds [role=tab]', (ts) => ts.filter((t) => !t.hidden).map((t) => t.textContent.trim()));
    assert.deepEqual(kinds, ['Encoder self-attention', 'Decoder self-attention', 'Cross-attention']);
    await page.getByRole('tab', { name: 'Decoder self-attention' }).click();
    await waitDrawn(page, () => window.attnvizDebug.state.kind === 'decoder_self');
    assert.match(await page.locator('canvas#view').getAttribute('aria-label'), /decoder self-attention/i);
    const drawn = await page.evaluate(() => window.attnvizDebug.attentions());
    for (const [i, b] of cli.attentions.entries()) {
      assert.equal(drawn[i].kind, b.kind);
      const worst = b.data.reduce((m, v, k) => Math.max(m, Math.abs(v - drawn[i].data[k])), 0);
      assert.ok(worst <= 1e-5, `${b.kind} layer ${b.layer}: the page's map differs from the CLI's by ${worst}`);
      if (b.kind !== 'decoder_self') continue;
      for (let h = 0; h < b.heads; h++) for (let q = 0; q < b.query_len; q++) for (let k = q + 1; k < b.key_len; k++) {
        assert.equal(drawn[i].data[(h * b.query_len + q) * b.key_len + k], 0, `decoder step ${q} sees the later step ${k}`);
      }
    }

    // Cross view, layer 2, mean of the heads; the scrubber moved to step 7 with the arrow keys.
    await page.locator('#views [data-view=cross]').click();
    await waitDrawn(page, () => window.attnvizDebug.view === 'cross');
    await page.selectOption('#layer', '1');
    await page.selectOption('#agg', 'mean');
    await waitDrawn(page, () => window.attnvizDebug.state.layer === 1 && window.attnvizDebug.state.agg === 'mean');
    await page.locator('#step').focus();
    for (let k = 0; k < 6; k++) await page.keyboard.press('ArrowRight');
    await waitDrawn(page, () => window.attnvizDebug.state.step === 6);
    await page.waitForFunction(() => /decode step 7 of/.test(document.querySelector('canvas#view').getAttribute('aria-label') || ''));
    assert.match(await page.locator('#step-out').innerText(), /7 \/ 11: ▁vermelha/);
    const f = await textFrame(page, 'canvas#view');
    const weights = f.texts.filter((t) => Math.abs(t.px - 10) < 0.01).map((t) => Number(t.text));
    const want = meanRow('cross', 1, '▁vermelha');
    assert.deepEqual(weights.map((w, j) => Math.abs(w - want[cli.tokens.source[j]]) <= 0.0051), weights.map(() => true), `weights under the source chips ${weights}`);
    assert.equal(cli.tokens.source[weights.indexOf(Math.max(...weights))], '▁red');
    // The side panel names the model's candidates at that step, as the CLI lists them.
    const p3 = (p) => (p >= 1e-3 ? p.toFixed(3) : p.toExponential(1).replace('-', '−'));
    const candidates = cli.decode_top[6].map((c) => `${c.token} ${p3(c.p)}`).join(', ');
    assert.equal(cli.decode_top[6][0].token, '▁vermelha');
    assert.ok((await page.locator('#side-hint').innerText()).endsWith(`The model's candidates at this step: ${candidates}`), await page.locator('#side-hint').innerText());
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('the lesson’s section on the paper’s Transformer: its two widgets draw decoder self-attention and cross-attention of layer 2, and the weights its text prints are the model’s', async () => {
  const app = await openApp(browser, `${server.url}examples.html`, { contextOptions: { viewport: { width: 1280, height: 900 } } });
  const { page } = app;
  try {
    await loadEveryWidget(page);
    const states = await page.evaluate(() => ['ex-paper-self', 'ex-paper-cross'].map((id) => {
      const w = document.getElementById(id);
      return { id, state: w.dataset.state, kind: w.viewState.kind, view: w.viewState.view, layer: w.viewState.layer, text: w.viewState.text };
    }));
    assert.deepEqual(states.map((s) => [s.state, s.view, s.kind, s.layer]), [['ready', 'head', 'decoder_self', 1], ['ready', 'cross', 'cross', 1]]);
    assert.ok(states.every((s) => s.text === TEXT), JSON.stringify(states));
    assert.match(await page.locator('#ex-paper-cross >> .out').innerText(), /vermelha/);
    const claims = await page.$$eval('.lesson .w[data-kind]', (els) => els.map((e) => ({ ...e.dataset, value: Number(e.textContent) })));
    assert.equal(claims.length, 2);
    for (const c of claims) {
      const w = meanRow(c.kind, 1, c.query)[c.key];
      assert.ok(Math.abs(w - c.value) <= 0.0051, `the lesson says ${c.value} from ${c.query} to ${c.key} (${c.kind}); the model gives ${w.toFixed(3)}`);
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
