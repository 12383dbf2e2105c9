// Unit tests without a browser (issue 13, item 9): the permalink caps its text visibly and
// consistently, the same number of characters on write and on read.
import test from 'node:test';
import assert from 'node:assert/strict';
import * as state from '../../www/core/state.js';

const { decodeState, defaultState, encodeState } = state;
const roundTrip = (s) => decodeState(`#${encodeState(s)}`);
const textIn = (hash) => new URLSearchParams(hash).get('t');
// (4000: what decodeState kept before the constant existed, so these tests say what fails on old code)
const N = state.PERMALINK_TEXT_MAX ?? 4000;

test('one constant, exported, caps the permalink text', () => {
  assert.equal(typeof state.PERMALINK_TEXT_MAX, 'number', 'state.js exports PERMALINK_TEXT_MAX');
  assert.ok(state.PERMALINK_TEXT_MAX >= 1000 && state.PERMALINK_TEXT_MAX <= 20000);
});

test('a long text: the link holds the first N characters, and reading it back gives the same', () => {
  const long = 'The cat sat on the mat. '.repeat(5000); // 120,000 characters, like a big paste
  const s = { ...defaultState(), text: long };
  const written = textIn(encodeState(s));
  assert.equal(written.length, N, 'the link is not rewritten with the whole text');
  assert.equal(written, long.slice(0, N));
  assert.equal(roundTrip(s).text, long.slice(0, N), 'read back: the same N characters');
  // What is read back is written back unchanged (no second cut, no drift).
  assert.equal(encodeState(roundTrip(s)), encodeState(s));
});

test('a text of N characters or fewer stays whole, and nothing says it was cut', () => {
  for (const text of ['', 'hello', 'x'.repeat(N)]) {
    const s = { ...defaultState(), text };
    assert.equal(roundTrip(s).text, text);
    assert.equal(state.permalinkTruncated(s), false);
    assert.equal(state.permalinkNotice(s), null);
  }
});

test('a longer text is flagged, with a sentence the page shows that names the number', () => {
  const s = { ...defaultState(), text: 'y'.repeat(N + 1) };
  assert.equal(state.permalinkTruncated(s), true);
  const notice = state.permalinkNotice(s);
  assert.equal(typeof notice, 'string');
  assert.match(notice, new RegExp(`first ${N.toLocaleString('en-US')} characters`));
});

test('characters, not UTF-16 units: emoji count once and a pair is never split', () => {
  const emoji = '\u{1F600}'.repeat(N + 10);
  const s = { ...defaultState(), text: emoji };
  const back = roundTrip(s).text;
  assert.equal([...back].length, N);
  assert.equal(back, '\u{1F600}'.repeat(N));
  // A cut that would fall inside a pair: N-1 ASCII then emoji.
  const mixed = `${'a'.repeat(N - 1)}\u{1F600}\u{1F600}`;
  const b2 = roundTrip({ ...defaultState(), text: mixed }).text;
  assert.equal(b2, `${'a'.repeat(N - 1)}\u{1F600}`);
  assert.ok(!/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(b2), 'no lone high surrogate at the cut');
});

test('a hand-made link longer than N is cut to the same N on read', () => {
  const p = new URLSearchParams({ m: 'minilm-l6', t: 'z'.repeat(N * 3) });
  assert.equal(decodeState(`#${p}`).text.length, N);
});

test('the compare text (c=) round-trips, is capped like the text, and the notice names which text was cut', () => {
  const s = { ...defaultState(), text: 'The cat sat.', compare: 'The dog sat.' };
  assert.equal(new URLSearchParams(encodeState(s)).get('c'), 'The dog sat.');
  assert.equal(roundTrip(s).compare, 'The dog sat.');
  assert.equal(roundTrip({ ...s, compare: '' }).compare, '', 'no c: no comparison');
  assert.equal(new URLSearchParams(encodeState({ ...s, compare: '' })).has('c'), false);
  const long = { ...s, compare: 'z'.repeat(N + 5) };
  assert.equal(roundTrip(long).compare, 'z'.repeat(N));
  assert.equal(state.permalinkTruncated(long), true);
  assert.match(state.permalinkNotice(long), /characters of the “Compare with…” text\.$/);
  assert.match(state.permalinkNotice({ ...long, text: 'y'.repeat(N + 1) }), /characters of each text\.$/);
  assert.match(state.permalinkNotice({ ...s, text: 'y'.repeat(N + 1) }), /characters of the text\.$/);
});
