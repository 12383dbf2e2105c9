// The page: binds the DOM of index.html to one Session (www/core/session.js) and draws its state with
// the shared views. All logic a widget also needs lives in the session, the views registry and
// render.js; this file only finds elements, forwards events and writes what the session holds.
// The tests' hooks (window.attnvizDebug) are debug.js's, loaded only for them or with ?debug.
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
import { bindMapRoom } from './map-room.js';
import { configure } from '../core/engine.js';
import { later, listen } from '../base/timing.js';
import { buildText, modelLabel } from '../shell/prose.js';
import { bindStopExact } from '../shell/stop-exact.js';

const $ = (id) => document.getElementById(id);

function elements() {
  return {
    model: $('model'), text: $('text'), compare: $('compare'), status: $('status'), output: $('output'), outputLabel: $('output-label'), translation: $('translation'), coverage: $('coverage'),
    generation: $('generation'), generationReadout: $('generation-readout'), gqaNote: $('gqa-note'),
    truncation: $('truncation'), notice: $('notice'), retry: $('retry'), stopExact: $('stop-exact'),
    progressBox: $('progress-box'), progress: $('progress'), progressText: $('progress-text'),
    views: $('views'), kinds: $('kinds'), panel: $('view-panel'),
    layer: $('layer'), layerPrev: $('layer-prev'), layerNext: $('layer-next'), layerCtl: $('layer-ctl'),
    heads: $('heads'), headsAll: $('heads-all'), headsKv: $('heads-kv'), headsCtl: $('heads-ctl'), agg: $('agg'), aggCtl: $('agg-ctl'),
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

async function main() {
  // ?build=simd, ?build=relaxed or ?build=threads (a permalink flag, README): load that build where
  // it can run; ?hub=URL: fetch hf: model ids from that Hub-layout server (a mirror) instead.
  const query = new URLSearchParams(location.search);
  // ?hubTimeout=seconds: how long a Hub may keep the page waiting (30 by default).
  configure({ build: query.get('build'), hub: query.get('hub'), hubTimeout: query.get('hubTimeout') });
  // The test hooks (window.attnvizDebug, debug.js) only for a page under automation (every test,
  // bench and script drives it with Playwright: navigator.webdriver) or asked for with ?debug: a
  // reader's page never loads them. Awaited, so they exist before the page says it is ready.
  const debugModule = navigator.webdriver === true || query.has('debug') ? await import('./debug.js') : null;
  const el = elements();
  let lastHash = '';

  const session = new Session({
    name: 'page',
    onUpdate(reason) {
      if (reason === 'catalog') fillCatalog(el, session.catalog, session);
      else if (reason === 'progress') renderProgress(el, session);
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
    // While another model loads, the map on screen is still the previous model's (a redraw meanwhile,
    // e.g. for a new room above the map, must not name the one loading: it may fail).
    if (session.phase === 'loading' && session.result) return;
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
  bindMapRoom(el.wrap, [document.querySelector('header.top'), document.querySelector('section.input'), document.querySelector('nav.tabs')], shell.scheduleDraw);

  // After a drawing has finished (at 512 tokens, some tasks after it began).
  function drawn(geom, r, s, input) {
    generation.sync();
    // The side panel's chart in a task of its own, so no single task holds both drawings.
    later('page:chart', chart.draw);
    renderSide(el, session);
    // The head overview's ranking in a task of its own, like the chart: not in the drawing's.
    later('page:heads-table', () => renderHeadsTable(el.headsRank, session));
    renderStatus(el, session);
    const publish = hooks ? hooks.drawn(geom, r, s, input) : null;
    if (document.body.dataset.state !== 'ready') document.body.dataset.state = 'ready';
    // The permalink in a task of its own (replaceState of a long one took 10–20 ms), and the
    // test hooks with it, so a test that sees this drawing also sees its permalink.
    later('page:permalink', () => {
      writeHash();
      if (publish) publish();
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
  const generation = mountGenerationPanel(el.generation, session, { readout: el.generationReadout });
  listen('page', el.model, 'change', () => session.pickModel(el.model.value));
  listen('page', el.retry, 'click', () => session.retry?.());
  bindStopExact('page', el.stopExact, session);
  bindControls(el, session);
  bindOpenModel(el, session);
  const chart = bindEntropyChart(el, session, shell.theme);
  // The test hooks (debug.js), when it was loaded: before session.start(), so a test finds them
  // with the first drawing.
  const hooks = debugModule ? debugModule.installDebug({ session, shell, el, chart }) : null;

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
