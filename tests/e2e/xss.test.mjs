// Untrusted text (what users type, permalinks, widget attributes, token strings) is rendered as
// text, never as markup (issue 13): ≥ 200 payloads through the text box, the permalink, the
// widget's attributes and the SVG export. A payload that ran would set window.__xss or add an
// element; neither may happen, and every exported SVG is free of scripts and event handlers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser } from './harness.mjs';
import { widgetWait } from './widget-helpers.mjs';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** Payloads: markup, event handlers, URLs, entities, template and CSS tricks, in many spellings. */
function payloads() {
  const run = 'window.__xss=(window.__xss||0)+1';
  const tags = ['img src=x', 'svg', 'body', 'iframe src=about:blank', 'video src=x', 'audio src=x', 'details open', 'input autofocus', 'marquee', 'object data=x', 'math', 'image src=x'];
  const events = ['onerror', 'onload', 'onfocus', 'ontoggle', 'onstart', 'onanimationstart', 'onpointerover', 'onbegin', 'onmouseover', 'onclick', 'onfocusin', 'onwheel', 'onbeforetoggle', 'onpageshow'];
  const out = [];
  for (const t of tags) for (const e of events) out.push(`<${t} ${e}=${run}>`);
  const wraps = [
    (p) => `"><script>${p}</script>`,
    (p) => `'><script>${p}</script>`,
    (p) => `</textarea><script>${p}</script>`,
    (p) => `</title><script>${p}</script>`,
    (p) => `<script>${p}</script>`,
    (p) => `<ScRiPt>${p}</sCrIpT>`,
    (p) => `<svg><script>${p}</script></svg>`,
    (p) => `<a href="javascript:${p}">x</a>`,
    (p) => `<iframe srcdoc="<script>${p}</script>">`,
    (p) => `<math><mtext><table><mglyph><style><img src=x onerror=${p}>`,
    (p) => `<style>@import 'javascript:${p}';</style>`,
    (p) => `&lt;img src=x onerror=${p}&gt;`,
    (p) => `\${${p}}`,
    (p) => `{{constructor.constructor('${p}')()}}`,
    (p) => `<!--<img src="--><img src=x onerror=${p}//">`,
    (p) => `<svg><foreignObject><img src=x onerror=${p}></foreignObject></svg>`,
    (p) => `<xmp><img src=x onerror=${p}></xmp>`,
    (p) => `]]><script>${p}</script><![CDATA[`,
    (p) => `<?xml-stylesheet href="javascript:${p}"?>`,
    (p) => `<base href="javascript:${p}//">`,
  ];
  for (const w of wraps) out.push(w(run));
  for (const w of wraps.slice(0, 10)) out.push(`The cat ${w(run)} sat.`);
  for (const t of tags.slice(0, 6)) out.push(`word <${t} onerror=${run}> wörd 猫 ${t}`);
  out.push('\u0000<img src=x onerror=' + run + '>\uFFFE\uFFFF');
  out.push('<img src=x onerror=' + run + ' \u202e>');
  return out;
}

const PAYLOADS = payloads();

/** Elements that markup injection would create, across the document and widget shadow roots. */
function injected(page) {
  return page.evaluate(() => {
    const roots = [document, ...[...document.querySelectorAll('attention-viz')].map((w) => w.shadowRoot)];
    let n = 0;
    for (const r of roots) n += r.querySelectorAll('img, iframe, video, audio, object, math, marquee, details, input:not([type]), script:not([src]), svg, a[href^="javascript"], base, image').length;
    return { n, xss: window.__xss || 0 };
  });
}

function svgProblems(svg) {
  const p = [];
  if (/<script/i.test(svg)) p.push('script element');
  if (/<foreignObject/i.test(svg)) p.push('foreignObject');
  // Inside a tag only: the SVG's <desc> holds the typed text, escaped (&lt;img onerror=…&gt;).
  if (/<[^>]*\son[a-z]+\s*=/i.test(svg)) p.push('event handler attribute');
  if (/javascript:/i.test(svg.replace(/&[a-z#0-9]+;/gi, '').match(/(?:href|src)\s*=\s*"[^"]*"/gi)?.join(' ') || '')) p.push('javascript: URL');
  return p;
}

test(`${PAYLOADS.length} payloads typed into the text box are text, never markup`, async () => {
  assert.ok(PAYLOADS.length >= 200, `${PAYLOADS.length} payloads`);
  const app = await openApp(browser, server.url);
  const { page } = app;
  try {
    const base = await injected(page);
    for (const p of PAYLOADS) {
      await page.$eval('#text', (e, v) => {
        e.value = v;
        e.dispatchEvent(new Event('input', { bubbles: true }));
      }, p);
      await page.waitForFunction((v) => window.attnvizDebug.text === v, p, { timeout: 60_000 });
    }
    await new Promise((r) => setTimeout(r, 300));
    const after = await injected(page);
    assert.equal(after.xss, 0, 'a payload ran');
    assert.equal(after.n, base.n, 'a payload added elements to the page');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('payloads in a permalink (opened, then followed on the page) and in the Save SVG download stay text', async () => {
  const permalink = (p) => `#${new URLSearchParams({ m: 'minilm-l6', t: p, p: 'q1' })}`;
  const [first, ...rest] = PAYLOADS.filter((_, i) => i % 8 === 0);
  // The first payload opens the page; the others are permalinks followed in it (the same
  // decoding, through hashchange): one page open instead of 26 (about a minute of CI).
  const app = await openApp(browser, `${server.url}${permalink(first)}`);
  const { page } = app;
  try {
    for (const p of [first, ...rest]) {
      if (p !== first) await page.evaluate((h) => { location.hash = h; }, permalink(p));
      await page.waitForFunction((v) => window.attnvizDebug.text === v, p, { timeout: 60_000 });
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
      const chunks = [];
      for await (const c of await download.createReadStream()) chunks.push(c);
      const svg = Buffer.concat(chunks).toString('utf8');
      assert.deepEqual(svgProblems(svg), [], `permalink payload ${p}`);
      const parsed = await page.evaluate((s) => {
        const doc = new DOMParser().parseFromString(s, 'image/svg+xml');
        const handlers = [...doc.querySelectorAll('*')].filter((el) => [...el.attributes].some((a) => /^on/i.test(a.name))).length;
        return { error: !!doc.querySelector('parsererror'), scripts: doc.querySelectorAll('script, foreignObject').length, handlers, desc: doc.querySelector('desc') && doc.querySelector('desc').textContent };
      }, svg);
      assert.deepEqual({ ...parsed, desc: undefined }, { error: false, scripts: 0, handlers: 0, desc: undefined }, `payload ${p}`);
      // The payload is in the file as the text it is (its <desc> names what was drawn).
      assert.ok(parsed.desc.endsWith(`“${p}”`), `the SVG's desc: ${parsed.desc}`);
      const st = await injected(page);
      assert.equal(st.xss, 0, `payload ran: ${p}`);
      assert.equal(await page.$eval('#side-title', (e) => e.children.length), 0, 'the side panel title holds text only');
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('payloads as widget attributes (text, model, view, layer, head) stay text', async () => {
  const { page, close } = await openWidget(browser, server.url, { model: 'minilm', text: 'start', editable: '' });
  try {
    await page.waitForFunction(() => document.getElementById('w').dataset.state === 'ready', null, { timeout: 120_000 });
    const base = await injected(page);
    for (const p of PAYLOADS.filter((_, i) => i % 3 === 0)) {
      await page.evaluate((v) => {
        const w = document.getElementById('w');
        w.setAttribute('view', v);
        w.setAttribute('layer', v);
        w.setAttribute('head', v);
        w.setAttribute('text', v);
      }, p);
      await widgetWait(page, (v) => document.getElementById('w').viewState.text === v && document.getElementById('w').dataset.state === 'ready', p);
    }
    // An unknown model named by a payload is reported as text.
    const bad = PAYLOADS[0];
    await page.evaluate((v) => document.getElementById('w').setAttribute('model', v), bad);
    await widgetWait(page, () => document.getElementById('w').dataset.state === 'error', null);
    const msg = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('.msg').textContent);
    assert.ok(msg.includes(bad), 'the message quotes the model name as text');
    await new Promise((r) => setTimeout(r, 300));
    const after = await injected(page);
    assert.equal(after.xss, 0, 'a payload ran');
    assert.equal(after.n, base.n, 'a payload added elements');
  } finally {
    await close();
  }
});
