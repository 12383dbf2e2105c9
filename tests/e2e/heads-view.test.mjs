// Issue 12, the head overview: a layers × heads grid coloured by each head's label and shaded by
// its score (src/heads.rs via the worker's `heads` request), a legend, hover read-outs equal to
// `attnviz heads`, click opens the head, a ranking table sorted by any score column (mouse and
// keyboard), the sort in the permalink, the widget's view="heads", PNG and SVG export.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport, downloadBytes } from './harness.mjs';
import { canvasDigest, cliJson, waitDrawn } from './cli-helpers.mjs';
import { watchMainThread } from './main-thread.mjs';
import { decodePng } from './views-helpers.mjs';

const TEXT = 'The cat sat on the mat, and the dog sat on the log.';
const VIEW = 'canvas#view';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const cli = cliJson('heads', '--model', 'models/minilm', '--text', TEXT);
const cliHead = (l, h) => cli.heads.find((x) => x.kind === 'encoder_self' && x.layer === l && x.head === h);


async function openHeads(extra = {}) {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: 'heads', ...extra }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  await setViewport(app.page, { width: 1280, height: 1000 });
  await waitDrawn(app.page, () => window.attnvizDebug.view === 'heads' && window.attnvizDebug.headsGrid() && window.attnvizDebug.headsGrid().scores);
  return app;
}

const cellCentre = async (page, l, h) => {
  const g = await page.evaluate(() => window.attnvizDebug.headsGrid());
  const r = await page.locator(VIEW).boundingBox();
  return { x: r.x + g.left + (h + 0.5) * g.cell, y: r.y + g.top + (l + 0.5) * g.cell };
};

test('page: the grid shows every head coloured by its label with a legend; hover reads out the CLI scores; click opens the head', async () => {
  const app = await openHeads();
  const { page } = app;
  try {
    const g = await page.evaluate(() => window.attnvizDebug.headsGrid());
    assert.equal(g.layers, 6);
    assert.equal(g.heads, 12);
    // The scores the page drew from are the CLI's.
    const got = g.scores.heads.filter((x) => x.kind === 'encoder_self');
    assert.equal(got.length, 72);
    for (const x of got) {
      const c = cliHead(x.layer, x.head);
      assert.equal(x.label, c.label, `label of L${x.layer + 1} H${x.head + 1}`);
      assert.ok(Math.abs(x.score - c.score) < 1e-4);
    }
    // Each cell's colour is its label's colour, mixed with the background by 0.25 + 0.75·score.
    const COLORS = { sink: '#d55e00', previous: '#0072b2', next: '#56b4e9', self: '#009e73', delimiter: '#cc79a7', induction: '#e69f00', broad: '#7f7f7f', mixed: '#b8b8b8' };
    const px = await page.evaluate(([gg]) => {
      const c = document.querySelector('canvas#view');
      const k = c.width / c.clientWidth;
      const ctx = c.getContext('2d');
      const out = [];
      for (let l = 0; l < gg.layers; l++) for (let h = 0; h < gg.heads; h++) {
        const d = ctx.getImageData(Math.round((gg.left + (h + 0.5) * gg.cell) * k), Math.round((gg.top + (l + 0.5) * gg.cell) * k), 1, 1).data;
        out.push([d[0], d[1], d[2]]);
      }
      const bg = ctx.getImageData(1, 1, 1, 1).data;
      return { out, bg: [bg[0], bg[1], bg[2]] };
    }, [g]);
    const labelsSeen = new Set();
    for (const x of got) {
      const c = COLORS[x.label];
      const t = 0.25 + 0.75 * Math.min(1, x.score);
      const want = [0, 1, 2].map((i) => px.bg[i] + (Number.parseInt(c.slice(1 + 2 * i, 3 + 2 * i), 16) - px.bg[i]) * t);
      const have = px.out[x.layer * 12 + x.head];
      assert.ok(have.every((v, i) => Math.abs(v - want[i]) <= 3), `L${x.layer + 1} H${x.head + 1} (${x.label} ${x.score.toFixed(2)}): ${have} vs ${want.map(Math.round)}`);
      labelsSeen.add(x.label);
    }
    assert.ok(labelsSeen.size >= 2, 'several labels on this text');
    const aria = await page.getAttribute(VIEW, 'aria-label');
    assert.match(aria, /6 layers × 12 heads/);
    // Hover: the side panel reads the head's scores, equal to the CLI's (3 decimals).
    for (const [l, h] of [[0, 2], [3, 5], [5, 11]]) {
      const p = await cellCentre(page, l, h);
      await page.mouse.move(p.x, p.y);
      await page.waitForFunction((t) => document.getElementById('side-hint').textContent.startsWith(t), `Layer ${l + 1}, head ${h + 1}:`);
      const hint = await page.textContent('#side-hint');
      const c = cliHead(l, h);
      assert.ok(hint.includes(`${c.label} (${c.score.toFixed(3)})`), `${hint} vs ${c.label} ${c.score}`);
      for (const k of ['entropy', 'broad', 'first', 'special', 'previous', 'next', 'self', 'delimiter']) {
        assert.ok(hint.includes(`${k} ${c[k].toFixed(3)}`), `${k}: ${hint} vs ${c[k]}`);
      }
    }
    // Click: that head opens in the head view.
    const p = await cellCentre(page, 3, 5);
    await page.mouse.click(p.x, p.y);
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    const s = await page.evaluate(() => window.attnvizDebug.state);
    assert.deepEqual([s.layer, s.head, s.heads], [3, 5, [5]]);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: the ranking sorts by any column (click and keyboard), the sort is in the permalink, a row opens its head', async () => {
  const app = await openHeads();
  const { page } = app;
  try {
    await page.waitForSelector('#heads-rank table');
    const column = (k) => page.$$eval(`#heads-rank td[data-score="${k}"]`, (tds) => tds.map((t) => t.textContent));
    const firstHead = () => page.textContent('#heads-rank tbody tr:first-child button');
    // Default: by score, highest first; equal to the CLI's ranking.
    const byScore = cli.heads.filter((x) => x.kind === 'encoder_self').sort((a, b) => b.score - a.score || a.layer - b.layer || a.head - b.head);
    assert.equal(await firstHead(), `L${byScore[0].layer + 1} H${byScore[0].head + 1}`);
    assert.equal(await page.getAttribute('#heads-rank th:has(button[data-sort=score])', 'aria-sort'), 'descending');
    // Click "prev": sorted by the previous-token score, highest first.
    await page.click('#heads-rank button[data-sort=previous]');
    await page.waitForFunction(() => window.attnvizDebug.state.sort === 'previous');
    await page.waitForFunction(() => document.querySelector('#heads-rank th:has(button[data-sort=previous])')?.getAttribute('aria-sort') === 'descending');
    const prev = (await column('previous')).map(Number);
    assert.deepEqual(prev, prev.slice().sort((a, b) => b - a), 'descending by previous');
    const bestPrev = cli.heads.filter((x) => x.kind === 'encoder_self').sort((a, b) => b.previous - a.previous)[0];
    assert.equal(await firstHead(), `L${bestPrev.layer + 1} H${bestPrev.head + 1}`);
    assert.ok(Math.abs(prev[0] - bestPrev.previous) < 6e-4);
    // Keyboard: focus stays on the header button; Enter reverses the order.
    await page.focus('#heads-rank button[data-sort=previous]');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => window.attnvizDebug.state.sort === 'previous.asc');
    await page.waitForFunction(() => document.activeElement && document.activeElement.dataset.sort === 'previous');
    const asc = (await column('previous')).map(Number);
    assert.deepEqual(asc, asc.slice().sort((a, b) => a - b), 'ascending after Enter');
    // Tab to the next header and sort by it with Space.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.sort), 'next');
    await page.keyboard.press(' ');
    await page.waitForFunction(() => window.attnvizDebug.state.sort === 'next');
    // The permalink keeps the sort; reopening it shows the same order.
    await page.waitForFunction(() => location.hash.includes('so=next'));
    const app2 = await openApp(browser, page.url());
    try {
      await app2.page.waitForSelector('#heads-rank table');
      assert.equal(await app2.page.getAttribute('#heads-rank th:has(button[data-sort=next])', 'aria-sort'), 'descending');
    } finally {
      await app2.close();
    }
    // A row's button opens its head.
    const label = await firstHead();
    await page.click('#heads-rank tbody tr:first-child button');
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    const s = await page.evaluate(() => window.attnvizDebug.state);
    assert.equal(`L${s.layer + 1} H${s.head + 1}`, label);
    assert.equal(await page.isVisible('#heads-rank'), false, 'the ranking belongs to the head overview');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: typing in the head overview refills the ranking in place with the new text’s scores, in order', async () => {
  const app = await openHeads();
  const { page } = app;
  try {
    await page.waitForFunction(() => document.querySelectorAll('#heads-rank tbody tr').length === 72);
    // Mark the rows on screen: after typing, the same elements hold the new text's ranking.
    await page.evaluate(() => {
      window.rankRows = new Set(document.querySelectorAll('#heads-rank tbody tr'));
    });
    await page.focus('#text');
    await page.keyboard.press('End');
    await page.keyboard.type(' It ran.', { delay: 80 });
    const typed = await page.inputValue('#text');
    await waitDrawn(page, (t) => window.attnvizDebug.text === t && window.attnvizDebug.headsGrid()?.scores?.text === t, typed);
    await page.waitForFunction(() => {
      const want = window.attnvizDebug.headsGrid().scores.heads.filter((h) => h.kind === 'encoder_self').sort((a, b) => b.score - a.score || a.layer - b.layer || a.head - b.head);
      const rows = [...document.querySelectorAll('#heads-rank tbody tr')];
      return rows.length === want.length && rows.every((tr, i) => tr.querySelector('button').textContent === `L${want[i].layer + 1} H${want[i].head + 1}` && tr.querySelector('td[data-score="score"]').textContent === want[i].score.toFixed(3));
    });
    const kept = await page.evaluate(() => [...document.querySelectorAll('#heads-rank tbody tr')].filter((tr) => window.rankRows.has(tr)).length);
    assert.equal(kept, 72, 'every row was refilled, none rebuilt');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: switching to the head overview keeps the main thread within budget; PNG and SVG exports hold the grid and legend', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.view === 'head');
    const watch = await watchMainThread(page);
    await page.click('[role=tab][data-view=heads]');
    await waitDrawn(page, () => window.attnvizDebug.view === 'heads' && window.attnvizDebug.headsGrid() && window.attnvizDebug.headsGrid().scores);
    await watch.take('head overview');
    await watch.check();
    const [png] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
    const pngBytes = (await downloadBytes(png));
    assert.equal(pngBytes.subarray(1, 4).toString(), 'PNG');
    const img = await decodePng(page, pngBytes);
    assert.ok(img.width > 100 && img.height > 100 && img.inked > 1000, `the PNG decodes to a drawing: ${JSON.stringify(img)}`);
    assert.match(png.suggestedFilename(), /-heads-/);
    const [svg] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
    const text = (await downloadBytes(svg)).toString('utf8');
    assert.match(text, /Head overview/);
    assert.match(text, /previous: previous token/);
    // 72 head cells + 8 legend swatches at least
    assert.ok((text.match(/<rect/g) || []).length >= 80, 'the SVG holds the cells');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page: keys on the head overview — arrows move the outlined head (grid and ranking row follow), 7 and 6 (MiniLM has no cross-attention tab) switch to the qk view and the overview', async () => {
  const app = await openHeads({ l: '0', h: '0' });
  const { page } = app;
  try {
    await page.waitForFunction(() => document.querySelectorAll('#heads-rank tbody tr').length === 72);
    const current = () => page.textContent('#heads-rank tr.current button');
    assert.equal(await current(), 'L1 H1');
    const before = await canvasDigest(page, VIEW);
    await page.focus(VIEW);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowRight');
    await waitDrawn(page, () => window.attnvizDebug.state.layer === 1 && window.attnvizDebug.state.head === 1);
    await page.waitForFunction(() => document.querySelector('#heads-rank tr.current button')?.textContent === 'L2 H2');
    assert.notEqual(await canvasDigest(page, VIEW), before, 'the outline moved on the grid');
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /Head overview/);
    await page.keyboard.press('7');
    await waitDrawn(page, () => window.attnvizDebug.view === 'qk');
    assert.match(await page.getAttribute(VIEW, 'aria-label'), /Query\/key space of layer 2, head 2/);
    await page.keyboard.press('6');
    await waitDrawn(page, () => window.attnvizDebug.view === 'heads');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, 1400 px, SmolLM2: the ranking fits the side panel — its caption whole and wrapped, the table scrolling sideways in a box of its own with the head column kept', async () => {
  const hash = new URLSearchParams({ m: 'smollm2-135m', t: 'The capital of France is Paris.', v: 'heads' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1400, height: 1000 });
    await waitDrawn(page, () => window.attnvizDebug.view === 'heads' && window.attnvizDebug.headsGrid() && window.attnvizDebug.headsGrid().scores);
    await page.waitForFunction(() => document.querySelectorAll('#heads-rank tbody tr').length === 270, null, { timeout: 60_000 });
    const m = await page.evaluate(() => {
      const box = (e) => {
        const r = e.getBoundingClientRect();
        return { left: r.left, right: r.right, sw: e.scrollWidth, cw: e.clientWidth, ox: getComputedStyle(e).overflowX };
      };
      const cap = document.querySelector('#heads-rank .heads-caption');
      return { side: box(document.getElementById('side')), cap: { ...box(cap), text: cap.textContent }, scroll: box(document.querySelector('#heads-rank .heads-scroll')), view: innerWidth };
    });
    assert.ok(m.side.right <= m.view, `the side panel ends inside the window (${m.side.right} > ${m.view})`);
    assert.ok(m.cap.sw <= m.cap.cw && m.cap.right <= m.side.right + 0.5, `the caption fits: ${JSON.stringify(m.cap)} in ${JSON.stringify(m.side)}`);
    assert.match(m.cap.text, /Heads ranked by the score behind the label \(highest first\)\. .*scrolls sideways\.$/);
    assert.ok(m.scroll.right <= m.side.right + 0.5, 'the table box ends inside the panel');
    // What the user sees: the table fits its box, or scrolling it sideways (a wheel or trackpad
    // over it) moves it and brings the columns hidden at its right edge into view.
    const view = () => page.evaluate(() => {
      const e = document.querySelector('#heads-rank .heads-scroll');
      const sc = e.getBoundingClientRect();
      const last = document.querySelector('#heads-rank th:last-child').getBoundingClientRect();
      const head = document.querySelector('#heads-rank tbody tr td:first-child').getBoundingClientRect();
      return { scrollLeft: e.scrollLeft, max: e.scrollWidth - e.clientWidth, sc: [sc.left, sc.right], last: [last.left, last.right], head: [head.left, head.right] };
    });
    const start = await view();
    if (m.scroll.sw <= m.scroll.cw) {
      assert.ok(start.last[1] <= start.sc[1] + 0.5, `the table fits, so its last column is in view: ${JSON.stringify(start)}`);
    } else {
      assert.equal(start.scrollLeft, 0);
      assert.ok(start.last[1] > start.sc[1] + 0.5, `the table is wider than its box, so its last column (induction) starts out of view: ${JSON.stringify(start)}`);
      // (the reader scrolls the page to the table first when the side panel runs past the window)
      await page.locator('#heads-rank .heads-scroll').scrollIntoViewIfNeeded();
      const box = await page.locator('#heads-rank .heads-scroll').boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + 40);
      for (let i = 0; i < 40 && (await view()).scrollLeft < start.max - 1; i++) {
        await page.mouse.wheel(200, 0);
        await page.waitForTimeout(50);
      }
    }
    // Scrolled to its end, the last column (induction) is whole in view and the head column stays.
    const end = await view();
    assert.ok(end.scrollLeft >= start.max - 1, `the wheel scrolled the table to its end: ${JSON.stringify({ start, end })}`);
    assert.ok(end.last[0] >= end.sc[0] - 0.5 && end.last[1] <= end.sc[1] + 0.5, `the induction column in view: ${JSON.stringify(end)}`);
    assert.ok(Math.abs(end.head[0] - end.sc[0]) < 1.5, `the head column stays at the left edge: ${JSON.stringify(end)}`);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: view="heads" draws the grid and the ranking; clicking a cell opens the head', async () => {
  const w = await openWidget(browser, server.url, { model: 'minilm', text: TEXT, view: 'heads' });
  const { page } = w;
  try {
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: 120_000 });
    await page.waitForFunction(() => !!document.getElementById('w').shadowRoot.querySelector('.heads-rank table'), null, { timeout: 60_000 });
    // every head is ranked (the rows after the first few arrive in later tasks)
    await page.waitForFunction(() => document.getElementById('w').shadowRoot.querySelectorAll('.heads-rank tbody tr').length === 72);
    const label = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
    assert.match(label, /Head overview/);
    const before = await canvasDigest(page, '#w >> canvas');
    assert.ok(before);
    // Click the cell of layer 2, head 4 (its geometry: the canvas's cells start at x 40).
    const box = await page.evaluate(() => {
      const c = document.getElementById('w').shadowRoot.querySelector('canvas');
      const r = c.getBoundingClientRect();
      return { x: r.left, y: r.top };
    });
    const geom = await page.evaluate(() => document.getElementById('w').shell.geom());
    await page.mouse.click(box.x + geom.left + 3.5 * geom.cell, box.y + geom.top + 1.5 * geom.cell);
    await page.waitForFunction(() => document.getElementById('w').viewState.view === 'head');
    const s = await page.evaluate(() => document.getElementById('w').viewState);
    assert.deepEqual([s.layer, s.head], [1, 3]);
  } finally {
    await w.close();
  }
});
