// A first visit downloads at most 25 MB before the first map (issue 10): MiniLM's int8 weights
// (23.0 MB, brotli 21 MB). Then the exact f32 weights load in the background and the maps switch
// to them (issue 26): the settled page draws the model's own numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstVisitBytes, useServerAndBrowser } from './harness.mjs';
import { cliJson } from './cli-helpers.mjs';

const BUDGET_BYTES = 25e6;
const TEXT = "The animal didn't cross the street because it was too tired.";
let server;
let browser;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
});

/** The largest |Δ| between the page's drawn attention (attnvizDebug.attentions()) and a CLI answer's. */
function maxDiff(drawn, cli) {
  let worst = 0;
  assert.equal(drawn.length, cli.attentions.length, 'as many attention blocks as the CLI');
  for (const [k, b] of cli.attentions.entries()) {
    const d = drawn[k];
    assert.equal(d.kind, b.kind);
    const flat = b.data.flat(3);
    assert.equal(d.data.length, flat.length, `block ${b.kind} ${b.layer}: ${d.data.length} vs ${flat.length} weights`);
    for (let i = 0; i < flat.length; i++) worst = Math.max(worst, Math.abs(d.data[i] - flat[i]));
  }
  return worst;
}

test('first visit: the first map from int8 weights within 25 MB, then the exact f32 weights in the background: maps within 1e-3 of the CLI’s f32 numbers, and the status says which drew them', async (t) => {
  const t0 = Date.now();
  const { total, files, app, more } = await firstVisitBytes(browser, server.url);
  const tFirst = Date.now() - t0;
  const { page } = app;
  try {
    const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;
    t.diagnostic(`bytes to first map: ${mb(total)} in ${files.length} responses, ${tFirst} ms; largest: ${files.slice(0, 5).map(([p, n]) => `${p} ${mb(n)}`).join(', ')}`);
    const paths = files.map(([p]) => p);
    assert.ok(paths.some((p) => p.endsWith('/minilm/model.int8.safetensors')), 'the int8 weights were fetched');
    assert.ok(!paths.some((p) => p.endsWith('/minilm/model.safetensors')), 'the f32 weights were not fetched before the first map');
    assert.ok(total <= BUDGET_BYTES, `${mb(total)} before the first map, more than ${mb(BUDGET_BYTES)}`);
    // The first map is int8's, and the status line says the exact weights are on their way.
    assert.match(await page.textContent('#status'), /int8 weights \(exact f32 weights loading: /);
    const int8Map = await page.evaluate(() => window.attnvizDebug.attentions());
    const f32 = cliJson('attend', '--model', 'models/minilm', '--text', TEXT);
    const int8 = cliJson('attend', '--model', 'models/minilm', '--text', TEXT, '--weights', 'int8');
    assert.ok(maxDiff(int8Map, int8) < 1e-4, `the first map is the int8 weights' (max |Δ| ${maxDiff(int8Map, int8)} from the CLI's int8)`);
    const drift = maxDiff(int8Map, f32);
    assert.ok(drift > 1e-3, `int8 and f32 differ by only ${drift}: nothing to switch`);

    // Let the exact weights through: the maps switch to them, the status line says so.
    const after = await more(() => page.waitForFunction(() => /^all-MiniLM-L6-v2 · exact f32 weights · /.test(document.getElementById('status').textContent) && !window.attnvizDebug.computing && !window.attnvizDebug.drawing, null, { timeout: 120_000, polling: 100 }));
    const tExact = Date.now() - t0;
    const bytesExact = after.reduce((a, [, n]) => a + n, 0);
    assert.ok(after.some(([p]) => p.endsWith('/minilm/model.safetensors')), 'the f32 weights were fetched after the first map');
    const exactMap = await page.evaluate(() => window.attnvizDebug.attentions());
    const exact = maxDiff(exactMap, f32);
    t.diagnostic(`then the exact weights: ${mb(bytesExact)} more (${after.slice(0, 4).map(([p, n]) => `${p} ${mb(n)}`).join(', ')}), drawn at ${tExact} ms (first map at ${tFirst} ms); drawn vs CLI f32: int8 max |Δ| ${drift.toFixed(4)}, exact ${exact.toExponential(1)}`);
    assert.ok(exact <= 1e-3, `once the exact weights are in, the maps are within ${exact} of the CLI's f32 numbers (want ≤ 1e-3)`);
    // The permalink asks for neither: a shared link is int8 first, then exact, as here.
    assert.doesNotMatch(await page.evaluate(() => location.hash), /[#&]w=/);
    assert.deepEqual(app.pageErrors, []);
    assert.deepEqual(app.failedRequests, []);
  } finally {
    await app.close();
  }
});
