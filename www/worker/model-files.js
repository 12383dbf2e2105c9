// A model's files as bytes, wherever they are: handed over (the notebook's kernel sends them, and
// the wasm build's, as Blobs), in the worker's Cache API store, kept in this browser
// (model-store.js: a user's own and Hub models), or downloaded. Every download goes through one
// loop, receive(): its bytes as they arrive, progress, and a check of their count against the
// size the manifest (or the Hub's server, hub.js) gave.

import { modelStore } from './model-store.js';

const CACHE_NAME = 'attnviz-models-v1';

let base = null; // configure({ base }): where pkg/ lives; null: wasm-build.js finds it from its own URL
let modelsBase = null; // the default models' folder (its index.json)
// Files handed over instead of served (the notebook, whose kernel sends them: init's and
// add-files' `files`, { path under base: Blob }): fetched and imported from memory.
const givenFiles = new Map();

/** Where the files are (init's base and models: URLs; base null where wasm-build.js finds pkg/). */
export function locate({ base: newBase, models }) {
  if (newBase) base = new URL(newBase);
  modelsBase = new URL(models);
}

/** The base configure({ base }) named (pkg/ under it), or null. */
export const filesBase = () => base;

/** The URL of the default models' index. */
export const indexUrl = () => new URL('index.json', modelsBase);

/** The URL a listed model's file is served at. */
const fileUrl = (manifest, name) => new URL(`${manifest.dir}/${name}`, modelsBase).href;

/** Keep files handed over ({ path under base: Blob }) to be read instead of fetched. */
export function giveFiles(files) {
  if (!files || !base) return;
  for (const [path, blob] of Object.entries(files)) if (blob instanceof Blob) givenFiles.set(new URL(path, base).href, blob);
}

/** The file handed over for `url` (its query string aside), or undefined. */
export function givenFile(url) {
  if (!givenFiles.size) return undefined;
  const u = new URL(url);
  u.search = '';
  return givenFiles.get(u.href);
}

/** fetch(url), or the file handed over for it, as a Response. */
export function fetchFile(url, signal = undefined) {
  const given = givenFile(url);
  if (!given) return fetch(url, { signal });
  const type = String(url).endsWith('.wasm') ? 'application/wasm' : String(url).endsWith('.js') ? 'text/javascript' : 'application/octet-stream';
  return Promise.resolve(new Response(given, { headers: { 'content-type': type, 'content-length': String(given.size) } }));
}

/**
 * A response's whole body as bytes, read as it arrives: onChunk(n) after each chunk of n bytes.
 * `expected`: the byte count it must have (null: any); else the error names the file (`what`) and
 * who gave the size (`said`: 'manifest says', 'the server said'). `stallMs`: give up (and say so)
 * when no bytes came for that long.
 */
/** reader.read(), or the download cancelled and an Error (message()) when no bytes came for ms. */
function readWithin(reader, ms, message) {
  let timer;
  const stalled = new Promise((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(message())); // before the cancel, which ends the pending read as if done
      reader.cancel().catch(() => {});
    }, ms);
  });
  return Promise.race([reader.read(), stalled]).finally(() => clearTimeout(timer));
}

export async function receive(res, { expected = null, onChunk = () => {}, what, said, stallMs = 0 }) {
  let bytes;
  if (res.body && res.body.getReader) {
    const reader = res.body.getReader();
    const chunks = [];
    let got = 0;
    for (;;) {
      const { done, value } = await (stallMs ? readWithin(reader, stallMs, () => `${what}: stalled, no bytes for ${Math.round(stallMs / 1000)} s after ${got} of ${expected ?? 'its'} bytes (a slow or stalled network)`) : reader.read());
      if (done) break;
      chunks.push(value);
      got += value.byteLength;
      onChunk(value.byteLength);
    }
    bytes = new Uint8Array(got);
    let o = 0;
    for (const c of chunks) {
      bytes.set(c, o);
      o += c.byteLength;
    }
  } else {
    bytes = new Uint8Array(await res.arrayBuffer());
    onChunk(bytes.byteLength);
  }
  if (expected !== null && bytes.byteLength !== expected) throw new Error(`${what}: got ${bytes.byteLength} bytes, ${said} ${expected}`);
  return bytes;
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

/** Are all of a listed model's files in the Cache API (at the sizes its manifest gives)? */
export async function allCached(manifest) {
  const cache = await openCache();
  if (!cache) return false;
  const sizes = manifest.sizes || {};
  for (const name of manifest.files) {
    const hit = await cache.match(fileUrl(manifest, name));
    if (!hit || (sizes[name] && Number(hit.headers.get('content-length') || sizes[name]) !== sizes[name])) return false;
  }
  return true;
}

/** A file's bytes from the cache, or null when it is not there at the size the manifest gives. */
async function fromCache(cache, url, size) {
  const hit = cache && (await cache.match(url));
  if (!hit) return null;
  const buf = new Uint8Array(await hit.arrayBuffer());
  return !size || buf.byteLength === size ? buf : null;
}

/** Download one file of a listed model, then keep a copy in the cache (when there is one). */
async function download(manifest, name, cache, onChunk, signal) {
  const url = fileUrl(manifest, name);
  const what = `${manifest.dir}/${name}`;
  const res = await fetchFile(url, signal);
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status}`);
  const expected = (manifest.sizes || {})[name] || Number(res.headers.get('content-length')) || null;
  const bytes = await receive(res, { expected, onChunk, what, said: 'manifest says' });
  if (cache) {
    try {
      await cache.put(url, new Response(bytes, { headers: { 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) } }));
    } catch {
      // quota exceeded: still works, just not offline
    }
  }
  return bytes;
}

/**
 * All files of a listed model ({ name: bytes }), from the Cache API when there, else downloaded;
 * onProgress({ loaded, total }) at the start, at most every 80 ms while bytes arrive, and after
 * each file. `signal` (an AbortSignal) stops the downloads, rejecting with its reason.
 */
export async function fetchModelFiles(manifest, onProgress, signal = undefined) {
  const sizes = manifest.sizes || {};
  const total = manifest.files.reduce((a, f) => a + (sizes[f] || 0), 0);
  let loaded = 0;
  let lastReport = 0;
  const report = (force) => {
    const now = performance.now();
    if (!force && now - lastReport < 80) return;
    lastReport = now;
    onProgress({ loaded, total });
  };
  report(true);
  const cache = await openCache();
  const out = {};
  for (const name of manifest.files) {
    signal?.throwIfAborted();
    let bytes = await fromCache(cache, fileUrl(manifest, name), sizes[name]);
    if (bytes) loaded += bytes.byteLength;
    else {
      bytes = await download(manifest, name, cache, (n) => {
        loaded += n;
        report(false);
      }, signal);
    }
    out[name] = bytes;
    report(true);
  }
  return out;
}

// ---------------------------------------------------------------- models kept in this browser

/** Does this browser keep models for us (model-store.js)? */
export const canKeep = async () => !!(await modelStore());

/** Keeps the files (byName: name → Blob); false, with a warning, when it could not. */
export async function keepModel(manifest, byName) {
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

/** The manifests of the models kept, by name (none where the browser keeps nothing for us). */
export async function keptModels() {
  try {
    const store = await modelStore();
    const out = store ? await store.list() : [];
    return out.sort((a, b) => String(a.name).localeCompare(String(b.name)));
  } catch {
    return []; // storage went away since: offer none
  }
}

/** A kept model's files ({ name: bytes }). */
export async function readKeptModel(manifest) {
  const store = await modelStore();
  if (!store) throw new Error(`${manifest.name} is no longer kept in this browser: open its files again`);
  const blobs = await store.read(manifest);
  const out = {};
  for (const f of manifest.files) out[f] = new Uint8Array(await blobs[f].arrayBuffer());
  return out;
}

/** Forget a kept model's files (nothing to do where the browser keeps nothing). */
export async function forgetKeptModel(id) {
  const store = await modelStore();
  if (store) await store.remove(id);
}
