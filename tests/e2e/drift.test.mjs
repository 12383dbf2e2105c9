// One shell for every host (issue 22): the page and the <attention-viz> widget are two bindings of
// the same session and shell (www/shell/host.js), so one scripted sequence of interactions, each
// done through that host's own controls (keys on the map, its pickers, its attributes), ends in
// the same view state and the same drawing, pixel for pixel, on both. Before the shell was
// shared, the page cleared a pinned token on a layer change and the widget did not, and only the
// page clamped the decode-step scrubber.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { canvasDigest } from './cli-helpers.mjs';

let server;
let browser;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
});

const TEXT = 'The cat sat on the mat.';
const B = 'The dog sat on the mat.';
const FIELDS = ['model', 'text', 'compare', 'view', 'kind', 'layer', 'head', 'heads', 'agg', 'pin', 'query', 'step', 'measure'];

/** Each host's way to do one step: the page's controls, or the widget's map, pickers and attributes. */
const page = {
  canvas: 'canvas#view',
  settled: () => !window.attnvizDebug.computing && !window.attnvizDebug.drawing,
  state: () => window.attnvizDebug.state,
  scrub: (p, n) => p.$eval('#step', (el, v) => {
    el.value = String(v);
    el.dispatchEvent(new Event('input', { bubbles: true }));
  }, n),
  layer: (p, l) => p.selectOption('#layer', String(l)),
  measure: (p, m) => p.selectOption('#measure', m),
  compare: (p, text) => p.fill('#compare', text),
};
const widget = {
  canvas: 'attention-viz >> canvas',
  settled: () => {
    const w = document.getElementById('w');
    return w.dataset.state === 'ready' && !w.shell.busy && !w.session.pending;
  },
  state: () => document.getElementById('w').viewState,
  scrub: (p, n) => p.evaluate((v) => {
    const el = document.getElementById('w').shadowRoot.querySelector('input[type=range]');
    el.value = String(v);
    el.dispatchEvent(new Event('input', { bubbles: true }));
  }, n),
  layer: (p, l) => p.locator('attention-viz select').first().selectOption(String(l)),
  measure: (p, m) => p.evaluate((v) => document.getElementById('w').setAttribute('measure', v), m),
  compare: (p, text) => p.evaluate((v) => document.getElementById('w').setAttribute('compare', v), text),
};

const keys = (...list) => async (p, host) => {
  await p.focus(host === page ? page.canvas : 'attention-viz canvas');
  for (const k of list) await p.keyboard.press(k);
};

// [what, do it, what the state then holds (checked on both hosts)]
const SCRIPT = [
  ['pin the second query token', keys(']', ']'), { pin: { side: 'q', index: 1 } }],
  ['layer 2 in the layer picker (the pin stays: the same token, read in another layer)', (p, host) => host.layer(p, 1), { layer: 1, pin: { side: 'q', index: 1 } }],
  ['back to layer 1 by key', keys('ArrowUp'), { layer: 0, pin: { side: 'q', index: 1 } }],
  ['layer 2 by key, next head', keys('ArrowDown', 'ArrowRight'), { layer: 1, head: 1 }],
  ['the cross view (another view: the pin goes)', keys('4'), { view: 'cross', pin: null }],
  ['scrub the decode step past its end', (p, host) => host.scrub(p, 99), {}],
  ['scrub back to step 2', (p, host) => host.scrub(p, 1), { step: 1 }],
  ['value-weighted measure', (p, host) => host.measure(p, 'value-norm'), { measure: 'value-norm' }],
  ['the head view', keys('1'), { view: 'head' }],
  ['pin the first query token', keys(']'), { pin: { side: 'q', index: 0 } }],
  ['compare with sentence B', (p, host) => host.compare(p, B), { compare: B }],
  ['the heatmap', keys('3'), { view: 'heatmap', layer: 1, measure: 'value-norm' }],
];

async function settle(p, host) {
  await p.waitForTimeout(50); // a key's patch schedules its drawing for the next frame
  await p.waitForFunction(host.settled, null, { timeout: 60_000, polling: 100 });
}

const pick = (s) => Object.fromEntries(FIELDS.map((k) => [k, s[k] ?? null]));

test('one scripted sequence on the page and on the widget ends in the same state and the same drawing', async () => {
  const app = await openApp(browser, `${server.url}#${new URLSearchParams({ m: 'en-pt-tiny', t: TEXT })}`);
  const w = await openWidget(browser, server.url, { model: 'en-pt', text: TEXT, editable: '' });
  try {
    await setViewport(app.page, { width: 1280, height: 900 });
    await setViewport(w.page, { width: 1280, height: 900 });
    await settle(app.page, page);
    // The widget draws at the page's width: its map box is then as wide as the page's canvas.
    const width = await app.page.evaluate(() => Math.max(280, document.getElementById('canvas-wrap').clientWidth - 2));
    await w.page.evaluate((px) => {
      const el = document.getElementById('w');
      el.style.width = `${px}px`;
      const box = el.shadowRoot.querySelector('.wrap');
      el.style.width = `${2 * px - box.clientWidth}px`; // whatever its border and box-sizing
    }, width);
    // … and as tall: the page's box takes the room left on its first screen, a widget's is 78% of
    // the window unless its height attribute says otherwise.
    const sameHeight = async () => {
      const room = await app.page.evaluate(() => Number.parseFloat(getComputedStyle(document.getElementById('canvas-wrap')).maxHeight));
      await w.page.evaluate((h) => document.getElementById('w').setAttribute('height', String(h)), room);
      await settle(w.page, widget);
    };
    await w.page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: 120_000 });
    await sameHeight();
    const trail = [];
    for (const [what, act, expected] of SCRIPT) {
      const states = [];
      for (const [p, host] of [[app.page, page], [w.page, widget]]) {
        await act(p, host);
        await settle(p, host);
        states.push(pick(await p.evaluate(host.state)));
      }
      trail.push(`${what}: ${JSON.stringify(states[0])}`);
      assert.deepEqual(states[1], states[0], `after "${what}" the widget's state differs from the page's\n${trail.join('\n')}`);
      for (const [k, v] of Object.entries(expected)) assert.deepEqual(states[0][k], v, `after "${what}": ${k}\n${trail.join('\n')}`);
    }
    // The same drawing: the same size, the same words for a screen reader, the same pixels.
    await settle(app.page, page);
    await sameHeight();
    const [labelA, labelB] = [await app.page.getAttribute(page.canvas, 'aria-label'), await w.page.locator(widget.canvas).getAttribute('aria-label')];
    assert.equal(labelB, labelA);
    const [digestA, digestB] = [await canvasDigest(app.page, page.canvas), await canvasDigest(w.page, widget.canvas)];
    assert.equal(digestB, digestA, 'the widget drew other pixels than the page');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await w.close();
    await app.close();
  }
});
