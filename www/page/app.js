// The page: binds the DOM of index.html to one Session (www/core/session.js) and draws its state with
// the shared views. All logic a widget also needs lives in the session, the views registry and
// render.js; this file only finds elements, forwards events and writes what the session holds.
// Token strings and user text go into the DOM with textContent only.

import { Session } from '../core/session.js';
import { mountGenerationPanel } from '../shell/generation-panel.js';
import { bindCompareBox, bindTextBox, saveView } from '../shell/render.js';
import { mountShell } from '../shell/host.js';
import { keepForOffline } from '../shell/offline.js';
import { decodeState, defaultState, encodeState, permalinkNotice } from '../core/state.js';
import { bindControls, syncControls } from './controls.js';
import { renderSide } from './side.js';
import { renderProgress, renderStatus } from './status.js';
import { bindEntropyChart } from './entropy-panel.js';
import { renderHeadsTable } from '../shell/heads-table.js';
import { bindOpenModel, syncOpenModel } from './open-model.js';
import { configure } from '../core/engine.js';
import { later, listen, timings } from '../base/timing.js';
import { buildText, generationText, modelLabel } from '../shell/prose.js';

const $ = (id) => document.getElementById(id);

function elements() {
  return {
    model: $('model'), text: $('text'), compare: $('compare'), status: $('status'), output: $('output'), outputLabel: $('output-label'), translation: $('translation'), coverage: $('coverage'),
    generation: $('generation'), gqaNote: $('gqa-note'),
    truncation: $('truncation'), notice: $('notice'),
    progressBox: $('progress-box'), progress: $('progress'), progressText: $('progress-text'),
    views: $('views'), kinds: $('kinds'), panel: $('view-panel'),
    layer: $('layer'), layerPrev: $('layer-prev'), layerNext: $('layer-next'), layerCtl: $('layer-ctl'),
    heads: $('heads'), headsAll: $('heads-all'), headsCtl: $('heads-ctl'), agg: $('agg'), aggCtl: $('agg-ctl'),
    measure: $('measure'), measureCtl: $('measure-ctl'), weights: $('weights'), weightsCtl: $('weights-ctl'), compareModel: $('compare-model'),
    query: $('query'), queryCtl: $('query-ctl'), step: $('step'), stepOut: $('step-out'), stepCtl: $('step-ctl'),
    stepPart: $('step-part'), partCtl: $('part-ctl'), zoom: $('zoom'),
    hideSpecial: $('hide-special'), merge: $('merge'), threshold: $('threshold'), thresholdOut: $('threshold-out'),
    headsRank: $('heads-rank'),
    canvas: $('view'), wrap: $('canvas-wrap'), sideTitle: $('side-title'), sideHint: $('side-hint'), topList: $('top-list'), notes: $('notes'),
    chart: $('entropy-chart'), chartBox: $('chart-box'), chartReadout: $('chart-readout'),
    openModel: $('open-model'), removeModel: $('remove-model'), openPanel: $('open-panel'), openHelp: $('open-help'), openFolder: $('open-folder'), openFiles: $('open-files'),
    hubForm: $('hub-form'), hubRepo: $('hub-repo'), hubRevision: $('hub-revision'), hubFile: $('hub-file'), hubHelp: $('hub-help'),
    png: $('export-png'), svg: $('export-svg'), link: $('copy-link'), msg: $('action-msg'), credits: $('credits'), build: $('build'),
  };
}

const canvasWidth = (el) => Math.max(280, el.wrap.clientWidth - 2);

function fillCatalog(el, catalog, session) {
  el.build.textContent = `attnviz ${catalog.build.version} · ${buildText(session)} · architectures: ${catalog.supported.join(', ')}`;
  el.model.textContent = '';
  el.credits.textContent = '';
  const yours = document.createElement('optgroup');
  yours.label = 'Your models (kept in this browser)';
  for (const m of catalog.models) {
    const o = document.createElement('option');
    o.value = m.id;
    o.textContent = modelLabel(m);
    (m.user ? yours : el.model).appendChild(o);
    if (m.user) continue;
    const li = document.createElement('li');
    li.textContent = m.credit || `${m.name || m.id}${m.license ? `, licence ${m.license}` : ''}`;
    el.credits.appendChild(li);
  }
  if (yours.childElementCount) el.model.appendChild(yours);
  el.model.disabled = false;
  if (session.manifest) el.model.value = session.manifest.id;
}

function main() {
  // ?build=simd, ?build=relaxed or ?build=threads (a permalink flag, README): load that build where
  // it can run; ?hub=URL: fetch hf: model ids from that Hub-layout server (a mirror) instead.
  const query = new URLSearchParams(location.search);
  configure({ build: query.get('build'), hub: query.get('hub') });
  const el = elements();
  let lastHash = '';

  // Read by the end-to-end tests (never by the page itself). geomOf(view): the last drawing's
  // geometry while that view is shown (any view: null).
  const geomOf = (view = null) => (!view || session.state.view === view ? shell.geom() : null);
  const debug = { build: null, modelId: null, tokens: [], targetTokens: [], outputText: null, lastForwardMs: null, drawCount: 0, lastDrawMs: null, lastLatencyMs: null, view: null, step: null, state: null };
  // Where (CSS px, relative to the canvas) a token of the head view is drawn.
  debug.tokenPoint = (side, index) => {
    const geom = geomOf('head');
    if (!geom || !geom.rowH) return null;
    return { x: side === 'q' ? geom.leftX - 10 : geom.rightX + 10, y: geom.headerH + 4 + index * geom.rowH + geom.rowH / 2 };
  };
  // Step view: where each matrix panel is drawn (CSS px relative to the canvas).
  debug.stepPanels = () => {
    const geom = geomOf('step');
    return geom && geom.panels ? geom.panels.map(({ id, x, y, w, h, rows, cols, cw, ch }) => ({ id, x, y, w, h, rows, cols, cw, ch })) : null;
  };
  // Model view: where its maps are drawn (CSS px relative to the canvas; layers in columns of layersPerColumn).
  debug.modelGrid = () => {
    const g = geomOf('model');
    return g && g.cols ? { left: g.left, top: g.top, cell: g.cell, pitchX: g.pitchX, pitchY: g.pitchY, layerPitch: g.layerPitch, columnPitch: g.columnPitch, layersPerColumn: g.layersPerColumn, cols: g.cols, layers: g.L, heads: g.H } : null;
  };
  // Heatmap: where its cells are drawn (CSS px relative to the canvas) and the pinned query row.
  debug.heatmapGrid = () => {
    const geom = geomOf('heatmap');
    return geom && geom.cell ? { left: geom.left, top: geom.top, cell: geom.cell, rows: geom.rows, cols: geom.cols, pinnedRow: geom.pinnedRow } : null;
  };
  // Positions view: where the heatmap and the line chart are drawn (CSS px relative to the canvas).
  debug.positionsChart = () => {
    const geom = geomOf('positions');
    return geom && geom.heat ? { heat: geom.heat, lines: geom.lines, positions: geom.positions, dims: geom.dims, lineDims: geom.lineDims, lo: geom.lo, hi: geom.hi } : null;
  };
  // Head overview: where its cells are drawn (CSS px relative to the canvas) and its data.
  debug.headsGrid = () => {
    const geom = geomOf('heads');
    return geom && geom.cell ? { left: geom.left, top: geom.top, cell: geom.cell, layers: geom.L, heads: geom.H, scores: session.input().heads } : null;
  };
  // Comparison (head view or heatmap with a "Compare with…" text): where each panel is drawn (CSS
  // px relative to the canvas: 'a', 'b', 'd' = the difference map) and its own geometry.
  debug.comparePanels = () => {
    const geom = geomOf();
    return geom && geom.panels && geom.view ? geom.panels.map(({ panel, x, y, w, h, g }) => ({ panel, x, y, w, h, g: { leftX: g.leftX, rightX: g.rightX, headerH: g.headerH, rowH: g.rowH, rows: g.rows, cols: g.cols, left: g.left, top: g.top, cell: g.cell } })) : null;
  };
  // Query/key space: where each query and key point is drawn (CSS px relative to the canvas),
  // the lines from the focused query, and the PCA behind them.
  debug.qkPoints = () => {
    const geom = geomOf('qk');
    return geom && geom.qs ? { qs: geom.qs, ks: geom.ks, lines: geom.lines, focusIndex: geom.focusIndex, focusSide: geom.focusSide } : null;
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
  debug.attentions = () => (session.result ? session.result.attentions.map(({ kind, data }) => ({ kind, data: Array.from(data) })) : null);
  // true while a drawing is still being made (at 512 tokens it takes several tasks)
  Object.defineProperty(debug, 'drawing', { get: () => shell.drawing });
  window.attnvizDebug = debug;

  const session = new Session({
    name: 'page',
    onUpdate(reason) {
      if (reason === 'catalog') {
        fillCatalog(el, session.catalog, session);
        debug.build = session.catalog.build;
      } else if (reason === 'progress') renderProgress(el, session);
      else if (reason === 'hover') renderSide(el, session);
      else if (reason === 'text') el.text.value = session.state.text; // the session replaced the text (a model's example)
      else if (reason === 'result') shell.draw();
      else if (reason === 'state') shell.scheduleDraw();
      if (reason === 'status') {
        renderStatus(el, session);
        generation.sync();
        if (session.phase === 'error' && !session.result) document.body.dataset.state = 'error';
        if (session.manifest) el.model.value = session.manifest.id;
        syncOpenModel(el, session);
      }
    },
  });

  function writeHash() {
    const h = encodeState(session.state);
    if (h !== lastHash) {
      lastHash = h;
      history.replaceState(null, '', `#${h}`);
    }
  }

  const shell = mountShell({
    name: 'page',
    session,
    canvas: el.canvas,
    box: el.wrap,
    themeRoot: document.documentElement,
    width: () => canvasWidth(el),
    sync: () => syncControls(el, session),
    drawn,
    failed(e) {
      console.error(e);
      el.status.textContent = `Error drawing: ${e.message}`;
    },
  });
  shell.observe();

  // After a drawing has finished (at 512 tokens, some tasks after it began).
  function drawn(geom, r, s, input) {
    generation.sync();
    // The side panel's chart in a task of its own, so no single task holds both drawings.
    later('page:chart', chart.draw);
    renderSide(el, session);
    // The head overview's ranking in a task of its own, like the chart: not in the drawing's.
    later('page:heads-table', () => renderHeadsTable(el.headsRank, session));
    renderStatus(el, session);
    const sd = input.step;
    const seen = {
      lastDrawMs: geom.drawMs,
      linesFrom: geom.linesFrom || 0, // head view: weights under this are not drawn (line budget)
      modelId: session.resultFor.model.split('@')[0], // the model's id (the worker's key without its weights)
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
    if (document.body.dataset.state !== 'ready') document.body.dataset.state = 'ready';
    // The permalink in a task of its own (replaceState of a long one took 10–20 ms), and the
    // test hooks with it, so a test that sees this drawing also sees its permalink.
    later('page:permalink', () => {
      writeHash();
      Object.assign(debug, seen, { drawCount: debug.drawCount + 1 });
    });
  }


  listen('page', window, 'hashchange', () => {
    const h = location.hash.replace(/^#/, '');
    if (h === lastHash) return;
    const next = decodeState(h, defaultState());
    lastHash = h;
    el.text.value = next.text;
    el.compare.value = next.compare;
    session.applyState(next);
  });

  // No debounce on typing: the session keeps at most one forward in flight and collapses the texts
  // typed meanwhile into the newest, so fast typing never builds a backlog.
  bindTextBox(el.text, session);
  bindCompareBox(el.compare, session);
  const generation = mountGenerationPanel(el.generation, session);
  // What the generation panel shows (read by the tests with the drawing it belongs to).
  function generationSeen() {
    const g = generationText(session);
    const r = session.result;
    if (!g || !r || !r.generation) return g ? { tokens: [], step: 0, steps: 0, top: [], promptLen: null } : null;
    return { tokens: g.tokens, rawTokens: (r.tokens.target || []).slice(), step: g.step, steps: g.steps, gstep: session.state.gstep, promptLen: r.generation.prompt_len, top: g.top, chosen: g.chosen, shownLen: session.input().result.tokens.source.length + (session.input().result.tokens.target || []).length, stopReason: r.stop_reason ?? null, sampling: r.generation.sampling || null };
  }
  listen('page', el.model, 'change', () => session.pickModel(el.model.value));
  bindControls(el, session);
  bindOpenModel(el, session);
  const chart = bindEntropyChart(el, session, shell.theme);
  // bars of the entropy chart as drawn (0 until its wasm has loaded)
  Object.defineProperty(debug, 'chartBars', { get: () => (chart.geometry() ? chart.geometry().bars.length : 0) });

  // Keyboard: layer, head and view from anywhere but text fields.
  listen('page', document, 'keydown', shell.key);

  listen('page', el.png, 'click', async () => {
    try {
      el.msg.textContent = await saveView('png', { canvas: el.canvas, session, theme: shell.theme(), box: shell.box() });
    } catch (e) {
      el.msg.textContent = e.message;
    }
  });
  listen('page', el.svg, 'click', async () => {
    try {
      el.msg.textContent = await saveView('svg', { canvas: el.canvas, session, theme: shell.theme(), box: shell.box() });
    } catch (e) {
      el.msg.textContent = `SVG export failed: ${e.message}`;
    }
  });
  listen('page', el.link, 'click', async () => {
    writeHash();
    try {
      await navigator.clipboard.writeText(location.href);
      const cut = permalinkNotice(session.state);
      el.msg.textContent = `Permalink copied.${cut ? ` ${cut}` : ''}`;
    } catch {
      el.msg.textContent = 'The address bar now holds the permalink.';
    }
  });

  const initial = decodeState(location.hash, defaultState());
  el.text.value = initial.text;
  el.compare.value = initial.compare;
  document.body.dataset.state = 'loading';
  session.start(initial).then(() => {
    el.text.value = session.state.text;
    keepForOffline(session.catalog);
  });
}

main();
