// Service worker of the page, and of a page of widgets that asks for it (data-offline,
// configure({ offline }): shell/offline.js registers it): keeps the app shell, the wasm and the
// model index so that a second visit works offline. Network first (so a new build is picked up at
// once), the cache only when the network fails. Model weights are not handled here: the worker
// keeps them in its own Cache API store (attnviz-models-v1).
//
// Nothing is downloaded for the cache on a first visit: the host, once drawn, posts the URLs it
// loaded ({ type: 'keep', urls }) and they are copied from the browser's HTTP cache
// (cache: 'force-cache'); later loads refresh the copies as they pass through fetch below.
const SHELL = 'attnviz-shell-v3'; // v3: the files moved into core/, shell/, worker/, page/, widget/
// What the page's Web Worker loads (the page cannot list those among its own resources; the
// worker's modules, www/worker/, are imported by the worker, some of them only by it). The page
// adds the wasm build the worker loaded (pkg/ or pkg/relaxed/, wasm-build.js) to its list.
const WORKER_FILES = [
  'worker/worker.js',
  'worker/protocol.js',
  'worker/engine.js',
  'worker/library.js',
  'worker/model-files.js',
  'worker/weights.js',
  'worker/worker-client.js',
  'worker/wasm-build.js',
  'worker/model-store.js',
  'worker/hub.js',
  'worker/own-model.js',
  'models/index.json',
];

self.addEventListener('install', (event) => event.waitUntil(self.skipWaiting()));

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) if (name.startsWith('attnviz-shell-') && name !== SHELL) await caches.delete(name);
    await self.clients.claim();
  })());
});

/** Same-origin GETs under the scope, except model weights. */
function cacheable(url) {
  const scope = new URL(self.registration.scope);
  if (url.origin !== scope.origin || !url.pathname.startsWith(scope.pathname)) return false;
  const rest = url.pathname.slice(scope.pathname.length);
  return !rest.startsWith('models/') || rest === 'models/index.json';
}

self.addEventListener('message', (event) => {
  const msg = event.data;
  if (!msg || msg.type !== 'keep' || !Array.isArray(msg.urls)) return;
  const scope = self.registration.scope;
  const urls = [...new Set(msg.urls.concat(WORKER_FILES.map((f) => new URL(f, scope).href)))]
    .map((u) => new URL(u, scope))
    .filter(cacheable);
  event.waitUntil((async () => {
    const cache = await caches.open(SHELL);
    await Promise.all(urls.map(async (url) => {
      if (await cache.match(url)) return;
      try {
        const res = await fetch(new Request(url, { cache: 'force-cache' }));
        if (res.ok) await cache.put(url, res);
      } catch {
        // offline or gone: it is cached the next time it loads
      }
    }));
  })());
});

/**
 * Whether the kept copy is the file the server sent now (same ETag, or same Last-Modified and
 * length): then it is not written again. Every visit rewrote the whole shell (the wasm build's
 * 2.8 MB among it) into the cache: 0.25 CPU-s and 150 ms of a repeat visit's 1.4 s to its first
 * map in headless Chromium.
 */
function sameVersion(kept, res) {
  if (!kept) return false;
  const same = (h) => kept.headers.get(h) !== null && kept.headers.get(h) === res.headers.get(h);
  return same('etag') || (same('last-modified') && same('content-length'));
}

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  if (!cacheable(url)) return;
  event.respondWith((async () => {
    const cache = await caches.open(SHELL);
    try {
      const [res, kept] = await Promise.all([fetch(req), cache.match(req).catch(() => undefined)]);
      if (res.ok && res.type === 'basic' && !sameVersion(kept, res)) cache.put(req, res.clone()).catch(() => {});
      return res;
    } catch (err) {
      const hit = (await cache.match(req, { ignoreSearch: true })) || (req.mode === 'navigate' ? await cache.match(new URL('./', self.registration.scope)) : null);
      if (hit) return hit;
      throw err;
    }
  })());
});
