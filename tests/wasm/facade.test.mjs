// The wasm facade (src/wasm/mod.rs) as shipped: each build `make build` writes — pkg/ (+simd128),
// pkg/relaxed/ (+relaxed-simd) and pkg/threads/ (shared memory, when built) — imported in headless
// Chromium from the test server (`attnviz serve`, whose COOP/COEP make the page cross-origin
// isolated, as shared memory needs), initialised with its default init (it fetches its own
// attnviz_bg.wasm), and handed the real models fetched over HTTP, as www/worker/library.js does. Each build
// must give the native CLI's numbers (run now: $ATTNVIZ_BIN, else target/release/attnviz) within
// 1e-5, return objects that satisfy schema/attend.schema.json with every float array a
// Float32Array, and answer bad input with an Error, never a panic: in wasm a panic aborts the
// instance (www/worker/engine.js has to restart it), so after each error the module must still compute
// and its panic hook must not have fired (globalThis.attnvizPanic, src/wasm/mod.rs).
//
// One page per build; each runs on the page's own thread (the threads build then has no helper
// workers: its GEMMs run on that one thread; tests/wasm/page-builds.test.mjs checks the page with
// its helpers).
/* global T -- the page's helpers (installInPage), used in page.evaluate() callbacks */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { startServer, launchBrowser } from '../e2e/harness.mjs';
import { cliBinary } from '../e2e/cli-helpers.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TOLERANCE = 1e-5;
const CAT = 'The cat sat on the mat.';
const CAT_PT = 'O gato sentou-se no tapete.';
const ACCENTS = 'Ich möchte café crème — naïve façade.';
const CJK = '日本語のテキストと emoji 🎉, naïve café';
const BUDGET = '1 GiB memory budget';

const BUILDS = [
  { id: 'simd', dir: 'pkg/', relaxed: false, threads: false },
  { id: 'relaxed', dir: 'pkg/relaxed/', relaxed: true, threads: false },
  { id: 'threads', dir: 'pkg/threads/', relaxed: true, threads: true },
];

// ------------------------------------------------------------------ the native side

/** `attnviz attend --model models/<dir> --text <text>`: its JSON. MiniLM reads the manifest's
 *  own files (the f32 model.safetensors), the set the page loads as `minilm-l6@exact`, and this
 *  test hands the wasm the same set. */
function nativeAttend(dir, text) {
  const out = execFileSync(cliBinary(), ['attend', '--model', `models/${dir}`, '--text', text], { cwd: ROOT, maxBuffer: 256 << 20 });
  return JSON.parse(out.toString());
}

// ------------------------------------------------------------------ the schema (what tests/schema.rs checks the CLI against)
const SCHEMA = JSON.parse(readFileSync(`${ROOT}schema/attend.schema.json`, 'utf8'));
const SCHEMA_URL = 'file:///attnviz/schema/attend.schema.json';

/** The schema's validators, plus what a schema cannot say: the lengths that follow from other
 *  fields (the checks of tests/support/schema.rs, which tests/schema.rs runs on the CLI). */
function makeChecker() {
  // The validator must speak the schema's draft: Ajv2020 is 2020-12.
  assert.equal(SCHEMA.$schema, 'https://json-schema.org/draft/2020-12/schema', 'schema/attend.schema.json changed its draft: pick the matching Ajv class');
  const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true });
  ajv.addKeyword({ keyword: 'x-wasm-type', schemaType: 'string' }); // a note for readers (Float32Array), checked below by path
  ajv.addSchema(SCHEMA, SCHEMA_URL);
  const compile = (fragment) => ajv.compile({ $ref: `${SCHEMA_URL}${fragment}` });
  const validators = { attend: compile(''), step: compile('#/$defs/step'), positions: compile('#/$defs/positions') };
  const validate = (which, v) => {
    if (!validators[which](v)) throw new Error(`${which} does not satisfy the schema: ${ajv.errorsText(validators[which].errors, { separator: '; ' })}`);
  };
  const len = (v, key) => (v && Array.isArray(v[key]) ? v[key].length : -1);
  const num = (v, key) => (v && Number.isInteger(v[key]) && v[key] >= 0 ? v[key] : -1);
  const expect = (ok, what) => {
    if (!ok) throw new Error(what());
  };
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  return {
    attend(v) {
      validate('attend', v);
      const ts = len(v.tokens, 'source');
      const tt = len(v.tokens, 'target');
      expect(len(v.word_ids, 'source') === ts && len(v.word_ids, 'target') === tt, () => 'word_ids and tokens differ in length');
      // A decoder-only model's self-attention runs over its prompt and then its continuation.
      const g = v.generation;
      const generating = g !== null && g !== undefined;
      if (generating) {
        expect(num(g, 'prompt_len') === ts && len(g, 'token_ids') === ts + tt && len(g, 'steps') === tt,
          () => `generation: prompt_len ${g.prompt_len}, ${len(g, 'token_ids')} ids and ${len(g, 'steps')} steps for ${ts} prompt and ${tt} generated tokens`);
      }
      const decoderLen = generating ? ts + tt : tt;
      for (const b of v.attentions ?? []) {
        const [h, q, k] = [num(b, 'heads'), num(b, 'query_len'), num(b, 'key_len')];
        const at = `${b.kind} layer ${b.layer}`;
        expect(same(b.shape, [h, q, k]), () => `${at}: shape ${JSON.stringify(b.shape)} is not [heads, query_len, key_len]`);
        expect(len(b, 'data') === h * q * k, () => `${at}: data holds ${len(b, 'data')} values, not ${h}×${q}×${k}`);
        const [wantQ, wantK] = b.kind === 'cross' ? [tt, ts] : b.kind === 'decoder_self' ? [decoderLen, decoderLen] : [ts, ts];
        expect(q === wantQ && k === wantK, () => `${at}: ${q}×${k} attention for ${ts} source and ${tt} target tokens`);
      }
      // Value norms, when present, mirror the attention blocks one for one.
      if (Array.isArray(v.value_norms)) {
        const maps = v.attentions ?? [];
        expect(v.value_norms.length === maps.length, () => `${v.value_norms.length} value-norm blocks for ${maps.length} attention blocks`);
        v.value_norms.forEach((n, i) => {
          const a = maps[i];
          const laidOut = ['kind', 'layer', 'heads', 'query_len', 'key_len', 'shape'].every((key) => same(n[key], a[key])) && len(n, 'data') === len(a, 'data');
          expect(laidOut, () => `value norms of ${a.kind} layer ${a.layer} are not laid out like its attention`);
          expect(Array.isArray(n.data) && n.data.every((x) => typeof x === 'number' && x >= 0), () => 'a value norm is negative');
        });
      }
    },
    step(v) {
      validate('step', v);
      const [q, k, d, m] = [num(v, 'query_len'), num(v, 'key_len'), num(v, 'd_k'), num(v, 'd_model')];
      expect(len(v, 'query_tokens') === q && len(v, 'key_tokens') === k, () => 'query/key tokens differ from query_len/key_len');
      const want = { q: q * d, k: k * d, v: k * d, scores: q * k, scaled: q * k, mask: q * k, probs: q * k, output: q * d,
        concat: q * m, projected: q * m, block_input: q * m, residual: q * m, normed: q * m };
      for (const [name, n] of Object.entries(want)) expect(len(v, name) === n, () => `${name} holds ${len(v, name)} values, not ${n}`);
    },
    positions(v) {
      validate('positions', v);
      const [p, d] = [num(v, 'positions'), num(v, 'dims')];
      expect(same(v.shape, [p, d]), () => `shape ${JSON.stringify(v.shape)} is not [positions, dims]`);
      expect(len(v, 'data') === p * d, () => `data holds ${len(v, 'data')} values, not ${p}×${d}`);
    },
  };
}

// ------------------------------------------------------------------ comparing with native
/** A wasm attend result (as toJson gave it) against the CLI's JSON for the same text: the same
 *  tokens, output text and blocks (kind, layer, length), every probability within TOLERANCE.
 *  → the largest difference. */
function assertSameAsNative(got, native, what) {
  assert.deepEqual(got.tokens.source, native.tokens.source, `${what}: source tokens`);
  assert.deepEqual(got.tokens.target, native.tokens.target, `${what}: target tokens`);
  assert.equal(got.output_text, native.output_text, `${what}: output text`);
  assert.equal(got.attentions.length, native.attentions.length, `${what}: attention blocks`);
  let worst = 0;
  let where = '';
  got.attentions.forEach((b, i) => {
    const n = native.attentions[i];
    assert.equal(b.kind, n.kind, `${what}: block ${i}'s kind`);
    assert.equal(b.layer, n.layer, `${what}: block ${i}'s layer`);
    assert.ok(Array.isArray(n.data) && n.data.every((x) => typeof x === 'number'), `${what}: the CLI's block ${i} data is a flat array of numbers`);
    assert.equal(b.data.length, n.data.length, `${what}: block ${i} (${b.kind} ${b.layer}) length`);
    for (let j = 0; j < b.data.length; j++) {
      const d = Math.abs(b.data[j] - n.data[j]);
      if (!(d <= worst)) {
        worst = d; // NaN too: it fails below
        where = `${b.kind} layer ${b.layer}, value ${j}: wasm ${b.data[j]}, native ${n.data[j]}`;
      }
    }
  });
  assert.ok(worst <= TOLERANCE, `${what}: wasm vs native max abs diff ${worst} > ${TOLERANCE} (${where})`);
  return worst;
}

// ------------------------------------------------------------------ in the page
/** Installed in each build's page: imports the build, and defines the helpers the tests call. */
async function installInPage(page, dir) {
  await page.evaluate(async (dir) => {
    const wasm = await import(new URL(`${dir}attnviz.js`, location.href).href);
    await wasm.default(); // fetches ${dir}attnviz_bg.wasm next to the glue
    const manifests = {};
    const bytes = {};
    // A model's manifest and files over HTTP, kept for the page (fetched once, as the Cache API would).
    async function files(dir) {
      if (!bytes[dir]) {
        const res = await fetch(new URL(`models/${dir}/manifest.json`, location.href));
        if (!res.ok) throw new Error(`models/${dir}/manifest.json: HTTP ${res.status}`);
        manifests[dir] = await res.json();
        const out = {};
        for (const name of manifests[dir].files) {
          const r = await fetch(new URL(`models/${dir}/${name}`, location.href));
          if (!r.ok) throw new Error(`models/${dir}/${name}: HTTP ${r.status}`);
          out[name] = new Uint8Array(await r.arrayBuffer());
        }
        bytes[dir] = out;
      }
      return bytes[dir];
    }
    const loaded = {};
    const T = {
      wasm,
      files,
      manifest: (dir) => JSON.stringify(manifests[dir]),
      /** The model of models/<dir>, loaded once per page from its manifest's files. */
      async model(dir) {
        if (!loaded[dir]) {
          const f = await files(dir);
          loaded[dir] = wasm.AttnModel.load(T.manifest(dir), f);
        }
        return loaded[dir];
      },
      /** A result's JSON value, as JSON.stringify would see it but with Float32Arrays as arrays; their
       *  paths go to `typed`. Anything JSON has no word for (undefined, a Map, a class instance, another
       *  typed array) throws, naming where it is. */
      toJson(v) {
        const typed = [];
        const walk = (x, path) => {
          if (x === null) return null;
          if (typeof x === 'boolean' || typeof x === 'string') return x;
          if (typeof x === 'number') return Number.isFinite(x) ? x : null;
          if (x instanceof Float32Array) {
            typed.push(path);
            return Array.from(x, (y) => (Number.isFinite(y) ? y : null));
          }
          if (Array.isArray(x)) return x.map((y, i) => walk(y, `${path}/${i}`));
          if (typeof x === 'object' && Object.getPrototypeOf(x) === Object.prototype) {
            return Object.fromEntries(Object.entries(x).map(([k, y]) => [k, walk(y, `${path}/${k}`)]));
          }
          const what = x === undefined ? 'undefined' : (typeof x === 'object' ? x.constructor?.name ?? 'an object' : typeof x);
          throw new Error(`${path || '/'}: ${what} is not a JSON value, a plain object or a Float32Array`);
        };
        return { value: walk(v, ''), typed };
      },
      /** What the panic hook left (src/wasm/mod.rs), if anything. */
      panic: () => (globalThis.attnvizPanic === undefined ? null : String(globalThis.attnvizPanic)),
      /** Whether the module still computes: a translation with the model loaded before. */
      async alive() {
        const m = await T.model('en-pt');
        return m.attend('The cat sat on the mat.').output_text;
      },
      /** Runs call(); → how it ended: its value's kind or the error thrown (an Error, a trap?), then
       *  the panic hook's message if it fired, and what the module computes next. */
      async attempt(call) {
        let outcome;
        try {
          const r = await call();
          outcome = { ok: true, truncated: r && typeof r === 'object' ? r.truncated : undefined };
          if (r && typeof r.free === 'function') r.free();
        } catch (e) {
          outcome = {
            ok: false,
            isError: e instanceof Error,
            trap: e instanceof WebAssembly.RuntimeError,
            name: e?.constructor?.name ?? typeof e,
            message: String(e?.message ?? e),
          };
        }
        outcome.panic = T.panic();
        try {
          outcome.next = await T.alive();
        } catch (e) {
          outcome.next = `FAILED: ${e?.constructor?.name}: ${e?.message ?? e}`;
        }
        return outcome;
      },
    };
    window.T = T;
  }, dir);
}

/** Asserts that attempt() ended as expected, the panic hook never fired, and the module still
 *  translates. */
function assertOutcome(o, what, { ok = false } = {}) {
  assert.equal(o.panic, null, `${what}: the wasm panicked (the instance is dead): ${o.panic}`);
  if (ok) {
    assert.ok(o.ok, `${what}: must succeed, threw ${o.name}: ${o.message}`);
  } else {
    assert.ok(!o.ok, `${what}: must be an error, but it succeeded`);
    assert.ok(o.isError && !o.trap && o.message.length > 0, `${what}: must throw an Error with a message, threw ${o.name}: ${o.message}`);
  }
  assert.equal(o.next, CAT_PT, `${what}: afterwards the module must still translate`);
}

// ------------------------------------------------------------------ the tests
const native = {};
let server;
let browser;
let checker;

before(async () => {
  checker = makeChecker();
  native.enptCat = nativeAttend('en-pt', CAT);
  native.enptAccents = nativeAttend('en-pt', ACCENTS);
  native.minilmCat = nativeAttend('minilm', CAT);
  native.minilmCjk = nativeAttend('minilm', CJK);
  server = await startServer();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

for (const build of BUILDS) {
  const present = existsSync(`${ROOT}${build.dir}attnviz.js`) && existsSync(`${ROOT}${build.dir}attnviz_bg.wasm`);
  // pkg/threads/ exists where make build found Debian's rustc-web (Makefile); the other two always.
  const skip = !present && build.id === 'threads' ? `${build.dir} was not built (make build skips it without Debian's rustc-web)` : false;

  describe(`the ${build.id} build (${build.dir})`, { skip }, () => {
    let context;
    let page;
    const pageErrors = [];
    const panicLogs = [];

    before(async () => {
      assert.ok(present, `${build.dir}attnviz.js and attnviz_bg.wasm: run make build`);
      context = await browser.newContext();
      page = await context.newPage();
      page.on('pageerror', (e) => pageErrors.push(String(e?.stack ?? e)));
      page.on('console', (m) => {
        if (m.type() === 'error' && /panicked/.test(m.text())) panicLogs.push(m.text());
      });
      // A blank document on the server's origin (the server answers a 404 with its COOP/COEP too):
      // the build's glue, wasm and the models come from the same server as for the page.
      await page.goto(`${server.url}wasm-facade-test`);
      assert.equal(await page.evaluate(() => globalThis.crossOriginIsolated), true, 'attnviz serve makes the page cross-origin isolated');
      await installInPage(page, build.dir);
    });
    after(async () => {
      await context?.close();
    });

    // The panic hook logs to the console too; no test may leave such a message or an uncaught error.
    const assertNoPanic = async () => {
      assert.equal(await page.evaluate(() => T.panic()), null, 'globalThis.attnvizPanic is set: the wasm panicked');
      assert.deepEqual(panicLogs, [], 'the panic hook logged');
      assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
    };

    test(`buildInfo: simd true, relaxed_simd ${build.relaxed}, threads ${build.threads}`, async () => {
      const info = await page.evaluate(() => T.toJson(T.wasm.buildInfo()).value);
      assert.equal(info.simd, true, JSON.stringify(info));
      assert.equal(info.relaxed_simd, build.relaxed, `${build.dir} must be built ${build.relaxed ? 'with' : 'without'} +relaxed-simd: ${JSON.stringify(info)}`);
      assert.equal(info.threads, build.threads, `${build.dir} must ${build.threads ? '' : 'not '}be the shared-memory build: ${JSON.stringify(info)}`);
      await assertNoPanic();
    });

    test(`the translator gives "${CAT_PT}" and matches the native CLI within ${TOLERANCE}, accents too; a cross head's step view reads Q from the decoder and K, V from the encoder`, async (t) => {
      const got = await page.evaluate(async ([cat, accents]) => {
        const m = await T.model('en-pt');
        const step = m.step(cat, 'cross', 1, 2);
        return { cat: T.toJson(m.attend(cat)).value, accents: T.toJson(m.attend(accents)).value, q: step.q_source, kv: step.kv_source };
      }, [CAT, ACCENTS]);
      assert.equal(got.cat.output_text, CAT_PT);
      const w1 = assertSameAsNative(got.cat, native.enptCat, `en-pt "${CAT}"`);
      const w2 = assertSameAsNative(got.accents, native.enptAccents, `en-pt "${ACCENTS}"`);
      assert.equal(got.q, 'decoder');
      assert.equal(got.kv, 'encoder');
      t.diagnostic(`${build.id}: en-pt max |wasm − native| ${w1.toExponential(2)} ("${CAT}"), ${w2.toExponential(2)} (accents)`);
      await assertNoPanic();
    });

    test(`MiniLM (f32 model.safetensors) matches the native CLI within ${TOLERANCE}, on English and on CJK with emoji and accents`, async (t) => {
      const got = await page.evaluate(async ([cat, cjk]) => {
        const m = await T.model('minilm');
        return { cat: T.toJson(m.attend(cat)).value, cjk: T.toJson(m.attend(cjk)).value };
      }, [CAT, CJK]);
      const w1 = assertSameAsNative(got.cat, native.minilmCat, `minilm "${CAT}"`);
      const w2 = assertSameAsNative(got.cjk, native.minilmCjk, `minilm "${CJK}"`);
      t.diagnostic(`${build.id}: MiniLM max |wasm − native| ${w1.toExponential(2)} (English), ${w2.toExponential(2)} (CJK)`);
      await assertNoPanic();
    });

    test('bad input is an Error, not a panic, and the module still computes after each', async () => {
      const outcomes = await page.evaluate(async () => {
        const f = await T.files('en-pt');
        const manifest = T.manifest('en-pt');
        const binName = 'model.enpt.intgemm.alphas.bin';
        const bin = f[binName];
        const tok = f['tokenizer.json'];
        const load = (files) => () => T.wasm.AttnModel.load(manifest, files);
        const out = [];
        // Truncated and bit-flipped model files.
        for (const cut of [0, 7, 100, 12_544, Math.floor(bin.length / 2), bin.length - 1]) {
          out.push([`the .bin cut to ${cut} bytes`, await T.attempt(load({ [binName]: bin.slice(0, cut), 'tokenizer.json': tok }))]);
        }
        const flipped = bin.slice();
        flipped[20] ^= 0x40; // a header length field
        out.push(['a bit flipped in the .bin header', await T.attempt(load({ [binName]: flipped, 'tokenizer.json': tok }))]);
        out.push(['a tokenizer.json that is not JSON', await T.attempt(load({ [binName]: bin, 'tokenizer.json': new TextEncoder().encode('{not json') }))]);
        out.push(['the .bin missing', await T.attempt(load({ 'tokenizer.json': tok }))]);
        out.push(['an unsupported architecture', await T.attempt(() => T.wasm.AttnModel.load('{"id":"x","architecture":"gpt-j","files":[]}', {}))]);
        const m = await T.model('en-pt');
        out.push(['empty text', await T.attempt(() => m.attend(''))]);
        out.push(['20,000 words', await T.attempt(() => m.attend('word '.repeat(20_000)))]);
        out.push(['a step of decoder_self 0 on "hi"', await T.attempt(() => m.step('hi', 'decoder_self', 0, 0))]);
        out.push(['a step of cross layer 9', await T.attempt(() => m.step('hi', 'cross', 9, 0))]);
        out.push(['a step of kind "nonsense"', await T.attempt(() => m.step('hi', 'nonsense', 0, 0))]);
        return out;
      });
      const byName = new Map(outcomes);
      assert.equal(byName.size, 15);
      for (const [what, o] of outcomes) {
        const ok = what === 'empty text' || what === '20,000 words';
        assertOutcome(o, what, { ok });
      }
      assert.equal(byName.get('20,000 words').truncated, true, 'a text past the model\'s positions is truncated, and says so');
      await assertNoPanic();
    });

    test('max_position_embeddings 33554944 (wraps in 32-bit sizes) and a precompiled_charsmap that is not base64 are load errors', async () => {
      const outcomes = await page.evaluate(async () => {
        const mini = await T.files('minilm');
        const config = JSON.parse(new TextDecoder().decode(mini['config.json']));
        if (typeof config.max_position_embeddings !== 'number') throw new Error('MiniLM config.json has no max_position_embeddings');
        config.max_position_embeddings = 33554944; // × 384 wraps to 512 × 384 in u32: this loaded, then panicked on a long text
        const wrapped = { ...mini, 'config.json': new TextEncoder().encode(JSON.stringify(config)) };
        const enpt = await T.files('en-pt');
        const tok = JSON.parse(new TextDecoder().decode(enpt['tokenizer.json']));
        if (typeof tok.normalizer?.normalizers?.[0]?.precompiled_charsmap !== 'string') throw new Error('en-pt tokenizer.json has no precompiled_charsmap where expected');
        tok.normalizer.normalizers[0].precompiled_charsmap = 'ALQC!AAC';
        const charsmap = { ...enpt, 'tokenizer.json': new TextEncoder().encode(JSON.stringify(tok)) };
        return [
          ['max_position_embeddings 33554944', await T.attempt(() => T.wasm.AttnModel.load(T.manifest('minilm'), wrapped))],
          ['a charsmap that is not base64', await T.attempt(() => T.wasm.AttnModel.load(T.manifest('en-pt'), charsmap))],
        ];
      });
      for (const [what, o] of outcomes) assertOutcome(o, what);
      await assertNoPanic();
    });

    test('attend, step and positions objects satisfy schema/attend.schema.json, with a Float32Array at exactly every float array', async () => {
      const got = await page.evaluate(async () => {
        const [minilm, enpt] = [await T.model('minilm'), await T.model('en-pt')];
        const models = { minilm, enpt };
        const cat = 'The cat sat on the mat.';
        const oooo = 'o o o o o o o o o o o o o';
        return {
          attend: [['minilm', cat], ['enpt', cat], ['enpt', oooo], ['enpt', cat, { lens: true }]].map(([m, text, options]) => [m, text, T.toJson(models[m].attend(text, options))]),
          step: [['minilm', 'encoder_self', 2, 5], ['enpt', 'cross', 1, 3]].map(([m, kind, l, h]) => [m, kind, T.toJson(models[m].step(cat, kind, l, h))]),
          positions: [['minilm', 'learned'], ['enpt', 'sinusoidal']].map(([m, kind]) => [m, kind, T.toJson(models[m].positions(16))]),
        };
      });
      for (const [m, text, { value, typed }] of got.attend) {
        try { checker.attend(value); } catch (e) { assert.fail(`${m} "${text}": ${e.message}`); }
        const want = value.attentions.map((_, i) => `/attentions/${i}/data`);
        if (m === 'minilm') want.push('/sentence_embedding');
        assert.deepEqual([...typed].sort(), want.sort(), `${m} "${text}": the Float32Arrays`);
      }
      assert.equal(got.attend[2][2].value.stop_reason, 'max_length', 'the translator stops at its length limit on "o o o …"');
      const lens = got.attend[3][2].value.logit_lens;
      assert.equal(lens.kind, 'cross', 'the translator’s logit lens is over its decode steps');
      assert.deepEqual(lens.top.at(-1).map((c) => c[0].token), got.attend[3][2].value.tokens.target, 'its last layer chose every target token');
      assert.equal(got.attend[1][2].value.logit_lens, undefined, 'no lens unless asked');
      const stepArrays = ['/block_input', '/concat', '/k', '/mask', '/normed', '/output', '/probs', '/projected', '/q', '/residual', '/scaled', '/score_parts/values', '/scores', '/v'];
      for (const [m, kind, { value, typed }] of got.step) {
        try { checker.step(value); } catch (e) { assert.fail(`${m} step ${kind}: ${e.message}`); }
        assert.deepEqual([...typed].sort(), stepArrays, `${m} step ${kind}: the Float32Arrays`);
      }
      for (const [m, kind, { value, typed }] of got.positions) {
        try { checker.positions(value); } catch (e) { assert.fail(`${m} positions: ${e.message}`); }
        assert.deepEqual([value.kind, value.positions], [kind, 16], `${m} positions`);
        assert.deepEqual(typed, ['/data'], `${m} positions: the Float32Arrays`);
      }
      await assertNoPanic();
    });

    test(`3 GiB of files are refused before they are copied, naming the "${BUDGET}"`, async () => {
      // 3 GiB of (lazily allocated, untouched) JS memory: copying them into wasm32 memory (at most
      // 4 GiB) aborted the module; their sizes alone must refuse them. (A tokenizer.json that large
      // is refused for its own size first, with its own words: a small one here.)
      const o = await page.evaluate(async () => {
        await T.files('minilm'); // its manifest
        const big = () => new Uint8Array(3 << 29);
        const files = { 'config.json': big(), 'model.safetensors': big(), 'tokenizer.json': new Uint8Array(1 << 20) };
        return T.attempt(() => T.wasm.AttnModel.load(T.manifest('minilm'), files));
      });
      assertOutcome(o, '3 GiB of model files');
      assert.ok(o.message.includes(BUDGET), o.message);
      await assertNoPanic();
    });
  });
}
