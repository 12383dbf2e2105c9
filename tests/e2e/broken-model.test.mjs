// Issue 44, item 2: a model that passes the checks but fails its first forward. MiniLM's own
// folder made broken two ways a careless uploader would: weights that overflow (a query matrix of
// 3e38: the attention is NaN) and a tokenizer whose ids go past the embedding's rows. The page
// said "Opened … kept in this browser", named the broken model in the picker and kept the old
// map while typing changed nothing. Now each is refused with the reason, the model in use stays
// selected and working, the permalink names it, and nothing is kept in the browser's store
// (IndexedDB here: OPFS is taken away, as own-model.test.mjs does).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApp, useServerAndBrowser } from './harness.mjs';

const MINILM = fileURLToPath(new URL('../../models/minilm/', import.meta.url));
let server;
let browser;
let dir;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true }); // setInputFiles hands a 91 MB file over

/** MiniLM's folder with its `layer`'s query weights all 3e38 (a float32 that overflows once summed). */
function overflowing(out) {
  const bytes = readFileSync(path.join(MINILM, 'model.safetensors'));
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString());
  const [from, to] = header['encoder.layer.0.attention.self.query.weight'].data_offsets;
  const data = new Float32Array(bytes.buffer, bytes.byteOffset + 8 + n + from, (to - from) / 4);
  data.fill(3e38);
  mkdirSync(out);
  writeFileSync(path.join(out, 'model.safetensors'), bytes);
  writeFileSync(path.join(out, 'config.json'), readFileSync(path.join(MINILM, 'config.json')));
  writeFileSync(path.join(out, 'tokenizer.json'), readFileSync(path.join(MINILM, 'tokenizer.json')));
}

/** MiniLM's folder with every token id moved past its 30,522 embedding rows. */
function idsPastEmbedding(out) {
  const shift = 30522;
  const t = JSON.parse(readFileSync(path.join(MINILM, 'tokenizer.json'), 'utf8'));
  for (const k of Object.keys(t.model.vocab)) t.model.vocab[k] += shift;
  for (const a of t.added_tokens) a.id += shift;
  for (const s of Object.values(t.post_processor.special_tokens || {})) s.ids = s.ids.map((i) => i + shift);
  mkdirSync(out);
  writeFileSync(path.join(out, 'tokenizer.json'), JSON.stringify(t));
  writeFileSync(path.join(out, 'config.json'), readFileSync(path.join(MINILM, 'config.json')));
  writeFileSync(path.join(out, 'model.safetensors'), readFileSync(path.join(MINILM, 'model.safetensors')));
}

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'attnviz-broken-'));
  overflowing(path.join(dir, 'overflowing-bert'));
  idsPastEmbedding(path.join(dir, 'ids-past-embedding'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

// The worker keeps models; an init script does not reach it, so its script is served with the
// same line first (own-model.test.mjs's way; the service worker would answer before the route).
const NO_OPFS = 'delete StorageManager.prototype.getDirectory;';
const withoutOpfs = {
  contextOptions: { serviceWorkers: 'block' },
  onContext: async (context) => {
    await context.addInitScript(NO_OPFS);
    await context.route(/\/worker\.js(\?|$)/, async (route) => {
      const res = await route.fetch();
      await route.fulfill({ response: res, body: `${NO_OPFS}\n${await res.text()}` });
    });
  },
};

const seen = (page) => page.evaluate(() => ({
  model: window.attnvizDebug.modelId,
  tokens: window.attnvizDebug.tokens,
  draws: window.attnvizDebug.drawCount,
  notice: document.getElementById('notice').textContent,
  picked: document.getElementById('model').value,
  picker: [...document.querySelectorAll('#model option')].map((o) => o.value),
  hash: location.hash,
}));

/** The models kept in the worker's IndexedDB store (none when it was never made). */
const keptInIndexedDb = (page) => page.evaluate(async () => {
  if (!(await indexedDB.databases()).some((d) => d.name === 'attnviz-models')) return [];
  const db = await new Promise((resolve, reject) => {
    const req = indexedDB.open('attnviz-models');
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  try {
    if (!db.objectStoreNames.contains('manifests')) return [];
    return await new Promise((resolve, reject) => {
      const req = db.transaction('manifests').objectStore('manifests').getAllKeys();
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  } finally {
    db.close();
  }
});

test('a model that passes the checks but fails its first forward is refused with why; the model in use stays selected, working and in the permalink, and nothing is kept', { timeout: 600_000 }, async () => {
  const app = await openApp(browser, server.url, withoutOpfs);
  try {
    const { page } = app;
    assert.equal(await page.evaluate(() => 'getDirectory' in navigator.storage), false, 'no OPFS in the page');
    const first = await seen(page);
    assert.equal(first.model, 'minilm-l6');
    const cases = [
      ['overflowing-bert', /^Could not open “overflowing-bert”: .*first forward fails: .*NaN or infinite.*overflow/],
      ['ids-past-embedding', /^Could not open “ids-past-embedding”: .*first forward fails: .*id \d+ outside the vocabulary \(30522\)/],
    ];
    await page.click('#open-model');
    for (const [name, message] of cases) {
      const before = await seen(page);
      await page.setInputFiles('#open-folder', path.join(dir, name));
      await page.waitForFunction(() => /^(Could not open|Opened)/.test(document.getElementById('notice').textContent), null, { timeout: 120_000 });
      const s = await seen(page);
      assert.match(s.notice, message, name);
      assert.deepEqual(s.picker, before.picker, `${name}: the picker offers nothing new`);
      assert.equal(s.picked, 'minilm-l6', `${name}: the picker still names the model in use`);
      assert.equal(new URLSearchParams(s.hash.slice(1)).get('m'), 'minilm-l6', `${name}: so does the permalink`);
      const text = `Still working after the ${name.replace(/-/g, ' ')}.`;
      await page.fill('#text', text);
      await page.waitForFunction(([t, n]) => window.attnvizDebug.text === t && window.attnvizDebug.drawCount > n && !window.attnvizDebug.drawing, [text, s.draws], { timeout: 60_000 });
      const after = await seen(page);
      assert.equal(after.model, 'minilm-l6', `${name}: the model in use draws`);
      assert.ok(after.tokens.includes('working'), `${name}: the text typed is drawn: ${after.tokens}`);
    }
    assert.deepEqual(await keptInIndexedDb(page), [], 'nothing is kept in the browser’s store');
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    assert.ok(!(await seen(page)).picker.some((id) => id.startsWith('own-')), 'nor offered after a reload');

    // The first forward lets a sound model through: MiniLM's folder as published opens and is kept.
    const n = (await seen(page)).draws;
    await page.click('#open-model');
    await page.setInputFiles('#open-files', ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => path.join(MINILM, f)));
    await page.waitForFunction((c) => String(window.attnvizDebug.modelId).startsWith('own-') && window.attnvizDebug.drawCount > c && !window.attnvizDebug.drawing, n, { timeout: 120_000 });
    // Files picked one by one are named from their config.json (_name_or_path), not “my model”.
    assert.match((await seen(page)).notice, /^Opened “MiniLM-L6-H384-uncased”: BERT encoder.*Kept in this browser/);
    assert.equal((await keptInIndexedDb(page)).length, 1, 'kept in IndexedDB');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
