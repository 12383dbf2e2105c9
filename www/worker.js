// The Web Worker that owns the wasm instance and every loaded model.
//
// Protocol (all messages carry `id`; requests also carry `channel`):
//   → { id, channel, type: 'init', base }              ← { id, type: 'init', build, supported, models }
//   → { id, channel, type: 'load', model }             ← { id, type: 'progress', model, loaded, total }*
//                                                       ← { id, type: 'loaded', info }
//   → { id, channel, type: 'attend', model, text }     ← { id, type: 'result', result, ms }
//   → { id, channel, type: 'step', model, text, kind, layer, head } ← { id, type: 'step', step }
// `result` and `step` are exactly what the wasm facade returns: the types described once in
// schema/attend.schema.json (the CLI prints the same as JSON), arrays of floats as Float32Arrays.
//   any failure                                        ← { id, type: 'error', message }
//   a request superseded by a newer one on its channel ← { id, type: 'superseded' }
// Typed arrays in answers are transferred, not copied. Requests on one channel are collapsed:
// while the worker computes, newer requests replace older ones that have not started yet.

let base = new URL('./', import.meta.url); // where pkg/ and models/ live
let wasm = null; // the imported pkg/attnviz.js module
let initPromise = null;
let index = null; // manifests from models/index.json, filtered to supported architectures
const models = new Map(); // id → { model: AttnModel, info, manifest }
const loading = new Map(); // id → Promise

const CACHE_NAME = 'attnviz-models-v1';

// ---------------------------------------------------------------- the request queue
const pending = new Map(); // channel → message (only the newest, not yet started)
let draining = false;

self.onmessage = (ev) => {
  const msg = ev.data;
  if (!msg || typeof msg !== 'object') return;
  // init and load are never superseded (several widgets may wait on one load).
  if (msg.type === 'init' || msg.type === 'load') {
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
        await ensureInit(msg.base);
        self.postMessage({ id: msg.id, type: 'init', build: wasm.buildInfo(), supported: supported(), models: index });
        break;
      case 'load': {
        const m = await ensureModel(msg.model, msg.id);
        self.postMessage({ id: msg.id, type: 'loaded', info: m.info });
        break;
      }
      case 'attend': {
        const m = await ensureModel(msg.model, msg.id);
        const t0 = performance.now();
        const result = m.model.attend(String(msg.text ?? ''));
        const ms = performance.now() - t0;
        self.postMessage({ id: msg.id, type: 'result', result, ms }, floatBuffers(result));
        break;
      }
      case 'step': {
        const m = await ensureModel(msg.model, msg.id);
        const step = m.model.step(String(msg.text ?? ''), msg.kind, msg.layer | 0, msg.head | 0);
        self.postMessage({ id: msg.id, type: 'step', step }, floatBuffers(step));
        break;
      }
      default:
        throw new Error(`unknown request type ${msg.type}`);
    }
  } catch (e) {
    self.postMessage({ id: msg.id, type: 'error', message: errorText(e) });
  }
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

async function ensureInit(newBase) {
  if (!initPromise) {
    if (newBase) base = new URL(newBase, base);
    initPromise = (async () => {
      wasm = await import(new URL('pkg/attnviz.js', base).href);
      await wasm.default({ module_or_path: new URL('pkg/attnviz_bg.wasm', base) });
      const res = await fetch(new URL('models/index.json', base));
      if (!res.ok) throw new Error(`models/index.json: HTTP ${res.status}`);
      const all = await res.json();
      const sup = new Set(supported());
      index = (Array.isArray(all) ? all : []).filter((m) => m && sup.has(m.architecture));
    })();
    initPromise.catch(() => {
      initPromise = null;
    });
  }
  return initPromise;
}

function ensureModel(id, reqId) {
  if (models.has(id)) return Promise.resolve(models.get(id));
  if (!loading.has(id)) {
    const p = (async () => {
      await ensureInit();
      const manifest = index.find((m) => m.id === id || m.dir === id);
      if (!manifest) throw new Error(`model "${id}" is not available (known: ${index.map((m) => m.id).join(', ')})`);
      if (models.has(manifest.id)) return models.get(manifest.id);
      const files = await fetchFiles(manifest, reqId);
      const model = wasm.AttnModel.load(JSON.stringify(manifest), files);
      const entry = { model, info: model.info(), manifest };
      models.set(manifest.id, entry);
      models.set(manifest.dir, entry);
      return entry;
    })();
    loading.set(id, p);
    p.catch(() => loading.delete(id));
  }
  return loading.get(id);
}

async function openCache() {
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
    const url = new URL(`models/${manifest.dir}/${name}`, base).href;
    let bytes = null;
    if (cache) {
      const hit = await cache.match(url);
      if (hit) {
        const buf = new Uint8Array(await hit.arrayBuffer());
        if (!sizes[name] || buf.byteLength === sizes[name]) bytes = buf;
      }
    }
    if (!bytes) {
      const res = await fetch(url);
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
          await cache.put(url, new Response(bytes, { headers: { 'content-type': 'application/octet-stream' } }));
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
