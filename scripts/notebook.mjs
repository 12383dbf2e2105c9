// The notebook widget's front end as one ES module (anywidget loads it from a string, so it can
// import nothing by a relative path): www/notebook/notebook.js and the shell it draws with,
// bundled and minified by Vite into python/attnviz/static/notebook.js. Its live widgets
// (attnviz.show) run a model: the kernel sends them the model worker (Vite's chunk of
// www/worker/worker.js, one self-contained script: static/worker.js) and the SIMD wasm build
// (static/pkg/), which the front end starts from memory (worker-client.js configure({ worker,
// files })). The other builds' `new URL(…, import.meta.url)`s are never reached.
//
// Usage: node scripts/notebook.mjs
import { build } from 'vite';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'python', 'attnviz', 'static');
// Built here, then each file moved into OUT (a rename replaces a file whole): a test reading
// OUT while it is rebuilt sees the old file or the new one, never none (make test's notebook
// and page suites ran side by side, and the page's notebook test once found no notebook.js).
const NEXT = path.join(ROOT, 'python', 'attnviz', '.static-next');
const FILES = ['notebook.js', 'worker.js', 'pkg/attnviz.js', 'pkg/attnviz_bg.wasm'];
// The inputs' hash at the last build: the same inputs are not bundled again.
const STAMP = path.join(ROOT, 'python', 'attnviz', '.notebook-inputs');

// make test runs this in two lanes at once (test-py, test-e2e): one at a time (a lock folder, as
// mkdir is atomic everywhere; one older than 10 minutes is stale), the second finding it built.
const LOCK = path.join(ROOT, 'python', 'attnviz', '.notebook-build.lock');
for (const t0 = Date.now(); ;) {
  try {
    mkdirSync(LOCK);
    break;
  } catch (e) {
    if (e.code !== 'EEXIST') throw e;
    if (Date.now() - statSync(LOCK).mtimeMs > 600_000) rmSync(LOCK, { recursive: true, force: true });
    else if (Date.now() - t0 > 900_000) throw new Error(`[notebook] ${LOCK} held for 15 minutes`, { cause: e });
    else await new Promise((r) => setTimeout(r, 500));
  }
}
process.on('exit', () => rmSync(LOCK, { recursive: true, force: true }));

/** A hash of what the bundle is made from: www/'s scripts and styles, the SIMD build, this script. */
function inputsHash() {
  const hash = createHash('sha256');
  const add = (file) => hash.update(path.relative(ROOT, file)).update(readFileSync(file));
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(js|css)$/.test(e.name)) add(p);
    }
  };
  walk(path.join(ROOT, 'www'));
  if (!existsSync(path.join(ROOT, 'pkg', 'attnviz_bg.wasm'))) throw new Error('[notebook] no pkg/attnviz_bg.wasm: run make build first');
  for (const f of ['pkg/attnviz.js', 'pkg/attnviz_bg.wasm', 'scripts/notebook.mjs']) add(path.join(ROOT, f));
  return hash.digest('hex');
}

const inputs = inputsHash();
if (FILES.every((f) => existsSync(path.join(OUT, f))) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === inputs) {
  console.log('[notebook] python/attnviz/static/ is up to date (the same www/, pkg/ and script)');
  process.exit(0);
}

await build({
  root: ROOT,
  configFile: false,
  logLevel: 'error', // (the wasm builds' URLs, left for run time, would each be a warning)
  build: {
    lib: { entry: path.join(ROOT, 'www', 'notebook', 'notebook.js'), formats: ['es'], fileName: () => 'notebook.js' },
    outDir: NEXT,
    emptyOutDir: true,
    copyPublicDir: false,
    rollupOptions: { output: { codeSplitting: false } },
  },
});
// The model worker's chunk, emitted beside it, is the live widgets' worker; the rest of the
// chunks (the shared-memory build's GEMM helper) are of builds a notebook never loads.
const assets = path.join(NEXT, 'assets');
const workerChunk = readdirSync(assets).find((f) => /^worker-.*\.js$/.test(f));
if (!workerChunk) throw new Error('[notebook] Vite emitted no worker chunk');
renameSync(path.join(assets, workerChunk), path.join(NEXT, 'worker.js'));
mkdirSync(path.join(NEXT, 'pkg'), { recursive: true });
for (const f of ['attnviz.js', 'attnviz_bg.wasm']) copyFileSync(path.join(ROOT, 'pkg', f), path.join(NEXT, 'pkg', f));
mkdirSync(path.join(OUT, 'pkg'), { recursive: true });
for (const f of FILES) renameSync(path.join(NEXT, f), path.join(OUT, f));
rmSync(NEXT, { recursive: true, force: true });
writeFileSync(STAMP, inputs);
const kib = (f) => `${(statSync(path.join(OUT, f)).size / 1024).toFixed(0)} KiB`;
console.log(`[notebook] python/attnviz/static/: notebook.js ${kib('notebook.js')}, worker.js ${kib('worker.js')}, pkg/attnviz_bg.wasm ${kib('pkg/attnviz_bg.wasm')}`);
