// The core without a browser (issue 22): www/core/session.js against a worker that speaks the worker
// protocol (www/worker/protocol.js) in this process and answers with the native CLI's own results, the
// model's real numbers. Each host (page, widget, notebook) binds to these rules; here they are
// checked once, in milliseconds: at most one forward in flight and the newest text owed, every
// answer newer than the one drawn is drawn (marked as catching up), the pin rule, applyState
// (permalinks and widget attributes) and the clamped decode step.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliBinary } from './cli-helpers.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INDEX = JSON.parse(readFileSync(path.join(ROOT, 'models/index.json'), 'utf8'));

/** The CLI's JSON with every float array a Float32Array, as the wasm facade returns it. */
function asWasm(v, key = '') {
  if (Array.isArray(v) && v.length && typeof v[0] === 'number' && (key === 'data' || key === 'sentence_embedding')) return Float32Array.from(v);
  if (Array.isArray(v)) return v.map((x) => asWasm(x));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, asWasm(x, k)]));
  return v;
}

const cliMemo = new Map();
function cli(...args) {
  const key = args.join('\u0000');
  if (!cliMemo.has(key)) cliMemo.set(key, asWasm(JSON.parse(execFileSync(cliBinary(), args, { maxBuffer: 1 << 28 }).toString())));
  return cliMemo.get(key);
}

/**
 * The worker protocol, answered in this process. Requests are held until the test releases them
 * (`release()`: the oldest), so a test decides what is in flight; `posted` lists every request.
 */
class ProtocolWorker {
  static last = null;

  constructor() {
    this.posted = [];
    this.held = [];
    this.onmessage = null;
    ProtocolWorker.last = this;
  }

  postMessage(msg) {
    this.posted.push(msg);
    if (msg.type === 'attend') this.held.push(msg);
    else setTimeout(() => this.answer(msg));
  }

  /** Answer the oldest held forward. */
  release() {
    const msg = this.held.shift();
    assert.ok(msg, 'no forward in flight');
    this.answer(msg);
    return msg;
  }

  answer(msg) {
    const reply = (m) => this.onmessage({ data: { id: msg.id, ...m } });
    const dir = (id) => path.join(ROOT, 'models', INDEX.find((m) => m.id === id).dir);
    if (msg.type === 'init') return reply({ type: 'init', build: { id: 'simd', dir: 'pkg/', version: 'core-test' }, supported: ['bert', 'marian', 'llama'], models: INDEX });
    if (msg.type === 'load') {
      const m = INDEX.find((x) => x.id === msg.model);
      const r = cli('attend', '--model', dir(msg.model), '--text', m.example);
      const kinds = [...new Set(r.attentions.map((b) => b.kind))];
      const count = (k) => r.attentions.filter((b) => b.kind === k).length;
      const heads = (k) => r.attentions.find((b) => b.kind === k).heads;
      const info = { id: m.id, name: m.name, architecture: m.architecture, kinds, layers: Object.fromEntries(kinds.map((k) => [k, count(k)])), heads: Object.fromEntries(kinds.map((k) => [k, heads(k)])), kv_heads: Object.fromEntries(kinds.map((k) => [k, heads(k)])), generates: !!r.generation, special_tokens: [], example: m.example, max_positions: 512 };
      return reply({ type: 'loaded', info });
    }
    if (msg.type === 'cached') return reply({ type: 'cached', cached: false });
    if (msg.type === 'attend') {
      const args = ['attend', '--model', dir(msg.model), '--text', msg.text];
      if (msg.valueNorms) args.push('--measure', 'value-norm');
      return reply({ type: 'result', result: cli(...args), ms: 1 });
    }
    throw new Error(`the core test's worker has no answer for ${msg.type}`);
  }
}

let Session;
before(async () => {
  globalThis.Worker = ProtocolWorker;
  globalThis.location = new URL('http://127.0.0.1/');
  ({ Session } = await import('../../www/core/session.js'));
});

/** A started session on `model` with `text`, its updates logged; the first forward answered. */
async function started(text, model = 'minilm-l6') {
  const updates = [];
  const session = new Session({ name: 'core', onUpdate: (reason, s) => updates.push({ reason, text: s.resultFor && s.resultFor.text, catchingUp: s.catchingUp }) });
  // int8 weights only: the exact ones that 'auto' loads after the first map (a forward more) are
  // the subject of exact-weights.test.mjs, not of these lanes.
  const ready = session.start({ model, text, weights: 'int8' });
  await until(() => ProtocolWorker.last && ProtocolWorker.last.held.length === 1);
  ProtocolWorker.last.release();
  await ready;
  await until(() => session.result && session.resultFor.text === text);
  return { session, updates, worker: ProtocolWorker.last };
}

async function until(pred, ms = 10_000) {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms: ${pred}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const forwards = (w) => w.posted.filter((m) => m.type === 'attend').map((m) => m.text);

test('typing: one forward in flight, the newest text owed, every newer answer drawn while catching up', async () => {
  const { session, updates, worker } = await started('The cat');
  updates.length = 0;
  session.setText('The cat sat');
  session.setText('The cat sat on');
  session.setText('The cat sat on the mat');
  // One in flight ("The cat sat"); the two typed meanwhile collapse into the newest.
  assert.deepEqual(forwards(worker).slice(1), ['The cat sat']);
  worker.release();
  await until(() => session.resultFor.text === 'The cat sat');
  // Drawn although the box moved on: newer than what was on screen, and said to be behind.
  const drawn = updates.filter((u) => u.reason === 'result');
  assert.deepEqual(drawn.map((u) => [u.text, u.catchingUp]), [['The cat sat', true]]);
  await until(() => worker.held.length === 1);
  assert.deepEqual(forwards(worker).slice(1), ['The cat sat', 'The cat sat on the mat']);
  worker.release();
  await until(() => session.resultFor.text === 'The cat sat on the mat');
  assert.equal(session.catchingUp, false);
  assert.equal(session.pending, false);
  assert.deepEqual(session.result.tokens.source, cli('attend', '--model', path.join(ROOT, 'models/minilm'), '--text', 'The cat sat on the mat').tokens.source);
});

test('the pin: kept across layers and heads, cleared by another view, kind or token filter', async () => {
  const { session } = await started('The animal was tired.');
  const pin = { side: 'q', index: 2 };
  session.patch({ pin });
  session.patch({ layer: 3 });
  session.soloHead(4);
  assert.deepEqual(session.state.pin, pin, 'a layer or head change keeps the pinned token');
  session.patch({ view: 'heatmap' });
  assert.equal(session.state.pin, null, 'another view clears it');
  session.patch({ view: 'head', pin });
  assert.deepEqual(session.state.pin, pin, 'a patch that names a pin keeps it');
  session.patch({ hideSpecial: true });
  assert.equal(session.state.pin, null, 'hiding special tokens renumbers them: cleared');
  session.patch({ pin, hideSpecial: true });
  session.patch({ merge: false });
  assert.deepEqual(session.state.pin, pin, 'a filter left as it was keeps it');
  session.patch({ layer: 99 });
  assert.equal(session.state.layer, 5, 'a layer past the model is its last (6 layers)');
});

test('applyState: a widget attribute and a permalink take one path each, and never assign around the session', async () => {
  const { session, worker, updates } = await started('The cat sat on the mat.');
  const pin = { side: 'q', index: 1 };
  session.patch({ pin, layer: 2 });
  // A widget's text attribute changed: its other fields carried over, the old pin goes.
  updates.length = 0;
  session.applyState({ ...session.state, text: 'A dog ran.' });
  await new Promise((r) => setTimeout(r, 20));
  // Nothing is redrawn before its answer: the old maps under the new text (and a permalink
  // written with them) would describe another input.
  assert.deepEqual(updates.filter((u) => u.reason === 'state' || u.reason === 'result'), []);
  assert.equal(session.state.pin, null);
  assert.equal(session.state.layer, 2);
  assert.equal(forwards(worker).at(-1), 'A dog ran.');
  worker.release();
  await until(() => session.resultFor.text === 'A dog ran.');
  // A permalink with a new text and its own pin: the pin is one of the new tokens, kept.
  const linked = { ...session.state, text: 'The dog ran away.', pin: { side: 'q', index: 3 } };
  session.applyState(linked);
  assert.deepEqual(session.state.pin, { side: 'q', index: 3 });
  worker.release();
  await until(() => session.resultFor.text === 'The dog ran away.');
  assert.deepEqual(session.state.pin, { side: 'q', index: 3 });
  // Only the view differs: a patch (no forward), and the view's pin rule applies.
  const before = forwards(worker).length;
  session.applyState({ ...session.state, view: 'heatmap' });
  assert.equal(session.state.view, 'heatmap');
  assert.equal(session.state.pin, null);
  assert.equal(forwards(worker).length, before, 'no forward for a view change');
});

test('the cross view’s decode step is clamped to the rows it shows, in the state itself', async () => {
  const { session } = await started('The cat sat on the mat.', 'en-pt-tiny');
  const pieces = session.result.tokens.target.length;
  session.patch({ view: 'cross', step: 999 });
  assert.equal(session.state.step, pieces - 1);
  // Sub-words merged into words: fewer rows, and the step stays inside them.
  const { stepLabels } = await import('../../www/core/analysis.js');
  session.patch({ merge: true, step: 999 });
  const words = stepLabels(session.input(), session.state).length;
  assert.ok(words < pieces, `${words} words, ${pieces} pieces`);
  assert.equal(session.state.step, words - 1);
  session.patch({ step: 2 });
  assert.equal(session.state.step, 2);
});

test('the one answer cache keeps the entries used last, and one function builds every key', async () => {
  const { cacheKey, LruCache } = await import('../../www/core/cache.js');
  const c = new LruCache(2);
  c.set(cacheKey('m', 'a'), 1);
  c.set(cacheKey('m', 'b'), 2);
  assert.equal(c.get(cacheKey('m', 'a')), 1); // a is now the one used last
  c.set(cacheKey('m', 'c'), 3);
  assert.equal(c.get(cacheKey('m', 'b')), null, 'the entry used least recently went');
  assert.deepEqual([c.get(cacheKey('m', 'a')), c.get(cacheKey('m', 'c'))], [1, 3]);
  assert.notEqual(cacheKey('ab', 'c'), cacheKey('a', 'bc'), 'parts never run together');
  assert.equal(cacheKey({ n: 2, seed: 1 }), cacheKey({ n: 2, seed: 1 }));
});

test('one field table: a widget’s attributes and a permalink’s parameters read into the same state', async () => {
  const { decodeState, defaultState, FIELDS, fromAttributes, STATE_ATTRIBUTES } = await import('../../www/core/state.js');
  // Every attribute is a state field that a permalink also holds.
  for (const attr of STATE_ATTRIBUTES) assert.ok(FIELDS.find((f) => f.attr === attr).param, attr);
  const attrs = { model: 'en-pt', text: 'The cat sat.', view: 'cross', kind: 'cross', layer: '2', head: '3', query: '4', measure: 'value-norm', weights: 'exact', generate: '7', temperature: '0.5', 'top-k': '9', seed: '4', 'generate-step': '2' };
  const { state, problems } = fromAttributes((n) => attrs[n] ?? null, null, defaultState());
  assert.deepEqual(problems, []);
  const link = decodeState('#m=en-pt-tiny&t=The+cat+sat.&v=cross&k=cross&l=1&h=2&hs=2&q=3&ms=value-norm&w=exact&g=7&tp=0.5&tk=9&sd=4&gs=1');
  for (const f of FIELDS) assert.deepEqual(state[f.name], link[f.name], f.name);
  // What a widget cannot use is said, once per attribute, and leaves the field as it was.
  const bad = fromAttributes((n) => ({ view: 'nope', layer: '0', measure: 'loud' })[n] ?? null, null, defaultState());
  assert.deepEqual(bad.problems.map((p) => p.split('=')[0]), ['view', 'layer', 'measure']);
  assert.deepEqual([bad.state.view, bad.state.layer, bad.state.measure], ['head', 0, 'raw']);
});

test('one palette: theme.css is what the page and the widget import, and the views’ fallback colours are its own', async () => {
  const css = readFileSync(path.join(ROOT, 'www/theme.css'), 'utf8');
  const { LIGHT, DARK } = await import('../../www/views/common.js');
  for (const key of ['bg', 'fg', 'muted', 'faint', 'accent', 'hover']) {
    const m = new RegExp(`--av-${key}: light-dark\\((#[0-9a-f]{6}), (#[0-9a-f]{6})\\);`).exec(css);
    assert.ok(m, `theme.css has --av-${key}`);
    assert.deepEqual([LIGHT[key], DARK[key]], [m[1], m[2]], key);
  }
  // The wasm charts' fallbacks (src/wasm/charts.rs) are the same palette: the theme's colours,
  // the diverging scale's stops and the head colours their series cycle through.
  const rs = readFileSync(path.join(ROOT, 'src/wasm/charts.rs'), 'utf8');
  const { DIVERGING, HEAD_COLORS, chartTheme, diverging } = await import('../../www/views/common.js');
  // The views' own diverging scale ends and centres on the same stops.
  const hex = (rgb) => '#' + rgb.map((c) => c.toString(16).padStart(2, '0')).join('');
  for (const dark of [false, true]) {
    const stops = DIVERGING[dark ? 'dark' : 'light'];
    assert.deepEqual([-1, 0, 1].map((t) => hex(diverging(t, dark))), [stops.negative, stops.zero, stops.positive]);
  }
  for (const [name, theme] of [['LIGHT', LIGHT], ['DARK', DARK]]) {
    const body = new RegExp(`const ${name}: Palette = Palette \\{([^}]*)\\};`).exec(rs);
    assert.ok(body, `charts.rs has const ${name}: Palette`);
    const fallback = Object.fromEntries([...body[1].matchAll(/(\w+): "(#[0-9a-f]{6})"/g)].map((m) => [m[1], m[2]]));
    const { series, dark, ...given } = chartTheme(theme);
    assert.equal(dark, theme.dark);
    assert.deepEqual(given, fallback, `charts.rs ${name} is views/common.js's ${name} and DIVERGING.${dark ? 'dark' : 'light'}`);
    assert.deepEqual(series, HEAD_COLORS);
  }
  const series = /const SERIES: \[&str; \d+\] = \[([^\]]*)\];/.exec(rs);
  assert.ok(series, 'charts.rs has const SERIES');
  assert.deepEqual([...series[1].matchAll(/"(#[0-9a-f]{6})"/g)].map((m) => m[1]), HEAD_COLORS, 'charts.rs SERIES is views/common.js HEAD_COLORS');
  // Nothing else holds a palette: no colour custom property is declared outside theme.css.
  for (const f of ['www/styles.css', 'www/attention-viz.js', 'www/examples.html', 'www/index.html']) {
    assert.doesNotMatch(readFileSync(path.join(ROOT, f), 'utf8'), /--av-(bg|fg|muted|faint|accent|hover|panel|border|error)\s*:/, f);
  }
  assert.match(readFileSync(path.join(ROOT, 'www/styles.css'), 'utf8'), /@import url\("\.\/theme\.css"\)/);
});

test('one request lane for every kind: one in flight, the newest owed, every answer kept, a failure never loops', async () => {
  const { Lane } = await import('../../www/core/lane.js');
  let wantedKey = 'a';
  const asked = [];
  const kept = [];
  const pending = new Map(); // key → { resolve, reject }
  const lane = new Lane(
    () => (wantedKey && !kept.includes(wantedKey) ? { key: wantedKey, ask: () => new Promise((resolve, reject) => { asked.push(wantedKey); pending.set(asked.at(-1), { resolve, reject }); }) } : null),
    (request, answer, error) => {
      if (!error) kept.push(request.key);
    },
  );
  const done = lane.run();
  wantedKey = 'b';
  lane.run();
  wantedKey = 'c';
  lane.run();
  assert.deepEqual(asked, ['a'], 'one in flight; what was wanted meanwhile is owed, not asked');
  assert.equal(lane.inFlight.key, 'a');
  pending.get('a').resolve({ result: 'A' });
  await until(() => asked.length === 2);
  assert.deepEqual(kept, ['a'], 'the answer for a text left behind is kept');
  assert.deepEqual(asked, ['a', 'c'], 'only the newest of the owed is asked for');
  pending.get('c').reject(new Error('no'));
  await done;
  assert.equal(lane.inFlight, null);
  assert.deepEqual(kept, ['a']);
  await lane.run();
  assert.deepEqual(asked, ['a', 'c'], 'a request that failed is not asked again while it is still the one wanted');
  wantedKey = 'd';
  const d = lane.run();
  pending.get('d').resolve({ superseded: true });
  wantedKey = null;
  await d;
  assert.deepEqual(kept, ['a'], 'a superseded answer is not kept');
});

test('entropy has one definition: SmolLM2’s model view shows each causal head’s H as the head overview’s “broad” (to 1e-6), the same function on the drawn maps agrees, and a filtered or prefix map gets its own', async () => {
  const { entropy, headEntropies, headMatrix, prepareLayer } = await import('../../www/core/analysis.js');
  const { prefixResult } = await import('../../www/core/prefix.js');
  const grid = await import('../../www/views/grid.js');
  const model = path.join(ROOT, 'models/smollm2');
  const text = 'The cat sat on the mat because it was tired.';
  const result = cli('attend', '--model', model, '--text', text, '--format', 'json');
  const overview = cli('heads', '--model', model, '--text', text, '--format', 'json');
  const state = { kind: 'decoder_self', layer: 0, head: 0, agg: 'head', hideSpecial: false, merge: false };
  const shown = grid.entropies({ result, specials: [] }, state);
  const broad = new Map(overview.heads.filter((x) => x.kind === 'decoder_self').map((x) => [`${x.layer}/${x.head}`, x.broad]));
  assert.equal(broad.size, 30 * 9);
  let causalRowsMatter = 0;
  for (const b of result.attentions) {
    for (let h = 0; h < b.heads; h++) {
      const want = broad.get(`${b.layer}/${h}`);
      assert.ok(Math.abs(shown[b.layer][h] - want) <= 1e-6, `layer ${b.layer + 1} head ${h + 1}: the model view’s H ${shown[b.layer][h]}, the head overview’s ${want}`);
      // The JS definition on the same map, each causal row over the keys it can see, is Rust's (f32 sums).
      const visible = Int32Array.from({ length: b.query_len }, (_, i) => i + 1);
      const js = entropy(headMatrix(b, h), b.query_len, b.key_len, visible);
      assert.ok(Math.abs(js.normalised - want) < 1e-5, `layer ${b.layer + 1} head ${h + 1}: ${js.normalised} vs Rust ${want}`);
      // The old definition (every row ÷ ln of all keys) is another number on a causal map.
      if (Math.abs(entropy(headMatrix(b, h).slice(), b.query_len, b.key_len).normalised - want) > 0.05) causalRowsMatter++;
    }
  }
  assert.ok(causalRowsMatter > 100, `the causal normalisation changes ${causalRowsMatter} of 270 heads by more than 0.05`);
  // A scrubbed-back prefix is another map: its H is computed on it, not read from the full block.
  const n = result.tokens.source.length - 3;
  const prep = prepareLayer(prefixResult({ ...result, generation: result.generation || { prompt_len: n } }, n), state, []);
  if (prep.rows === n) {
    assert.equal(prep.scores, null);
    const full = headEntropies(prepareLayer(result, state, []));
    assert.notDeepEqual(headEntropies(prep).map((e) => e.normalised), full.map((e) => e.normalised));
  }
});

test('the heads’ scores come from Rust with every block, and the views’ entropy of an unfiltered map is the same number', async () => {
  const { entropy, headMatrix } = await import('../../www/core/analysis.js');
  const r = cli('attend', '--model', path.join(ROOT, 'models/minilm'), '--text', 'The cat sat on the mat.');
  for (const b of r.attentions) {
    assert.equal(b.scores.length, b.heads);
    for (let h = 0; h < b.heads; h++) {
      assert.equal(b.scores[h].head, h);
      const js = entropy(headMatrix(b, h), b.query_len, b.key_len).nats;
      assert.ok(Math.abs(js - b.scores[h].entropy) < 1e-4, `layer ${b.layer} head ${h}: ${js} vs Rust ${b.scores[h].entropy}`);
    }
  }
});
