// `make bench` (wasm part): the release wasm from pkg/ under Node (one thread, SIMD128 — the
// same module the page's worker runs), median forward time of each default model on a
// 16-token sentence. Reports medians and ratios; it asserts nothing about speed.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { default: init, AttnModel, buildInfo } = await import(path.join(root, 'pkg/attnviz.js'));
await init({ module_or_path: await readFile(path.join(root, 'pkg/attnviz_bg.wasm')) });
console.log(`wasm build ${JSON.stringify(buildInfo())}`);

const runs = Number(process.env.BENCH_RUNS ?? 30);
const text = "The animal didn't cross the street because it was too tired to walk.";
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = {};
for (const dir of ['minilm', 'en-pt']) {
  const manifestText = await readFile(path.join(root, 'models', dir, 'manifest.json'), 'utf8');
  const manifest = JSON.parse(manifestText);
  const files = {};
  for (const name of manifest.files) files[name] = new Uint8Array(await readFile(path.join(root, 'models', dir, name)));
  const model = AttnModel.load(manifestText, files);
  const first = model.attend(text);
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    model.attend(text);
    times.push(performance.now() - t0);
  }
  results[dir] = median(times);
  console.log(`wasm forward ${dir.padEnd(7)} ${String(first.tokens.source.length).padStart(3)} source tokens, ${String(first.tokens.target.length).padStart(3)} target tokens   median ${median(times).toFixed(2)} ms  p95 ${[...times].sort((a, b) => a - b)[Math.floor(times.length * 0.95)].toFixed(2)} ms  (${runs} runs)`);
  model.free();
}
