// Light and dark colour schemes, as a reader gets them from the browser (colorScheme 'dark' /
// 'light'): the page and the <attention-viz> widget must stay readable. Read from the real
// computed styles and the canvases' pixels: the contrast of every text we check against what is
// really behind it (WCAG 2 contrast ratio ≥ 4.5), form fields included (the widget's
// "Generate N tokens" box), the maps' background dark in dark mode and light in light mode, and
// every label a view draws readable on it. A widget follows the page it is in: on the lesson page
// (which declares "light dark") it follows the reader's preference, on a page that declares no
// dark scheme it stays light, on a page that declares "dark" it is dark.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, openApp } from './harness.mjs';
import { textFrame, textLogFromStart } from './views-helpers.mjs';

const LONG = 300_000; // SmolLM2 (98 MB) is loaded for the widget's generation panel
const TEXT = 'The animal did not cross the street because it was too tired.';

let server;
let browser;
let widgets; // one context for the widget tests (the model files stay in its HTTP cache)
before(async () => {
  server = await startServer({ prefix: '/' });
  browser = await launchBrowser();
  widgets = await browser.newContext({ colorScheme: 'dark', viewport: { width: 1100, height: 900 } });
  await textLogFromStart(widgets);
  // Two host pages of a teacher's own: one that says nothing about colour schemes (a plain light
  // page), one that declares itself dark.
  const host = (style) => `<!doctype html><html><head><meta charset="utf-8"><title>host</title>${style}
<script type="module" src="./attention-viz.js"></script></head><body><h1>A lesson</h1><p>Some text of the host page.</p>
<attention-viz id="w" model="smollm2" text="Once upon a time" generate="2" editable></attention-viz>
<attention-viz id="bad" model="no-such-model"></attention-viz></body></html>`;
  await widgets.route('**/host-plain.html', (r) => r.fulfill({ contentType: 'text/html', body: host('') }));
  await widgets.route('**/host-dark.html', (r) => r.fulfill({ contentType: 'text/html', body: host('<style>:root { color-scheme: dark; } body { background: #101010; color: #eee; }</style>') }));
});
after(async () => {
  await widgets?.close();
  await browser?.close();
  await server?.close();
});

/** In the page: window.__look(selector) → { fg, bg, ratio, text } of an element ("HOST >> SEL" for
 *  one in a shadow root), bg being what is really behind it (ancestors' backgrounds composited, up
 *  to the canvas colour); window.__pixel(selector) → the colour of a canvas's top-left pixel. */
function installLook(page) {
  return page.evaluate(() => {
    const parse = (s) => {
      const m = /rgba?\(([^)]+)\)/.exec(s);
      if (!m) return null;
      const [r, g, b, a = 1] = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return [r, g, b, a];
    };
    const parent = (el) => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
    const find = (sel) => {
      const [host, inner] = sel.split(' >> ');
      return inner ? document.querySelector(host).shadowRoot.querySelector(inner) : document.querySelector(sel);
    };
    const lum = ([r, g, b]) => {
      const f = (v) => {
        const c = v / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const ratio = (a, b) => {
      const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
      return (x + 0.05) / (y + 0.05);
    };
    // The colour the page's canvas shows where nothing is painted: the root's or body's
    // background, else the browser's (white, or dark for a page whose colour scheme is dark).
    const canvasColour = () => {
      for (const el of [document.documentElement, document.body]) {
        const c = parse(getComputedStyle(el).backgroundColor);
        if (c && c[3] > 0) return c.slice(0, 3);
      }
      const probe = document.createElement('span');
      probe.style.color = 'light-dark(rgb(0, 0, 0), rgb(255, 255, 255))';
      document.documentElement.appendChild(probe);
      const dark = getComputedStyle(probe).color === 'rgb(255, 255, 255)';
      probe.remove();
      return dark ? [18, 18, 18] : [255, 255, 255];
    };
    const behind = (el) => {
      const layers = [];
      for (let e = el; e; e = parent(e)) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c && c[3] > 0) layers.push(c);
        if (c && c[3] >= 1) break;
      }
      let out = layers.length && layers[layers.length - 1][3] >= 1 ? layers.pop().slice(0, 3) : canvasColour();
      for (const c of layers.reverse()) out = out.map((v, k) => v * (1 - c[3]) + c[k] * c[3]);
      return out.map(Math.round);
    };
    window.__ratio = ratio;
    window.__lum = lum;
    window.__look = (sel) => {
      const el = find(sel);
      if (!el) return null;
      const fg = parse(getComputedStyle(el).color).slice(0, 3);
      const bg = behind(el);
      const r = el.getBoundingClientRect();
      return { fg, bg, ratio: ratio(fg, bg), visible: r.width > 0 && r.height > 0, text: (el.value || el.textContent || '').trim().slice(0, 40) };
    };
    window.__pixel = (sel) => {
      const c = find(sel);
      return Array.from(c.getContext('2d').getImageData(0, 0, 1, 1).data.slice(0, 3));
    };
  });
}

/** Every selector is shown and its text has contrast ≥ 4.5 against what is behind it. */
async function assertReadable(page, selectors, how) {
  for (const sel of selectors) {
    const l = await page.evaluate((s) => window.__look(s), sel);
    assert.ok(l, `${how}: no ${sel}`);
    assert.ok(l.visible, `${how}: ${sel} is not shown`);
    assert.ok(l.ratio >= 4.5, `${how}: ${sel} ("${l.text}") is rgb(${l.fg}) on rgb(${l.bg}): contrast ${l.ratio.toFixed(2)} < 4.5`);
  }
}

/** The canvas's background is dark (or light), it is the background behind it, and every text
 *  drawn in its last frame reads on it (contrast ≥ 4.5). */
async function assertCanvas(page, canvas, dark, how, behindSel) {
  const px = await page.evaluate((s) => window.__pixel(s), canvas);
  const L = await page.evaluate((p) => window.__lum(p), px);
  assert.ok(dark ? L < 0.05 : L > 0.8, `${how}: ${canvas}'s background rgb(${px}) is not ${dark ? 'dark' : 'light'}`);
  if (behindSel) {
    const around = await page.evaluate((s) => window.__look(s), behindSel);
    assert.ok(px.every((v, k) => Math.abs(v - around.bg[k]) <= 3), `${how}: ${canvas}'s background rgb(${px}) is not the rgb(${around.bg}) around it`);
  }
  const f = await textFrame(page, canvas);
  assert.ok(f.texts.length > 3, `${how}: ${f.texts.length} texts drawn in ${canvas}`);
  const fills = [...new Set(f.texts.map((t) => t.fill))];
  for (const fill of fills) {
    const rgb = await page.evaluate((c) => {
      const x = document.createElement('canvas').getContext('2d');
      x.fillStyle = c;
      x.fillRect(0, 0, 1, 1);
      return Array.from(x.getImageData(0, 0, 1, 1).data.slice(0, 3));
    }, fill);
    const r = await page.evaluate(([a, b]) => window.__ratio(a, b), [rgb, px]);
    const sample = f.texts.find((t) => t.fill === fill).text;
    assert.ok(r >= 4.5, `${how}: "${sample}" is drawn in ${fill} on rgb(${px}): contrast ${r.toFixed(2)} < 4.5`);
  }
}

/** Wait until the widget `id` has drawn and is idle, and (a while longer) until its map is drawn
 *  in the scheme expected; whether it then is, the assertions say. */
async function widgetDrawn(page, id, dark) {
  const drawn = ([w, d]) => {
    const el = document.getElementById(w);
    if (!el || el.dataset.state !== 'ready') return false;
    const c = el.shadowRoot.querySelector('canvas');
    const f = window.__textLog && window.__textLog.get(c);
    if (!f || performance.now() - f.at < 300) return false;
    return d === null || (c.getContext('2d').getImageData(0, 0, 1, 1).data[0] < 128) === d;
  };
  await page.waitForFunction(drawn, [id, null], { timeout: LONG, polling: 100 });
  await page.waitForFunction(drawn, [id, dark], { timeout: 10_000, polling: 100 }).catch(() => {});
}

const PAGE_TEXTS = ['.top h1', '.tagline', '.input label', '#status', 'textarea#text', 'select#model', 'button#open-model', '#views [role=tab][aria-selected=true]', '#views [role=tab][aria-selected=false]', 'select#layer', '#heads-all', '#side-title', '#side-hint', '#chart-readout', 'button#export-png', '.help summary', '.foot .build'];

test('page: readable in dark mode and, switched live, in light mode (text, fields, map and chart backgrounds, drawn labels)', async () => {
  const hash = new URLSearchParams({ m: 'minilm-l6', t: TEXT, l: '2', h: '3', hs: '3' }).toString();
  const app = await openApp(browser, `${server.url}#${hash}`, { fresh: true, onContext: textLogFromStart, contextOptions: { colorScheme: 'dark', viewport: { width: 1280, height: 900 } } });
  const { page } = app;
  try {
    await page.waitForFunction(() => window.attnvizDebug.chartBars > 0 && !window.attnvizDebug.drawing, null, { timeout: 60_000 });
    await installLook(page);
    for (const [dark, how] of [[true, 'dark'], [false, 'light']]) {
      if (!dark) {
        await page.emulateMedia({ colorScheme: 'light' });
        await page.waitForFunction(() => document.querySelector('canvas#view').getContext('2d').getImageData(0, 0, 1, 1).data[0] > 128, null, { timeout: 20_000 });
        await page.waitForFunction(() => document.getElementById('entropy-chart').getContext('2d').getImageData(0, 0, 1, 1).data[0] > 128, null, { timeout: 20_000 });
        await page.waitForTimeout(300);
      }
      const body = await page.evaluate(() => window.__look('body'));
      assert.ok(dark ? luminance(body.bg) < 0.05 : luminance(body.bg) > 0.8, `${how}: the page's background rgb(${body.bg})`);
      await assertReadable(page, PAGE_TEXTS, `page, ${how}`);
      await assertCanvas(page, 'canvas#view', dark, `page, ${how}`, '#canvas-wrap');
      const chart = await page.evaluate(() => window.__pixel('canvas#entropy-chart'));
      assert.ok(dark ? luminance(chart) < 0.05 : luminance(chart) > 0.8, `${how}: the entropy chart's background rgb(${chart})`);
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

/** WCAG relative luminance of an [r, g, b] (0–255), in node. */
function luminance([r, g, b]) {
  const f = (v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}

// What a reader reads in the widget: its text box, layer/head pickers, the generation panel's
// number box and buttons, the read-out and the footer.
const WIDGET_TEXTS = ['#w', '#w >> textarea', '#w >> .bar select', '#w >> .gen-n', '#w >> .gen-go', '#w >> .gen-sampling summary', '#w >> .readout', '#w >> .foot'];

async function checkWidget(page, dark, how) {
  await widgetDrawn(page, 'w', dark);
  await page.waitForFunction(() => document.getElementById('bad').dataset.state === 'error', null, { timeout: 60_000 });
  const host = await page.evaluate(() => window.__look('#w'));
  assert.ok(dark ? luminance(host.bg) < 0.05 : luminance(host.bg) > 0.8, `${how}: the widget's background rgb(${host.bg}) is not ${dark ? 'dark' : 'light'}`);
  await assertReadable(page, WIDGET_TEXTS, how);
  await assertReadable(page, ['#bad >> .msg'], `${how}, the error message`);
  await assertCanvas(page, '#w >> canvas', dark, how, '#w >> .wrap');
}

test('widget on the lesson page (declares "light dark"): dark for a reader who prefers dark, light after switching; readable either way, "Generate N" box included', async () => {
  const page = await widgets.newPage();
  try {
    await page.goto(`${server.url}examples.html`);
    await page.evaluate(() => {
      document.querySelector('main').innerHTML = '<attention-viz id="w" model="smollm2" text="Once upon a time" generate="2" editable></attention-viz><attention-viz id="bad" model="no-such-model"></attention-viz>';
    });
    await installLook(page);
    await checkWidget(page, true, 'lesson page, dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await checkWidget(page, false, 'lesson page, light');
  } finally {
    await page.close();
  }
});

test('widget on a page that declares no dark scheme, reader prefers dark: the widget stays light like its page, and readable ("Generate N" box included)', async () => {
  const page = await widgets.newPage();
  try {
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.goto(`${server.url}host-plain.html`);
    await installLook(page);
    await assertReadable(page, ['h1', 'p'], 'the plain host page');
    await checkWidget(page, false, 'plain light page, reader prefers dark');
  } finally {
    await page.close();
  }
});

test('widget on a page that declares color-scheme: dark, reader prefers light: the widget is dark like its page, and readable', async () => {
  const page = await widgets.newPage();
  try {
    await page.emulateMedia({ colorScheme: 'light' });
    await page.goto(`${server.url}host-dark.html`);
    await installLook(page);
    await assertReadable(page, ['h1', 'p'], 'the dark host page');
    await checkWidget(page, true, 'dark page, reader prefers light');
  } finally {
    await page.close();
  }
});
