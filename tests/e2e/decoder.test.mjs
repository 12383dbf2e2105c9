// The decoder half (issue 9): SmolLM2-135M in the page and the widget. Picking it downloads it
// (its size said, the progress shown); its decoder self-attention maps are causal (the upper
// triangle of the heatmap is empty); Generate continues the text N tokens; the scrubber (click,
// arrow keys, the range) shows each step's maps cut to the positions fed so far, the query that
// chose the token followed and its top-5 next tokens; the step view shows −∞ above the diagonal
// before the softmax and 0 after; the permalink keeps N, the sampling and the step; the widget
// takes generate="4" and generate-step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hoverStepPanel, openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { watchMainThread } from './main-thread.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const MODEL = 'smollm2-135m';
const PROMPT = 'The capital of Italy is';
const LONG = 300_000; // ms: a 98 MB download, then forwards of ~0.5 s each on 2 cores
const ZERO = [68, 1, 84]; // viridis(0): the heatmap's colour of a weight of 0
const MASKED = [110, 110, 110]; // the step view's grey for −∞
const dist = (a, b) => Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) + Math.abs(a[2] - b[2]);

const debug = (page) => page.evaluate(() => JSON.parse(JSON.stringify(window.attnvizDebug)));

/**
 * Wait until the page's last finished drawing satisfies fn (run in the page with arg; it reads
 * window.attnvizDebug, whose fields change when a drawing is finished). Returns that debug.
 */
async function drawnWhen(page, fn, arg = null) {
  await page.waitForFunction(fn, arg, { timeout: LONG, polling: 100 });
  return debug(page);
}

/** The heatmap's cells as drawn: the colour near each cell's top-left corner (clear of the printed weight). */
function heatmapCells(page) {
  return page.evaluate(() => {
    const g = window.attnvizDebug.heatmapGrid();
    if (!g) return null;
    const c = document.querySelector('canvas#view');
    const dpr = c.width / c.getBoundingClientRect().width;
    const img = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const px = (x, y) => {
      const i = (Math.round(y * dpr) * c.width + Math.round(x * dpr)) * 4;
      return [img[i], img[i + 1], img[i + 2]];
    };
    const o = Math.max(2, g.cell * 0.2);
    const cells = [];
    for (let i = 0; i < g.rows; i++) {
      const row = [];
      for (let j = 0; j < g.cols; j++) row.push(px(g.left + j * g.cell + o, g.top + i * g.cell + o));
      cells.push(row);
    }
    return { g, cells, bg: px(1, 1) };
  });
}

/** The causal structure as drawn: every cell above the diagonal is blank (masked: no weight, not
 *  a weight of 0, so not the colour of 0), and every row has a visibly non-zero weight at or left
 *  of the diagonal. */
function assertCausal(m, what) {
  assert.ok(m, `${what}: no heatmap drawn`);
  assert.equal(m.g.rows, m.g.cols, `${what}: a square map`);
  for (let i = 0; i < m.g.rows; i++) {
    for (let j = i + 1; j < m.g.cols; j++) assert.ok(dist(m.cells[i][j], m.bg) < 6, `${what}: cell (${i}, ${j}) above the diagonal is drawn ${m.cells[i][j]}, not blank (the background ${m.bg})`);
    const best = Math.max(...m.cells[i].slice(0, i + 1).map((c) => dist(c, ZERO)));
    assert.ok(best > 20, `${what}: row ${i} shows no weight at or left of the diagonal`);
  }
}

/** A checksum of the map canvas' pixels (changes when the drawing does). */
const canvasSum = (page) => page.evaluate(() => {
  const c = document.querySelector('canvas#view');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let h = 0;
  for (let i = 0; i < d.length; i += 3) h = (h * 31 + d[i]) | 0;
  return `${c.width}x${c.height}:${h}`;
});

const topText = (page) => page.locator('#generation-readout .gen-top-list').textContent();

test('SmolLM2 on the page: pick, causal maps, generate 8, scrub, step view mask, permalink', { timeout: 2 * LONG }, async () => {
  const app = await openApp(browser, server.url);
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 1200 });
    // The picker offers SmolLM2 and says what it costs to download.
    const label = await page.locator(`#model option[value="${MODEL}"]`).textContent();
    assert.match(label, /SmolLM2/);
    assert.match(label, /98 MB/);
    // Record what the status line and the progress bar say while it loads.
    await page.evaluate(() => {
      window.seenLoading = { status: [], progress: [] };
      const note = () => {
        window.seenLoading.status.push(document.getElementById('status').textContent);
        if (!document.getElementById('progress-box').hidden) window.seenLoading.progress.push(Number(document.getElementById('progress').value));
      };
      new MutationObserver(note).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await page.selectOption('#model', MODEL);
    let d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.modelId === 'smollm2-135m' && x.generation);
    const seen = await page.evaluate(() => window.seenLoading);
    assert.ok(seen.status.some((t) => /Loading SmolLM2.*98 MB, downloaded on first use/.test(t)), `the status never said the download size: ${seen.status.slice(0, 5)}`);
    assert.ok(seen.progress.some((v) => v > 0), 'the download progress was never shown');
    // Its weights are the GGUF file's own 4-bit blocks, and the status line says so (issue 26).
    assert.match(await page.textContent('#status'), /^SmolLM2-135M-Instruct \(Q4_1 GGUF\) · Q4_1 weights, the file’s own · \d+ tokens/);
    // The generation panel and the attention-sink sentence are shown; GQA is named at the heads.
    assert.equal(await page.locator('#generation').isVisible(), true);
    assert.match(await page.locator('#generation-readout .gen-sink').textContent(), /attention sink.*Xiao et al\. 2023/);
    await page.click('#tab-view-heatmap');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.view === 'heatmap' && x.state.kind === 'decoder_self');
    await page.locator('#heads .swatch[data-head="4"]').click();
    await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.head === 4);
    assert.equal(await page.locator('#gqa-note').textContent(), 'Query head 5 shares K/V head 2 with heads 4–6 (grouped-query attention: 9 query heads, 3 key/value heads).');

    // Type a prompt: the map is causal, N = 0 shows the prompt's own next-token prediction.
    await page.locator('#text').fill(PROMPT);
    d = await drawnWhen(page, (t, x = window.attnvizDebug) => x.text === t && x.view === 'heatmap', PROMPT);
    const P = d.tokens.length;
    assert.ok(P >= 5, `prompt tokens: ${d.tokens}`);
    assert.ok(d.tokens.some((t) => t.startsWith('Ġ')), 'byte-level tokens carry Ġ for a space');
    assert.equal(d.generation.steps, 0);
    assertCausal(await heatmapCells(page), 'prompt');
    assert.equal((await heatmapCells(page)).g.rows, P);
    assert.equal(await page.locator('#generation-readout .gen-top figcaption').textContent(), 'Top 5 next tokens after “␣is”');
    assert.equal(await page.locator('#generation-readout .gen-top-list li').count(), 5);
    assert.equal(await page.locator('#translation').isHidden(), true, 'no continuation without generation');

    // Generate 8 tokens (greedy).
    await page.locator('#generation .gen-n').fill('8');
    await page.click('#generation .gen-go');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.generation && x.generation.steps === 8);
    assert.equal(d.generation.promptLen, P);
    assert.equal(d.generation.sampling.method, 'greedy');
    assert.equal(d.targetTokens.length, 8);
    assert.ok(d.outputText && d.outputText.length > 0, 'a continuation');
    assert.equal(await page.locator('#output-label').textContent(), 'Continuation');
    assert.equal(await page.locator('#output').textContent(), d.outputText);
    const buttons = await page.locator('#generation .gen-tok:not(.next)').allTextContents();
    assert.equal(buttons.length, 8);
    assert.deepEqual(buttons, d.generation.tokens);
    for (const [i, raw] of d.targetTokens.entries()) {
      assert.ok(!/[ĠĊĉ]/.test(buttons[i]), `token ${raw} is shown raw: ${buttons[i]}`);
      if (raw.startsWith('Ġ')) assert.ok(buttons[i].startsWith('␣'), `${raw} → ${buttons[i]}`);
    }
    let m = await heatmapCells(page);
    assert.equal(m.g.rows, P + 8, 'the map covers the prompt and the 8 generated tokens');
    assertCausal(m, 'after generation');
    assert.equal(d.generation.gstep, null);
    assert.match(await page.locator('#generation-readout .gen-top figcaption').textContent(), /Top 5 next tokens after/);

    // Scrub by clicking generated token 4 (step index 3): the maps as they were when it was chosen.
    let sum = await canvasSum(page);
    let top = await topText(page);
    await page.click('#generation .gen-tok[data-step="3"]');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.generation.gstep === 3 && x.state.gstep === 3);
    assert.equal(d.generation.shownLen, P + 3);
    m = await heatmapCells(page);
    assert.equal(m.g.rows, P + 3, 'the map is cut to the positions fed when token 4 was chosen');
    assert.equal(m.g.pinnedRow, P + 2, 'the query that chose token 4 is outlined');
    assertCausal(m, 'step 4');
    assert.notEqual(await canvasSum(page), sum, 'the drawn map changed');
    assert.notEqual(await topText(page), top, 'the top-5 changed');
    assert.equal(d.generation.chosen, d.generation.tokens[3]);
    assert.ok(d.generation.top.some((t) => t.chosen), 'greedy: the chosen token is among the top 5');
    assert.equal(d.generation.top[0].chosen, true, 'greedy: the chosen token is the most likely');
    assert.match(await page.locator('#generation .gen-step-out').textContent(), /step 4 of 8/);
    assert.equal(await page.locator('#generation .gen-step').inputValue(), '3');
    assert.equal(await page.locator('#generation .gen-tok[data-step="3"]').getAttribute('aria-pressed'), 'true');

    // Arrow keys on the tokens move one step (and leave the heads alone).
    sum = await canvasSum(page);
    top = await topText(page);
    await page.keyboard.press('ArrowRight');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.gstep === 4);
    assert.equal((await heatmapCells(page)).g.rows, P + 4);
    assert.equal(d.state.head, 4, 'ArrowRight on the tokens did not change the head');
    assert.notEqual(await canvasSum(page), sum);
    assert.notEqual(await topText(page), top);
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowLeft');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.gstep === 2);
    assert.equal((await heatmapCells(page)).g.rows, P + 2);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.step), '2', 'the focus follows the step');
    await page.keyboard.press('End');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.gstep === null && x.generation.step === 8);
    assert.equal((await heatmapCells(page)).g.rows, P + 8);
    await page.keyboard.press('Home');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.gstep === 0);
    assert.equal((await heatmapCells(page)).g.rows, P);

    // The range: arrow keys and a click on it.
    await page.locator('#generation .gen-step').focus();
    await page.keyboard.press('ArrowRight');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.gstep === 1);
    assert.equal(d.state.head, 4, 'ArrowRight on the range did not change the head');
    assert.equal((await heatmapCells(page)).g.rows, P + 1);
    const box = await page.locator('#generation .gen-step').boundingBox();
    await page.mouse.click(box.x + box.width - 3, box.y + box.height / 2);
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.gstep === null && x.generation.step === 8);
    await page.keyboard.press('ArrowLeft');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.gstep === 7);
    assert.equal((await heatmapCells(page)).g.rows, P + 7);

    // Step view: −∞ above the diagonal before the softmax, 0 after; the query that chose token 8 followed.
    await page.click('#tab-view-step');
    await page.selectOption('#step-part', 'matrices'); // every matrix of the head (the mask, the softmax)
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.view === 'step' && x.step && x.step.kind === 'decoder_self' && x.stepPanels()?.length);
    assert.equal(d.state.query, P + 6);
    assert.equal(d.step.queryTokens.length, P + 8, 'the step view covers every position fed');
    const T = P + 8;
    for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) assert.equal(d.step.probs[i * T + j], 0, `softmax (${i}, ${j}) above the diagonal`);
    const colours = await page.evaluate(() => {
      const ps = window.attnvizDebug.stepPanels();
      const c = document.querySelector('canvas#view');
      const dpr = c.width / c.getBoundingClientRect().width;
      const ctx = c.getContext('2d');
      const at = (p, i, j) => Array.from(ctx.getImageData(Math.round((p.x + (j + 0.5) * p.cw) * dpr), Math.round((p.y + (i + 0.5) * p.ch) * dpr), 1, 1).data.slice(0, 3));
      const masked = ps.find((p) => p.id === 'masked');
      const probs = ps.find((p) => p.id === 'probs');
      const cells = [];
      for (let i = 0; i < masked.rows; i++) for (let j = 0; j < masked.cols; j++) cells.push({ i, j, masked: at(masked, i, j), probs: at(probs, i, j) });
      return cells;
    });
    for (const c of colours) {
      if (c.j > c.i) {
        assert.ok(dist(c.masked, MASKED) < 8, `mask panel (${c.i}, ${c.j}) above the diagonal is ${c.masked}, not the −∞ grey`);
        assert.ok(dist(c.probs, ZERO) < 12, `softmax panel (${c.i}, ${c.j}) above the diagonal is ${c.probs}, not 0`);
      } else assert.ok(dist(c.masked, MASKED) >= 8, `mask panel (${c.i}, ${c.j}) on or below the diagonal is grey`);
    }
    // Llama's block: × Wᴼ without a bias, then RMSNorm of the residual stream (the feed-forward's input).
    await hoverStepPanel(page, 'normed');
    await page.waitForFunction(() => /^RMSNorm \(the feed-forward’s input\): row 2/.test(document.getElementById('side-hint').textContent));
    const options = await page.locator('#query option').allTextContents();
    assert.equal(options.length, T);
    assert.ok(options.every((o) => !/[ĠĊ]/.test(o)), `the query picker shows raw byte-level tokens: ${options}`);

    // Sampling: temperature / top-k / seed go to the model and into the permalink.
    await page.locator('#generation .gen-sampling summary').click();
    await page.selectOption('#generation .gen-method', 'sample');
    await page.locator('#generation .gen-temperature').fill('1.3');
    await page.locator('#generation .gen-temperature').dispatchEvent('change');
    await page.locator('#generation .gen-top-k').fill('20');
    await page.locator('#generation .gen-top-k').dispatchEvent('change');
    await page.locator('#generation .gen-seed').fill('7');
    await page.locator('#generation .gen-seed').dispatchEvent('change');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.generation.sampling && x.generation.sampling.method === 'sample' && x.generation.sampling.seed === 7 && x.generation.sampling.top_k === 20);
    assert.equal(d.generation.sampling.temperature.toFixed(2), '1.30');
    assert.equal(d.generation.steps, 8);
    const sampled = d.targetTokens;

    // Back to step 3; the permalink holds N, the sampling and the step.
    await page.click('#tab-view-heatmap');
    await drawnWhen(page, (_, x = window.attnvizDebug) => x.view === 'heatmap');
    await page.click('#generation .gen-tok[data-step="2"]');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.state.gstep === 2 && x.view === 'heatmap');
    const hash = await page.evaluate(() => location.hash);
    const params = new URLSearchParams(hash.slice(1));
    assert.equal(params.get('g'), '8');
    assert.equal(params.get('gs'), '2');
    assert.equal(params.get('tp'), '1.3');
    assert.equal(params.get('tk'), '20');
    assert.equal(params.get('sd'), '7');
    const again = await openApp(browser, `${server.url}${hash}`);
    try {
      const d2 = await drawnWhen(again.page, (_, x = window.attnvizDebug) => x.modelId === 'smollm2-135m' && x.generation && x.generation.steps === 8);
      assert.equal(d2.state.gstep, 2);
      assert.equal(d2.generation.shownLen, P + 2);
      assert.deepEqual(d2.targetTokens, sampled, 'the same seed samples the same continuation');
      assert.equal(await again.page.locator('#generation .gen-step').inputValue(), '2');
      assert.equal(await again.page.locator('#generation .gen-method').inputValue(), 'sample');
      assert.equal(await again.page.locator('#generation .gen-n').inputValue(), '8');
      assert.equal((await heatmapCells(again.page)).g.rows, P + 2);
    } finally {
      await again.close();
    }

    // Greedy again, live typing regenerates; Enter in the count field; "Prompt only" goes back to N = 0.
    await page.selectOption('#generation .gen-method', 'greedy');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.generation.sampling && x.generation.sampling.method === 'greedy' && x.generation.steps === 8);
    await page.locator('#text').fill(`${PROMPT} a`);
    d = await drawnWhen(page, (t, x = window.attnvizDebug) => x.text === t && x.generation.steps === 8, `${PROMPT} a`);
    assert.equal(d.generation.promptLen, d.tokens.length);
    assert.ok(d.tokens.length > P);
    await page.locator('#generation .gen-n').fill('3');
    await page.locator('#generation .gen-n').press('Enter');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.generation.steps === 3);
    assert.equal((await heatmapCells(page)).g.rows, d.tokens.length + 3);
    await page.click('#generation .gen-clear');
    d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.generation.steps === 0 && x.state.gen === 0);
    assert.equal(await page.locator('#generation .gen-scrub').isHidden(), true);
    assert.equal(await page.locator('#translation').isHidden(), true);
    assert.ok(!new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).has('g'));
    assert.deepEqual(app.pageErrors, []);
    assert.deepEqual(app.consoleErrors, []);
  } finally {
    await app.close();
  }
});

test('the widget: model="smollm2-135m" generate="4" draws, and generate-step scrubs', { timeout: LONG }, async () => {
  const { page, close } = await openWidget(browser, server.url, { model: MODEL, text: PROMPT, generate: '4', view: 'heatmap' });
  try {
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: LONG });
    const get = () => page.evaluate(() => {
      const w = document.getElementById('w');
      const root = w.shadowRoot;
      const c = root.querySelector('canvas');
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      let ink = 0;
      for (let i = 0; i < data.length; i += 4 * 7) if (Math.abs(data[i] - data[0]) + Math.abs(data[i + 1] - data[1]) + Math.abs(data[i + 2] - data[2]) > 30) ink++;
      return {
        state: w.viewState,
        rows: w.shell.geom() && w.shell.geom().rows,
        pinned: w.shell.geom() && w.shell.geom().pinnedRow,
        ink: ink / (data.length / 28),
        tokens: [...root.querySelectorAll('.gen-tok:not(.next)')].map((b) => b.textContent),
        out: root.querySelector('.out').textContent,
        top: root.querySelector('.gen-top-list').textContent,
        gqa: root.querySelector('.gqa').textContent,
        draws: Number(w.dataset.drawCount),
      };
    });
    await page.waitForFunction(() => document.getElementById('w').shadowRoot.querySelectorAll('.gen-tok:not(.next)').length === 4, null, { timeout: LONG });
    const a = await get();
    assert.ok(a.ink > 0.02, `the widget looks blank: ${a.ink}`);
    assert.equal(a.state.gen, 4);
    assert.equal(a.tokens.length, 4);
    assert.match(a.out, /^Continuation/);
    assert.match(a.gqa, /Query head 1 shares K\/V head 1 with heads 1–3/);
    const P = a.rows - 4;
    // generate-step (from 1, as the page shows steps): the map is cut and the top-5 changes.
    await page.evaluate(() => document.getElementById('w').setAttribute('generate-step', '2'));
    await page.waitForFunction((n) => { const w = document.getElementById('w'); return Number(w.dataset.drawCount) > n && w.viewState.gstep === 1 && !w.shell.busy; }, a.draws, { timeout: LONG });
    const b = await get();
    assert.equal(b.rows, P + 1);
    assert.equal(b.pinned, P);
    assert.notEqual(b.top, a.top);
    // Its own scrubber: a click on the third token.
    await page.locator('#w >> .gen-tok[data-step="2"]').click();
    await page.waitForFunction((n) => { const w = document.getElementById('w'); return w.viewState.gstep === 2 && Number(w.dataset.drawCount) > n && !w.shell.busy; }, b.draws, { timeout: LONG });
    assert.equal((await get()).rows, P + 2);
    // A new generate attribute regenerates.
    await page.evaluate(() => document.getElementById('w').setAttribute('generate', '2'));
    await page.waitForFunction(() => document.getElementById('w').shadowRoot.querySelectorAll('.gen-tok:not(.next)').length === 2, null, { timeout: LONG });
    assert.equal((await get()).rows, P + 2);
    // The iframe form passes the same attributes on from its query string.
    const q = new URLSearchParams({ model: 'smollm2', text: PROMPT, generate: '3', 'generate-step': '2', view: 'heatmap' });
    await page.goto(`${server.url}embed.html?${q}`);
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: LONG });
    await page.waitForFunction(() => document.querySelector('attention-viz').shadowRoot.querySelectorAll('.gen-tok:not(.next)').length === 3, null, { timeout: LONG });
    const framed = await page.evaluate(() => document.querySelector('attention-viz').viewState);
    assert.equal(framed.gen, 3);
    assert.equal(framed.gstep, 1);
  } finally {
    await close();
  }
});

test('at 512 positions (the model’s maximum) scrubbing and switching views keep the main thread within budget', { timeout: LONG }, async () => {
  // More than 512 prompt tokens and 16 asked for: the prompt is cut to 496 so that all 16 fit
  // in the model's 512 positions.
  const text = Array.from({ length: 140 }, (_, i) => `word${i % 37} is`).join(' ');
  const hash = new URLSearchParams({ m: MODEL, t: text, v: 'heatmap', g: '16' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    let d = await drawnWhen(page, (_, x = window.attnvizDebug) => x.modelId === 'smollm2-135m' && x.generation && x.generation.steps > 0);
    assert.equal(d.generation.promptLen + d.generation.steps, 512, 'prompt and continuation fill the 512 positions');
    assert.deepEqual([d.generation.promptLen, d.generation.steps], [496, 16]);
    assert.equal(await page.locator('#generation .gen-stop').textContent(), 'The prompt was cut to its first 496 tokens, so that it and the 16 generated fit in the model’s 512 positions.');
    // Watched once the side panel's chart module (a main-thread wasm, compiled once) is in.
    await page.waitForFunction(() => window.attnvizDebug.chartBars > 0, null, { timeout: LONG });
    const watch = await watchMainThread(page);
    const settle = async (fn, arg) => {
      d = await drawnWhen(page, fn, arg);
      await page.waitForFunction(() => !window.attnvizDebug.drawing, null, { timeout: LONG });
    };
    for (const view of ['heatmap', 'head', 'model', 'step']) {
      await page.click(`#tab-view-${view}`);
      await settle((v, x = window.attnvizDebug) => x.view === v && (v !== 'step' || x.step), view);
      for (const s of [1, 0, d.generation.steps]) {
        await page.click(`#generation .gen-tok[data-step="${s}"]`);
        await settle((st, x = window.attnvizDebug) => x.generation.step === st, s);
      }
      await page.keyboard.press('ArrowLeft');
      await settle((st, x = window.attnvizDebug) => x.generation.step === st, d.generation.steps - 1);
      assert.equal(d.generation.shownLen, 512 - 1);
      await watch.take(view);
    }
    await watch.check();
  } finally {
    await app.close();
  }
});
