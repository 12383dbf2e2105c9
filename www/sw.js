// Service worker of the page (not of the widget): keeps the app shell, the wasm and the model
// index so that a second visit works offline. Network first (so a new build is picked up at
// once), the cache only when the network fails. Model weights are not handled here: the worker
// keeps them in its own Cache API store (attnviz-models-v1).
const SHELL = 'attnviz-shell-v1';
const FILES = [
  './', 'index.html', 'styles.css', 'app.js', 'analysis.js', 'state.js', 'render.js', 'svg.js',
  'worker.js', 'worker-client.js', 'views/common.js', 'views/head.js', 'views/grid.js',
  'views/heatmap.js', 'views/cross.js', 'views/step.js', 'pkg/attnviz.js', 'pkg/attnviz_bg.wasm',
  'models/index.json',
];

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(SHELL);
    await cache.addAll(FILES.map((f) => new Request(new URL(f, self.registration.scope), { cache: 'reload' })));
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  const scope = new URL(self.registration.scope);
  if (url.origin !== scope.origin || !url.pathname.startsWith(scope.pathname)) return;
  const rest = url.pathname.slice(scope.pathname.length);
  if (rest.startsWith('models/') && rest !== 'models/index.json') return;
  event.respondWith((async () => {
    const cache = await caches.open(SHELL);
    try {
      const res = await fetch(req);
      if (res.ok && res.type === 'basic') cache.put(req, res.clone()).catch(() => {});
      return res;
    } catch (err) {
      const hit = (await cache.match(req)) || (req.mode === 'navigate' ? await cache.match(new URL('./', scope)) : null);
      if (hit) return hit;
      throw err;
    }
  })());
});
