// Issue 13 in the real page (headless Chromium, real models): a saved SVG is well-formed XML for
// any text (item 10); a panic in the wasm reports its message and the worker recovers with its
// models (item 6); a failed load raises no unhandled rejection (item 6); a text longer than a
// permalink holds is cut visibly (item 9).
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { openApp, useServerAndBrowser, downloadBytes } from './harness.mjs';

let server;
let browser;
let app;
useServerAndBrowser({}, (s, b) => {
  server = s;
  browser = b;
});
// One page for the whole file, opened by the first test that needs it.
async function openPage() {
  if (!app) app = await openApp(browser, server.url);
  return app.page;
}
after(() => app?.close());

// Every code point XML 1.0 forbids (Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
// [#x10000-#x10FFFF]), lone surrogates included: checked on the JS string, before any encoding
// could hide a lone surrogate behind U+FFFD.
function forbiddenIn(s) {
  const bad = [];
  for (const ch of s) {
    const cp = ch.codePointAt(0);
    const ok = cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || cp >= 0x10000;
    if (!ok) bad.push(`U+${cp.toString(16).toUpperCase().padStart(4, '0')}`);
  }
  return bad;
}

/** Parse with expat (Python's strict XML parser): null when well-formed, else its complaint. */
function expatError(xml) {
  const r = spawnSync(process.env.PYTHON || 'python3', ['-c', 'import sys, xml.dom.minidom\nxml.dom.minidom.parseString(sys.stdin.buffer.read())'], { input: Buffer.from(xml, 'utf8'), encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 ? null : (r.stderr.trim().split('\n').pop() || `exit ${r.status}`);
}

/** Parse with the browser's XML parser: null when well-formed, else the parsererror text. */
function domParserError(page, xml) {
  return page.evaluate((x) => {
    const doc = new DOMParser().parseFromString(x, 'image/svg+xml');
    const err = doc.querySelector('parsererror');
    return err ? err.textContent.slice(0, 300) : null;
  }, xml);
}

const NASTY = [
  'nul\u0000', 'bell\u0007', 'vt\u000b', 'ff\u000c', 'esc\u001b', 'us\u001f',
  'nonchar\ufffe', 'nonchar\uffff', 'lone high \ud800 x', 'lone low \udc00 x', 'high at end \udbff',
  'ok: tab\tLF\nCR\r emoji \u{1F600} \u00e9 \ufffd',
];

test('SvgContext: text with every kind of forbidden character still gives well-formed XML', async () => {
  const page = await openPage();
  const svg = await page.evaluate(async (texts) => {
    const { SvgContext } = await import('./views/svg.js');
    const ctx = new SvgContext(400, 20 * texts.length);
    ctx.font = '13px sans-serif';
    texts.forEach((t, i) => ctx.fillText(t, 4, 16 + 20 * i));
    return ctx.toString();
  }, NASTY);
  assert.deepEqual(forbiddenIn(svg), [], 'no character XML forbids is left in the file');
  assert.equal(expatError(svg), null, 'expat parses the SVG');
  assert.equal(await domParserError(page, svg), null, 'DOMParser parses the SVG');
  // The rest of the text is kept as it was; what is replaced stays visible.
  assert.ok(svg.includes('emoji \u{1F600} \u00e9 \ufffd'), 'allowed characters are kept');
  assert.ok(svg.includes('nul\u2400'), 'U+0000 becomes the visible ␀');
});

test('the page\'s Save SVG is well-formed XML for a text full of forbidden characters, with each model', async () => {
  const page = await openPage();
  // The translator's SentencePiece tokens keep U+0000, U+FFFE and U+FFFF (MiniLM's do not): its
  // drawings are the ones that held them.
  for (const model of ['en-pt-tiny', 'minilm-l6']) {
    await page.selectOption('#model', model);
    await page.waitForFunction((m) => window.attnvizDebug.modelId === m, model, { timeout: 120_000 });
    const before = await page.evaluate(() => window.attnvizDebug.drawCount);
    // Typed in the page itself (as UTF-16 units: a lone surrogate would not survive the trip
    // through the test driver), as an input event like a paste.
    const units = [...`A ${NASTY.join(' ')} end`].flatMap((c) => [...Array(c.length).keys()].map((i) => c.charCodeAt(i)));
    await page.evaluate((u) => {
      const box = document.getElementById('text');
      box.value = String.fromCharCode(...u);
      box.dispatchEvent(new Event('input', { bubbles: true }));
    }, units);
    // (a text box keeps what it can: CR becomes LF; the drawn text is the box's value)
    await page.waitForFunction((n) => window.attnvizDebug.text === document.getElementById('text').value && window.attnvizDebug.drawCount > n, before, { timeout: 60_000 });
    const drawn = await page.evaluate(() => [...window.attnvizDebug.text].map((c) => c.codePointAt(0)));
    for (const cp of [0x0, 0x1b, 0xfffe, 0xffff, 0xd800, 0xdc00]) assert.ok(drawn.includes(cp), `the drawn text holds U+${cp.toString(16)}`);
    if (model === 'en-pt-tiny') {
      const tokens = await page.evaluate(() => window.attnvizDebug.tokens.join(''));
      assert.ok(tokens.includes('\u0000') && tokens.includes('\uffff'), 'the translator\'s tokens hold U+0000 and U+FFFF');
    }
    for (const view of ['head', 'heatmap']) {
      await page.evaluate((v) => {
        location.hash = location.hash.replace(/([#&])v=[^&]*/, '$1').replace(/&$/, '') + `&v=${v}`;
      }, view);
      await page.waitForFunction((v) => window.attnvizDebug.view === v, view, { timeout: 30_000 });
      const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
      const svg = (await downloadBytes(dl)).toString('utf8');
      assert.ok(svg.startsWith('<?xml'), `${model} ${view}: an SVG file`);
      assert.deepEqual(forbiddenIn(svg), [], `${model} ${view}: no forbidden character`);
      assert.equal(expatError(svg), null, `${model} ${view}: expat parses it`);
      assert.equal(await domParserError(page, svg), null, `${model} ${view}: DOMParser parses it`);
    }
  }
});

test('a text longer than a permalink holds: the link keeps the first 4,000 characters and the page says so', async () => {
  const page = await openPage();
  const N = 4000; // state.js's PERMALINK_TEXT_MAX (tests/e2e/robust-units.test.mjs)
  const long = 'Attention is all you need. '.repeat(200); // 5,400 characters
  await page.fill('#text', long);
  await page.waitForFunction((t) => window.attnvizDebug.text === t, long, { timeout: 120_000 });
  const got = await page.evaluate(() => ({
    t: new URLSearchParams(location.hash.slice(1)).get('t'),
    notice: document.getElementById('notice').hidden ? null : document.getElementById('notice').textContent,
  }));
  assert.equal(got.t, long.slice(0, N), 'the permalink holds exactly the first N characters');
  assert.match(got.notice || '', /permalink holds only the first 4,000 characters/);
  // Back to a short text: the link is whole again and the notice goes.
  await page.fill('#text', 'Short again.');
  await page.waitForFunction(() => window.attnvizDebug.text === 'Short again.', null, { timeout: 60_000 });
  assert.equal(await page.evaluate(() => document.getElementById('notice').hidden), true);
  assert.equal(await page.evaluate(() => new URLSearchParams(location.hash.slice(1)).get('t')), 'Short again.');
});

test('a failed load rejects its promise and raises no unhandled rejection', async () => {
  const page = await openPage();
  const out = await page.evaluate(async () => {
    const unhandled = [];
    const onUnhandled = (e) => unhandled.push(String(e.reason && e.reason.message));
    window.addEventListener('unhandledrejection', onUnhandled);
    const wc = await import('./worker/worker-client.js');
    let message = null;
    try {
      await wc.loadModel('no-such-model', () => {});
    } catch (e) {
      message = e.message;
    }
    await new Promise((r) => setTimeout(r, 500));
    window.removeEventListener('unhandledrejection', onUnhandled);
    return { message, unhandled };
  });
  assert.match(out.message || '', /not available/);
  assert.deepEqual(out.unhandled, []);
});

test('a panic in the wasm reports its message; the worker restarts with its models, and again', async () => {
  const page = await openPage();
  for (const round of [1, 2]) {
    const message = await page.evaluate(async (r) => {
      const wc = await import('./worker/worker-client.js');
      try {
        await wc.__panicForTest(`deliberate test panic #${r}`);
        return 'resolved';
      } catch (e) {
        return e.message;
      }
    }, round);
    assert.match(message, new RegExp(`panicked at .*deliberate test panic #${round}`), `round ${round}: the panic's own message, not "unreachable" (${message})`);
    assert.match(message, /restarted/);
    // The page goes on with the model it had, on the fresh instance, without reloading the page.
    const text = `After crash number ${round}, the model still answers.`;
    await page.fill('#text', text);
    await page.waitForFunction((t) => window.attnvizDebug.text === t, text, { timeout: 120_000 });
    const status = await page.evaluate(() => ({ error: document.getElementById('status').classList.contains('error'), tokens: window.attnvizDebug.tokens.length }));
    assert.equal(status.error, false);
    assert.ok(status.tokens > 5);
  }
  assert.deepEqual(app.pageErrors, []);
});
