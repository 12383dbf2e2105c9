// <attention-viz> — an embeddable live attention map (Shadow DOM, no globals).
//
//   <script type="module" src="path/to/attention-viz.js"></script>
//   <attention-viz model="minilm" text="The animal didn't cross the street because it was tired."
//                  view="head" layer="4" editable></attention-viz>
//
// Attributes: model (minilm | en-pt | any model id, or a Hugging Face Hub id:
// hf:owner/name[@revision][?file=name.gguf], fetched from the Hub and kept), text, view (head | model | heatmap | cross |
// step | positions | heads | qk), measure (raw | value-norm: value-weighted norms ‖αf‖, Kobayashi et al. 2020),
// weights (auto, the default where a model has int8 ones: the first map from int8 weights, a quarter
// of the download, then the f32 file in the background unless the connection saves data | int8 |
// exact: the f32 file from the start),
// kind (encoder_self | decoder_self | cross), layer and head (counted from 1, as the page
// shows them; head="mean" for the mean over heads), query (step and score parts views: query token, from 1),
// step-part (step view: query | matrices | both), zoom (fit, the default: the whole view in the
// map's box | 1.5 | 2 | 3: that many times the box, scrolled | width: the box's width, as tall as
// it takes), editable (present: the reader can type), height (the map's box's height in px;
// default 78% of the window's); for a model that
// generates (smollm2-135m): generate (tokens to continue the text, 0–64), temperature (0 or absent:
// greedy), top-k, seed, generate-step (the scrubbed step, from 1; absent: after the last token).
// compare (a second sentence B: the head view and the heatmap draw it beside the text, with the
// difference map B − A where the tokens align; with editable, a "Compare with…" box holds it;
// compare="" gives an editable widget that box, empty); compare-model (B is the text itself by other
// weights or another model: "exact" (A int8, B exact f32), "int8" (A exact, B int8), or a model id
// of the same architecture, e.g. an opened own BERT beside MiniLM; the difference map B − A under them).
// src="attention.json" (instead of a model): attention computed elsewhere, drawn without a model:
// the JSON holds { tokens, attention: one [heads][queries][keys] map per layer } (as a Hugging Face
// model's output_attentions), or an encoder-decoder's encoder_/decoder_/cross_attention with
// encoder_tokens and decoder_tokens; the method showAttention(data) takes the same object.
// Events: `attention-change` (detail: the current state) after every draw, `attention-ready`
// after the first draw, `attention-error` (detail: { message }).
// Methods: showAttention(data) (see src), openModel(files, { name }) opens the reader's own model (a folder's Files, e.g. an
// <input webkitdirectory>'s FileList, or one .gguf; read and kept in the browser) and resolves
// to what was found, or rejects saying why not; removeModel(id) forgets one.
// Where pkg/, models/ and worker.js live: next to this file by default; override with
// data-base="…" on the <script> tag or with the exported configure({ base }); configure({ build })
// picks the wasm build (wasm-build.js: 'simd', 'relaxed', 'threads'); data-hub="…" or
// configure({ hub }) the Hub that hf: ids are fetched from (a mirror), data-hub-timeout="…" or
// configure({ hubTimeout }) the seconds it may keep us waiting (30; then the widget says so and
// offers Retry). All before the first widget.
// data-offline on the <script> tag, or configure({ offline: true }) (or the URL of a copy of sw.js
// the site serves, for a bundled app: configure({ offline: '/sw.js' })): a second visit works offline
// (sw.js, registered once a widget has drawn; the page must be inside sw.js's folder).
// The footer names the weights and the wasm build that drew the map.

import { mountGenerationPanel } from '../shell/generation-panel.js';
import { STYLE } from './style.js';
import { configure as configureWorker } from '../core/engine.js';
import { bindCompareBox, bindTextBox, saveView } from '../shell/render.js';
import { Session } from '../core/session.js';
import { weightAt } from '../core/analysis.js';
import { controlChoices, mountShell } from '../shell/host.js';
import { keepForOffline } from '../shell/offline.js';
import { bindStopExact, showStopExact } from '../shell/stop-exact.js';
import { fromAttributes, STATE_ATTRIBUTES, textLimitNotice } from '../core/state.js';
import { renderHeadsTable } from '../shell/heads-table.js';
import { setOptions } from '../shell/select-options.js';
import { later, listen, record, timings } from '../base/timing.js';
import { buildText, computingText, details, loadingText, modelLabel, progressBar, summary } from '../shell/prose.js';

let offline = false; // configure({ offline }) or data-offline: a second visit works offline

/**
 * configure({ base, build, hub, offline }): where pkg/, models/ and worker/ live, which wasm build
 * to load (before the first widget), and whether this page of widgets should work offline on a
 * second visit (the service worker sw.js; the page must be inside sw.js's folder).
 */
export function configure(opts = {}) {
  // offline: true (sw.js beside these modules), or the URL of a copy of sw.js the site serves (a
  // bundled app: Vite emits it under assets/, whose scope holds no page; serve it from the root).
  if ('offline' in opts) offline = typeof opts.offline === 'string' && opts.offline ? new URL(opts.offline, document.baseURI) : !!opts.offline;
  configureWorker(opts);
}

class AttentionViz extends HTMLElement {
  static get observedAttributes() {
    return [...STATE_ATTRIBUTES, 'editable', 'height', 'src'];
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
    this.$.gqa = mk('span', { className: 'gqa', hidden: true }, this.$.bar);
    this.$.queryLabel = lab('Query ');
    this.$.query = mk('select', {}, this.$.queryLabel);
    this.$.stepLabel = lab('Step ');
    this.$.step = mk('input', { type: 'range', min: '0', max: '0', value: '0' }, this.$.stepLabel);
    this.$.partLabel = lab('Part ');
    this.$.stepPart = mk('select', {}, this.$.partLabel);
    this.$.zoomLabel = lab('Zoom ');
    this.$.zoom = mk('select', {}, this.$.zoomLabel);
    // An encoder-decoder's three attentions (BertViz's "Attention" dropdown); hidden for one kind.
    this.$.kindLabel = lab('Attention ');
    this.$.kind = mk('select', {}, this.$.kindLabel);
    this.$.text = mk('textarea', { rows: 2, spellcheck: false, dir: 'auto' });
    this.$.text.setAttribute('aria-label', 'Text to analyse');
    this.$.compare = null; // the "Compare with…" box, made for an editable widget that compares
    this.$.warn = mk('div', { className: 'warn', hidden: true });
    this.$.warn.setAttribute('role', 'alert');
    this.$.out = mk('div', { className: 'out', hidden: true });
    this.$.outLabel = mk('b', { textContent: 'Translation' }, this.$.out);
    this.$.outText = mk('span', { dir: 'auto' }, this.$.out);
    this.$.coverage = mk('small', { className: 'coverage' }, this.$.out);
    this.$.gen = mk('div');
    this.$.gen.setAttribute('role', 'group');
    this.$.gen.setAttribute('aria-label', 'Generation');
    this.$.msg = mk('div', { className: 'msg', textContent: 'Loading…' });
    this.$.progress = mk('progress', { max: 1, value: 0, hidden: true }, this.$.msg);
    this.$.retry = mk('button', { type: 'button', textContent: 'Retry', hidden: true }, this.$.msg);
    this.$.wrap = mk('div', { className: 'wrap' });
    this.$.canvas = mk('canvas', { tabIndex: 0 }, this.$.wrap);
    this.$.canvas.setAttribute('role', 'img');
    this.$.readout = mk('div', { className: 'readout' });
    this.$.readout.setAttribute('aria-live', 'polite');
    this.$.rank = mk('div', { className: 'heads-rank', hidden: true });
    this.$.foot = mk('div', { className: 'foot' });
    const state = mk('span', {}, this.$.foot);
    this.$.status = mk('span', {}, state);
    this.$.stopExact = mk('button', { type: 'button', className: 'stop-exact', hidden: true }, state);
    // Save the view as on the page: its pixels (PNG) or its vectors (SVG), each saying what drew it.
    this.$.save = mk('span', { className: 'save' }, this.$.foot);
    this.$.png = mk('button', { type: 'button', textContent: 'PNG' }, this.$.save);
    this.$.png.setAttribute('aria-label', 'Save PNG');
    this.$.svg = mk('button', { type: 'button', textContent: 'SVG' }, this.$.save);
    this.$.svg.setAttribute('aria-label', 'Save SVG');
    this.$.credit = mk('span', {}, this.$.foot);

    this.session = new Session({ name: 'widget', unknownModel: 'error', onUpdate: (reason) => this.onUpdate(reason), shown: () => this.isConnected });
    this.shell = mountShell({
      name: 'widget',
      session: this.session,
      canvas: this.$.canvas,
      box: this.$.wrap,
      themeRoot: this,
      // Read before syncControls changes the DOM: reading a size after it forces a layout.
      width: () => this.drawWidth(),
      sync: () => this.syncControls(),
      drawn: (geom, r, s) => this.drawn(r, s),
      failed: (e) => this.showError(e.message),
    });
    // theme.css arrives after the first style recalculation: its colours are read again then.
    style.addEventListener('load', () => {
      this.shell.theme.forget();
      this.shell.scheduleDraw();
    });
    this.drawCount = 0;
    this.started = false;
    this.generation = mountGenerationPanel(this.$.gen, this.session);

    bindStopExact('widget', this.$.stopExact, this.session);
    listen('widget', this.$.retry, 'click', () => {
      this.$.retry.hidden = true;
      this.$.msg.classList.remove('err');
      this.session.retry?.();
    });
    listen('widget', this.$.kind, 'change', () => this.session.patch({ kind: this.$.kind.value, query: 0 }));
    listen('widget', this.$.layer, 'change', () => this.session.patch({ layer: Number(this.$.layer.value) }));
    listen('widget', this.$.head, 'change', () => {
      const v = this.$.head.value;
      if (v === 'mean') this.session.patch({ agg: 'mean' });
      else if (v === 'all') this.session.allHeads();
      else if (v === 'kv') this.session.toggleKvGroup();
      else this.session.soloHead(Number(v));
    });
    listen('widget', this.$.query, 'change', () => this.session.patch({ query: Number(this.$.query.value) }));
    listen('widget', this.$.step, 'input', () => this.session.patch({ step: Number(this.$.step.value) }));
    listen('widget', this.$.stepPart, 'change', () => this.session.patch({ stepPart: this.$.stepPart.value }));
    listen('widget', this.$.zoom, 'change', () => this.session.patch({ zoom: this.$.zoom.value }));
    bindTextBox(this.$.text, this.session);
    listen('widget', this.$.canvas, 'keydown', this.shell.key);
    for (const [kind, button] of [['png', this.$.png], ['svg', this.$.svg]]) {
      listen('widget', button, 'click', async () => {
        try {
          this.$.readout.textContent = await saveView(kind, { canvas: this.$.canvas, session: this.session, theme: this.shell.theme(), box: this.shell.box() });
        } catch (e) {
          this.$.readout.textContent = `${kind.toUpperCase()} export failed: ${e.message}`;
        }
      });
    }
  }

  connectedCallback() {
    this.shell.observe();
    if (this.started) this.session.fetchExact(); // put back in a page: the exact weights it stopped
    if (this.started || this.waiting) return;
    this.dataset.state = 'loading';
    // loading="lazy": nothing is downloaded before the widget comes near the screen (a lesson
    // with a SmolLM2 widget far below the fold costs no one its 98 MB); loading="click": the
    // model's name and size on a button, downloaded when the reader asks.
    const mode = this.getAttribute('loading');
    if (mode === 'lazy' && typeof IntersectionObserver === 'function') {
      this.$.msg.firstChild.textContent = 'Loads when scrolled into view.';
      this.dataset.state = 'waiting'; // a page waits for the widgets that have begun only
      this.waiting = new IntersectionObserver((entries) => {
        if (!entries.some((e) => e.isIntersecting)) return;
        this.waiting.disconnect();
        this.waiting = null;
        this.dataset.state = 'loading';
        this.begin();
      }, { rootMargin: '300px' });
      this.waiting.observe(this);
    } else this.begin(mode === 'click' ? (m) => this.askToLoad(m) : null);
  }

  disconnectedCallback() {
    this.shell.disconnect();
    // Taken out of the page: its exact weights' download stops (unless another widget wants it).
    if (this.session.fetchingExact()) this.session.stopExact();
  }

  /** Start the session with the attributes as they are now (gate: see Session.start). With
   *  src: the attention in that JSON file, and no model. */
  begin(gate = null) {
    const s = this.readAttributes(null, { ...this.session.state, model: 'minilm-l6', text: '' });
    this.started = true;
    this.session.state = s; // what showAttention() draws with, too
    if (this.hasAttribute('src')) {
      this.loadSupplied(this.getAttribute('src'));
      return;
    }
    // A microtask later: a page that calls showAttention() right after adding the element (in the
    // same task) downloads no model.
    queueMicrotask(() => {
      if (this.session.supplied) return;
      this.session.start(s, { gate }).then(() => {
        if (this.hasAttribute('editable') && !this.session.supplied) this.$.text.value = this.session.state.text;
      });
    });
  }

  /** loading="click": a button that names the model and its download; resolves when pressed. */
  askToLoad(m) {
    return new Promise((resolve) => {
      this.$.msg.firstChild.textContent = '';
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'load';
      b.textContent = `Load ${modelLabel(m)}`;
      b.addEventListener('click', () => {
        b.remove();
        this.$.msg.firstChild.textContent = 'Loading…';
        resolve();
      }, { once: true });
      this.$.msg.insertBefore(b, this.$.progress);
    });
  }

  /** src="attention.json": fetch it (relative to the page) and draw it (showAttention). */
  async loadSupplied(src) {
    try {
      const res = await fetch(new URL(src, document.baseURI));
      if (!res.ok) throw new Error(`${src}: HTTP ${res.status}`);
      this.showAttention(await res.json());
    } catch (e) {
      this.showError(`the attention in ${src} could not be drawn: ${e.message}`);
    }
  }

  /**
   * Draw attention computed elsewhere, without a model: { tokens, attention } (one map per layer,
   * [heads][queries][keys], e.g. a Hugging Face model's output_attentions) or an encoder-decoder's
   * { encoder_tokens, decoder_tokens, encoder_attention, decoder_attention, cross_attention }
   * (core/supplied.js says the rest). Throws an Error that names what does not fit.
   */
  showAttention(data) {
    // Not yet in the document (a notebook's output is attached after it is drawn): the attributes
    // have not been read; the state starts from them as at connection.
    if (!this.started) this.session.state = this.readAttributes(null, { ...this.session.state, text: '' });
    this.started = true;
    this.session.showSupplied(data);
    this.$.text.hidden = true; // nothing to recompute: the text is the maps'
    if (this.$.compare) this.$.compare.hidden = true;
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (name === 'src' && this.started && newValue && oldValue !== newValue) {
      this.loadSupplied(newValue);
      return;
    }
    if (!this.started || oldValue === newValue) return;
    const t0 = performance.now();
    try {
      this.applyAttribute(name);
    } finally {
      record('widget:attribute', t0);
    }
  }

  /** One attribute changed after the start: the state follows it (timed, as a handler). */
  applyAttribute(name) {
    this.shell.theme.forget(); // a host page restyling the widget usually changes an attribute too
    this.session.applyState(this.readAttributes(name, { ...this.session.state }));
  }

  /** Attributes → a state: all of them at start, then only the one that changed (so a change of
   *  layer does not undo what the reader typed). */
  readAttributes(only, s) {
    // The state fields' attributes, read as the permalink's parameters are (state.js FIELDS); a
    // value the widget cannot use is never silently replaced: a console warning says so.
    const { problems } = fromAttributes((n) => this.getAttribute(n), only, s);
    for (const problem of problems) console.warn(`attention-viz: ${problem}`);
    if (!only || only === 'editable' || only === 'height' || only === 'text' || only === 'compare') {
      const editable = this.hasAttribute('editable') && !this.session.supplied;
      this.$.text.hidden = !editable;
      if (editable && this.$.text.value !== s.text) this.$.text.value = s.text;
      // Only a widget that compares gets the second box (compare="" for an empty one): an
      // editable lesson widget keeps its one text box.
      const box = editable && this.hasAttribute('compare') ? this.compareBox() : this.$.compare;
      if (box) box.hidden = !editable || !this.hasAttribute('compare');
      if (box && !box.hidden && box.value !== s.compare) box.value = s.compare;
      const h = Number.parseInt(this.getAttribute('height'), 10);
      this.$.wrap.style.maxHeight = h > 0 ? `${h}px` : '';
      this.$.msg.style.setProperty('--av-box-h', h > 0 ? `${h}px` : '78vh');
    }
    return s;
  }

  /** The "Compare with…" box under the text box, made on first need. */
  compareBox() {
    if (this.$.compare) return this.$.compare;
    const box = Object.assign(document.createElement('textarea'), { rows: 1, spellcheck: false, dir: 'auto', placeholder: 'Compare with… (a second sentence, B)' });
    box.setAttribute('aria-label', 'Compare with…');
    this.$.text.after(box);
    bindCompareBox(box, this.session);
    return (this.$.compare = box);
  }

  onUpdate(reason) {
    const session = this.session;
    if (reason === 'result') this.shell.draw();
    else if (reason === 'state') this.shell.scheduleDraw();
    else if (reason === 'hover') this.showReadout();
    else if (reason === 'text') this.$.text.value = session.state.text; // the session replaced the text (a model's example)
    else if (reason === 'progress' || reason === 'status') {
      this.showProgressBar();
      this.generation.sync();
      this.showWarning();
      if (this.drawnTokens != null) this.showFootStatus(); // the exact weights' download progress
      if (session.manifest) this.$.credit.textContent = session.manifest.credit || session.manifest.name || session.manifest.id;
      if (session.phase === 'error' && !session.result) this.showError(session.error);
      else if (session.phase === 'loading' && !session.result) {
        this.showMapless(false);
        this.$.retry.hidden = true;
        this.$.msg.hidden = false;
        this.$.msg.classList.remove('err');
        this.$.msg.firstChild.textContent = loadingText(session);
      } else if (session.error) this.showError(session.error);
    }
  }

  showWarning() {
    const session = this.session;
    const warn = [session.notice, session.result && summary(session).truncation, textLimitNotice(session.state, session.textCut)].filter(Boolean).join(' ');
    this.$.warn.hidden = !warn;
    this.$.warn.textContent = warn;
  }

  showError(message) {
    this.dataset.state = 'error';
    this.$.msg.hidden = false;
    this.$.msg.classList.add('err');
    this.$.msg.firstChild.textContent = `attention-viz: ${message}`;
    this.$.progress.hidden = true;
    this.$.retry.hidden = !this.session.retry; // a Hub model that failed to arrive: ask again
    // Nothing drawn yet: the message stands in place of the map, once; no empty controls above it.
    this.showMapless(!this.session.result);
    this.dispatchEvent(new CustomEvent('attention-error', { detail: { message }, bubbles: true, composed: true }));
  }

  /** A widget with no map (it failed before its first): only its message, not the controls,
   *  the empty canvas, or the same words again as a warning. */
  showMapless(mapless) {
    for (const part of [this.$.bar, this.$.wrap, this.$.foot]) part.hidden = mapless;
    if (mapless && this.$.warn.textContent && this.$.msg.textContent.includes(this.$.warn.textContent)) this.$.warn.hidden = true;
  }

  showReadout() {
    const d = details(this.session);
    const items = d.items.slice(0, 5).map((it) => `${it.label} ${it.weight.toFixed(2)}${it.extra ? ` (${it.extra})` : ''}`).join(', ');
    this.$.readout.textContent = items ? `${d.title}: ${items}` : d.hint || '';
  }

  /** The width the map is drawn at (CSS px), as the exports redraw it too. */
  drawWidth() {
    return Math.max(260, this.$.wrap.clientWidth || this.clientWidth || 600);
  }

  /** The footer's status, as the page's status line says it: the drawn map's tokens, which
   *  weights drew it (and the exact ones' download, with its Stop button) and which wasm build. */
  /** A download's or a slow forward's progress (prose.js progressBar), or no bar. */
  showProgressBar() {
    const bar = progressBar(this.session);
    this.$.progress.hidden = !bar;
    if (!bar) return;
    this.$.progress.max = bar.max;
    this.$.progress.value = bar.value;
    this.$.progress.setAttribute('aria-label', `${bar.label}: ${bar.text}`);
  }

  showFootStatus(sum = summary(this.session)) {
    const session = this.session;
    this.showProgressBar();
    const n = this.drawnTokens;
    this.$.status.textContent = [`${n} token${n === 1 ? '' : 's'}`, sum.weights, session.forwardMs != null ? `${session.forwardMs.toFixed(0)} ms` : null, buildText(session), sum.catchingUp || computingText(session)].filter(Boolean).join(' · ');
    showStopExact(this.$.stopExact, session);
  }

  // After a drawing has finished (at 512 tokens, some tasks after it began).
  drawn(r, s) {
    const session = this.session;
    // A drawing scheduled before an error (an unknown model named meanwhile) that finishes after
    // it leaves the error said: the map stays, the message and data-state "error" with it.
    const failed = session.phase === 'error' && session.error;
    this.$.msg.hidden = !failed;
    this.showMapless(false);
    const sum = summary(session);
    if (session.supplied) this.$.credit.textContent = session.supplied.label;
    this.drawnTokens = r.tokens.source.length;
    this.showFootStatus(sum);
    this.showWarning();
    this.$.out.hidden = sum.output == null;
    this.$.outLabel.textContent = sum.outputLabel || 'Translation';
    this.$.outText.textContent = sum.output ?? '';
    this.$.coverage.textContent = sum.coverage || '';
    this.showReadout();
    later('widget:heads-table', () => renderHeadsTable(this.$.rank, session)); // a task of its own
    this.generation.sync();
    this.drawCount += 1;
    this.dataset.drawCount = String(this.drawCount);
    const first = this.dataset.state !== 'ready' && !failed;
    this.dataset.state = failed ? 'error' : 'ready';
    if (first && offline && session.catalog) keepForOffline(session.catalog, offline instanceof URL ? offline : undefined);
    const detail = { ...s, tokens: r.tokens.source.slice(), targetTokens: (r.tokens.target || []).slice(), outputText: r.output_text ?? null, drawCount: this.drawCount };
    if (first) this.dispatchEvent(new CustomEvent('attention-ready', { detail, bubbles: true, composed: true }));
    this.dispatchEvent(new CustomEvent('attention-change', { detail, bubbles: true, composed: true }));
  }

  syncControls() {
    const session = this.session;
    const c = controlChoices(session);
    const ctl = c.controls;
    setOptions(this.$.kind, c.kinds);
    this.$.kind.value = c.kind;
    this.$.kindLabel.hidden = c.kinds.length < 2;
    setOptions(this.$.layer, c.layers);
    this.$.layer.value = c.layer;
    this.$.layerLabel.hidden = !ctl.layer;
    const heads = [...Array(c.heads).keys()].map((h) => [String(h), String(h + 1)]);
    if (ctl.heads === 'multi') heads.unshift(['all', 'all']);
    if (c.kvGroup) heads.push(['kv', c.kvGroup.label]);
    if (ctl.agg) heads.push(['mean', 'mean']);
    setOptions(this.$.head, heads);
    this.$.head.value = c.head;
    this.$.headLabel.hidden = !ctl.heads;
    this.$.gqa.hidden = !c.headNote;
    this.$.gqa.textContent = c.headNote || '';
    this.$.queryLabel.hidden = !ctl.query;
    if (ctl.query) {
      setOptions(this.$.query, c.queries);
      this.$.query.value = c.query;
    }
    this.$.partLabel.hidden = !ctl.stepPart;
    setOptions(this.$.stepPart, c.stepParts);
    this.$.stepPart.value = c.stepPart;
    setOptions(this.$.zoom, c.zooms);
    this.$.zoom.value = c.zoom;
    this.$.stepLabel.hidden = !c.step;
    if (c.step) {
      this.$.step.max = String(c.step.max);
      this.$.step.value = String(c.step.value);
      this.$.step.setAttribute('aria-valuetext', c.step.text);
    }
    this.$.canvas.dataset.view = session.state.view;
  }

  /** Open the reader's own model: a FileList or array of Files (a folder's, or one .gguf). */
  async openModel(files, { name = null } = {}) {
    return this.session.openFiles(files, name);
  }

  /** Forget a model opened with openModel (its id: `viewState.model` while it is shown). */
  removeModel(id) {
    return this.session.removeModel(id);
  }

  /** TEST HOOK, not an API: how long the app's own slices and handlers held the main thread
   *  (timing.js; one log per page, shared with the page shell and every widget). */
  get timings() {
    return timings;
  }

  /**
   * One weight of the attention drawn (under the measure shown): from `query` to `key` (token
   * strings as the tokenizer writes them, e.g. "▁bola", their first occurrence, or 0-based
   * indices) in `layer` of `kind` (default: the widget's), `head` or 'mean' over the heads;
   * layer and head count from 1, as the attributes do. null before the first map or where there
   * is no such block, head or token. A lesson prints the model's own numbers with it.
   */
  weight({ kind = this.session.state.kind, layer = this.session.state.layer + 1, head = 'mean', query, key } = {}) {
    if (!this.session.result) return null;
    return weightAt(this.session.shownResult(), { kind, layer: Number(layer) - 1, head: head === 'mean' ? 'mean' : Number(head) - 1, query, key });
  }

  /** The current state (read-only copy). */
  get viewState() {
    return { ...this.session.state };
  }
}


export { AttentionViz };
