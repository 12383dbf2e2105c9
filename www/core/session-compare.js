// Comparison (installed on Session by session.js): sentence B by A's model, or A's text by other
// weights or another model, computed in a lane of its own beside A's (B's requests never
// supersede A's), and what the comparing views draw of it.

import { loadModel } from '../worker/worker-client.js';
import { hasInt8, modelKey } from './weights.js';
import { COMPARE_VIEWS } from './views.js';
import { cacheKey } from './cache.js';

export const compareMethods = {
  /** The "Compare with…" text changed: B is computed beside A (an empty text ends the comparison). */
  setCompare(text) {
    this.state = { ...this.state, compare: text };
    this.computeCompare();
    this.emit('state');
  },

  /** What B is: 'model' (other weights or another model), 'text' (sentence B), 'supplied' (given
   *  with supplied maps) or null (no comparison): the source's answer. */
  comparing(s = this.state) {
    return this.source.comparing(this, s);
  },

  /** B's model key: the weights or model state.compareModel names (another model with the weights A
   *  uses, where it has a choice), else A's own (sentence B). */
  compareModelKey(s = this.state) {
    if (this.comparing(s) !== 'model' || !this.manifest) return this.modelKey();
    const cm = s.compareModel;
    if (cm === 'int8' || cm === 'exact') return modelKey(this.manifest, cm);
    const other = this.findModel(cm);
    return other ? modelKey(other, this.weightsInUse()) : cm;
  },

  /** B's text: A's own when B is other weights or another model, else sentence B. */
  compareText(s = this.state) {
    return this.comparing(s) === 'model' ? s.text : s.compare;
  },

  /** What B's answer depends on: its model, its text, the generation and whether norms are needed. */
  compareKey(s = this.state) {
    return cacheKey(this.compareModelKey(s), this.compareText(s), this.genParams(s), s.measure === 'value-norm');
  },

  /** Is B's answer the one the state asks for? */
  compareFresh() {
    return this.source.compareFresh(this);
  },

  /** Run B's forward when its answer is missing or stale, in the worker (the main thread only
   *  draws); texts typed meanwhile collapse into the newest (as compute() does). */
  computeCompare() {
    return this.compareForwards.run();
  },

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
  },

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
  },

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
    return this.source.compareInput(this, what);
  },
};

/** A model's comparison (the session's source is a model: session.js MODEL_SOURCE). */
export const modelComparison = {
  /** What B is: 'model' (the text itself, by the other weights or model state.compareModel
   *  names), 'text' (sentence B, by A's model) or null (no comparison). */
  comparing(session, s) {
    const cm = s.compareModel;
    if (cm && !(['int8', 'exact'].includes(cm) && session.manifest && !hasInt8(session.manifest))) return 'model';
    return s.compare ? 'text' : null;
  },

  /** Is B's answer the one the state asks for? (one with value norms serves raw weights too) */
  compareFresh(session) {
    const s = session.state;
    return session.compareFor === session.compareKey() || (s.measure !== 'value-norm' && session.compareFor === session.compareKey({ ...s, measure: 'value-norm' }));
  },

  /** B as the comparing views draw it (Session.compareInput). */
  compareInput(session, what) {
    const modelB = what === 'model' ? session.compareModelKey() : session.resultFor.model;
    const r = session.compareResult && session.compareDrawnModel === modelB ? session.compareResult : null;
    const names = what === 'model' ? { nameA: session.keyName(session.resultFor.model), nameB: session.keyName(modelB) } : {};
    return { what, ...names, text: session.compareText(), textA: session.resultFor.text, result: r && session.shownResult(r), drawnText: r ? session.compareDrawnText : null, stale: !!r && !session.compareFresh(), error: session.compareError, progress: session.compareProgress };
  },
};
