// The page's pure modules without a browser: the array maths of www/core/analysis.js (rollout, head
// mean, entropy, special-token hiding, sub-word merging) and the permalink encoding of
// www/core/state.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyTransform, entropy, headMean, makeTransform, prepareLayer, rollout, tokensFor,
} from '../../www/core/analysis.js';
import { clampToResult, decodeState, defaultState, encodeState } from '../../www/core/state.js';

const close = (a, b, eps = 1e-6) => Math.abs(a - b) <= eps;

function block(layer, heads, t, fill) {
  const data = new Float32Array(heads * t * t);
  for (let h = 0; h < heads; h++) for (let i = 0; i < t; i++) for (let j = 0; j < t; j++) data[h * t * t + i * t + j] = fill(h, i, j);
  return { kind: 'encoder_self', layer, heads, query_len: t, key_len: t, data };
}

test('head mean averages the heads', () => {
  const b = block(0, 2, 2, (h, i, j) => (h === 0 ? (i === j ? 1 : 0) : 0.5));
  assert.deepEqual(Array.from(headMean(b)), [0.75, 0.25, 0.25, 0.75]);
  assert.deepEqual(Array.from(headMean(b, [1])), [0.5, 0.5, 0.5, 0.5]);
});

test('rollout: 0.5·A + 0.5·I, rows renormalised, multiplied through the layers', () => {
  // Layer 0: everyone attends to token 0. Layer 1: everyone attends to token 1.
  const l0 = block(0, 1, 2, (h, i, j) => (j === 0 ? 1 : 0));
  const l1 = block(1, 1, 2, (h, i, j) => (j === 1 ? 1 : 0));
  const r0 = rollout([l0, l1], 0);
  // A'0 = [[1, 0], [0.5, 0.5]]
  assert.deepEqual(Array.from(r0), [1, 0, 0.5, 0.5]);
  const r1 = rollout([l0, l1], 1);
  // A'1 = [[0.5, 0.5], [0, 1]];  R = A'1 · A'0 = [[0.75, 0.25], [0.5, 0.5]]
  assert.deepEqual(Array.from(r1), [0.75, 0.25, 0.5, 0.5]);
  for (let i = 0; i < 2; i++) assert.ok(close(r1[i * 2] + r1[i * 2 + 1], 1));
});

test('rollout differs from the head mean and equals a hand-computed product (prepareLayer, agg rollout vs mean)', () => {
  // Three tokens, two heads, two layers; every number below is exact in float32.
  // Layer 0: head 0 attends to token 0, head 1 to token 1  → mean row [0.5, 0.5, 0] for every query.
  // Layer 1: both heads attend to token 2                   → mean row [0, 0, 1] for every query.
  const l0 = block(0, 2, 3, (h, i, j) => (j === h ? 1 : 0));
  const l1 = block(1, 2, 3, (h, i, j) => (j === 2 ? 1 : 0));
  const r = { tokens: { source: ['a', 'b', 'c'], target: [] }, word_ids: { source: [0, 1, 2], target: [] }, attentions: [l1, l0] };
  const prep = (layer, agg) => Array.from(prepareLayer(r, { ...defaultState(), kind: 'encoder_self', layer, agg }, []).mean);

  // A'0 = 0.5·mean0 + 0.5·I (rows already sum to 1).
  const a0 = [0.75, 0.25, 0, 0.25, 0.75, 0, 0.25, 0.25, 0.5];
  // A'1 = 0.5·mean1 + 0.5·I;  R1 = A'1 · A'0:
  //   row 0 = 0.5·A'0[0] + 0.5·A'0[2] = [0.5, 0.25, 0.25]
  //   row 1 = 0.5·A'0[1] + 0.5·A'0[2] = [0.25, 0.5, 0.25]
  //   row 2 = A'0[2]                  = [0.25, 0.25, 0.5]
  const r1 = [0.5, 0.25, 0.25, 0.25, 0.5, 0.25, 0.25, 0.25, 0.5];
  assert.deepEqual(prep(0, 'mean'), [0.5, 0.5, 0, 0.5, 0.5, 0, 0.5, 0.5, 0]);
  assert.deepEqual(prep(0, 'rollout'), a0);
  assert.deepEqual(prep(1, 'mean'), [0, 0, 1, 0, 0, 1, 0, 0, 1]);
  assert.deepEqual(prep(1, 'rollout'), r1);
  // Asked again in the other order (prepareLayer caches per result): still each its own.
  assert.deepEqual(prep(1, 'mean'), [0, 0, 1, 0, 0, 1, 0, 0, 1]);
  assert.notDeepEqual(prep(1, 'rollout'), prep(1, 'mean'));
  // Cross-attention has no rollout (queries and keys are different sequences): the head mean.
  const cross = block(0, 2, 3, (h, i, j) => (j === h ? 1 : 0));
  cross.kind = 'cross';
  const rc = { tokens: { source: ['a', 'b', 'c'], target: ['x', 'y', 'z'] }, word_ids: { source: [0, 1, 2], target: [0, 1, 2] }, attentions: [cross] };
  const crossPrep = (agg) => Array.from(prepareLayer(rc, { ...defaultState(), kind: 'cross', layer: 0, agg }, []).mean);
  assert.deepEqual(crossPrep('rollout'), crossPrep('mean'));
});

test('entropy: 0 for one-hot rows, 1 (normalised) for uniform rows', () => {
  assert.equal(entropy(new Float32Array([1, 0, 0, 1]), 2, 2).normalised, 0);
  assert.ok(close(entropy(new Float32Array([0.5, 0.5, 0.5, 0.5]), 2, 2).normalised, 1));
});

test('hiding special tokens drops their rows and columns and renormalises each row', () => {
  const tok = { q: ['[CLS]', 'a', 'b', '[SEP]'], k: ['[CLS]', 'a', 'b', '[SEP]'], qWords: [null, 0, 1, null], kWords: [null, 0, 1, null] };
  const m = new Float32Array([
    0.25, 0.25, 0.25, 0.25,
    0.5, 0.25, 0.25, 0,
    0.6, 0.1, 0.3, 0,
    0, 0, 0, 1,
  ]);
  const tr = makeTransform(tok, { hideSpecial: true, specials: ['[CLS]', '[SEP]'] });
  assert.deepEqual(tr.rowLabels, ['a', 'b']);
  const out = applyTransform(tr, m, 4, 4);
  assert.ok(close(out[0], 0.5) && close(out[1], 0.5), Array.from(out).join());
  assert.ok(close(out[2], 0.25) && close(out[3], 0.75), Array.from(out).join());
  assert.match(tr.notes.join(' '), /renormalised/);
});

test('merging sub-words: keys summed, queries averaged, labels joined', () => {
  const tok = { q: ['play', '##ing', 'now'], k: ['play', '##ing', 'now'], qWords: [0, 0, 1], kWords: [0, 0, 1] };
  const m = new Float32Array([
    0.2, 0.3, 0.5,
    0.4, 0.4, 0.2,
    0.1, 0.1, 0.8,
  ]);
  const tr = makeTransform(tok, { merge: true });
  assert.deepEqual(tr.rowLabels, ['playing', 'now']);
  const out = applyTransform(tr, m, 3, 3);
  // row "playing" = mean of rows 0 and 1 with key columns 0+1 summed
  assert.ok(close(out[0], (0.5 + 0.8) / 2) && close(out[1], (0.5 + 0.2) / 2), Array.from(out).join());
  assert.ok(close(out[2], 0.2) && close(out[3], 0.8));
  // SentencePiece pieces: word-start marks are dropped from the label
  const sp = makeTransform({ q: ['\u2581sen', 'tou', '\u2581no'], k: ['\u2581sen', 'tou', '\u2581no'], qWords: [0, 0, 1], kWords: [0, 0, 1] }, { merge: true });
  assert.deepEqual(sp.rowLabels, ['sentou', 'no']);
});

test('a block’s queries and keys are the tokens of the sides the result names for it', () => {
  // As a translator's result ships them (Rust's ForwardOutput::sides_of): cross-attention's
  // queries are the target's tokens, its keys the source's.
  const side = (kind, q, k) => ({ kind, layer: 0, heads: 1, query_side: q, key_side: k });
  const r = { tokens: { source: ['a', 'b', '</s>'], target: ['x', '</s>'] }, word_ids: { source: [0, 1, null], target: [0, null] }, attentions: [side('encoder_self', 'source', 'source'), side('decoder_self', 'target', 'target'), side('cross', 'target', 'source')] };
  const t = tokensFor(r, 'cross');
  assert.deepEqual([t.q, t.k, t.qWords, t.kWords], [['x', '</s>'], ['a', 'b', '</s>'], [0, null], [0, 1, null]]);
  assert.deepEqual(tokensFor(r, 'decoder_self').k, ['x', '</s>']);
  // A decoder-only model's every fed position: its prompt (source), then what it generated.
  const g = { tokens: { source: ['a', 'b'], target: ['c'] }, attentions: [side('decoder_self', 'source_then_target', 'source_then_target')] };
  assert.deepEqual(tokensFor(g, 'decoder_self').q, ['a', 'b', 'c']);
  assert.deepEqual(tokensFor(g, 'decoder_self').qWords, [null, null, null]);
  // A block made without sides (another tool's) is over the source's tokens.
  assert.deepEqual(tokensFor({ tokens: { source: ['a', 'b'], target: ['c'] }, attentions: [{ kind: 'encoder_self' }] }, 'encoder_self').k, ['a', 'b']);
});

test('prepareLayer applies filters to every head and caches per result', () => {
  const b = block(0, 2, 3, (h, i, j) => (j === (i + h) % 3 ? 0.8 : 0.1));
  const r = { tokens: { source: ['[CLS]', 'hi', '[SEP]'], target: [] }, word_ids: { source: [null, 0, null], target: [] }, attentions: [b] };
  const s = { ...defaultState(), hideSpecial: true };
  const p = prepareLayer(r, s, ['[CLS]', '[SEP]']);
  assert.equal(p.rows, 1);
  assert.equal(p.heads.length, 2);
  assert.ok(close(p.heads[0][0], 1));
  assert.equal(prepareLayer(r, s, ['[CLS]', '[SEP]']), p);
});

test('permalink: every field round-trips, odd text included', () => {
  const s = {
    ...defaultState(),
    model: 'en-pt-tiny',
    text: 'Olá & <b>bold</b> #hash ?q=1 😀 猫 مرحبا',
    view: 'heatmap',
    kind: 'cross',
    layer: 1,
    head: 5,
    heads: [1, 5, 7],
    agg: 'mean',
    hideSpecial: true,
    merge: true,
    threshold: 0.15,
    query: 3,
    step: 2,
  };
  const back = decodeState(`#${encodeState(s)}`);
  for (const k of Object.keys(s)) assert.deepEqual(back[k], s[k], k);
});

test('permalink: bad values fall back to defaults instead of breaking the page', () => {
  const s = decodeState('#v=nope&k=evil&l=-3&h=x&a=sum&th=7&hs=a.b');
  const d = defaultState();
  assert.equal(s.view, d.view);
  assert.equal(s.kind, d.kind);
  assert.equal(s.layer, 0);
  assert.equal(s.head, 0);
  assert.equal(s.agg, d.agg);
  assert.equal(s.threshold, 1);
  assert.equal(s.heads, null);
  const c = clampToResult({ ...d, layer: 99, head: 99, kind: 'cross', view: 'cross' }, { kinds: ['encoder_self'], layers: { encoder_self: 6 }, heads: { encoder_self: 12 }, rows: { encoder_self: 5 }, targetLen: 0 });
  assert.equal(c.layer, 5);
  assert.equal(c.head, 11);
  assert.equal(c.kind, 'encoder_self');
  assert.equal(c.view, 'head');
});
