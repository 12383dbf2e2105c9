// The wasm builds (www/worker/wasm-build.js, `make build`): Chromium validates relaxed SIMD, so with
// fewer than 4 cores (too few for a default pool: one core stays with the page) the page loads
// pkg/relaxed/ and its status line says "wasm relaxed SIMD"; from 4 cores on, cross-origin
// isolated (the test server, `attnviz serve`, makes it so), it loads pkg/threads/ on cores − 1 threads
// (at most 4). A browser without relaxed SIMD loads pkg/ ("wasm SIMD"), as does ?build=simd;
// ?build=relaxed loads pkg/relaxed/ whatever the cores; ?build=threads loads pkg/threads/ on every
// core (2 at least, 4 at most). The expectations are computed from the cores the page sees
// (navigator.hardwareConcurrency), and 4 cores are also emulated. All draw the same attention
// weights within 1e-5 (threads vs relaxed: identical).
// A browser without relaxed SIMD is emulated where the page decides: its WebAssembly.validate
// answers false (the worker loads whatever the page picked: the worker-client sends the pick).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser } from '../e2e/harness.mjs';

let server;
let browser;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
});

/** Open the page (with `search`, as a browser without relaxed SIMD, or as one that reports
 *  `cores` cores) → its build, status line, drawn attentions, wasm files fetched, and what the page
 *  saw: cores and cross-origin isolation. */
async function visit({ search = '', noRelaxed = false, cores = null } = {}) {
  const wasmFetched = [];
  const app = await openApp(browser, `${server.url}${search}`, {
    onContext(context) {
      context.on('request', (req) => {
        if (req.url().endsWith('.wasm')) wasmFetched.push(new URL(req.url()).pathname);
      });
      if (noRelaxed) context.addInitScript(() => {
        WebAssembly.validate = () => false;
      });
      if (cores) context.addInitScript((n) => {
        Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => n });
      }, cores);
    },
  });
  try {
    await app.page.waitForFunction(() => window.attnvizDebug.drawCount > 0 && window.attnvizDebug.attentions());
    const seen = await app.page.evaluate(() => ({
      build: window.attnvizDebug.build,
      status: document.getElementById('build').textContent,
      text: window.attnvizDebug.text,
      attentions: window.attnvizDebug.attentions(),
      cores: navigator.hardwareConcurrency,
      isolated: crossOriginIsolated && typeof SharedArrayBuffer === 'function',
    }));
    assert.deepEqual(app.pageErrors, []);
    return { ...seen, wasmFetched };
  } finally {
    await app.close();
  }
}

function maxDiff(a, b) {
  assert.equal(a.length, b.length, 'the same attention blocks');
  let worst = 0;
  for (let k = 0; k < a.length; k++) {
    assert.equal(a[k].kind, b[k].kind);
    assert.equal(a[k].data.length, b[k].data.length);
    for (let i = 0; i < a[k].data.length; i++) worst = Math.max(worst, Math.abs(a[k].data[i] - b[k].data[i]));
  }
  return worst;
}

/** What the page loads by default (README, www/worker/wasm-build.js): the threads build from 4 cores
 *  on where the page is cross-origin isolated, on all cores but one (4 at most), else relaxed. */
const defaultBuild = ({ cores, isolated }) => (isolated && cores >= 4 ? { id: 'threads', threads: Math.min(4, cores - 1) } : { id: 'relaxed' });

test('Chromium loads the build its cores call for (relaxed SIMD under 4 cores, threads from 4), says so', async () => {
  for (const cores of [null, 2, 4]) {
    const seen = await visit({ cores });
    const want = defaultBuild(seen);
    assert.equal(seen.build.id, want.id, `${seen.cores} cores, isolated ${seen.isolated}: ${JSON.stringify(seen.build)}`);
    if (want.id === 'threads') {
      assert.equal(seen.build.threads, want.threads, `${seen.cores} cores: ${JSON.stringify(seen.build)}`);
      assert.match(seen.status, new RegExp(`· wasm relaxed SIMD, ${want.threads} threads \\(pkg/threads/\\) ·`));
    } else {
      assert.equal(seen.build.dir, 'pkg/relaxed/');
      assert.match(seen.status, /· wasm relaxed SIMD \(pkg\/relaxed\/\) ·/);
    }
    if (cores) assert.equal(seen.cores, cores, 'the emulated core count');
  }
});

test('?build=relaxed loads the relaxed-SIMD build, says so, and draws what the plain build draws within 1e-5', async (t) => {
  const relaxed = await visit({ search: '?build=relaxed' });
  assert.equal(relaxed.build.id, 'relaxed', JSON.stringify(relaxed.build));
  assert.equal(relaxed.build.relaxed_simd, true, 'the wasm in pkg/relaxed/ was built with +relaxed-simd');
  assert.equal(relaxed.build.dir, 'pkg/relaxed/');
  assert.match(relaxed.status, /· wasm relaxed SIMD \(pkg\/relaxed\/\) ·/);
  assert.ok(relaxed.wasmFetched.length > 0 && relaxed.wasmFetched.every((p) => p.endsWith('/pkg/relaxed/attnviz_bg.wasm')), `wasm fetched: ${relaxed.wasmFetched}`);

  const fallback = await visit({ noRelaxed: true });
  assert.equal(fallback.build.id, 'simd', JSON.stringify(fallback.build));
  assert.equal(fallback.build.relaxed_simd, false);
  assert.equal(fallback.build.dir, 'pkg/');
  assert.match(fallback.status, /· wasm SIMD \(pkg\/\) ·/);
  assert.ok(fallback.wasmFetched.length > 0 && fallback.wasmFetched.every((p) => p.endsWith('/pkg/attnviz_bg.wasm') && !p.includes('relaxed')), `wasm fetched: ${fallback.wasmFetched}`);

  assert.equal(fallback.text, relaxed.text);
  const worst = maxDiff(relaxed.attentions, fallback.attentions);
  assert.ok(worst <= 1e-5, `relaxed vs plain: max abs diff ${worst}`);
  t.diagnostic(`relaxed vs plain build, default text: max abs attention difference ${worst.toExponential(2)}`);
});

test('?build=threads on an isolated page loads the shared-memory build, runs its GEMMs on every core (2 at least) and draws exactly what the one-thread relaxed build draws', async (t) => {
  const threads = await visit({ search: '?build=threads' });
  assert.ok(threads.isolated, 'attnviz serve makes the page cross-origin isolated');
  const n = Math.min(4, Math.max(2, threads.cores));
  assert.equal(threads.build.id, 'threads', JSON.stringify(threads.build));
  assert.equal(threads.build.threads, n, `${n - 1} helper workers joined the pool (${threads.cores} cores)`);
  assert.equal(threads.build.relaxed_simd, true);
  assert.equal(threads.build.dir, 'pkg/threads/');
  assert.match(threads.status, new RegExp(`· wasm relaxed SIMD, ${n} threads \\(pkg/threads/\\) ·`));
  assert.ok(threads.wasmFetched.some((p) => p.endsWith('/pkg/threads/attnviz_bg.wasm')), `wasm fetched: ${threads.wasmFetched}`);
  const relaxed = await visit({ search: '?build=relaxed' });
  assert.equal(relaxed.build.id, 'relaxed');
  assert.equal(threads.text, relaxed.text);
  const worst = maxDiff(threads.attentions, relaxed.attentions);
  assert.equal(worst, 0, `threads vs relaxed: max abs diff ${worst}`);
  t.diagnostic(`${n} threads vs the one-thread relaxed build: identical attention weights`);
});

test('?build=simd loads the plain build where relaxed SIMD validates', async () => {
  const plain = await visit({ search: '?build=simd' });
  assert.equal(plain.build.id, 'simd', JSON.stringify(plain.build));
  assert.match(plain.status, /· wasm SIMD \(pkg\/\) ·/);
  assert.ok(plain.wasmFetched.every((p) => !p.includes('relaxed')), `wasm fetched: ${plain.wasmFetched}`);
});
