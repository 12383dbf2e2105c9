// A second visit works offline, for the page and, where its author asks, for a page of widgets:
// sw.js keeps the shell and the wasm, the worker keeps the model files in the Cache API. sw.js
// is registered once a host has drawn, and told which files this page and the worker loaded, so
// it copies them from the HTTP cache instead of downloading them again.

import { buildFile, configuredBase, PREBUNDLED_FROM } from '../core/engine.js';

// (Pre-bundled by Vite's dev server: the package's own files, wasm-build.js PREBUNDLED_FROM.)
// ?no-inline: Vite would inline a file this small as a data: URL, and a service worker must be a
// file of the site; a static server ignores the query.
// Made on first use: in the notebook's bundle (loaded from a blob: URL) a relative URL would
// throw as the module loads.
const defaultWorker = () => (PREBUNDLED_FROM ? new URL('sw.js', PREBUNDLED_FROM) : new URL('../sw.js?no-inline', import.meta.url));
let asked = false;

/**
 * Register sw.js for the folder it is in and hand it this page's files; once per page (every
 * widget of a lesson calls it). A service worker controls only pages inside its folder: a page
 * elsewhere gets a console warning saying where it must be, and nothing is registered.
 * `catalog` says which wasm build the worker loaded (its files are not the page's resources).
 */
export function keepForOffline(catalog, sw = defaultWorker()) {
  if (asked) return;
  asked = true;
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return;
  if (sw.protocol !== location.protocol) {
    // A bundler inlined sw.js (a data: URL): a service worker must be a file of the site.
    console.warn('attnviz: offline use needs sw.js served as a file of this site (as make site writes it; in a bundled app, copy node_modules/attnviz/sw.js to the site\'s root and configure({ offline: \'/sw.js\' })); it will not work offline');
    return;
  }
  const scope = new URL('./', sw);
  if (!location.href.startsWith(scope.href)) {
    console.warn(`attnviz: offline use needs this page inside ${scope.href} (the folder of sw.js, as make site writes it; in a bundled app, copy node_modules/attnviz/sw.js to the site's root and configure({ offline: '/sw.js' })); it will not work offline`);
    return;
  }
  navigator.serviceWorker
    .register(sw, { scope: scope.href })
    .then(() => navigator.serviceWorker.ready)
    .then((reg) => {
      const dir = catalog ? catalog.build.dir : 'pkg/';
      const urls = [location.href.split('#')[0], ...performance.getEntriesByType('resource').map((e) => e.name), ...['glue', 'wasm'].map((f) => buildFile(dir, f, configuredBase()).href)];
      if (catalog && catalog.build.id === 'threads') urls.push((PREBUNDLED_FROM ? new URL('worker/pool-helper.js', PREBUNDLED_FROM) : new URL('../worker/pool-helper.js', import.meta.url)).href);
      reg.active.postMessage({ type: 'keep', urls });
    })
    .catch((e) => console.warn('attnviz: service worker not registered:', e.message));
}
