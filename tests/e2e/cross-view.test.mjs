// The cross-attention view of the translator (en-pt) as a reader works it: the decode-step
// scrubber dragged with the mouse and moved with the arrow keys, and clicks on the drawing (a
// target token chip, a row of the matrix). After each, what the page draws must be that step: the
// title's "decode step t of N", the highlighted target chip, the weight printed under every source
// chip (checked against the CLI's cross-attention numbers, mean over heads), the read-out beside
// the scrubber, and the permalink's s=.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, useServerAndBrowser } from './harness.mjs';
import { cliJson, cliBlock, cliAt } from './cli-helpers.mjs';
import { textFrame, textLogFromStart } from './views-helpers.mjs';

const TEXT = 'The old man gave the little girl a red apple.';
const LAYER = 1; // 0-based: "layer 2"
const VIEW = 'canvas#view';

const cli = cliJson('attend', '--model', 'models/en-pt', '--text', TEXT);
const block = cliBlock(cli.attentions, 'cross', LAYER);
const R = block.query_len; // decode steps (target tokens)
const C = block.key_len; // source tokens
/** The CLI's mean over heads of cross-attention row t (what the view draws for agg=mean). */
const cliRow = (t) => Array.from({ length: C }, (_, j) => {
  let s = 0;
  for (let h = 0; h < block.heads; h++) s += cliAt(block, h, t, j);
  return s / block.heads;
});

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

async function openCross() {
  const hash = new URLSearchParams({ m: 'en-pt-tiny', t: TEXT, v: 'cross', k: 'cross', l: String(LAYER), a: 'mean' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { fresh: true, onContext: textLogFromStart, contextOptions: { viewport: { width: 1280, height: 1000 } } });
  return app;
}

/** Wait until the page has drawn step t and has nothing left to draw (else fail saying what it shows). */
async function drawnStep(page, t, how) {
  try {
    await page.waitForFunction(
      (want) => {
        const d = window.attnvizDebug;
        return d.view === 'cross' && d.state && d.state.step === want && !d.computing && !d.drawing
          && /decode step (\d+) of/.exec(document.querySelector('canvas#view').getAttribute('aria-label') || '')?.[1] === String(want + 1);
      },
      t,
      { timeout: 20_000, polling: 50 },
    );
  } catch {
    const now = await page.evaluate(() => ({ step: window.attnvizDebug.state?.step, label: document.querySelector('canvas#view').getAttribute('aria-label'), slider: document.getElementById('step').value }));
    assert.fail(`${how}: the page never drew decode step ${t + 1}; it shows ${JSON.stringify(now)}`);
  }
  // the text log's frame is the one just drawn: wait until nothing has been drawn for a moment
  await page.waitForFunction(() => {
    const f = window.__textLog.get(document.querySelector('canvas#view'));
    return f && performance.now() - f.at > 200;
  }, null, { timeout: 10_000, polling: 50 });
}

/**
 * What the reader sees of the cross view now: the step named in the title, the target chips
 * (13 px centred texts, first the R target tokens then the C source tokens), which target chip is
 * highlighted (its text is drawn in the background colour, on the accent), the weights under the
 * source chips (10 px texts), the scrubber's read-out and value, and the permalink.
 */
async function seen(page) {
  const f = await textFrame(page, VIEW);
  const title = f.texts.find((t) => /^Cross-attention/.test(t.text));
  const chips = f.texts.filter((t) => Math.abs(t.px - 13) < 0.01 && t.align === 'center');
  const target = chips.slice(0, R);
  const weights = f.texts.filter((t) => Math.abs(t.px - 10) < 0.01).map((t) => Number(t.text));
  // The page's background colour as a canvas writes it (theme.css gives a light-dark() pair).
  const bg = await page.evaluate(() => {
    const probe = document.body.appendChild(document.createElement('span'));
    probe.style.color = 'var(--av-bg)';
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.fillStyle = getComputedStyle(probe).color;
    probe.remove();
    return ctx.fillStyle;
  });
  const lit = target.map((c, i) => (c.fill.toLowerCase() === bg.toLowerCase() ? i : -1)).filter((i) => i >= 0);
  const dom = await page.evaluate(() => ({
    out: document.getElementById('step-out').textContent,
    value: document.getElementById('step').value,
    max: document.getElementById('step').max,
    hash: location.hash,
    side: document.getElementById('side-hint').textContent,
  }));
  const m = title && /decode step (\d+) of (\d+)/.exec(title.text);
  return { titleStep: m ? Number(m[1]) : null, titleOf: m ? Number(m[2]) : null, target, lit, weights, frame: f, ...dom };
}

/** Everything drawn and read out names step t, with the CLI's weights of that step. */
async function assertStep(page, t, how) {
  await drawnStep(page, t, how);
  const s = await seen(page);
  const label = s.target[t] && s.target[t].text;
  assert.equal(s.titleStep, t + 1, `${how}: the title says step ${s.titleStep}`);
  assert.equal(s.titleOf, R, `${how}: the title counts ${s.titleOf} steps`);
  assert.deepEqual(s.lit, [t], `${how}: highlighted target chips ${JSON.stringify(s.lit)}`);
  assert.equal(s.out, `${t + 1} / ${R}: ${label}`, `${how}: the scrubber's read-out`);
  assert.equal(s.value, String(t), `${how}: the scrubber's value`);
  assert.equal(new URLSearchParams(s.hash.slice(1)).get('s'), t ? String(t) : null, `${how}: the permalink ${s.hash}`);
  assert.match(s.side, new RegExp(`decode step ${t + 1} of ${R} producing`), `${how}: the side panel`);
  const want = cliRow(t);
  assert.equal(s.weights.length, C, `${how}: ${s.weights.length} weights printed under ${C} source chips`);
  for (let j = 0; j < C; j++) {
    assert.ok(Math.abs(s.weights[j] - want[j]) <= 0.0051, `${how}: source token ${j} shows ${s.weights[j]} at step ${t + 1}, the CLI's weight is ${want[j].toFixed(4)}`);
  }
  return s;
}

test('cross view: dragging the decode-step scrubber with the mouse draws the step under the thumb (CLI weights, highlighted chip, read-out, permalink)', async () => {
  const app = await openCross();
  const { page } = app;
  try {
    assert.ok(R >= 6, `the translation has ${R} target tokens`);
    const s0 = await assertStep(page, 0, 'at first');
    // The chips are the CLI's target tokens (the decode steps).
    assert.equal(s0.target.length, R);
    assert.equal(Number(s0.max), R - 1);
    await page.locator('#step').scrollIntoViewIfNeeded();
    const box = await page.locator('#step').boundingBox();
    // Where the thumb's centre is for value v (the thumb is about as wide as the track is high).
    const thumb = Math.min(16, box.height);
    const xOf = (v) => box.x + thumb / 2 + (v / (R - 1)) * (box.width - thumb);
    const y = box.y + box.height / 2;
    await page.mouse.move(xOf(0), y);
    await page.mouse.down();
    // Half way, still holding the button: the view follows the drag.
    const mid = Math.floor((R - 1) / 2);
    for (let k = 1; k <= 8; k++) await page.mouse.move(xOf(0) + ((xOf(mid) - xOf(0)) * k) / 8, y);
    await assertStep(page, mid, `dragging to step ${mid + 1} (button held)`);
    // On to the last step, then release.
    for (let k = 1; k <= 8; k++) await page.mouse.move(xOf(mid) + ((xOf(R - 1) + 20 - xOf(mid)) * k) / 8, y);
    await page.mouse.up();
    await assertStep(page, R - 1, 'dragged past the end');
    // Dragged back to step 2.
    await page.mouse.move(xOf(R - 1), y);
    await page.mouse.down();
    for (let k = 1; k <= 8; k++) await page.mouse.move(xOf(R - 1) + ((xOf(1) - xOf(R - 1)) * k) / 8, y);
    await page.mouse.up();
    await assertStep(page, 1, 'dragged back to step 2');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('cross view: arrow keys, Home and End on the focused scrubber step through the decode steps', async () => {
  const app = await openCross();
  const { page } = app;
  try {
    await assertStep(page, 0, 'at first');
    // Tab from the head selector to the scrubber, as a keyboard reader gets there.
    await page.focus('#agg');
    let tabs = 0;
    while (!(await page.evaluate(() => document.activeElement && document.activeElement.id === 'step')) && tabs++ < 10) await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'step', 'Tab reaches the scrubber');
    await page.keyboard.press('ArrowRight');
    await assertStep(page, 1, 'ArrowRight');
    await page.keyboard.press('ArrowRight');
    await assertStep(page, 2, 'ArrowRight twice');
    await page.keyboard.press('ArrowLeft');
    await assertStep(page, 1, 'then ArrowLeft');
    await page.keyboard.press('End');
    await assertStep(page, R - 1, 'End');
    await page.keyboard.press('ArrowRight');
    await assertStep(page, R - 1, 'ArrowRight at the end');
    await page.keyboard.press('Home');
    await assertStep(page, 0, 'Home');
    // The arrows moved the step, not the head (the page's own arrow keys are for heads).
    assert.equal(await page.evaluate(() => window.attnvizDebug.state.agg), 'mean');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('cross view: a click on a target token chip, or on a row of the matrix, shows that decode step', async () => {
  const app = await openCross();
  const { page } = app;
  try {
    const s0 = await assertStep(page, 0, 'at first');
    const click = async (x, y) => {
      // Scroll the point into view first (the map's box, then the window), then click it.
      await page.evaluate(([py]) => {
        const wrap = document.getElementById('canvas-wrap');
        wrap.scrollTop = Math.max(0, py - 100);
        const top = document.querySelector('canvas#view').getBoundingClientRect().top + py;
        window.scrollBy(0, top - 300);
      }, [y]);
      const box = await page.locator(VIEW).boundingBox();
      await page.mouse.click(box.x + x, box.y + y);
    };
    // A target chip: the one of step 4, at the position its label is drawn.
    const chip = s0.target[3];
    await click(chip.x, chip.y);
    await assertStep(page, 3, `click on target chip "${chip.text}"`);
    // A row of the matrix: the row labels are drawn right-aligned left of the cells; click the
    // cells right of the label of the last row.
    const s1 = await seen(page);
    const rowLabels = s1.frame.texts.filter((t) => t.align === 'right' && t.px <= 11.01);
    assert.equal(rowLabels.length, R, `${rowLabels.length} row labels`);
    const last = rowLabels[R - 1];
    await click(last.x + 20, last.y);
    await assertStep(page, R - 1, `click on matrix row ${R} ("${last.text}")`);
    // A click on a source chip (not a decode step) changes nothing.
    const src = s1.frame.texts.filter((t) => Math.abs(t.px - 13) < 0.01 && t.align === 'center')[R + 1];
    const n = await page.evaluate(() => window.attnvizDebug.drawCount);
    await click(src.x, src.y);
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.attnvizDebug.state.step), R - 1, 'a click on a source chip left the step');
    assert.ok((await page.evaluate(() => window.attnvizDebug.drawCount)) >= n);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
