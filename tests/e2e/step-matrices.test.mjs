// The step view's "all queries at once" panels (issue 11): Q, K, V, QKᵀ, ÷√d_k, the mask, the
// softmax and softmax·V of one head, each drawn as its own matrix. Hovering a cell reads out
// the CLI's number for it; clicking a query row follows that query; exports and the widget
// show the panels too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApp, openWidget, useServerAndBrowser, setViewport, downloadBytes } from './harness.mjs';
import { cliBinary } from './cli-helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let server;
let browser;
useServerAndBrowser({ prefix: '/', verbose: true }, (s, b) => {
  server = s;
  browser = b;
});

const TEXT = 'The cat sat on the mat.';
const LAYER = 1;
const HEAD = 2;
const PANELS = ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'probs', 'output', 'concat', 'projected', 'block_input', 'residual', 'normed'];
// The CLI array each panel draws (the masked panel shows the scaled scores where the mask is 1).
const CLI_ARRAY = { q: 'q', k: 'k', v: 'v', scores: 'scores', scaled: 'scaled', masked: 'scaled', probs: 'probs', output: 'output', concat: 'concat', projected: 'projected', block_input: 'block_input', residual: 'residual', normed: 'normed' };

function cliStep() {
  const cli = cliBinary();
  // The settled page draws MiniLM's f32 weights, as the CLI reads them.
  const args = ['step', '--model', path.join(ROOT, 'models', 'minilm'), '--text', TEXT, '--kind', 'encoder_self', '--layer', String(LAYER), '--head', String(HEAD)];
  return JSON.parse(execFileSync(cli, args, { maxBuffer: 1 << 26 }).toString());
}

const numberIn = (text) => Number(/= (−?-?[\d.e+−-]+)\s*$/.exec(text)[1].replace(/−/g, '-'));

test('step view: every matrix panel reads out the CLI numbers, and a click follows a query row', async () => {
  const want = cliStep();
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, v: 'step', l: String(LAYER), h: String(HEAD), q: '2', sx: 'both' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 1200 });
    await page.waitForFunction(() => window.attnvizDebug.view === 'step' && window.attnvizDebug.step && window.attnvizDebug.stepPanels()?.length, null, { timeout: 120_000 });
    const panels = await page.evaluate(() => window.attnvizDebug.stepPanels());
    assert.deepEqual(panels.map((p) => p.id), PANELS);
    let before = '';
    // The canvas' top left in the viewport, after scrolling its wrapper (78vh high) and the
    // window so that canvas-y `y` is in view, as a user scrolls to a panel.
    const canvasAt = async (y) => {
      await page.evaluate((yy) => {
        document.getElementById('canvas-wrap').scrollTop = Math.max(0, yy - 150);
        const top = document.querySelector('canvas#view').getBoundingClientRect().top + yy;
        window.scrollBy(0, top - 300); // and the window, so that the panel is on screen
      }, y);
      return page.locator('canvas#view').boundingBox();
    };
    for (const p of panels) {
      const row = Math.min(3, p.rows - 1);
      // A column of this head's band in the concat (head 3: dims 65–96), else the 5th.
      const col = p.id === 'concat' ? HEAD * 32 + 4 : Math.min(4, p.cols - 1);
      const box = await canvasAt(p.y);
      await page.mouse.move(box.x + p.x + (col + 0.5) * p.cw, box.y + p.y + (row + 0.5) * p.ch);
      await page.waitForFunction(([prev, r]) => {
        const t = document.getElementById('side-hint').textContent;
        return t !== prev && t.includes(`row ${r} “`);
      }, [before, row + 1]);
      const text = await page.locator('#side-hint').textContent();
      before = text;
      const cols = p.cols;
      const expected = want[CLI_ARRAY[p.id]][row * cols + col];
      const got = numberIn(text);
      assert.ok(Math.abs(got - expected) <= 1e-5 * Math.max(1, Math.abs(expected)), `${p.id}[${row}, ${col}]: page says "${text}", CLI ${expected}`);
      const tok = p.id === 'k' || p.id === 'v' ? want.key_tokens[row] : want.query_tokens[row];
      assert.ok(text.includes(`“${tok}”`), `${p.id}: the read-out names the row's token ${tok}: ${text}`);
    }
    // Click query row 5 in the softmax panel: the whole view follows that query.
    const probs = panels.find((p) => p.id === 'probs');
    const box = await canvasAt(probs.y);
    await page.mouse.click(box.x + probs.x + 0.5 * probs.cw, box.y + probs.y + 5.5 * probs.ch);
    await page.waitForFunction(() => window.attnvizDebug.state.query === 5);
    await page.waitForFunction(() => /query "the"/.test(document.querySelector('canvas#view').getAttribute('aria-label')));
    assert.equal(await page.$eval('#query', (e) => e.value), '5');
    // The followed row is outlined (accent colour, #0b6bcb) in every panel whose rows are
    // queries, at row 5 — and no longer at row 2.
    const after = await page.evaluate(() => window.attnvizDebug.stepPanels());
    const outline = await page.evaluate((ps) => {
      const c = document.querySelector('canvas#view');
      const dpr = c.width / c.getBoundingClientRect().width;
      const ctx = c.getContext('2d');
      const accent = (x, y) => {
        const d = ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data;
        return Math.abs(d[0] - 11) + Math.abs(d[1] - 107) + Math.abs(d[2] - 203) < 60;
      };
      // the outline's top edge runs 1 px above the row, across the panel
      return ps.map((p) => ({ id: p.id, at5: accent(p.x + p.w * 0.5, p.y + 5 * p.ch - 1), at2: accent(p.x + p.w * 0.5, p.y + 2 * p.ch - 1) }));
    }, after.filter((p) => !['k', 'v'].includes(p.id)));
    for (const o of outline) {
      assert.ok(o.at5, `${o.id}: row 5 is not outlined`);
      assert.ok(!o.at2, `${o.id}: row 2 is still outlined`);
    }
    // The SVG export holds the panels.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
    const svg = (await downloadBytes(download)).toString('utf8');
    for (const title of ['All queries at once', 'QKᵀ', '÷√d_k', 'softmax · V', 'Concat(heads)', 'LayerNorm']) assert.ok(svg.includes(title), `the SVG lacks "${title}"`);
  } finally {
    await app.close();
  }
});

test('the widget shows the same panels, and hovering one reads its number out', async () => {
  const want = cliStep();
  const { page, close } = await openWidget(browser, server.url, { model: 'minilm', text: TEXT, view: 'step', 'step-part': 'matrices', layer: String(LAYER + 1), head: String(HEAD + 1) }); // 1-based attributes
  try {
    await page.waitForFunction(() => document.getElementById('w').shell.geom() && document.getElementById('w').shell.geom().panels, null, { timeout: 180_000 });
    const p = await page.evaluate(() => {
      const q = document.getElementById('w').shell.geom().panels.find((x) => x.id === 'scores');
      return { x: q.x, y: q.y, cw: q.cw, ch: q.ch, cols: q.cols };
    });
    const c = await page.locator('#w >> canvas').boundingBox();
    await page.mouse.move(c.x + p.x + 2.5 * p.cw, c.y + p.y + 1.5 * p.ch);
    await page.waitForFunction(() => /QKᵀ/.test(document.getElementById('w').shadowRoot.querySelector('.readout').textContent));
    const text = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('.readout').textContent);
    const expected = want.scores[1 * p.cols + 2];
    assert.ok(Math.abs(numberIn(text) - expected) <= 1e-5 * Math.max(1, Math.abs(expected)), `widget read-out "${text}" vs CLI ${expected}`);
  } finally {
    await close();
  }
});
