// Attention computed elsewhere, drawn by the widget without a model (core/supplied.js,
// Session.showSupplied, <attention-viz src> and showAttention): the maps of the native CLI for
// MiniLM and for the translator, handed over as a notebook or a course page would (per layer
// [heads][queries][keys], BertViz's argument names), must read out under the pointer as the
// numbers given, with no model or wasm downloaded; data that does not fit is refused with why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openWidget, useServerAndBrowser } from './harness.mjs';
import { cliAt, cliJson } from './cli-helpers.mjs';
import { drawnAfter, hoverCell, widgetState } from './widget-helpers.mjs';
import { suppliedHeads, suppliedResult } from '../../www/core/supplied.js';

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
});

/** The CLI's blocks of one kind as BertViz takes them: one [heads][queries][keys] list per layer. */
function nested(result, kind) {
  return result.attentions.filter((b) => b.kind === kind).sort((a, b) => a.layer - b.layer).map((b) => Array.from({ length: b.heads }, (_, h) => Array.from({ length: b.query_len }, (_, i) => Array.from({ length: b.key_len }, (_, j) => cliAt(b, h, i, j)))));
}

/** Requests for a model or a wasm build (a widget with supplied attention needs neither). */
function watchModelRequests(page) {
  const seen = [];
  page.on('request', (r) => {
    if (/\/(models|pkg)\/|worker\.js/.test(new URL(r.url()).pathname)) seen.push(r.url());
  });
  return seen;
}

test('<attention-viz src> draws MiniLM maps computed elsewhere, reads out their numbers, and downloads no model', async () => {
  const text = 'The animal didn\'t cross the street because it was too tired.';
  const cli = cliJson('attend', '--model', 'models/minilm', '--text', text);
  const data = { label: 'MiniLM, from the CLI', tokens: cli.tokens.source, attention: nested(cli, 'encoder_self'), specials: ['[CLS]', '[SEP]'] };
  // A course page of its own, beside the widget's files, with the JSON next to it.
  const context = await browser.newContext();
  const page = await context.newPage();
  try {
    const modelRequests = watchModelRequests(page);
    await page.route('**/lesson/attention.json', (route) => route.fulfill({ contentType: 'application/json', body: JSON.stringify(data) }));
    await page.route('**/lesson/index.html', (route) => route.fulfill({
      contentType: 'text/html',
      body: '<!doctype html><title>Lesson</title><script type="module" src="../attention-viz.js"></script>'
        + '<attention-viz id="w" src="attention.json" view="heatmap" layer="4" head="2" editable></attention-viz>',
    }));
    await page.goto(`${server.url}lesson/index.html`);
    await drawnAfter(page);
    const s = await widgetState(page);
    assert.match(s.foot, new RegExp(`^${cli.tokens.source.length} tokens`), s.foot);
    assert.match(s.foot, /MiniLM, from the CLI/, 'the footer names what the page said the maps are of');
    const hidden = await page.evaluate(() => document.getElementById('w').shadowRoot.querySelector('textarea').hidden);
    assert.equal(hidden, true, 'no text box: there is no model to recompute with');
    const block = cli.attentions.find((b) => b.kind === 'encoder_self' && b.layer === 3);
    for (const [i, j] of [[1, 2], [5, 9], [cli.tokens.source.length - 1, 0]]) {
      const got = await hoverCell(page, i, j);
      assert.ok(Math.abs(got.value - cliAt(block, 1, i, j)) < 6e-4, `${got.text}; supplied ${cliAt(block, 1, i, j)}`);
    }
    // The views that need a model's internals are not offered: view="step" draws the head view.
    await page.evaluate(() => document.getElementById('w').setAttribute('view', 'step'));
    await page.waitForFunction(() => document.getElementById('w').viewState.view === 'head', null, { timeout: 10_000 });
    // text and model attributes cannot move the maps off the data they are of.
    await page.evaluate(() => document.getElementById('w').setAttribute('text', 'Something else entirely.'));
    assert.equal((await page.evaluate(() => document.getElementById('w').viewState.text)), cli.tokens.source.join(' '));
    assert.deepEqual(modelRequests, [], 'no model, wasm or worker was fetched');
  } finally {
    await context.close();
  }
});

test('showAttention draws an encoder-decoder (the translator\'s maps, from the CLI); its cross-attention reads out as given', async () => {
  const text = 'The cat sat on the mat.';
  const cli = cliJson('attend', '--model', 'models/en-pt', '--text', text);
  const data = {
    label: 'opus-mt en→pt',
    encoder_tokens: cli.tokens.source,
    decoder_tokens: cli.tokens.target,
    encoder_attention: nested(cli, 'encoder_self'),
    cross_attention: nested(cli, 'cross'), // (its tiny decoder is recurrent: no self-attention)
  };
  const w = await openWidget(browser, server.url, {});
  const { page } = w;
  try {
    await page.evaluate((d) => {
      document.body.textContent = '';
      const el = document.createElement('attention-viz');
      el.id = 'w';
      el.setAttribute('view', 'heatmap');
      el.setAttribute('kind', 'cross');
      document.body.appendChild(el);
      el.showAttention(d);
    }, data);
    await drawnAfter(page);
    const state = await page.evaluate(() => document.getElementById('w').viewState);
    assert.equal(state.kind, 'cross');
    const block = cli.attentions.find((b) => b.kind === 'cross' && b.layer === 0);
    const got = await hoverCell(page, 1, 2);
    assert.ok(Math.abs(got.value - cliAt(block, 0, 1, 2)) < 6e-4, `${got.text}; supplied ${cliAt(block, 0, 1, 2)}`);
    assert.match(got.text, new RegExp(cli.tokens.source[2].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'the key is an encoder token');
    // Given its maps before it is in the document (a notebook's output is attached after it is
    // drawn), a widget still starts from its attributes.
    const detached = await page.evaluate((d) => {
      const el = document.createElement('attention-viz');
      el.setAttribute('view', 'heatmap');
      el.setAttribute('layer', '2');
      el.showAttention(d);
      document.body.appendChild(el);
      return el.viewState;
    }, data);
    assert.deepEqual([detached.view, detached.layer], ['heatmap', 1]);
  } finally {
    await w.close();
  }
});

test('attention that does not fit is refused with the argument and what was expected, in the widget too', async () => {
  const tokens = ['a', 'b', 'c'];
  const row = [[1, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]];
  const refused = (data) => {
    try {
      suppliedResult(data);
    } catch (e) {
      return e.message;
    }
    return 'accepted';
  };
  assert.match(refused({ tokens, attention: [[row], [row.slice(0, 2)]] }), /attention\[1\] is 2×3 \(queries × keys\) but there are 3 query and 3 key tokens/);
  assert.match(refused({ tokens, attention: [[[[1, 0, 0], [NaN, 0.5, 0.5], [0, 0, 1]]]] }), /attention\[0\]: head 0, query 1, key 0 is NaN/);
  assert.match(refused({ tokens, attention: [[[row], [row]]] }), /attention\[0\] has a batch of 2; pass one example/);
  assert.match(refused({ tokens, attention: [[[[2, 0, 0], [0.5, 0.5, 0], [0, 0, 1]]]] }), /sums to 2\.0000; attention rows sum to 1/);
  assert.match(refused({ tokens, attention: [[row, row], [row]] }), /attention\[1\] has 1 heads; layer 0 has 2/);
  assert.match(refused({ tokens: [], attention: [[row]] }), /tokens must be a non-empty list/);
  assert.match(refused({ tokens, attention: [{ shape: [1, 3, 3], data: new Float32Array(8) }] }), /attention\[0\]\.data holds 8 numbers; its shape \[1,3,3\] needs 9/);
  assert.equal(refused({ tokens, attention: [[row]], causal: true }), 'accepted');
  assert.equal(suppliedResult({ tokens, attention: [[row]], causal: true }).attentions[0].kind, 'decoder_self');
  // Head scores given with the maps (the head overview's): one per head, of these maps' kinds.
  const scored = (heads) => {
    const data = { tokens, attention: [[row, row]], head_scores: heads };
    try {
      return suppliedHeads(data, suppliedResult(data));
    } catch (e) {
      return e.message;
    }
  };
  const head = (h, more = {}) => ({ kind: 'encoder_self', layer: 0, head: h, entropy: 0.5, label: 'sink', score: 0.6, ...more });
  assert.equal(scored([head(0), head(1)]).heads.length, 2);
  assert.equal(scored(undefined), null, 'no scores: no head overview');
  assert.match(scored([head(0)]), /head_scores must hold one score object per head of every layer \(2\)/);
  assert.match(scored([head(0), head(0)]), /head_scores\[1\] is encoder_self, layer 0, head 0: not a head of these maps, or given twice/);
  assert.match(scored([head(0), head(1, { kind: 'cross' })]), /head_scores\[1\] is cross, layer 0, head 1/);
  assert.match(scored([head(0), head(1, { label: 'copying' })]), /head_scores\[1\]\.label is "copying"; one of sink, previous/);
  assert.match(scored([head(0, { entropy: NaN }), head(1)]), /head_scores\[0\]\.entropy is NaN; scores are finite/);

  const w = await openWidget(browser, server.url, {});
  const { page } = w;
  try {
    const said = await page.evaluate(([t, r]) => {
      document.body.textContent = '';
      const el = document.createElement('attention-viz');
      el.id = 'w';
      document.body.appendChild(el);
      const events = [];
      el.addEventListener('attention-error', (e) => events.push(e.detail.message));
      try {
        el.showAttention({ tokens: t, attention: [[r.slice(0, 2)]] });
      } catch (e) {
        return { thrown: e.message, events, shown: el.shadowRoot.querySelector('.msg').textContent };
      }
      return { thrown: null };
    }, [tokens, row]);
    assert.match(said.thrown || '', /attention\[0\] is 2×3/);
    assert.match(said.shown, /attention\[0\] is 2×3/, 'the widget says why where its map would be');
  } finally {
    await w.close();
  }
});
