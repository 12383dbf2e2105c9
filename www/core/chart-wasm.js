// The wasm module on the main thread, for the charts plotters-canvas draws into a <canvas> (the
// worker has no DOM canvas to give it). One instance per page, loaded on first use; the worker
// has fetched the same file by then (the same build: its dir comes from the worker's init
// answer), so the HTTP cache serves it. From where the worker's are (configure({ base })).

import { configuredBase } from '../worker/worker-client.js';
import { buildFile } from '../worker/wasm-build.js';

let module = null;
let loading = null;

/** The loaded module (the namespace of <dir>attnviz.js after its init), or null until loaded. */
export function chartWasm() {
  return module;
}

/**
 * → a promise of the module of the worker's `build` (wasm-build.js; loads it once): its own
 * files, or for the shared-memory build the one-thread relaxed build (this thread may not block).
 */
export function loadChartWasm(build = { dir: 'pkg/' }) {
  const dir = build.chartDir || build.dir;
  if (!loading) {
    loading = import(buildFile(dir, 'glue', configuredBase()).href).then(async (m) => {
      await m.default({ module_or_path: fetch(buildFile(dir, 'wasm', configuredBase()), { cache: 'force-cache' }) });
      module = m;
      return m;
    });
    loading.catch(() => {
      loading = null;
    });
  }
  return loading;
}
