// The one controller behind the page and every <attention-viz> widget: the view state, the model
// in use, the requests to the worker and the caches of their answers. No DOM: a shell binds its
// controls to a Session and redraws when the session calls onUpdate(reason).
//
// reason: 'catalog' (the model list arrived), 'progress' (model download), 'status' (loading,
// busy, errors), 'result' (a new forward to draw), 'state' (view state or step data changed),
// 'hover' (a read-out under the pointer changed), 'text' (the session replaced the text: a model's
// example; the shell's text box must show it).

import { measuredResult, prefixResult, resultShape, stepLabels } from './analysis.js';
import { Channel, init, isCached, loadModel, openHubModel, openModel, removeModel } from '../worker/worker-client.js';
import { isHubId } from '../worker/hub.js';
import { collectFiles, describeReport } from '../worker/own-model.js';
import { hasInt8, modelFiles, modelKey, weightsName } from './weights.js';
import { clampToResult, defaultState, GEN_MAX } from './state.js';
import { COMPARE_VIEWS, kindShown, viewAvailable, viewSpec as viewFor, VIEW_SPECS } from './views.js';
import { chartWasm, loadChartWasm } from './chart-wasm.js';
import { later, record } from '../base/timing.js';
import { cacheKey, LruCache } from './cache.js';
import { Lane } from './lane.js';
import { suppliedHeads, suppliedResult, suppliedSpecials } from './supplied.js';

// Answers kept per session: step internals and head scores of the last texts and heads looked at,
// and the position tables of the last models.
const ANSWERS_KEPT = 32;
const MODELS_KEPT = 8;
// Positions the positions view plots (clamped by the model to its maximum): enough for the slow
// dimensions of the sinusoid to turn, more than most typed texts use.
const POSITIONS_SHOWN = 128;
const BUSY_AFTER_MS = 200;

// What supplied attention (showSupplied) always has: no second sentence, raw weights, nothing generated.
const SUPPLIED_FIXED = { compare: '', compareModel: '', measure: 'raw', gen: 0 };
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

export class Session {
  /**
   * name: the worker channel's name; unknownModel: 'fallback' (the page shows the default model
   * and says so) or 'error' (the widget shows the error).
   */
  constructor({ name = 'session', onUpdate = () => {}, unknownModel = 'fallback' } = {}) {
    this.channel = new Channel(name);
    // Sentence B of a comparison has a lane of its own: its requests never supersede A's.
    this.compareChannel = new Channel(`${name}-compare`);
    this.compareResult = null; // the attend() answer for state.compare
    this.compareFor = null; // the request key (compareKey) of that answer
    this.compareDrawnText = null; // and its text
    this.compareDrawnModel = null; // and its model's key
    this.compareProgress = null; // { loaded, total } while B's model (state.compareModel) downloads
    this.compareError = null; // why B's last forward failed (its key is then compareFor too: no retry loop)
    this.onUpdate = onUpdate;
    this.unknownModel = unknownModel;
    this.state = defaultState();
    this.catalog = null; // { build, supported, models }
    this.manifest = null; // the current model's manifest
    // The exact weights of a model with int8 ones, under state.weights 'auto': { model (its id),
    // phase: idle | loading | ready | skipped | failed, loaded, total (loading), why (skipped, failed) }.
    this.exact = { model: null, phase: 'idle' };
    this.info = null; // its info(), once loaded
    this.phase = 'idle'; // idle | loading | ready | error
    this.progress = null; // { loaded, total } while a model downloads
    this.error = null; // the last failure, as text
    this.notice = null; // something the user should know (e.g. an unknown model in a permalink)
    this.opened = null; // inspectModel()'s report on the last model the user opened
    this.supplied = null; // { label, specials } while attention computed elsewhere is shown (showSupplied)
    this.busy = false; // a forward has taken longer than BUSY_AFTER_MS
    this.catchingUp = false; // the drawn answer is of an older text than the box's (a newer one is computed)
    this.textCut = false; // the text box cut the last paste to what it holds (render.js bindTextBox)
    this.result = null; // the drawn attend() answer
    this.resultFor = null; // { model, text } of that answer
    this.shape = null; // resultShape(result)
    this.forwardMs = null;
    this.focus = null; // transient: the token under the pointer (head view)
    this.hoverText = null; // transient: the read-out under the pointer (heatmap)
    this.cursor = null; // transient: the item the keys [ ] { } read out last, where they go on from
    this.steps = new LruCache(ANSWERS_KEPT); // stepKey → step() internals (the step and qk views)
    this.positionTables = new LruCache(MODELS_KEPT); // model id → its positions() table (the positions view)
    this.headScores = new LruCache(ANSWERS_KEPT); // headsKey → heads() answer (the head overview)
    this.loadSeq = 0;
    this.infoSeq = 0; // the loadSeq `info` was loaded at: an answer from before it is of another load
    // Every request to the worker goes through a lane (lane.js): one in flight, the newest owed.
    this.forwards = new Lane(() => this.forwardWanted(), (req, ans, err) => this.forwardDone(req, ans, err));
    this.compareForwards = new Lane(() => this.compareWanted(), (req, ans, err) => this.compareDone(req, ans, err));
    this.stepLane = this.fetchLane(this.steps, () => this.stepWanted(), 'step view', 'step');
    this.positionsLane = this.fetchLane(this.positionTables, () => this.positionsWanted(), 'positions view', 'positions');
    this.headsLane = this.fetchLane(this.headScores, () => this.headsWanted(), 'head overview', 'heads');
    this.inputTimes = new Map(); // text → when the input event that produced it happened
    this.pendingLatency = null; // the same, for a result not yet drawn
    this.latency = null; // { total, toPost, roundTrip, forward } of the last typed text drawn
  }

  // Timed (timing.js): a shell's update is the app's own work, often in no handler of its own
  // (a worker's answer arrives as a promise).
  emit(reason) {
    const t0 = performance.now();
    try {
      this.onUpdate(reason, this);
    } finally {
      record(`update:${reason}`, t0);
    }
  }

  fail(e) {
    this.error = e && e.message ? e.message : String(e);
    this.phase = 'error';
    this.progress = null;
    this.emit('status');
  }

  findModel(id) {
    return (this.catalog && this.catalog.models.find((m) => m.id === id || m.dir === id)) || null;
  }

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
    if (this.supplied) return; // the page drew attention of its own meanwhile
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
  }

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
  }

  /**
   * Open a user's model ({ name, files } from own-model.js): inspected, loaded and kept by the
   * worker, then shown. Resolves to inspectModel()'s report; on failure the model in use stays,
   * the notice says why, and the promise rejects with that message.
   */
  async openModel({ name, files }) {
    return this.show(await this.opening(name, (inspected) => openModel(files, name, inspected)));
  }

  /**
   * Open a model of the Hugging Face Hub by id (hf:owner/name[@revision][?file=x.gguf],
   * worker/hub.js): its headers inspected, its files fetched (with progress), loaded, kept and
   * shown, as an opened folder is. Resolves to the report; rejects as openModel does.
   */
  async openHub(id) {
    return this.show(await this.openingHub(id));
  }

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
  }

  /** A Hub id opened by the worker, its download's progress in the status line. */
  openingHub(id) {
    return this.opening(id, (inspected) =>
      openHubModel(id, inspected, (p) => {
        this.progress = { loaded: p.loaded, total: p.total };
        this.emit('progress');
      }),
    );
  }

  /** Open a model by `open(onInspected)` (a worker request), saying in the notice what happens;
   *  → the worker's answer with `notice`, the sentence to show once it is shown. */
  async opening(name, open) {
    this.notice = `Reading “${name}”…`;
    this.emit('status');
    let opened;
    try {
      opened = await open((report) => {
        this.notice = `Found in “${name}”: ${describeReport(report)} Loading…`;
        this.emit('status');
      });
    } catch (e) {
      this.progress = null;
      this.notice = `Could not open “${name}”: ${e.message}`;
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
    return { ...opened, notice: opened.report ? `Opened “${name}”: ${describeReport(opened.report)}${kept}` : `Opened “${name}” (kept in this browser).` };
  }

  /** Show a model just opened (a new pick: its layers and heads start afresh), saying so. */
  async show(opened) {
    const shown = this.pickModel(opened.manifest.id);
    this.say(opened.notice);
    await shown;
    return opened.report;
  }

  /** Forget one of the user's models; when it is shown, the default model takes its place. */
  async removeModel(id) {
    await removeModel(id);
    this.emit('catalog');
    if (this.state.model === id) await this.pickModel(defaultState().model);
  }

  /** The user picked another model: its layers and heads start afresh. */
  pickModel(id) {
    this.notice = null;
    const before = this.restorePoint();
    Object.assign(this.state, PER_MODEL);
    if (this.state.view === 'cross') this.state.view = 'head';
    return this.selectModel(id, { keepText: false, before });
  }

  /** What a failed model load goes back to: the model in use, its info and the view state. */
  restorePoint() {
    return this.info ? { manifest: this.manifest, info: this.info, infoSeq: this.infoSeq, exact: this.exact, state: { ...this.state } } : null;
  }

  /**
   * Load a model and compute with it. When models are picked in quick succession it ends on the
   * last one picked. keepText: false replaces an empty text or the previous model's example, and
   * says so ('text': the shells put it into their text box, so the box shows what is computed).
   * A load that fails goes back to `before` (the model in use, still working and selected; the
   * permalink never names the failed one) and says what failed.
   */
  async selectModel(id, { keepText = true, before = this.restorePoint() } = {}) {
    if (this.supplied) return; // supplied attention stays until the page gives other
    const m = this.findModel(id) || (isHubId(id) ? await this.fetchHub(id) : null);
    if (this.supplied) return;
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
    this.progress = null;
    this.emit('status');
    await this.compute();
  }

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
  }

  /**
   * Draw attention computed elsewhere (supplied.js: a notebook's PyTorch maps, a page's JSON): no
   * model and no worker. The views that need a model's internals (step, query/key space,
   * positions) and the value-weighted measure are not offered, nor the head overview unless the
   * head scores come with the maps (the notebook's kernel computes them); a model still
   * loading is not drawn over it. Data that does not fit throws, and the status says why.
   */
  showSupplied(data) {
    let result;
    let compare = null;
    let heads;
    try {
      result = suppliedResult(data);
      heads = suppliedHeads(data, result);
      // A second set to compare with (data.compare: another call's maps), drawn as B.
      if (data.compare) {
        try {
          compare = suppliedResult({ causal: data.causal, ...data.compare });
        } catch (e) {
          throw new Error(`compare: ${e.message}`, { cause: e });
        }
      }
    } catch (e) {
      this.fail(e);
      throw e;
    }
    this.supplied = { label: result.model, specials: suppliedSpecials(data), compare, heads };
    this.loadSeq += 1; // a model load under way is of no use now
    this.manifest = null;
    this.info = null;
    this.result = result;
    this.resultFor = { model: result.model, text: result.text, gen: null, valueNorms: false, infoSeq: this.infoSeq };
    this.shape = resultShape(result);
    this.state = { ...this.state, ...SUPPLIED_FIXED, model: result.model, text: result.text, pin: null, gstep: null };
    Object.assign(this, { phase: 'ready', error: null, notice: null, progress: null, forwardMs: null, busy: false, catchingUp: false, focus: null, cursor: null });
    this.fitState();
    this.emit('result');
  }

  /** The "Compare with…" text changed: B is computed beside A (an empty text ends the comparison). */
  setCompare(text) {
    this.state = { ...this.state, compare: text };
    this.computeCompare();
    this.emit('state');
  }

  /** What B is: 'model' (the text itself, by the other weights or model state.compareModel
   *  names), 'text' (sentence B, by A's model) or null (no comparison). */
  comparing(s = this.state) {
    if (this.supplied) return this.supplied.compare ? 'supplied' : null; // B given with A, or none
    const cm = s.compareModel;
    if (cm && !(['int8', 'exact'].includes(cm) && this.manifest && !hasInt8(this.manifest))) return 'model';
    return s.compare ? 'text' : null;
  }

  /** B's model key: the weights or model state.compareModel names (another model with the weights A
   *  uses, where it has a choice), else A's own (sentence B). */
  compareModelKey(s = this.state) {
    if (this.comparing(s) !== 'model' || !this.manifest) return this.modelKey();
    const cm = s.compareModel;
    if (cm === 'int8' || cm === 'exact') return modelKey(this.manifest, cm);
    const other = this.findModel(cm);
    return other ? modelKey(other, this.weightsInUse()) : cm;
  }

  /** B's text: A's own when B is other weights or another model, else sentence B. */
  compareText(s = this.state) {
    return this.comparing(s) === 'model' ? s.text : s.compare;
  }

  /** What B's answer depends on: its model, its text, the generation and whether norms are needed. */
  compareKey(s = this.state) {
    return cacheKey(this.compareModelKey(s), this.compareText(s), this.genParams(s), s.measure === 'value-norm');
  }

  /** Is B's answer the one the state asks for? (one with value norms serves raw weights too) */
  compareFresh() {
    if (this.supplied) return true; // B, if any, was given with A
    const s = this.state;
    return this.compareFor === this.compareKey() || (s.measure !== 'value-norm' && this.compareFor === this.compareKey({ ...s, measure: 'value-norm' }));
  }

  /** Run B's forward when its answer is missing or stale, in the worker (the main thread only
   *  draws); texts typed meanwhile collapse into the newest (as compute() does). */
  computeCompare() {
    return this.compareForwards.run();
  }

  /** B's forward the state asks for, or null (none compared, or its answer is here). */
  compareWanted() {
    if (!this.info || !this.comparing() || this.compareFresh()) return null;
    const model = this.compareModelKey();
    const text = this.compareText();
    const gen = this.genParams();
    const valueNorms = this.state.measure === 'value-norm';
    const loadFirst = this.comparing() === 'model';
    const ask = async () => {
      // Other weights or another model: loaded first, outside the worker's queue of forwards (A's
      // maps keep moving while its files download).
      if (loadFirst) {
        await loadModel(model, (p) => {
          this.compareProgress = { loaded: p.loaded, total: p.total };
          this.emit('status');
        });
        this.compareProgress = null;
      }
      return this.compareChannel.attend(model, text, gen, valueNorms);
    };
    return { key: this.compareKey(), model, text, ask };
  }

  /** B's answer (or why it failed) is kept unless it is of a model left meanwhile. */
  compareDone({ key, model, text }, ans, err) {
    this.compareProgress = null;
    if (!err && model !== this.compareModelKey()) return;
    this.compareResult = err ? null : ans.result;
    this.compareError = err ? err.message : null;
    this.compareFor = key;
    this.compareDrawnText = text;
    this.compareDrawnModel = model;
    if (key === this.compareKey()) this.emit('state');
  }

  /** The text changed (typing): recompute; hover and pin refer to the old tokens. */
  setText(text) {
    return this.computeFor({ ...this.state, text, pin: null, gstep: null });
  }

  /** Go to `state`, whose text or generation is new: its forward is computed (timed from now,
   *  for the keystroke → drawn measurement); hover and cursor were on the old tokens. */
  computeFor(state) {
    if (!this.inputTimes.has(state.text)) this.inputTimes.set(state.text, performance.now());
    this.state = state;
    this.focus = null;
    this.cursor = null;
    return this.compute();
  }

  /** Does an answer for `r` ({ model, text, gen, valueNorms, infoSeq }) serve the state? (one
   *  with value norms serves raw weights too; one from before the model was (re)loaded never) */
  servesState(r) {
    return r.infoSeq === this.infoSeq && r.model === this.modelKey() && r.text === this.state.text && cacheKey(r.gen) === cacheKey(this.genParams()) && (r.valueNorms || this.state.measure !== 'value-norm');
  }

  /**
   * Run a forward for the current model and text when the drawn answer is not the state's. At
   * most one forward is in flight per session and at most one more is owed: texts typed
   * meanwhile collapse into the newest. An answer that comes back after the text moved on is
   * still drawn (it is newer than what is on screen, and `catchingUp` says the box is ahead of
   * it), then the newest text is computed: while the user types, the maps move at the model's own
   * pace. Only an answer for another model is dropped.
   */
  compute() {
    return this.forwards.run();
  }

  /** The forward the state asks for, or null: no model loaded (or the state names one that is
   *  not: nothing of the old model is drawn over that error), or its answer is drawn. */
  forwardWanted() {
    if (!this.info || (this.manifest && this.state.model !== this.manifest.id)) return null;
    if (this.resultFor && this.servesState(this.resultFor)) return null;
    const model = this.modelKey();
    const infoSeq = this.infoSeq;
    const { text } = this.state;
    const gen = this.genParams();
    const valueNorms = this.state.measure === 'value-norm';
    const request = { key: cacheKey(model, text, gen, valueNorms, infoSeq), model, text, gen, valueNorms, infoSeq, tPost: 0 };
    request.ask = async () => {
      const busyTimer = later('session:busy', () => {
        this.busy = true;
        this.emit('status');
      }, BUSY_AFTER_MS);
      request.tPost = performance.now();
      try {
        return await this.channel.attend(model, text, gen, valueNorms);
      } finally {
        clearTimeout(busyTimer);
      }
    };
    return request;
  }

  /** A forward came back: drawn unless it is of another model, or an error for a text left behind. */
  async forwardDone(request, ans, err) {
    const { model, text, tPost } = request;
    if ((this.manifest && this.state.model !== this.manifest.id) || model !== this.modelKey()) return;
    const current = this.servesState(request);
    if (current) this.busy = false;
    if (err) {
      if (!current) return; // only the newest text is computed
      this.error = err.message;
      this.phase = this.result ? 'ready' : 'error';
      this.emit('status');
      return;
    }
    const tAnswer = performance.now();
    this.error = null;
    this.phase = 'ready';
    this.result = ans.result;
    this.resultFor = { model, text, gen: request.gen, valueNorms: request.valueNorms, infoSeq: request.infoSeq };
    this.catchingUp = !current;
    this.shape = resultShape(this.result);
    this.forwardMs = typeof this.result.forward_ms === 'number' ? this.result.forward_ms : ans.ms;
    this.fitState();
    // A scrubbed step given without a followed query (a widget's generate-step): follow its query.
    if (this.state.gstep !== null && this.state.gstep !== undefined && !this.state.pin) this.state = { ...this.state, ...this.follow(this.state.gstep) };
    const t0 = this.inputTimes.get(text);
    this.pendingLatency = t0 === undefined ? null : { t0, toPost: tPost - t0, roundTrip: tAnswer - tPost, forward: this.forwardMs };
    // Texts typed up to this one are answered (a Map keeps the order they were typed in).
    if (t0 !== undefined) {
      for (const typed of this.inputTimes.keys()) {
        this.inputTimes.delete(typed);
        if (typed === text) break;
      }
    }
    await this.fetchViewData();
    this.emit('result');
    this.computeCompare(); // a new model, generation or measure: B follows
    this.fetchExact();
  }

  /** Called by a shell once it has drawn: closes the keystroke → drawn measurement. */
  drawn() {
    if (!this.pendingLatency) return;
    const { t0, ...parts } = this.pendingLatency;
    this.latency = { total: performance.now() - t0, ...parts };
    this.pendingLatency = null;
  }

  /**
   * A lane for one kind of view data, fetched once per key into `cache` (an LRU): wanted() gives
   * { key, ask } while the view needs data it lacks. A failure is said in the status line
   * (`${what}: …`); an answer is kept, and 'state' emitted when the state still wants its key.
   */
  fetchLane(cache, wanted, what, field) {
    return new Lane(
      () => {
        const request = this.result ? wanted() : null;
        return request && !cache.get(request.key) ? request : null;
      },
      (request, ans, err) => {
        if (err) {
          this.error = `${what}: ${err.message}`;
          this.emit('status');
          return;
        }
        cache.set(request.key, ans[field]);
        const now = wanted();
        if (now && now.key === request.key) this.emit('state');
      },
    );
  }

  /** Fetch what the view shows beside the forward (each lane asks only when its view needs it). */
  fetchViewData() {
    if (viewFor(this.state.view).needsPositions) this.loadCharts();
    return Promise.all([this.stepLane.run(), this.positionsLane.run(), this.headsLane.run()]);
  }

  /** The step cache key: everything the step internals depend on. */
  stepKey(s = this.state) {
    const r = this.resultFor;
    return cacheKey(r && r.model, r && r.text, r && r.gen, kindShown(s), s.layer, s.head);
  }

  /** The step internals for the current state, if fetched. */
  stepData() {
    return this.steps.get(this.stepKey());
  }

  /** The step and qk views: one head's internals (step()) for the drawn model, text and generation. */
  stepWanted() {
    const s = this.state;
    if (!viewFor(s.view).needsStep) return null;
    const { model, text, gen } = this.resultFor;
    return { key: this.stepKey(), ask: () => this.channel.step(model, text, kindShown(s), s.layer, s.head, gen) };
  }

  /** The positions view: the drawn model's position table, once per model. */
  positionsWanted() {
    if (!viewFor(this.state.view).needsPositions) return null;
    const { model } = this.resultFor;
    return { key: cacheKey(model), ask: () => this.channel.positions(model, POSITIONS_SHOWN) };
  }

  /** The main-thread wasm the positions view's charts are drawn with (plotters-canvas). */
  loadCharts() {
    if (chartWasm()) return;
    loadChartWasm(this.catalog.build).then(
      () => this.emit('state'),
      (e) => {
        this.error = `positions view: the chart module did not load (${e.message})`;
        this.emit('status');
      },
    );
  }

  /** The head-scores cache key: what heads() depends on (not the measure: scores are of α). */
  headsKey() {
    const r = this.resultFor;
    return cacheKey(r && r.model, r && r.text, r && r.gen);
  }

  /** The head overview: heads() of the drawn model, text and generation. */
  headsWanted() {
    if (!viewFor(this.state.view).needsHeads || this.supplied) return null; // supplied: given with the maps
    const { model, text, gen } = this.resultFor;
    return { key: this.headsKey(), ask: () => this.channel.heads(model, text, gen) };
  }

  /** What the views draw from. */
  input() {
    const needsPositions = viewFor(this.state.view).needsPositions;
    return {
      result: this.shownResult(),
      specials: (this.info && this.info.special_tokens) || (this.supplied && this.supplied.specials) || [],
      step: viewFor(this.state.view).needsStep ? this.stepData() : null,
      positions: needsPositions && this.resultFor ? this.positionTables.get(cacheKey(this.resultFor.model)) : null,
      charts: needsPositions ? chartWasm() : null,
      heads: !viewFor(this.state.view).needsHeads ? null : this.supplied ? this.supplied.heads : this.headScores.get(this.headsKey()),
      compare: this.compareInput(),
    };
  }

  /**
   * B for the views that compare (compare.js), or null: { what ('text': sentence B by A's model;
   * 'model': A's text by other weights or another model), nameA, nameB (the weights or models, for
   * 'model'), text (B's), textA, result (as drawn, or null while its first answer is computed),
   * drawnText (B's text in that result), stale (a newer text or measure is being computed), error
   * (why B could not be computed), progress ({ loaded, total } while B's model downloads) }. A stale
   * B stays drawn until the new one arrives, as A's drawing does; one of another model never
   * (sentence B: of the model A was drawn with; other weights or model: of the one asked for).
   */
  compareInput() {
    const s = this.state;
    const what = this.comparing();
    if (!what || !COMPARE_VIEWS.includes(s.view) || !this.resultFor) return null;
    if (what === 'supplied') {
      const b = this.supplied.compare;
      return { what, nameA: this.supplied.label, nameB: b.model, text: b.text, textA: this.resultFor.text, result: this.shownResult(b), drawnText: b.text, stale: false, error: null, progress: null };
    }
    const modelB = what === 'model' ? this.compareModelKey() : this.resultFor.model;
    const r = this.compareResult && this.compareDrawnModel === modelB ? this.compareResult : null;
    const names = what === 'model' ? { nameA: this.keyName(this.resultFor.model), nameB: this.keyName(modelB) } : {};
    return { what, ...names, text: this.compareText(), textA: this.resultFor.text, result: r && this.shownResult(r), drawnText: r ? this.compareDrawnText : null, stale: !!r && !this.compareFresh(), error: this.compareError, progress: this.compareProgress };
  }

  /** A model key as a comparison's sides name it: the model's name, and its weights where it has a
   *  choice ('all-MiniLM-L6-v2, int8 weights'). */
  keyName(key) {
    const [id, exact] = String(key).split('@');
    const m = this.findModel(id);
    if (!m) return id;
    return [m.name || m.id, weightsName(m, exact ? 'exact' : 'int8')].filter(Boolean).join(', ');
  }

  /** The view state as drawn, with the transient hover focus. */
  drawState() {
    return { ...this.state, focus: this.focus || this.state.pin };
  }

  /** The worker's key of the current model with the weights in use. */
  modelKey() {
    return this.manifest ? modelKey(this.manifest, this.weightsInUse()) : this.state.model;
  }

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
  }

  /**
   * Under 'auto' weights, once the first map is drawn from the int8 ones: the exact weights load in
   * the background (with progress in the status line; kept in the browser's cache like every
   * model file, so a later visit starts from them), then the maps, read-outs and exports switch
   * to them. Not on a connection that asks to save data (the status line says so; 'exact' fetches
   * them anyway). A failure leaves the int8 maps and says why.
   */
  fetchExact() {
    const m = this.manifest;
    if (!m || this.supplied || this.state.weights !== 'auto' || !hasInt8(m) || this.exact.model !== m.id || this.exact.phase !== 'idle') return;
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
  }

  /**
   * Change the view state; fetches what the view needs. A pinned token is an index into the
   * tokens shown: another view or kind, or special tokens hidden or sub-words merged, make it
   * another token, so those clear it (unless `p` gives one). Another layer or head keeps it: the
   * same token, read in another layer.
   */
  patch(p) {
    if (this.supplied) p = { ...p, ...Object.fromEntries(Object.keys(p).filter((k) => k in SUPPLIED_FIXED).map((k) => [k, SUPPLIED_FIXED[k]])) };
    const key = this.modelKey();
    const tokensMoved = ['view', 'kind', 'hideSpecial', 'merge'].some((k) => k in p && p[k] !== this.state[k]);
    if ('view' in p && p.view !== this.state.view) this.cursor = null;
    this.state = { ...this.state, ...(tokensMoved && !('pin' in p) ? { pin: null } : {}), ...p };
    // Other weights (the weights picker, the exact ones arriving, or a comparison with int8 or exact): load them; the drawing stays until they are in.
    if (this.manifest && this.modelKey() !== key) this.selectModel(this.manifest.id);
    if ('view' in p || 'kind' in p || 'layer' in p || 'hideSpecial' in p || 'merge' in p) this.focus = null;
    if (this.shape) this.fitState();
    this.hoverText = null;
    this.fetchViewData();
    this.compute(); // value norms wanted, or other weights
    this.computeCompare(); // the measure or the model may have changed
    this.fetchExact(); // 'auto' weights chosen again
    this.emit('state');
  }

  /** The state fitted to the drawn result: every index inside what it has, and the cross view's
   *  decode step inside the rows it shows (words when sub-words are merged). */
  fitState() {
    this.state = clampToResult(this.state, this.shape);
    if (!this.availableViews().some((v) => v.id === this.state.view)) this.state = clampToResult({ ...this.state, view: 'head' }, this.shape);
    if (viewFor(this.state.view).controls.step && this.result) {
      const last = Math.max(0, stepLabels(this.input(), this.state).length - 1);
      if (this.state.step > last) this.state = { ...this.state, step: last };
    }
  }

  /**
   * Go to `next`, a whole view state (a permalink the address bar was given, a widget's
   * attributes), each part through the one path that changes it: another model is loaded (a
   * failed load goes back to this one), another text or generation is computed, a scrubbed
   * generation step follows its query, and the rest is a patch of what differs.
   */
  applyState(next) {
    const prev = this.state;
    // Supplied attention has no model to load or run: its text, model and measure stay.
    if (this.supplied) next = { ...next, ...SUPPLIED_FIXED, model: prev.model, text: prev.text };
    if (next.model !== prev.model) {
      const before = this.restorePoint();
      this.state = { ...next };
      if (this.catalog) this.selectModel(next.model, { keepText: true, before });
      return;
    }
    if (next.text !== prev.text || cacheKey(this.genParams(next)) !== cacheKey(this.genParams(prev))) {
      // A new forward. A pin or scrubbed step that `next` carries over unchanged was one of the
      // old tokens; one it names anew (a permalink's) is one of the new.
      // No redraw until the answer: the old maps under the new state would be drawn, and the
      // permalink written with them, for a text they are not of.
      this.computeFor({ ...next, pin: next.pin === prev.pin ? null : next.pin, gstep: next.gstep === prev.gstep ? null : next.gstep });
      this.computeCompare();
      return;
    }
    if (next.gstep !== prev.gstep && this.result && this.result.generation) {
      this.scrub(next.gstep ?? this.numGenerated());
      return;
    }
    const diff = {};
    for (const k of Object.keys(next)) if (next[k] !== prev[k]) diff[k] = next[k];
    this.patch(diff);
  }

  /** Something the state asks for is still on its way: a forward (A's or B's, for the current
   *  text, generation and measure), or the view's step data or value norms. */
  get pending() {
    return !!this.forwards.inFlight || !!this.compareForwards.inFlight || this.needsNorms() || this.needsStepData() || (!!this.comparing() && !this.compareFresh()) || this.fetchingExact();
  }

  /** The view draws one head's step internals (step, qk) and they are not fetched yet. */
  needsStepData() {
    return viewFor(this.state.view).needsStep && !!this.result && !this.stepData();
  }

  /** The value-weighted measure is chosen but the drawn result has no value norms yet. */
  needsNorms() {
    return this.state.measure === 'value-norm' && !!this.result && !this.result.value_norms;
  }

  /** The exact weights are loading in the background for the model in use ('auto'). */
  fetchingExact() {
    return this.state.weights === 'auto' && !!this.manifest && this.exact.model === this.manifest.id && this.exact.phase === 'loading';
  }

  /** The weights the drawn map was computed with ('int8' | 'exact'): while other weights load,
   *  the map drawn (and what the status line says of it) is still the old one's. */
  drawnWeights() {
    const m = this.manifest;
    if (!m || !this.resultFor) return this.state.weights;
    return this.resultFor.model === modelKey(m, 'exact') ? 'exact' : 'int8';
  }

  // ---------------------------------------------------------------- generation

  /** Does the loaded model generate (a decoder-only language model)? */
  generates() {
    return !!(this.info && this.info.generates);
  }

  /** The generation options the worker is asked for, or null (the text alone). */
  genParams(s = this.state) {
    if (!this.generates() || !(s.gen > 0)) return null;
    return { n: Math.min(GEN_MAX, s.gen | 0), temperature: s.temperature > 0 ? s.temperature : 0, top_k: s.temperature > 0 ? s.topK | 0 : 0, seed: s.temperature > 0 ? s.seed >>> 0 : 0 };
  }

  /** Change how many tokens are generated, or how: { gen, temperature, topK, seed }; recomputes. */
  setGeneration(p) {
    const before = cacheKey(this.genParams());
    this.state = { ...this.state, ...p, gstep: null, pin: null };
    if (cacheKey(this.genParams()) === before) {
      this.patch({});
      return Promise.resolve();
    }
    return this.compute();
  }

  /** Generated tokens of the drawn result (0 without generation). */
  numGenerated() {
    return (this.shape && this.shape.generated) || 0;
  }

  /** The scrubbed step 0 … G (G: after the last generated token). */
  genStep() {
    const G = this.numGenerated();
    const g = this.state.gstep;
    return g === null || g === undefined || g >= G ? G : Math.max(0, g);
  }

  /**
   * Scrub to step s (0 … G): the maps as they were when token s was chosen, the query that chose
   * it followed (pinned in the head view and the heatmap, the step view's query).
   */
  scrub(s) {
    const r = this.result;
    if (!r || !r.generation) return;
    const G = this.numGenerated();
    const step = Math.min(G, Math.max(0, Math.round(s)));
    this.patch({ gstep: step >= G ? null : step, ...this.follow(step) });
  }

  /** The state fields that follow the query of generation step s (it chose token s). */
  follow(s) {
    const row = this.result.generation.prompt_len - 1 + s;
    return { query: row, pin: { side: 'q', index: row } };
  }

  /** The result the views draw: for a scrubbed generation, its first prompt_len + step positions;
   *  under the value-weighted measure, the row-normalised value norms (analysis.js measuredResult). */
  shownResult(r = this.result) {
    // The step view (q, k, scores) and the positions view draw no weights: always raw.
    const measure = viewFor(this.state.view).controls.measure ? this.state.measure : 'raw';
    if (!r || !r.generation || this.state.gstep === null || this.state.gstep === undefined) return measuredResult(r, measure);
    // (B, compared, may have generated fewer tokens than A)
    return measuredResult(prefixResult(r, r.generation.prompt_len + Math.min(this.genStep(), (r.tokens.target || []).length)), measure);
  }

  // ---------------------------------------------------------------- heads

  /** Head view: show or hide head h (the others stay); other views: select h. */
  toggleHead(h) {
    const H = this.numHeads();
    if (this.state.view !== 'head') {
      this.patch({ head: h, heads: [h], agg: 'head' });
      return;
    }
    let shown = this.state.heads ? this.state.heads.slice() : [...Array(H).keys()];
    if (this.state.agg !== 'head') shown = [];
    shown = shown.includes(h) ? shown.filter((x) => x !== h) : shown.concat(h).sort((a, b) => a - b);
    this.patch({ heads: shown.length === H || !shown.length ? null : shown, head: h, agg: 'head' });
  }

  soloHead(h) {
    this.patch({ heads: [h], head: h, agg: 'head' });
  }

  allHeads() {
    this.patch({ heads: null, agg: 'head' });
  }

  numHeads() {
    return (this.shape && this.shape.heads[kindShown(this.state)]) || 0;
  }

  numLayers() {
    return (this.shape && this.shape.layers[kindShown(this.state)]) || 0;
  }

  /** Views that can show the current result, in tab order. */
  availableViews() {
    // Supplied attention has no model to ask: its head scores, if any, came with it.
    const modelFree = (v) => !v.needsStep && !v.needsPositions && (!v.needsHeads || !!this.supplied.heads);
    return VIEW_SPECS.filter((v) => (!this.shape || viewAvailable(v, this.shape.kinds)) && (!this.supplied || modelFree(v)));
  }

  // ---------------------------------------------------------------- pointer and keys

  /** Nothing pinned, hovered or under the keyboard cursor (Escape). */
  unpin() {
    this.focus = null;
    this.cursor = null;
    this.patch({ pin: null });
  }

  /** Something the user should know, in the status line (a host's own failure, e.g. a drop). */
  say(notice) {
    this.notice = notice;
    this.emit('status');
  }

  /**
   * What the pointer (or the keyboard's cursor) is over, as the view read it out
   * (shell/pointer.js): `focus` a transient highlight, `text` the side panel's read-out; each
   * changes the session only when given.
   */
  showHover(r) {
    if ('focus' in r) {
      const f = r.focus || null;
      const same = (!f && !this.focus) || (f && this.focus && f.side === this.focus.side && f.index === this.focus.index && f.row === this.focus.row && f.col === this.focus.col && f.panel === this.focus.panel && f.layer === this.focus.layer && f.head === this.focus.head);
      if (!same) {
        this.focus = f;
        this.emit('state');
      }
    }
    if ('text' in r && r.text !== this.hoverText) {
      this.hoverText = r.text;
      this.emit('hover');
    }
  }
}
