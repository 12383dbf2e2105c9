// The page shell: wires the DOM controls to the view state, the worker client and the views.
// All token strings and user text go into the DOM with textContent only.

import { resultShape, tokensFor } from './analysis.js';
import { Channel, init, loadModel } from './worker-client.js';
import { VIEW_MODULES, download, exportName, pngBlob, render, toSvg } from './render.js';
import { clampToResult, decodeState, defaultState, encodeState } from './state.js';
import { headColor, readTheme } from './views/common.js';
import { topWeights } from './views/head.js';
import { cellText } from './views/heatmap.js';

const $ = (id) => document.getElementById(id);
const el = {
  model: $('model'), text: $('text'), status: $('status'), output: $('output'), translation: $('translation'),
  progressBox: $('progress-box'), progress: $('progress'), progressText: $('progress-text'),
  views: $('views'), kinds: $('kinds'), layer: $('layer'), layerPrev: $('layer-prev'), layerNext: $('layer-next'),
  heads: $('heads'), headsAll: $('heads-all'), headsCtl: $('heads-ctl'), agg: $('agg'), aggCtl: $('agg-ctl'),
  query: $('query'), queryCtl: $('query-ctl'), step: $('step'), stepOut: $('step-out'), stepCtl: $('step-ctl'),
  hideSpecial: $('hide-special'), merge: $('merge'), threshold: $('threshold'), thresholdOut: $('threshold-out'),
  canvas: $('view'), wrap: $('canvas-wrap'), sideTitle: $('side-title'), sideHint: $('side-hint'), topList: $('top-list'), notes: $('notes'),
  png: $('export-png'), svg: $('export-svg'), link: $('copy-link'), msg: $('action-msg'), credits: $('credits'), build: $('build'),
};

const KIND_LABEL = { encoder_self: 'Encoder self-attention', decoder_self: 'Decoder self-attention', cross: 'Cross-attention' };

let state = decodeState(location.hash, defaultState());
let catalog = null; // { build, supported, models }
let info = null; // model.info() of the current model
let result = null; // last drawn attend() answer
let stepData = null; // last step() answer for the step view
let forwardMs = null;
let geom = null;
let focus = null; // hovered token (transient)
let plotters = null; // wasm drawHeatmap on the main thread, when loaded
let plottersLoading = false;
const attendChannel = new Channel('page');
const stepChannel = new Channel('page-step');
let busyTimer = null;
let timings = null; // when the last attend request was posted and answered (for the latency breakdown)
const inputTimes = new Map(); // text → time of the input event that produced it

const debug = {
  build: null,
  modelId: null,
  tokens: [],
  targetTokens: [],
  outputText: null,
  lastForwardMs: null,
  drawCount: 0,
  lastDrawMs: null,
  lastLatencyMs: null,
  view: state.view,
  step: null,
  state: null,
};
// For tests: where (CSS px, relative to the canvas) a token of the head view is drawn.
debug.tokenPoint = (side, index) => {
  if (state.view !== 'head' || !geom || !geom.rowH) return null;
  return { x: side === 'q' ? geom.leftX - 10 : geom.rightX + 10, y: geom.headerH + 4 + index * geom.rowH + geom.rowH / 2 };
};
window.attnvizDebug = debug;

function setBodyState(s) {
  document.body.dataset.state = s;
}

function fail(e) {
  const msg = e && e.message ? e.message : String(e);
  el.status.textContent = `Error: ${msg}`;
  el.status.classList.add('error');
  setBodyState('error');
  console.error(e);
}

// ------------------------------------------------------------------ permalink
let lastHash = '';
function writeHash() {
  const h = encodeState(state);
  if (h !== lastHash) {
    lastHash = h;
    history.replaceState(null, '', `#${h}`);
  }
}

window.addEventListener('hashchange', () => {
  const h = location.hash.replace(/^#/, '');
  if (h === lastHash) return;
  const next = decodeState(h, defaultState());
  const modelChanged = next.model !== state.model;
  state = next;
  lastHash = h;
  el.text.value = state.text;
  if (modelChanged) switchModel(state.model, true);
  else compute();
});

// ------------------------------------------------------------------ start
async function start() {
  setBodyState('loading');
  try {
    catalog = await init();
  } catch (e) {
    fail(e);
    return;
  }
  debug.build = catalog.build;
  el.build.textContent = `attnviz ${catalog.build.version} · wasm SIMD ${catalog.build.simd ? 'on' : 'off'} · architectures: ${catalog.supported.join(', ')}`;
  el.model.textContent = '';
  for (const m of catalog.models) {
    const o = document.createElement('option');
    o.value = m.id;
    o.textContent = m.name || m.id;
    el.model.appendChild(o);
  }
  el.credits.textContent = '';
  for (const m of catalog.models) {
    const li = document.createElement('li');
    li.textContent = m.credit || `${m.name || m.id}${m.license ? `, licence ${m.license}` : ''}`;
    el.credits.appendChild(li);
  }
  el.model.disabled = false;
  if (!catalog.models.some((m) => m.id === state.model || m.dir === state.model)) {
    state.model = catalog.models.some((m) => m.id === 'minilm-l6') ? 'minilm-l6' : catalog.models[0] && catalog.models[0].id;
  }
  const m = manifest(state.model);
  if (m) state.model = m.id;
  if (!state.text && m) state.text = m.example || '';
  el.text.value = state.text;
  await switchModel(state.model, true);
}

function manifest(id) {
  return catalog && catalog.models.find((m) => m.id === id || m.dir === id);
}

async function switchModel(id, keepText) {
  const m = manifest(id);
  if (!m) {
    fail(new Error(`unknown model "${id}"`));
    return;
  }
  const prev = manifest(debug.modelId);
  if (!keepText && (!state.text.trim() || (prev && state.text === prev.example))) {
    state.text = m.example || state.text;
    el.text.value = state.text;
  }
  state.model = m.id;
  el.model.value = m.id;
  info = null; // compute() waits for the new model; the old drawing stays until then
  stepData = null;
  clearTimeout(busyTimer);
  el.status.classList.remove('error');
  el.status.textContent = `Loading ${m.name || m.id}…`;
  el.progressBox.hidden = false;
  const total = Object.values(m.sizes || {}).reduce((a, b) => a + b, 0);
  el.progress.value = 0;
  el.progressText.textContent = total ? `0 / ${mb(total)}` : '';
  try {
    info = await loadModel(m.id, (p) => {
      el.progress.max = p.total || 1;
      el.progress.value = p.loaded;
      el.progressText.textContent = `${mb(p.loaded)} / ${mb(p.total)}`;
    });
  } catch (e) {
    el.progressBox.hidden = true;
    fail(e);
    return;
  }
  if (state.model !== m.id) return; // another model was picked meanwhile
  el.progressBox.hidden = true;
  debug.modelId = m.id;
  await compute();
}

const mb = (b) => `${(b / 1048576).toFixed(1)} MB`;

// ------------------------------------------------------------------ compute and draw
async function compute() {
  if (!info) return;
  const model = state.model;
  const text = state.text;
  let ans;
  // Long inputs take a while: say so if the answer is not back within 200 ms.
  clearTimeout(busyTimer);
  busyTimer = setTimeout(() => {
    el.wrap.setAttribute('aria-busy', 'true');
    if (!el.status.textContent.endsWith('computing…')) el.status.textContent += ' · computing…';
  }, 200);
  try {
    const tPost = performance.now();
    ans = await attendChannel.attend(model, text);
    timings = { post: tPost, answer: performance.now() };
  } catch (e) {
    clearTimeout(busyTimer);
    el.wrap.removeAttribute('aria-busy');
    el.status.textContent = `Error: ${e.message}`;
    el.status.classList.add('error');
    if (!result) setBodyState('error');
    return;
  }
  if (ans.superseded || model !== state.model || text !== state.text) return;
  clearTimeout(busyTimer);
  el.wrap.removeAttribute('aria-busy');
  el.status.classList.remove('error');
  result = ans.result;
  forwardMs = typeof result.forward_ms === 'number' ? result.forward_ms : ans.ms;
  if (state.view === 'step') await computeStep(false);
  draw(text);
}

async function computeStep(redraw = true) {
  if (!result) return;
  const { model, text, kind, layer, head } = state;
  const key = `${model}|${text}|${kind}|${layer}|${head}`;
  if (stepData && stepData.key === key) {
    if (redraw) draw();
    return;
  }
  let ans;
  try {
    ans = await stepChannel.step(model, text, kind, layer, head);
  } catch (e) {
    el.status.textContent = `Error (step view): ${e.message}`;
    return;
  }
  if (ans.superseded) return;
  stepData = { key, data: ans.step };
  if (redraw) draw();
}

function shape() {
  return resultShape(result);
}

function input() {
  const sp = new Set((info && info.special_tokens) || []);
  return {
    result,
    specials: [...sp],
    step: state.view === 'step' && stepData && stepData.key.startsWith(`${state.model}|${state.text}|${state.kind}|${state.layer}|${state.head}`) ? stepData.data : null,
    plotters: state.view === 'heatmap' ? plotters : null,
  };
}

let drawQueued = false;
function scheduleDraw() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(() => {
    drawQueued = false;
    draw();
  });
}

function draw(textForLatency) {
  if (!result) return;
  state = clampToResult(state, shape());
  if (state.view === 'heatmap' && !plotters) loadPlotters();
  if (state.view === 'step' && !input().step) {
    computeStep(true);
  }
  syncControls();
  const theme = readTheme(document.documentElement);
  const width = Math.max(280, el.wrap.clientWidth - 2);
  const st = { ...state, focus: state.view === 'head' ? focus || state.pin : null };
  try {
    geom = render(el.canvas, state.view, input(), st, theme, width);
  } catch (e) {
    console.error(e);
    el.status.textContent = `Error drawing: ${e.message}`;
    return;
  }
  writeHash();
  updateSide();
  updateStatus();
  debug.drawCount += 1;
  debug.lastDrawMs = geom.drawMs;
  debug.modelId = result.model || state.model;
  debug.tokens = result.tokens.source.slice();
  debug.targetTokens = (result.tokens.target || []).slice();
  debug.text = result.text; // the text of the drawn result (state.text may be newer)
  debug.outputText = result.output_text ?? null;
  debug.lastForwardMs = forwardMs;
  debug.view = state.view;
  debug.state = { ...state };
  const sd = input().step;
  debug.step = sd ? { kind: sd.kind, layer: sd.layer, head: sd.head, d_k: sd.d_k, queryTokens: sd.query_tokens, keyTokens: sd.key_tokens, probs: Array.from(sd.probs) } : null;
  if (textForLatency !== undefined && inputTimes.has(textForLatency)) {
    const now = performance.now();
    const t0 = inputTimes.get(textForLatency);
    debug.lastLatencyMs = now - t0;
    if (timings) debug.lastTimings = { toPost: timings.post - t0, roundTrip: timings.answer - timings.post, forward: forwardMs, toDrawn: now - timings.answer };
    inputTimes.clear();
  }
  if (document.body.dataset.state !== 'ready') setBodyState('ready');
}

function updateStatus() {
  const m = manifest(state.model);
  const n = result.tokens.source.length;
  const tgt = (result.tokens.target || []).length;
  const parts = [`${m ? m.name || m.id : state.model}`, `${n} token${n === 1 ? '' : 's'}`];
  if (tgt) parts.push(`${tgt} output token${tgt === 1 ? '' : 's'}`);
  if (forwardMs != null) parts.push(`${forwardMs.toFixed(1)} ms per forward`);
  if (result.truncated) parts.push('input truncated to the model’s maximum length');
  el.status.textContent = parts.join(' · ');
  if (result.output_text != null) {
    el.translation.hidden = false;
    el.output.textContent = result.output_text;
  } else {
    el.translation.hidden = true;
    el.output.textContent = '';
  }
}

// ------------------------------------------------------------------ controls
function setOptions(select, labels) {
  const same = select.options.length === labels.length && labels.every((l, i) => select.options[i].textContent === l);
  if (same) return;
  select.textContent = '';
  labels.forEach((l, i) => {
    const o = document.createElement('option');
    o.value = String(i);
    o.textContent = l;
    select.appendChild(o);
  });
}

function syncControls() {
  const sh = shape();
  // view tabs
  for (const b of el.views.querySelectorAll('[role=tab]')) {
    const v = b.dataset.view;
    const on = v === state.view;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
    b.hidden = v === 'cross' && !sh.kinds.includes('cross');
  }
  // kind tabs
  const kindsWanted = state.view === 'cross' ? [] : sh.kinds;
  if (el.kinds.dataset.kinds !== kindsWanted.join(',')) {
    el.kinds.textContent = '';
    for (const k of kindsWanted) {
      const b = document.createElement('button');
      b.setAttribute('role', 'tab');
      b.dataset.kind = k;
      b.textContent = KIND_LABEL[k] || k;
      el.kinds.appendChild(b);
    }
    el.kinds.dataset.kinds = kindsWanted.join(',');
  }
  el.kinds.hidden = kindsWanted.length < 2;
  for (const b of el.kinds.querySelectorAll('[role=tab]')) {
    const on = b.dataset.kind === state.kind;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
  }
  const kind = state.view === 'cross' ? 'cross' : state.kind;
  const L = sh.layers[kind] || 0;
  const H = sh.heads[kind] || 0;
  setOptions(el.layer, [...Array(L).keys()].map((l) => `${l + 1} of ${L}`));
  el.layer.value = String(state.layer);
  el.layerPrev.disabled = state.layer <= 0;
  el.layerNext.disabled = state.layer >= L - 1;
  el.layer.closest('.ctl').hidden = state.view === 'model';
  // head swatches
  if (el.heads.childElementCount !== H) {
    el.heads.textContent = '';
    for (let h = 0; h < H; h++) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'swatch';
      b.dataset.head = String(h);
      b.style.setProperty('--c', headColor(h));
      b.textContent = String(h + 1);
      b.title = `Head ${h + 1}: click toggles, double-click shows only this head`;
      b.setAttribute('aria-label', `Head ${h + 1}`);
      el.heads.appendChild(b);
    }
  }
  const shown = state.heads || [...Array(H).keys()];
  for (const b of el.heads.children) {
    const h = Number(b.dataset.head);
    const on =
      state.view === 'step' ? h === state.head : state.agg === 'head' && (state.view === 'head' ? shown.includes(h) : h === state.head);
    b.setAttribute('aria-pressed', String(on));
    b.classList.toggle('focused', h === state.head);
  }
  el.headsAll.hidden = state.view !== 'head';
  el.headsCtl.hidden = state.view === 'model';
  // aggregate
  const rollOpt = el.agg.querySelector('option[value=rollout]');
  rollOpt.disabled = kind === 'cross';
  rollOpt.hidden = kind === 'cross';
  el.agg.value = state.agg;
  el.aggCtl.hidden = state.view === 'model' || state.view === 'step';
  // filters
  el.hideSpecial.checked = state.hideSpecial;
  el.merge.checked = state.merge;
  el.threshold.value = String(state.threshold);
  el.thresholdOut.textContent = state.threshold.toFixed(2);
  // step view query
  el.queryCtl.hidden = state.view !== 'step';
  if (state.view === 'step') {
    const q = tokensFor(result, state.kind).q;
    setOptions(el.query, q.map((t, i) => `${i + 1}: ${t}`));
    el.query.value = String(state.query);
  }
  // cross scrubber
  el.stepCtl.hidden = state.view !== 'cross';
  if (state.view === 'cross') {
    const tgt = result.tokens.target || [];
    el.step.max = String(Math.max(0, tgt.length - 1));
    el.step.value = String(state.step);
    el.stepOut.textContent = tgt.length ? `${state.step + 1} / ${tgt.length}: ${tgt[state.step]}` : '';
  }
}

function updateSide() {
  el.topList.textContent = '';
  el.notes.textContent = '';
  const inp = input();
  const addNote = (t) => {
    const li = document.createElement('li');
    li.textContent = t;
    el.notes.appendChild(li);
  };
  if (state.hideSpecial) addNote('Special tokens are hidden and each row is renormalised to sum to 1.');
  if (state.merge) addNote('Sub-word pieces are merged into words: weights to a word are summed over its pieces (keys), and a word’s row is the average of its pieces’ rows (queries).');
  if (state.threshold > 0 && state.view === 'head') addNote(`Lines with weight below ${state.threshold.toFixed(2)} are hidden.`);
  if (state.agg === 'rollout' && state.view !== 'model') addNote('Rollout (Abnar & Zuidema 2020): per layer 0.5·mean over heads + 0.5·identity, rows renormalised, multiplied through the layers up to this one.');
  if (state.view === 'head') {
    const f = focus || state.pin;
    el.sideHint.hidden = !!f;
    if (f) {
      const list = topWeights(inp, state, f, 8);
      const tokLabel = f.side === 'q' ? 'query' : 'key';
      el.sideTitle.textContent = `Top weights ${f.side === 'q' ? 'from' : 'to'} this ${tokLabel}${state.pin ? ' (pinned)' : ''}`;
      for (const it of list) {
        const li = document.createElement('li');
        const name = document.createElement('span');
        name.className = 'tok';
        name.dir = 'auto';
        name.textContent = it.label;
        const w = document.createElement('span');
        w.className = 'w';
        w.textContent = it.weight.toFixed(3);
        const bar = document.createElement('span');
        bar.className = 'bar';
        bar.style.setProperty('--w', String(Math.min(1, it.weight)));
        li.append(name, bar, w);
        el.topList.appendChild(li);
      }
    } else {
      el.sideTitle.textContent = 'Details';
      el.sideHint.textContent = 'Hover a token to see only its lines and its top weights; click to pin it.';
    }
  } else {
    el.sideHint.hidden = false;
    el.sideTitle.textContent = 'Details';
    el.sideHint.textContent = VIEW_MODULES[state.view].describe(inp, state);
  }
}

function setState(patch, how = 'draw') {
  state = { ...state, ...patch };
  if (how === 'compute') compute();
  else if (how === 'step') {
    if (state.view === 'step') computeStep(true);
    scheduleDraw();
  } else scheduleDraw();
}

// Text input: no debounce (the issue allows ≤ 30 ms; a timer here measurably delayed the post by
// 5–20 ms under load). The worker collapses requests that queue up while it computes, so fast
// typing never builds a backlog, and answers for superseded texts are never drawn.
el.text.addEventListener('input', () => {
  inputTimes.set(el.text.value, performance.now());
  state.text = el.text.value;
  state.pin = null;
  focus = null;
  compute();
});

el.model.addEventListener('change', () => {
  state = { ...state, kind: 'encoder_self', layer: 0, head: 0, heads: null, query: 0, step: 0, pin: null, agg: 'head' };
  if (state.view === 'cross') state.view = 'head';
  switchModel(el.model.value, false);
});

el.views.addEventListener('click', (e) => {
  const b = e.target.closest('[role=tab]');
  if (!b) return;
  const view = b.dataset.view;
  const patch = { view, pin: null };
  if (view === 'cross') patch.kind = 'cross';
  setState(patch, view === 'step' ? 'step' : 'draw');
});
el.kinds.addEventListener('click', (e) => {
  const b = e.target.closest('[role=tab]');
  if (!b) return;
  setState({ kind: b.dataset.kind, pin: null, query: 0 }, 'step');
});
for (const list of [el.views, el.kinds]) {
  list.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    const tabs = [...list.querySelectorAll('[role=tab]')].filter((t) => !t.hidden);
    const i = tabs.indexOf(document.activeElement);
    if (i < 0) return;
    e.preventDefault();
    const next = tabs[(i + (e.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
    next.focus();
    next.click();
  });
}
el.layer.addEventListener('change', () => setState({ layer: Number(el.layer.value), pin: null }, 'step'));
el.layerPrev.addEventListener('click', () => setState({ layer: Math.max(0, state.layer - 1) }, 'step'));
el.layerNext.addEventListener('click', () => setState({ layer: state.layer + 1 }, 'step'));

let clickTimer = null;
el.heads.addEventListener('click', (e) => {
  const b = e.target.closest('.swatch');
  if (!b) return;
  const h = Number(b.dataset.head);
  if (state.view !== 'head') {
    setState({ head: h, heads: [h] }, 'step');
    return;
  }
  // Delay a little so that a double-click does not toggle twice.
  clearTimeout(clickTimer);
  clickTimer = setTimeout(() => {
    const H = el.heads.childElementCount;
    let shown = state.heads ? state.heads.slice() : [...Array(H).keys()];
    if (state.agg !== 'head') shown = [];
    if (shown.includes(h)) shown = shown.filter((x) => x !== h);
    else shown.push(h);
    shown.sort((a, b2) => a - b2);
    setState({ heads: shown.length === H || !shown.length ? null : shown, head: h, agg: 'head' });
  }, 220);
});
el.heads.addEventListener('dblclick', (e) => {
  const b = e.target.closest('.swatch');
  if (!b) return;
  clearTimeout(clickTimer);
  const h = Number(b.dataset.head);
  setState({ heads: [h], head: h, agg: 'head' }, 'step');
});
el.headsAll.addEventListener('click', () => setState({ heads: null, agg: 'head' }));
el.agg.addEventListener('change', () => setState({ agg: el.agg.value }));
el.query.addEventListener('change', () => setState({ query: Number(el.query.value) }));
el.step.addEventListener('input', () => setState({ step: Number(el.step.value) }));
el.hideSpecial.addEventListener('change', () => setState({ hideSpecial: el.hideSpecial.checked, pin: null }));
el.merge.addEventListener('change', () => setState({ merge: el.merge.checked, pin: null }));
el.threshold.addEventListener('input', () => setState({ threshold: Number(el.threshold.value) }));

// Canvas interaction
function canvasPoint(e) {
  const r = el.canvas.getBoundingClientRect();
  return { x: e.clientX - r.left, y: e.clientY - r.top };
}
el.canvas.addEventListener('pointermove', (e) => {
  if (!result || !geom) return;
  const p = canvasPoint(e);
  const mod = VIEW_MODULES[state.view];
  const hit = mod.hitTest(geom, p.x, p.y);
  if (state.view === 'head') {
    const same = (hit && focus && hit.side === focus.side && hit.index === focus.index) || (!hit && !focus);
    if (!same) {
      focus = hit;
      scheduleDraw();
    }
    el.canvas.style.cursor = hit ? 'pointer' : 'default';
  } else if (state.view === 'heatmap') {
    el.sideHint.textContent = hit ? cellText(input(), state, hit) : VIEW_MODULES.heatmap.describe(input(), state);
  } else {
    el.canvas.style.cursor = hit ? 'pointer' : 'default';
  }
});
el.canvas.addEventListener('pointerleave', () => {
  if (focus) {
    focus = null;
    scheduleDraw();
  }
});
el.canvas.addEventListener('click', (e) => {
  if (!result || !geom) return;
  const p = canvasPoint(e);
  const hit = VIEW_MODULES[state.view].hitTest(geom, p.x, p.y);
  if (state.view === 'head') {
    const same = hit && state.pin && hit.side === state.pin.side && hit.index === state.pin.index;
    setState({ pin: hit && !same ? hit : null });
  } else if (state.view === 'model' && hit) {
    setState({ view: 'head', layer: hit.layer, head: hit.head, heads: [hit.head], agg: 'head' });
  } else if (state.view === 'cross' && hit) {
    setState({ step: hit.step });
  }
});

// Keyboard: layer and head from anywhere but text fields
document.addEventListener('keydown', (e) => {
  const t = e.target;
  if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.isContentEditable)) return;
  if (e.ctrlKey || e.metaKey || e.altKey || !result) return;
  if (t && t.getAttribute && t.getAttribute('role') === 'tab' && (e.key === 'ArrowLeft' || e.key === 'ArrowRight')) return;
  const sh = shape();
  const kind = state.view === 'cross' ? 'cross' : state.kind;
  const H = sh.heads[kind] || 1;
  const L = sh.layers[kind] || 1;
  let handled = true;
  switch (e.key) {
    case 'ArrowUp':
      setState({ layer: Math.max(0, state.layer - 1) }, 'step');
      break;
    case 'ArrowDown':
      setState({ layer: Math.min(L - 1, state.layer + 1) }, 'step');
      break;
    case 'ArrowLeft': {
      const h = (state.head + H - 1) % H;
      setState({ head: h, heads: [h], agg: 'head' }, 'step');
      break;
    }
    case 'ArrowRight': {
      const h = (state.head + 1) % H;
      setState({ head: h, heads: [h], agg: 'head' }, 'step');
      break;
    }
    case 'a':
    case 'A':
      setState({ heads: null, agg: 'head' });
      break;
    case 'm':
    case 'M':
      setState({ agg: 'mean' });
      break;
    case 'Escape':
      focus = null;
      setState({ pin: null });
      break;
    case '[':
    case ']': {
      // Head view: pin the previous / next query token (its top weights are read out).
      if (state.view !== 'head' || !geom || !geom.rows) break;
      const i = state.pin && state.pin.side === 'q' ? state.pin.index : -1;
      const n = geom.rows;
      const next = e.key === ']' ? (i + 1) % n : (i - 1 + n) % n;
      setState({ pin: { side: 'q', index: next } });
      break;
    }
    case '1': case '2': case '3': case '4': case '5': {
      const views = ['head', 'model', 'heatmap', 'cross', 'step'];
      const v = views[Number(e.key) - 1];
      if (v === 'cross' && !sh.kinds.includes('cross')) break;
      setState({ view: v, ...(v === 'cross' ? { kind: 'cross' } : {}) }, 'step');
      break;
    }
    default:
      handled = false;
  }
  if (handled) e.preventDefault();
});

// Export and share
el.png.addEventListener('click', async () => {
  try {
    const blob = await pngBlob(el.canvas);
    download(blob, exportName(state, 'png'));
    el.msg.textContent = `PNG saved (${el.canvas.width}×${el.canvas.height} px).`;
  } catch (e) {
    el.msg.textContent = e.message;
  }
});
el.svg.addEventListener('click', () => {
  try {
    const theme = readTheme(document.documentElement);
    const width = Math.max(280, el.wrap.clientWidth - 2);
    const st = { ...state, focus: state.view === 'head' ? state.pin : null };
    const svg = toSvg(state.view, input(), st, theme, width);
    download(new Blob([svg], { type: 'image/svg+xml' }), exportName(state, 'svg'));
    el.msg.textContent = 'SVG saved.';
  } catch (e) {
    el.msg.textContent = `SVG export failed: ${e.message}`;
  }
});
el.link.addEventListener('click', async () => {
  writeHash();
  try {
    await navigator.clipboard.writeText(location.href);
    el.msg.textContent = 'Permalink copied.';
  } catch {
    el.msg.textContent = 'The address bar now holds the permalink.';
  }
});

// Theme and size changes redraw
if (window.matchMedia) matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => scheduleDraw());
let lastWidth = 0;
new ResizeObserver(() => {
  const w = el.wrap.clientWidth;
  if (Math.abs(w - lastWidth) > 4) {
    lastWidth = w;
    scheduleDraw();
  }
}).observe(el.wrap);

// The heatmap's plotters-canvas renderer lives in the wasm; load a main-thread copy on demand.
async function loadPlotters() {
  if (plotters || plottersLoading) return;
  plottersLoading = true;
  try {
    const mod = await import(new URL('./pkg/attnviz.js', import.meta.url).href);
    await mod.default({ module_or_path: new URL('./pkg/attnviz_bg.wasm', import.meta.url) });
    if (typeof mod.drawHeatmap === 'function') {
      plotters = (canvas, data, rows, cols, rl, cl, opts) => mod.drawHeatmap(canvas, data, rows, cols, rl, cl, opts);
      scheduleDraw();
    }
  } catch (e) {
    console.warn('plotters heatmap unavailable, using the JS heatmap', e);
  }
}

// A second visit works offline: the service worker keeps the shell and the wasm, the worker keeps
// the model files in the Cache API.
if ('serviceWorker' in navigator && window.isSecureContext) {
  navigator.serviceWorker.register(new URL('./sw.js', import.meta.url), { scope: './' }).catch((e) => console.warn('service worker not registered:', e.message));
}

start();
