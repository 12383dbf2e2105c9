// `make bench` (wasm part): the release wasm builds under Node (one thread; pkg/ = SIMD128, the
// module the page's worker runs where relaxed SIMD does not validate, pkg/relaxed/ = relaxed SIMD,
// the one it runs where it does: www/worker/wasm-build.js), both in this one process.
// 1. For each build: median forward time of each default model on a 16-token sentence; for
//    SmolLM2 (causal decoder) a 32-token prompt, one generated token through the KV cache, and the
//    wasm memory with the model loaded.
// 2. Relaxed against plain, side by side: MiniLM (f32 and int8 weights) at 16/64/128/512 tokens,
//    reps interleaved, the median of the paired ratios relaxed ÷ plain, and GFLOP/s of each.
// Reports medians; it asserts nothing. BENCH_RUNS (30) sets the reps.
import { BUILDS, enableRelaxedSimd, loadBuild, loadModel, textOfTokens } from '../benches/wasm-builds.mjs';

const runs = Number(process.env.BENCH_RUNS ?? 30);
const text = "The animal didn't cross the street because it was too tired to walk.";
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (f) => { const t0 = performance.now(); f(); return performance.now() - t0; };

const builds = BUILDS.filter((b) => b.id !== 'relaxed' || enableRelaxedSimd());
if (builds.length < BUILDS.length) console.log(`node ${process.version} does not validate relaxed SIMD: ${BUILDS[1].dir} is not measured`);
for (const [i, b] of builds.entries()) builds[i] = { ...b, ...(await loadBuild(b.dir)) };

// BENCH_RATIO_ONLY=1: part 2 alone.
for (const { dir, glue, exports } of process.env.BENCH_RATIO_ONLY === '1' ? [] : builds) {
  console.log(`\nwasm build ${dir} ${JSON.stringify(glue.buildInfo())}`);
  // SmolLM2-135M (Q4_1 GGUF): the goals are ≤ 500 ms for a 32-token prompt, ≤ 40 ms per
  // generated token, ≤ 250 MB of tab memory (measured first, in a fresh instance). A generated token's cost is measured as the
  // difference between generating N + 8 and N tokens, divided by 8 (same prompt, same cache).
  {
    const heapBefore = exports.memory.buffer.byteLength;
    const model = loadModel(glue, 'smollm2');
    const heapLoaded = exports.memory.buffer.byteLength;
    const prompt = 'The quick brown fox jumps over the lazy dog while five boxing wizards jump quickly, and the sphinx of black quartz judges my vow as we watch the sun';
    const n = model.attend(prompt).tokens.source.length;
    const gRuns = Math.max(5, Math.floor(runs / 3));
    const promptTimes = [];
    const stepTimes = [];
    for (let i = 0; i < gRuns; i++) {
      promptTimes.push(time(() => model.attend(prompt)));
      const one = time(() => model.attend(prompt, { generate: 1 }));
      const nine = time(() => model.attend(prompt, { generate: 9 }));
      stepTimes.push((nine - one) / 8);
    }
    const afterRuns = exports.memory.buffer.byteLength;
    const mib = (b) => (b / 2 ** 20).toFixed(1);
    console.log(`wasm forward smollm2 ${String(n).padStart(3)} prompt tokens   median ${median(promptTimes).toFixed(1)} ms (goal ≤ 500)   one generated token median ${median(stepTimes).toFixed(1)} ms (goal ≤ 40)   (${gRuns} runs)`);
    console.log(`wasm memory: ${mib(heapBefore)} MiB before SmolLM2, ${mib(heapLoaded)} MiB loaded, ${mib(afterRuns)} MiB after the runs (goal ≤ 250 MB)`);
    model.free();
  }

  for (const [modelDir, variant] of [['minilm'], ['minilm', 'int8'], ['en-pt']]) {
    const model = loadModel(glue, modelDir, variant);
    const first = model.attend(text);
    const times = [];
    for (let i = 0; i < runs; i++) times.push(time(() => model.attend(text)));
    const label = variant ? `${modelDir}:${variant}` : modelDir;
    console.log(`wasm forward ${label.padEnd(11)} ${String(first.tokens.source.length).padStart(3)} source tokens, ${String(first.tokens.target.length).padStart(3)} target tokens   median ${median(times).toFixed(2)} ms  p95 ${[...times].sort((a, b) => a - b)[Math.floor(times.length * 0.95)].toFixed(2)} ms  (${runs} runs)`);
    model.free();
  }
}

if (builds.length === 2) {
  // MiniLM's work per forward (the peers' count: the linear layers and QKᵀ, AV; run.mjs).
  const cfg = { H: 384, I: 1536, L: 6 };
  const gflop = (T) => (2 * cfg.L * (4 * cfg.H * cfg.H + 2 * cfg.H * cfg.I) * T + 4 * cfg.L * T * T * cfg.H) / 1e9;
  const lengths = [16, 64, 128, 512];
  console.log(`\nrelaxed SIMD (pkg/relaxed/) ÷ SIMD128 (pkg/), MiniLM attend(text) of T tokens, reps interleaved; ratio = median of paired ratios (< 1: relaxed is faster)`);
  console.log(`${'weights'.padEnd(8)}${'T'.padStart(5)}${'plain ms'.padStart(10)}${'relaxed ms'.padStart(12)}${'plain GFLOP/s'.padStart(15)}${'relaxed GFLOP/s'.padStart(17)}${'ratio'.padStart(8)}`);
  const summary = {};
  for (const variant of [null, 'int8']) {
    const models = builds.map((b) => loadModel(b.glue, 'minilm', variant));
    for (const T of lengths) {
      const t = textOfTokens(models[0], text, T);
      const reps = Math.max(8, Math.round(runs * Math.min(1, 64 / T)));
      for (const m of models) for (let w = 0; w < 2; w++) m.attend(t);
      const times = models.map(() => []);
      for (let r = 0; r < reps; r++) {
        for (let j = 0; j < models.length; j++) {
          const i = (r + j) % models.length;
          times[i].push(time(() => models[i].attend(t)));
        }
      }
      const [plain, relaxed] = times.map(median);
      const ratio = median(times[1].map((x, r) => x / times[0][r]));
      const label = variant || 'f32';
      (summary[label] ??= {})[T] = Math.round(ratio * 1000) / 1000;
      console.log(`${label.padEnd(8)}${String(T).padStart(5)}${plain.toFixed(2).padStart(10)}${relaxed.toFixed(2).padStart(12)}${(gflop(T) / plain * 1e3).toFixed(1).padStart(15)}${(gflop(T) / relaxed * 1e3).toFixed(1).padStart(17)}${ratio.toFixed(3).padStart(8)}   (${reps} reps)`);
    }
    for (const m of models) m.free();
  }
  console.log(JSON.stringify({ relaxed_ratio_vs_simd: summary }));
}
