// `make bench` (threads part): the shared-memory build pkg/threads/ with 1 + HELPERS threads
// against the one-thread pkg/relaxed/ it is built from, side by side in one Node process (helpers
// are worker_threads on the module's shared memory, as the page's pool-helper.js workers are).
// MiniLM int8 at 16/64/128/512 tokens, interleaved runs; prints medians and the ratio
// threads ÷ one thread, and checks the two give identical attention weights. Asserts nothing.
import fs from 'node:fs';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { BUILDS as PAGE_BUILDS } from '../www/wasm-build.js';
import { enableRelaxedSimd, loadBuild, loadModel, root, textOfTokens } from './wasm-builds.mjs';

const threadsGlue = pathToFileURL(path.join(root, PAGE_BUILDS.threads.dir, 'attnviz.js')).href;

if (!isMainThread) {
  enableRelaxedSimd();
  const glue = await import(threadsGlue);
  glue.initSync({ module: workerData.module, memory: workerData.memory });
  parentPort.postMessage('ready');
  glue.poolHelper(); // never returns
} else if (!fs.existsSync(path.join(root, PAGE_BUILDS.threads.dir, 'attnviz_bg.wasm'))) {
  console.log(`[bench] no ${PAGE_BUILDS.threads.dir} (make build skips it without Debian's rustc-web): threads skipped`);
} else {
  const helpers = Number(process.env.HELPERS ?? 1);
  const runs = Number(process.env.BENCH_RUNS ?? 21);
  const { glue: one } = await loadBuild(PAGE_BUILDS.relaxed.dir);
  const glue = await import(threadsGlue);
  const module = new WebAssembly.Module(fs.readFileSync(path.join(root, PAGE_BUILDS.threads.dir, 'attnviz_bg.wasm')));
  const { memory } = glue.initSync({ module });
  for (let i = 0; i < helpers; i++) {
    const w = new Worker(new URL(import.meta.url), { workerData: { module, memory } });
    await new Promise((resolve) => w.once('message', resolve));
    w.unref();
  }
  while (glue.poolThreads() < 1 + helpers) await new Promise((r) => setTimeout(r, 5));
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
