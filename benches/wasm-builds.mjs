// The two wasm builds of `make build` under Node, for the benches (scripts/bench-wasm.mjs and the
// peer adapters, benches/peer-adapters.mjs): pkg/ (SIMD128) and pkg/relaxed/ (relaxed SIMD, see
// www/worker/wasm-build.js). Each build's glue is its own ES module, so both run side by side in one
// process, each with its own instance.
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUILDS as PAGE_BUILDS, hasRelaxedSimd } from '../www/worker/wasm-build.js';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The page's builds (www/worker/wasm-build.js), the plain one first: ratios are relaxed ÷ plain. */
export const BUILDS = [PAGE_BUILDS.simd, PAGE_BUILDS.relaxed];

/**
 * Node 20's V8 (11.3) has relaxed SIMD behind a flag (Chromium and Node ≥ 22 ship it): turn it on
 * before any module is compiled (the page's probe, www/worker/wasm-build.js, says whether it is on). False when this Node cannot run the relaxed build at all.
 */
export function enableRelaxedSimd() {
  if (!hasRelaxedSimd()) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  return hasRelaxedSimd();
}

const glues = new Map();
/** → { glue, exports } of a build's pkg directory, initialised once. */
export async function loadBuild(dir) {
  if (!glues.has(dir)) {
    glues.set(dir, (async () => {
      if (dir === PAGE_BUILDS.relaxed.dir && !enableRelaxedSimd()) throw new Error(`this Node (${process.version}) does not validate relaxed SIMD: cannot run ${dir}`);
      const glue = await import(pathToFileURL(path.join(root, dir, 'attnviz.js')).href);
      const exports = await glue.default({ module_or_path: fs.readFileSync(path.join(root, dir, 'attnviz_bg.wasm')) });
      return { glue, exports };
    })());
  }
  return glues.get(dir);
}

/**
 * → the glue of pkg/threads/ (the shared-memory build) with `helpers` GEMM helper threads joined
 * (worker_threads on its memory, as the page's pool-helper.js workers are), or null when it was
 * not built. Loaded once.
 */
let threads = null;
export function loadThreadsBuild(helpers = 1) {
  const dir = PAGE_BUILDS.threads.dir;
  if (!fs.existsSync(path.join(root, dir, 'attnviz_bg.wasm'))) return Promise.resolve(null);
  threads ??= (async () => {
    if (!enableRelaxedSimd()) throw new Error(`this Node (${process.version}) does not validate relaxed SIMD: cannot run ${dir}`);
    const url = pathToFileURL(path.join(root, dir, 'attnviz.js')).href;
    const glue = await import(url);
    const module = new WebAssembly.Module(fs.readFileSync(path.join(root, dir, 'attnviz_bg.wasm')));
    const { memory } = glue.initSync({ module });
    for (let i = 0; i < helpers; i++) {
      const w = new Worker(new URL('./pool-helper-node.mjs', import.meta.url), { workerData: { glue: url, module, memory } });
      await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
      w.unref();
    }
    while (glue.poolThreads() < 1 + helpers) await new Promise((r) => setTimeout(r, 5));
    return glue;
  })();
  return threads;
}

/** A model from models/<modelDir> in a build's glue, with the manifest's file set `variant` (int8) or its own files. */
export function loadModel(glue, modelDir, variant) {
  const dir = path.join(root, 'models', modelDir);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  if (variant) manifest.files = manifest.variants[variant];
  const files = {};
  for (const f of manifest.files) files[f] = new Uint8Array(fs.readFileSync(path.join(dir, f)));
  return glue.AttnModel.load(JSON.stringify(manifest), files);
}

/** Words of `sentence`, then single-piece filler, until the model's tokenizer gives exactly T tokens. */
export function textOfTokens(model, sentence, T) {
  const words = [];
  while (words.length < 4 * T) words.push(...sentence.replace(/[.,]/g, '').split(' '));
  const count = (t) => model.attend(t).tokens.source.length;
  // The most words that fit (a binary search: a forward at 512 tokens is not cheap), then filler.
  let [lo, hi] = [1, words.length];
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (count(words.slice(0, mid).join(' ')) <= T) lo = mid;
    else hi = mid - 1;
  }
  let text = words.slice(0, lo).join(' ');
  while (count(text) < T) text += ' the';
  if (count(text) !== T) throw new Error(`could not build a ${T}-token text`);
  return text;
}
