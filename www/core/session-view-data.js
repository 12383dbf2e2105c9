// What a view needs besides the maps (installed on Session by session.js): one head's step
// internals (the step and query/key views) and the model's position table (the positions view,
// with the main-thread chart wasm), each fetched by its own lane once per key into an LRU cache.
// The step internals of the head shown come with the text's forward (forwardWanted asks attend
// for them): the step lane asks only when the head changes on a text already computed. The
// head overview's scores are every forward's (result blocks' scores, core/head-scores.js).

import { blockAt } from './analysis.js';
import { kindShown, viewSpec as viewFor } from './views.js';
import { chartWasm, loadChartWasm } from './chart-wasm.js';
import { cacheKey } from './cache.js';
import { Lane } from './lane.js';

// The model view's thumbnails of a long text: at most this many rows and columns of each map
// (its maps are 110 CSS px at the most; 72 MiniLM heads at 128² are 4.7 MB, their maps at 512
// tokens 75 MB).
const THUMBNAIL_SIZE = 128;

// Positions the positions view plots (clamped by the model to its maximum): enough for the slow
// dimensions of the sinusoid to turn, more than most typed texts use.
const POSITIONS_SHOWN = 128;

export const viewDataMethods = {
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
  },

  /** Fetch what the view shows beside the forward (each lane asks only when its view needs it). */
  fetchViewData() {
    if (viewFor(this.state.view).needsPositions) this.loadCharts();
    return Promise.all([this.stepLane.run(), this.positionsLane.run(), this.mapsLane.run(), this.thumbnailsLane.run()]);
  },

  /** The layers whose maps a view draws in state `s`, as { kind, layer }: the layer shown (the
   *  side panel's chart reads it too), every layer up to it for rollout, every layer for the model
   *  view; none for the views that draw no map. What a forward asks to be sent of its maps
   *  (worker-client.js attend's `maps`: the worker sends every map when they are few). */
  mapsDrawn(s = this.state) {
    const view = viewFor(s.view);
    const kind = kindShown(s);
    const layers = (this.shape && this.shape.layers[kind]) || 0;
    if (!layers || view.kindless || view.needsHeads) return [];
    const layer = Math.min(s.layer, layers - 1);
    // The model view of maps left in the worker draws thumbnails of them (thumbnailsMissing), and
    // the maps of the layer shown only (the side panel's chart).
    const allLayers = s.view === 'model' && !this.thumbnailsServe(s);
    const upTo = allLayers ? layers - 1 : s.agg === 'rollout' && kind !== 'cross' ? layer : -1;
    if (upTo < 0) return [{ kind, layer }];
    return Array.from({ length: upTo + 1 }, (_, l) => ({ kind, layer: l }));
  },

  /** The first layer the view draws whose maps the drawn forward left in the worker ({ kind, layer }), or null. */
  mapsMissing() {
    const r = this.result;
    if (!r || !r.forward) return null;
    return this.mapsDrawn().find(({ kind, layer }) => {
      const b = blockAt(r, kind, layer);
      return b && !b.data;
    }) || null;
  },

  /** The maps lane's question: the next layer the view draws that is still in the worker. */
  mapsWanted() {
    const missing = this.mapsMissing();
    if (!missing) return null;
    const { kind, layer } = missing;
    const { model } = this.resultFor;
    const forward = this.result.forward;
    return { key: cacheKey(model, forward, kind, layer), forward, kind, layer, ask: () => this.channel.maps(model, forward, kind, layer) };
  },

  /** A layer's maps came: they join the drawn forward's block (when it still is the drawn one). An
   *  error is said only for the forward drawn: an older one's maps were replaced by a newer forward. */
  mapsDone(request, ans, err) {
    const r = this.result;
    if (!r || r.forward !== request.forward) return;
    if (err) {
      this.error = `maps of layer ${request.layer + 1}: ${err.message}`;
      this.emit('status');
      return;
    }
    const b = blockAt(r, request.kind, request.layer);
    if (b && !b.data) b.data = ans.maps;
    if (!this.mapsMissing()) this.emit('state');
  },

  /** Can thumbnails stand for the maps a view draws in state `s`? The model view's, of the maps
   *  as the model gave them (no filter, the raw weights, every position: the worker pools those;
   *  a scrubbed generation step draws the first positions of each map, core/prefix.js). */
  thumbnailsServe(s = this.state) {
    const scrubbed = s.gstep !== null && s.gstep !== undefined;
    return s.view === 'model' && !s.hideSpecial && !s.merge && s.measure !== 'value-norm' && !scrubbed && !!this.source.runsModels;
  },

  /** The kind whose thumbnails the model view needs and the drawn forward has not got (its maps
   *  stayed in the worker), or null. */
  thumbnailsMissing() {
    const r = this.result;
    if (!r || !r.forward || !this.thumbnailsServe()) return null;
    const kind = kindShown(this.state);
    if (r.thumbnails && r.thumbnails[kind]) return null;
    return r.attentions.some((b) => b.kind === kind && !b.data) ? kind : null;
  },

  /** The thumbnails lane's question: those of the kind shown, for the drawn forward. */
  thumbnailsWanted() {
    const kind = this.thumbnailsMissing();
    if (!kind) return null;
    const { model } = this.resultFor;
    const forward = this.result.forward;
    return { key: cacheKey(model, forward, kind, 'thumbnails'), forward, kind, ask: () => this.channel.thumbnails(model, forward, kind, THUMBNAIL_SIZE) };
  },

  /** Thumbnails came: they join the drawn forward (result.thumbnails[kind] = { size, data }). */
  thumbnailsDone(request, ans, err) {
    const r = this.result;
    if (!r || r.forward !== request.forward) return;
    if (err) {
      this.error = `thumbnails: ${err.message}`;
      this.emit('status');
      return;
    }
    r.thumbnails = { ...r.thumbnails, [request.kind]: { size: THUMBNAIL_SIZE, data: ans.thumbnails } };
    this.emit('state');
  },

  /** The head whose internals the view shows ({ kind, layer, head }: attend's and step()'s
   *  question), or null when the view shows none. */
  stepAsked(s = this.state) {
    return viewFor(s.view).needsStep ? { kind: kindShown(s), layer: s.layer, head: s.head } : null;
  },

  /** The step cache key of head `step` on the forward `r` ({ model, text, gen }). */
  stepKeyOf(r, step) {
    return cacheKey(r && r.model, r && r.text, r && r.gen, step.kind, step.layer, step.head);
  },

  /** The step cache key: everything the step internals depend on. */
  stepKey(s = this.state) {
    return this.stepKeyOf(this.resultFor, { kind: kindShown(s), layer: s.layer, head: s.head });
  },

  /** The step internals for the current state, if fetched. */
  stepData() {
    return this.steps.get(this.stepKey());
  },

  /** The step and qk views: one head's internals (step()) for the drawn model, text and generation,
   *  when the forward did not bring them (the head changed since). */
  stepWanted() {
    const step = this.stepAsked();
    if (!step) return null;
    const { model, text, gen } = this.resultFor;
    return { key: this.stepKey(), ask: () => this.channel.step(model, text, step.kind, step.layer, step.head, gen) };
  },

  /** The positions view: the drawn model's position table, once per model. */
  positionsWanted() {
    if (!viewFor(this.state.view).needsPositions) return null;
    const { model } = this.resultFor;
    return { key: cacheKey(model), ask: () => this.channel.positions(model, POSITIONS_SHOWN) };
  },

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
  },

  /** The view draws one head's step internals (step, qk) and they are not fetched yet. */
  needsStepData() {
    return viewFor(this.state.view).needsStep && !!this.result && !this.stepData();
  },

  /** The value-weighted measure is chosen but the drawn result has no value norms yet. */
  needsNorms() {
    return this.state.measure === 'value-norm' && !!this.result && !this.result.value_norms;
  },
};
