// The head overview's ranking: every head of the shown kind in a table sorted by any score
// column (click a column's header, again to reverse; the headers are buttons, so the keyboard
// sorts too), each row with a button that opens that head. Used by the page and the widget
// alike; token-free, all text set with textContent.

import { ranked, SCORES } from '../views/heads.js';
import { later, listen } from '../base/timing.js';

const FIRST_ROWS = 12;
const CHUNK_ROWS = 12;
const fix = (v) => (v === null || v === undefined ? '–' : v.toFixed(3));

/** The sort after a click on column `key`: descending first, then the reverse. */
export function nextSort(current, key) {
  const [k, dir] = String(current || 'score').split('.');
  if (k !== key) return key;
  return dir === 'asc' ? key : `${key}.asc`;
}

/** Is the row of this open button the selected head of state s? */
const isCurrent = (b, s) => Number(b.dataset.layer) === s.layer && Number(b.dataset.head) === s.head;

/** Set a cell's text only when it changes (a text node rewritten costs layout even when equal). */
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

/** Fill one row (its open button, label and scores) with head `h`; `s` is the session's state. */
function fillRow(tr, h, s) {
  const open = tr.cells[0].firstChild;
  if (open.dataset.layer !== String(h.layer) || open.dataset.head !== String(h.head)) {
    open.dataset.layer = String(h.layer);
    open.dataset.head = String(h.head);
    open.textContent = `L${h.layer + 1} H${h.head + 1}`;
    open.setAttribute('aria-label', `Open layer ${h.layer + 1}, head ${h.head + 1} in the head view`);
  }
  tr.classList.toggle('current', isCurrent(open, s));
  setText(tr.cells[1], h.label);
  SCORES.forEach(([k], i) => setText(tr.cells[2 + i], fix(h[k])));
}

/** Fill `box` with the ranking for the session's state (hidden outside the head overview). */
export function renderHeadsTable(box, session) {
  const s = session.state;
  const input = session.input();
  const show = s.view === 'heads' && !!input.heads;
  box.hidden = !show;
  if (!show) {
    box.textContent = '';
    box.dataset.key = '';
    box.dataset.shape = '';
    return;
  }
  if (!box.dataset.bound) {
    box.dataset.bound = '1';
    listen('heads-table', box, 'click', (e) => {
      const b = e.target.closest('button');
      if (!b) return;
      if (b.dataset.sort) session.patch({ sort: nextSort(session.state.sort, b.dataset.sort) });
      else if (b.dataset.layer) {
        const head = Number(b.dataset.head);
        session.patch({ view: 'head', layer: Number(b.dataset.layer), head, heads: [head], agg: 'head', pin: null });
      }
    });
  }
  const key = JSON.stringify([s.kind, s.sort, input.heads.model, input.heads.text, input.heads.heads.length]);
  if (box.dataset.key === key) {
    // Same ranking, maybe another selected head (arrow keys, a click on the grid): move the mark
    // only (rebuilding 270 rows per key press would be work for nothing).
    for (const tr of box.querySelectorAll('tbody tr')) tr.classList.toggle('current', isCurrent(tr.querySelector('button'), s));
    return;
  }
  // A new text with the same columns and as many heads (typing): the rows are refilled in place,
  // only the cells whose text changed touched; rebuilding the table per keystroke cost more
  // layout than the forward of SmolLM2's new token.
  const shape = JSON.stringify([s.kind, s.sort, input.heads.model, input.heads.heads.length]);
  const built = box.querySelectorAll('tbody tr');
  if (box.dataset.shape === shape && built.length === input.heads.heads.length) {
    box.dataset.key = key;
    ranked(input, s).forEach((h, i) => fillRow(built[i], h, s));
    return;
  }
  box.dataset.shape = shape;
  box.dataset.key = key;
  const active = box.getRootNode().activeElement;
  const refocus = active && box.contains(active) && active.dataset.sort;
  const [sortKey, dir] = String(s.sort || 'score').split('.');
  const rows = ranked(input, s);
  box.textContent = '';
  // The caption wraps above the table, in the panel's width; the table (12 columns, wider than the
  // 260 px side panel) scrolls sideways in a box of its own, its head column kept in view. As the
  // table's <caption> it was as wide as the table and was cut off at the panel's edge.
  const cap = document.createElement('p');
  cap.className = 'heads-caption';
  cap.id = 'heads-rank-caption';
  const col = SCORES.find(([k]) => k === sortKey);
  cap.textContent = `Heads ranked by ${col ? col[2] : sortKey} (${dir === 'asc' ? 'lowest' : 'highest'} first). Click a column to sort by it; a head to open it. The table scrolls sideways.`;
  const scroller = document.createElement('div');
  scroller.className = 'heads-scroll';
  scroller.tabIndex = 0; // scrollable by keyboard
  scroller.setAttribute('role', 'region');
  scroller.setAttribute('aria-labelledby', cap.id);
  const table = document.createElement('table');
  table.className = 'heads-table';
  table.setAttribute('aria-labelledby', cap.id);
  const cols = document.createElement('colgroup');
  for (const w of ['6em', '6.5em', ...SCORES.map(() => '4.6em')]) {
    const c = document.createElement('col');
    c.style.width = w;
    cols.appendChild(c);
  }
  table.appendChild(cols);
  const thead = table.createTHead().insertRow();
  const th = (text) => {
    const c = document.createElement('th');
    c.scope = 'col';
    c.textContent = text;
    thead.appendChild(c);
    return c;
  };
  th('head');
  th('label');
  for (const [k, label, title] of SCORES) {
    const c = th('');
    const b = document.createElement('button');
    b.type = 'button';
    b.dataset.sort = k;
    b.title = `Sort by ${title}`;
    b.textContent = `${label}${k === sortKey ? (dir === 'asc' ? ' ▲' : ' ▼') : ''}`;
    c.setAttribute('aria-sort', k === sortKey ? (dir === 'asc' ? 'ascending' : 'descending') : 'none');
    c.appendChild(b);
  }
  const tbody = table.createTBody();
  const addRow = (h) => {
    const tr = tbody.insertRow();
    const open = document.createElement('button');
    open.type = 'button';
    tr.insertCell().appendChild(open);
    tr.insertCell();
    for (const [k] of SCORES) tr.insertCell().dataset.score = k;
    fillRow(tr, h, session.state); // rows added later: the state then
  };
  // The first rows now, the rest in later tasks: laying out hundreds of cells at once held the
  // main thread for 50–100 ms.
  rows.slice(0, FIRST_ROWS).forEach(addRow);
  scroller.appendChild(table);
  box.append(cap, scroller);
  const more = (from) => {
    if (box.dataset.key !== key || from >= rows.length) return;
    rows.slice(from, from + CHUNK_ROWS).forEach(addRow);
    later('heads-table:rows', () => more(from + CHUNK_ROWS));
  };
  later('heads-table:rows', () => more(FIRST_ROWS));
  if (refocus) {
    const b = box.querySelector(`button[data-sort="${refocus}"]`);
    if (b) b.focus();
  }
}
