// The Web Worker that owns the wasm instance and every loaded model.
//
// Protocol (all messages carry `id`; requests also carry `channel`):
//   → { id, channel, type: 'init', base, models, build, threads, hub }
//                                                       ← { id, type: 'init', build, supported, models }
//     (base: null unless configure({ base }) named one; models: the default models' folder)
//     (build: 'threads', 'relaxed' or 'simd', the client's pick (wasm-build.js); the answer's
//     build is buildInfo() with the build loaded: id, dir, label, and for 'threads' their count)
//   → { id, channel, type: 'load', model }             ← { id, type: 'progress', model, loaded, total }*
//                                                       ← { id, type: 'loaded', info }
//   → { id, channel, type: 'attend', model, text, gen, valueNorms } ← { id, type: 'result', result, ms }
//     (valueNorms: true adds result.value_norms, ‖α_ij f_h(x_j)‖ laid out like attentions)
//   → { id, channel, type: 'step', model, text, kind, layer, head, gen } ← { id, type: 'step', step }
// gen: null (the text alone), or { n, temperature, top_k, seed } for a model whose info says
// generates: true — continue the text n tokens (temperature 0: greedy; top_k 0: all tokens).
// The maps and step internals then cover every position fed: the prompt and each token generated.
//   → { id, channel, type: 'positions', model, count } ← { id, type: 'positions', positions }
//   → { id, channel, type: 'heads', model, text, gen } ← { id, type: 'heads', heads } (per-head scores
//     and labels, src/heads.rs)
// `result` and `step` are exactly what the wasm facade returns: the types described once in
// schema/attend.schema.json (the CLI prints the same as JSON), arrays of floats as Float32Arrays.
//   → { id, type: 'open', files: [{ name, file: File }], name }  ← { id, type: 'progress', inspected: report }
//                                                       ← { id, type: 'opened', manifest, report, info, stored, storage }
//     (a user's model: its headers inspected, then loaded, then kept; report: inspectModel()'s;
//     storage: false where this browser keeps nothing for us, so stored is false too)
//   → { id, type: 'remove', model }                    ← { id, type: 'removed' } (a user's model, from storage)
//   → { id, type: 'add-files', files, models }         ← { id, type: 'added', models } (files: { path
//     under base: Blob } read instead of fetched, as init's `files`; models: manifests joining the
//     index, their files among them: the notebook's kernel sends a model this way)
// A user's models kept in this browser (model-store.js: OPFS, else IndexedDB) join the index at
// init with `user: true`; their files are read from there instead of fetched.
//   → { id, type: '__panicForTest', message }          (TEST HOOK: makes the wasm panic on purpose)
//   any failure                                        ← { id, type: 'error', message }
//   a request superseded by a newer one on its channel ← { id, type: 'superseded' }
// Typed arrays in answers are transferred, not copied. Requests on one channel are collapsed:
// while the worker computes, newer requests replace older ones that have not started yet.
//
// A panic in the wasm (a bug: every failure should come back as an Error) aborts the instance: JS
// sees a WebAssembly.RuntimeError ("unreachable") and the instance's state is undefined from then
// on. The panic hook (src/wasm/mod.rs) leaves the panic's message in globalThis.attnvizPanic; the
// request that crashed answers with that message, the worker starts a fresh instance of the same
// compiled module and reloads the models it had (from the Cache API), and the next request runs on
// the fresh one. (The dead instance's memory stays referenced by its glue module, which an ES
// module map never drops: a crash costs that memory until the page is reloaded.)

import { modelStore } from './model-store.js';
import { readHeads } from './own-model.js';
import { DEFAULT_HUB, HubRepo, hubId, parseHubId } from './hub.js';
import { modelFiles } from '../core/weights.js';
import { BUILDS, buildFile, pickBuild, SITE_ROOT } from './wasm-build.js';

let base = null; // configure({ base }): where pkg/ lives; null: wasm-build.js finds it from its own URL
let modelsBase = null; // the default models' folder (its index.json): init's models, else beside SITE_ROOT
// Files handed over instead of served (the notebook, whose kernel sends them: init's and
// add-files' `files`, { path under base: Blob }): fetched and imported from memory.
const givenFiles = new Map();
let hub = DEFAULT_HUB; // where hf: model ids are fetched from (init's hub, configure({ hub }))
let build = null; // the wasm build loaded (wasm-build.js BUILDS), chosen at init
let wasm = null; // the imported pkg/attnviz.js module of the current instance
let wasmModule = null; // the compiled pkg/attnviz_bg.wasm, kept to start fresh instances
let wasmExports = null; // the current instance's exports (its memory, measured for the tests)
let helpers = []; // the shared-memory build's GEMM helper workers (pool-helper.js)
let generation = 0; // how many instances were started (1 until a crash)
let initPromise = null;
let index = null; // manifests from models/index.json, filtered to supported architectures
const models = new Map(); // id → { model: AttnModel, info, manifest }
const loading = new Map(); // id → Promise

const CACHE_NAME = 'attnviz-models-v1';
const PANIC_GLOBAL = 'attnvizPanic'; // where the panic hook leaves a panic's message (src/wasm/mod.rs)

// ---------------------------------------------------------------- the request queue
const pending = new Map(); // channel → message (only the newest, not yet started)
let draining = false;

self.onmessage = (ev) => {
  const msg = ev.data;
  if (!msg || typeof msg !== 'object') return;
  // init and load are never superseded (several widgets may wait on one load).
  if (['init', 'load', 'cached', 'open', 'open-hub', 'remove', 'add-files'].includes(msg.type)) {
    handle(msg);
    return;
  }
  const key = `${msg.channel}:${msg.type}`;
  const old = pending.get(key);
  if (old) self.postMessage({ id: old.id, type: 'superseded' });
  pending.set(key, msg);
  if (!draining) {
    draining = true;
    yieldThen(drain);
  }
};

// Yield to the event loop without setTimeout's 4 ms clamp on nested timers: a message to
// ourselves is queued behind the messages that arrived while we computed.
const yieldChannel = new MessageChannel();
let yieldCallback = null;
yieldChannel.port1.onmessage = () => {
  const cb = yieldCallback;
  yieldCallback = null;
  if (cb) cb();
};
function yieldThen(cb) {
  yieldCallback = cb;
  yieldChannel.port2.postMessage(null);
}

async function drain() {
  const next = pending.entries().next();
  if (next.done) {
    draining = false;
    return;
  }
  const [key, msg] = next.value;
  pending.delete(key);
  await handle(msg);
  // Yield to the event loop so that messages that arrived meanwhile can supersede older ones.
  yieldThen(drain);
}

async function handle(msg) {
  try {
    switch (msg.type) {
      case 'init':
        await ensureInit(msg);
        self.postMessage({ id: msg.id, type: 'init', build: { ...wasm.buildInfo(), ...build }, supported: supported(), models: index });
        break;
      case 'load': {
        const m = await ensureModel(msg.model, msg.id);
        self.postMessage({ id: msg.id, type: 'loaded', info: m.info });
        break;
      }
      case 'cached': {
        await ensureInit();
        self.postMessage({ id: msg.id, type: 'cached', cached: await isCached(String(msg.model)) });
        break;
      }
      case 'attend': {
        const m = await ensureModel(msg.model, msg.id);
        const t0 = performance.now();
        const result = guarded(() => m.model.attend(String(msg.text ?? ''), { ...generateOptions(m, msg.gen), valueNorms: !!msg.valueNorms }));
        const ms = performance.now() - t0;
        self.postMessage({ id: msg.id, type: 'result', result, ms }, floatBuffers(result));
        break;
      }
      case 'step': {
        const m = await ensureModel(msg.model, msg.id);
        const step = guarded(() => m.model.step(String(msg.text ?? ''), msg.kind, msg.layer | 0, msg.head | 0, generateOptions(m, msg.gen)));
        self.postMessage({ id: msg.id, type: 'step', step }, floatBuffers(step));
        break;
      }
      case 'heads': {
        const m = await ensureModel(msg.model, msg.id);
        const heads = guarded(() => m.model.heads(String(msg.text ?? ''), generateOptions(m, msg.gen)));
        self.postMessage({ id: msg.id, type: 'heads', heads });
        break;
      }
      case 'positions': {
        const m = await ensureModel(msg.model, msg.id);
        const positions = guarded(() => m.model.positions(msg.count | 0));
        self.postMessage({ id: msg.id, type: 'positions', positions }, floatBuffers(positions));
        break;
      }
      case 'open': {
        await ensureInit();
        const inspected = (report) => self.postMessage({ id: msg.id, type: 'progress', inspected: report });
        self.postMessage({ id: msg.id, type: 'opened', ...(await openUserModel(msg.files, msg.name, inspected)) });
        break;
      }
      case 'open-hub': {
        await ensureInit();
        const progress = (m) => self.postMessage({ id: msg.id, type: 'progress', ...m });
        self.postMessage({ id: msg.id, type: 'opened', ...(await openHubModel(String(msg.model), progress)) });
        break;
      }
      case 'add-files': {
        await ensureInit();
        giveFiles(msg.files);
        for (const m of Array.isArray(msg.models) ? msg.models : []) {
          if (m && !index.some((x) => x.id === m.id)) index.push(m);
        }
        self.postMessage({ id: msg.id, type: 'added', models: index });
        break;
      }
      case 'remove': {
        await ensureInit();
        await removeUserModel(String(msg.model));
        self.postMessage({ id: msg.id, type: 'removed' });
        break;
      }
      case '__panicForTest': {
        // TEST HOOK (tests/e2e/robust-page.test.mjs): the page never sends it.
        await ensureInit();
        guarded(() => wasm.__panicForTest(String(msg.message ?? 'panic for test')));
        break;
      }
      default:
        throw new Error(`unknown request type ${msg.type}`);
    }
  } catch (e) {
    self.postMessage({ id: msg.id, type: 'error', message: errorText(e) });
  }
}

/** The wasm calls' generation options for `gen` ({ n, temperature, top_k, seed } or null):
 *  none for a model that does not generate. */
function generateOptions(m, gen) {
  if (!gen || !m.info.generates) return {};
  const generate = Math.max(0, Math.floor(Number(gen.n) || 0));
  if (!generate) return {};
  const t = Number(gen.temperature) || 0;
  if (!(t > 0)) return { generate };
  return { generate, temperature: t, topK: Math.max(0, Math.floor(Number(gen.top_k) || 0)), seed: Math.max(0, Math.floor(Number(gen.seed) || 0)) >>> 0 };
}

function errorText(e) {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}

// ---------------------------------------------------------------- wasm and models
function supported() {
  return Array.from(wasm.supportedArchitectures());
}

/** The instance and the models' index, once; the first call's init message (base, models, hub,
 *  build, threads) says where from and which build (later calls, without one, wait for it). */
async function ensureInit({ base: newBase, models, hub: newHub, build: buildId, threads, files } = {}) {
  if (!initPromise) {
    if (newBase) base = new URL(newBase);
    modelsBase = models ? new URL(models) : new URL('models/', SITE_ROOT);
    giveFiles(files);
    if (newHub) hub = String(newHub);
    if (!build) build = BUILDS[buildId] ? { ...BUILDS[buildId], threads } : pickBuild();
    initPromise = (async () => {
      await startInstance();
      // No default models beside the files (an npm install, a bundled app): only the reader's
      // own and Hub ids, and a widget naming a default model says it is not available here.
      const indexUrl = new URL('index.json', modelsBase);
      const res = await fetchFile(indexUrl);
      if (!res.ok && res.status !== 404) throw new Error(`${indexUrl}: HTTP ${res.status}`);
      const all = res.ok ? await res.json() : [];
      const sup = new Set(supported());
      index = (Array.isArray(all) ? all : []).filter((m) => m && sup.has(m.architecture)).concat(await listUserModels());
    })();
    initPromise.catch(() => {
      initPromise = null;
    });
  }
  return initPromise;
}

async function compileWasm() {
  const res = await fetchFile(buildFile(build.dir, 'wasm', base));
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
  const url = buildFile(build.dir, 'glue', base);
  if (generation > 0) url.searchParams.set('instance', String(generation + 1));
  let glue;
  try {
    const given = givenFile(url);
    glue = await import(given ? URL.createObjectURL(given) : url.href);
    if (!wasmModule) wasmModule = await compileWasm();
  } catch (e) {
    // A site built without the shared-memory build (make build skips it without Debian's
    // rustc-web): the one-thread relaxed build serves instead.
    if (build.id !== 'threads') throw e;
    build = BUILDS.relaxed;
    return startInstance();
  }
  wasmExports = await glue.default({ module_or_path: wasmModule });
  generation += 1;
  wasm = glue;
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
async function startHelpers(glue) {
  const count = build.threads - 1;
  const started = Array.from({ length: count }, () => new Promise((resolve, reject) => {
    const w = new Worker(new URL('pool-helper.js', import.meta.url), { type: 'module', name: 'attnviz GEMM helper' });
    helpers.push(w);
    w.onmessage = ({ data }) => (data.ready ? resolve() : reject(new Error(data.error)));
    w.onerror = (ev) => reject(new Error(ev.message || 'could not start'));
    w.postMessage({ glue, module: wasmModule, memory: wasmExports.memory });
  }));
  try {
    await Promise.all(started);
    // A helper joins the pool just after it says it is ready (its next call never returns).
    while (wasm.poolThreads() < count + 1) await new Promise((r) => setTimeout(r, 1));
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
 * Run one synchronous call into the wasm. If it crashes, start over with a fresh instance, reload
 * the models this one had, and throw an Error that says what happened (the panic's message when
 * the panic hook left one).
 */
function guarded(call) {
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

/** Drop the crashed instance and everything in it; start a fresh one and reload its models. */
function restart() {
  const had = new Set();
  for (const entry of models.values()) {
    had.add(entry.key);
    // Forget the object without calling into the dead instance (its finalizer would).
    if (typeof entry.model.__destroy_into_raw === 'function') entry.model.__destroy_into_raw();
  }
  models.clear();
  loading.clear();
  wasm = null;
  stopHelpers();
  initPromise = startInstance();
  initPromise.catch(() => {
    initPromise = null;
  });
  // Reload in the background; a request for one of them waits on its loading promise.
  for (const id of had) ensureModel(id, null).catch(() => {});
}

/**
 * A model by key: its id or dir, loaded from its int8 file set where the manifest has one
 * (`variants.int8`), or `<id>@exact` for its own `files` (the f32 weights). The session names
 * models with the same rule (session.js modelKey; this worker may run from a Blob, so it cannot
 * import it).
 */
function ensureModel(id, reqId) {
  if (models.has(id)) return Promise.resolve(models.get(id));
  if (!loading.has(id)) {
    const p = (async () => {
      await ensureInit();
      const { manifest, suffix } = manifestOf(id);
      const key = `${manifest.id}${suffix}`;
      if (models.has(key)) return models.get(key);
      const files = manifest.user ? await readUserModel(manifest) : await fetchFiles(manifest, reqId);
      await ensureInit(); // the instance may have been restarted while the files came
      const model = guarded(() => wasm.AttnModel.load(JSON.stringify(manifest), files));
      const entry = { model, info: guarded(() => model.info()), manifest, key };
      models.set(key, entry);
      models.set(`${manifest.dir}${suffix}`, entry);
      return entry;
    })();
    loading.set(id, p);
    p.catch(() => {
      if (loading.get(id) === p) loading.delete(id);
    });
  }
  return loading.get(id);
}

/** The listed model (and its weights) a key names: `id` or `dir`, `@exact` for its own files. */
function manifestOf(id) {
  const [name, weights] = String(id).split('@');
  const listed = index.find((m) => m.id === name || m.dir === name);
  if (!listed || (weights && weights !== 'exact')) throw new Error(`model "${id}" is not available (known: ${index.map((m) => m.id).join(', ')})`);
  const fileSet = modelFiles(listed, weights);
  return { manifest: fileSet === listed.files ? listed : { ...listed, files: fileSet }, suffix: weights === 'exact' ? '@exact' : '' };
}

/** Are a model's files (by key) loaded, or all in the Cache API, so that loading it downloads nothing? */
async function isCached(id) {
  if (models.has(id)) return true;
  const { manifest } = manifestOf(id);
  if (manifest.user) return true; // kept in this browser's storage
  const cache = await openCache();
  if (!cache) return false;
  const sizes = manifest.sizes || {};
  for (const name of manifest.files) {
    const hit = await cache.match(new URL(`${manifest.dir}/${name}`, modelsBase).href);
    if (!hit || (sizes[name] && Number(hit.headers.get('content-length') || sizes[name]) !== sizes[name])) return false;
  }
  return true;
}

/** Keep files handed over ({ path under base: Blob }) to be read instead of fetched. */
function giveFiles(files) {
  if (!files || !base) return;
  for (const [path, blob] of Object.entries(files)) if (blob instanceof Blob) givenFiles.set(new URL(path, base).href, blob);
}

/** The file handed over for `url` (its query string aside), or undefined. */
function givenFile(url) {
  if (!givenFiles.size) return undefined;
  const u = new URL(url);
  u.search = '';
  return givenFiles.get(u.href);
}

/** fetch(url), or the file handed over for it, as a Response. */
function fetchFile(url) {
  const given = givenFile(url);
  if (!given) return fetch(url);
  const type = String(url).endsWith('.wasm') ? 'application/wasm' : String(url).endsWith('.js') ? 'text/javascript' : 'application/octet-stream';
  return Promise.resolve(new Response(given, { headers: { 'content-type': type, 'content-length': String(given.size) } }));
}

async function openCache() {
  // Files handed over are in memory already: no copy in the browser's cache.
  if (givenFiles.size) return null;
  try {
    if (self.caches) return await self.caches.open(CACHE_NAME);
  } catch {
    // Cache API unavailable (e.g. not a secure context): fetch every time.
  }
  return null;
}

/** Fetch all files of a model (from the Cache API when there), reporting progress. */
async function fetchFiles(manifest, reqId) {
  const sizes = manifest.sizes || {};
  const total = manifest.files.reduce((a, f) => a + (sizes[f] || 0), 0);
  let loaded = 0;
  let lastReport = 0;
  const report = (force) => {
    const now = performance.now();
    if (!force && now - lastReport < 80) return;
    lastReport = now;
    self.postMessage({ id: reqId, type: 'progress', model: manifest.id, loaded, total });
  };
  report(true);
  const cache = await openCache();
  const out = {};
  for (const name of manifest.files) {
    const url = new URL(`${manifest.dir}/${name}`, modelsBase).href;
    let bytes = null;
    if (cache) {
      const hit = await cache.match(url);
      if (hit) {
        const buf = new Uint8Array(await hit.arrayBuffer());
        if (!sizes[name] || buf.byteLength === sizes[name]) bytes = buf;
      }
    }
    if (!bytes) {
      const res = await fetchFile(url);
      if (!res.ok) throw new Error(`${manifest.dir}/${name}: HTTP ${res.status}`);
      const expected = sizes[name] || Number(res.headers.get('content-length')) || 0;
      if (res.body && res.body.getReader) {
        const reader = res.body.getReader();
        const chunks = [];
        let got = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          chunks.push(value);
          got += value.byteLength;
          loaded += value.byteLength;
          report(false);
        }
        bytes = new Uint8Array(got);
        let o = 0;
        for (const c of chunks) {
          bytes.set(c, o);
          o += c.byteLength;
        }
      } else {
        bytes = new Uint8Array(await res.arrayBuffer());
        loaded += bytes.byteLength;
      }
      if (expected && bytes.byteLength !== expected) {
        throw new Error(`${manifest.dir}/${name}: got ${bytes.byteLength} bytes, manifest says ${expected}`);
      }
      if (cache) {
        try {
          await cache.put(url, new Response(bytes, { headers: { 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) } }));
        } catch {
          // quota exceeded: still works, just not offline
        }
      }
    } else {
      loaded += bytes.byteLength;
    }
    out[name] = bytes;
    report(true);
  }
  return out;
}

// ---------------------------------------------------------------- a user's own models

/** An id of its own for a user's model, from its name (the permalink's `m`). */
function userId(name) {
  const slug = String(name).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'model';
  let id = `own-${slug}`;
  for (let i = 2; index.some((m) => m.id === id || m.dir === id); i++) id = `own-${slug}-${i}`;
  return id;
}

/** Inspect, load, then keep a user's files. */
function openUserModel(list, name, inspected) {
  const byName = new Map((Array.isArray(list) ? list : []).filter((f) => f && f.file instanceof Blob).map((f) => [String(f.name), f.file]));
  return openModelFiles(byName, {
    name: String(name),
    // The same files opened again (same name, sizes and times of change): the copy already kept.
    stamp: (files) => JSON.stringify(files.map((f) => [byName.get(f).size, byName.get(f).lastModified])),
    read: async (f) => new Uint8Array(await byName.get(f).arrayBuffer()),
    newId: () => userId(name),
    inspected: (report) => inspected({ inspected: report }),
  });
}

/**
 * A Hub repo's model by id (worker/hub.js): its headers read by Range requests and inspected
 * before the weights are fetched (progress: { inspected } once, then { loaded, total }), then
 * loaded and kept under the id, so a permalink or a widget naming the id finds it kept.
 */
async function openHubModel(id, progress) {
  const parsed = parseHubId(id);
  const canonical = hubId(parsed);
  const kept = index.find((m) => m.user && m.id === canonical);
  if (kept) return keptAnswer(kept, null);
  const repo = new HubRepo(hub, parsed);
  const remote = await repo.modelFiles();
  let loaded = 0;
  let total = 0;
  return openModelFiles(remote, {
    name: parsed.repo.split('/')[1],
    stamp: (files) => JSON.stringify([hub, parsed.revision, files.map((f) => [f, remote.get(f).size])]),
    read: (f) =>
      remote.get(f).bytes((n) => {
        loaded += n;
        progress({ loaded, total });
      }),
    newId: () => canonical,
    inspected: (report) => {
      total = report.manifest.files.reduce((a, f) => a + remote.get(f).size, 0);
      progress({ inspected: report });
      progress({ loaded, total });
    },
    extra: { hub: { repo: parsed.repo, revision: parsed.revision, file: parsed.file, endpoint: hub } },
  });
}

/**
 * Inspect, load, then keep a model's files (byName: name → a Blob, or a worker/hub.js
 * RemoteFile: what readHeads reads headers from); nothing changes (index, storage) when one step
 * fails. stamp(files) identifies the same files opened again (the copy kept is used), read(f)
 * gives a file's bytes, newId() the model's id.
 */
async function openModelFiles(byName, { name, stamp, read, newId, inspected, extra = {} }) {
  const t0 = performance.now();
  const heads = await readHeads(byName, wasm.ggufHeadBytes());
  const report = guarded(() => wasm.inspectModel(name, heads));
  report.inspect_ms = performance.now() - t0;
  inspected(report); // said before the weights are read: they may take a while
  const sameFiles = stamp(report.manifest.files);
  const kept = index.find((m) => m.user && m.name === name && m.stamp === sameFiles);
  if (kept) return keptAnswer(kept, report);
  const files = {};
  for (const f of report.manifest.files) files[f] = await read(f);
  // From here to index.push nothing awaits: two models opened at once get ids of their own.
  const id = newId();
  const manifest = { ...report.manifest, ...extra, id, dir: id, name, user: true, stamp: sameFiles, sizes: Object.fromEntries(Object.entries(files).map(([f, b]) => [f, b.byteLength])) };
  const t1 = performance.now();
  const model = guarded(() => wasm.AttnModel.load(JSON.stringify(manifest), files));
  report.load_ms = performance.now() - t1;
  report.wasm_memory_bytes = wasmMemoryBytes();
  const entry = { model, info: guarded(() => model.info()), manifest };
  models.set(id, entry);
  index.push(manifest);
  const blobs = new Map(report.manifest.files.map((f) => [f, byName.get(f) instanceof Blob ? byName.get(f) : new Blob([files[f]])]));
  const stored = await storeUserModel(manifest, blobs);
  return { manifest, report, info: entry.info, stored, storage: !!(await modelStore()) };
}

/** The answer to an open of a model this browser already keeps: that copy, loaded. */
async function keptAnswer(manifest, report) {
  return { manifest, report, info: (await ensureModel(manifest.id, null)).info, stored: true, storage: true };
}

function wasmMemoryBytes() {
  return wasmExports && wasmExports.memory ? wasmExports.memory.buffer.byteLength : null;
}

/** Keeps the files (model-store.js); false, with a warning, when it could not. */
async function storeUserModel(manifest, byName) {
  const store = await modelStore();
  if (!store) return false;
  try {
    await store.keep(manifest, byName);
    return true;
  } catch (e) {
    console.warn(`attnviz: ${manifest.name} is loaded but could not be kept for the next visit: ${e.message}`);
    return false;
  }
}

/** The manifests of the models kept (none where the browser keeps nothing for us). */
async function listUserModels() {
  try {
    const store = await modelStore();
    const out = store ? await store.list() : [];
    return out.sort((a, b) => String(a.name).localeCompare(String(b.name)));
  } catch {
    return []; // storage went away since: offer none
  }
}

async function readUserModel(manifest) {
  const store = await modelStore();
  if (!store) throw new Error(`${manifest.name} is no longer kept in this browser: open its files again`);
  const blobs = await store.read(manifest);
  const out = {};
  for (const f of manifest.files) out[f] = new Uint8Array(await blobs[f].arrayBuffer());
  return out;
}

async function removeUserModel(id) {
  const m = index.find((x) => x.id === id && x.user);
  if (!m) throw new Error(`"${id}" is not one of your models`);
  // From storage first: if that fails, the model stays listed and the error says why.
  const store = await modelStore();
  if (store) await store.remove(id);
  index = index.filter((x) => x !== m);
  const entry = models.get(id);
  models.delete(id);
  loading.delete(id);
  if (entry) entry.model.free();
}

// ---------------------------------------------------------------- transferring answers
/**
 * The buffers of every Float32Array in a result, to transfer instead of copy. The wasm facade
 * builds each array as a copy with its own buffer (never a view into wasm memory).
 */
function floatBuffers(value, out = []) {
  if (value instanceof Float32Array) out.push(value.buffer);
  else if (Array.isArray(value)) for (const v of value) floatBuffers(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) floatBuffers(v, out);
  return out;
}
