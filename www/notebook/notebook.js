// The notebook host (issue 25): `attnviz.head_view(attention, tokens)` & co. in Python draw the
// attention PyTorch computed with the widget's own shell (an <attention-viz> given the maps by
// showAttention, core/supplied.js), in Jupyter through anywidget and in the file save_html()
// writes. Bundled into one module by scripts/notebook.mjs (python/attnviz/static/notebook.js).
//
// The model it is given (anywidget's, or save_html's stand-in with the same get/on):
//   spec: { blocks: [{ arg, heads, q, k }], tokens, encoder_tokens, decoder_tokens, causal, label,
//           specials, attributes: { view, layer, head, height, … }, heads: [h…] | null,
//           head_scores: [{ kind, layer, head, entropy, …, label, score }] (attnviz.heads),
//           compare: { tokens, label } (B: its blocks' arg is compare_attention),
//           display_mode: 'light' | 'dark' (model_view's; absent: the notebook's scheme) }
//   data: every block's [heads, q, k] float32 maps, one after another, little-endian (a
//         DataView or bytes: anywidget's binary buffer, or save_html's decoded base64)
// A live widget (attnviz.show: a model runs in this browser, on the text the reader types):
//   spec: { live: { model (a default model's id, its files under models/<dir>/) | own (a name: a
//           user's folder or .gguf, its files under own/) | hub (an hf: id the browser fetches,
//           from endpoint, a mirror, when given), manifests }, attributes }
//   the files (asked of the kernel: { type: 'files?' } → { type: 'files', names } with one binary
//   buffer per name) — the model worker (worker.js), the SIMD wasm build (pkg/) and the model's
//   files; nothing is fetched. Those in live.later (the exact weights under weights="auto") come
//   on a second request, { type: 'files?', names }: the first map is drawn from the int8 weights
//   meanwhile, as on the page.
// Each widget sends the kernel a picture of its last drawing ({ type: 'picture', png }), kept
// in an output (#attnviz-picture-<spec.picture_id>) that shows where the widget cannot run.
import { AttentionViz } from '../widget/attention-viz.js';
import { addModels, configure, openModel } from '../core/engine.js';
import { NUMBERS_CHECKED } from '../core/supplied.js';

// Where the worker believes the files are: a name only (every file it asks for is handed over).
const HANDED_OVER = 'https://attnviz.invalid/';

// Jupyter imports this bundle anew for every widget's output (a blob: URL each), so each has
// its own copy of every module; but a page has one <attention-viz> element class, the first
// copy's, and its engine is the one every widget's element talks to. So the first copy's class
// and engine are the page's, and later copies configure and feed those: a show() after a
// head_view() then configures the engine its element uses, and a second show() model joins it.
const PAGE = Symbol.for('attnviz.notebook');
const page = (globalThis[PAGE] ||= { AttentionViz, addModels, configure, openModel, started: false });

/** The float32 numbers of the buffer: a view of it where it starts on a 4-byte boundary (as
 *  anywidget's buffers do; at 512 tokens × 144 maps a copy took 80 ms), else an aligned copy. */
function floats(buffer) {
  const [buf, offset, length] = buffer instanceof ArrayBuffer ? [buffer, 0, buffer.byteLength] : [buffer.buffer, buffer.byteOffset, buffer.byteLength];
  if (offset % 4 === 0) return new Float32Array(buf, offset, length >> 2);
  return new Float32Array(new Uint8Array(buf, offset, length).slice().buffer);
}

/** spec + data → what showAttention takes: each argument's layers as { shape, data } views. */
export function suppliedFromSpec(spec, buffer) {
  const all = floats(buffer);
  // The kernel checked every number (attnviz._check) before it sent them.
  const out = { label: spec.label, specials: spec.specials || [], causal: !!spec.causal, head_scores: spec.head_scores, [NUMBERS_CHECKED]: true };
  for (const key of ['tokens', 'encoder_tokens', 'decoder_tokens']) if (spec[key]) out[key] = spec[key];
  let offset = 0;
  for (const { arg, heads, q, k } of spec.blocks) {
    const n = heads * q * k;
    if (offset + n > all.length) throw new Error(`the data holds ${all.length} numbers; ${arg} needs ${offset + n}`);
    (out[arg] ||= []).push({ shape: [heads, q, k], data: all.subarray(offset, offset + n) });
    offset += n;
  }
  // A second call's maps to compare with (head_view(..., compare_attention=, compare_tokens=)).
  if (out.compare_attention) {
    out.compare = { ...spec.compare, attention: out.compare_attention, [NUMBERS_CHECKED]: true };
    delete out.compare_attention;
  }
  return out;
}

function draw(model, el) {
  const spec = model.get('spec');
  el.textContent = '';
  const w = document.createElement('attention-viz');
  for (const [name, value] of Object.entries(spec.attributes || {})) {
    if (value !== null && value !== undefined) w.setAttribute(name, String(value));
  }
  // BertViz's display_mode (model_view): the widget's colours, whatever the notebook's theme.
  if (spec.display_mode) w.style.colorScheme = spec.display_mode;
  el.appendChild(w);
  keepPicture(model, w, spec);
  w.showAttention(suppliedFromSpec(spec, model.get('data')));
  if (spec.heads && spec.heads.length) w.session.patch({ heads: spec.heads, head: spec.heads[0], agg: 'head' });
  return w;
}

const blobOf = (bytes, type = '') => new Blob([bytes], type ? { type } : {});

/** The live widget's files ({ path: bytes }), asked of the kernel: sent as one message's binary
 *  buffers, not as synced state (a saved notebook would hold the model). `names`: those files
 *  (null: all but the spec's `later` ones). */
function filesFromKernel(model, names = null) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      model.off('msg:custom', answer);
      reject(new Error('the kernel sent no model files: a live widget runs with its kernel (run the cell again)'));
    }, 120_000);
    function answer(msg, buffers) {
      if (msg?.type !== 'files') return;
      clearTimeout(timer);
      model.off('msg:custom', answer);
      resolve(Object.fromEntries(msg.names.map((name, i) => [name, buffers[i]])));
    }
    model.on('msg:custom', answer);
    model.send(names ? { type: 'files?', names } : { type: 'files?' });
  });
}

/** The kernel keeps a picture of the widget's last drawing in an output of its own (attnviz's
 *  AttentionWidget), which shows where the widget cannot run (a notebook reopened without its
 *  kernel, nbviewer, GitHub): hidden while the widget runs, and sent again a moment after it
 *  draws (not at every keystroke). */
function keepPicture(model, w, spec) {
  if (!spec.picture_id || typeof model.send !== 'function') return; // (save_html's page has no kernel)
  const hiding = `attnviz-hide-${spec.picture_id}`; // one rule per widget, however often it redraws
  if (!document.getElementById(hiding)) {
    const style = document.createElement('style');
    style.id = hiding;
    style.textContent = `#attnviz-picture-${CSS.escape(spec.picture_id)} { display: none; }`;
    document.head.appendChild(style);
  }
  let timer = 0;
  w.addEventListener('attention-change', () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const canvas = w.shadowRoot.querySelector('canvas');
      if (!canvas || !canvas.width) return;
      model.send({ type: 'picture', png: canvas.toDataURL('image/png'), width: canvas.clientWidth, height: canvas.clientHeight });
    }, 800);
  });
}

/** A live widget: the worker started from the files the kernel sent, the model handed to it, and
 *  an editable <attention-viz> on it. */
async function live(model, el) {
  const spec = model.get('spec');
  const files = await filesFromKernel(model);
  const run = spec.live;
  if (!page.started) {
    if (!files['worker.js'] || !files['pkg/attnviz_bg.wasm']) throw new Error('the kernel sent no model worker or wasm');
    page.configure({
      ...(run.endpoint ? { hub: run.endpoint } : {}),
      base: HANDED_OVER,
      build: 'simd',
      worker: URL.createObjectURL(blobOf(files['worker.js'], 'text/javascript')),
      files: { 'pkg/attnviz.js': blobOf(files['pkg/attnviz.js'], 'text/javascript'), 'pkg/attnviz_bg.wasm': blobOf(files['pkg/attnviz_bg.wasm'], 'application/wasm'), 'models/index.json': blobOf('[]', 'application/json') },
    });
    page.started = true;
  }
  let id = run.model || run.hub; // a Hub id: the widget fetches it, as the page does
  if (run.own) {
    const given = Object.entries(files).filter(([p]) => p.startsWith('own/')).map(([p, bytes]) => ({ name: p.slice(4), file: new File([bytes], p.slice(4)) }));
    id = (await page.openModel(given, run.own)).manifest.id;
  } else if (run.model) {
    await page.addModels(modelFileBlobs(files), run.manifests || []);
  }
  // The exact weights still to come: the int8 ones draw until they are here.
  const later = run.model && run.later && run.later.length ? run.later : null;
  el.textContent = '';
  const w = document.createElement('attention-viz');
  for (const [name, value] of Object.entries({ ...(spec.attributes || {}), model: id, ...(later ? { weights: 'int8' } : {}) })) {
    if (value !== null && value !== undefined) w.setAttribute(name, String(value));
  }
  el.appendChild(w);
  keepPicture(model, w, spec);
  if (later) {
    filesFromKernel(model, later)
      .then((rest) => page.addModels(modelFileBlobs(rest), run.manifests || []))
      .then(() => w.setAttribute('weights', 'auto'), (e) => console.warn(`attnviz: the exact weights did not arrive (${e.message}); the int8 ones stay`));
  }
  return w;
}

/** The model's files among those the kernel sent, as the worker takes them ({ path: Blob }). */
function modelFileBlobs(files) {
  return Object.fromEntries(Object.entries(files).filter(([p]) => p.startsWith('models/')).map(([p, bytes]) => [p, blobOf(bytes)]));
}

/** anywidget's entry: draw, and draw again when Python sends other attention. */
function render({ model, el }) {
  if (!customElements.get('attention-viz')) customElements.define('attention-viz', page.AttentionViz);
  const redraw = () => {
    try {
      if (model.get('spec').live) {
        el.textContent = 'Starting the model in this browser…';
        live(model, el).catch((e) => {
          el.textContent = `attnviz: ${e.message}`;
        });
      } else draw(model, el);
    } catch (e) {
      el.textContent = `attnviz: ${e.message}`;
    }
  };
  redraw();
  model.on('change:spec', redraw);
  model.on('change:data', redraw);
  return () => {
    model.off?.('change:spec', redraw);
    model.off?.('change:data', redraw);
    el.textContent = '';
  };
}

export default { render };
