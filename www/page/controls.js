// The page's controls: view and kind tabs, layer, head swatches, aggregate, filters, step-view
// query and the decode-step scrubber. syncControls writes the session's state into them;
// bindControls turns their events into session calls. No state of their own.

import { headColor } from '../views/common.js';
import { kindShown, viewFor, VIEWS } from '../views/index.js';
import { controlChoices } from '../shell/host.js';
import { compareChoices } from '../shell/prose.js';
import { hasInt8 } from '../core/weights.js';
import { setOptions } from '../shell/select-options.js';
import { later, listen } from '../base/timing.js';

/** Build a tablist's buttons once; each tab controls the panel with id `panelId`. */
function fillTabs(list, items, attr, panelId) {
  const key = items.map((i) => i.id).join(',');
  if (list.dataset.items === key) return;
  list.textContent = '';
  for (const it of items) {
    const b = document.createElement('button');
    b.type = 'button';
    b.setAttribute('role', 'tab');
    b.id = `tab-${attr}-${it.id}`;
    b.dataset[attr] = it.id;
    b.setAttribute('aria-controls', panelId);
    b.textContent = it.label;
    list.appendChild(b);
  }
  list.dataset.items = key;
}

function selectTab(list, attr, value) {
  let selected = null;
  for (const b of list.querySelectorAll('[role=tab]')) {
    const on = b.dataset[attr] === value;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
    if (on) selected = b;
  }
  return selected;
}

export function syncControls(el, session) {
  const s = session.state;
  const choices = controlChoices(session);
  const ctl = choices.controls;
  const available = new Set(session.availableViews().map((v) => v.id));
  fillTabs(el.views, VIEWS, 'view', el.panel.id);
  for (const b of el.views.querySelectorAll('[role=tab]')) b.hidden = !available.has(b.dataset.view);
  const viewTab = selectTab(el.views, 'view', s.view);
  fillTabs(el.kinds, choices.kinds.map(([id, label]) => ({ id, label })), 'kind', el.panel.id);
  el.kinds.hidden = choices.kinds.length < 2;
  const kindTab = selectTab(el.kinds, 'kind', s.kind);
  el.panel.setAttribute('aria-labelledby', [viewTab, !el.kinds.hidden && kindTab].filter(Boolean).map((b) => b.id).join(' '));

  const kind = kindShown(s);
  const H = choices.heads;
  setOptions(el.layer, choices.layers);
  el.layer.value = choices.layer;
  el.layerPrev.disabled = s.layer <= 0;
  el.layerNext.disabled = s.layer >= choices.layers.length - 1;
  el.layerCtl.hidden = !ctl.layer;

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
  const shown = s.heads || [...Array(H).keys()];
  for (const b of el.heads.children) {
    const h = Number(b.dataset.head);
    const on = ctl.heads === 'multi' ? s.agg === 'head' && shown.includes(h) : (s.agg === 'head' || !ctl.agg) && h === s.head;
    b.setAttribute('aria-pressed', String(on));
    b.classList.toggle('focused', h === s.head);
  }
  el.headsAll.hidden = ctl.heads !== 'multi';
  el.headsKv.hidden = !choices.kvGroup;
  if (choices.kvGroup) {
    el.headsKv.textContent = choices.kvGroup.label;
    el.headsKv.setAttribute('aria-pressed', String(choices.kvGroup.on));
  }
  el.headsCtl.hidden = !ctl.heads;

  const rollOpt = el.agg.querySelector('option[value=rollout]');
  rollOpt.disabled = kind === 'cross';
  rollOpt.hidden = kind === 'cross';
  el.agg.value = s.agg;
  el.aggCtl.hidden = !ctl.agg;

  el.measure.value = s.measure;
  el.measureCtl.hidden = !ctl.measure;

  // Only a model with int8 weights (MiniLM) has a choice: int8 for the first map, then its f32 file.
  el.weightsCtl.hidden = !hasInt8(session.manifest);
  el.weights.value = s.weights;
  // B of a comparison: a second sentence (the box under the text), or this text by other weights or another model.
  const bChoices = compareChoices(session);
  setOptions(el.compareModel, bChoices);
  el.compareModel.hidden = bChoices.length < 2;
  el.compareModel.value = s.compareModel;
  el.compare.hidden = !!s.compareModel && bChoices.length > 1;

  el.hideSpecial.checked = s.hideSpecial;
  el.merge.checked = s.merge;
  el.threshold.value = String(s.threshold);
  el.thresholdOut.textContent = s.threshold.toFixed(2);
  el.threshold.closest('label').hidden = !ctl.threshold;

  // Grouped-query attention: which key/value head the selected query head shares.
  el.gqaNote.hidden = !choices.headNote;
  el.gqaNote.textContent = choices.headNote || '';

  el.queryCtl.hidden = !ctl.query;
  if (ctl.query) {
    setOptions(el.query, choices.queries);
    el.query.value = choices.query;
  }
  el.partCtl.hidden = !ctl.stepPart;
  setOptions(el.stepPart, choices.stepParts);
  el.stepPart.value = choices.stepPart;
  setOptions(el.zoom, choices.zooms);
  el.zoom.value = choices.zoom;
  el.stepCtl.hidden = !ctl.step;
  if (choices.step) {
    el.step.max = String(choices.step.max);
    el.step.value = String(choices.step.value);
    el.stepOut.textContent = choices.step.text;
  }
}

/** Arrow keys move between the tabs of a tablist and select the tab they land on. */
function tabKeys(list) {
  listen('page', list, 'keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    const tabs = [...list.querySelectorAll('[role=tab]')].filter((t) => !t.hidden);
    const i = tabs.indexOf(document.activeElement);
    if (i < 0) return;
    e.preventDefault();
    e.stopPropagation();
    const next = tabs[(i + (e.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
    next.focus();
    next.click();
  });
}

export function bindControls(el, session) {
  listen('page', el.views, 'click', (e) => {
    const b = e.target.closest('[role=tab]');
    if (b) session.patch({ view: b.dataset.view });
  });
  listen('page', el.kinds, 'click', (e) => {
    const b = e.target.closest('[role=tab]');
    if (b) session.patch({ kind: b.dataset.kind, query: 0 });
  });
  tabKeys(el.views);
  tabKeys(el.kinds);
  listen('page', el.layer, 'change', () => session.patch({ layer: Number(el.layer.value) }));
  listen('page', el.layerPrev, 'click', () => session.patch({ layer: Math.max(0, session.state.layer - 1) }));
  listen('page', el.layerNext, 'click', () => session.patch({ layer: session.state.layer + 1 }));
  // A click toggles a head after a short delay, so that a double-click (solo) does not toggle twice.
  let clickTimer = null;
  listen('page', el.heads, 'click', (e) => {
    const b = e.target.closest('.swatch');
    if (!b) return;
    const h = Number(b.dataset.head);
    if (viewFor(session.state.view).controls.heads !== 'multi') {
      session.soloHead(h);
      return;
    }
    clearTimeout(clickTimer);
    clickTimer = later('page:head-toggle', () => session.toggleHead(h), 220);
  });
  listen('page', el.heads, 'dblclick', (e) => {
    const b = e.target.closest('.swatch');
    if (!b) return;
    clearTimeout(clickTimer);
    session.soloHead(Number(b.dataset.head));
  });
  listen('page', el.headsAll, 'click', () => session.allHeads());
  listen('page', el.headsKv, 'click', () => session.toggleKvGroup());
  listen('page', el.agg, 'change', () => session.patch({ agg: el.agg.value }));
  listen('page', el.measure, 'change', () => session.patch({ measure: el.measure.value }));
  listen('page', el.weights, 'change', () => session.patch({ weights: el.weights.value }));
  listen('page', el.compareModel, 'change', () => session.patch({ compareModel: el.compareModel.value }));
  listen('page', el.query, 'change', () => session.patch({ query: Number(el.query.value) }));
  listen('page', el.step, 'input', () => session.patch({ step: Number(el.step.value) }));
  listen('page', el.stepPart, 'change', () => session.patch({ stepPart: el.stepPart.value }));
  listen('page', el.zoom, 'change', () => session.patch({ zoom: el.zoom.value }));
  listen('page', el.hideSpecial, 'change', () => session.patch({ hideSpecial: el.hideSpecial.checked }));
  listen('page', el.merge, 'change', () => session.patch({ merge: el.merge.checked }));
  listen('page', el.threshold, 'input', () => session.patch({ threshold: Number(el.threshold.value) }));
}
