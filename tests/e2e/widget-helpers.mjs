// What the widget tests read off an <attention-viz id="w">: its state and footer, its drawings,
// and its read-out line under the pointer on a heatmap cell.
import assert from 'node:assert/strict';

export const widgetState = (page) => page.evaluate(() => {
  const w = document.getElementById('w');
  return { state: w.dataset.state, draws: Number(w.dataset.drawCount || 0), foot: w.shadowRoot.querySelector('.foot').textContent, msg: w.shadowRoot.querySelector('.msg').textContent };
});

/** page.waitForFunction(fn, arg) on the widget; on a timeout the error says the widget's state,
 *  message, text and session error (a CI log is all there is to go on). */
export async function widgetWait(page, fn, arg, timeout = 60_000) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 100 });
  } catch (e) {
    const more = await page.evaluate(() => {
      const w = document.getElementById('w');
      return { text: w.viewState.text, error: w.session.error, phase: w.session.phase, pending: w.session.pending };
    }).catch((err) => ({ unreadable: err.message }));
    throw new Error(`waited ${timeout} ms for ${fn} (${JSON.stringify(arg)}): ${JSON.stringify({ ...(await widgetState(page)), ...more })}`, { cause: e });
  }
}

/** Wait until the widget has drawn more than `since` times (its first drawing: since = 0) and has
 *  nothing more on its way (MiniLM's exact weights follow its int8 first map: issue 26). */
export async function drawnAfter(page, since = 0, timeout = 120_000) {
  await widgetWait(page, (n) => {
    const w = document.getElementById('w');
    return w && (w.dataset.state === 'error' || (w.dataset.state === 'ready' && Number(w.dataset.drawCount) > n && !w.session.pending && !w.shell.busy));
  }, since, timeout);
  const s = await widgetState(page);
  assert.equal(s.state, 'ready', s.msg);
  return s.draws;
}

/** The widget's <select> labelled `label` (Attention, Layer, Head, Query, …): its value and options. */
export const widgetMenu = (page, label) => page.evaluate((name) => {
  const l = [...document.getElementById('w').shadowRoot.querySelectorAll('.bar label')].find((x) => x.firstChild?.textContent.trim() === name);
  const select = l?.querySelector('select');
  return select ? { value: select.value, options: [...select.options].map((o) => o.textContent), hidden: l.hidden } : null;
}, label);

export const readout = (page) => page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('.readout').textContent);

/** A number as the views print it (fmt: U+2212 minus, 1.2e−4 below 0.001). */
export const num = (s) => Number(s.replace(/−/g, '-'));

/**
 * Move the mouse over heatmap cell (row i, column j) of the widget (the page scrolled to it) and
 * return the read-out once it names that cell: { text, value }.
 */
export async function hoverCell(page, i, j) {
  const at = await page.evaluate(([row, col]) => {
    const w = document.getElementById('w');
    const g = w.shell.geom();
    if (!g || !g.cell) return null;
    const c = w.shadowRoot.querySelector('canvas');
    const y0 = c.getBoundingClientRect().top + window.scrollY + g.top + (row + 0.5) * g.cell;
    window.scrollTo(0, Math.max(0, y0 - innerHeight / 2));
    const r = c.getBoundingClientRect();
    return { x: r.left + g.left + (col + 0.5) * g.cell, y: r.top + g.top + (row + 0.5) * g.cell };
  }, [i, j]);
  assert.ok(at, 'the widget shows a heatmap');
  await page.mouse.move(at.x - 3, at.y - 3);
  await page.mouse.move(at.x, at.y);
  const cell = `(${i + 1}) → key `;
  await page.waitForFunction(([c, k]) => {
    const t = document.getElementById('w').shadowRoot.querySelector('.readout').textContent;
    return t.includes(c) && t.includes(`” (${k}): `);
  }, [cell, j + 1], { timeout: 10_000 });
  const text = await readout(page);
  const m = /: ([−\d.e]+)$/.exec(text);
  assert.ok(m, `a weight in the read-out: ${text}`);
  return { text, value: num(m[1]) };
}
