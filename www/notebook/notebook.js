// The notebook host (issue 25): `attnviz.head_view(attention, tokens)` & co. in Python draw the
// attention PyTorch computed with the widget's own shell (an <attention-viz> given the maps by
// showAttention, core/supplied.js), in Jupyter through anywidget and in the file save_html()
// writes. Bundled into one module by scripts/notebook.mjs (python/attnviz/static/notebook.js).
//
// The model it is given (anywidget's, or save_html's stand-in with the same get/on):
//   spec: { blocks: [{ arg, heads, q, k }], tokens, encoder_tokens, decoder_tokens, causal, label,
//           specials, attributes: { view, layer, head, height, … }, heads: [h…] | null }
//   data: every block's [heads, q, k] float32 maps, one after another, little-endian (a
//         DataView or bytes: anywidget's binary buffer, or save_html's decoded base64)
import { AttentionViz } from '../widget/attention-viz.js';

/** The float32 numbers of the buffer, copied to an aligned array (a DataView may start anywhere). */
function floats(buffer) {
  const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  return new Float32Array(bytes.slice().buffer);
}

/** spec + data → what showAttention takes: each argument's layers as { shape, data } views. */
export function suppliedFromSpec(spec, buffer) {
  const all = floats(buffer);
  const out = { label: spec.label, specials: spec.specials || [], causal: !!spec.causal };
  for (const key of ['tokens', 'encoder_tokens', 'decoder_tokens']) if (spec[key]) out[key] = spec[key];
  let offset = 0;
  for (const { arg, heads, q, k } of spec.blocks) {
    const n = heads * q * k;
    if (offset + n > all.length) throw new Error(`the data holds ${all.length} numbers; ${arg} needs ${offset + n}`);
    (out[arg] ||= []).push({ shape: [heads, q, k], data: all.subarray(offset, offset + n) });
    offset += n;
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
  el.appendChild(w);
  w.showAttention(suppliedFromSpec(spec, model.get('data')));
  if (spec.heads && spec.heads.length) w.session.patch({ heads: spec.heads, head: spec.heads[0], agg: 'head' });
  return w;
}

/** anywidget's entry: draw, and draw again when Python sends other attention. */
function render({ model, el }) {
  if (!customElements.get('attention-viz')) customElements.define('attention-viz', AttentionViz);
  const redraw = () => {
    try {
      draw(model, el);
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
