// A first visit downloads at most 25 MB before the first map (issue 10): MiniLM's int8 weights by
// default (23.0 MB, gzip 21.1 MB), the f32 file only when "exact weights" is ticked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstVisitBytes, useServerAndBrowser } from './harness.mjs';

const BUDGET_BYTES = 25e6;
let server;
let browser;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
});

test('bytes to first map: a first visit loads int8 MiniLM and stays within 25 MB', async (t) => {
  const { total, files, app } = await firstVisitBytes(browser, server.url);
  try {
    const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;
    t.diagnostic(`bytes to first map: ${mb(total)} in ${files.length} responses; largest: ${files.slice(0, 5).map(([p, n]) => `${p} ${mb(n)}`).join(', ')}`);
    const paths = files.map(([p]) => p);
    assert.ok(paths.some((p) => p.endsWith('/minilm/model.int8.safetensors')), 'the int8 weights were fetched');
    assert.ok(!paths.some((p) => p.endsWith('/minilm/model.safetensors')), 'the f32 weights were not fetched');
    assert.ok(total <= BUDGET_BYTES, `${mb(total)} before the first map, more than ${mb(BUDGET_BYTES)}`);
    assert.match(await app.page.textContent('#status'), /int8 weights/);
    assert.deepEqual(app.pageErrors, []);
    assert.deepEqual(app.failedRequests, []);

    // One click away: the exact (f32) weights, and the status line says which are loaded.
    const f32 = app.page.waitForResponse((r) => r.url().endsWith('/minilm/model.safetensors'), { timeout: 120_000 });
    await app.page.check('#exact');
    await f32;
    await app.page.waitForFunction(() => /exact f32 weights/.test(document.getElementById('status').textContent), null, { timeout: 120_000 });
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
