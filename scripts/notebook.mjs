// The notebook widget's front end as one ES module (anywidget loads it from a string, so it can
// import nothing by a relative path): www/notebook/notebook.js and the shell it draws with,
// bundled and minified by Vite into python/attnviz/static/notebook.js. It draws the attention it
// is given and runs no model, so the wasm builds and the model worker stay out: their
// `new URL(…, import.meta.url)`s are left to resolve at run time and are never reached.
//
// Usage: node scripts/notebook.mjs
import { build } from 'vite';
import { rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'python', 'attnviz', 'static');

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
// The model worker's chunk, emitted beside it: this bundle never starts a worker.
rmSync(path.join(OUT, 'assets'), { recursive: true, force: true });
const bytes = statSync(path.join(OUT, 'notebook.js')).size;
console.log(`[notebook] python/attnviz/static/notebook.js: ${(bytes / 1024).toFixed(0)} KiB`);
