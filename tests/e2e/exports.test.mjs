// "Save PNG" and "Save SVG" of the model view (every layer × head) and of the translator's cross
// view, clicked as a reader clicks them: the files are named after the view, the PNG is the
// picture on screen (same size, same pixels), and the SVG holds what the view shows — the
// model view's 72 maps with their cells, layer labels and per-head entropies (checked against
// the CLI's weights), the cross view's tokens as text, one line per source token it draws at
// that decode step and the weights printed under them (the CLI's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, downloadBytes } from './harness.mjs';
import { cliJson, cliBlock, cliAt, waitDrawn } from './cli-helpers.mjs';
import { drawnAfter } from './widget-helpers.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** Click an export button; → { name, bytes } of the file the page saved. */
async function save(page, button) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
  return { name: dl.suggestedFilename(), bytes: (await downloadBytes(dl)) };
}

/** The PNG against the canvas on screen: { width, height, canvas: [w, h], differing pixels, inked }. */
function pngVsCanvas(page, bytes) {
  return page.evaluate(async (b64) => {
    const bin = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
    const bmp = await createImageBitmap(new Blob([bin], { type: 'image/png' }));
    const off = new OffscreenCanvas(bmp.width, bmp.height);
    const octx = off.getContext('2d');
    octx.drawImage(bmp, 0, 0);
    const d = octx.getImageData(0, 0, bmp.width, bmp.height).data;
    const c = document.querySelector('canvas#view');
    const s = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let differing = 0;
    let inked = 0;
    if (d.length === s.length) for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - s[i]) + Math.abs(d[i + 1] - s[i + 1]) + Math.abs(d[i + 2] - s[i + 2]) > 6) differing++;
    for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - d[0]) + Math.abs(d[i + 1] - d[1]) + Math.abs(d[i + 2] - d[2]) > 30) inked++;
    return { width: bmp.width, height: bmp.height, canvas: [c.width, c.height], css: [c.getBoundingClientRect().width, c.getBoundingClientRect().height], differing, inked, pixels: bmp.width * bmp.height };
  }, bytes.toString('base64'));
}

/** The PNG's iTXt chunks, read by hand: { keyword: text }; each chunk's CRC checked. */
function pngText(bytes) {
  const out = {};
  for (let o = 8; o + 12 <= bytes.length; ) {
    const len = bytes.readUInt32BE(o);
    const type = bytes.subarray(o + 4, o + 8).toString('latin1');
    if (type === 'iTXt') {
      const data = bytes.subarray(o + 8, o + 8 + len);
      let crc = 0xffffffff;
      for (const b of bytes.subarray(o + 4, o + 8 + len)) {
        crc ^= b;
        for (let k = 0; k < 8; k++) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
      }
      assert.equal((crc ^ 0xffffffff) >>> 0, bytes.readUInt32BE(o + 8 + len), 'the iTXt chunk’s CRC');
      const keyword = data.subarray(0, data.indexOf(0)).toString('latin1');
      // keyword \0 flag method language \0 translated \0 text
      let p = data.indexOf(0) + 3;
      p = data.indexOf(0, p) + 1;
      p = data.indexOf(0, p) + 1;
      out[keyword] = data.subarray(p).toString('utf8');
    }
    o += 12 + len;
  }
  return out;
}

/** Parse an SVG in the page: its size, its texts (with font size and anchor), rects and paths. */
function parseSvg(page, svg) {
  return page.evaluate((src) => {
    const doc = new DOMParser().parseFromString(src, 'image/svg+xml');
    if (doc.querySelector('parsererror')) return { error: doc.querySelector('parsererror').textContent };
    const root = doc.documentElement;
    return {
      width: Number(root.getAttribute('width')),
      height: Number(root.getAttribute('height')),
      texts: [...root.querySelectorAll('text')].map((t) => ({ text: t.textContent, size: t.getAttribute('font-size'), anchor: t.getAttribute('text-anchor'), x: Number(t.getAttribute('x')), y: Number(t.getAttribute('y')) })),
      outlines: root.querySelectorAll('rect[fill="none"]').length,
      filled: root.querySelectorAll('rect:not([fill="none"])').length,
      paths: root.querySelectorAll('path').length,
      desc: root.querySelector(':scope > desc') ? root.querySelector(':scope > desc').textContent : null,
    };
  }, svg);
}

/** Mean over rows of −Σ p ln p of head h of a CLI block, ÷ ln(keys): the model view's "H" score. */
function normalisedEntropy(block, h) {
  let tot = 0;
  for (let i = 0; i < block.query_len; i++) {
    let s = 0;
    for (let j = 0; j < block.key_len; j++) s += cliAt(block, h, i, j);
    for (let j = 0; j < block.key_len; j++) {
      const p = cliAt(block, h, i, j) / s;
      if (p > 0) tot -= p * Math.log(p);
    }
  }
  return tot / block.query_len / Math.log(block.key_len);
}

test('model view: Save PNG is the grid on screen, Save SVG holds its 72 maps, their cells, layer labels and entropies (CLI), named "…-model-…"', async () => {
  const text = 'The animal did not cross the street because it was too tired.';
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', text);
  const n = cli.tokens.source.length;
  const hash = new URLSearchParams({ m: 'minilm-l6', t: text, v: 'model', l: '0', h: '0' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { fresh: true, contextOptions: { viewport: { width: 1280, height: 900 } } });
  const { page } = app;
  try {
    await waitDrawn(page, () => window.attnvizDebug.view === 'model');
    const png = await save(page, '#export-png');
    assert.match(png.name, /^attnviz-minilm-l6-f32-model-encoder_self-.*\.png$/, png.name);
    assert.equal(png.bytes.subarray(1, 4).toString(), 'PNG');
    // The file says what drew it: the model, its weights, the view and the text.
    const said = `attnviz · all-MiniLM-L6-v2 · exact f32 weights · Model view: “${text}”`;
    assert.equal(pngText(png.bytes).Description, said);
    const img = await pngVsCanvas(page, png.bytes);
    assert.deepEqual([img.width, img.height], img.canvas, `the PNG is ${img.width}×${img.height}, the canvas ${img.canvas.join('×')}`);
    assert.ok(img.width > 600 && img.height > 6 * 60, `a 6 × 12 grid is larger than ${img.width}×${img.height}`);
    assert.equal(img.differing, 0, `${img.differing} pixels of the PNG differ from the canvas`);
    assert.ok(img.inked > img.pixels * 0.2, `the PNG is mostly blank: ${img.inked} of ${img.pixels} pixels inked`);

    const svgFile = await save(page, '#export-svg');
    assert.match(svgFile.name, /^attnviz-minilm-l6-f32-model-encoder_self-.*\.svg$/, svgFile.name);
    const svg = await parseSvg(page, svgFile.bytes.toString('utf8'));
    assert.equal(svg.error, undefined, svg.error);
    assert.equal(svg.desc, said);
    assert.ok(Math.abs(svg.width - img.css[0]) <= 1 && Math.abs(svg.height - img.css[1]) <= 1, `the SVG is ${svg.width}×${svg.height}, the view ${img.css.join('×')}`);
    const texts = svg.texts.map((t) => t.text);
    assert.ok(texts.some((t) => t.startsWith('All layers × heads')), 'the title');
    assert.deepEqual(texts.filter((t) => /^L\d+$/.test(t)), ['L1', 'L2', 'L3', 'L4', 'L5', 'L6'], 'one label per layer');
    // 72 maps: an outline each, n × n cells each, and a label "H<head> <entropy>" under each.
    assert.equal(svg.outlines, 72, `${svg.outlines} outlined maps`);
    assert.ok(svg.filled >= 72 * n * n, `${svg.filled} filled rects for 72 maps of ${n}×${n} cells`);
    const labels = texts.map((t) => /^H(\d+) ([\d.]+)$/.exec(t)).filter(Boolean);
    assert.equal(labels.length, 72, `${labels.length} head labels`);
    labels.forEach((m, k) => {
      const l = Math.floor(k / 12);
      const h = k % 12;
      assert.equal(Number(m[1]), h + 1);
      const want = normalisedEntropy(cliBlock(cli.attentions, 'encoder_self', l), h);
      assert.ok(Math.abs(Number(m[2]) - want) < 0.006, `layer ${l + 1} head ${h + 1}: "${m[0]}", the CLI's weights give ${want.toFixed(3)}`);
    });
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('cross view: Save PNG is the view on screen, Save SVG holds the tokens as text, one line per drawn source token and the CLI weights, named "…-cross-…"', async () => {
  const text = 'The old man gave the little girl a red apple.';
  const cli = cliJson('attend', '--model', 'models/en-pt', '--text', text);
  const block = cliBlock(cli.attentions, 'cross', 1);
  const step = 3;
  const row = Array.from({ length: block.key_len }, (_, j) => {
    let s = 0;
    for (let h = 0; h < block.heads; h++) s += cliAt(block, h, step, j);
    return s / block.heads;
  });
  const hash = new URLSearchParams({ m: 'en-pt-tiny', t: text, v: 'cross', k: 'cross', l: '1', a: 'mean', s: String(step) }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { fresh: true, contextOptions: { viewport: { width: 1280, height: 900 } } });
  const { page } = app;
  try {
    await waitDrawn(page, (s) => window.attnvizDebug.view === 'cross' && window.attnvizDebug.state.step === s, step);
    const png = await save(page, '#export-png');
    assert.match(png.name, /^attnviz-en-pt-tiny-cross-cross-l2-mean\.png$/, png.name);
    // One set of weights: none named.
    assert.equal(pngText(png.bytes).Description, `attnviz · English→Portuguese tiny (Bergamot/Marian) · Cross-attention: “${text}”`);
    const img = await pngVsCanvas(page, png.bytes);
    assert.deepEqual([img.width, img.height], img.canvas);
    assert.equal(img.differing, 0, `${img.differing} pixels of the PNG differ from the canvas`);
    assert.ok(img.inked > img.pixels * 0.05, `the PNG is mostly blank: ${img.inked} of ${img.pixels} pixels inked`);

    const svgFile = await save(page, '#export-svg');
    assert.match(svgFile.name, /^attnviz-en-pt-tiny-cross-cross-l2-mean\.svg$/, svgFile.name);
    const svg = await parseSvg(page, svgFile.bytes.toString('utf8'));
    assert.equal(svg.error, undefined, svg.error);
    assert.ok(Math.abs(svg.width - img.css[0]) <= 1 && Math.abs(svg.height - img.css[1]) <= 1, `the SVG is ${svg.width}×${svg.height}, the view ${img.css.join('×')}`);
    const texts = svg.texts.map((t) => t.text);
    assert.ok(texts.some((t) => t.includes(`decode step ${step + 1} of ${block.query_len}`)), `the title names the step: ${texts[0]}`);
    // Every target token is a chip and a matrix row label; every source token a chip and a column label.
    for (const tok of cli.tokens.target) assert.ok(texts.filter((t) => t === tok).length >= (cli.tokens.target.filter((x) => x === tok).length * 2), `target token "${tok}" is not text twice`);
    for (const tok of cli.tokens.source) assert.ok(texts.filter((t) => t === tok).length >= (cli.tokens.source.filter((x) => x === tok).length * 2), `source token "${tok}" is not text twice`);
    // One line from the step's target token to each source token of weight ≥ 0.01.
    const lines = { lo: row.filter((w) => w >= 0.01 + 1e-4).length, hi: row.filter((w) => w >= 0.01 - 1e-4).length };
    assert.ok(svg.paths >= lines.lo && svg.paths <= lines.hi, `${svg.paths} lines in the SVG, the CLI's weights give ${lines.lo}–${lines.hi}`);
    // The weights printed under the source chips (10 px) are the CLI's.
    const weights = svg.texts.filter((t) => t.size === '10px').map((t) => Number(t.text));
    assert.equal(weights.length, block.key_len);
    weights.forEach((w, j) => assert.ok(Math.abs(w - row[j]) <= 0.0051, `source token ${j}: ${w}, the CLI's weight ${row[j].toFixed(4)}`));
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: its PNG and SVG buttons save the view as the page does, each naming the model, weights, view and text', async () => {
  const text = 'The cat sat on the mat.';
  const w = await openWidget(browser, server.url, { model: 'minilm', text, view: 'heatmap', layer: '2', head: '3' });
  const { page } = w;
  try {
    await drawnAfter(page);
    const said = `attnviz · all-MiniLM-L6-v2 · exact f32 weights · Heatmap: “${text}”`;
    const png = await save(page, 'attention-viz button[aria-label="Save PNG"]');
    assert.equal(png.name, 'attnviz-minilm-l6-f32-heatmap-encoder_self-l2-h3.png');
    assert.equal(pngText(png.bytes).Description, said);
    const size = await page.evaluate(() => { const c = document.getElementById('w').shadowRoot.querySelector('canvas'); return [c.width, c.height]; });
    assert.deepEqual([png.bytes.readUInt32BE(16), png.bytes.readUInt32BE(20)], size, 'the PNG is the canvas, pixel for pixel in size');
    assert.match(await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('.readout').textContent), /^PNG saved \(\d+×\d+ px\)\.$/);
    const svgFile = await save(page, 'attention-viz button[aria-label="Save SVG"]');
    assert.equal(svgFile.name, 'attnviz-minilm-l6-f32-heatmap-encoder_self-l2-h3.svg');
    const svg = await parseSvg(page, svgFile.bytes.toString('utf8'));
    assert.equal(svg.error, undefined, svg.error);
    assert.equal(svg.desc, said);
    const texts = svg.texts.map((t) => t.text);
    for (const tok of ['[CLS]', 'cat', 'mat', '[SEP]']) assert.ok(texts.includes(tok), `the SVG names the token ${tok}`);
  } finally {
    await w.close();
  }
});

// Issue 44, item 11: a generation's maps are of one step (the scrubber's); the exported files
// said which model, view and prompt, but not which step.
test('a generation’s PNG and SVG say which step they show: in the Description, the <desc>, the <title> and the file name', { timeout: 300_000 }, async () => {
  const text = 'The capital of France is';
  const hash = new URLSearchParams({ m: 'smollm2-135m', t: text, v: 'heatmap', g: '3', gs: '1' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`);
  const { page } = app;
  try {
    await page.waitForFunction(() => window.attnvizDebug.generation && window.attnvizDebug.generation.steps === 3 && window.attnvizDebug.state.gstep === 1, null, { timeout: 300_000, polling: 100 });
    await waitDrawn(page, () => true);
    const g = await page.evaluate(() => window.attnvizDebug.generation);
    const step = `generation step 2 of 3 (choosing “${g.chosen}”)`;
    const png = await save(page, '#export-png');
    assert.match(png.name, /^attnviz-smollm2-135m-heatmap-decoder_self-l1-h1-step2\.png$/, png.name);
    const said = pngText(png.bytes).Description;
    assert.ok(said.includes(` · Heatmap · ${step}: “${text}”`), said);
    const svgFile = await save(page, '#export-svg');
    assert.match(svgFile.name, /-step2\.svg$/, svgFile.name);
    const svg = svgFile.bytes.toString('utf8');
    assert.equal((await parseSvg(page, svg)).desc, said);
    assert.ok(svg.includes(`<title>${said.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</title>`), 'the SVG’s <title> says it too');

    // After the last step: the map of all the tokens generated, and the file says so.
    await page.click('#generation .gen-tok.next'); // "next?": after the last token
    await waitDrawn(page, () => window.attnvizDebug.state.gstep === null);
    const last = await save(page, '#export-png');
    assert.match(last.name, /-h1\.png$/, last.name);
    assert.match(pngText(last.bytes).Description, / · generation: all 3 tokens: “The capital of France is”$/);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});
