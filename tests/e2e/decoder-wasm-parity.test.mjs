// SmolLM2 (GGUF, causal decoder) in the wasm build, in headless Chromium, against the native
// build: the same prompts and generation options give the same tokens, continuation, top-5
// candidates and attention maps (≤ 1e-5), and the wasm heap with the model loaded stays small.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { useServerAndBrowser } from './harness.mjs';
import { cliBinary } from './cli-helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = cliBinary();
const TOL = 1e-5;

let server;
let browser;
useServerAndBrowser({}, (s, b) => { server = s; browser = b; });

function native(text, args) {
  const out = execFileSync(BIN, ['attend', '--model', path.join(ROOT, 'models/smollm2'), '--text', text, ...args], { maxBuffer: 1 << 28 });
  return JSON.parse(out.toString('utf8'));
}

const CASES = [
  { text: 'The capital of France is', generate: 6, args: ['--generate', '6'] },
  { text: 'Ich möchte café crème — naïve façade, 2024 🎉', generate: 0, args: [] },
  { text: 'Once upon a time', generate: 5, temperature: 0.9, topK: 40, seed: 3, args: ['--generate', '5', '--temperature', '0.9', '--top-k', '40', '--seed', '3'] },
];

test('SmolLM2 in wasm (Chromium) equals the native build: tokens, continuation, top-5 and maps', { timeout: 300_000 }, async (t) => {
  const page = await (await browser.newContext()).newPage();
  // Any page of the server gives its origin; the module is loaded by hand, outside the app.
  await page.goto(new URL('embed.html', server.url).href, { waitUntil: 'load' });
  const heap = await page.evaluate(async () => {
    const wasm = await import(new URL('pkg/attnviz.js', location.href).href);
    const instance = await wasm.default({ module_or_path: new URL('pkg/attnviz_bg.wasm', location.href) });
    const manifest = await (await fetch(new URL('models/smollm2/manifest.json', location.href))).text();
    const name = JSON.parse(manifest).files[0];
    const bytes = new Uint8Array(await (await fetch(new URL(`models/smollm2/${name}`, location.href))).arrayBuffer());
    window.smollm2 = wasm.AttnModel.load(manifest, { [name]: bytes });
    return instance.memory.buffer.byteLength;
  });
  // The GGUF's 98 MB are copied in once and kept in their quantised blocks (not 540 MB of f32).
  t.diagnostic(`wasm memory after loading SmolLM2: ${(heap / 2 ** 20).toFixed(1)} MiB`);
  assert.ok(heap < 160 * 2 ** 20, `wasm memory after loading SmolLM2: ${(heap / 2 ** 20).toFixed(0)} MiB`);
  for (const c of CASES) {
    const want = native(c.text, c.args);
    const got = await page.evaluate(({ text, generate, temperature, topK, seed }) => {
      const r = window.smollm2.attend(text, { generate, temperature, topK, seed });
      return { ...r, attentions: r.attentions.map((a) => ({ ...a, data: Array.from(a.data) })) };
    }, c);
    assert.deepEqual(got.tokens, want.tokens, c.text);
    assert.equal(got.output_text, want.output_text, c.text);
    assert.equal(got.stop_reason, want.stop_reason, c.text);
    assert.deepEqual(got.generation.token_ids, want.generation.token_ids, c.text);
    assert.deepEqual(got.generation.sampling, want.generation.sampling, c.text);
    const tops = (g) => [...g.steps.map((s) => s.top), g.next];
    tops(got.generation).forEach((top, i) => {
      const other = tops(want.generation)[i];
      assert.deepEqual(top.map((t) => t.id), other.map((t) => t.id), `${c.text}: top-5 ids at step ${i}`);
      top.forEach((t, j) => assert.ok(Math.abs(t.p - other[j].p) <= TOL, `${c.text}: p ${t.p} vs ${other[j].p}`));
    });
    assert.equal(got.attentions.length, 30);
    let worst = 0;
    got.attentions.forEach((a, i) => {
      const b = want.attentions[i];
      assert.deepEqual([a.kind, a.layer, ...a.shape], [b.kind, b.layer, ...b.shape]);
      for (let k = 0; k < a.data.length; k++) worst = Math.max(worst, Math.abs(a.data[k] - b.data[k]));
    });
    t.diagnostic(`${c.text}: max |wasm − native| = ${worst.toExponential(2)}`);
    assert.ok(worst <= TOL, `${c.text}: wasm and native maps differ by ${worst}`);
  }
  // One forward for every view: attend asked for a head's internals gives step()'s, and every
  // block's scores carry the heads' induction score (text-independent, probed once).
  const one = await page.evaluate(() => {
    const head = { kind: 'decoder_self', layer: 3, head: 7 };
    const r = window.smollm2.attend('The capital of France is', { generate: 3, step: head });
    const s = window.smollm2.step('The capital of France is', head.kind, head.layer, head.head, { generate: 3 });
    const diff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
    return {
      fields: ['q', 'k', 'v', 'scores', 'probs', 'output'].map((f) => [f, r.step[f].length === s[f].length, diff(r.step[f], s[f])]),
      tokens: [r.step.query_tokens, s.query_tokens],
      induction: r.induction_tokens,
      scored: r.attentions.every((b) => b.scores.length === b.heads && b.scores.every((h) => typeof h.induction === 'number')),
      plain: 'step' in window.smollm2.attend('hi'),
    };
  });
  for (const [f, sameLength, worst] of one.fields) assert.ok(sameLength && worst === 0, `attend's step.${f} is step()'s (${worst})`);
  assert.deepEqual(one.tokens[0], one.tokens[1]);
  assert.equal(one.induction, 20);
  assert.ok(one.scored, 'every head of every block has its scores, induction included');
  assert.equal(one.plain, false, 'no step unless asked for');
  // A bad request is an Error, and the instance keeps working after it.
  const errors = await page.evaluate(() => {
    const out = [];
    // (an option misspelt is an error too, not ignored: topk for topK)
    for (const f of [() => window.smollm2.attend(''), () => window.smollm2.attend('hi', { generate: 2, temperature: -1 }), () => window.smollm2.step('hi', 'cross', 0, 0), () => window.smollm2.attend('hi', { generate: 2, temperature: 1, topk: 5 }), () => window.smollm2.heads('hi', { valueNorms: true }), () => window.smollm2.attend('hi', { step: { kind: 'cross', layer: 0, head: 0 } }), () => window.smollm2.step('hi', 'decoder_self', 0, 0, { step: { kind: 'decoder_self', layer: 0, head: 0 } })]) {
      try { f(); out.push('no error'); } catch (e) { out.push(e instanceof Error ? e.message : `not an Error: ${e}`); }
    }
    out.push(window.smollm2.attend('hi', { generate: 1 }).tokens.target.length);
    return out;
  });
  assert.match(errors[0], /empty/);
  assert.match(errors[1], /temperature/);
  assert.match(errors[2], /no cross attention/);
  assert.match(errors[3], /attend options: unknown field `topk`/);
  assert.match(errors[4], /heads options: valueNorms is an option of attend only/);
  assert.match(errors[5], /no cross attention at layer 0 head 0/);
  assert.match(errors[6], /step options: step is an option of attend only/);
  assert.equal(errors[7], 1);
});
