// Foundation: the served page loads the SIMD wasm build and the default model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, openApp } from './harness.mjs';

const DEFAULT_MODEL_ID = 'minilm-l6';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

async function checkFoundation(prefix) {
  const server = await startServer({ prefix });
  let app;
  try {
    app = await openApp(browser, server.url);
    const debug = await app.page.evaluate(() => {
      const d = window.attnvizDebug;
      return d ? { build: d.build, modelId: d.modelId } : null;
    });
    assert.ok(debug, 'window.attnvizDebug is not set');
    assert.ok(debug.build, 'window.attnvizDebug.build is not set');
    assert.equal(debug.build.simd, true, `the page loaded a non-SIMD build: ${JSON.stringify(debug.build)}`);
    assert.equal(debug.modelId, DEFAULT_MODEL_ID, 'the default model is not the one loaded');
    assert.deepEqual(app.pageErrors, [], 'uncaught errors in the page');
    assert.deepEqual(app.outsideRequests, [], 'the page made requests outside its own origin');
  } finally {
    await app?.close();
    await server.close();
  }
}

test('page loads the SIMD wasm build and the default model (served at /)', async () => {
  await checkFoundation('/');
});

test('the same under a path prefix (/course/week3/)', async () => {
  await checkFoundation('/course/week3/');
});
