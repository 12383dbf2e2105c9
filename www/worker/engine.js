// The engine: the wasm instance the worker computes with (the build wasm-build.js picked, its
// glue module pkg/…/attnviz.js, and for the shared-memory build its GEMM helper threads), and the
// one way into it, guarded(), which turns a crash into an Error and a fresh instance.
//
// A panic in the wasm (a bug: every failure should come back as an Error) aborts the instance: JS
// sees a WebAssembly.RuntimeError ("unreachable") and the instance's state is undefined from then
// on. The panic hook (src/wasm/mod.rs) leaves the panic's message in globalThis.attnvizPanic; the
// call that crashed throws with that message, a fresh instance of the same compiled module starts,
// and whoever held objects of the dead one (library.js: the loaded models) is told to drop them
// and reload (onRestart). The next call runs on the fresh one. (The dead instance's memory stays
// referenced by its glue module, which an ES module map never drops: a crash costs that memory
// until the page is reloaded.)

import { BUILDS, buildFile, pickBuild } from './wasm-build.js';
import { fetchFile, filesBase, givenFile } from './model-files.js';

const PANIC_GLOBAL = 'attnvizPanic'; // where the panic hook leaves a panic's message (src/wasm/mod.rs)

let build = null; // the wasm build loaded (wasm-build.js BUILDS), chosen at init
let glue = null; // the imported pkg/attnviz.js module of the current instance
let wasmModule = null; // the compiled pkg/attnviz_bg.wasm, kept to start fresh instances
let wasmExports = null; // the current instance's exports (its memory, measured for the tests)
let helpers = []; // the shared-memory build's GEMM helper workers (pool-helper.js)
let generation = 0; // how many instances were started (1 until a crash)
const restartListeners = [];

/** Start an instance of the build init picked (an id of BUILDS and its thread count; else
 *  pickBuild's), chosen once: a later start (after a failed one) keeps it. */
export function startEngine(buildId, threads) {
  if (!build) build = BUILDS[buildId] ? { ...BUILDS[buildId], threads } : pickBuild();
  return startInstance();
}

/** The current instance's glue module: its exports are the wasm facade (src/wasm/). Call into it
 *  only through guarded(). */
export const wasm = () => glue;

/** The build running: the facade's buildInfo() with the build's id, dir, label (and threads). */
export const buildInfo = () => ({ ...glue.buildInfo(), ...build });

/** The architectures this build can run. */
export const supported = () => Array.from(glue.supportedArchitectures());

/** The bytes of the instance's memory (measured by the tests), or null. */
export const memoryBytes = () => (wasmExports && wasmExports.memory ? wasmExports.memory.buffer.byteLength : null);

/** fn(fresh) after a crash, fresh: the promise of the new instance. The listener drops what it
 *  held of the dead one (without calling into it) and may reload it once fresh resolves. */
export function onRestart(fn) {
  restartListeners.push(fn);
}

async function compileWasm() {
  const res = await fetchFile(buildFile(build.dir, 'wasm', filesBase()));
  if (!res.ok) throw new Error(`${build.dir}attnviz_bg.wasm: HTTP ${res.status}`);
  if (WebAssembly.compileStreaming && (res.headers.get('content-type') || '').startsWith('application/wasm')) {
    return WebAssembly.compileStreaming(res);
  }
  return WebAssembly.compile(await res.arrayBuffer());
}

/**
 * A new wasm instance with its own glue module: pkg/attnviz.js keeps the instance in module state,
 * so after a crash a fresh copy is imported (same file, another query string; the service worker
 * matches it with ignoreSearch). The module is compiled once.
 */
async function startInstance() {
  const url = buildFile(build.dir, 'glue', filesBase());
  if (generation > 0) url.searchParams.set('instance', String(generation + 1));
  let module;
  try {
    const given = givenFile(url);
    module = await import(given ? URL.createObjectURL(given) : url.href);
    if (!wasmModule) wasmModule = await compileWasm();
  } catch (e) {
    // A site built without the shared-memory build (make build skips it without Debian's
    // rustc-web): the one-thread relaxed build serves instead.
    if (build.id !== 'threads') throw e;
    build = BUILDS.relaxed;
    return startInstance();
  }
  wasmExports = await module.default({ module_or_path: wasmModule });
  generation += 1;
  glue = module;
  if (build.id === 'threads' && !(await startHelpers(url.href))) {
    // A helper that joined and was then stopped would hold every GEMM up: drop this instance.
    build = BUILDS.relaxed;
    wasmModule = null;
    return startInstance();
  }
}

/**
 * The shared-memory build's GEMM helpers: build.threads − 1 workers on this instance's memory
 * (the count pickBuild chose with the build).
 * → true when every one has joined the pool (the answer to init then names the thread count);
 * false if they could not start (a worker script from another origin, say).
 */
async function startHelpers(glueUrl) {
  const count = build.threads - 1;
  const started = Array.from({ length: count }, () => new Promise((resolve, reject) => {
    const w = new Worker(new URL('pool-helper.js', import.meta.url), { type: 'module', name: 'attnviz GEMM helper' });
    helpers.push(w);
    w.onmessage = ({ data }) => (data.ready ? resolve() : reject(new Error(data.error)));
    w.onerror = (ev) => reject(new Error(ev.message || 'could not start'));
    w.postMessage({ glue: glueUrl, module: wasmModule, memory: wasmExports.memory });
  }));
  try {
    await Promise.all(started);
    // A helper joins the pool just after it says it is ready (its next call never returns).
    while (glue.poolThreads() < count + 1) await new Promise((r) => setTimeout(r, 1));
  } catch (e) {
    console.warn(`attnviz: GEMM helper threads did not start (${e.message}); loading the one-thread build`);
    stopHelpers();
    return false;
  }
  build = { ...build, label: `wasm relaxed SIMD, ${build.threads} threads` };
  return true;
}

function stopHelpers() {
  for (const w of helpers) w.terminate();
  helpers = [];
}

/** A trap or a stack overflow in the wasm: the instance can no longer be trusted. */
function isCrash(e) {
  return e instanceof WebAssembly.RuntimeError || e instanceof RangeError || self[PANIC_GLOBAL] !== undefined;
}

/**
 * Run one synchronous call into the wasm. If it crashes, start over with a fresh instance (those
 * who held objects of this one are told, onRestart) and throw an Error that says what happened
 * (the panic's message when the panic hook left one).
 */
export function guarded(call) {
  try {
    return call();
  } catch (e) {
    if (!isCrash(e)) throw e;
    const panic = self[PANIC_GLOBAL];
    delete self[PANIC_GLOBAL];
    const what = typeof panic === 'string' ? panic.replace(/\s*\n\s*/g, ' ') : `${e.name}: ${e.message}, with no panic message: most likely it ran out of memory`;
    restart();
    throw new Error(`the model engine crashed (${what}); this is a bug in attnviz. The engine has been restarted and reloads its models: try again, or change the text.`, { cause: e });
  }
}

/** Drop the crashed instance; start a fresh one; tell the listeners. */
function restart() {
  glue = null;
  stopHelpers();
  const fresh = startInstance();
  for (const fn of restartListeners) fn(fresh);
}
