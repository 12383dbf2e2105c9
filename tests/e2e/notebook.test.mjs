// The notebook package's front end in a browser (issue 25): the native CLI's MiniLM maps, handed
// to python/attnviz as a notebook would hand PyTorch's output_attentions (one [1, heads, q, k]
// array per layer), saved with save_html and opened from disk with the network off: the file
// draws, and each heatmap cell reads out under the pointer as the number given.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launchBrowser } from './harness.mjs';
import { cliAt, cliJson } from './cli-helpers.mjs';
import { drawnAfter, hoverCell, widgetMenu, widgetState } from './widget-helpers.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
const TEXT = 'The animal didn\'t cross the street because it was too tired.';
let browser;
let dir;

before(async () => {
  browser = await launchBrowser();
  dir = mkdtempSync(path.join(os.tmpdir(), 'attnviz-notebook-'));
});

after(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Run python/attnviz on the CLI's result: `call` is the Python expression that makes the widget
 *  from `attention` (a tuple of [1, heads, q, k] arrays: the encoder self-attention) and `tokens`
 *  (and `attention_b`, `tokens_b` from `cliB`), or from `stack(r, kind)` (any kind's layers) and
 *  `r` (the CLI's answer); returns the saved file. */
function saveHtml(cli, call, name, cliB = cli) {
  const json = path.join(dir, `${name}.json`);
  writeFileSync(json, JSON.stringify(cli));
  writeFileSync(`${json}.b`, JSON.stringify(cliB));
  const out = path.join(dir, `${name}.html`);
  const script = `
import json, sys
import numpy as np
sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'python'))})
import attnviz
def stack(r, kind):
    blocks = sorted((b for b in r["attentions"] if b["kind"] == kind), key=lambda b: b["layer"])
    return tuple(np.asarray(b["data"], dtype=np.float32).reshape(1, b["heads"], b["query_len"], b["key_len"]) for b in blocks)
r, r_b = json.load(open(${JSON.stringify(json)})), json.load(open(${JSON.stringify(`${json}.b`)}))
attention, tokens = stack(r, "encoder_self"), r["tokens"]["source"]
attention_b, tokens_b = stack(r_b, "encoder_self"), r_b["tokens"]["source"]
w = ${call}
w.save_html(${JSON.stringify(out)})
`;
  execFileSync(PYTHON, ['-c', script], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  return out;
}

/** Open a saved file from disk, offline, with the widget it holds as #w for the helpers. */
async function openSaved(file) {
  const context = await browser.newContext({ offline: true });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(pathToFileURL(file).href);
  await page.waitForFunction(() => document.querySelector('attention-viz'), null, { timeout: 30_000 });
  await page.evaluate(() => { document.querySelector('attention-viz').id = 'w'; });
  return { page, errors, close: () => context.close() };
}

test('save_html of heatmap_view draws offline from disk, and each cell reads out the number given', async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', TEXT);
  const file = saveHtml(cli, 'attnviz.heatmap_view(attention, tokens, layer=3, heads=[1], label="MiniLM, from the CLI")', 'heatmap');
  const { page, errors, close } = await openSaved(file);
  try {
    await drawnAfter(page);
    const s = await widgetState(page);
    assert.match(s.foot, new RegExp(`^${cli.tokens.source.length} tokens`), s.foot);
    assert.match(s.foot, /MiniLM, from the CLI/);
    const block = cli.attentions.find((b) => b.kind === 'encoder_self' && b.layer === 3);
    for (const [i, j] of [[0, 0], [4, 7], [cli.tokens.source.length - 1, 2]]) {
      const got = await hoverCell(page, i, j);
      assert.ok(Math.abs(got.value - cliAt(block, 1, i, j)) < 6e-4, `${got.text}; given ${cliAt(block, 1, i, j)}`);
    }
    assert.deepEqual(errors, []);
  } finally {
    await close();
  }
});

test('save_html of head_view and model_view draw their views of every layer from the one buffer', async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', 'The cat sat on the mat.');
  for (const [call, view] of [['attnviz.head_view(attention, tokens, layer=5)', 'head'], ['attnviz.model_view(attention, tokens)', 'model']]) {
    const { page, errors, close } = await openSaved(saveHtml(cli, call, view));
    try {
      await drawnAfter(page);
      const state = await page.evaluate(() => document.getElementById('w').viewState);
      assert.equal(state.view, view);
      if (view === 'head') assert.equal(state.layer, 5);
      // Every layer arrived: the layer control offers all six.
      assert.equal((await widgetMenu(page, 'Layer')).options.length, 6);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  }
});

test('save_html of heatmap_view with compare_attention: two calls’ maps (MiniLM f32 and int8) side by side, and a difference cell reads B − A', async () => {
  const f32 = cliJson('attend', '--model', 'models/minilm', '--text', TEXT);
  const int8 = cliJson('attend', '--model', 'models/minilm', '--text', TEXT, '--weights', 'int8');
  const call = 'attnviz.heatmap_view(attention, tokens, layer=3, heads=[1], label="MiniLM f32", compare_attention=attention_b, compare_tokens=tokens_b, compare_label="MiniLM int8")';
  const { page, errors, close } = await openSaved(saveHtml(f32, call, 'compare', int8));
  try {
    await drawnAfter(page);
    const label = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
    assert.match(label, /^Comparison of MiniLM f32 \(A\) and MiniLM int8 \(B\)\. .*Difference B − A · Layer 4 · head 2/);
    assert.match(label, /Aligned token by token: A and B have the same tokens \(16\)/);
    const a = f32.attentions.find((b) => b.layer === 3);
    const b = int8.attentions.find((x) => x.layer === 3);
    // The cell where the two differ most (its difference prints as a plain decimal).
    let [i, j] = [0, 0];
    for (let q = 0; q < a.query_len; q++) {
      for (let k = 0; k < a.key_len; k++) if (Math.abs(cliAt(b, 1, q, k) - cliAt(a, 1, q, k)) > Math.abs(cliAt(b, 1, i, j) - cliAt(a, 1, i, j))) [i, j] = [q, k];
    }
    const at = await page.evaluate(([row, col]) => {
      const el = document.getElementById('w');
      const d = el.shell.geom().panels.find((p) => p.panel === 'd');
      const c = el.shadowRoot.querySelector('canvas').getBoundingClientRect();
      window.scrollTo(0, Math.max(0, c.top + window.scrollY + d.y + d.g.top + row * d.g.cell - 200));
      const c2 = el.shadowRoot.querySelector('canvas').getBoundingClientRect();
      return { x: c2.left + d.x + d.g.left + (col + 0.5) * d.g.cell, y: c2.top + d.y + d.g.top + (row + 0.5) * d.g.cell };
    }, [i, j]);
    await page.mouse.move(at.x, at.y);
    await page.waitForFunction(() => /^B − A, query/.test(document.getElementById('w').shadowRoot.querySelector('.readout').textContent));
    const text = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('.readout').textContent);
    const m = /: ([+−-][\d.]+) \(A ([\d.]+), B ([\d.]+)\)/.exec(text);
    assert.ok(m, text);
    assert.ok(Math.abs(Number(m[2]) - cliAt(a, 1, i, j)) < 6e-4 && Math.abs(Number(m[3]) - cliAt(b, 1, i, j)) < 6e-4, `${text}; given A ${cliAt(a, 1, i, j)}, B ${cliAt(b, 1, i, j)}`);
    assert.deepEqual(errors, []);
  } finally {
    await close();
  }
});

test('save_html of head_overview: the kernel’s head scores are the CLI’s (`attnviz heads`); hovering a cell reads them out, the ranking lists every head, and a click opens the head', async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', TEXT);
  const heads = cliJson('heads', '--model', 'models/minilm', '--text', TEXT).heads;
  const { page, errors, close } = await openSaved(saveHtml(cli, 'attnviz.head_overview(attention, tokens, label="MiniLM, from the CLI")', 'overview'));
  try {
    await drawnAfter(page);
    const shadow = (sel) => page.evaluate((s) => document.getElementById('w').shadowRoot.querySelector(s)?.textContent ?? null, sel);
    const label = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
    assert.match(label, /^Head overview, encoder self-attention: 6 layers × 12 heads/);
    await page.waitForFunction(() => document.getElementById('w').shadowRoot.querySelectorAll('.heads-rank tbody tr').length === 72);
    const geom = await page.evaluate(() => document.getElementById('w').shell.geom());
    const box = await page.evaluate(() => {
      const r = document.getElementById('w').shadowRoot.querySelector('canvas').getBoundingClientRect();
      return { x: r.left, y: r.top };
    });
    for (const [layer, head] of [[0, 0], [2, 7], [5, 11]]) {
      await page.mouse.move(box.x + geom.left + (head + 0.5) * geom.cell, box.y + geom.top + (layer + 0.5) * geom.cell);
      await page.waitForFunction((want) => document.getElementById('w').shadowRoot.querySelector('.readout').textContent.startsWith(want), `Layer ${layer + 1}, head ${head + 1}:`);
      const text = await shadow('.readout');
      const want = heads.find((h) => h.layer === layer && h.head === head);
      const m = /^Layer \d+, head \d+: (\w+) \(([\d.]+)\)/.exec(text);
      assert.ok(m, text);
      assert.equal(m[1], want.label, text);
      assert.ok(Math.abs(Number(m[2]) - want.score) < 6e-3, `${text}; the CLI: ${want.label} ${want.score}`);
      for (const key of ['entropy', 'first', 'previous', 'delimiter']) {
        const v = new RegExp(`${key} ([\\d.]+)`).exec(text);
        assert.ok(v && Math.abs(Number(v[1]) - want[key]) < 6e-3, `${key} in ${text}; the CLI: ${want[key]}`);
      }
    }
    await page.mouse.click(box.x + geom.left + 3.5 * geom.cell, box.y + geom.top + 1.5 * geom.cell);
    await page.waitForFunction(() => document.getElementById('w').viewState.view === 'head');
    const s = await page.evaluate(() => document.getElementById('w').viewState);
    assert.deepEqual([s.layer, s.head], [1, 3]);
    assert.deepEqual(errors, []);
  } finally {
    await close();
  }
});

test('save_html of an encoder-decoder’s head_view: the Attention menu switches between its encoder self-attention and its cross-attention', async () => {
  const cli = cliJson('attend', '--model', 'models/en-pt', '--text', 'The cat sat on the mat.');
  // (The tiny Bergamot translator's decoder is recurrent: it has no decoder self-attention.)
  const call = 'attnviz.head_view(encoder_attention=stack(r, "encoder_self"), cross_attention=stack(r, "cross"), encoder_tokens=r["tokens"]["source"], decoder_tokens=r["tokens"]["target"])';
  const out = saveHtml(cli, call, 'seq2seq');
  const { page, errors, close } = await openSaved(out);
  try {
    await drawnAfter(page);
    const menu = await widgetMenu(page, 'Attention');
    assert.deepEqual(menu.options, ['Encoder self-attention', 'Cross-attention']);
    assert.equal(menu.hidden, false);
    assert.equal((await page.evaluate(() => document.getElementById('w').viewState)).kind, 'encoder_self');
    const label = () => page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
    for (const [option, kind, pattern] of [['Cross-attention', 'cross', /cross-attention/i], ['Encoder self-attention', 'encoder_self', /encoder self-attention/i]]) {
      const before = (await widgetState(page)).draws;
      await page.locator('#w').getByRole('combobox', { name: /^Attention/ }).selectOption({ label: option });
      await drawnAfter(page, before);
      assert.equal((await page.evaluate(() => document.getElementById('w').viewState)).kind, kind);
      assert.match(await label(), pattern);
    }
    assert.deepEqual(errors, []);
  } finally {
    await close();
  }
});

test('save_html of model_view takes BertViz’s display_mode: dark by default, light when asked, whatever the page’s scheme', async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', 'The cat sat.');
  for (const [call, background] of [['attnviz.model_view(attention, tokens)', 'rgb(20, 23, 28)'], ['attnviz.model_view(attention, tokens, display_mode="light")', 'rgb(255, 255, 255)']]) {
    const { page, errors, close } = await openSaved(saveHtml(cli, call, `mode-${background.length}`));
    try {
      await drawnAfter(page);
      assert.equal(await page.evaluate(() => getComputedStyle(document.getElementById('w')).backgroundColor), background, call);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  }
});
