// The notebook package in a real JupyterLab (issue 25): started here on 127.0.0.1 with a token, it
// opens a notebook that calls attnviz.heatmap_view on the native CLI's MiniLM maps, runs it, and
// in headless Chromium the widget draws in the cell's output and reads out, under the pointer,
// the numbers given. JupyterLab comes from .venv (tests/reference/requirements.txt pins it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser } from './harness.mjs';
import { cliAt, cliJson } from './cli-helpers.mjs';
import { drawnAfter, hoverCell, widgetState } from './widget-helpers.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TOKEN = 'attnviz-test-token';
let browser;
let lab;
let dir;
let url;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'attnviz-jupyter-'));
  const port = await freePort();
  lab = spawn(path.join(ROOT, '.venv', 'bin', 'jupyter'), [
    'lab', '--no-browser', '--allow-root', '--LabApp.extension_manager=readonly', '--ServerApp.ip=127.0.0.1', `--ServerApp.port=${port}`, `--IdentityProvider.token=${TOKEN}`,
    `--ServerApp.root_dir=${dir}`, '--LabApp.expose_app_in_browser=True', '--LabApp.news_url=', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate',
  ], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, JUPYTER_CONFIG_DIR: path.join(dir, '.jupyter'), JUPYTER_RUNTIME_DIR: path.join(dir, '.runtime'), PYTHONPATH: path.join(ROOT, 'python') } });
  let log = '';
  lab.stderr.setEncoding('utf8').on('data', (d) => { log += d; });
  url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/api/status?token=${TOKEN}`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || lab.exitCode !== null) throw new Error(`JupyterLab did not start:\n${log.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  if (lab && lab.exitCode === null) {
    const exited = new Promise((r) => lab.once('exit', r));
    lab.kill('SIGTERM');
    const t = setTimeout(() => lab.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(t);
  }
  rmSync(dir, { recursive: true, force: true });
});

test('in JupyterLab, heatmap_view on MiniLM maps draws in the cell output and reads out the numbers given', { timeout: 240_000 }, async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', 'The cat sat on the mat because it was warm.');
  writeFileSync(path.join(dir, 'cli.json'), JSON.stringify(cli));
  const source = [
    'import json\nimport numpy as np\nimport attnviz\n',
    'r = json.load(open("cli.json"))\n',
    'blocks = sorted((b for b in r["attentions"] if b["kind"] == "encoder_self"), key=lambda b: b["layer"])\n',
    'attention = tuple(np.asarray(b["data"], dtype=np.float32).reshape(1, b["heads"], b["query_len"], b["key_len"]) for b in blocks)\n',
    'attnviz.heatmap_view(attention, r["tokens"]["source"], layer=2, heads=[4], label="MiniLM in JupyterLab")',
  ];
  const notebook = {
    nbformat: 4, nbformat_minor: 5,
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    cells: [{ cell_type: 'code', id: 'c1', metadata: {}, execution_count: null, outputs: [], source }],
  };
  writeFileSync(path.join(dir, 'attention.ipynb'), JSON.stringify(notebook));
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  try {
    await page.goto(`${url}/lab/tree/attention.ipynb?token=${TOKEN}`);
    // The notebook is open and its kernel idle, then every cell is run.
    await page.waitForFunction(() => {
      const app = window.jupyterapp;
      const nb = app && app.shell.currentWidget;
      return nb && nb.sessionContext && nb.sessionContext.session && nb.sessionContext.session.kernel && nb.sessionContext.session.kernel.status === 'idle';
    }, null, { timeout: 120_000, polling: 500 });
    await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
    await page.waitForFunction(() => document.querySelector('.jp-OutputArea attention-viz'), null, { timeout: 120_000, polling: 500 });
    await page.evaluate(() => { document.querySelector('.jp-OutputArea attention-viz').id = 'w'; });
    await drawnAfter(page);
    assert.match((await widgetState(page)).foot, /MiniLM in JupyterLab/);
    const block = cli.attentions.find((b) => b.kind === 'encoder_self' && b.layer === 2);
    for (const [i, j] of [[0, 0], [3, 5]]) {
      const got = await hoverCell(page, i, j);
      assert.ok(Math.abs(got.value - cliAt(block, 4, i, j)) < 6e-4, `${got.text}; given ${cliAt(block, 4, i, j)}`);
    }
  } finally {
    await context.close();
  }
});
