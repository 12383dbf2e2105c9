// The lesson page: fills each snippet from its widget's own attributes (so the code shown is
// exactly what draws the map beside it), wires the Copy buttons, and marks the page ready once
// every widget has drawn (document.body.dataset.state, as on the main page).

const scriptUrl = 'attention-viz.js';

function tagFor(el) {
  const attrs = [...el.attributes].filter((a) => a.name !== 'id' && a.name !== 'data-state' && a.name !== 'data-draw-count');
  const quote = (v) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
  const parts = attrs.map((a) => (a.value === '' ? a.name : `${a.name}="${quote(a.value)}"`));
  // The widget's text shows only where attention-viz.js did not load (its shadow root hides it).
  const fallback = el.textContent.trim();
  return `<attention-viz\n  ${parts.join('\n  ')}>${fallback ? `\n  ${fallback}` : ''}\n</attention-viz>`;
}

for (const box of document.querySelectorAll('.snippet[data-for]')) {
  const el = document.getElementById(box.dataset.for);
  box.querySelector('code').textContent = `<script type="module" src="${scriptUrl}"></script>\n${tagFor(el)}`;
}
const iframeBox = document.querySelector('.snippet[data-iframe]');
if (iframeBox) {
  const ex = document.getElementById('ex-pronoun');
  const q = new URLSearchParams({ model: 'minilm', text: ex.getAttribute('text'), view: 'head', layer: ex.getAttribute('layer'), head: ex.getAttribute('head') });
  iframeBox.querySelector('code').textContent =
    `<iframe src="embed.html?${q.toString()}"\n  title="Attention map" style="width:100%;border:0" height="480"></iframe>\n` +
    '<script>\n  // Each widget resizes the iframe it is in (any number of them on a page).\n  addEventListener("message", (e) => {\n    if (!e.data || e.data.type !== "attnviz:height") return;\n    for (const f of document.querySelectorAll("iframe"))\n      if (f.contentWindow === e.source) f.height = e.data.height;\n  });\n</script>';
}
for (const btn of document.querySelectorAll('.snippet button')) {
  btn.addEventListener('click', async () => {
    const text = btn.parentElement.querySelector('code').textContent;
    try {
      await navigator.clipboard.writeText(text);
      btn.textContent = 'Copied';
    } catch {
      const r = document.createRange();
      r.selectNodeContents(btn.parentElement.querySelector('code'));
      getSelection().removeAllRanges();
      getSelection().addRange(r);
      btn.textContent = 'Selected';
    }
    setTimeout(() => { btn.textContent = 'Copy'; }, 1500);
  });
}

// The lesson's numbers are the model's own: each .w[data-for] is read from its widget's map
// (weight()) when that widget draws its lesson sentence. The paper's Transformer is trained by
// make models, and numpy's BLAS kernel for the processor rounds differently, which 400 steps of
// training carry into other weights (▁vermelha → ▁bola: 0.73 with OpenBLAS's AVX-512 kernel, 0.58
// with OPENBLAS_CORETYPE=Haswell, the same seed), so no number is written into the prose.
for (const span of document.querySelectorAll('.w[data-for]')) {
  const el = document.getElementById(span.dataset.for);
  if (!el) continue;
  el.addEventListener('attention-change', () => {
    if (typeof el.weight !== 'function' || el.viewState.text !== el.getAttribute('text')) return;
    const { kind, layer, query, key } = span.dataset;
    const w = el.weight({ kind, layer, query, key });
    if (w !== null) span.textContent = w.toFixed(2);
  });
}

// Ready once every widget that has begun has drawn, and one has: the lesson's widgets load lazily
// (loading="lazy", data-state "waiting" until scrolled near), so one far below the fold is not
// waited for; scrolling to it makes the page "loading" again until it has drawn.
const widgets = [...document.querySelectorAll('attention-viz')];
const check = () => {
  const states = widgets.map((w) => w.dataset.state);
  if (states.includes('error')) {
    document.body.dataset.state = 'error';
    document.body.dataset.error = widgets.map((w) => w.shadowRoot && w.shadowRoot.querySelector('.msg.err')).filter(Boolean).map((m) => m.textContent).join('; ');
  } else document.body.dataset.state = states.includes('ready') && states.every((st) => st === 'ready' || st === 'waiting') ? 'ready' : 'loading';
};
const watcher = new MutationObserver(check);
for (const w of widgets) watcher.observe(w, { attributes: true, attributeFilter: ['data-state'] });
check();
