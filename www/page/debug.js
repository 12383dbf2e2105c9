// The page's test hooks: window.attnvizDebug, read by the end-to-end tests, the benches and the
// scripts that drive the page (never by the page itself). app.js loads this module only when the
// page runs under automation (navigator.webdriver: Playwright, which every test, bench and script
// of this repository drives it with) or with ?debug in its address (a person at the console), so
// a reader's page neither downloads nor runs it.
//
// What it holds: the last drawing as the page showed it (tokens, state, status, timings…), set
// with that drawing's permalink; where each view drew what (CSS px relative to the canvas, from
// the shell's geometry of the drawing shown); and live getters (computing, drawing, focus…).

import { timings } from '../base/timing.js';
import { parseModelKey } from '../core/weights.js';
import { generationText } from '../shell/prose.js';
import { tokenPoint as headTokenPoint } from '../views/head.js';

/**
 * Define window.attnvizDebug for the page's session, shell (mountShell), elements and entropy
 * chart (bindEntropyChart). Returns { drawn(geom, r, s, input) }: called once a drawing has
 * finished (after its status line is written), it returns the function that publishes what that
 * drawing showed (the page calls it with the drawing's permalink).
 */
export function installDebug({ session, shell, el, chart }) {
  // geomOf(view): the last drawing's geometry while that view is shown (any view: null).
  const geomOf = (view = null) => (!view || session.state.view === view ? shell.geom() : null);
  const debug = { modelId: null, tokens: [], targetTokens: [], outputText: null, lastForwardMs: null, drawCount: 0, lastDrawMs: null, lastLatencyMs: null, view: null, step: null, state: null };
  // the build the worker loaded (catalog.build: { version, dir, simd, relaxed, threads… }), null until known
  Object.defineProperty(debug, 'build', { enumerable: true, get: () => (session.catalog ? session.catalog.build : null) });
  // Where (CSS px, relative to the canvas) a token of the head view is drawn (null: outside a long text's window).
  debug.tokenPoint = (side, index) => headTokenPoint(geomOf('head'), side, index);
  // Head view on a long text: its window ({ windowed, shown, q0, k0, nq, nk }), its minimap strips
  // (CSS px relative to the canvas) and the values they drew.
  debug.headWindow = () => {
    const g = geomOf('head');
    return g && g.win ? { ...g.win, strips: g.strips, values: g.stripValues ? { q: Array.from(g.stripValues.q), k: Array.from(g.stripValues.k) } : null } : null;
  };
  // Step view: where each matrix panel is drawn (CSS px relative to the canvas).
  debug.stepPanels = () => {
    const geom = geomOf('step');
    return geom && geom.panels ? geom.panels.map(({ id, x, y, w, h, rows, cols, cw, ch }) => ({ id, x, y, w, h, rows, cols, cw, ch })) : null;
  };
  // Model view: where its maps are drawn (CSS px relative to the canvas; layers in columns of layersPerColumn).
  debug.modelGrid = () => {
    const g = geomOf('model');
    return g && g.cols ? { left: g.left, top: g.top, cell: g.cell, pitchX: g.pitchX, pitchY: g.pitchY, layerPitch: g.layerPitch, columnPitch: g.columnPitch, layersPerColumn: g.layersPerColumn, cols: g.cols, layers: g.L, heads: g.H, group: g.group, headX: g.headX } : null;
  };
  // Heatmap: where its cells are drawn (CSS px relative to the canvas), the pinned query row (in
  // the cells drawn) and a zoom's place in the whole map (offset: { row, col, z, rows, cols }).
  debug.heatmapGrid = () => {
    const geom = geomOf('heatmap');
    return geom && geom.cell ? { left: geom.left, top: geom.top, cell: geom.cell, rows: geom.rows, cols: geom.cols, pinnedRow: geom.pinnedRow, offset: geom.offset || null } : null;
  };
  // Positions view: where the heatmap and the line chart are drawn (CSS px relative to the canvas).
  debug.positionsChart = () => {
    const geom = geomOf('positions');
    return geom && geom.heat ? { heat: geom.heat, lines: geom.lines, positions: geom.positions, dims: geom.dims, lineDims: geom.lineDims, lo: geom.lo, hi: geom.hi } : null;
  };
  // Head overview: where its cells are drawn (CSS px relative to the canvas) and its data.
  debug.headsGrid = () => {
    const geom = geomOf('heads');
    return geom && geom.cell ? { left: geom.left, top: geom.top, cell: geom.cell, layers: geom.L, heads: geom.H, group: geom.group, headX: geom.headX, scores: session.input().heads } : null;
  };
  // Comparison (head view or heatmap with a "Compare with…" text): where each panel is drawn (CSS
  // px relative to the canvas: 'a', 'b', 'd' = the difference map) and its own geometry (labelPx:
  // the font size of its token labels).
  debug.comparePanels = () => {
    const geom = geomOf();
    return geom && geom.panels && geom.view ? geom.panels.map(({ panel, x, y, w, h, g }) => ({ panel, x, y, w, h, g: { leftX: g.leftX, rightX: g.rightX, headerH: g.headerH, rowH: g.rowH, rows: g.rows, cols: g.cols, left: g.left, top: g.top, cell: g.cell, labelPx: g.px ?? g.labelPx } })) : null;
  };
  // Query/key space: where each query and key point is drawn (CSS px relative to the canvas),
  // the lines from the focused query, and the PCA behind them.
  debug.qkPoints = () => {
    const geom = geomOf('qk');
    return geom && geom.qs ? { qs: geom.qs, ks: geom.ks, lines: geom.lines, focusIndex: geom.focusIndex, focusSide: geom.focusSide } : null;
  };
  // Score parts: each listed key's row (CSS px relative to the canvas) with its bar's segments
  // ({ group, value }), the key the sentence under the table reads, and that sentence.
  debug.partsRows = () => {
    const geom = geomOf('parts');
    return geom && geom.rows ? { rows: geom.rows.map(({ key, y, h, segments }) => ({ key, y, h, segments: segments.map(({ group, value }) => ({ group, value })) })), readKey: geom.readKey ?? null, reading: geom.reading ?? '' } : null;
  };
  // Logit lens: its table (CSS px relative to the canvas) and the cell whose candidates stand under it.
  debug.lensGrid = () => {
    const g = geomOf('lens');
    return g && g.col ? { left: g.left, top: g.top, col: g.col, rowH: g.rowH, layers: g.L, positions: g.T, detail: g.detail, lens: session.result && session.result.logit_lens } : null;
  };
  // how long the app's own slices and handlers held the main thread (timing.js; take() empties it)
  debug.timings = timings;
  // a forward still owed (A's or B's answer for the current text, generation and measure) or a drawing queued
  Object.defineProperty(debug, 'computing', { get: () => shell.busy || session.pending });
  // the transient focus (the token or cell under the pointer), shared by both sides of a comparison
  Object.defineProperty(debug, 'focus', { get: () => session.focus });
  // what inspectModel() found on the last model opened, with the worker's timings and memory
  Object.defineProperty(debug, 'opened', { get: () => session.opened });
  // the attention weights of the result drawn last, as plain arrays (the two wasm builds' are compared)
  // (data null: a layer whose maps are still in the worker, a long text's not drawn yet)
  // Which blocks of the drawn result hold their maps (the others are still in the worker), and one block's maps.
  debug.mapsHeld = () => (session.result ? session.result.attentions.map((a) => !!a.data) : null);
  debug.mapsOf = (i) => (session.result && session.result.attentions[i] ? session.result.attentions[i].data || null : null);
  // The model view's thumbnails of a long text's maps (session-view-data.js), per kind: { size, data }.
  debug.thumbnails = () => (session.result && session.result.thumbnails) || null;
  debug.attentions = () => (session.result ? session.result.attentions.map(({ kind, data }) => ({ kind, data: data ? Array.from(data) : null })) : null);
  // true while a drawing is still being made (at 512 tokens it takes several tasks)
  Object.defineProperty(debug, 'drawing', { get: () => shell.drawing });
  // bars of the entropy chart as drawn (0 until its wasm has loaded)
  Object.defineProperty(debug, 'chartBars', { get: () => (chart.geometry() ? chart.geometry().bars.length : 0) });
  window.attnvizDebug = debug;

  // What the generation panel shows (read by the tests with the drawing it belongs to).
  function generationSeen() {
    const g = generationText(session);
    const r = session.result;
    if (!g || !r || !r.generation) return g ? { tokens: [], step: 0, steps: 0, top: [], promptLen: null } : null;
    return { tokens: g.tokens, rawTokens: (r.tokens.target || []).slice(), step: g.step, steps: g.steps, gstep: session.state.gstep, promptLen: r.generation.prompt_len, top: g.top, chosen: g.chosen, shownLen: session.input().result.tokens.source.length + (session.input().result.tokens.target || []).length, stopReason: r.stop_reason ?? null, sampling: r.generation.sampling || null };
  }

  function drawn(geom, r, s, input) {
    const sd = input.step;
    const seen = {
      lastDrawMs: geom.drawMs,
      linesFrom: geom.linesFrom || 0, // head view: weights under this are not drawn (line budget)
      modelId: parseModelKey(session.resultFor.model).id, // the model's id (the worker's key without its weights)
      weights: session.drawnWeights(), // which of its weights drew the map ('int8' | 'exact')
      tokens: r.tokens.source.slice(),
      targetTokens: (r.tokens.target || []).slice(),
      text: session.resultFor.text, // the text of the drawn result (the text box may be newer)
      catchingUp: session.catchingUp, // that text is older than the box's, a newer one is computed
      status: el.status.textContent, // the status line this drawing was shown with
      compareTokens: input.compare && input.compare.result ? input.compare.result.tokens.source.slice() : null, // sentence B as drawn
      outputText: r.output_text ?? null,
      lastForwardMs: session.forwardMs,
      view: s.view,
      state: { ...s },
      generation: generationSeen(),
      step: sd ? { kind: sd.kind, layer: sd.layer, head: sd.head, d_k: sd.d_k, queryTokens: sd.query_tokens, keyTokens: sd.key_tokens, probs: Array.from(sd.probs) } : null,
    };
    const l = session.latency;
    if (l) Object.assign(seen, { lastLatencyMs: l.total, lastTimings: { toPost: l.toPost, roundTrip: l.roundTrip, forward: l.forward, toDrawn: l.total - l.toPost - l.roundTrip } });
    return () => Object.assign(debug, seen, { drawCount: debug.drawCount + 1 });
  }

  return { drawn };
}
