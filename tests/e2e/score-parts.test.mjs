// Issue 43 item 1, the score parts: each key's pre-softmax score q·k/√d_k of one head drawn as
// the parts it exactly sums to (src/nn/score_parts.rs) — token·token … position·position and the
// bias terms in a first layer, the inputs' product and the biases' terms later, rotary pairs
// grouped fast / middle / slow in SmolLM2 — with a sentence that reads the bars. The drawn
// segments are checked against the CLI's `attnviz step` numbers; hover, click (pin), the keyboard
// cursor and the kind tabs are performed and what the reader then sees is checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openApp, openWidget, useServerAndBrowser, setViewport } from './harness.mjs';
import { cliJson, waitDrawn } from './cli-helpers.mjs';

const TEXT = 'The cat sat on the mat because it was warm.';
const VIEW = 'canvas#view';
const TOL = 1e-4;

let server;
let browser;
useServerAndBrowser({ prefix: '/' }, (s, b) => {
  server = s;
  browser = b;
}, { ownBrowser: true });

const cliStep = (model, text, kind, layer, head) => cliJson('step', '--model', `models/${model}`, '--text', text, '--kind', kind, '--layer', String(layer), '--head', String(head));

/** The bars' groups of a CLI step answer, as the issue names them: [{ name, parts }]. */
function expectedGroups(step) {
  const sp = step.score_parts;
  if (sp.basis === 'embedding') {
    const own = ['token·token', 'token·position', 'position·token', 'position·position'];
    return [...own.map((name) => ({ name, parts: [sp.names.indexOf(name)] })), { name: 'bias terms', parts: sp.names.map((n, i) => i).filter((i) => !own.includes(sp.names[i])) }];
  }
  if (sp.basis === 'bias') return sp.names.map((name, i) => ({ name, parts: [i] }));
  const n = sp.names.length;
  const size = Math.ceil(n / 3);
  return ['fast', 'middle', 'slow'].map((band, b) => ({ name: band, parts: [...Array(n).keys()].slice(b * size, (b + 1) * size) }));
}

/** Group g's value for query i and key j of a CLI step answer. */
function groupValue(step, g, i, j) {
  const [tq, tk] = [step.query_len, step.key_len];
  return g.parts.reduce((a, p) => a + step.score_parts.values[(p * tq + i) * tk + j], 0);
}

/** The group that sets key j apart from the query's other visible keys the most (the reading's). */
function dominant(step, i, j) {
  const tk = step.key_len;
  const visible = [...Array(tk).keys()].filter((k) => step.mask[i * tk + k] > 0.5);
  const groups = expectedGroups(step).filter((g) => !(step.score_parts.basis === 'bias' && (g.name === 'input·bias' || g.name === 'bias·bias')));
  let best = null;
  for (const g of groups) {
    const mean = visible.reduce((a, k) => a + groupValue(step, g, i, k), 0) / visible.length;
    const dev = groupValue(step, g, i, j) - mean;
    if (!best || Math.abs(dev) > Math.abs(best.dev)) best = { name: g.name, dev };
  }
  return best;
}

/** The drawn rows agree with the CLI: each segment its group's value, each bar the scaled score. */
function assertBars(drawn, step, qi, what) {
  const tk = step.key_len;
  const groups = expectedGroups(step);
  const visible = [...Array(tk).keys()].filter((j) => step.mask[qi * tk + j] > 0.5);
  assert.deepEqual(drawn.rows.map((r) => r.key), visible, `${what}: a row per key the query sees, in text order`);
  for (const row of drawn.rows) {
    assert.equal(row.segments.length, groups.length, `${what}: a segment per group`);
    row.segments.forEach((seg, k) => {
      assert.ok(seg.group.startsWith(groups[k].name.split(' ')[0]), `${what}: segment ${k} is ${groups[k].name}, drawn ${seg.group}`);
      const want = groupValue(step, groups[k], qi, row.key);
      assert.ok(Math.abs(seg.value - want) <= TOL, `${what}: key ${row.key} ${seg.group} drawn ${seg.value}, CLI ${want}`);
    });
    const sum = row.segments.reduce((a, s) => a + s.value, 0);
    const scaled = step.scaled[qi * tk + row.key];
    assert.ok(Math.abs(sum - scaled) <= TOL, `${what}: key ${row.key}'s bar sums to ${sum}, its score is ${scaled}`);
  }
}

const argmaxP = (step, qi) => {
  const tk = step.key_len;
  let best = 0;
  for (let j = 1; j < tk; j++) if (step.probs[qi * tk + j] > step.probs[qi * tk + best]) best = j;
  return best;
};

const hashOf = (o) => `#${new URLSearchParams(o).toString()}`;
const parts = () => window.attnvizDebug.view === 'parts' && window.attnvizDebug.partsRows() && window.attnvizDebug.partsRows().rows.length > 0;

test('page, MiniLM: the first layer’s bars are the CLI’s token/position/bias products; the sentence reads the most-attended key; hover, click and the keyboard cursor read others', async () => {
  const [LAYER, HEAD, Q] = [0, 2, 2];
  const step = cliStep('minilm', TEXT, 'encoder_self', LAYER, HEAD);
  assert.equal(step.score_parts.basis, 'embedding');
  const app = await openApp(browser, server.url + hashOf({ m: 'minilm-l6', t: TEXT, v: 'parts', l: LAYER, h: HEAD, q: Q, w: 'exact' }));
  const { page } = app;
  try {
    await setViewport(page, { width: 1280, height: 900 });
    await waitDrawn(page, parts);
    let drawn = await page.evaluate(() => window.attnvizDebug.partsRows());
    assertBars(drawn, step, Q, 'MiniLM layer 1');
    // The sentence under the table reads the key the query attends to most, names its score
    // and the group that sets it apart, as computed here from the CLI's numbers.
    const best = argmaxP(step, Q);
    assert.equal(drawn.readKey, best);
    const d = dominant(step, Q, best);
    assert.ok(drawn.reading.startsWith(`“${step.key_tokens[best]}” (p = `), drawn.reading);
    assert.ok(drawn.reading.includes(`${d.name} ${d.dev >= 0 ? 'raises' : 'lowers'} it most`), `${drawn.reading} — expected ${d.name} to set it apart (${d.dev})`);
    assert.match(await page.getAttribute(VIEW, 'aria-label'), new RegExp(`^Score parts of layer 1, head ${HEAD + 1}, query "${step.query_tokens[Q]}"`));

    // Hover another key's row: the side panel reads that key, and its row is the one read.
    const box = await page.locator(VIEW).boundingBox();
    const other = drawn.rows.find((r) => r.key !== best && r.key > 3);
    await page.mouse.move(box.x + 40, box.y + other.y + other.h / 2);
    await page.waitForFunction((tok) => document.getElementById('side-hint').textContent.startsWith(`“${tok}” (p = `), step.key_tokens[other.key]);
    const hint = await page.textContent('#side-hint');
    const dOther = dominant(step, Q, other.key);
    assert.ok(hint.includes(`${dOther.name} ${dOther.dev >= 0 ? 'raises' : 'lowers'} it most`), hint);
    // Click pins it: the permalink holds it, and the sentence stays on it when the pointer leaves.
    await page.mouse.click(box.x + 40, box.y + other.y + other.h / 2);
    await page.mouse.move(box.x + box.width - 4, box.y + 4);
    await page.waitForFunction((j) => location.hash.includes(`p=k${j}`), other.key);
    await waitDrawn(page, (j) => window.attnvizDebug.partsRows() && window.attnvizDebug.partsRows().readKey === j, other.key);
    // The keyboard cursor: ] walks the rows from the first, and the side panel reads each.
    await page.focus(VIEW);
    await page.keyboard.press(']');
    await page.waitForFunction((tok) => document.getElementById('side-hint').textContent.startsWith(`“${tok}” (p = `), step.key_tokens[0]);
    await page.keyboard.press(']');
    await page.waitForFunction((tok) => document.getElementById('side-hint').textContent.startsWith(`“${tok}” (p = `), step.key_tokens[1]);

    // A later layer: the inputs' product and the biases' terms, two of them the same for every key.
    const later = cliStep('minilm', TEXT, 'encoder_self', 3, HEAD);
    await page.keyboard.press('Escape');
    await page.selectOption('#layer', '3');
    await waitDrawn(page, () => window.attnvizDebug.state.layer === 3 && window.attnvizDebug.step && window.attnvizDebug.step.layer === 3 && window.attnvizDebug.partsRows());
    drawn = await page.evaluate(() => window.attnvizDebug.partsRows());
    assertBars(drawn, later, Q, 'MiniLM layer 4');
    for (const name of ['input·bias', 'bias·bias']) {
      const values = drawn.rows.map((r) => r.segments.find((s) => s.group === name).value);
      assert.ok(Math.max(...values) - Math.min(...values) < 1e-4, `${name} is the same for every key: ${values}`);
    }
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, SmolLM2: rotary pairs grouped fast / middle / slow, each the CLI’s sum; the periods named from its frequencies', async () => {
  const text = 'The cat sat on the mat because it';
  const [LAYER, HEAD] = [4, 1];
  const step = cliStep('smollm2', text, 'decoder_self', LAYER, HEAD);
  assert.equal(step.score_parts.basis, 'rotary');
  assert.equal(step.score_parts.names.length, step.d_k / 2);
  const Q = step.query_len - 1;
  const app = await openApp(browser, server.url + hashOf({ m: 'smollm2-135m', t: text, v: 'parts', l: LAYER, h: HEAD, q: Q }));
  const { page } = app;
  try {
    await waitDrawn(page, parts);
    const drawn = await page.evaluate(() => window.attnvizDebug.partsRows());
    assert.deepEqual(await page.evaluate(() => window.attnvizDebug.step.keyTokens), step.key_tokens);
    assertBars(drawn, step, Q, 'SmolLM2');
    const f = step.score_parts.frequencies;
    const period = (i) => Math.round((2 * Math.PI) / f[i]);
    assert.ok(drawn.rows[0].segments[0].group.startsWith(`fast pairs 1–11 (period ${period(0)}–${period(10)} tokens)`), drawn.rows[0].segments[0].group);
    // An earlier query sees fewer keys: the later ones are said to be masked.
    await page.selectOption('#query', '2');
    await waitDrawn(page, () => window.attnvizDebug.state.query === 2 && window.attnvizDebug.partsRows() && window.attnvizDebug.partsRows().rows.length === 3);
    assertBars(await page.evaluate(() => window.attnvizDebug.partsRows()), step, 2, 'SmolLM2 query 3');
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('page, the paper’s Transformer: masked decoder self-attention split into token and position, cross-attention by its biases, through the kind tabs', async () => {
  const text = 'The black cat sees a red ball';
  const [LAYER, HEAD, Q] = [0, 1, 3];
  const self = cliStep('paper', text, 'decoder_self', LAYER, HEAD);
  const cross = cliStep('paper', text, 'cross', LAYER, HEAD);
  assert.deepEqual([self.score_parts.basis, cross.score_parts.basis], ['embedding', 'bias']);
  const app = await openApp(browser, server.url + hashOf({ m: 'paper-transformer', t: text, v: 'parts', k: 'decoder_self', l: LAYER, h: HEAD, q: Q }));
  const { page } = app;
  try {
    await waitDrawn(page, parts);
    assertBars(await page.evaluate(() => window.attnvizDebug.partsRows()), self, Q, 'paper decoder_self');
    // Another kind starts again from its first query; the query picker then follows decode step Q.
    await page.click('[role=tab][data-kind=cross]');
    await waitDrawn(page, () => window.attnvizDebug.step && window.attnvizDebug.step.kind === 'cross' && window.attnvizDebug.partsRows());
    assertBars(await page.evaluate(() => window.attnvizDebug.partsRows()), cross, 0, 'paper cross, step 1');
    await page.selectOption('#query', String(Q));
    await waitDrawn(page, (q) => window.attnvizDebug.state.query === q && window.attnvizDebug.partsRows(), Q);
    const drawn = await page.evaluate(() => window.attnvizDebug.partsRows());
    assertBars(drawn, cross, Q, 'paper cross');
    assert.ok(drawn.reading.startsWith(`“${cross.key_tokens[argmaxP(cross, Q)]}”`), drawn.reading);
    assert.deepEqual(app.pageErrors, []);
  } finally {
    await app.close();
  }
});

test('widget: view="parts" draws the given head’s score parts for the given query', async () => {
  const w = await openWidget(browser, server.url, { model: 'minilm', text: TEXT, view: 'parts', layer: '1', head: '3', query: '3' });
  const { page } = w;
  try {
    const step = cliStep('minilm', TEXT, 'encoder_self', 0, 2);
    const label = () => document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label') || '';
    await page.waitForFunction((want) => (document.getElementById('w').shadowRoot.querySelector('canvas').getAttribute('aria-label') || '').startsWith(want), `Score parts of layer 1, head 3, query "${step.query_tokens[2]}"`, { timeout: 120_000 });
    const said = await page.evaluate(label);
    const best = argmaxP(step, 2);
    assert.ok(said.includes(`“${step.key_tokens[best]}” (p = `), said);
  } finally {
    await w.close();
  }
});
