// The session's forward lane (installed on Session by session.js): one forward of the text in
// flight, the newest owed; every answer newer than the one drawn is drawn; the keystroke → drawn
// latency is measured from the input event to the shell's drawing.

import { resultShape } from './analysis.js';
import { later } from '../base/timing.js';
import { cacheKey } from './cache.js';
import { viewAvailable, viewSpec } from './views.js';

// A forward slower than this shows "computing…" in the status line.
const BUSY_AFTER_MS = 200;

export const forwardMethods = {
  /** The text changed (typing): recompute; hover and pin refer to the old tokens. */
  setText(text) {
    return this.computeFor({ ...this.state, text, pin: null, gstep: null });
  },

  /** Go to `state`, whose text or generation is new: its forward is computed (timed from now,
   *  for the keystroke → drawn measurement); hover and cursor were on the old tokens. */
  computeFor(state) {
    if (!this.inputTimes.has(state.text)) this.inputTimes.set(state.text, performance.now());
    this.state = state;
    this.focus = null;
    this.cursor = null;
    return this.compute();
  },

  /** Does an answer for `r` ({ model, text, gen, valueNorms, lens, infoSeq }) serve the state?
   *  (one with value norms serves raw weights too, one with the logit lens the views without it;
   *  one from before the model was (re)loaded never) */
  servesState(r) {
    return r.infoSeq === this.infoSeq && r.model === this.modelKey() && r.text === this.state.text && cacheKey(r.gen) === cacheKey(this.genParams()) && (r.valueNorms || this.state.measure !== 'value-norm') && (r.lens || !this.lensAsked());
  },

  /** The logit lens view is shown, of a model that has one: its forwards bring the lens along
   *  (a model without one, picked while the lens is shown, draws the head view instead). */
  lensAsked() {
    const view = viewSpec(this.state.view);
    return !!view.needsLens && !!this.info && viewAvailable(view, this.info.kinds || []);
  },

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
  },

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
    // The step and query/key views' head comes with the maps, from the same forward.
    const step = this.stepAsked();
    const lens = this.lensAsked();
    const request = { key: cacheKey(model, text, gen, valueNorms, lens, infoSeq), model, text, gen, valueNorms, step, lens, infoSeq, tPost: 0 };
    request.ask = async () => {
      const busyTimer = later('session:busy', () => {
        this.busy = true;
        this.emit('status');
      }, BUSY_AFTER_MS);
      request.tPost = performance.now();
      // A long forward says which layer it is at (the worker's progress): shown once busy.
      const onProgress = (m) => {
        if (!m.forward || !this.servesState(request)) return;
        this.forwardProgress = m.forward;
        if (this.busy) this.emit('status');
      };
      try {
        return await this.channel.attend(model, text, gen, valueNorms, step, lens, onProgress, this.mapsDrawn());
      } finally {
        clearTimeout(busyTimer);
        this.forwardProgress = null;
      }
    };
    return request;
  },

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
    const { step, ...result } = ans.result;
    if (step) this.steps.set(this.stepKeyOf(request, request.step), step);
    this.result = result;
    this.resultFor = { model, text, gen: request.gen, valueNorms: request.valueNorms, lens: request.lens, infoSeq: request.infoSeq };
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
  },

  /** Called by a shell once it has drawn: closes the keystroke → drawn measurement. */
  drawn() {
    if (!this.pendingLatency) return;
    const { t0, ...parts } = this.pendingLatency;
    this.latency = { total: performance.now() - t0, ...parts };
    this.pendingLatency = null;
  },
};
