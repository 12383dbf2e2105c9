// <attention-viz>: the widget's public address, the one file a page loads
// (<script type="module" src="…/attention-viz.js">; what it takes: widget/attention-viz.js).
// Here because data-base, data-hub, data-hub-timeout (seconds) and data-offline are read from the <script> tag that loaded this very
// file (module scripts have no currentScript), before the element is defined: a widget already
// in the page starts its worker as it is upgraded, so the base must be known by then.

import { AttentionViz, configure } from './widget/attention-viz.js';

try {
  const tag = [...document.querySelectorAll('script[src]')].find((s) => new URL(s.src, document.baseURI).href === import.meta.url);
  if (tag) configure({ base: tag.dataset.base || null, hub: tag.dataset.hub || null, hubTimeout: tag.dataset.hubTimeout || null, ...(tag.hasAttribute('data-offline') ? { offline: true } : {}) });
} catch {
  // configure() throws once the worker runs: a later configure call wins only before first use.
}

if (!customElements.get('attention-viz')) customElements.define('attention-viz', AttentionViz);

export { AttentionViz, configure };
