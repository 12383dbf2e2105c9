// The iframe form of the widget: embed.html?model=minilm&text=…&view=head&layer=3&head=2&editable
// (or ?model=smollm2&text=…&generate=8&generate-step=3: the widget's attributes, by name)
// Builds one <attention-viz> from the query string (attributes set as data, never as markup) and
// reports its height to the parent page: postMessage({ type: 'attnviz:height', height, id }).
import { AttentionViz } from '../attention-viz.js';

const EMBED_BOX_HEIGHT = 560; // px: the page's box at 1280×720 (78vh)
const params = new URLSearchParams(location.search);
const el = document.createElement('attention-viz');
// Every attribute the widget reads (generate, top-k, generate-step, … too), editable aside.
for (const name of AttentionViz.observedAttributes.filter((n) => n !== 'editable')) {
  const v = params.get(name);
  if (v !== null) el.setAttribute(name, v);
}
if (params.has('editable') && params.get('editable') !== '0') el.setAttribute('editable', '');
// The map's box: the frame grows to what it holds, so a box in vh of the frame would shrink with
// every report (78% of 78% of …); a fixed one unless ?height= says another.
if (!el.hasAttribute('height')) el.setAttribute('height', String(EMBED_BOX_HEIGHT));
document.body.appendChild(el);

const id = params.get('id') || null;
let last = 0;
function report() {
  const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
  if (height === last || window.parent === window) return;
  last = height;
  window.parent.postMessage({ type: 'attnviz:height', height, id }, '*');
}
new ResizeObserver(report).observe(document.body);
el.addEventListener('attention-ready', () => {
  document.body.dataset.state = 'ready';
  report();
});
el.addEventListener('attention-change', report);
el.addEventListener('attention-error', (e) => {
  document.body.dataset.state = 'error';
  document.body.dataset.error = e.detail.message;
  report();
});
