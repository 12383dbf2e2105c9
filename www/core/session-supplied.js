// Attention computed elsewhere (installed on Session by session.js): a notebook's PyTorch maps or
// a page's JSON drawn with no model and no worker (supplied.js checks them).

import { resultShape } from './analysis.js';
import { suppliedHeads, suppliedResult, suppliedSpecials } from './supplied.js';

// What supplied attention always has: no second sentence, raw weights, nothing generated.
export const SUPPLIED_FIXED = { compare: '', compareModel: '', measure: 'raw', gen: 0 };

/**
 * Maps a notebook or a page gave: the session's source while they are shown (session.supplied),
 * in place of the model the worker runs (session.js MODEL_SOURCE), answering the same questions.
 * No model is loaded or run; the views that need a model's internals (step, query/key space,
 * positions) are not offered, nor the head overview unless its scores came with the maps; B of a
 * comparison, if any, came with them too.
 */
class SuppliedSource {
  constructor({ label, specials, compare, heads }) {
    Object.assign(this, { label, specials, compare, heads });
  }

  runsModels = false;

  specialTokens() {
    return this.specials;
  }

  headScores() {
    return this.heads;
  }

  offers(view) {
    return !view.needsStep && !view.needsPositions && !view.needsLens && (!view.needsHeads || !!this.heads);
  }

  /** A state with what supplied maps fix: no second sentence, raw weights, nothing generated, their text. */
  constrain(state, prev) {
    return { ...state, ...SUPPLIED_FIXED, model: prev.model, text: prev.text };
  }

  comparing() {
    return this.compare ? 'supplied' : null;
  }

  compareFresh() {
    return true;
  }

  compareInput(session, what) {
    const b = this.compare;
    return { what, nameA: this.label, nameB: b.model, text: b.text, textA: session.resultFor.text, result: session.shownResult(b), drawnText: b.text, stale: false, error: null, progress: null };
  }
}

export const suppliedMethods = {
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
    this.supplied = new SuppliedSource({ label: result.model, specials: suppliedSpecials(data), compare, heads });
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
  },
};
