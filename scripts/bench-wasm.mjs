// `make bench` (wasm part): the release wasm from pkg/ under Node (one thread, SIMD128 — the
// same module the page's worker runs), median forward time of each default model on a
// 16-token sentence; for SmolLM2 (causal decoder) a 32-token prompt, one generated token through
// the KV cache, and the wasm memory with the model loaded. Reports medians; it asserts nothing.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { default: init, AttnModel, buildInfo } = await import(path.join(root, 'pkg/attnviz.js'));
const exports = await init({ module_or_path: await readFile(path.join(root, 'pkg/attnviz_bg.wasm')) });
console.log(`wasm build ${JSON.stringify(buildInfo())}`);

const runs = Number(process.env.BENCH_RUNS ?? 30);
const text = "The animal didn't cross the street because it was too tired to walk.";
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = {};
/** A model from models/<dir>, with the manifest's file set `variant` (int8) or its own files. */
async function load(dir, variant) {
  const manifest = JSON.parse(await readFile(path.join(root, 'models', dir, 'manifest.json'), 'utf8'));
  if (variant) manifest.files = manifest.variants[variant];
  const files = {};
  for (const name of manifest.files) files[name] = new Uint8Array(await readFile(path.join(root, 'models', dir, name)));
  return AttnModel.load(JSON.stringify(manifest), files);
}
// SmolLM2-135M (Q4_1 GGUF): the goals are ≤ 500 ms for a 32-token prompt, ≤ 40 ms per
// generated token, ≤ 250 MB of tab memory (measured first, in a fresh instance). A generated token's cost is measured as the
// difference between generating N + 8 and N tokens, divided by 8 (same prompt, same cache).
{
  const heapBefore = exports.memory.buffer.byteLength;
  const model = await load('smollm2');
  const heapLoaded = exports.memory.buffer.byteLength;
  const prompt = 'The quick brown fox jumps over the lazy dog while five boxing wizards jump quickly, and the sphinx of black quartz judges my vow as we watch the sun';
  const n = model.attend(prompt).tokens.source.length;
  const gRuns = Math.max(5, Math.floor(runs / 3));
  const time = (f) => { const t0 = performance.now(); f(); return performance.now() - t0; };
  const promptTimes = [];
  const stepTimes = [];
  for (let i = 0; i < gRuns; i++) {
    promptTimes.push(time(() => model.attend(prompt)));
    const one = time(() => model.attend(prompt, 1));
    const nine = time(() => model.attend(prompt, 9));
    stepTimes.push((nine - one) / 8);
  }
  const afterRuns = exports.memory.buffer.byteLength;
  const mib = (b) => (b / 2 ** 20).toFixed(1);
  console.log(`wasm forward smollm2 ${String(n).padStart(3)} prompt tokens   median ${median(promptTimes).toFixed(1)} ms (goal ≤ 500)   one generated token median ${median(stepTimes).toFixed(1)} ms (goal ≤ 40)   (${gRuns} runs)`);
  console.log(`wasm memory: ${mib(heapBefore)} MiB before SmolLM2, ${mib(heapLoaded)} MiB loaded, ${mib(afterRuns)} MiB after the runs (goal ≤ 250 MB)`);
  model.free();
}

for (const [dir, variant] of [['minilm'], ['minilm', 'int8'], ['en-pt']]) {
  const model = await load(dir, variant);
  const first = model.attend(text);
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    model.attend(text);
    times.push(performance.now() - t0);
  }
  const label = variant ? `${dir}:${variant}` : dir;
  results[label] = median(times);
  console.log(`wasm forward ${label.padEnd(11)} ${String(first.tokens.source.length).padStart(3)} source tokens, ${String(first.tokens.target.length).padStart(3)} target tokens   median ${median(times).toFixed(2)} ms  p95 ${[...times].sort((a, b) => a - b)[Math.floor(times.length * 0.95)].toFixed(2)} ms  (${runs} runs)`);
  model.free();
}

