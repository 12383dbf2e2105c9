// The "hide lines below" slider (Filters) as a reader works it: dragged with the mouse and moved
// with the arrow keys, it must leave out exactly the lines whose weight is under it — counted as
// the lines the head view strokes and checked against the CLI's weights of that head — show
// fewer line pixels, write th= into the permalink, and at 0 draw the very same picture again.
// The cross-attention view draws its lines under the same threshold, so it shows the slider too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser } from './harness.mjs';
import { cliJson, cliBlock, cliAt, canvasDigest } from './cli-helpers.mjs';
import { textFrame, textLogFromStart } from './views-helpers.mjs';

const TEXT = 'The animal did not cross the street because it was too tired.';
const LAYER = 2;
const HEAD = 3;
const VIEW = 'canvas#view';
const LEVELS = 24; // the head view leaves out lines under 1/24 of its largest drawn weight (head.js)

const cli = cliJson('attend', '--model', 'models/minilm', '--text', TEXT);
const block = cliBlock(cli.attentions, 'encoder_self', LAYER);
const weights = [];
for (let i = 0; i < block.query_len; i++) for (let j = 0; j < block.key_len; j++) weights.push(cliAt(block, HEAD, i, j));

/**
 * How many lines the head view draws for this head at threshold t, from the CLI's weights: those
 * at or above t and at or above 1/24 of the largest of them. A range [lo, hi]: weights within
 * 1e-4 of the cut may fall either side (the page computes in wasm, the CLI natively).
 */
function linesAt(t) {
  const scale = Math.max(...weights.filter((w) => w >= t));
  const cut = Math.max(t, scale / LEVELS);
  return { lo: weights.filter((w) => w >= cut + 1e-4).length, hi: weights.filter((w) => w >= cut - 1e-4).length };
}

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

async function openHead() {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, l: String(LAYER), h: String(HEAD), hs: String(HEAD) }).toString();
  return openApp(browser, `${server.url}#${hash}`, { fresh: true, onContext: textLogFromStart, contextOptions: { viewport: { width: 1280, height: 1000 } } });
}

/** Wait until the page has drawn threshold `t` (as the read-out beside the slider says it) and is
 *  idle; else fail saying what it shows. */
async function drawnAt(page, t, how = '') {
  try {
    await page.waitForFunction(
      (want) => {
        const d = window.attnvizDebug;
        return d.state && Math.abs(d.state.threshold - want) < 1e-9 && !d.computing && !d.drawing
          && Math.abs(Number(document.getElementById('threshold-out').textContent) - want) < 1e-9;
      },
      t,
      { timeout: 20_000, polling: 50 },
    );
  } catch {
    const now = await page.evaluate(() => ({ threshold: window.attnvizDebug.state?.threshold, shown: document.getElementById('threshold-out').textContent, slider: document.getElementById('threshold').value }));
    assert.fail(`${how}: the page never drew threshold ${t}; it shows ${JSON.stringify(now)}`);
  }
  await page.waitForFunction(() => {
    const f = window.__textLog.get(document.querySelector('canvas#view'));
    return f && performance.now() - f.at > 200;
  }, null, { timeout: 10_000, polling: 50 });
}

/** Pixels between the two token columns that are not the background: the lines' ink. */
function lineInk(page) {
  return page.evaluate(() => {
    const c = document.querySelector('canvas#view');
    const dpr = c.width / c.getBoundingClientRect().width;
    const q = window.attnvizDebug.tokenPoint('q', 0);
    const k = window.attnvizDebug.tokenPoint('k', 0);
    const x0 = Math.round((q.x + 16) * dpr);
    const x1 = Math.round((k.x - 16) * dpr);
    const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    const bg = [data[0], data[1], data[2]];
    let ink = 0;
    for (let y = 0; y < height; y++) {
      for (let x = x0; x < x1; x++) {
        const i = (y * width + x) * 4;
        if (Math.abs(data[i] - bg[0]) + Math.abs(data[i + 1] - bg[1]) + Math.abs(data[i + 2] - bg[2]) > 24) ink++;
      }
    }
    return ink;
  });
}

/** The reader's view at threshold t: lines stroked, their ink, the read-out and the permalink. */
async function seenAt(page, t, how) {
  await drawnAt(page, t, how);
  const f = await textFrame(page, VIEW);
  const want = linesAt(t);
  assert.ok(f.strokes >= want.lo && f.strokes <= want.hi, `${how}: ${f.strokes} lines drawn at threshold ${t}, the CLI's weights give ${want.lo === want.hi ? want.lo : `${want.lo}–${want.hi}`}`);
  const hash = new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));
  assert.equal(hash.get('th'), t ? String(t) : null, `${how}: the permalink says th=${hash.get('th')}`);
  const notes = await page.$$eval('#notes li', (li) => li.map((x) => x.textContent));
  assert.equal(notes.some((n) => n.includes(`Lines with weight below ${t.toFixed(2)} are hidden`)), t > 0, `${how}: side notes ${JSON.stringify(notes)}`);
  return { strokes: f.strokes, ink: await lineInk(page), digest: await canvasDigest(page, VIEW) };
}

test('head view: dragging the threshold slider leaves out the lines under it (CLI count), the permalink follows; back at 0 the drawing is the same', async () => {
  const app = await openHead();
  const { page } = app;
  try {
    const at0 = await seenAt(page, 0, 'at first');
    assert.ok(at0.strokes > 40, `${at0.strokes} lines at threshold 0`);
    await page.click('#filters summary');
    await page.locator('#threshold').scrollIntoViewIfNeeded();
    const box = await page.locator('#threshold').boundingBox();
    const thumb = Math.min(16, box.height);
    const max = Number(await page.getAttribute('#threshold', 'max'));
    const xOf = (v) => box.x + thumb / 2 + (v / max) * (box.width - thumb);
    const y = box.y + box.height / 2;
    // Drag from 0 towards 0.15; whatever value the thumb lands on, the page must draw that one.
    await page.mouse.move(xOf(0), y);
    await page.mouse.down();
    for (let k = 1; k <= 10; k++) await page.mouse.move(xOf(0) + ((xOf(0.15) - xOf(0)) * k) / 10, y);
    await page.mouse.up();
    const t1 = Number(await page.inputValue('#threshold'));
    assert.ok(t1 >= 0.1 && t1 <= 0.2, `the thumb landed on ${t1}`);
    const s1 = await seenAt(page, t1, `dragged to ${t1}`);
    assert.ok(s1.strokes < at0.strokes, `${s1.strokes} lines at ${t1}, ${at0.strokes} at 0`);
    assert.ok(s1.ink < at0.ink * 0.9, `line ink ${s1.ink} at ${t1}, ${at0.ink} at 0`);
    // Further, to 0.4: fewer still.
    await page.mouse.move(xOf(t1), y);
    await page.mouse.down();
    for (let k = 1; k <= 10; k++) await page.mouse.move(xOf(t1) + ((xOf(0.4) - xOf(t1)) * k) / 10, y);
    await page.mouse.up();
    const t2 = Number(await page.inputValue('#threshold'));
    assert.ok(t2 > t1, `the thumb landed on ${t2}`);
    const s2 = await seenAt(page, t2, `dragged to ${t2}`);
    assert.ok(s2.strokes < s1.strokes && s2.ink < s1.ink, `${s2.strokes} lines (${s2.ink} px) at ${t2}, ${s1.strokes} (${s1.ink} px) at ${t1}`);
    // Dragged back past the left end: 0, and the drawing of 0 again.
    await page.mouse.move(xOf(t2), y);
    await page.mouse.down();
    for (let k = 1; k <= 10; k++) await page.mouse.move(xOf(t2) + ((box.x - 20 - xOf(t2)) * k) / 10, y);
    await page.mouse.up();
    const back = await seenAt(page, 0, 'dragged back to 0');
    assert.equal(back.strokes, at0.strokes);
    assert.equal(back.digest, at0.digest, 'back at 0 the head view is drawn as before');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('head view: arrow keys on the threshold slider move it by 0.01 and each step leaves out the lines under it; Home restores all', async () => {
  const app = await openHead();
  const { page } = app;
  try {
    const at0 = await seenAt(page, 0, 'at first');
    await page.click('#filters summary');
    await page.focus('#threshold');
    let last = at0;
    for (let k = 1; k <= 12; k++) {
      await page.keyboard.press('ArrowRight');
      const t = k / 100;
      const s = await seenAt(page, t, `ArrowRight ×${k}`);
      assert.ok(s.strokes <= last.strokes, `${s.strokes} lines at ${t}, ${last.strokes} before`);
      last = s;
    }
    assert.ok(last.strokes < at0.strokes && last.ink < at0.ink, `${last.strokes} lines (${last.ink} px) at 0.12, ${at0.strokes} (${at0.ink} px) at 0`);
    await page.keyboard.press('ArrowLeft');
    await seenAt(page, 0.11, 'ArrowLeft');
    await page.keyboard.press('Home');
    const back = await seenAt(page, 0, 'Home');
    assert.equal(back.digest, at0.digest, 'back at 0 the head view is drawn as before');
    // The arrows moved the slider, not the head (the page's own arrow keys are for heads).
    assert.equal(await page.evaluate(() => window.attnvizDebug.state.head), HEAD);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('translator: the cross view, which hides its lines under the threshold too, shows the slider; moving it leaves out the source lines under it', async () => {
  const text = 'The old man gave the little girl a red apple.';
  const cross = cliBlock(cliJson('attend', '--model', 'models/en-pt', '--text', text).attentions, 'cross', 1);
  const step = 2;
  const row = Array.from({ length: cross.key_len }, (_, j) => {
    let s = 0;
    for (let h = 0; h < cross.heads; h++) s += cliAt(cross, h, step, j);
    return s / cross.heads;
  });
  // The cross view draws a line to every source token of weight ≥ max(0.01, threshold).
  const linesFor = (t) => ({ lo: row.filter((w) => w >= Math.max(0.01, t) + 1e-4).length, hi: row.filter((w) => w >= Math.max(0.01, t) - 1e-4).length });
  // A threshold set in the head view, then the cross view opened from its tab.
  const hash = new URLSearchParams({ m: 'en-pt-tiny', t: text, l: '1', a: 'mean', s: String(step), th: '0.1' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { fresh: true, onContext: textLogFromStart, contextOptions: { viewport: { width: 1280, height: 1000 } } });
  const { page } = app;
  try {
    await page.click('#views [data-view="cross"]');
    await page.waitForFunction(() => window.attnvizDebug.view === 'cross', null, { timeout: 30_000 });
    await page.click('#filters summary');
    assert.equal(await page.isVisible('#threshold'), true, 'the cross view hides lines under the threshold: its slider must be shown');
    const check = async (t, how) => {
      await drawnAt(page, t, how);
      const f = await textFrame(page, VIEW);
      const want = linesFor(t);
      assert.ok(f.strokes >= want.lo && f.strokes <= want.hi, `${how}: ${f.strokes} lines from step ${step + 1}, the CLI's weights give ${want.lo}–${want.hi} at ${t}`);
      assert.equal(new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).get('th'), t ? String(t) : null);
      return f.strokes;
    };
    const n1 = await check(0.1, 'at 0.1');
    await page.focus('#threshold');
    for (let k = 0; k < 10; k++) await page.keyboard.press('ArrowRight');
    const n2 = await check(0.2, 'ArrowRight ×10');
    await page.keyboard.press('Home');
    const n0 = await check(0, 'Home');
    assert.ok(n2 < n1 && n1 < n0, `lines: ${n0} at 0, ${n1} at 0.1, ${n2} at 0.2`);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
