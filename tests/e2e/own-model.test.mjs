// "Open your model…" (issue 14): a tiny random BERT folder in Hugging Face layout (written for this
// run by scripts/tiny_models.py) dropped on the page draws with its own tokens (the CLI's), so
// do tiny RoBERTa and DistilBERT folders (value-weighted and in the heads overview too) and
// a tiny opus-mt folder (its translation and cross view the CLI's), the BERT one is in
// the picker after a reload and loads from OPFS, and is gone once removed; bad folders are refused
// with a message that says why, and the page goes on with the model it had. Where OPFS is
// missing the model is kept in IndexedDB instead; where neither is, the page says so. The widget's
// openModel() does the same through the same session code.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hoverStepPanel, openApp, openWidget, useServerAndBrowser } from './harness.mjs';
import { cliJson, waitDrawn, watchLongTasks } from './cli-helpers.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TEXT = 'The cat sat on the mat.';
let server;
let browser;
let dir;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });
before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'attnviz-own-'));
  execFileSync(path.join(ROOT, '.venv/bin/python'), [path.join(ROOT, 'scripts/tiny_models.py'), '--out', dir]);
});
after(() => rmSync(dir, { recursive: true, force: true }));

const NAMES = ['config.json', 'model.safetensors', 'tokenizer.json'];
/** The files of a tiny folder as { name: Buffer }. */
const folder = (sub) => Object.fromEntries(NAMES.map((n) => [n, readFileSync(path.join(dir, sub, n))]));

/** Drop files on the page's body as a browser does (a DataTransfer of File objects). */
function drop(page, files) {
  const list = Object.entries(files).map(([name, b]) => [name, b.toString('base64')]);
  return page.evaluate((l) => {
    const dt = new DataTransfer();
    for (const [name, b64] of l) dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name));
    document.body.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    document.body.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, list);
}

const seen = (page) => page.evaluate(() => ({ model: window.attnvizDebug.modelId, tokens: window.attnvizDebug.tokens, draws: window.attnvizDebug.drawCount, notice: document.getElementById('notice').textContent, picker: [...document.querySelectorAll('#model option')].map((o) => o.value) }));

function waitModel(page, prefix, after = 0) {
  return page.waitForFunction(([p, n]) => String(window.attnvizDebug.modelId).startsWith(p) && window.attnvizDebug.drawCount > n && !window.attnvizDebug.drawing, [prefix, after], { timeout: 60_000 });
}

async function typeText(page, text) {
  // The same text again asks for nothing (the drawn answer is the text's): no new drawing.
  if ((await page.evaluate(() => window.attnvizDebug.text)) === text) return;
  const before = (await seen(page)).draws;
  await page.fill('#text', text);
  await page.waitForFunction(([t, n]) => window.attnvizDebug.text === t && window.attnvizDebug.drawCount > n, [text, before], { timeout: 60_000 });
}

/** Run fn(page, app) on a fresh page (a browser context of its own, openApp's opts), closed afterwards. */
async function onPage(fn, opts = {}) {
  const app = await openApp(browser, server.url, opts);
  try {
    await fn(app.page, app);
  } finally {
    await app.close();
  }
}

/**
 * Drop tiny-bert: it draws with the CLI's tokens and is kept; after a reload the picker offers it
 * and it draws again from the browser's storage; once removed it is gone, after a reload too.
 */
async function dropReloadRemove(page, app) {
  await typeText(page, TEXT);
  const want = cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source;
  const t0 = Date.now();
  await drop(page, folder('tiny-bert'));
  await waitModel(page, 'own-');
  const ms = Date.now() - t0;
  let s = await seen(page);
  assert.deepEqual(s.tokens, want);
  assert.match(s.notice, /BERT encoder, safetensors F32: 2 layers × 4 heads, hidden size 32/);
  assert.match(s.notice, /Kept in this browser/);
  assert.ok(await page.isVisible('#remove-model'), 'Remove shows for the user’s model');
  const id = s.model;
  console.log(`# dropped tiny-bert drawn in ${ms} ms: ${s.notice}`);

  await page.reload();
  await page.waitForFunction(() => document.body.dataset.state === 'ready');
  s = await seen(page);
  assert.ok(s.picker.includes(id), `after a reload the picker offers ${id}: ${s.picker}`);
  const label = await page.textContent(`#model optgroup option[value="${id}"]`);
  assert.match(label, /^tiny-bert|^BertModel/); // (loose files are named from their config.json)
  const n = s.draws;
  await page.selectOption('#model', id);
  await waitModel(page, id, n);
  await typeText(page, TEXT);
  assert.deepEqual((await seen(page)).tokens, want);

  await page.click('#remove-model');
  await waitModel(page, 'minilm-l6');
  assert.ok(!(await seen(page)).picker.includes(id));
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.state === 'ready');
  assert.ok(!(await seen(page)).picker.includes(id), 'removed models are not offered after a reload');
  assert.deepEqual(app.pageErrors, []);
}

test('a dropped folder draws, stays for the next visit, and can be removed', async () => {
  await onPage(dropReloadRemove);
});

// Where OPFS is missing (older Safari, some private modes and webviews) the model is kept in
// IndexedDB. An init script does not reach the Web Worker, which is where models are stored, so
// the worker's own script is served with the same lines first (the service worker is blocked: it
// would answer the worker's request before the route sees it).
const NO_OPFS = 'delete StorageManager.prototype.getDirectory;';
const NO_STORAGE = `${NO_OPFS} for (let o = self; o; o = Object.getPrototypeOf(o)) delete o.indexedDB;`; // an accessor on a prototype
const without = (code) => ({
  contextOptions: { serviceWorkers: 'block' },
  onContext: async (context) => {
    await context.addInitScript(code);
    await context.route(/\/worker\.js(\?|$)/, async (route) => {
      const res = await route.fetch();
      await route.fulfill({ response: res, body: `${code}\n${await res.text()}` });
    });
  },
});

test('without OPFS a dropped folder is kept in IndexedDB: offered after a reload, gone once removed', async () => {
  await onPage(async (page, app) => {
    assert.equal(await page.evaluate(() => 'getDirectory' in navigator.storage), false, 'no OPFS in the page');
    await dropReloadRemove(page, app);
    const dbs = await page.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));
    assert.ok(dbs.includes('attnviz-models'), `kept in IndexedDB: ${dbs}`);
  }, without(NO_OPFS));
});

test('with neither OPFS nor IndexedDB the page says the model will not be kept, and it is not', async () => {
  await onPage(async (page, app) => {
    await drop(page, folder('tiny-bert'));
    await waitModel(page, 'own-');
    const s = await seen(page);
    assert.match(s.notice, /no storage to keep it in .*after a reload, open it again/);
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.state === 'ready');
    assert.ok(!(await seen(page)).picker.includes(s.model), 'not offered after a reload');
    assert.deepEqual(app.pageErrors, []);
  }, without(NO_STORAGE));
});

test('an own BERT compared with MiniLM on one text (issue 26): “this text: tiny-bert (A) vs all-MiniLM-L6-v2 (B)” draws both, labelled, with the difference map or why there is none', async () => {
  await onPage(async (page, app) => {
    await typeText(page, TEXT);
    await drop(page, folder('tiny-bert'));
    await waitModel(page, 'own-');
    await page.click('[role=tab][data-view=heatmap]');
    const offered = await page.$$eval('#compare-model option', (os) => os.map((o) => o.value));
    assert.ok(offered.includes('minilm-l6'), `MiniLM (a BERT too) is offered as B: ${offered}`);
    assert.ok(!offered.includes('en-pt-tiny') && !offered.includes('exact'), `only models of its architecture, and no weights it lacks: ${offered}`);
    await page.selectOption('#compare-model', 'minilm-l6');
    await waitDrawn(page, () => { const p = window.attnvizDebug.comparePanels(); return p && p.some((x) => x.panel === 'b'); });
    const aria = await page.getAttribute('canvas#view', 'aria-label');
    assert.match(aria, /^Comparison of [^(]+ \(A\) and all-MiniLM-L6-v2, exact f32 weights \(B\) on one text\./);
    const mine = cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source;
    const minilm = cliJson('attend', '--model', 'models/minilm', '--text', TEXT).tokens.source;
    assert.deepEqual(await page.evaluate(() => window.attnvizDebug.compareTokens), minilm, 'B is MiniLM’s tokens of the same text');
    if (mine.length === minilm.length) assert.match(aria, /Aligned (token|position) by (token|position)/);
    else assert.match(aria, new RegExp(`${mine.length} vs ${minilm.length} tokens: no difference map`));
    assert.match(await page.evaluate(() => location.hash), /[#&]cm=minilm-l6(&|$)/);
    assert.deepEqual(app.pageErrors, []);
  });
});

test('a dropped opus-mt (Hugging Face Marian) folder translates and draws its three kinds, the cross view too', async () => {
  await onPage(async (page, app) => {
    await typeText(page, TEXT);
    const want = cliJson('attend', '--model', path.join(dir, 'tiny-marian'), '--text', TEXT);
    await drop(page, folder('tiny-marian'));
    await waitModel(page, 'own-');
    const s = await seen(page);
    assert.match(s.notice, /Marian encoder-decoder \(opus-mt\), safetensors F32: 2 encoder \+ 2 decoder layers × 4 heads, hidden size 32/);
    assert.deepEqual(s.tokens, want.tokens.source);
    const out = await page.evaluate(() => ({ target: window.attnvizDebug.targetTokens, text: window.attnvizDebug.outputText }));
    assert.deepEqual(out.target, want.tokens.target);
    assert.equal(out.text, want.output_text);
    // The kind tabs offer the decoder's masked self-attention beside the other two.
    const kinds = await page.$$eval('#kinds [role=tab]', (tabs) => tabs.map((t) => t.dataset.kind));
    assert.deepEqual(kinds, ['encoder_self', 'decoder_self', 'cross']);
    let n = (await seen(page)).draws;
    await page.click('#kinds [data-kind=decoder_self]');
    await page.waitForFunction((c) => window.attnvizDebug.drawCount > c && !window.attnvizDebug.drawing, n);
    n = (await seen(page)).draws;
    await page.click('[role=tab][data-view=cross]');
    await page.waitForFunction((c) => window.attnvizDebug.view === 'cross' && window.attnvizDebug.drawCount > c && !window.attnvizDebug.drawing, n, { timeout: 30_000 });
    const aria = await page.getAttribute('#view', 'aria-label');
    assert.match(aria, /cross-attention/i);
    // Its positions: opus-mt's sinusoid has the paper's frequencies 10000^(−2i/d) (Bergamot's
    // divide by d/2 − 1): the note and every period read out are the model's own (the CLI's).
    await page.click('[role=tab][data-view=positions]');
    await page.waitForFunction(() => window.attnvizDebug.positionsChart && window.attnvizDebug.positionsChart() && !window.attnvizDebug.drawing, null, { timeout: 30_000 });
    const positions = cliJson('positions', '--model', path.join(dir, 'tiny-marian'), '--count', '64'); // all its positions
    assert.equal(positions.wave.denominator, positions.dims / 2);
    assert.match(await page.getAttribute('#view', 'aria-label'), /dim i’s frequency is 10000\^\(−i\/\(d\/2\)\) = 10000\^\(−2i\/d\), the paper’s/);
    const g = await page.evaluate(() => window.attnvizDebug.positionsChart());
    await page.evaluate(() => document.querySelector('canvas#view').scrollIntoView({ block: 'center' })); // as a reader scrolls to it
    const box = await page.locator('canvas#view').boundingBox();
    const d = positions.dims / 2 - 1; // the slowest sine
    await page.mouse.move(box.x + g.heat.x + (3.5 / g.positions) * g.heat.w, box.y + g.heat.y + g.heat.h - ((d + 0.5) / g.dims) * g.heat.h);
    await page.waitForFunction(() => /position 3 · dim \d+ = /.test(document.getElementById('side-hint').textContent));
    const readout = await page.locator('#side-hint').textContent();
    assert.ok(readout.includes(`dim ${d} = `) && readout.includes(`period ${((2 * Math.PI) / positions.wave.frequencies[d]).toFixed(1)} positions`), readout);
    console.log(`# dropped tiny-marian: ${s.notice}; translation “${out.text}”`);
    assert.deepEqual(app.pageErrors, []);
  });
});

test('a dropped GPT-2 folder draws causal maps with its tokens and generates', async () => {
  await onPage(async (page, app) => {
    await typeText(page, TEXT);
    const folderDir = path.join(dir, 'tiny-gpt2');
    await drop(page, folder('tiny-gpt2'));
    await waitModel(page, 'own-');
    let s = await seen(page);
    assert.deepEqual(s.tokens, cliJson('attend', '--model', folderDir, '--text', TEXT).tokens.source);
    assert.ok(s.tokens.some((t) => t.startsWith('Ġ')), `byte-level tokens: ${s.tokens}`);
    assert.match(s.notice, /GPT-2 decoder, safetensors F32: 2 layers × 4 heads, hidden size 32/);
    assert.equal(await page.locator('#generation').isVisible(), true, 'the generation panel is offered for GPT-2');

    // Generate 3 tokens (greedy): the same ids as the CLI's, and the map covers them.
    await page.locator('#generation .gen-n').fill('3');
    await page.click('#generation .gen-go');
    await page.waitForFunction(() => window.attnvizDebug.generation && window.attnvizDebug.generation.steps === 3 && !window.attnvizDebug.drawing, null, { timeout: 60_000 });
    const g = await page.evaluate(() => window.attnvizDebug.generation);
    const cli = cliJson('attend', '--model', folderDir, '--text', TEXT, '--generate', '3');
    assert.deepEqual(g.rawTokens, cli.tokens.target);
    assert.equal(g.promptLen, cli.generation.prompt_len);
    assert.equal(g.sampling.method, 'greedy');

    // The step view: GPT-2's block is pre-norm with biases, × Wᴼ + bᴼ, then LayerNorm of the
    // residual stream, the feed-forward's input.
    await page.click('#tab-view-step');
    await page.selectOption('#step-part', 'matrices');
    await page.waitForFunction(() => window.attnvizDebug.view === 'step' && window.attnvizDebug.step && window.attnvizDebug.stepPanels()?.length && !window.attnvizDebug.drawing, null, { timeout: 60_000 });
    await hoverStepPanel(page, 'normed');
    await page.waitForFunction(() => /^LayerNorm \(the feed-forward’s input\): row 2/.test(document.getElementById('side-hint').textContent));
    assert.deepEqual(app.pageErrors, []);
  });
});

test('dropped RoBERTa and DistilBERT folders draw with their tokens, value-weighted and in the heads overview', async () => {
  await onPage(async (page, app) => {
    await typeText(page, TEXT);
    const cases = [
      ['tiny-roberta', /^Opened “[^”]*”: RoBERTa encoder, safetensors F32: 2 layers × 4 heads, hidden size 32/, '<s>'],
      ['tiny-distilbert', /^Opened “[^”]*”: DistilBERT encoder, safetensors F32: 2 layers × 4 heads, hidden size 32/, '[CLS]'],
    ];
    for (const [name, notice, first] of cases) {
      const want = cliJson('attend', '--model', path.join(dir, name), '--text', TEXT, '--measure', 'value-norm');
      const before = (await seen(page)).draws;
      await drop(page, folder(name));
      // The second model's id starts with own- too, and the first one may still draw meanwhile:
      // wait for this one's notice (it says "Found in …, Loading…" until it has opened) and for
      // a drawing of its own tokens.
      await page.waitForFunction((src) => new RegExp(src).test(document.getElementById('notice').textContent), notice.source, { timeout: 60_000 });
      await page.waitForFunction(([n, first]) => window.attnvizDebug.drawCount > n && !window.attnvizDebug.drawing
        && window.attnvizDebug.tokens[0] === first, [before, first], { timeout: 60_000 });
      await waitModel(page, 'own-', before);
      const s = await seen(page);
      assert.match(s.notice, notice, name);
      assert.equal(s.tokens[0], first, name);
      assert.deepEqual(s.tokens, want.tokens.source, name);
      // The value-weighted measure (‖αf‖) and the heads overview work on it as on BERT.
      await page.click('[role=tab][data-view=heatmap]');
      await waitDrawn(page, () => window.attnvizDebug.view === 'heatmap');
      await page.selectOption('#measure', 'value-norm');
      await waitDrawn(page, () => window.attnvizDebug.state.measure === 'value-norm');
      assert.match(await page.getAttribute('#view', 'aria-label'), /value-weighted/, name);
      await page.selectOption('#measure', 'raw');
      await page.click('[role=tab][data-view=heads]');
      await waitDrawn(page, () => window.attnvizDebug.view === 'heads' && window.attnvizDebug.headsGrid() && window.attnvizDebug.headsGrid().scores);
      const got = (await page.evaluate(() => window.attnvizDebug.headsGrid())).scores.heads;
      const cliHeads = cliJson('heads', '--model', path.join(dir, name), '--text', TEXT).heads;
      assert.deepEqual(got.map((x) => [x.layer, x.head, x.label]), cliHeads.map((x) => [x.layer, x.head, x.label]), `${name}: the CLI's head labels`);
      assert.equal(got.length, 2 * 4);
      console.log(`# dropped ${name}: ${s.notice}`);
    }
    assert.deepEqual(app.pageErrors, []);
  });
});

test('the f16 and bf16 variants open from the multi-file picker, named from their config.json', async () => {
  await onPage(async (page) => {
    await typeText(page, TEXT);
    for (const [variant, dtype] of [['tiny-bert-f16', 'F16'], ['tiny-bert-bf16', 'BF16']]) {
      const before = (await seen(page)).draws;
      await page.click('#open-model');
      await page.setInputFiles('#open-files', NAMES.map((n) => path.join(dir, variant, n)));
      await page.waitForFunction((d) => document.getElementById('notice').textContent.includes(`safetensors ${d}:`) && /^Opened/.test(document.getElementById('notice').textContent), dtype);
      await waitModel(page, 'own-', before);
      const s = await seen(page);
      assert.deepEqual(s.tokens, cliJson('attend', '--model', path.join(dir, variant), '--text', TEXT).tokens.source, variant);
      assert.match(s.notice, /^Opened “BertModel”/, 'loose files are named from their config.json (its architecture: no _name_or_path)');
    }
  });
});

test('the folder picker names the model after its folder', async () => {
  await onPage(async (page) => {
    await page.click('#open-model');
    await page.setInputFiles('#open-folder', path.join(dir, 'tiny-bert'));
    await waitModel(page, 'own-tiny-bert');
    const s = await seen(page);
    assert.match(s.notice, /^Opened “tiny-bert”/);
    // The same folder again is the copy already kept, not a second entry.
    await page.selectOption('#model', 'minilm-l6');
    await waitModel(page, 'minilm-l6');
    await page.setInputFiles('#open-folder', path.join(dir, 'tiny-bert'));
    await waitModel(page, 'own-tiny-bert');
    assert.deepEqual((await seen(page)).picker, s.picker);
  });
});

/**
 * Before the page's scripts run: count every read of a Blob's bytes on the page's own thread
 * (window.__mainReads: [size of the blob read, how]) and keep what it posts to workers
 * (window.__posted: each message's type and, for an 'open', its files as handed over).
 */
const watchMainThreadReads = (context) =>
  context.addInitScript(() => {
    window.__mainReads = [];
    window.__posted = [];
    const note = (blob, how) => window.__mainReads.push([blob.size, how]);
    for (const k of ['arrayBuffer', 'text', 'stream', 'bytes']) {
      const f = Blob.prototype[k];
      if (f) Blob.prototype[k] = function (...a) { note(this, `Blob.${k}`); return f.apply(this, a); };
    }
    for (const k of ['readAsArrayBuffer', 'readAsText', 'readAsDataURL', 'readAsBinaryString']) {
      const f = FileReader.prototype[k];
      FileReader.prototype[k] = function (b, ...a) { note(b, `FileReader.${k}`); return f.call(this, b, ...a); };
    }
    window.Response = new Proxy(window.Response, {
      construct(R, args) {
        if (args[0] instanceof Blob) note(args[0], 'new Response(blob)');
        return Reflect.construct(R, args);
      },
    });
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (m, ...r) {
      const files = m && m.type === 'open' ? m.files.map((f) => ({ name: f.name, isFile: f.file instanceof File, size: f.file.size })) : undefined;
      window.__posted.push({ type: m && m.type, files });
      return post.call(this, m, ...r);
    };
  });

test('one .gguf file (SmolLM2, 98 MB) opens without freezing the page: the page never reads it, the worker does', async () => {
  const gguf = path.join(ROOT, 'models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf');
  await onPage(async (page) => {
    await watchLongTasks(page);
    // Every notice the page shows on the way, to read the one said while the weights load.
    await page.evaluate(() => {
      const el = document.getElementById('notice');
      window.__notices = [];
      new MutationObserver(() => window.__notices.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await page.click('#open-model');
    await page.setInputFiles('#open-files', gguf);
    await waitModel(page, 'own-smollm2');
    const s = await seen(page);
    assert.match(s.notice, /Llama decoder, GGUF F32 \+ Q4_1 \+ Q8_0: 30 layers × 9 heads \(3 key\/value heads\), hidden size 576, 134\.5 M parameters/);
    // What the headers said, before the weights were read (the worker's inspected report).
    const found = (await page.evaluate(() => window.__notices)).find((t) => t.startsWith('Found in'));
    assert.match(found || '', /^Found in “SmolLM2-135M-Instruct\.Q4_1”: Llama decoder, GGUF F32 \+ Q4_1 \+ Q8_0: 30 layers × 9 heads .* Loading…$/);
    assert.equal(s.tokens[0], 'The');
    const r = await page.evaluate(() => window.attnvizDebug.opened);
    const tasks = await page.evaluate(() => window.longTasks);
    const mib = (b) => (b / 2 ** 20).toFixed(1);
    console.log(`# SmolLM2 .gguf opened: inspect ${r.inspect_ms.toFixed(0)} ms (headers read + inspectModel), load ${r.load_ms.toFixed(0)} ms, estimate ${mib(r.memory_bytes)} MiB, wasm memory after load ${mib(r.wasm_memory_bytes)} MiB (MiniLM loaded too); longest main-thread task ${Math.max(0, ...tasks).toFixed(0)} ms`);
    // What keeps the page's tasks short whatever the machine's load (README: files are read,
    // parsed and stored in the worker): the page's thread reads no byte of the file, and hands
    // the worker the File itself, not its bytes.
    const { reads, posted } = await page.evaluate(() => ({ reads: window.__mainReads, posted: window.__posted }));
    assert.deepEqual(reads, [], 'blobs read on the page’s thread: [size, how]');
    const open = posted.filter((m) => m.type === 'open');
    assert.deepEqual(open.map((m) => m.files), [[{ name: path.basename(gguf), isFile: true, size: statSync(gguf).size }]], 'the worker is handed the picked File');
    // A coarse guard only (the machine's load stretches every task): a file read or parsed on the
    // page's thread would hold it for seconds.
    assert.ok(Math.max(0, ...tasks) < 500, `main-thread tasks: ${tasks}`);
  }, { onContext: watchMainThreadReads });
});

test('bad folders are refused with the reason; the page keeps its model', async () => {
  await onPage(async (page, app) => {
    const good = folder('tiny-bert');
    const marian = folder('tiny-marian');
    const header = (h) => {
      const json = Buffer.from(JSON.stringify(h));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(json.length));
      return Buffer.concat([len, json, Buffer.alloc(64)]);
    };
    const cases = [
      ['missing tokenizer.json', { 'config.json': good['config.json'], 'model.safetensors': good['model.safetensors'] }, /needs config\.json, model\.safetensors and tokenizer\.json/],
      ['an opus-mt folder as published (no tokenizer.json)', { 'config.json': marian['config.json'], 'model.safetensors': marian['model.safetensors'], 'source.spm': Buffer.from('spm'), 'vocab.json': Buffer.from('{}') }, /opus-mt ships source\.spm, target\.spm and vocab\.json instead of tokenizer\.json: make one with scripts\/opus_mt_tokenizer\.py/],
      ['truncated safetensors', { ...good, 'model.safetensors': good['model.safetensors'].subarray(0, 40_000) }, /model\.safetensors is cut short/],
      ['unknown model_type', { ...good, 'config.json': Buffer.from(good['config.json'].toString().replace('"bert"', '"t5"')) }, /model_type `t5`.*supported model_types: bert, roberta, xlm-roberta, distilbert, llama, marian, gpt2/],
      ['a 5 GB claim', { ...good, 'model.safetensors': header({ w: { dtype: 'F32', shape: [1342177280], data_offsets: [0, 5368709120] } }) }, /more than the 1 GiB memory budget/],
    ];
    for (const [what, files, message] of cases) {
      const before = await seen(page);
      await drop(page, files);
      await page.waitForFunction(() => /^Could not open/.test(document.getElementById('notice').textContent), null, { timeout: 30_000 });
      const s = await seen(page);
      assert.match(s.notice, message, what);
      assert.equal(s.model, 'minilm-l6', `${what}: the model in use stays`);
      assert.deepEqual(s.picker, before.picker, `${what}: nothing is added to the picker`);
      await typeText(page, `Still working after the ${what}.`);
      assert.ok((await seen(page)).tokens.includes('working'), `${what}: the page still draws`);
    }
    // A file name is the user's text: shown as text, never as HTML.
    await drop(page, { '<img src=x onerror="window.pwned=1">.gguf': Buffer.from('GGUF not really') });
    await page.waitForFunction(() => /^Could not open “<img/.test(document.getElementById('notice').textContent), null, { timeout: 30_000 });
    assert.match((await seen(page)).notice, /GGUF version \d+; this build reads versions 2 and 3/);
    assert.equal(await page.evaluate(() => document.querySelectorAll('#notice *').length + (window.pwned ? 1 : 0)), 0);
    assert.deepEqual(app.pageErrors, []);
  });
});

test('the widget opens a model through el.openModel(files)', async () => {
  const w = await openWidget(browser, server.url, { model: 'minilm', text: TEXT });
  try {
    const { page } = w;
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: 60_000 });
    const list = Object.entries(folder('tiny-bert')).map(([n, b]) => [n, b.toString('base64')]);
    const out = await page.evaluate(async (l) => {
      const el = document.getElementById('w');
      const files = l.map(([name, b64]) => new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name));
      const drawn = new Promise((resolve) => el.addEventListener('attention-change', (e) => { if (e.detail.model.startsWith('own-')) resolve(e.detail); }));
      const report = await el.openModel(files, { name: 'Tiny widget BERT' });
      const detail = await drawn;
      let refused = null;
      try {
        await el.openModel(files.filter((f) => f.name !== 'tokenizer.json'));
      } catch (e) {
        refused = e.message;
      }
      return { report, model: detail.model, tokens: detail.tokens, refused, still: el.viewState.model };
    }, list);
    assert.equal(out.report.layers, 2);
    assert.equal(out.report.heads, 4);
    assert.equal(out.model, 'own-tiny-widget-bert');
    assert.deepEqual(out.tokens, cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source);
    assert.match(out.refused, /tokenizer\.json/);
    assert.equal(out.still, 'own-tiny-widget-bert');
    // A kept model's id works as the model attribute of another widget.
    const other = await page.evaluate(() => new Promise((resolve) => {
      const v = document.createElement('attention-viz');
      v.setAttribute('model', 'own-tiny-widget-bert');
      v.setAttribute('text', 'A dog ran.');
      v.addEventListener('attention-ready', (e) => resolve(e.detail));
      v.addEventListener('attention-error', (e) => resolve(e.detail));
      document.body.appendChild(v);
    }));
    assert.equal(other.model, 'own-tiny-widget-bert', JSON.stringify(other));
    assert.deepEqual(other.tokens, ['[CLS]', 'a', 'dog', 'ran', '.', '[SEP]']);
    await page.evaluate(() => document.getElementById('w').removeModel('own-tiny-widget-bert'));
    await page.waitForFunction(() => document.getElementById('w').viewState.model === 'minilm-l6');
  } finally {
    await w.close();
  }
});

// Issue 21, item 19: a checkpoint sharded over several safetensors files opens as one model; an
// empty folder, a folder with only a PyTorch pickle and one missing a shard each say what is
// wrong (they did nothing, or gave a generic message), and the model in use stays.
test('a sharded checkpoint opens as one model; an empty folder, a pytorch_model.bin folder and a missing shard are named', async () => {
  const bad = mkdtempSync(path.join(tmpdir(), 'attnviz-bad-'));
  try {
    const empty = path.join(bad, 'empty-folder');
    mkdirSync(empty);
    const pytorch = path.join(bad, 'bert-pytorch');
    mkdirSync(pytorch);
    for (const n of ['config.json', 'tokenizer.json']) copyFileSync(path.join(dir, 'tiny-bert', n), path.join(pytorch, n));
    writeFileSync(path.join(pytorch, 'pytorch_model.bin'), Buffer.alloc(1024));
    const halfShards = path.join(bad, 'half-shards');
    mkdirSync(halfShards);
    for (const n of ['config.json', 'tokenizer.json', 'model-00001-of-00002.safetensors', 'model.safetensors.index.json']) copyFileSync(path.join(dir, 'tiny-bert-sharded', n), path.join(halfShards, n));

    await onPage(async (page) => {
      await waitModel(page, 'minilm-l6');
      const notice = (re) => page.waitForFunction((src) => new RegExp(src).test(document.getElementById('notice').textContent), re.source, { timeout: 30_000 })
        .catch(async () => assert.fail(`the notice says "${(await seen(page)).notice}", not ${re}`));
      await page.click('#open-model');
      await page.setInputFiles('#open-folder', empty);
      await notice(/^Nothing to open: no files: the folder is empty/);
      await page.setInputFiles('#open-folder', pytorch);
      await notice(/Could not open “bert-pytorch”: .*pytorch_model\.bin \(a PyTorch pickle\)/);
      await page.setInputFiles('#open-folder', halfShards);
      await notice(/Could not open “half-shards”: .*sharded over 2 files and 1 of them is missing: model-00002-of-00002\.safetensors/);
      assert.equal((await seen(page)).model, 'minilm-l6', 'a refused folder replaced the model in use');
      const before = (await seen(page)).draws;
      await page.setInputFiles('#open-folder', path.join(dir, 'tiny-bert-sharded'));
      await waitModel(page, 'own-tiny-bert-sharded', before);
      await notice(/^Opened “tiny-bert-sharded”: BERT encoder, safetensors F32 in 2 shards/);
      await typeText(page, TEXT);
      const want = cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source;
      assert.deepEqual((await seen(page)).tokens, want);
    });
  } finally {
    rmSync(bad, { recursive: true, force: true });
  }
});
