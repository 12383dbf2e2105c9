// Generation by a decoder-only model (installed on Session by session.js): the options the
// worker is asked for, and scrubbing back through the generated steps (the maps as they were when
// each token was chosen, its query followed).

import { measuredResult } from './measures.js';
import { prefixResult } from './prefix.js';
import { GEN_MAX } from './state.js';
import { viewSpec as viewFor } from './views.js';
import { cacheKey } from './cache.js';
import { generationOptions } from '../worker/protocol.js';

export const generationMethods = {
  /** Does the loaded model generate (a decoder-only language model)? */
  generates() {
    return !!(this.info && this.info.generates);
  },

  /** The generation options the worker is asked for, or null (the text alone). */
  genParams(s = this.state) {
    return this.generates() ? generationOptions(s, GEN_MAX) : null;
  },

  /** Change how many tokens are generated, or how: { gen, temperature, topK, seed }; recomputes. */
  setGeneration(p) {
    const before = cacheKey(this.genParams());
    this.state = { ...this.state, ...p, gstep: null, pin: null };
    if (cacheKey(this.genParams()) === before) {
      this.patch({});
      return Promise.resolve();
    }
    return this.compute();
  },

  /** Generated tokens of the drawn result (0 without generation). */
  numGenerated() {
    return (this.shape && this.shape.generated) || 0;
  },

  /** The scrubbed step 0 … G (G: after the last generated token). */
  genStep() {
    const G = this.numGenerated();
    const g = this.state.gstep;
    return g === null || g === undefined || g >= G ? G : Math.max(0, g);
  },

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
  },

  /** The state fields that follow the query of generation step s (it chose token s). */
  follow(s) {
    const row = this.result.generation.prompt_len - 1 + s;
    return { query: row, pin: { side: 'q', index: row } };
  },

  /** The result the views draw: for a scrubbed generation, its first prompt_len + step positions;
   *  under the value-weighted measure, the row-normalised value norms (analysis.js measuredResult). */
  shownResult(r = this.result) {
    // The step view (q, k, scores) and the positions view draw no weights: always raw.
    const measure = viewFor(this.state.view).controls.measure ? this.state.measure : 'raw';
    if (!r || !r.generation || this.state.gstep === null || this.state.gstep === undefined) return measuredResult(r, measure);
    // (B, compared, may have generated fewer tokens than A)
    return measuredResult(prefixResult(r, r.generation.prompt_len + Math.min(this.genStep(), (r.tokens.target || []).length)), measure);
  },
};
