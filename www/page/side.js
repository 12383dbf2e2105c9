// The page's side panel: what the current view says about the map, the hovered or pinned
// token's top weights, and notes on the filters in use.

import { details } from '../shell/prose.js';

export function renderSide(el, session) {
  const c = details(session);
  el.sideTitle.textContent = c.title;
  el.sideHint.hidden = !c.hint;
  el.sideHint.textContent = c.hint || '';
  el.topList.textContent = '';
  for (const it of c.items) {
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
    if (it.extra) {
      // value-weighted measure: the raw norm and the attention weight behind the share
      const x = document.createElement('span');
      x.className = 'raw';
      x.textContent = it.extra;
      li.append(x);
    }
    el.topList.appendChild(li);
  }
  el.notes.textContent = '';
  for (const t of c.notes) {
    const li = document.createElement('li');
    li.textContent = t;
    el.notes.appendChild(li);
  }
}
