// The one controller behind the page and every <attention-viz> widget: the view state, the model
// in use, the requests to the worker and the caches of their answers. No DOM: a shell binds its
// controls to a Session and redraws when the session calls onUpdate(reason).
//
// reason: 'catalog' (the model list arrived), 'progress' (model download), 'status' (loading,
// busy, errors), 'result' (a new forward to draw), 'state' (view state or step data changed),
// 'hover' (a read-out under the pointer changed), 'text' (the session replaced the text: a model's
// example; the shell's text box must show it).
//
// The Session is one object with one state; its methods are written by job, each job in a file
// of its own, installed on the class below: models and weights (session-models.js), the forward
// lane (session-forward.js), the view data beside it (session-view-data.js), comparison
// (session-compare.js), generation (session-generation.js), supplied maps (session-supplied.js).
// This file holds the state itself: patching it, fitting it to a result, what the views draw from.

import { kvGroupOf, stepLabels } from './analysis.js';
import { headsOf } from './head-scores.js';
import { Channel } from '../worker/worker-client.js';
import { clampToResult, defaultState } from './state.js';
import { kindShown, viewAvailable, viewSpec as viewFor, VIEW_SPECS } from './views.js';
import { chartWasm } from './chart-wasm.js';
import { record } from '../base/timing.js';
import { cacheKey, LruCache } from './cache.js';
import { Lane } from './lane.js';
import { compareMethods, modelComparison } from './session-compare.js';
import { forwardMethods } from './session-forward.js';
import { generationMethods } from './session-generation.js';
import { downloadBytes, meteredReason, modelMethods } from './session-models.js';
import { suppliedMethods } from './session-supplied.js';
import { viewDataMethods } from './session-view-data.js';

export { downloadBytes, meteredReason };

// Answers kept per session: step internals of the last texts and heads looked at,
// and the position tables of the last models.
const ANSWERS_KEPT = 32;
const MODELS_KEPT = 8;

/**
 * Where the maps come from: the model the worker runs (this), or maps a notebook or a page gave
 * (session-supplied.js SuppliedSource, answering the same questions).
 */
const MODEL_SOURCE = {
  runsModels: true,
  specialTokens: (session) => (session.info && session.info.special_tokens) || [],
  headScores: (session) => headsOf(session.result),
  offers: () => true,
  constrain: (state) => state,
  ...modelComparison,
};

export class Session {
  /**
   * name: the worker channel's name; unknownModel: 'fallback' (the page shows the default model
   * and says so) or 'error' (the widget shows the error).
   */
  constructor({ name = 'session', onUpdate = () => {}, unknownModel = 'fallback', shown = () => true } = {}) {
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
    this.shown = shown; // false: its maps are on no page (a widget taken out of it), so no background downloads
    this.state = defaultState();
    this.catalog = null; // { build, supported, models }
    this.manifest = null; // the current model's manifest
    // The exact weights of a model with int8 ones, under state.weights 'auto': { model (its id),
    // phase: idle | loading | ready | skipped | failed, loaded, total (loading), why (skipped, failed) }.
    this.exact = { model: null, phase: 'idle' };
    this.info = null; // its info(), once loaded
    this.phase = 'idle'; // idle | loading | ready | error
    this.progress = null; // { loaded, total, reading? } while a model downloads (reading: a header being read)
    this.error = null; // the last failure, as text
    this.notice = null; // something the user should know (e.g. an unknown model in a permalink)
    this.opened = null; // inspectModel()'s report on the last model the user opened
    this.supplied = null; // the SuppliedSource while attention computed elsewhere is shown (showSupplied)
    this.busy = false; // a forward has taken longer than BUSY_AFTER_MS
    this.forwardProgress = null; // { kind, layer, rows }: the attention call a long forward finished last
    this.catchingUp = false; // the drawn answer is of an older text than the box's (a newer one is computed)
    this.textCut = false; // the text box cut the last paste to what it holds (render.js bindTextBox)
    this.result = null; // the drawn attend() answer
    this.resultFor = null; // { model, text } of that answer
    this.shape = null; // resultShape(result)
    this.forwardMs = null;
    this.focus = null; // transient: the token under the pointer (head view)
    this.hoverText = null; // transient: the read-out under the pointer (heatmap)
    this.cursor = null; // transient: the item the keys [ ] { } read out last, where they go on from
    this.viewChosen = null; // the view last picked: shown again by any model that has it (fitState)
    this.steps = new LruCache(ANSWERS_KEPT); // stepKey → step() internals (the step and qk views)
    this.positionTables = new LruCache(MODELS_KEPT); // model id → its positions() table (the positions view)
    this.loadSeq = 0;
    this.infoSeq = 0; // the loadSeq `info` was loaded at: an answer from before it is of another load
    // Every request to the worker goes through a lane (lane.js): one in flight, the newest owed.
    this.forwards = new Lane(() => this.forwardWanted(), (req, ans, err) => this.forwardDone(req, ans, err));
    this.compareForwards = new Lane(() => this.compareWanted(), (req, ans, err) => this.compareDone(req, ans, err));
    this.stepLane = this.fetchLane(this.steps, () => this.stepWanted(), 'step view', 'step');
    this.positionsLane = this.fetchLane(this.positionTables, () => this.positionsWanted(), 'positions view', 'positions');
    this.mapsLane = new Lane(() => this.mapsWanted(), (req, ans, err) => this.mapsDone(req, ans, err));
    this.thumbnailsLane = new Lane(() => this.thumbnailsWanted(), (req, ans, err) => this.thumbnailsDone(req, ans, err));
    this.inputTimes = new Map(); // text → when the input event that produced it happened
    this.pendingLatency = null; // the same, for a result not yet drawn
    this.latency = null; // { total, toPost, roundTrip, forward } of the last typed text drawn
  }

  /** Where the maps come from: supplied maps while they are shown, else the model. */
  get source() {
    return this.supplied || MODEL_SOURCE;
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

  /** What the views draw from. */
  input() {
    const needsPositions = viewFor(this.state.view).needsPositions;
    return {
      result: this.shownResult(),
      specials: this.source.specialTokens(this),
      step: viewFor(this.state.view).needsStep ? this.stepData() : null,
      positions: needsPositions && this.resultFor ? this.positionTables.get(cacheKey(this.resultFor.model)) : null,
      charts: needsPositions ? chartWasm() : null,
      heads: viewFor(this.state.view).needsHeads ? this.source.headScores(this) : null,
      compare: this.compareInput(),
      kvHeads: this.info ? this.info.kv_heads || null : null, // { kind: key/value heads } (GQA)
    };
  }

  /** The view state as drawn, with the transient hover focus. */
  drawState() {
    return { ...this.state, focus: this.focus || this.state.pin };
  }

  /**
   * Change the view state; fetches what the view needs. A pinned token is an index into the
   * tokens shown: another view or kind, or special tokens hidden or sub-words merged, make it
   * another token, so those clear it (unless `p` gives one). Another layer or head keeps it: the
   * same token, read in another layer.
   */
  patch(p) {
    if (p.weights === 'int8' && this.fetchingExact()) this.stopExact();
    const key = this.modelKey();
    const tokensMoved = ['view', 'kind', 'hideSpecial', 'merge'].some((k) => k in p && p[k] !== this.state[k]);
    if ('view' in p && p.view !== this.state.view) this.cursor = null;
    if ('view' in p) this.viewChosen = p.view;
    // So do a long text's head-view window (its first token), which follows the pin again, and
    // the heatmap's zoom (its first row and column).
    const moved = tokensMoved ? Object.fromEntries(['pin', 'win', 'hz'].filter((k) => !(k in p)).map((k) => [k, null])) : {};
    this.state = this.source.constrain({ ...this.state, ...moved, ...p }, this.state);
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

  /** The state fitted to the drawn result: the view last picked where the result has it (a model
   *  without it showed the head view meanwhile), every index inside what it has, and the cross
   *  view's decode step inside the rows it shows (words when sub-words are merged). */
  fitState() {
    const chosen = this.viewChosen;
    if (chosen && chosen !== this.state.view && this.availableViews().some((v) => v.id === chosen)) this.state = { ...this.state, view: chosen };
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
    next = this.source.constrain(next, prev);
    this.viewChosen = next.view; // a whole state (a permalink, attributes) names the view picked
    // No text (a permalink without t=) is the named model's example, as on a first visit: an
    // empty text has no map, and the old model's would stay on screen.
    const noText = this.source.runsModels && !String(next.text ?? '').trim();
    if (next.model !== prev.model) {
      const before = this.restorePoint();
      this.state = { ...next };
      if (this.catalog) this.selectModel(next.model, { keepText: !noText, before });
      return;
    }
    if (noText && this.manifest && this.manifest.example) {
      this.applyState({ ...next, text: this.manifest.example });
      this.emit('text');
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
    return !!this.forwards.inFlight || !!this.compareForwards.inFlight || this.needsNorms() || this.needsStepData() || !!this.mapsMissing() || !!this.thumbnailsMissing() || (!!this.comparing() && !this.compareFresh()) || this.fetchingExact();
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

  /** Grouped-query attention: the selected head's key/value head and the query heads sharing it,
   *  { kv, first, last } (analysis.js kvGroupOf), or null where every head has its own. */
  kvGroup() {
    return kvGroupOf(this.info && this.info.kv_heads, kindShown(this.state), this.numHeads(), this.state.head);
  }

  /** The query heads of kvGroup() as a list, or null. */
  kvGroupHeads() {
    const g = this.kvGroup();
    return g && Array.from({ length: g.last - g.first + 1 }, (_, i) => g.first + i);
  }

  /** Are exactly the heads of the selected head's key/value group shown? */
  showsKvGroup() {
    const g = this.kvGroupHeads();
    const shown = this.state.heads;
    return !!g && this.state.agg === 'head' && !!shown && shown.length === g.length && g.every((h, i) => shown[i] === h);
  }

  /** Shows the heads that read the selected head's keys and values together, or back to that head alone. */
  toggleKvGroup() {
    const g = this.kvGroupHeads();
    if (!g) return;
    if (this.showsKvGroup()) this.soloHead(this.state.head);
    else this.patch({ heads: g, agg: 'head' });
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
    return VIEW_SPECS.filter((v) => (!this.shape || viewAvailable(v, this.shape.kinds)) && this.source.offers(v));
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

Object.assign(Session.prototype, modelMethods, forwardMethods, viewDataMethods, compareMethods, generationMethods, suppliedMethods);
