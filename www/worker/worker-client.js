// One worker per page, shared by the page shell and every <attention-viz> widget.
// Each user of the worker gets a Channel; on a channel a newer request supersedes an older one
// (the older promise resolves to { superseded: true } and its answer is never drawn). Each
// request gets an id its answers carry back; the messages themselves are protocol.js's.

import { pickBuild, PREBUNDLED_FROM, SITE_ROOT } from './wasm-build.js';
import { timed } from '../base/timing.js';
import { DEFAULT_HUB } from './hub.js';
import { ANSWER, lane, REQUEST } from './protocol.js';

let base = SITE_ROOT; // where worker/, pkg/ and models/ are
let baseGiven = false; // configure({ base }): files from there; else found from this module
let models = null; // configure({ models }): the folder of the models' index (default: base's models/)
let buildRequest = null; // configure({ build }): 'simd' forces pkg/ (wasm-build.js)
let hub = null; // configure({ hub }): where hf: model ids are fetched from (worker/hub.js; the Hub by default)
let hubTimeout = null; // configure({ hubTimeout }): seconds a Hub may keep us waiting (hub.js; 30 by default)
let workerUrl = null; // configure({ worker }): the worker script's URL (the notebook's: a blob of the bundled worker)
let givenFiles = null; // configure({ files }): { path under base: Blob } the worker reads instead of fetching
let worker = null;
let nextId = 1;
const waiting = new Map(); // id → { resolve, reject, onProgress, channel, type }
const latest = new Map(); // lane (protocol.js) → newest id
let initPromise = null;
const loadPromises = new Map();
let channelCount = 0;

/**
 * Set where pkg/, models/ and worker/ live (a URL or a path relative to the page), which wasm
 * build to load (build: 'simd' for pkg/ even where relaxed SIMD validates; default: the best
 * one), and the Hub that hf: model ids are fetched from (hub: a URL with the Hugging Face Hub's
 * layout, {hub}/{repo}/resolve/{revision}/{file}; default https://huggingface.co) and how long it may
 * keep us waiting (hubTimeout: seconds, for its answer and between bytes; default 30). A host that
 * serves no files (the notebook) gives the worker's script (worker: a URL, e.g. a blob's) and
 * the files under base it reads instead of fetching (files: { 'pkg/attnviz_bg.wasm': Blob, … }).
 */
export function configure(opts = {}) {
  if ((opts.base || opts.build || opts.hub || opts.hubTimeout || opts.models || opts.worker || opts.files) && worker) throw new Error('attnviz: configure({ base, build, hub, hubTimeout, models, worker, files }) must be called before the first use');
  if (opts.worker) workerUrl = String(opts.worker);
  if (opts.files) givenFiles = opts.files;
  const folder = (u) => new URL(u.endsWith('/') ? u : `${u}/`, document.baseURI).href;
  if (opts.hub) hub = new URL(opts.hub, document.baseURI).href.replace(/\/+$/, '');
  if (Number(opts.hubTimeout) > 0) hubTimeout = Number(opts.hubTimeout);
  if (opts.models) models = folder(opts.models);
  if (opts.base) {
    base = folder(opts.base);
    baseGiven = true;
  }
  if (opts.build) buildRequest = opts.build;
}

/** The Hub that hf: model ids are fetched from (configure({ hub })). */
export const workerHub = () => hub || DEFAULT_HUB;

/** Where pkg/, models/ and worker/ live when configure({ base }) said so; else null (each
 *  module finds the files from its own URL, as a bundler sees them). */
export const configuredBase = () => (baseGiven ? base : null);

function ensureWorker() {
  if (worker) return worker;
  const url = new URL('worker/worker.js', base);
  if (workerUrl) {
    worker = new Worker(workerUrl, { type: 'module', name: 'attnviz' });
  } else if (!baseGiven && !PREBUNDLED_FROM) {
    // This very form is what bundlers (Vite, webpack, esbuild plugins) recognise and bundle.
    // (Pre-bundled by Vite's dev server, the worker is the package's own file: base's, below.)
    worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'attnviz' });
  } else if (url.origin === location.origin) {
    worker = new Worker(url, { type: 'module', name: 'attnviz' });
  } else {
    // Workers must be same-origin: start a tiny module worker that imports the real one
    // (the other origin must allow CORS for this).
    const src = `import ${JSON.stringify(url.href)};`;
    worker = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module', name: 'attnviz' });
  }
  // Timed (timing.js). What an answer's promise runs next comes after this returns (the
  // session's updates are timed on their own).
  worker.onmessage = timed('worker:message', (ev) => {
    const m = ev.data;
    const w = waiting.get(m.id);
    if (!w) return;
    if (m.type === ANSWER.progress) {
      if (w.onProgress) w.onProgress(m);
      return;
    }
    waiting.delete(m.id);
    if (m.type === ANSWER.error) {
      w.reject(new Error(m.message));
      return;
    }
    if (m.type === ANSWER.superseded || (w.channel && latest.get(lane(w.channel, w.type)) !== m.id)) {
      w.resolve({ superseded: true });
      return;
    }
    w.resolve(m);
  });
  worker.onerror = (ev) => {
    const err = new Error(`attnviz worker failed: ${ev.message || 'could not start (check that worker.js and pkg/ are served)'}`);
    for (const [, w] of waiting) w.reject(err);
    waiting.clear();
  };
  return worker;
}

function request(msg, onProgress) {
  const w = ensureWorker();
  const id = nextId++;
  const full = { ...msg, id };
  if (msg.channel) latest.set(lane(msg.channel, msg.type), id);
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject, onProgress, channel: msg.channel, type: msg.type });
    w.postMessage(full);
  });
}

/** { build, supported, models } — the wasm build and the models this build can run. */
export function init() {
  if (!initPromise) {
    // A microtask later: a page that imports the widget and then calls configure() in the same
    // script configures it before the widgets already in the page start the worker.
    initPromise = Promise.resolve().then(() => {
      const pick = pickBuild(buildRequest);
      return request({ type: REQUEST.init, base: baseGiven ? base : null, models: models || new URL('models/', base).href, build: pick.id, threads: pick.threads, hub, hubTimeout, files: givenFiles });
    }).then((m) => ({ build: m.build, supported: m.supported, models: m.models }));
    initPromise.catch(() => {
      initPromise = null;
    });
  }
  return initPromise;
}

const progressListeners = new Map(); // model → Set(fn)
const loadWaiters = new Map(); // model → how many loadModel() callers wait for its load under way

/** Load a model once for the whole page; resolves to its info(). */
export function loadModel(id, onProgress) {
  if (onProgress) {
    if (!progressListeners.has(id)) progressListeners.set(id, new Set());
    progressListeners.get(id).add(onProgress);
  }
  if (!loadPromises.has(id) || loadWaiters.has(id)) loadWaiters.set(id, (loadWaiters.get(id) || 0) + 1);
  if (!loadPromises.has(id)) {
    const p = init()
      .then(() =>
        request({ type: REQUEST.load, model: id }, (m) => {
          for (const fn of progressListeners.get(id) || []) fn(m);
        }),
      )
      .then((m) => m.info);
    // One handler for both outcomes: a separate p.finally(...) would make a second promise that
    // rejects with p and that nobody handles (an unhandled rejection on every failed load).
    p.then(
      () => {
        progressListeners.delete(id);
        loadWaiters.delete(id);
      },
      () => {
        progressListeners.delete(id);
        loadWaiters.delete(id);
        if (loadPromises.get(id) === p) loadPromises.delete(id);
      },
    );
    loadPromises.set(id, p);
  }
  return loadPromises.get(id);
}

/**
 * A caller of loadModel(id) no longer wants it (a reader stopped the exact weights' download):
 * when no other caller of the page waits for it, the worker stops its download and the load fails.
 */
export function cancelLoad(id) {
  const n = (loadWaiters.get(id) || 0) - 1;
  if (n > 0) {
    loadWaiters.set(id, n);
    return;
  }
  if (!loadWaiters.delete(id)) return; // loaded already, or never asked for
  request({ type: REQUEST.cancelLoad, model: id }).catch(() => {});
}

/**
 * Hand the worker files it reads instead of fetching ({ path under base: Blob }) and the manifests
 * of the models among them (a notebook's kernel sends a model so): they join the catalogue that
 * init() gave every session, and load as the served ones do.
 */
export async function addModels(files, manifests = []) {
  const catalog = await init();
  await request({ type: REQUEST.addFiles, files, models: manifests });
  for (const m of manifests) if (!catalog.models.some((x) => x.id === m.id)) catalog.models.push(m);
}

/** Would loading model `id` (a key: `id` or `id@exact`) download nothing (loaded, or every file in
 *  the browser's cache)? */
export function isCached(id) {
  return init().then(() => request({ type: REQUEST.cached, model: id })).then((m) => !!m.cached);
}

/**
 * A user's model files ([{ name, file }], own-model.js) → { manifest, report, info, stored, storage }:
 * the worker inspects their headers (onInspected(report) then, before the weights are read), loads
 * them and keeps them in this browser (model-store.js; stored: false when it could not, storage:
 * false when the browser offers no storage at all; the same files opened again are the copy
 * already kept). Rejects with what is wrong or does not fit; nothing changes then. The
 * catalogue that init() gave every session on the page gains the model.
 */
export function openModel(files, name, onInspected = () => {}) {
  return opened({ type: REQUEST.open, files, name }, (p) => onInspected(p.inspected));
}

/**
 * A model of the Hugging Face Hub by id (hf:owner/name[@revision][?file=x.gguf], worker/hub.js)
 * → as openModel's answer: the worker fetches the repo's headers (onInspected(report)), then its
 * files (onProgress({ loaded, total, reading }): `reading` names a header being read, absent for
 * the weights' download), loads and keeps them; the catalogue gains the model under
 * that id. Rejects naming the repo and the file that failed.
 */
export function openHubModel(id, onInspected = () => {}, onProgress = () => {}) {
  return opened({ type: REQUEST.openHub, model: id }, (p) => (p.inspected ? onInspected(p.inspected) : onProgress(p)));
}

/** An open request (a user's files or a Hub id): the model it opens joins the catalogue, loaded. */
async function opened(msg, onProgress) {
  // Ask that what the user keeps is not evicted under storage pressure (a no-op where denied).
  if (navigator.storage && navigator.storage.persist) navigator.storage.persist().catch(() => {});
  const catalog = await init();
  const m = await request(msg, onProgress);
  if (!catalog.models.some((x) => x.id === m.manifest.id)) catalog.models.push(m.manifest);
  loadPromises.set(m.manifest.id, Promise.resolve(m.info));
  return m;
}

/** Forget a user's model: from the worker, the browser's storage and the catalogue. */
export async function removeModel(id) {
  const catalog = await init();
  await request({ type: REQUEST.remove, model: id });
  const i = catalog.models.findIndex((m) => m.id === id);
  if (i >= 0) catalog.models.splice(i, 1);
  loadPromises.delete(id);
}

/** A private lane for one view (page or widget). */
export class Channel {
  constructor(name) {
    this.name = `${name || 'c'}${++channelCount}`;
  }

  /** → { result, ms } or { superseded: true }. gen: null or { generate, temperature, topK, seed } (protocol.js generationOptions);
   *  valueNorms: also the value-weighted norms (result.value_norms); step: null or { kind, layer,
   *  head }, also that head's internals from the same forward (result.step); lens: also the
   *  logit lens (result.logit_lens). onProgress (optional) hears the protocol's progress: a
   *  download's { model, loaded, total }, a long forward's { forward: { kind, layer, rows } }.
   *  maps (optional): the layers [{ kind, layer }] the view draws, the only maps sent when all of
   *  them would be many (protocol.js); maps() then asks for the others. */
  attend(model, text, gen = null, valueNorms = false, step = null, lens = false, onProgress = undefined, maps = null) {
    return request({ type: REQUEST.attend, channel: this.name, model, text, gen, valueNorms: !!valueNorms, step, lens: !!lens, maps }, onProgress);
  }

  /** → { maps } (a Float32Array [heads, query_len, key_len]) or { superseded: true }: one layer's
   *  maps that this channel's attend answer `forward` (result.forward) left in the worker. */
  maps(model, forward, kind, layer) {
    return request({ type: REQUEST.maps, channel: this.name, model, forward, kind, layer });
  }

  /** → { thumbnails } (a Float32Array [layers, heads, min(size, query_len), min(size, key_len)])
   *  or { superseded: true }: every layer's maps of `kind` that attend answer `forward` left in
   *  the worker, pooled as the views pool them (the model view of a long text). */
  thumbnails(model, forward, kind, size) {
    return request({ type: REQUEST.thumbnails, channel: this.name, model, forward, kind, size });
  }

  /** → { step } or { superseded: true } (gen as for attend) */
  step(model, text, kind, layer, head, gen = null) {
    return request({ type: REQUEST.step, channel: this.name, model, text, kind, layer, head, gen });
  }


  /** → { positions } (the model's position table, positions 0..count) or { superseded: true } */
  positions(model, count) {
    return request({ type: REQUEST.positions, channel: this.name, model, count });
  }
}

/**
 * TEST HOOK, not an API (tests/e2e/robust-page.test.mjs): makes the wasm in the worker panic on
 * purpose with `message`. Rejects with the Error a real panic gives a page; the worker then runs
 * on a fresh wasm instance with its models reloaded. The page never calls it.
 */
export function __panicForTest(message) {
  return request({ type: REQUEST.panicForTest, message: String(message) });
}
