// Models by Hugging Face Hub id (issue 24), against a local server with the Hub's URL layout
// (hub-server.mjs: its redirects, Range answers and refusals; no machine here reaches the real
// Hub). The page's "Open from the Hugging Face Hub" and a permalink's m=hf:… fetch a repo's
// headers first (Range requests: the architecture is checked before any weights), then its files,
// draw them with the CLI's tokens, keep them for the next visit, and say why a repo cannot be
// opened (no such repo, gated, no such revision) while the model in use stays. A widget on another
// page takes model="hf:…" with data-hub on its script tag.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApp, useServerAndBrowser } from './harness.mjs';
import { cliJson } from './cli-helpers.mjs';
import { startHub } from './hub-server.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TEXT = 'The cat sat on the mat.';
// SmolLM2's GGUF, served by two repos (one of them stalls its header read after 1 MiB), and why
// that one is given up at hubTimeout=2.
const GGUF = 'SmolLM2-135M-Instruct.Q4_1.gguf';
const HEAD_STALLED = new RegExp(`${GGUF.replace(/\./g, '\\.')}: stalled, no bytes for 2 s after 1048576 of 33554432 bytes`);
let server;
let browser;
let dir;
let hub;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
});
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'attnviz-hub-'));
  execFileSync(path.join(ROOT, '.venv/bin/python'), [path.join(ROOT, 'scripts/tiny_models.py'), '--out', dir]);
  hub = await startHub(
    {
      'attnviz-test/tiny-bert': path.join(dir, 'tiny-bert'),
      'attnviz-test/tiny-bert-sharded': path.join(dir, 'tiny-bert-sharded'),
      'attnviz-test/silent': path.join(dir, 'tiny-bert'),
      'attnviz-test/silent-widget': path.join(dir, 'tiny-bert'),
      'attnviz-test/stalling': path.join(dir, 'tiny-bert'),
      'attnviz-test/stalling-gguf': path.join(ROOT, 'models/smollm2'),
      'sentence-transformers/all-MiniLM-L6-v2': path.join(ROOT, 'models/minilm'),
      'HuggingFaceTB/SmolLM2-135M-Instruct-GGUF': path.join(ROOT, 'models/smollm2'),
    },
    { gated: ['attnviz-test/gated'], silent: ['attnviz-test/silent', 'attnviz-test/silent-widget'], stalling: ['attnviz-test/stalling'], stallingHead: ['attnviz-test/stalling-gguf'] },
  );
});
after(async () => {
  if (hub) await hub.close();
  rmSync(dir, { recursive: true, force: true });
});

const seen = (page) => page.evaluate(() => ({ model: window.attnvizDebug.modelId, text: window.attnvizDebug.text, tokens: window.attnvizDebug.tokens, draws: window.attnvizDebug.drawCount, notice: document.getElementById('notice').textContent, hash: location.hash }));

function waitModel(page, id, after = 0) {
  return page.waitForFunction(([m, n]) => window.attnvizDebug.modelId === m && window.attnvizDebug.drawCount > n && !window.attnvizDebug.drawing, [id, after], { timeout: 60_000 });
}

async function openFromHub(page, repo, { revision = '', file = '' } = {}) {
  await page.click('#open-model');
  await page.fill('#hub-repo', repo);
  await page.fill('#hub-revision', revision);
  await page.fill('#hub-file', file);
  await page.click('#hub-form button[type="submit"]');
}

/** The hub's requests for one repo's file since `from`: [{ path, range }] (the CDN path too). */
const asked = (from, repo, file) => hub.requests.slice(from).filter((r) => r.path.endsWith(`${repo}/${file}`) || r.path.endsWith(`/${repo}/resolve/main/${file}`));

test('page: a Hub repo by id draws with its own tokens, its headers read before its weights, kept for the next visit', async () => {
  const app = await openApp(browser, `${server.url}?hub=${encodeURIComponent(hub.url)}#t=${encodeURIComponent(TEXT)}`);
  const { page } = app;
  try {
    const want = cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source;
    const from = hub.requests.length;
    const n = (await seen(page)).draws;
    await openFromHub(page, 'attnviz-test/tiny-bert');
    await waitModel(page, 'hf:attnviz-test/tiny-bert', n);
    let s = await seen(page);
    assert.deepEqual(s.tokens, want);
    assert.equal(s.text, TEXT, 'the text typed stays');
    assert.match(s.notice, /Opened “hf:attnviz-test\/tiny-bert”: BERT encoder, safetensors F32: 2 layers × 4 heads/);
    assert.match(s.notice, /Kept in this browser/);
    assert.match(decodeURIComponent(s.hash), /m=hf:attnviz-test\/tiny-bert(&|$)/, 'the permalink names the Hub id');
    // Headers first: Range requests of the weights' first bytes (inspectModel before the
    // download), then the rest of the file from where the header ended: no byte fetched twice.
    const weights = asked(from, 'attnviz-test/tiny-bert', 'model.safetensors');
    assert.ok(weights.some((r) => r.path.startsWith('/cdn/')), 'the weights were fetched through the Hub’s redirect');
    const ranges = weights.filter((r) => r.path.startsWith('/cdn/')).map((r) => /^bytes=(\d+)-(\d+)$/.exec(r.range || '')?.slice(1).map(Number));
    assert.ok(ranges.length >= 3 && ranges.every(Boolean), `ranges only: ${JSON.stringify(weights)}`);
    const [restFrom, restTo] = ranges.at(-1);
    const size = statSync(path.join(dir, 'tiny-bert', 'model.safetensors')).size;
    assert.deepEqual([restFrom, restTo], [Math.max(...ranges.slice(0, -1).map(([, to]) => to)) + 1, size - 1], `the rest after the header: ${JSON.stringify(weights)}`);

    // The next visit: the permalink finds the model kept (no weights fetched again).
    const again = hub.requests.length;
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    await waitModel(page, 'hf:attnviz-test/tiny-bert');
    s = await seen(page);
    assert.deepEqual(s.tokens, want);
    assert.deepEqual(hub.requests.slice(again).filter((r) => !r.range), [], 'nothing downloaded again');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: a permalink naming a sharded Hub repo opens it; a gated, missing or unknown-revision repo is refused with why, and the model in use stays; a GGUF repo opens with its file named; a repo’s pasted URL names repo, revision and file', async () => {
  const app = await openApp(browser, `${server.url}?hub=${encodeURIComponent(hub.url)}#m=${encodeURIComponent('hf:attnviz-test/tiny-bert-sharded')}&t=${encodeURIComponent(TEXT)}`);
  const { page } = app;
  try {
    await waitModel(page, 'hf:attnviz-test/tiny-bert-sharded');
    let s = await seen(page);
    assert.deepEqual(s.tokens, cliJson('attend', '--model', path.join(dir, 'tiny-bert-sharded'), '--text', TEXT).tokens.source);
    for (const [repo, opts, why] of [
      ['attnviz-test/gated', {}, /attnviz-test\/gated@main\/config\.json: the repo is gated/],
      ['attnviz-test/nope', {}, /attnviz-test\/nope@main\/config\.json: no such repo, or a private one \(HTTP 401\)/],
      ['attnviz-test/tiny-bert', { revision: 'v9' }, /attnviz-test\/tiny-bert@v9\/config\.json: the repo has no revision by that name/],
      // A repo's URL pasted from the Hub's address bar: its revision is read from it.
      ['https://huggingface.co/attnviz-test/tiny-bert/tree/v8', {}, /attnviz-test\/tiny-bert@v8\/config\.json: the repo has no revision by that name/],
      ['attnviz-test/tiny-bert', { file: 'missing.gguf' }, /attnviz-test\/tiny-bert@main\/missing\.gguf: not in the repo \(HTTP 404\)/],
      ['not a repo', {}, /is not a Hub model id/],
    ]) {
      await openFromHub(page, repo, opts);
      await page.waitForFunction((re) => new RegExp(re).test(document.getElementById('notice').textContent), why.source, { timeout: 30_000 });
      s = await seen(page);
      assert.equal(s.model, 'hf:attnviz-test/tiny-bert-sharded', `${repo}: the model in use stays`);
    }
    // A GGUF repo: the file named, here by the file's URL pasted from the Hub.
    const n = (await seen(page)).draws;
    const ggufFrom = hub.requests.length;
    await openFromHub(page, `https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/blob/main/${GGUF}`);
    await waitModel(page, `hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF?file=${GGUF}`, n);
    s = await seen(page);
    assert.deepEqual(s.tokens, cliJson('attend', '--model', path.join(ROOT, 'models/smollm2'), '--text', s.text).tokens.source);
    assert.match(s.notice, /Llama decoder, gguf/i);
    // Its header (the first 32 MiB) was read to inspect it, and not fetched again with the rest.
    const size = statSync(path.join(ROOT, 'models/smollm2', GGUF)).size;
    // (Each download is the Hub's redirect, then the CDN's bytes: the latter are counted.)
    const fetched = asked(ggufFrom, 'HuggingFaceTB/SmolLM2-135M-Instruct-GGUF', GGUF).filter((r) => r.path.startsWith('/cdn/')).reduce((sum, r) => {
      const m = /^bytes=(\d+)-(\d*)$/.exec(r.range || '');
      return sum + (!m ? size : (m[2] ? Number(m[2]) : size - 1) - Number(m[1]) + 1);
    }, 0);
    assert.ok(fetched <= size + 1024, `${fetched} bytes fetched for a ${size}-byte file`);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

/** A widget (#w) for Hub id `model` in a page of the server's origin, its script tag carrying
 *  `data` (data-hub=… and the like) → its first drawing { tokens, model } or error { error }. */
function mountHubWidget(page, model, data) {
  return page.evaluate(([base, id, text, dataset]) => new Promise((resolve) => {
    const w = document.createElement('attention-viz');
    w.id = 'w';
    w.setAttribute('model', id);
    w.setAttribute('text', text);
    w.addEventListener('attention-ready', (e) => resolve({ tokens: e.detail.tokens, model: e.detail.model }), { once: true });
    w.addEventListener('attention-error', (e) => resolve({ error: e.detail.message }), { once: true });
    document.body.appendChild(w);
    const s = document.createElement('script');
    s.type = 'module';
    s.src = `${base}attention-viz.js`;
    Object.assign(s.dataset, dataset);
    document.body.appendChild(s);
  }), [server.url, model, TEXT, data]);
}

test('widget: model="hf:…" with data-hub on the script tag draws the Hub repo with the CLI’s tokens', async () => {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}models/index.json`); // a host page of this origin with no CSP of ours
    const ready = await mountHubWidget(page, 'hf:sentence-transformers/all-MiniLM-L6-v2', { hub: hub.url });
    assert.equal(ready.error, undefined, ready.error);
    assert.equal(ready.model, 'hf:sentence-transformers/all-MiniLM-L6-v2');
    assert.deepEqual(ready.tokens, cliJson('attend', '--model', path.join(ROOT, 'models/minilm'), '--text', TEXT).tokens.source);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('page: a Hub that does not answer, or stops sending, is given up after ?hubTimeout= seconds with why and a Retry button; the model in use stays; Retry opens it once the Hub answers', async () => {
  const app = await openApp(browser, `${server.url}?hub=${encodeURIComponent(hub.url)}&hubTimeout=2#t=${encodeURIComponent(TEXT)}`);
  const { page } = app;
  try {
    for (const [repo, why] of [
      ['attnviz-test/silent', /attnviz-test\/silent@main\/config\.json: no answer from http:\/\/127\.0\.0\.1:\d+ within 2 s \(a slow or stalled network\)/],
      ['attnviz-test/stalling', /attnviz-test\/stalling@main\/model\.safetensors: stalled, no bytes for 2 s after 100 of \d+ bytes/],
    ]) {
      await openFromHub(page, repo);
      await page.waitForFunction((re) => new RegExp(re).test(document.getElementById('notice').textContent), why.source, { timeout: 30_000 }).catch(async (e) => {
        throw new Error(`${e.message}; the notice: ${await page.textContent('#notice')}; requests: ${JSON.stringify(hub.requests.filter((r) => r.path.includes(repo)))}`);
      });
      assert.ok(await page.isVisible('#retry'), `${repo}: Retry is offered`);
      let s = await seen(page);
      assert.equal(s.model, 'minilm-l6', `${repo}: the model in use stays`);
      // ...and works: typing redraws it.
      await page.fill('#text', 'A dog ran.');
      await page.waitForFunction(() => window.attnvizDebug.text === 'A dog ran.' && !window.attnvizDebug.drawing);
      assert.deepEqual((await seen(page)).tokens, ['[CLS]', 'a', 'dog', 'ran', '.', '[SEP]']);
      // The Hub answers again: Retry opens the repo.
      hub.release(repo);
      const n = (await seen(page)).draws;
      await page.click('#retry');
      await waitModel(page, `hf:${repo}`, n);
      s = await seen(page);
      assert.deepEqual(s.tokens, cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', 'A dog ran.').tokens.source);
      assert.ok(!(await page.isVisible('#retry')), 'no Retry once it opened');
      await page.selectOption('#model', 'minilm-l6');
      await waitModel(page, 'minilm-l6');
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: a GGUF’s header read (its first 32 MiB) shows the file and its bytes as they come, and when they stop it is given up with why and a Retry button', { timeout: 120_000 }, async () => {
  const app = await openApp(browser, `${server.url}?hub=${encodeURIComponent(hub.url)}&hubTimeout=2#t=${encodeURIComponent(TEXT)}`);
  const { page } = app;
  try {
    // Every text the progress line shows, as it changes.
    await page.evaluate(() => {
      window.progressSeen = [];
      const el = document.getElementById('progress-text');
      new MutationObserver(() => window.progressSeen.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await openFromHub(page, 'attnviz-test/stalling-gguf', { file: GGUF });
    await page.waitForFunction((re) => new RegExp(re).test(document.getElementById('notice').textContent), `attnviz-test/stalling-gguf@main/${HEAD_STALLED.source}`, { timeout: 30_000 }).catch(async (e) => {
      throw new Error(`${e.message}; the notice: ${await page.textContent('#notice')}`);
    });
    assert.ok((await page.evaluate(() => window.progressSeen)).includes(`${GGUF}'s header: 1.0 MiB / 32.0 MiB`), `the header's progress was shown: ${JSON.stringify(await page.evaluate(() => window.progressSeen))}`);
    assert.ok(await page.isVisible('#retry'), 'Retry is offered');
    assert.equal((await seen(page)).model, 'minilm-l6', 'the model in use stays');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: a GGUF’s header read says the file and its bytes in place of the map, and when they stop, why', { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${server.url}models/index.json`); // a host page of this origin with no CSP of ours
    // Every message the widget shows, sampled every 20 ms from before it starts.
    await page.evaluate(() => {
      window.msgSeen = [];
      setInterval(() => {
        const msg = document.getElementById('w')?.shadowRoot?.querySelector('.msg')?.textContent;
        if (msg && msg !== window.msgSeen.at(-1)) window.msgSeen.push(msg);
      }, 20);
    });
    const failed = await mountHubWidget(page, `hf:attnviz-test/stalling-gguf?file=${GGUF}`, { hub: hub.url, hubTimeout: '2' });
    assert.match(failed.error, HEAD_STALLED);
    const seenMsgs = await page.evaluate(() => window.msgSeen);
    assert.ok(seenMsgs.some((m) => m.startsWith(`Reading ${GGUF}'s header: 1.0 MiB / 32.0 MiB…`)), JSON.stringify(seenMsgs));
  } finally {
    await context.close();
  }
});

test('widget: a Hub that does not answer within data-hub-timeout is said in place of the map with a Retry button, which draws the repo once the Hub answers', async () => {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${server.url}models/index.json`); // a host page of this origin with no CSP of ours
    const failed = await mountHubWidget(page, 'hf:attnviz-test/silent-widget', { hub: hub.url, hubTimeout: '2' });
    assert.match(failed.error, /attnviz-test\/silent-widget@main\/config\.json: no answer from .* within 2 s/);
    const retry = page.locator('#w').getByRole('button', { name: 'Retry' });
    assert.ok(await retry.isVisible(), 'Retry is offered');
    hub.release('attnviz-test/silent-widget');
    const drawn = page.evaluate(() => new Promise((resolve) => document.getElementById('w').addEventListener('attention-change', (e) => resolve({ tokens: e.detail.tokens, model: e.detail.model }), { once: true })));
    await retry.click();
    const ready = await drawn;
    assert.equal(ready.model, 'hf:attnviz-test/silent-widget');
    assert.deepEqual(ready.tokens, cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source);
    assert.ok(!(await retry.isVisible()), 'no Retry once drawn');
  } finally {
    await context.close();
  }
});
