// The session's models (installed on Session by session.js): the catalogue, loading a model
// (ending on the last one picked; a failed load goes back to the one in use), the user's own
// folders and Hub ids, and which weights are in use — under 'auto', int8 for the first map, then
// the exact ones fetched in the background.

import { cancelLoad, init, isCached, loadModel, openHubModel, openModel, removeModel } from '../worker/worker-client.js';
import { isHubId } from '../worker/hub.js';
import { collectFiles, describeReport } from '../worker/own-model.js';
import { hasInt8, modelFiles, modelKey, parseModelKey, weightsName } from './weights.js';
import { defaultState } from './state.js';

/** State fields that a new model resets (its layers and heads differ). */
const PER_MODEL = { kind: 'encoder_self', layer: 0, head: 0, heads: [0], query: 0, step: 0, pin: null, agg: 'head', gstep: null };

/** What a model's files weigh (its manifest's sizes): the download of its first pick. */
export const downloadBytes = (m, weights) => modelFiles(m, weights).reduce((a, f) => a + ((m.sizes || {})[f] || 0), 0);

/** Why this browser's connection should not fetch optional megabytes (the exact weights after
 *  int8 ones), or null: the user asked to save data, or the connection is mobile or slow. */
export function meteredReason() {
  const c = typeof navigator !== 'undefined' ? navigator.connection : null;
  if (!c) return null;
  if (c.saveData) return 'the browser asks to save data';
  if (c.type === 'cellular') return 'a mobile connection';
  if (/2g$/.test(c.effectiveType || '')) return 'a slow connection';
  return null;
}

export const modelMethods = {
  findModel(id) {
    return (this.catalog && this.catalog.models.find((m) => m.id === id || m.dir === id)) || null;
  },

  /**
   * Start with a state (from a permalink or attributes): fetch the catalogue, load the model.
   * gate(manifest), when given, is awaited before the model's files are fetched (a widget with
   * loading="click" waits for its button there).
   */
  async start(initial = {}, { gate = null } = {}) {
    this.state = { ...this.state, ...initial };
    this.phase = 'loading';
    this.emit('status');
    try {
      this.catalog = await init();
    } catch (e) {
      this.fail(e);
      return;
    }
    this.emit('catalog');
    if (!this.source.runsModels) return; // the page drew attention of its own meanwhile
    let m = this.findModel(this.state.model) || (isHubId(this.state.model) ? await this.fetchHub(this.state.model) : null);
    if (!m) {
      const ids = this.catalog.models.map((x) => x.id).join(', ');
      // A Hub id that could not be opened: the notice says why (the repo, the file, the status).
      const missing = isHubId(this.state.model) ? this.notice : `model "${this.state.model}" is not available here (available: ${ids || 'none'})`;
      const fallback = this.findModel(defaultState().model) || this.catalog.models[0];
      if (this.unknownModel === 'error' || !fallback) {
        this.fail(new Error(missing));
        return;
      }
      this.notice = isHubId(this.state.model) ? `${missing} Showing ${fallback.name || fallback.id} instead.` : `The permalink's ${missing}; showing ${fallback.name || fallback.id} instead.`;
      m = fallback;
      Object.assign(this.state, PER_MODEL, { view: 'head' });
    }
    if (!this.state.text) this.state.text = m.example || '';
    if (gate) {
      this.phase = 'idle';
      await gate(m);
    }
    await this.selectModel(m.id, { keepText: true });
  },

  /**
   * Open the files a picker, a drop or a host page gave (own-model.js collectFiles decides which
   * are the model's). Nothing to open (an empty folder) is said in the notice, as a failure to
   * open is; the promise then rejects.
   */
  openFiles(list, name = null) {
    let picked;
    try {
      picked = collectFiles(list, name);
    } catch (e) {
      this.notice = `Nothing to open: ${e.message}.`;
      this.emit('status');
      return Promise.reject(e);
    }
    return this.openModel(picked);
  },

  /**
   * Open a user's model ({ name, files } from own-model.js): inspected, loaded and kept by the
   * worker, then shown. Resolves to inspectModel()'s report; on failure the model in use stays,
   * the notice says why, and the promise rejects with that message.
   */
  async openModel({ name, files }) {
    return this.show(await this.opening(name, (inspected) => openModel(files, name, inspected)));
  },

  /**
   * Open a model of the Hugging Face Hub by id (hf:owner/name[@revision][?file=x.gguf],
   * worker/hub.js): its headers inspected, its files fetched (with progress), loaded, kept and
   * shown, as an opened folder is. Resolves to the report; rejects as openModel does.
   */
  async openHub(id) {
    return this.show(await this.openingHub(id));
  },

  /** A Hub id that a permalink, an attribute or applyState names: its manifest once opened (the
   *  view state is kept), or null with the notice saying why not. */
  async fetchHub(id) {
    try {
      const opened = await this.openingHub(id);
      this.say(opened.notice);
      return opened.manifest;
    } catch {
      return null;
    }
  },

  /** A Hub id opened by the worker, its download's progress in the status line. Failed (a
   *  stalled network, a refusal), `retry` opens it again: hosts offer it as a button. */
  async openingHub(id) {
    this.retry = null;
    try {
      return await this.opening(id, (inspected) =>
        openHubModel(id, inspected, (p) => {
          this.progress = { loaded: p.loaded, total: p.total, reading: p.reading };
          this.emit('progress');
        }),
      );
    } catch (e) {
      this.retry = () => {
        this.retry = null;
        return this.openHub(id).catch(() => {}); // the notice says why
      };
      this.emit('status');
      throw e;
    }
  },

  /** Open a model by `open(onInspected)` (a worker request), saying in the notice what happens;
   *  → the worker's answer with `notice`, the sentence to show once it is shown. */
  async opening(name, open) {
    // Files picked one by one have no name until the worker reads their config.json.
    const called = (report) => name || report?.manifest?.name || 'the files picked';
    this.notice = `Reading “${called()}”…`;
    this.emit('status');
    let opened;
    try {
      opened = await open((report) => {
        this.notice = `Found in “${called(report)}”: ${describeReport(report)} Loading…`;
        this.emit('status');
      });
    } catch (e) {
      this.progress = null;
      this.notice = `Could not open “${called()}”: ${e.message}`;
      this.emit('status');
      throw e;
    }
    this.progress = null;
    this.opened = opened.report; // what was found, with the worker's timings and memory
    this.emit('catalog');
    // Which storage holds it (OPFS or IndexedDB) is no concern of the reader's; whether it stays is.
    const kept = opened.stored
      ? ' Kept in this browser for your next visit (never uploaded).'
      : opened.storage
        ? ' It could not be kept in this browser’s storage: open it again next time.'
        : ' This browser gives the page no storage to keep it in (a private window?): after a reload, open it again.';
    return { ...opened, notice: opened.report ? `Opened “${called(opened.report)}”: ${describeReport(opened.report)}${kept}` : `Opened “${opened.manifest?.name || called()}” (kept in this browser).` };
  },

  /** Show a model just opened (a new pick: its layers and heads start afresh), saying so. */
  async show(opened) {
    const shown = this.pickModel(opened.manifest.id);
    this.say(opened.notice);
    await shown;
    return opened.report;
  },

  /** Forget one of the user's models; when it is shown, the default model takes its place. */
  async removeModel(id) {
    await removeModel(id);
    this.emit('catalog');
    if (this.state.model === id) await this.pickModel(defaultState().model);
  },

  /** The user picked another model: its layers and heads start afresh. */
  pickModel(id) {
    this.notice = null;
    const before = this.restorePoint();
    Object.assign(this.state, PER_MODEL);
    if (this.state.view === 'cross') this.state.view = 'head';
    return this.selectModel(id, { keepText: false, before });
  },

  /** What a failed model load goes back to: the model in use, its info and the view state. */
  restorePoint() {
    return this.info ? { manifest: this.manifest, info: this.info, infoSeq: this.infoSeq, exact: this.exact, state: { ...this.state } } : null;
  },

  /**
   * Load a model and compute with it. When models are picked in quick succession it ends on the
   * last one picked. keepText: false replaces an empty text or the previous model's example, and
   * says so ('text': the shells put it into their text box, so the box shows what is computed).
   * A load that fails goes back to `before` (the model in use, still working and selected; the
   * permalink never names the failed one) and says what failed.
   */
  async selectModel(id, { keepText = true, before = this.restorePoint() } = {}) {
    if (!this.source.runsModels) return; // supplied attention stays until the page gives other
    const m = this.findModel(id) || (isHubId(id) ? await this.fetchHub(id) : null);
    if (!this.source.runsModels) return;
    if (!m) {
      this.fail(new Error(`unknown model "${id}"`));
      return;
    }
    const prev = this.manifest;
    const text = this.state.text;
    if (!keepText && (!text.trim() || (prev && text === prev.example))) this.state.text = m.example || text;
    if (this.state.text !== text) this.emit('text');
    this.state.model = m.id;
    this.manifest = m;
    this.info = null; // compute() waits for the new model; the old drawing stays until then
    const seq = ++this.loadSeq;
    if (this.exact.model !== m.id) this.exact = { model: m.id, phase: 'idle' };
    this.phase = 'loading';
    this.error = null;
    this.progress = { loaded: 0, total: downloadBytes(m, this.weightsInUse()) };
    this.emit('status');
    // 'auto' with the exact weights already in this browser (a later visit): straight to them.
    if (this.state.weights === 'auto' && hasInt8(m) && this.exact.phase === 'idle' && (await isCached(modelKey(m, 'exact')).catch(() => false))) {
      if (seq !== this.loadSeq) return;
      this.exact = { model: m.id, phase: 'ready' };
      this.progress = { loaded: 0, total: downloadBytes(m, 'exact') };
    }
    let info;
    try {
      info = await loadModel(this.modelKey(), (p) => {
        if (seq !== this.loadSeq) return;
        this.progress = { loaded: p.loaded, total: p.total };
        this.emit('progress');
      });
    } catch (e) {
      if (seq === this.loadSeq) this.loadFailed(m, e, before);
      return;
    }
    if (seq !== this.loadSeq) return; // another model was picked meanwhile
    this.info = info;
    this.infoSeq = seq;
    // A head the new model lacks (another kind: a decoder has only decoder_self; a layer or head
    // past its own) would be asked of its first forward by the step and query/key views, which
    // then failed and kept the old model's map: the state names one of this model's heads.
    if (info.kinds && info.kinds.length) {
      const kind = info.kinds.includes(this.state.kind) ? this.state.kind : info.kinds[0];
      const last = (n, i) => Math.max(0, Math.min(i, (n || 1) - 1));
      this.state = { ...this.state, kind, layer: last(info.layers[kind], this.state.layer), head: last(info.heads[kind], this.state.head) };
    }
    this.progress = null;
    this.emit('status');
    await this.compute();
  },

  /** Model `m` did not load: back to `before` when there is one, and the error says why. */
  loadFailed(m, e, before) {
    const why = `${m.name || m.id} could not be loaded: ${e && e.message ? e.message : e}`;
    if (!before) {
      this.fail(new Error(why));
      return;
    }
    const textBefore = this.state.text;
    // The text typed while it loaded stays; the failed model's example text goes with it.
    const text = textBefore === m.example && textBefore !== before.state.text ? before.state.text : textBefore;
    this.manifest = before.manifest;
    this.info = before.info;
    this.infoSeq = before.infoSeq;
    this.exact = before.exact;
    this.state = { ...before.state, text, compare: this.state.compare };
    this.progress = null;
    this.phase = this.result ? 'ready' : 'idle';
    this.error = `${why}. Still showing ${before.manifest.name || before.manifest.id}.`;
    if (this.state.text !== textBefore) this.emit('text');
    this.emit('status');
    this.emit('state');
    this.compute(); // text typed while it loaded (the lane asks for nothing when the drawn answer is the state's)
  },

  /** A model key as a comparison's sides name it: the model's name, and its weights where it has a
   *  choice ('all-MiniLM-L6-v2, int8 weights'). */
  keyName(key) {
    const { id, weights } = parseModelKey(key);
    const m = this.findModel(id);
    if (!m) return id;
    return [m.name || m.id, weightsName(m, weights || 'int8')].filter(Boolean).join(', ');
  },

  /** The worker's key of the current model with the weights in use. */
  modelKey() {
    return this.manifest ? modelKey(this.manifest, this.weightsInUse()) : this.state.model;
  },

  /**
   * The weights A is computed with, 'int8' or 'exact', for a model that has both (every other
   * model: its own, 'exact'): those state.weights names; under 'auto', int8 until the exact ones
   * are in (fetchExact). A comparison with one of the two (state.compareModel) draws A from the other.
   */
  weightsInUse() {
    const m = this.manifest;
    if (!hasInt8(m)) return 'exact';
    const cm = this.state.compareModel;
    if (cm === 'int8' || cm === 'exact') return cm === 'int8' ? 'exact' : 'int8';
    if (this.state.weights !== 'auto') return this.state.weights;
    return this.exact.model === m.id && this.exact.phase === 'ready' ? 'exact' : 'int8';
  },

  /**
   * Under 'auto' weights, once the first map is drawn from the int8 ones: the exact weights load in
   * the background (with progress in the status line; kept in the browser's cache like every
   * model file, so a later visit starts from them), then the maps, read-outs and exports switch
   * to them. Not on a connection that asks to save data (the status line says so; 'exact' fetches
   * them anyway). A failure leaves the int8 maps and says why.
   */
  fetchExact() {
    const m = this.manifest;
    if (!m || !this.shown() || !this.source.runsModels || this.state.weights !== 'auto' || !hasInt8(m) || this.exact.model !== m.id || this.exact.phase !== 'idle') return;
    const why = meteredReason();
    if (why) {
      this.exact = { model: m.id, phase: 'skipped', why };
      this.emit('status');
      return;
    }
    this.exact = { model: m.id, phase: 'loading', loaded: 0, total: downloadBytes(m, 'exact') };
    this.emit('status');
    const mine = () => this.exact.model === m.id && (this.exact.phase === 'loading' || this.exact.phase === 'ready');
    loadModel(modelKey(m, 'exact'), (p) => {
      if (this.exact.model !== m.id || this.exact.phase !== 'loading') return;
      this.exact = { ...this.exact, loaded: p.loaded, total: p.total };
      this.emit('status');
    }).then(
      () => {
        if (!mine()) return;
        this.exact = { model: m.id, phase: 'ready' };
        this.emit('status');
        this.compute(); // the same text, from the exact weights (the int8 maps stay until then)
        this.computeCompare();
      },
      (e) => {
        if (!mine()) return;
        this.exact = { model: m.id, phase: 'failed', why: e && e.message ? e.message : String(e) };
        this.emit('status');
      },
    );
  },

  /**
   * The reader stops the exact weights' background download (the Stop button, or 'int8 only'
   * picked meanwhile): the maps stay on the int8 weights, and the download stops unless another
   * widget of the page still waits for it. 'auto' picked again starts it anew.
   */
  stopExact() {
    const m = this.manifest;
    this.exact = { model: m.id, phase: 'idle' };
    cancelLoad(modelKey(m, 'exact'));
  },

  /** The exact weights are loading in the background for the model in use ('auto'). */
  fetchingExact() {
    return this.state.weights === 'auto' && !!this.manifest && this.exact.model === this.manifest.id && this.exact.phase === 'loading';
  },

  /** The weights the drawn map was computed with ('int8' | 'exact'): while other weights load,
   *  the map drawn (and what the status line says of it) is still the old one's. */
  drawnWeights() {
    const m = this.manifest;
    if (!m || !this.resultFor) return this.state.weights;
    return this.resultFor.model === modelKey(m, 'exact') ? 'exact' : 'int8';
  },
};
