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
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'python', 'attnviz', 'static');

// make test runs this in two lanes at once (test-py, test-e2e): one at a time, each writing the
// whole folder (a lock folder, as mkdir is atomic everywhere; one older than 10 minutes is stale).
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

await build({
  root: ROOT,
  configFile: false,
  logLevel: 'error', // (the wasm builds' URLs, left for run time, would each be a warning)
  build: {
    lib: { entry: path.join(ROOT, 'www', 'notebook', 'notebook.js'), formats: ['es'], fileName: () => 'notebook.js' },
    outDir: OUT,
    emptyOutDir: true,
    copyPublicDir: false,
    rollupOptions: { output: { codeSplitting: false } },
  },
});
// The model worker's chunk, emitted beside it, is the live widgets' worker; the rest of the
// chunks (the shared-memory build's GEMM helper) are of builds a notebook never loads.
const assets = path.join(OUT, 'assets');
const workerChunk = readdirSync(assets).find((f) => /^worker-.*\.js$/.test(f));
if (!workerChunk) throw new Error('[notebook] Vite emitted no worker chunk');
renameSync(path.join(assets, workerChunk), path.join(OUT, 'worker.js'));
rmSync(assets, { recursive: true, force: true });
if (!existsSync(path.join(ROOT, 'pkg', 'attnviz_bg.wasm'))) throw new Error('[notebook] no pkg/attnviz_bg.wasm: run make build first');
mkdirSync(path.join(OUT, 'pkg'), { recursive: true });
for (const f of ['attnviz.js', 'attnviz_bg.wasm']) copyFileSync(path.join(ROOT, 'pkg', f), path.join(OUT, 'pkg', f));
const kib = (f) => `${(statSync(path.join(OUT, f)).size / 1024).toFixed(0)} KiB`;
console.log(`[notebook] python/attnviz/static/: notebook.js ${kib('notebook.js')}, worker.js ${kib('worker.js')}, pkg/attnviz_bg.wasm ${kib('pkg/attnviz_bg.wasm')}`);
