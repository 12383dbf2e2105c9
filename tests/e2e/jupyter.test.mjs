// The notebook package in a real JupyterLab (issue 25): started here on 127.0.0.1 with a token, it
// opens a notebook that calls attnviz.heatmap_view on the native CLI's MiniLM maps, runs it, and
// in headless Chromium the widget draws in the cell's output and reads out, under the pointer,
// the numbers given; and one that calls attnviz.show, which runs MiniLM itself in the notebook's
// browser (the kernel sends the worker, the wasm and the model), live as the reader types; and
// the same server's Jupyter Notebook 7 front end draws heatmap_view too. JupyterLab and Notebook
// come from .venv (tests/reference/requirements.txt pins them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, launchBrowser } from './harness.mjs';
import { cliAt, cliJson } from './cli-helpers.mjs';
import { startHub } from './hub-server.mjs';
import { drawnAfter, hoverCell, widgetMenu, widgetState } from './widget-helpers.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TOKEN = 'attnviz-test-token';
let browser;
let hub;
let lab;
let dir;
let url;

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'attnviz-jupyter-'));
  // The reader's own folders (tiny models), and a Hub stand-in serving one as a repo: the kernel's
  // HF_ENDPOINT names it, as a mirror would be named.
  execFileSync(path.join(ROOT, '.venv', 'bin', 'python'), [path.join(ROOT, 'scripts', 'tiny_models.py'), '--out', dir]);
  hub = await startHub({ 'attnviz-test/tiny-bert': path.join(dir, 'tiny-bert') });
  const port = await freePort();
  lab = spawn(path.join(ROOT, '.venv', 'bin', 'jupyter'), [
    'lab', '--no-browser', '--allow-root', '--LabApp.extension_manager=readonly', '--ServerApp.ip=127.0.0.1', `--ServerApp.port=${port}`, `--IdentityProvider.token=${TOKEN}`,
    `--ServerApp.root_dir=${dir}`, '--LabApp.expose_app_in_browser=True', '--JupyterNotebookApp.expose_app_in_browser=True', '--LabApp.news_url=', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate',
  ], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, HF_ENDPOINT: hub.url, JUPYTER_CONFIG_DIR: path.join(dir, '.jupyter'), JUPYTER_RUNTIME_DIR: path.join(dir, '.runtime'), PYTHONPATH: path.join(ROOT, 'python') } });
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
  await hub?.close();
  if (lab && lab.exitCode === null) {
    const exited = new Promise((r) => lab.once('exit', r));
    lab.kill('SIGTERM');
    const t = setTimeout(() => lab.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(t);
  }
  rmSync(dir, { recursive: true, force: true });
});

/** Write notebook `name` with one code cell of `source`, open it in JupyterLab, run it, and hand
 *  over the page once its <attention-viz> (given id 'w') has drawn; the context is closed after. */
async function runNotebook(name, source, use, { ui = 'lab', widgets = 1 } = {}) {
  const notebook = {
    nbformat: 4, nbformat_minor: 5,
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    cells: [{ cell_type: 'code', id: 'c1', metadata: {}, execution_count: null, outputs: [], source }],
  };
  writeFileSync(path.join(dir, name), JSON.stringify(notebook));
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  // Each widget's footer as it first drew, and when (the ms since the cells were run: firstDraws).
  await page.addInitScript(() => {
    window.attnvizFirstDraws = [];
    document.addEventListener('attention-ready', (e) => window.attnvizFirstDraws.push({ foot: e.target.shadowRoot.querySelector('.foot').textContent, ms: performance.now() - window.attnvizRunAll }));
  });
  try {
    // A workspace of its own (reset): no notebook of an earlier test is reopened beside it.
    // Notebook 7 (ui: 'notebook') opens one notebook per page anyway.
    await page.goto(ui === 'lab' ? `${url}/lab/workspaces/${name.replace(/\W/g, '-')}/tree/${name}?token=${TOKEN}&reset` : `${url}/notebooks/${name}?token=${TOKEN}`);
    // The notebook is open and its kernel idle, then every cell is run.
    await page.waitForFunction(() => {
      const app = window.jupyterapp;
      const nb = app && app.shell.currentWidget;
      return nb && nb.sessionContext && nb.sessionContext.session && nb.sessionContext.session.kernel && nb.sessionContext.session.kernel.status === 'idle';
    }, null, { timeout: 120_000, polling: 500 });
    await page.evaluate(() => {
      window.attnvizRunAll = performance.now();
      return window.jupyterapp.commands.execute('notebook:run-all-cells');
    });
    // (JupyterLab may reopen an earlier test's notebook beside it: only this one's output counts.)
    const output = () => window.jupyterapp.shell.currentWidget.node.querySelector('.jp-OutputArea');
    // (An error reads "attnviz: <why>"; a live widget's picture output says "attnviz: the last
    // drawing of …" from the start, hidden: waiting ended there, before the later widgets came.)
    await page.waitForFunction(([f, n]) => { const o = eval(f)(); return o && (o.querySelectorAll('attention-viz').length >= n || /attnviz: (?!the last drawing)|Error/.test(o.textContent)); }, [output.toString(), widgets], { timeout: 120_000, polling: 500 });
    const failed = await page.evaluate(([f, n]) => { const o = eval(f)(); return o.querySelectorAll('attention-viz').length >= n ? null : o.textContent; }, [output.toString(), widgets]);
    assert.equal(failed, null, `the cell drew no widget, or fewer than ${widgets}`);
    // The first widget is #w (the helpers'), the others #w2, #w3, …; each has drawn (or failed) before use.
    await page.evaluate((f) => eval(f)().querySelectorAll('attention-viz').forEach((el, i) => { el.id = i ? `w${i + 1}` : 'w'; }), output.toString());
    await drawnAfter(page);
    for (let i = 2; i <= widgets; i++) {
      await page.waitForFunction((id) => { const el = document.getElementById(id); return Number(el.dataset.drawCount || 0) > 0 || el.dataset.state === 'error'; }, `w${i}`, { timeout: 120_000 });
    }
    await use(page);
  } finally {
    await context.close();
  }
}

/** A cell that reads the CLI's answer `cli` (written to `name`) as PyTorch's output_attentions
 *  would be (one [1, heads, q, k] array per layer) and ends with `call` on `attention`, `tokens`. */
function cliMapsCell(cli, name, call) {
  writeFileSync(path.join(dir, name), JSON.stringify(cli));
  return [
    'import json\nimport numpy as np\nimport attnviz\n',
    `r = json.load(open(${JSON.stringify(name)}))\n`,
    'blocks = sorted((b for b in r["attentions"] if b["kind"] == "encoder_self"), key=lambda b: b["layer"])\n',
    'attention = tuple(np.asarray(b["data"], dtype=np.float32).reshape(1, b["heads"], b["query_len"], b["key_len"]) for b in blocks)\n',
    'tokens = r["tokens"]["source"]\n',
    call,
  ];
}

test('in JupyterLab, heatmap_view on MiniLM maps draws in the cell output and reads out the numbers given', { timeout: 240_000 }, async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', 'The cat sat on the mat because it was warm.');
  const source = cliMapsCell(cli, 'cli.json', 'attnviz.heatmap_view(attention, tokens, layer=2, heads=[4], label="MiniLM in JupyterLab")');
  await runNotebook('attention.ipynb', source, async (page) => {
    assert.match((await widgetState(page)).foot, /MiniLM in JupyterLab/);
    const block = cli.attentions.find((b) => b.kind === 'encoder_self' && b.layer === 2);
    for (const [i, j] of [[0, 0], [3, 5]]) {
      const got = await hoverCell(page, i, j);
      assert.ok(Math.abs(got.value - cliAt(block, 4, i, j)) < 6e-4, `${got.text}; given ${cliAt(block, 4, i, j)}`);
    }
  });
});

test('in JupyterLab, attnviz.show runs MiniLM in the notebook’s browser: the first map from the int8 weights, then the CLI’s from the f32 ones, and typing into it redraws it live', { timeout: 300_000 }, async (t) => {
  const text = 'The cat sat on the mat.';
  const typed = 'A small dog slept under the old table.';
  const source = ['import attnviz\n', `attnviz.show(${JSON.stringify(text)}, model=${JSON.stringify(path.join(ROOT, 'models', 'minilm'))}, view="heatmap", layer=2, head=4)`];
  await runNotebook('live.ipynb', source, async (page) => {
    // As on the page, the first map came from the int8 weights, the kernel's first files (the
    // f32 file, four times their size, follows on a second request): then the exact weights
    // drew, on the SIMD build; the footer says so.
    const [firstDraw] = await page.evaluate(() => window.attnvizFirstDraws);
    assert.match(firstDraw.foot, /^9 tokens · int8 weights · /);
    assert.match((await widgetState(page)).foot, /^9 tokens · exact f32 weights · \d+ ms · wasm SIMD \(pkg\/\)/);
    t.diagnostic(`run all → first map (int8): ${firstDraw.ms.toFixed(0)} ms`);
    const first = cliJson('attend', '--model', 'models/minilm', '--text', text).attentions.find((b) => b.kind === 'encoder_self' && b.layer === 2);
    for (const [i, j] of [[0, 0], [2, 5]]) {
      const got = await hoverCell(page, i, j);
      assert.ok(Math.abs(got.value - cliAt(first, 4, i, j)) < 6e-4, `${got.text}; CLI ${cliAt(first, 4, i, j)}`);
    }
    // The reader types another sentence into the widget: the model runs again, in the browser.
    const draws = (await widgetState(page)).draws;
    await page.locator('#w >> textarea[aria-label="Text to analyse"]').fill(typed);
    await drawnAfter(page, draws);
    const cli = cliJson('attend', '--model', 'models/minilm', '--text', typed);
    const block = cli.attentions.find((b) => b.kind === 'encoder_self' && b.layer === 2);
    assert.match((await widgetState(page)).foot, new RegExp(`^${cli.tokens.source.length} tokens · exact f32 weights`));
    const got = await hoverCell(page, 3, 6);
    assert.ok(got.text.includes(`“${cli.tokens.source[3]}” (4) → key “${cli.tokens.source[6]}” (7)`), got.text);
    assert.ok(Math.abs(got.value - cliAt(block, 4, 3, 6)) < 6e-4, `${got.text}; CLI ${cliAt(block, 4, 3, 6)}`);
  });
});

test('in JupyterLab, attnviz.show on a Hugging Face folder of the reader’s runs it as the page runs an opened model: its own tokens and maps', { timeout: 300_000 }, async () => {
  const folder = path.join(dir, 'tiny-bert');
  const text = 'The cat sat on the mat.';
  const cli = cliJson('attend', '--model', folder, '--text', text);
  await runNotebook('own.ipynb', ['import attnviz\n', `attnviz.show(${JSON.stringify(text)}, model="tiny-bert", view="heatmap", layer=1, head=3)`], async (page) => {
    assert.match((await widgetState(page)).foot, new RegExp(`^${cli.tokens.source.length} tokens · \\d+ ms · wasm SIMD`));
    const block = cli.attentions.find((b) => b.kind === 'encoder_self' && b.layer === 1);
    const got = await hoverCell(page, 1, 2);
    assert.ok(got.text.includes(`“${cli.tokens.source[1]}” (2) → key “${cli.tokens.source[2]}” (3)`), got.text);
    assert.ok(Math.abs(got.value - cliAt(block, 3, 1, 2)) < 6e-4, `${got.text}; CLI ${cliAt(block, 3, 1, 2)}`);
  });
});

test('in Jupyter Notebook 7 (the same server), heatmap_view draws in the cell output and reads out the numbers given', { timeout: 240_000 }, async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', 'The cat sat on the mat.');
  const source = cliMapsCell(cli, 'cli7.json', 'attnviz.heatmap_view(attention, tokens, layer=1, heads=[2], label="MiniLM in Notebook 7")');
  await runNotebook('nb7.ipynb', source, async (page) => {
    assert.match((await widgetState(page)).foot, /MiniLM in Notebook 7/);
    const block = cli.attentions.find((b) => b.kind === 'encoder_self' && b.layer === 1);
    const got = await hoverCell(page, 2, 3);
    assert.ok(Math.abs(got.value - cliAt(block, 2, 2, 3)) < 6e-4, `${got.text}; given ${cliAt(block, 2, 2, 3)}`);
  }, { ui: 'notebook' });
});

test('in JupyterLab, head_view then two attnviz.show models in one cell: every call displays its widget, and each show runs its own model after the head view', { timeout: 300_000 }, async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', 'The cat sat.');
  const source = [
    ...cliMapsCell(cli, 'cli-first.json', 'attnviz.head_view(attention, tokens)\n'),
    `attnviz.show("The cat sat on the mat.", model=${JSON.stringify(path.join(ROOT, 'models', 'minilm'))})\n`,
    `attnviz.show("The cat sat on the mat.", model=${JSON.stringify(path.join(ROOT, 'models', 'en-pt'))}, view="cross")`,
  ];
  await runNotebook('three.ipynb', source, async (page) => {
    const seen = await page.evaluate(() => ['w', 'w2', 'w3'].map((id) => {
      const el = document.getElementById(id);
      return { state: el.dataset.state, model: el.viewState.model, view: el.viewState.view, heads: el.viewState.heads, msg: el.shadowRoot.querySelector('.msg').textContent };
    }));
    // head_view, not on the cell's last line, displayed itself, with every head of its layer.
    assert.equal(seen[0].view, 'head');
    assert.equal(seen[0].heads, null, `all heads (null), not head 1 alone: ${JSON.stringify(seen[0])}`);
    assert.equal((await widgetMenu(page, 'Head')).value, 'all');
    // Each show runs its own model, though a head_view's widget came first (each output imports
    // the bundle anew; the page has one <attention-viz> class and one worker).
    assert.deepEqual(seen.slice(1).map((s) => [s.state, s.model]), [['ready', 'minilm-l6'], ['ready', 'en-pt-tiny']], JSON.stringify(seen));
    assert.equal(seen[2].view, 'cross');
    // One widget per call: the last show, the cell's value, was not displayed a second time.
    assert.equal(await page.evaluate(() => window.jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-OutputArea attention-viz').length), 3);
  }, { widgets: 3 });
});

test('in JupyterLab, attnviz.show with a Hub id: the notebook’s browser fetches the repo from the kernel’s HF_ENDPOINT and draws its tokens and maps', { timeout: 300_000 }, async () => {
  const text = 'The cat sat on the mat.';
  const cli = cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', text);
  await runNotebook('hub.ipynb', ['import attnviz\n', `attnviz.show(${JSON.stringify(text)}, model="hf:attnviz-test/tiny-bert", view="heatmap", layer=1, head=2)`], async (page) => {
    assert.equal(await page.evaluate(() => document.getElementById('w').viewState.model), 'hf:attnviz-test/tiny-bert');
    const block = cli.attentions.find((b) => b.kind === 'encoder_self' && b.layer === 1);
    const got = await hoverCell(page, 2, 3);
    assert.ok(got.text.includes(`“${cli.tokens.source[2]}” (3) → key “${cli.tokens.source[3]}” (4)`), got.text);
    assert.ok(Math.abs(got.value - cliAt(block, 2, 2, 3)) < 6e-4, `${got.text}; CLI ${cliAt(block, 2, 2, 3)}`);
    assert.ok(hub.requests.some((r) => r.path.includes('attnviz-test/tiny-bert')), 'fetched from the HF_ENDPOINT hub');
  });
});

test('a saved notebook reopened without its kernel shows each widget’s last drawing, and holds no copy of the model', { timeout: 300_000 }, async () => {
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', 'The cat sat.');
  const source = [
    ...cliMapsCell(cli, 'cli-saved.json', 'attnviz.head_view(attention, tokens)\n'),
    `attnviz.show("The cat sat on the mat.", model=${JSON.stringify(path.join(ROOT, 'models', 'minilm'))})`,
  ];
  const file = path.join(dir, 'saved.ipynb');
  const pictures = () => window.jupyterapp.shell.currentWidget.node.querySelectorAll('[id^="attnviz-picture-"] img');
  await runNotebook('saved.ipynb', source, async (page) => {
    // While the widgets run, their pictures are in the outputs, hidden.
    await page.waitForFunction((f) => eval(f)().length === 2, pictures.toString(), { timeout: 60_000 });
    assert.deepEqual(await page.evaluate((f) => [...eval(f)()].map((img) => img.getClientRects().length), pictures.toString()), [0, 0]);
    await page.evaluate(() => window.jupyterapp.commands.execute('docmanager:save'));
    await page.waitForFunction(() => !window.jupyterapp.shell.currentWidget.context.model.dirty);
  }, { widgets: 2 });
  const saved = readFileSync(file);
  assert.ok(saved.length < 3 * 1048576, `the saved notebook is ${saved.length} bytes: no model in it`);
  assert.equal(saved.toString().split('data:image/png;base64,').length - 1, 2, 'one picture per widget');
  // Reopened with no kernel running: the widgets cannot run, their pictures show.
  for (const s of await (await fetch(`${url}/api/sessions?token=${TOKEN}`)).json()) await fetch(`${url}/api/sessions/${s.id}?token=${TOKEN}`, { method: 'DELETE' });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    const page = await context.newPage();
    await page.goto(`${url}/lab/workspaces/reopened/tree/saved.ipynb?token=${TOKEN}&reset`);
    await page.waitForFunction((f) => { try { return eval(f)().length === 2; } catch { return false; } }, pictures.toString(), { timeout: 120_000, polling: 500 });
    const shown = await page.evaluate((f) => [...eval(f)()].map((img) => ({ visible: img.getClientRects().length > 0, width: img.naturalWidth })), pictures.toString());
    assert.ok(shown.every((p) => p.visible && p.width > 100), JSON.stringify(shown));
  } finally {
    await context.close();
  }
});
