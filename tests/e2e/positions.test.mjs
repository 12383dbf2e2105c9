// The positions view (issue 11, "Positional encodings"): the vectors each model adds to its token
// embeddings, the translator's sinusoid and BERT's learned table (and SmolLM2's rotary angles,
// which it applies to queries and keys instead), drawn by plotters-canvas as a
// heatmap and lines. The view draws, hovering reads out the CLI's `positions` numbers, the tab
// and the permalink reach it, PNG and SVG exports hold the charts, and the widget shows them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mountWidget, openApp, useServerAndBrowser, setViewport, downloadBytes } from './harness.mjs';
import { cliBinary } from './cli-helpers.mjs';
import { watchMainThread } from './main-thread.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let server;
let browser;
useServerAndBrowser({ prefix: '/', verbose: true }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const TEXT = 'The cat sat on the mat.';

function cliPositions(dir, count = 128) {
  const cli = cliBinary();
  // The settled page draws MiniLM's f32 weights, as the CLI reads them.
  return JSON.parse(execFileSync(cli, ['positions', '--model', path.join(ROOT, 'models', dir), '--count', String(count)], { maxBuffer: 1 << 26 }).toString());
}

const READOUT = /position (\d+) · dim (\d+) = (-?[\d.]+(?:e[+-]?\d+)?)/;

/** The read-out after hovering (x, y) of the view canvas, once it names a value other than `prev`. */
async function hoverReadout(page, box, x, y, prev) {
  await page.mouse.move(box.x + x, box.y + y);
  await page.waitForFunction((p) => {
    const t = document.getElementById('side-hint').textContent;
    return t !== p && /position \d+ · dim \d+ = /.test(t);
  }, prev);
  return page.locator('#side-hint').textContent();
}

function assertMatches(text, want, at) {
  const m = READOUT.exec(text);
  assert.ok(m, `read-out "${text}"`);
  const [p, d, v] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (at) assert.deepEqual([p, d], at, `read-out "${text}" names another cell`);
  const expected = want.data[p * want.dims + d];
  assert.ok(Math.abs(v - expected) <= 1e-5, `position ${p} dim ${d}: page says ${v}, CLI ${expected}`);
  // A computed table's dim says its period: 2π over the frequency the model itself uses.
  if (want.wave) assert.ok(text.includes(`period ${((2 * Math.PI) / want.wave.frequencies[d]).toFixed(1)} positions`), `read-out "${text}": the CLI's frequency ${want.wave.frequencies[d]} for dim ${d}`);
  return [p, d];
}

for (const [dir, id, kind, note, what] of [
  ['en-pt', 'en-pt-tiny', 'sinusoidal', 'the paper interleaves them', 'sinusoidal position vectors'],
  ['minilm', 'minilm-l6', 'learned', 'learned position table', 'learned position vectors'],
  ['smollm2', 'smollm2-135m', 'rotary', 'rotate each pair of query and key dimensions', 'rotary angles'],
]) {
  test(`positions view (${kind}): draws, reads out the CLI's numbers, exports the charts`, async () => {
    const want = cliPositions(dir);
    assert.equal(want.kind, kind);
    const hash = new URLSearchParams({ m: id, t: TEXT, v: 'positions' }).toString();
    const app = await openApp(browser, `${server.url}#${hash}`);
    const { page } = app;
    try {
      await setViewport(page, { width: 1280, height: 1200 });
      await page.waitForFunction(() => window.attnvizDebug.positionsChart && window.attnvizDebug.positionsChart(), null, { timeout: 120_000 });
      const g = await page.evaluate(() => window.attnvizDebug.positionsChart());
      assert.equal(g.positions, want.positions);
      assert.equal(g.dims, want.dims);
      // The tab is there and selected; the canvas says what it shows.
      assert.equal(await page.getAttribute('#tab-view-positions', 'aria-selected'), 'true');
      const label = await page.getAttribute('canvas#view', 'aria-label');
      assert.ok(label.startsWith(`Positions view: the ${what}`), label);
      assert.ok(label.includes('PE(pos, 2i) = sin(pos / 10000^(2i/d))') && label.includes(note), label);
      assert.ok((await page.locator('#side-hint').textContent()).includes('PE(pos, 2i)'), 'the side panel relates the view to the paper');
      // Not blank: the heatmap's area holds many colours (plotters drew it).
      const colours = await page.evaluate((h) => {
        const c = document.querySelector('canvas#view');
        const s = c.width / c.getBoundingClientRect().width;
        const { data } = c.getContext('2d').getImageData(Math.round(h.x * s), Math.round(h.y * s), Math.round(h.w * s), Math.round(h.h * s));
        const seen = new Set();
        for (let i = 0; i < data.length; i += 4) seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
        return seen.size;
      }, g.heat);
      assert.ok(colours > 50, `the heatmap has ${colours} colours`);

      // Hover heatmap cells: the read-out is the CLI's number for that position and dim. (Where
      // the cells are is read from the last drawing once nothing is owed: a panel that loads
      // after the first drawing may move the canvas and redraw it.)
      const settled = async () => {
        await page.waitForFunction(() => !window.attnvizDebug.computing && !window.attnvizDebug.drawing);
        return { chart: await page.evaluate(() => window.attnvizDebug.positionsChart()), box: await page.locator('canvas#view').boundingBox() };
      };
      let before = '';
      for (const [p, d] of [
        [5, 17],
        [0, 0],
        [want.positions - 1, want.dims - 1],
        [40, Math.floor(want.dims / 2) + 3],
      ]) {
        const { chart: { heat }, box } = await settled();
        const x = heat.x + ((p + 0.5) / g.positions) * heat.w;
        const y = heat.y + heat.h - ((d + 0.5) / g.dims) * heat.h;
        before = await hoverReadout(page, box, x, y, before);
        assertMatches(before, want, [p, d]);
      }
      // Hover a line: the nearest line's value at that position.
      const p = 10;
      const d = g.lineDims[0];
      const v = want.data[p * want.dims + d];
      const { chart: { lines, lo, hi }, box } = await settled();
      const x = lines.x + ((p + 0.5) / g.positions) * lines.w;
      const y = lines.y + ((hi - v) / (hi - lo)) * lines.h;
      const text = await hoverReadout(page, box, x, y, before);
      assertMatches(text, want, [p, d]);

      // PNG export: an image as large as the view; SVG export: the chart image and the notes.
      const [png] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
      const pngBytes = (await downloadBytes(png));
      assert.equal(pngBytes.subarray(1, 4).toString(), 'PNG');
      assert.ok(pngBytes.length > 20_000, `the PNG is ${pngBytes.length} bytes`);
      const [svgDl] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
      const svg = (await downloadBytes(svgDl)).toString('utf8');
      assert.ok(/<image [^>]*href="data:image\/png;base64,[A-Za-z0-9+/]{1000,}/.test(svg), 'the SVG lacks the chart image');
      for (const s of ['Positions · ', 'PE(pos, 2i)', 'your text: positions 0–']) assert.ok(svg.includes(s), `the SVG lacks "${s}"`);
    } finally {
      await app.close();
    }
  });
}

test('the view tab switches to the positions view, the main thread within budget; the widget shows it', async () => {
  const want = cliPositions('en-pt');
  const app = await openApp(browser, `${server.url}#${new URLSearchParams({ m: 'minilm-l6', t: TEXT }).toString()}`);
  try {
    const { page } = app;
    await setViewport(page, { width: 1280, height: 1100 });
    // The chart module loaded ahead (its compile is not the drawing's), then the main thread recorded.
    await page.evaluate(async () => {
      await (await import('./core/chart-wasm.js')).loadChartWasm();
    });
    const watch = await watchMainThread(page);
    await page.click('#tab-view-positions');
    await page.waitForFunction(() => window.attnvizDebug.positionsChart && window.attnvizDebug.positionsChart(), null, { timeout: 120_000 });
    assert.match(page.url(), /[#&]v=positions/);
    // A new width: the 128 × 384 learned table's chart is made again.
    const wide = await page.evaluate(() => window.attnvizDebug.positionsChart().heat.w);
    await setViewport(page, { width: 1100, height: 1100 });
    await page.waitForFunction((w) => {
      const d = window.attnvizDebug;
      return d.positionsChart() && d.positionsChart().heat.w < w && !d.computing && !d.drawing;
    }, wide);
    await watch.take('positions view');
    await watch.check();
  } finally {
    await app.close();
  }

  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    await page.goto(`${server.url}examples.html`);
    await mountWidget(page, { model: 'en-pt', text: TEXT, view: 'positions' });
    await page.waitForFunction(() => document.getElementById('w').shell.geom() && document.getElementById('w').shell.geom().heat, null, { timeout: 180_000 });
    const g = await page.evaluate(() => {
      const { heat, positions, dims } = document.getElementById('w').shell.geom();
      return { heat, positions, dims };
    });
    const label = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label'));
    assert.ok(label.startsWith('Positions view: the sinusoidal'), label);
    const c = await page.locator('#w >> canvas').boundingBox();
    const [p, d] = [7, 3];
    await page.mouse.move(c.x + g.heat.x + ((p + 0.5) / g.positions) * g.heat.w, c.y + g.heat.y + g.heat.h - ((d + 0.5) / g.dims) * g.heat.h);
    await page.waitForFunction(() => /position \d+ · dim \d+ = /.test(document.getElementById('w').shadowRoot.querySelector('.readout').textContent));
    const text = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('.readout').textContent);
    assertMatches(text, want, [p, d]);
  } finally {
    await context.close();
  }
});
