// `make site DEST=…` (scripts/site.py): the folder a teacher uploads works from a plain static
// server (python3 -m http.server: no COOP/COEP, no compression, no prefix rules): the page and the
// lesson's five widgets draw with the real models. A folder with only the top-level files (what
// the README's old "copy the .js, .css and .html files" gave) says so where each widget stands,
// instead of leaving it 0 px tall.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser, loadEveryWidget, openApp, staticServer, stopStaticServers } from './harness.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
let browser;
let dir;
let siteUrl; // the folder make site wrote, served (the first test makes it)

/** python3 -m http.server on a free port of 127.0.0.1, serving `folder`: its base URL. */
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'attnviz-site-'));
  browser = await launchBrowser();
});
after(async () => {
  stopStaticServers();
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

const sizeOf = (folder) => readdirSync(folder, { recursive: true }).reduce((n, f) => n + (statSync(path.join(folder, f)).isFile() ? statSync(path.join(folder, f)).size : 0), 0);

test('make site writes a folder that works from python3 -m http.server: the page draws', async () => {
  const site = path.join(dir, 'site');
  // (pkg/threads/ may still be being built beside this suite in make test: it needs COOP/COEP,
  // which http.server does not send, so it is not loaded here anyway)
  const said = execFileSync('python3', [path.join(ROOT, 'scripts/site.py'), '--dest', site, '--builds', 'simd,relaxed']).toString();
  const m = /(\d+) files, ([\d.]+) MiB/.exec(said);
  assert.ok(m, said);
  assert.ok(Math.abs(Number(m[2]) - sizeOf(site) / 1048576) < 0.1, `printed ${m[2]} MiB`);
  for (const f of ['index.html', 'examples.html', 'attention-viz.js', 'views/head.js', 'shell/host.js', 'pkg/attnviz_bg.wasm', 'pkg/relaxed/attnviz_bg.wasm', 'models/index.json', 'models/minilm/model.int8.safetensors', 'models/en-pt/manifest.json']) {
    assert.ok(statSync(path.join(site, f)).size > 0, `${f} is in the site`);
  }
  // The precompressed variants (make test-e2e ran make precompress) go beside their files, for
  // static hosts that serve them; a variant older than its file does not.
  for (const f of ['index.html', 'pkg/attnviz_bg.wasm', 'models/minilm/model.int8.safetensors', 'models/minilm/tokenizer.json']) {
    for (const suffix of ['.br', '.gz']) {
      assert.ok(statSync(path.join(site, f + suffix)).size < statSync(path.join(site, f)).size, `${f}${suffix} is in the site, smaller than ${f}`);
    }
  }
  assert.throws(() => execFileSync('python3', [path.join(ROOT, 'scripts/site.py'), '--dest', site], { stdio: 'pipe' }), /not empty/, 'a folder with files in it is refused');
  const url = await staticServer(site);
  const app = await openApp(browser, url, { fresh: true });
  try {
    const drawn = await app.page.evaluate(() => ({ model: window.attnvizDebug.modelId, tokens: window.attnvizDebug.tokens.length, build: window.attnvizDebug.build.id }));
    assert.equal(drawn.model, 'minilm-l6');
    assert.ok(drawn.tokens > 5, JSON.stringify(drawn));
    assert.notEqual(drawn.build, 'threads', 'no isolation without COOP/COEP');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
  siteUrl = url;
});

test('the lesson from make site draws its five widgets and, as it asks (data-offline), works offline on a second visit', async () => {
  // A context of its own, and the lesson alone: the page's service worker (registered by a visit
  // to index.html) must not be what keeps it.
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const failed = [];
    page.on('response', (r) => r.status() >= 400 && failed.push(`${r.url()}: ${r.status()}`));
    await page.goto(`${siteUrl}examples.html`);
    await loadEveryWidget(page);
    const widgets = await page.$$eval('attention-viz', (all) => all.map((w) => ({ id: w.id, state: w.dataset.state, height: w.getBoundingClientRect().height })));
    assert.equal(widgets.length, 5);
    for (const w of widgets) assert.ok(w.state === 'ready' && w.height > 100, JSON.stringify(w));
    assert.deepEqual(failed, []);
    // Once its service worker holds the lesson's files, a visit without a network draws them all.
    const kept = () => page.evaluate(async () => {
      const names = await caches.keys();
      const shell = names.find((n) => n.startsWith('attnviz-shell-'));
      return shell ? (await (await caches.open(shell)).keys()).map((r) => new URL(r.url).pathname) : [];
    });
    const needed = ['/examples.html', '/attention-viz.js', '/shell/host.js', '/worker/worker.js'];
    let k = [];
    for (let i = 0; i < 150; i++) {
      k = await kept();
      if (needed.every((f) => k.includes(f)) && k.some((f) => f.endsWith('.wasm'))) break;
      await page.waitForTimeout(200);
    }
    assert.ok(needed.every((f) => k.includes(f)), `the service worker keeps ${k.join(', ') || 'nothing'}`);
    await context.setOffline(true);
    const again = await context.newPage();
    await again.goto(`${siteUrl}examples.html`);
    await loadEveryWidget(again);
    assert.deepEqual(await again.$$eval('attention-viz', (all) => all.map((w) => w.dataset.state)), ['ready', 'ready', 'ready', 'ready', 'ready']);
  } finally {
    await context.close();
  }
});

test('a lesson uploaded without the widget’s other files says so where each widget stands', async () => {
  const partial = path.join(dir, 'partial');
  mkdirSync(partial);
  for (const f of ['examples.html', 'page/examples.js', 'attention-viz.js', 'styles.css']) {
    mkdirSync(path.dirname(path.join(partial, f)), { recursive: true });
    copyFileSync(path.join(ROOT, 'www', f), path.join(partial, f));
  }
  const url = await staticServer(partial);
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${url}examples.html`);
    await page.waitForLoadState('networkidle');
    const widgets = await page.$$eval('attention-viz', (all) => all.map((w) => ({ text: w.innerText, height: w.getBoundingClientRect().height, defined: !!customElements.get('attention-viz') })));
    assert.equal(widgets.length, 5);
    for (const w of widgets) {
      assert.equal(w.defined, false);
      assert.match(w.text, /If this stays, attention-viz\.js or the files beside it did not load/);
      assert.ok(w.height > 0, 'the widget is not 0 px tall');
    }
    // and the snippet a teacher copies carries the same words
    assert.match(await page.textContent('.snippet[data-for="ex-cross"] code'), /did not load/);
  } finally {
    await context.close();
  }
});
