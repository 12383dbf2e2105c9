// The generation panel of a decoder-only model (SmolLM2), shared by the page and the widget: how
// many tokens to generate and how (greedy, or sampled with temperature / top-k / seed), the
// scrubber over the generated tokens (a range and the tokens as buttons; arrow keys move), the
// top-5 next-token probabilities of the scrubbed step, and the attention-sink sentence (those two
// read-outs in a container of their own where the host has one: the page's side column). The
// panel holds no state: it writes what generationText(session) (prose.js) says and turns its events into
// session calls. Token strings go into the DOM as text only.

import { GEN_MAX, TEMPERATURE_MAX } from '../core/state.js';
import { listen } from '../base/timing.js';
import { generationText } from './prose.js';

const CSS = `
.gen { display: flex; flex-direction: column; gap: 6px; padding: 6px 8px; border: 1px solid var(--av-faint); border-radius: 6px; font-size: 14px; }
.gen-row { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 10px; }
.gen-row label { display: inline-flex; align-items: center; gap: 4px; }
.gen input[type=number] { width: 5.5em; }
.gen-sampling { display: inline-block; }
.gen-sampling[open] { width: 100%; }
.gen-sampling summary { cursor: pointer; color: var(--av-muted); }
.gen-sampling .gen-row { padding-top: 4px; }
.gen-scrub { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 10px; }
.gen-scrub input[type=range] { min-width: 160px; flex: 0 1 260px; }
.gen-tokens { display: flex; flex-wrap: wrap; gap: 3px; }
.gen-tok { font: 13px/1.2 ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; padding: 2px 5px; border: 1px solid var(--av-faint); border-radius: 4px; background: transparent; color: inherit; cursor: pointer; white-space: pre; }
.gen-tok[aria-pressed=true] { border-color: var(--av-accent); background: var(--av-accent); color: #fff; }
.gen-tok.next { font-style: italic; color: var(--av-muted); }
.gen-tok.next[aria-pressed=true] { color: #fff; }
.gen-top { margin: 0; }
.gen-top figcaption { font-size: 13px; font-weight: 600; color: var(--av-muted); }
.gen-top-list { list-style: none; margin: 2px 0 0; padding: 0; display: grid; grid-template-columns: minmax(4em, max-content) 120px 4.5em auto; gap: 2px 8px; align-items: center; font-size: 13px; }
.gen-top-list li { display: contents; }
.gen-top-list .tok { font-family: ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace; white-space: pre; overflow: hidden; text-overflow: ellipsis; max-width: 14em; }
.gen-top-list .gen-bar { height: 10px; border-radius: 2px; background: var(--av-accent); width: calc(var(--w) * 100%); min-width: 1px; }
.gen-top-list .p { font-variant-numeric: tabular-nums; text-align: right; }
.gen-top-list .mark { color: var(--av-accent); font-weight: 600; font-size: 12px; }
.gen-note { margin: 0; font-size: 13px; color: var(--av-muted); }
`;

/** The panel's style, once per document or shadow root. */
function addStyle(container) {
  const root = container.getRootNode();
  const host = root.head || root; // a document's <head>, or the shadow root itself
  if (host.querySelector(':scope > style[data-attnviz-generation]')) return;
  const style = document.createElement('style');
  style.dataset.attnvizGeneration = '';
  style.textContent = CSS;
  host.appendChild(style);
}

/** Create the panel's elements in `container`, its read-outs in `readout`. → the elements by name. */
function build(container, readout) {
  const mk = (tag, props, parent, attrs = {}) => {
    const e = document.createElement(tag);
    Object.assign(e, props);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    parent.appendChild(e);
    return e;
  };
  const el = {};
  container.classList.add('gen');
  const row = mk('div', { className: 'gen-row' }, container);
  const nLabel = mk('label', {}, row);
  nLabel.append('Generate ');
  el.n = mk('input', { type: 'number', min: '0', max: String(GEN_MAX), step: '1', value: '8', className: 'gen-n' }, nLabel, { 'aria-label': 'Tokens to generate' });
  nLabel.append(' tokens');
  el.go = mk('button', { type: 'button', className: 'gen-go', textContent: 'Generate' }, row);
  el.clear = mk('button', { type: 'button', className: 'gen-clear', textContent: 'Prompt only' }, row);
  el.sampling = mk('details', { className: 'gen-sampling' }, row);
  el.samplingSummary = mk('summary', {}, el.sampling);
  const srow = mk('div', { className: 'gen-row' }, el.sampling);
  const lab = (text, parent = srow) => {
    const l = mk('label', {}, parent);
    l.append(text);
    return l;
  };
  el.method = mk('select', { className: 'gen-method' }, lab('choose '), { 'aria-label': 'How the next token is chosen' });
  for (const [value, text] of [['greedy', 'the most likely token (greedy)'], ['sample', 'a sample']]) mk('option', { value, textContent: text }, el.method);
  el.temperature = mk('input', { type: 'number', min: '0.05', max: String(TEMPERATURE_MAX), step: '0.05', value: '0.8', className: 'gen-temperature' }, lab('temperature '));
  el.topK = mk('input', { type: 'number', min: '0', step: '1', value: '40', className: 'gen-top-k' }, lab('top-k '), { title: '0: all tokens' });
  el.seed = mk('input', { type: 'number', min: '0', step: '1', value: '0', className: 'gen-seed' }, lab('seed '));

  el.scrub = mk('div', { className: 'gen-scrub', hidden: true }, container);
  el.step = mk('input', { type: 'range', min: '0', max: '0', value: '0', step: '1', className: 'gen-step' }, lab('Step ', el.scrub), { 'aria-label': 'Generation step' });
  el.stepOut = mk('output', { className: 'gen-step-out' }, el.scrub);
  el.tokens = mk('div', { className: 'gen-tokens' }, el.scrub, { role: 'group', 'aria-label': 'Generated tokens (arrow keys move between steps)' });
  el.stop = mk('p', { className: 'gen-note gen-stop', hidden: true }, container);
  el.clamped = mk('p', { className: 'gen-note gen-clamped', hidden: true }, container, { role: 'status' });
  el.top = mk('figure', { className: 'gen-top', hidden: true }, readout);
  el.topTitle = mk('figcaption', {}, el.top);
  el.topList = mk('ol', { className: 'gen-top-list' }, el.top, { 'aria-live': 'polite' });
  el.sink = mk('p', { className: 'gen-note gen-sink' }, readout);
  return el;
}

const clampNum = (v, lo, hi, dflt) => {
  const x = Number.parseFloat(v);
  return Number.isFinite(x) ? Math.min(hi, Math.max(lo, x)) : dflt;
};

/**
 * Mount the panel into `container` (an element of the page or of a widget's shadow root) for
 * `session`; the top-5 list and the sink sentence go into `readout` (default: the panel).
 * → { sync() } — call sync() after each drawing and status change.
 */
export function mountGenerationPanel(container, session, { readout = container } = {}) {
  addStyle(container);
  const el = build(container, readout);
  const focused = (e) => e.getRootNode().activeElement === e;

  // A number outside what a field takes is changed in the field itself and the change said in
  // words (200 tokens asked used to become 64 without a word).
  const said = [];
  const field = (input, lo, hi, dflt, what) => {
    const typed = Number.parseFloat(input.value);
    const v = clampNum(input.value, lo, hi, dflt);
    if (Number.isFinite(typed) && typed !== v) {
      said.push(`${what} ${typed < lo ? `is at least ${lo}` : `is at most ${hi}`}: ${input.value} became ${v}.`);
      input.value = String(v);
    }
    return v;
  };
  const read = (f) => {
    said.length = 0;
    const out = f();
    if (said.length) {
      el.clamped.hidden = false;
      el.clamped.textContent = said.join(' ');
    }
    return out;
  };
  // The note stays until the reader edits a field again (a 'change' after Enter reads the field
  // once more, already in range).
  for (const input of [el.n, el.temperature, el.topK, el.seed]) {
    listen('generation', input, 'input', () => {
      el.clamped.hidden = true;
    });
  }
  const sampling = () => {
    const sample = el.method.value === 'sample';
    // Greedy decoding reads none of the three (the fields keep their values for a later sample).
    return {
      temperature: sample ? field(el.temperature, 0.05, TEMPERATURE_MAX, 0.8, 'The temperature') : 0,
      topK: sample ? Math.round(field(el.topK, 0, 100000, 0, 'Top-k')) : 0,
      seed: sample ? Math.round(field(el.seed, 0, 0xffffffff, 0, 'The seed')) : 0,
    };
  };
  const count = () => Math.round(field(el.n, 0, GEN_MAX, 8, 'The number of tokens to generate'));
  const generation = () => read(() => ({ gen: count(), ...sampling() }));
  listen('generation', el.go, 'click', () => session.setGeneration(generation()));
  listen('generation', el.n, 'keydown', (e) => {
    if (e.key === 'Enter') session.setGeneration(generation());
  });
  // While generating, a new count applies at once (the spinner's arrows, a typed number).
  listen('generation', el.n, 'change', () => {
    if (session.state.gen > 0) session.setGeneration(generation());
  });
  listen('generation', el.clear, 'click', () => session.setGeneration({ gen: 0 }));
  for (const input of [el.method, el.temperature, el.topK, el.seed]) listen('generation', input, 'change', () => session.setGeneration(read(sampling)));
  listen('generation', el.step, 'input', () => session.scrub(Number(el.step.value)));
  listen('generation', el.tokens, 'click', (e) => {
    const b = e.target.closest('.gen-tok');
    if (b) session.scrub(Number(b.dataset.step));
  });
  listen('generation', el.tokens, 'keydown', (e) => {
    const G = session.numGenerated();
    const at = session.genStep();
    const to = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: G }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    e.stopPropagation(); // the page's arrow keys change heads
    session.scrub(Math.min(G, Math.max(0, to)));
    sync();
    const b = el.tokens.querySelector(`[data-step="${session.genStep()}"]`);
    if (b) b.focus();
  });

  function syncTokens(g) {
    const key = JSON.stringify(g.tokens);
    if (el.tokens.dataset.key !== key) {
      el.tokens.textContent = '';
      g.tokens.forEach((t, i) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'gen-tok';
        b.dataset.step = String(i);
        b.textContent = t;
        b.title = `step ${i + 1}`;
        el.tokens.appendChild(b);
      });
      const next = document.createElement('button');
      next.type = 'button';
      next.className = 'gen-tok next';
      next.dataset.step = String(g.tokens.length);
      next.textContent = 'next?';
      next.title = 'after the last token';
      el.tokens.appendChild(next);
      el.tokens.dataset.key = key;
    }
    for (const b of el.tokens.children) {
      const on = Number(b.dataset.step) === g.step;
      b.setAttribute('aria-pressed', String(on));
      b.tabIndex = on ? 0 : -1; // one tab stop; arrows move between the steps
    }
  }

  function syncTop(g) {
    el.top.hidden = !g.top.length;
    el.topTitle.textContent = g.topTitle;
    el.topList.textContent = '';
    for (const t of g.top) {
      const li = document.createElement('li');
      const tok = document.createElement('span');
      tok.className = 'tok';
      tok.textContent = t.label;
      const bar = document.createElement('span');
      bar.className = 'gen-bar';
      bar.style.setProperty('--w', String(Math.min(1, Math.max(0, t.p))));
      const p = document.createElement('span');
      p.className = 'p';
      p.textContent = t.p.toFixed(3);
      const mark = document.createElement('span');
      mark.className = 'mark';
      mark.textContent = t.chosen ? '← chosen' : '';
      li.append(tok, bar, p, mark);
      el.topList.appendChild(li);
    }
  }

  function sync() {
    const g = generationText(session);
    container.hidden = readout.hidden = !g;
    if (!g) return;
    const s = session.state;
    if (s.gen > 0 && !focused(el.n)) el.n.value = String(s.gen);
    if (!focused(el.method)) el.method.value = s.temperature > 0 ? 'sample' : 'greedy';
    if (s.temperature > 0 && !focused(el.temperature)) el.temperature.value = String(s.temperature);
    if (!focused(el.topK) && (s.temperature > 0 || s.topK)) el.topK.value = String(s.topK);
    if (!focused(el.seed) && (s.temperature > 0 || s.seed)) el.seed.value = String(s.seed);
    el.temperature.disabled = el.topK.disabled = el.seed.disabled = el.method.value !== 'sample';
    el.samplingSummary.textContent = `Sampling: ${g.sampling}`;
    el.clear.disabled = !(s.gen > 0);
    el.scrub.hidden = !g.steps;
    if (g.steps) {
      el.step.max = String(g.steps);
      el.step.value = String(g.step);
      el.step.setAttribute('aria-valuetext', g.stepText);
      el.stepOut.textContent = g.stepText;
      syncTokens(g);
    }
    el.stop.hidden = !g.stopText;
    el.stop.textContent = g.stopText;
    syncTop(g);
    el.sink.textContent = g.sink;
  }

  container.hidden = readout.hidden = true;
  return { sync, elements: el };
}
