// The library of models the worker can run: the index (the default models' index.json, filtered
// to the architectures this build runs, the models this browser keeps and those handed over), the
// models loaded, by key (weights.js: `id` or `id@exact`), and the models a reader opens: their own
// files or a Hugging Face Hub repo (hub.js), inspected, loaded and kept (model-files.js).

import { readHeads } from './own-model.js';
import { DEFAULT_HUB, DEFAULT_HUB_PATIENCE_MS, HubRepo, hubId, parseHubId } from './hub.js';
import { SITE_ROOT } from './wasm-build.js';
import { modelFiles, parseModelKey } from './weights.js';
import { guarded, memoryBytes, onRestart, startEngine, supported, wasm } from './engine.js';
import { allCached, canKeep, fetchFile, fetchModelFiles, forgetKeptModel, giveFiles, indexUrl, keepModel, keptModels, locate, readKeptModel } from './model-files.js';

let hub = DEFAULT_HUB; // where hf: model ids are fetched from (init's hub, configure({ hub }))
let hubPatienceMs = DEFAULT_HUB_PATIENCE_MS; // init's hubTimeout (configure({ hubTimeout }))
let initPromise = null;
let index = null; // manifests from models/index.json, filtered to supported architectures
const models = new Map(); // key → { model: AttnModel, info, manifest, key }
const loading = new Map(); // key → Promise

/** The manifests of the models the worker offers (after ensureInit). */
export const catalogue = () => index;

/** The instance and the models' index, once; the first call's init message (base, models, hub,
 *  build, threads, files) says where from and which build (later calls, without one, wait for it). */
export async function ensureInit({ base, models: modelsFolder, hub: newHub, hubTimeout, build: buildId, threads, files } = {}) {
  if (!initPromise) {
    locate({ base, models: modelsFolder || new URL('models/', SITE_ROOT) });
    giveFiles(files);
    if (newHub) hub = String(newHub);
    if (hubTimeout > 0) hubPatienceMs = hubTimeout * 1000;
    initPromise = (async () => {
      await startEngine(buildId, threads);
      // No default models beside the files (an npm install, a bundled app): only the reader's
      // own and Hub ids, and a widget naming a default model says it is not available here.
      const url = indexUrl();
      const res = await fetchFile(url);
      if (!res.ok && res.status !== 404) throw new Error(`${url}: HTTP ${res.status}`);
      // A dev server that answers every unknown path with the app's index.html (Vite's) has none.
      const none = !res.ok || /^text\/html\b/.test(res.headers.get('content-type') || '');
      const all = none ? [] : await res.json();
      const sup = new Set(supported());
      index = (Array.isArray(all) ? all : []).filter((m) => m && sup.has(m.architecture)).concat(await keptModels());
    })();
    initPromise.catch(() => {
      initPromise = null;
    });
  }
  return initPromise;
}

// After a crash: forget the models of the dead instance (without calling into it: their
// finalizers would) and reload them on the fresh one in the background; a request for one of
// them waits on its loading promise.
onRestart((fresh) => {
  const had = new Set();
  for (const entry of models.values()) {
    had.add(entry.key);
    if (typeof entry.model.__destroy_into_raw === 'function') entry.model.__destroy_into_raw();
  }
  models.clear();
  loading.clear();
  initPromise = fresh;
  initPromise.catch(() => {
    initPromise = null;
  });
  for (const key of had) ensureModel(key).catch(() => {});
});

/**
 * A model by key (weights.js): its id or dir, loaded from its int8 file set where the manifest
 * has one (`variants.int8`), or `<id>@exact` for its own `files` (the f32 weights). Downloads
 * report onProgress({ model, loaded, total }).
 */
export function ensureModel(key, onProgress = () => {}) {
  if (models.has(key)) return Promise.resolve(models.get(key));
  if (!loading.has(key)) {
    const stop = new AbortController();
    const p = (async () => {
      await ensureInit();
      const { manifest, suffix } = manifestOf(key);
      const canonical = `${manifest.id}${suffix}`;
      if (models.has(canonical)) return models.get(canonical);
      const files = manifest.user ? await readKeptModel(manifest) : await fetchModelFiles(manifest, (p) => onProgress({ model: manifest.id, ...p }), stop.signal);
      await ensureInit(); // the instance may have been restarted while the files came
      const model = guarded(() => wasm().AttnModel.load(JSON.stringify(manifest), files));
      const entry = { model, info: guarded(() => model.info()), manifest, key: canonical };
      models.set(canonical, entry);
      models.set(`${manifest.dir}${suffix}`, entry);
      return entry;
    })();
    loading.set(key, p);
    downloads.set(p, stop);
    p.then(() => downloads.delete(p), () => {
      downloads.delete(p);
      if (loading.get(key) === p) loading.delete(key);
    });
  }
  return loading.get(key);
}

const downloads = new Map(); // a load under way (ensureModel's promise) → its AbortController

/** Stop the download of a model (by key) not yet loaded: its load fails with why; true if one was under way. */
export function cancelLoad(key, why) {
  const stop = downloads.get(loading.get(key));
  if (!stop) return false;
  stop.abort(new Error(why));
  return true;
}

/** The listed model (and its weights) a key names: `id` or `dir`, `@exact` for its own files. */
function manifestOf(key) {
  const { id, weights } = parseModelKey(key);
  const listed = index.find((m) => m.id === id || m.dir === id);
  if (!listed) throw new Error(`model "${key}" is not available (known: ${index.map((m) => m.id).join(', ')})`);
  const fileSet = modelFiles(listed, weights);
  return { manifest: fileSet === listed.files ? listed : { ...listed, files: fileSet }, suffix: weights === 'exact' ? '@exact' : '' };
}

/** Is a model (by key) loaded, or are its files kept or all in the Cache API, so that loading it
 *  downloads nothing? */
export async function isCached(key) {
  if (models.has(key)) return true;
  const { manifest } = manifestOf(key);
  if (manifest.user) return true; // kept in this browser's storage
  return allCached(manifest);
}

/** Files handed over ({ path under base: Blob }) and the manifests of the models among them. */
export function addModels(files, manifests) {
  giveFiles(files);
  for (const m of Array.isArray(manifests) ? manifests : []) {
    if (m && !index.some((x) => x.id === m.id)) index.push(m);
  }
}

// ---------------------------------------------------------------- a reader's own models

/** An id of its own for a user's model, from its name (the permalink's `m`). */
function userId(name) {
  const slug = String(name).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'model';
  let id = `own-${slug}`;
  for (let i = 2; index.some((m) => m.id === id || m.dir === id); i++) id = `own-${slug}-${i}`;
  return id;
}

/** A name for files picked one by one (no folder's name): the checkpoint's own (config.json's
 *  _name_or_path, e.g. "bert-base-uncased"), else its architecture or model type. */
async function nameFromConfig(byName) {
  const fallback = 'model';
  const file = byName.get('config.json');
  if (!file || file.size > 1 << 20) return fallback;
  let config;
  try {
    config = JSON.parse(await file.text());
  } catch {
    return fallback; // inspectModel says what is wrong with it
  }
  const path = typeof config?._name_or_path === 'string' ? config._name_or_path.replace(/[\\/]+$/, '').split(/[\\/]/).pop() : '';
  const architecture = Array.isArray(config?.architectures) && typeof config.architectures[0] === 'string' ? config.architectures[0] : '';
  const type = typeof config?.model_type === 'string' ? config.model_type : '';
  return (path || architecture || type || fallback).slice(0, 80);
}

/** Inspect, load, then keep a user's files ([{ name, file }]); inspected(report) before the
 *  weights are read. name null: named from its config.json. */
export async function openUserModel(list, givenName, inspected) {
  const byName = new Map((Array.isArray(list) ? list : []).filter((f) => f && f.file instanceof Blob).map((f) => [String(f.name), f.file]));
  const name = givenName ?? (await nameFromConfig(byName));
  return openModelFiles(byName, {
    name: String(name),
    // The same files opened again (same name, sizes and times of change): the copy already kept.
    stamp: (files) => JSON.stringify(files.map((f) => [byName.get(f).size, byName.get(f).lastModified])),
    read: async (f) => new Uint8Array(await byName.get(f).arrayBuffer()),
    newId: () => userId(name),
    inspected,
  });
}

/**
 * A Hub repo's model by id (hub.js): its headers read by Range requests and inspected before the
 * weights are fetched (progress: { inspected } once, then { loaded, total }), then loaded and kept
 * under the id, so a permalink or a widget naming the id finds it kept.
 */
export async function openHubModel(id, progress) {
  const parsed = parseHubId(id);
  const canonical = hubId(parsed);
  const kept = index.find((m) => m.user && m.id === canonical);
  if (kept) return keptAnswer(kept, null);
  // A header read's progress, per file: a GGUF's first 32 MiB take a while on a slow network.
  const repo = new HubRepo(hub, parsed, hubPatienceMs, (file, loaded, total, whole) => progress({ loaded, total, reading: whole ? file : `${file}'s header` }));
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
 * Inspect, load, then keep a model's files (byName: name → a Blob, or a hub.js RemoteFile: what
 * readHeads reads headers from); nothing changes (index, storage) when one step fails.
 * stamp(files) identifies the same files opened again (the copy kept is used), read(f) gives a
 * file's bytes, newId() the model's id.
 * → { manifest, report, info, stored, storage }
 */
async function openModelFiles(byName, { name, stamp, read, newId, inspected, extra = {} }) {
  const t0 = performance.now();
  const heads = await readHeads(byName, wasm().ggufHeadBytes());
  const report = guarded(() => wasm().inspectModel(name, heads));
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
  const model = guarded(() => wasm().AttnModel.load(JSON.stringify(manifest), files));
  report.load_ms = performance.now() - t1;
  report.wasm_memory_bytes = memoryBytes();
  firstForward(model);
  const entry = { model, info: guarded(() => model.info()), manifest };
  models.set(id, entry);
  index.push(manifest);
  const blobs = new Map(report.manifest.files.map((f) => [f, byName.get(f) instanceof Blob ? byName.get(f) : new Blob([files[f]])]));
  const stored = await keepModel(manifest, blobs);
  return { manifest, report, info: entry.info, stored, storage: await canKeep() };
}

// What a model just opened computes before it is accepted: common words, so a tokenizer whose
// ids go past the embedding rows or weights that overflow (a map of NaN) fail here, not later.
const FIRST_TEXT = 'The cat sat on the mat because it was tired.';

/**
 * Run a first forward of a user's model that passed the checks and loaded: one that fails is
 * dropped (never listed, kept or shown) and the error says why.
 */
function firstForward(model) {
  try {
    guarded(() => model.attend(FIRST_TEXT, {}));
  } catch (e) {
    // After a crash the model is of the dead instance: dropped without calling into it.
    if (wasm()) model.free();
    else model.__destroy_into_raw();
    throw new Error(`it loads, but its first forward fails: ${e.message}`, { cause: e });
  }
}

/** The answer to an open of a model this browser already keeps: that copy, loaded. */
async function keptAnswer(manifest, report) {
  return { manifest, report, info: (await ensureModel(manifest.id)).info, stored: true, storage: true };
}

/** Forget a user's model: from storage first (if that fails, it stays listed and the error says
 *  why), then from the index and memory. */
export async function removeUserModel(id) {
  const m = index.find((x) => x.id === id && x.user);
  if (!m) throw new Error(`"${id}" is not one of your models`);
  await forgetKeptModel(id);
  index = index.filter((x) => x !== m);
  const entry = models.get(id);
  models.delete(id);
  loading.delete(id);
  if (entry) entry.model.free();
}
