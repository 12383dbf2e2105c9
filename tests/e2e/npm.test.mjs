// The npm package (issue 24): `make dist`'s tarball installed into a fresh project (offline: it
// has no dependencies), then a widget with a Hugging Face Hub id drawn in headless Chromium from
// (a) a plain page that maps the package's name with an import map and (b) a page built by Vite,
// both served as static files; the Hub is the local stand-in (hub-server.mjs). The tarball holds
// the files the widget reaches and nothing else, under a stated size.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, launchBrowser, staticServer, stopStaticServers } from './harness.mjs';
import { cliJson } from './cli-helpers.mjs';
import { startHub } from './hub-server.mjs';
import { attributeList, buildPackage, MODEL_SCRIPTS, packageFiles } from '../../scripts/dist.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TEXT = 'The cat sat on the mat.';
const REPO = 'attnviz-test/tiny-bert';
// Three wasm builds of ~2.7 MB each, compressed: 3.2 MiB today. More means something else got in.
const MAX_TARBALL_BYTES = 4 * 1048576;
let dir;
let project;
let packed;
let hub;
let browser;
// The package ships the three wasm builds; a machine whose make build could not make the
// shared-memory one (no Debian rustc-web) has no package to test.
const SKIP = !existsSync(path.join(ROOT, 'pkg/threads/attnviz_bg.wasm')) && 'no pkg/threads/ on this machine (make build skipped it), so no package';

before(async () => {
  if (SKIP) return;
  dir = mkdtempSync(path.join(tmpdir(), 'attnviz-npm-'));
  execFileSync(path.join(ROOT, '.venv/bin/python'), [path.join(ROOT, 'scripts/tiny_models.py'), '--out', dir]);
  hub = await startHub({ [REPO]: path.join(dir, 'tiny-bert') });
  packed = buildPackage();
  project = path.join(dir, 'course-site');
  mkdirSync(project);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'course-site', private: true, type: 'module' }));
  execFileSync('npm', ['install', packed.tarball, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project, stdio: 'pipe', env: { ...process.env, npm_config_update_notifier: 'false' } });
  browser = await launchBrowser();
});
after(async () => {
  if (SKIP) return;
  stopStaticServers();
  await browser?.close();
  if (hub) await hub.close();
  rmSync(dir, { recursive: true, force: true });
});

// The page's module: configure the Hub (from ?hub=), then report the widget's first drawing.
const MAIN = `import { configure } from 'attnviz';
configure({ hub: new URLSearchParams(location.search).get('hub') });
const w = document.querySelector('attention-viz');
w.addEventListener('attention-ready', (e) => { window.__ready = { tokens: e.detail.tokens, model: e.detail.model, theme: getComputedStyle(w).getPropertyValue('--av-bg').trim() }; });
w.addEventListener('attention-error', (e) => { window.__ready = { error: e.detail.message }; });
`;
const WIDGET = `<attention-viz model="hf:${REPO}" text="${TEXT}" view="heatmap"></attention-viz>`;

/** Open `url` (?hub= added), wait for the widget's first drawing → { tokens, model } or { error }. */
async function drawnAt(url) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${url}?hub=${encodeURIComponent(hub.url)}`);
    await page.waitForFunction(() => window.__ready, null, { timeout: 120_000 });
    const ready = await page.evaluate(() => window.__ready);
    assert.deepEqual(errors, []);
    return ready;
  } finally {
    await context.close();
  }
}

test('the tarball: the widget’s files and nothing else, no dependencies, under the stated size', { skip: SKIP }, () => {
  const want = [...packageFiles(), 'README.md', 'attention-viz.d.ts', 'bin/attnviz.mjs', ...MODEL_SCRIPTS, 'package.json'].sort();
  assert.deepEqual(packed.files, want);
  for (const f of packed.files) assert.doesNotMatch(f, /^(page|tests|models)\/|\.test\.|views\/README|entropy-chart/, `${f} is not needed by the widget`);
  assert.ok(packed.bytes <= MAX_TARBALL_BYTES, `${packed.bytes} bytes, more than ${MAX_TARBALL_BYTES}`);
  const installed = JSON.parse(readFileSync(path.join(project, 'node_modules/attnviz/package.json'), 'utf8'));
  assert.equal(installed.dependencies, undefined);
  assert.equal(installed.exports['.'].default, './attention-viz.js');
  assert.equal(installed.license, 'MIT');
  console.log(`# ${path.basename(packed.tarball)}: ${packed.bytes} bytes packed, ${packed.unpacked} unpacked, ${packed.files.length} files`);
});

test('the package’s README documents every attribute the widget reads, in the main README’s words', { skip: SKIP }, async () => {
  const readme = readFileSync(path.join(project, 'node_modules/attnviz/README.md'), 'utf8');
  const main = attributeList();
  assert.ok(main && readme.includes(main), 'the main README’s attribute list, word for word');
  assert.doesNotMatch(readme, /widget-attributes/, 'no marker left');
  const { STATE_ATTRIBUTES } = await import('../../www/core/state.js');
  for (const name of [...STATE_ATTRIBUTES, 'editable', 'height', 'loading']) assert.ok(main.includes(`\`${name}\``), `the attribute ${name} is documented`);
});

test('a plain page with an import map, served as static files, draws a widget with a Hub id', { skip: SKIP }, async () => {
  writeFileSync(path.join(project, 'importmap.html'), `<!doctype html><meta charset="utf-8"><title>A lesson</title>
<script type="importmap">{ "imports": { "attnviz": "./node_modules/attnviz/attention-viz.js" } }</script>
<body>${WIDGET}<script type="module">${MAIN}</script></body>`);
  const url = await staticServer(project);
  const ready = await drawnAt(`${url}importmap.html`);
  assert.equal(ready.error, undefined, ready.error);
  assert.equal(ready.model, `hf:${REPO}`);
  assert.deepEqual(ready.tokens, cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source);
});

// Vite 8 builds with Rolldown, Vite 6 with Rollup.
for (const [vite, bin] of [['Vite 8 (Rolldown)', 'node_modules/vite/bin/vite.js'], ['Vite 6 (Rollup)', 'node_modules/vite6/bin/vite.js']]) {
  test(`a page built by ${vite} draws a widget with a Hub id: the worker and the wasm are found in the build`, { skip: SKIP }, async () => {
    const app = path.join(project, `app-${vite.replace(/\W/g, '')}`);
    mkdirSync(app);
    writeFileSync(path.join(app, 'index.html'), `<!doctype html><meta charset="utf-8"><title>A course page</title><body>${WIDGET}<script type="module" src="./main.js"></script></body>`);
    writeFileSync(path.join(app, 'main.js'), MAIN);
    execFileSync(process.execPath, [path.join(ROOT, bin), 'build', '--logLevel', 'warn'], { cwd: app, stdio: 'pipe' });
    const url = await staticServer(path.join(app, 'dist'));
    const ready = await drawnAt(url);
    assert.equal(ready.error, undefined, ready.error);
    assert.deepEqual(ready.tokens, cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source);
  });
}

// Vite's dev server pre-bundles the package into node_modules/.vite/deps/: Vite 6 (esbuild) keeps
// its new URL('…', import.meta.url)s as written, which then name files that are not there; Vite 8
// rewrites them. Both must draw with no configuration.
for (const [vite, bin] of [['Vite 8', 'node_modules/vite/bin/vite.js'], ['Vite 6', 'node_modules/vite6/bin/vite.js']]) {
  test(`${vite}’s dev server (\`vite\`, no configuration) draws a widget with a Hub id: the pre-bundled package finds its worker, wasm, theme and (no) models`, { skip: SKIP }, async () => {
    // The layout `npm create vite` gives: index.html and main.js beside package.json and node_modules.
    const app = path.join(project, `dev-${vite.replace(/\W/g, '')}`);
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'dev-app', private: true, type: 'module' }));
    execFileSync('npm', ['install', packed.tarball, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: app, stdio: 'pipe', env: { ...process.env, npm_config_update_notifier: 'false' } });
    writeFileSync(path.join(app, 'index.html'), `<!doctype html><meta charset="utf-8"><title>A course page</title><body>${WIDGET}<script type="module" src="./main.js"></script></body>`);
    writeFileSync(path.join(app, 'main.js'), MAIN);
    const port = await freePort();
    const server = spawn(process.execPath, [path.join(ROOT, bin), '--host', '127.0.0.1', '--port', String(port), '--strictPort', '--clearScreen', 'false'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    server.stdout.setEncoding('utf8').on('data', (d) => { log += d; });
    server.stderr.setEncoding('utf8').on('data', (d) => { log += d; });
    try {
      const url = `http://127.0.0.1:${port}/`;
      for (const deadline = Date.now() + 60_000; ;) {
        try {
          if ((await fetch(url)).ok) break;
        } catch {
          // not listening yet
        }
        if (Date.now() > deadline || server.exitCode !== null) throw new Error(`${vite} did not start:\n${log}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const ready = await drawnAt(url);
      assert.equal(ready.error, undefined, `${ready.error}\n${log}`);
      assert.deepEqual(ready.tokens, cliJson('attend', '--model', path.join(dir, 'tiny-bert'), '--text', TEXT).tokens.source);
      // It ran pre-bundled (the case that broke), and its theme.css arrived (it came as index.html).
      assert.ok(existsSync(path.join(app, 'node_modules/.vite/deps/attnviz.js')), `not pre-bundled:\n${log}`);
      assert.notEqual(ready.theme, '', 'the widget has its theme’s colours');
    } finally {
      server.kill('SIGTERM');
    }
  });
}

test('`npx attnviz models` puts a default model in public/models (verified as make models does); a Vite build draws it, and with sw.js copied to public/ a second visit works offline', { skip: SKIP }, async () => {
  const app = path.join(project, 'models-app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'models-app', private: true, type: 'module' }));
  execFileSync('npm', ['install', packed.tarball, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: app, stdio: 'pipe', env: { ...process.env, npm_config_update_notifier: 'false' } });
  // The command from the package itself (the wheel comes from the verified cache make models fills).
  const said = execFileSync('npx', ['--no-install', 'attnviz', 'models', 'public/models', '--only', 'en-pt-tiny'], { cwd: app, env: { ...process.env, npm_config_update_notifier: 'false' } }).toString();
  assert.match(said, /en-pt-tiny → models\/en-pt\/: (missing; installing|up to date)/);
  assert.match(said, /configure\(\{ models: '\/models\/' \}\)/);
  const manifest = JSON.parse(readFileSync(path.join(app, 'public/models/en-pt/manifest.json'), 'utf8'));
  assert.deepEqual(manifest.sha256, JSON.parse(readFileSync(path.join(ROOT, 'models/en-pt/manifest.json'), 'utf8')).sha256);
  // The one line that serves the service worker from the site's root.
  copyFileSync(path.join(app, 'node_modules/attnviz/sw.js'), path.join(app, 'public/sw.js'));
  writeFileSync(path.join(app, 'index.html'), '<!doctype html><meta charset="utf-8"><title>A lesson</title><body><attention-viz model="en-pt" text="The cat sat on the mat." view="heatmap"></attention-viz><script type="module" src="./main.js"></script></body>');
  writeFileSync(path.join(app, 'main.js'), `import { configure } from 'attnviz';
configure({ models: '/models/', offline: '/sw.js' });
const w = document.querySelector('attention-viz');
w.addEventListener('attention-ready', (e) => { window.__ready = { tokens: e.detail.tokens, model: e.detail.model }; });
w.addEventListener('attention-error', (e) => { window.__ready = { error: e.detail.message }; });
`);
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], { cwd: app, stdio: 'pipe' });
  const url = await staticServer(path.join(app, 'dist'));
  const want = cliJson('attend', '--model', path.join(ROOT, 'models/en-pt'), '--text', 'The cat sat on the mat.').tokens.source;
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(url);
    await page.waitForFunction(() => window.__ready, null, { timeout: 120_000 });
    let ready = await page.evaluate(() => window.__ready);
    assert.equal(ready.error, undefined, ready.error);
    assert.deepEqual(ready.tokens, want);
    // sw.js registered for the whole site, and it has kept the page's files.
    await page.waitForFunction(async () => (await navigator.serviceWorker.getRegistration())?.active && (await caches.keys()).some((k) => k.startsWith('attnviz-shell-')), null, { timeout: 60_000 });
    assert.equal(await page.evaluate(async () => (await navigator.serviceWorker.getRegistration()).scope), url);
    await page.waitForTimeout(1000); // (the shell's files are copied from the HTTP cache as the worker gets them)
    await context.setOffline(true);
    await page.reload();
    await page.waitForFunction(() => window.__ready, null, { timeout: 120_000 });
    ready = await page.evaluate(() => window.__ready);
    assert.equal(ready.error, undefined, `offline: ${ready.error}`);
    assert.deepEqual(ready.tokens, want, 'offline, the second visit draws');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
