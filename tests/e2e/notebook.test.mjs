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
import { drawnAfter, hoverCell, widgetState } from './widget-helpers.mjs';

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
 *  from `attention` (a tuple of [1, heads, q, k] arrays) and `tokens`; returns the saved file. */
function saveHtml(cli, call, name) {
  const json = path.join(dir, `${name}.json`);
  writeFileSync(json, JSON.stringify(cli));
  const out = path.join(dir, `${name}.html`);
  const script = `
import json, sys
import numpy as np
sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'python'))})
import attnviz
r = json.load(open(${JSON.stringify(json)}))
blocks = sorted((b for b in r["attentions"] if b["kind"] == "encoder_self"), key=lambda b: b["layer"])
attention = tuple(np.asarray(b["data"], dtype=np.float32).reshape(1, b["heads"], b["query_len"], b["key_len"]) for b in blocks)
tokens = r["tokens"]["source"]
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
      const layers = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('select').options.length);
      assert.equal(layers, 6);
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  }
});
