// `make bench` (threads part): the shared-memory build pkg/threads/ with 1 + HELPERS threads
// against the one-thread pkg/relaxed/ it is built from, side by side in one Node process (helpers
// are worker_threads on the module's shared memory, as the page's pool-helper.js workers are).
// MiniLM int8 at 16/64/128/512 tokens, interleaved runs; prints medians and the ratio
// threads ÷ one thread, and checks the two give identical attention weights. Asserts nothing.
import { BUILDS as PAGE_BUILDS } from '../www/worker/wasm-build.js';
import { loadBuild, loadModel, loadThreadsBuild, textOfTokens } from './wasm-builds.mjs';

const glue = await loadThreadsBuild(Number(process.env.HELPERS ?? 1));
if (!glue) {
  console.log(`[bench] no ${PAGE_BUILDS.threads.dir} (make build skips it without Debian's rustc-web): threads skipped`);
} else {
  const runs = Number(process.env.BENCH_RUNS ?? 21);
  const { glue: one } = await loadBuild(PAGE_BUILDS.relaxed.dir);
  const a = loadModel(one, 'minilm', 'int8');
  const b = loadModel(glue, 'minilm', 'int8');
  const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const time = (f) => { const t0 = performance.now(); f(); return performance.now() - t0; };
  console.log(`[bench] ${PAGE_BUILDS.threads.dir} on ${glue.poolThreads()} threads ÷ ${PAGE_BUILDS.relaxed.dir} (MiniLM int8, ${runs} interleaved runs)`);
  for (const T of [16, 64, 128, 512]) {
    const text = textOfTokens(a, 'The animal did not cross the street because it was too tired to walk.', T);
    const [ra, rb] = [a.attend(text), b.attend(text)];
    let diff = 0;
    ra.attentions.forEach((blk, i) => blk.data.forEach((v, j) => { diff = Math.max(diff, Math.abs(v - rb.attentions[i].data[j])); }));
    const [ta, tb] = [[], []];
    for (let r = 0; r < (T >= 512 ? Math.max(5, runs >> 2) : runs); r++) {
      ta.push(time(() => a.attend(text)));
      tb.push(time(() => b.attend(text)));
    }
    console.log(`  ${String(T).padStart(3)} tokens: 1 thread ${median(ta).toFixed(1)} ms, ${glue.poolThreads()} threads ${median(tb).toFixed(1)} ms, ratio ${(median(tb) / median(ta)).toFixed(3)}, max |Δ attention| ${diff}`);
  }
  process.exit(0);
}
