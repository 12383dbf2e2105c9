// <attention-viz> — an embeddable live attention map (Shadow DOM, no globals).
//
//   <script type="module" src="path/to/attention-viz.js"></script>
//   <attention-viz model="minilm" text="The animal didn't cross the street because it was tired."
//                  view="head" layer="4" editable></attention-viz>
//
// Attributes: model (minilm | en-pt | any model id), text, view (head | model | heatmap | cross |
// step), kind (encoder_self | decoder_self | cross), layer and head (counted from 1, as the page
// shows them; head="mean" for the mean over heads), query (step view: query token, from 1),
// editable (present: the reader can type), height (max height of the map in px).
// Events: `attention-change` (detail: the current state) after every draw, `attention-ready`
// after the first draw, `attention-error` (detail: { message }).
// Where pkg/, models/ and worker.js live: next to this file by default; override with
// data-base="…" on the <script> tag or with the exported configure({ base }).

import { numHeads, numLayers, resultShape, tokensFor } from './analysis.js';
import { Channel, configure, init, loadModel } from './worker-client.js';
import { VIEW_MODULES, render } from './render.js';
import { clampToResult, defaultState, KINDS, VIEWS } from './state.js';
import { readTheme } from './views/common.js';

export { configure };

// data-base on the <script> tag that loaded this module (module scripts have no currentScript).
try {
  const tag = [...document.querySelectorAll('script[data-base]')].find((s) => s.src && new URL(s.src, document.baseURI).href === import.meta.url);
  if (tag) configure({ base: tag.dataset.base });
} catch {
  // configure() throws once the worker runs: a later configure call wins only before first use.
}

const VIEW_ALIASES = { model: 'model', grid: 'model', head: 'head', heatmap: 'heatmap', cross: 'cross', step: 'step' };
const MODEL_ALIASES = { minilm: 'minilm-l6', 'en-pt': 'en-pt-tiny' };

const STYLE = `
:host {
  display: block;
  --av-bg: #ffffff; --av-fg: #1d2330; --av-muted: #5f6b7a; --av-faint: #d8dde4;
  --av-accent: #0b6bcb; --av-hover: #fff3bf; --av-dark: 0; --av-panel: #f5f7fa; --av-border: #cfd6df;
  color: var(--av-fg);
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", "Apple Color Emoji", "Noto Color Emoji", "DejaVu Sans", sans-serif;
  border: 1px solid var(--av-border);
  border-radius: 8px;
  background: var(--av-bg);
  overflow: hidden;
  contain: content;
}
@media (prefers-color-scheme: dark) {
  :host {
    --av-bg: #14171c; --av-fg: #e6e9ee; --av-muted: #9aa5b4; --av-faint: #2f3540;
    --av-accent: #5aa9ff; --av-hover: #4a4220; --av-dark: 1; --av-panel: #1c2027; --av-border: #39414d;
  }
}
[hidden] { display: none !important; }
.bar { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: center; padding: 6px 8px; background: var(--av-panel); border-bottom: 1px solid var(--av-border); font-size: 13px; }
.bar label { display: inline-flex; gap: 4px; align-items: center; }
select, input, textarea, button { font: inherit; color: inherit; }
select, button { background: var(--av-bg); border: 1px solid var(--av-border); border-radius: 5px; padding: 2px 6px; min-height: 28px; }
textarea { display: block; width: 100%; box-sizing: border-box; border: 0; border-bottom: 1px solid var(--av-border); padding: 6px 8px; font-size: 15px; background: var(--av-bg); resize: vertical; min-height: 2.6em; }
.out { padding: 4px 8px; font-size: 14px; border-bottom: 1px solid var(--av-border); }
.out b { font-weight: 600; color: var(--av-muted); margin-right: 6px; }
.wrap { overflow: auto; position: relative; }
canvas { display: block; }
:focus-visible { outline: 3px solid var(--av-accent); outline-offset: -3px; }
.foot { display: flex; justify-content: space-between; gap: 8px; padding: 3px 8px; font-size: 11px; color: var(--av-muted); border-top: 1px solid var(--av-border); }
.msg { padding: 16px 8px; color: var(--av-muted); }
.msg.err { color: #c62828; }
progress { width: 160px; }
`;

class AttentionViz extends HTMLElement {
  static get observedAttributes() {
    return ['model', 'text', 'view', 'kind', 'layer', 'head', 'query', 'editable', 'height'];
  }

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    const style = document.createElement('style');
    style.textContent = STYLE;
    root.appendChild(style);
    const mk = (tag, props = {}, parent = root) => {
      const e = document.createElement(tag);
      Object.assign(e, props);
      parent.appendChild(e);
      return e;
    };
    this.$ = {};
    this.$.bar = mk('div', { className: 'bar' });
    const lab = (text) => {
      const l = mk('label', {}, this.$.bar);
      l.append(text);
      return l;
    };
    this.$.layerLabel = lab('Layer ');
    this.$.layer = mk('select', {}, this.$.layerLabel);
    this.$.headLabel = lab('Head ');
    this.$.head = mk('select', {}, this.$.headLabel);
    this.$.queryLabel = lab('Query ');
    this.$.query = mk('select', {}, this.$.queryLabel);
    this.$.stepLabel = lab('Step ');
    this.$.step = mk('input', { type: 'range', min: '0', max: '0', value: '0' }, this.$.stepLabel);
    this.$.text = mk('textarea', { rows: 2, spellcheck: false, dir: 'auto' });
    this.$.text.setAttribute('aria-label', 'Text to analyse');
    this.$.out = mk('div', { className: 'out', hidden: true });
    this.$.outLabel = mk('b', { textContent: 'Translation' }, this.$.out);
    this.$.outText = mk('span', { dir: 'auto' }, this.$.out);
    this.$.msg = mk('div', { className: 'msg', textContent: 'Loading…' });
    this.$.progress = mk('progress', { max: 1, value: 0, hidden: true }, this.$.msg);
    this.$.wrap = mk('div', { className: 'wrap' });
    this.$.canvas = mk('canvas', { tabIndex: 0 }, this.$.wrap);
    this.$.canvas.setAttribute('role', 'img');
    this.$.foot = mk('div', { className: 'foot' });
    this.$.status = mk('span', {}, this.$.foot);
    this.$.credit = mk('span', {}, this.$.foot);

    this.state = { ...defaultState(), model: 'minilm-l6', text: '' };
    this.channel = new Channel('widget');
    this.result = null;
    this.stepData = null;
    this.info = null;
    this.geom = null;
    this.focusTok = null;
    this.drawCount = 0;
    this.started = false;

    this.$.layer.addEventListener('change', () => this.patch({ layer: Number(this.$.layer.value) }));
    this.$.head.addEventListener('change', () => {
      const v = this.$.head.value;
      if (v === 'mean') this.patch({ agg: 'mean', heads: null });
      else if (v === 'all') this.patch({ agg: 'head', heads: null });
      else this.patch({ agg: 'head', head: Number(v), heads: [Number(v)] });
    });
    this.$.query.addEventListener('change', () => this.patch({ query: Number(this.$.query.value) }));
    this.$.step.addEventListener('input', () => this.patch({ step: Number(this.$.step.value) }));
    let timer = null;
    this.$.text.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        this.state.text = this.$.text.value;
        this.compute();
      }, 12);
    });
    const cv = this.$.canvas;
    cv.addEventListener('pointermove', (e) => {
      if (this.state.view !== 'head' || !this.geom) return;
      const r = cv.getBoundingClientRect();
      const hit = VIEW_MODULES.head.hitTest(this.geom, e.clientX - r.left, e.clientY - r.top);
      const same = (hit && this.focusTok && hit.side === this.focusTok.side && hit.index === this.focusTok.index) || (!hit && !this.focusTok);
      if (!same) {
        this.focusTok = hit;
        this.scheduleDraw();
      }
    });
    cv.addEventListener('pointerleave', () => {
      if (this.focusTok) {
        this.focusTok = null;
        this.scheduleDraw();
      }
    });
    cv.addEventListener('click', (e) => {
      if (!this.geom) return;
      const r = cv.getBoundingClientRect();
      const hit = VIEW_MODULES[this.state.view].hitTest(this.geom, e.clientX - r.left, e.clientY - r.top);
      if (!hit) return;
      if (this.state.view === 'model') this.patch({ view: 'head', layer: hit.layer, head: hit.head, heads: [hit.head], agg: 'head' });
      else if (this.state.view === 'cross') this.patch({ step: hit.step });
    });
    cv.addEventListener('keydown', (e) => {
      if (!this.result) return;
      const kind = this.state.view === 'cross' ? 'cross' : this.state.kind;
      const L = numLayers(this.result, kind) || 1;
      const H = numHeads(this.result, kind) || 1;
      const s = this.state;
      const moves = {
        ArrowUp: { layer: Math.max(0, s.layer - 1) },
        ArrowDown: { layer: Math.min(L - 1, s.layer + 1) },
        ArrowLeft: { head: (s.head + H - 1) % H, heads: [(s.head + H - 1) % H], agg: 'head' },
        ArrowRight: { head: (s.head + 1) % H, heads: [(s.head + 1) % H], agg: 'head' },
      };
      if (moves[e.key]) {
        e.preventDefault();
        this.patch(moves[e.key]);
      }
    });
    this.resizeObs = new ResizeObserver(() => {
      const w = this.$.wrap.clientWidth;
      if (Math.abs(w - (this.lastWidth || 0)) > 4) {
        this.lastWidth = w;
        this.scheduleDraw();
      }
    });
  }

  connectedCallback() {
    this.resizeObs.observe(this.$.wrap);
    if (!this.started) {
      this.dataset.state = 'loading';
      this.readAttributes();
      this.started = true;
      this.start();
    }
  }

  disconnectedCallback() {
    this.resizeObs.disconnect();
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (!this.started || oldValue === newValue) return;
    const prevModel = this.state.model;
    const prevText = this.state.text;
    this.readAttributes(name);
    if (this.state.model !== prevModel) this.start();
    else if (this.state.text !== prevText) this.compute();
    else if (name === 'kind' || name === 'layer' || name === 'head' || name === 'view' || name === 'query') this.afterStateChange();
    else this.scheduleDraw();
  }

  /** Attributes → state: all of them at start, then only the one that changed (so a change of
   *  layer does not undo what the reader typed). */
  readAttributes(only) {
    const a = (n) => (only && n !== only && !(only === 'view' && n === 'kind') ? null : this.getAttribute(n));
    const s = this.state;
    const model = a('model');
    if (model) s.model = MODEL_ALIASES[model] || model;
    if (a('text') !== null) s.text = a('text');
    const view = VIEW_ALIASES[a('view')];
    if (view && VIEWS.includes(view)) s.view = view;
    if (KINDS.includes(a('kind'))) s.kind = a('kind');
    if (s.view === 'cross') s.kind = 'cross';
    else if (only === 'view' && s.kind === 'cross' && !KINDS.includes(a('kind'))) s.kind = 'encoder_self';
    // 1-based in attributes, 0-based inside.
    const int = (n) => {
      const v = Number.parseInt(a(n), 10);
      return Number.isFinite(v) && v >= 1 ? v - 1 : null;
    };
    if (int('layer') !== null) s.layer = int('layer');
    if (int('head') !== null) {
      s.head = int('head');
      s.agg = 'head';
      if (s.view === 'head') s.heads = [s.head];
    }
    if (a('head') === 'mean') s.agg = 'mean';
    if (int('query') !== null) s.query = int('query');
    if (only && only !== 'editable' && only !== 'height' && only !== 'text') return;
    const editable = this.hasAttribute('editable');
    this.$.text.hidden = !editable;
    if (editable && this.$.text.value !== s.text) this.$.text.value = s.text;
    const h = Number.parseInt(this.getAttribute('height'), 10);
    this.$.wrap.style.maxHeight = h > 0 ? `${h}px` : '';
  }

  async start() {
    const model = this.state.model;
    this.dataset.state = 'loading';
    this.$.msg.hidden = false;
    this.$.msg.classList.remove('err');
    this.$.msg.firstChild.textContent = 'Loading the model…';
    try {
      const cat = await init();
      const m = cat.models.find((x) => x.id === model || x.dir === model);
      if (!m) throw new Error(`model "${model}" is not available here (available: ${cat.models.map((x) => x.id).join(', ')})`);
      this.manifest = m;
      if (!this.state.text) {
        this.state.text = m.example || '';
        if (this.hasAttribute('editable')) this.$.text.value = this.state.text;
      }
      this.$.credit.textContent = m.credit || m.name || m.id;
      this.$.progress.hidden = false;
      this.info = await loadModel(m.id, (p) => {
        this.$.progress.max = p.total || 1;
        this.$.progress.value = p.loaded;
      });
      this.$.progress.hidden = true;
      if (model !== this.state.model) return;
      await this.compute();
    } catch (e) {
      this.showError(e);
    }
  }

  showError(e) {
    const message = e && e.message ? e.message : String(e);
    this.dataset.state = 'error';
    this.$.msg.hidden = false;
    this.$.msg.classList.add('err');
    this.$.msg.firstChild.textContent = `attention-viz: ${message}`;
    this.$.progress.hidden = true;
    this.dispatchEvent(new CustomEvent('attention-error', { detail: { message }, bubbles: true, composed: true }));
  }

  async compute() {
    if (!this.info) return;
    const { model, text } = this.state;
    let ans;
    try {
      ans = await this.channel.attend(this.manifest.id, text);
    } catch (e) {
      this.showError(e);
      return;
    }
    if (ans.superseded || model !== this.state.model || text !== this.state.text) return;
    this.result = ans.result;
    this.forwardMs = ans.result.forward_ms ?? ans.ms;
    this.afterStateChange();
  }

  async afterStateChange() {
    if (!this.result) return;
    this.state = clampToResult(this.state, this.shape());
    if (this.state.view === 'step') {
      const { text, kind, layer, head } = this.state;
      const key = `${text}|${kind}|${layer}|${head}`;
      if (!this.stepData || this.stepData.key !== key) {
        let ans;
        try {
          ans = await this.channel.step(this.manifest.id, text, kind, layer, head);
        } catch (e) {
          this.showError(e);
          return;
        }
        if (ans.superseded) return;
        this.stepData = { key, data: ans.step };
      }
    }
    this.draw();
  }

  patch(p) {
    this.state = { ...this.state, ...p };
    this.afterStateChange();
  }

  shape() {
    return resultShape(this.result);
  }

  scheduleDraw() {
    if (this.drawQueued || !this.result) return;
    this.drawQueued = true;
    requestAnimationFrame(() => {
      this.drawQueued = false;
      this.draw();
    });
  }

  draw() {
    if (!this.result) return;
    const s = this.state;
    const r = this.result;
    const input = {
      result: r,
      specials: (this.info && this.info.special_tokens) || [],
      step: s.view === 'step' && this.stepData ? this.stepData.data : null,
      plotters: null,
    };
    this.syncControls();
    const width = Math.max(260, this.$.wrap.clientWidth || this.clientWidth || 600);
    const st = { ...s, focus: s.view === 'head' ? this.focusTok : null };
    try {
      this.geom = render(this.$.canvas, s.view, input, st, readTheme(this), width);
    } catch (e) {
      this.showError(e);
      return;
    }
    this.$.msg.hidden = true;
    const n = r.tokens.source.length;
    this.$.status.textContent = `${n} tokens · ${this.forwardMs != null ? `${this.forwardMs.toFixed(0)} ms` : ''}`;
    if (r.output_text != null) {
      this.$.out.hidden = false;
      this.$.outText.textContent = r.output_text;
    } else this.$.out.hidden = true;
    this.drawCount += 1;
    this.dataset.drawCount = String(this.drawCount);
    const first = this.dataset.state !== 'ready';
    this.dataset.state = 'ready';
    const detail = { ...s, tokens: r.tokens.source.slice(), targetTokens: (r.tokens.target || []).slice(), outputText: r.output_text ?? null, drawCount: this.drawCount };
    if (first) this.dispatchEvent(new CustomEvent('attention-ready', { detail, bubbles: true, composed: true }));
    this.dispatchEvent(new CustomEvent('attention-change', { detail, bubbles: true, composed: true }));
  }

  syncControls() {
    const s = this.state;
    const r = this.result;
    const kind = s.view === 'cross' ? 'cross' : s.kind;
    const L = numLayers(r, kind);
    const H = numHeads(r, kind);
    const fill = (sel, items) => {
      const key = items.map((i) => i[0] + i[1]).join('|');
      if (sel.dataset.key !== key) {
        sel.textContent = '';
        for (const [value, label] of items) {
          const o = document.createElement('option');
          o.value = value;
          o.textContent = label;
          sel.appendChild(o);
        }
        sel.dataset.key = key;
      }
    };
    fill(this.$.layer, [...Array(L).keys()].map((l) => [String(l), `${l + 1}/${L}`]));
    this.$.layer.value = String(s.layer);
    this.$.layerLabel.hidden = s.view === 'model';
    const heads = [...Array(H).keys()].map((h) => [String(h), String(h + 1)]);
    if (s.view === 'head') heads.unshift(['all', 'all']);
    if (s.view !== 'step') heads.push(['mean', 'mean']);
    fill(this.$.head, heads);
    this.$.head.value = s.view !== 'step' && s.agg !== 'head' ? 'mean' : s.view === 'head' && !s.heads ? 'all' : String(s.head);
    this.$.headLabel.hidden = s.view === 'model';
    this.$.queryLabel.hidden = s.view !== 'step';
    if (s.view === 'step') {
      fill(this.$.query, tokensFor(r, kind).q.map((t, i) => [String(i), `${i + 1}: ${t}`]));
      this.$.query.value = String(s.query);
    }
    this.$.stepLabel.hidden = s.view !== 'cross';
    if (s.view === 'cross') {
      this.$.step.max = String(Math.max(0, (r.tokens.target || []).length - 1));
      this.$.step.value = String(s.step);
    }
    this.$.canvas.dataset.view = s.view;
  }

  /** The current state (read-only copy). */
  get viewState() {
    return { ...this.state };
  }
}

if (!customElements.get('attention-viz')) customElements.define('attention-viz', AttentionViz);

export { AttentionViz };
