// Which of the wasm builds (`make build`) a browser loads: pkg/relaxed/ (relaxed SIMD: the GEMM's
// multiply-adds are f32x4.relaxed_madd, an FMA where the CPU has one) where WebAssembly.validate
// accepts a relaxed-SIMD instruction, else pkg/ (SIMD128, every browser with wasm SIMD); and
// pkg/threads/ (the relaxed build on shared memory, its GEMMs split over helper workers) instead
// of pkg/relaxed/ where the page is cross-origin isolated and has cores to spare. All give the
// same numbers within 1e-5 of the native build (tests/wasm/facade.test.mjs checks each shipped
// build; the threads' split leaves every value bit-identical to pkg/relaxed/'s). The page's
// ?build=simd, ?build=relaxed or ?build=threads asks for that build where the browser can run it.
// Imported by the page's side (worker-client.js picks) and by the worker (which loads the pick).

/** (func (param v128 v128 v128) (result v128) local.get 0 local.get 1 local.get 2 f32x4.relaxed_madd) */
const RELAXED_PROBE = [0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 123, 123, 123, 1, 123, 3, 2, 1, 0, 10, 13, 1, 11, 0, 32, 0, 32, 1, 32, 2, 253, 133, 2, 11];

/** The builds by id: where their files are (relative to the base that holds pkg/) and their name. */
export const BUILDS = {
  // Shared memory: GEMMs split over helper workers (www/worker/pool-helper.js, src/pool.rs). The charts
  // drawn on the page's own thread (which may not block) take the one-thread relaxed build.
  threads: { id: 'threads', dir: 'pkg/threads/', label: 'wasm relaxed SIMD, threads', chartDir: 'pkg/relaxed/' },
  relaxed: { id: 'relaxed', dir: 'pkg/relaxed/', label: 'wasm relaxed SIMD' },
  simd: { id: 'simd', dir: 'pkg/', label: 'wasm SIMD' },
};

/** The npm package's name (scripts/npm/package.json): its folder in node_modules/. */
const PACKAGE_NAME = 'attnviz';

/** Vite's dev server pre-bundles a dependency into <node_modules>/.vite/deps/ (one file, moved
 *  away from the package), where every new URL('…', import.meta.url) of it names a file that is
 *  not there (the worker, the wasm, theme.css, sw.js). Then this is the URL of the package's own
 *  folder, <node_modules>/attnviz/, which the dev server serves as it is; else null. */
export const PREBUNDLED_FROM = (() => {
  const m = /^(.*\/node_modules\/)\.vite\/deps[^/]*\//.exec(new URL(import.meta.url).pathname);
  return m ? new URL(`${m[1]}${PACKAGE_NAME}/`, import.meta.url).href : null;
})();

/** The folder that holds worker/, pkg/ and models/ (this module is in its worker/; in a bundled
 *  app, the folder above the bundle's chunks). Computed by hand: bundlers take every
 *  new URL('…', import.meta.url) for a file to ship, and a folder is none. */
export const SITE_ROOT = PREBUNDLED_FROM || (() => {
  const u = new URL(import.meta.url);
  u.search = '';
  u.hash = '';
  u.pathname = u.pathname.replace(/[^/]*\/[^/]*$/, '');
  return u.href;
})();

// Each build's files as literal URLs: a bundler (Vite, esbuild, webpack) sees them and ships them
// with the app; served as they are (make site, the npm package), they are pkg/ beside worker/.
// Made on first use, not on import: loaded from a blob: URL (the notebook bundle, which draws
// attention it is given and runs no model), a relative URL would throw as the module loads.
const files = () => ({
  'pkg/': { glue: new URL('../pkg/attnviz.js', import.meta.url), wasm: new URL('../pkg/attnviz_bg.wasm', import.meta.url) },
  'pkg/relaxed/': { glue: new URL('../pkg/relaxed/attnviz.js', import.meta.url), wasm: new URL('../pkg/relaxed/attnviz_bg.wasm', import.meta.url) },
  'pkg/threads/': { glue: new URL('../pkg/threads/attnviz.js', import.meta.url), wasm: new URL('../pkg/threads/attnviz_bg.wasm', import.meta.url) },
});

/** The URL of a build's glue (`glue`) or module (`wasm`) in the folder `dir` ('pkg/relaxed/'):
 *  under `base` when configure({ base }) named one (or in the package's folder when Vite's dev
 *  server pre-bundled this module), else where this module finds them. */
export function buildFile(dir, file, base = null) {
  const root = base || PREBUNDLED_FROM;
  return root ? new URL(`${dir}${file === 'glue' ? 'attnviz.js' : 'attnviz_bg.wasm'}`, root) : new URL(files()[dir][file]);
}

/** Whether this browser validates a module that uses relaxed SIMD. */
export function hasRelaxedSimd() {
  try {
    return WebAssembly.validate(new Uint8Array(RELAXED_PROBE));
  } catch {
    return false;
  }
}

/**
 * Threads for the GEMM: 1 (no pool) unless the page is cross-origin isolated (SharedArrayBuffer;
 * `make serve` sends COOP/COEP). By default a pool only from 4 cores on, one core always left to
 * the page: on 2 cores a forward on both starved the page's drawing (main-thread tasks over 50 ms
 * in 5 of the long-input tests, none with one thread), for 0.73–0.79× the time at 64–512 tokens.
 * `forced` (?build=threads) takes every core, 2 at least. At most 4: past that a forward of these
 * small models gains little.
 */
export function poolThreads(forced = false) {
  if (!globalThis.crossOriginIsolated || typeof SharedArrayBuffer !== 'function') return 1;
  const cores = (globalThis.navigator && navigator.hardwareConcurrency) || 1;
  if (forced) return Math.min(4, Math.max(2, cores));
  return cores >= 4 ? Math.min(4, cores - 1) : 1;
}

/**
 * The build to load, with its thread count: `requested` when it names one this browser can run
 * ('simd' always works), else the best it can: threads, then relaxed SIMD, then SIMD.
 */
export function pickBuild(requested) {
  if (requested === 'simd' || !hasRelaxedSimd()) return BUILDS.simd;
  const threads = poolThreads(requested === 'threads');
  if (requested !== 'relaxed' && threads > 1) return { ...BUILDS.threads, threads };
  return BUILDS.relaxed;
}
