// `attnviz serve` (src/bin/attnviz/serve.rs) under what a course's students and a hostile client do (issues
// 13 and 27): idle and half-open connections hold no thread; slow readers get the whole model and
// lock nobody out; trickled bodies and heads cost their own connection only; compression was done
// at build time, so no request waits on another's; out of file descriptors it waits instead of
// spinning or calling existing files missing; a folder redirect never names another host. Prefix
// mounts, 304, Range, keep-alive and the pages' headers work as before. Loopback only; bounded
// counts; timings are generous bounds against a hang or a lock-out, never speed claims.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, mkdtempSync, mkdirSync, writeFileSync, rmSync, utimesSync } from 'node:fs';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { startServer } from './harness.mjs';
import { cliBinary } from './cli-helpers.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PREFIX = '/course/week3/';
let server;
let base; // http://127.0.0.1:PORT/course/week3/
let port;

before(async () => {
  server = await startServer({ prefix: PREFIX });
  base = server.url;
  port = server.port;
});

after(async () => {
  await server?.close();
});

function threads(pid = server.pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^Threads:\s+(\d+)/m.exec(status)[1]);
}

/** Resident memory of a process, in MB. */
function rssMb(pid = server.pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)[1]) / 1024;
}

/** CPU seconds a process has used (user + system). */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

function connect(p = port) {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port: p }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Everything the server sends on one connection within `ms` after `bytes` are written. */
async function rawExchange(bytes, ms = 1500, p = port) {
  const s = await connect(p);
  const chunks = [];
  s.on('data', (d) => chunks.push(d));
  s.on('error', () => {});
  s.write(bytes);
  await new Promise((r) => setTimeout(r, ms));
  s.destroy();
  return Buffer.concat(chunks).toString('latin1');
}

const statusLines = (text) => text.match(/HTTP\/1\.[01] \d{3}/g) || [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function timedFetch(url, init = {}) {
  const t0 = Date.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
  await res.arrayBuffer();
  return { res, ms: Date.now() - t0 };
}

/** GET with node's http (no automatic decompression): { res, body } once the body has ended.
 *  `onFirstChunk(res)` runs once, with the response paused, and may stall before resolving. */
function rawGet(url, headers = {}, onFirstChunk = null) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      const chunks = [];
      let first = true;
      res.on('data', async (d) => {
        chunks.push(d);
        if (first && onFirstChunk) {
          first = false;
          res.pause();
          await onFirstChunk(res);
          res.resume();
        }
      });
      res.on('end', () => resolve({ res, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

test('300 idle and 40 half-open connections hold no thread each, and the server still answers', { skip: !existsSync('/proc/self/status') && 'needs /proc' }, async () => {
  const socks = [];
  try {
    for (let i = 0; i < 300; i++) socks.push(await connect());
    for (let i = 0; i < 40; i++) {
      const s = await connect();
      s.write('GET /course/week3/ HT'); // half a request line, then nothing
      socks.push(s);
    }
    await new Promise((r) => setTimeout(r, 500));
    const n = threads();
    assert.ok(n <= 40, `the server runs ${n} threads with 340 open connections (a thread per connection piles up)`);
    // Bounded, generous: a hang (every worker held by a stalled client) would take the request
    // timeout or forever.
    const { res, ms } = await timedFetch(`${base}core/state.js`);
    assert.equal(res.status, 200);
    assert.ok(ms < 5_000, `an answer took ${ms} ms with 340 stalled connections open`);
    assert.ok(threads() <= 40);
  } finally {
    for (const s of socks) s.destroy();
  }
});

test('a GET with a body is answered once (the body is not read as a second request)', async () => {
  const inner = `GET ${PREFIX}nope HTTP/1.1\r\nHost: x\r\n\r\n`;
  const req = `GET ${PREFIX}core/state.js HTTP/1.1\r\nHost: x\r\nContent-Length: ${inner.length}\r\n\r\n${inner}`;
  const got = await rawExchange(req);
  assert.deepEqual(statusLines(got), ['HTTP/1.1 200'], `answers: ${statusLines(got).join(', ')}`);
  // The connection stays usable: a request after the body is answered, once.
  const two = await rawExchange(`${req}HEAD ${PREFIX}views/svg.js HTTP/1.1\r\nHost: x\r\n\r\n`);
  assert.deepEqual(statusLines(two), ['HTTP/1.1 200', 'HTTP/1.1 200']);
});

test('headers: the pages\' CSP (the same as their meta tag) on pages and scripts, a Referrer-Policy on all, beside COOP/COEP', async () => {
  const metas = ['index.html', 'embed.html', 'examples.html'].map((f) => {
    const html = readFileSync(path.join(ROOT, 'www', f), 'utf8');
    return /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)[1];
  });
  assert.equal(new Set(metas).size, 1, 'the three pages carry one policy');
  // On what runs as a document or a worker: pages, SVG, scripts (worker.js, sw.js).
  for (const p of ['', 'embed.html', 'worker/worker.js', 'sw.js', 'pkg/attnviz.js']) {
    const { res } = await timedFetch(`${base}${p}`);
    assert.equal(res.headers.get('content-security-policy'), metas[0], `CSP of /${p}`);
  }
  // Data gets none (widget.test.mjs opens a JSON file as a stand-in page of another site).
  assert.equal((await timedFetch(`${base}models/index.json`)).res.headers.get('content-security-policy'), null);
  for (const p of ['', 'worker/worker.js', 'models/index.json', 'no-such-file']) {
    const { res } = await timedFetch(`${base}${p}`);
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer', `Referrer-Policy of /${p}`);
    assert.equal(res.headers.get('cross-origin-opener-policy'), 'same-origin');
    assert.equal(res.headers.get('cross-origin-embedder-policy'), 'require-corp');
  }
});

test('unchanged: prefix redirect and 404 outside it, 304 on If-Modified-Since, Range, keep-alive', async () => {
  const redirect = await fetch(base.replace(/\/$/, ''), { redirect: 'manual' });
  assert.equal(redirect.status, 301);
  assert.equal(redirect.headers.get('location'), PREFIX);
  assert.equal((await timedFetch(`http://127.0.0.1:${port}/core/state.js`)).res.status, 404);
  const first = (await timedFetch(`${base}core/state.js`)).res;
  const lm = first.headers.get('last-modified');
  assert.equal((await timedFetch(`${base}core/state.js`, { headers: { 'If-Modified-Since': lm } })).res.status, 304);
  const whole = readFileSync(path.join(ROOT, 'www', 'core', 'state.js'));
  const part = await fetch(`${base}core/state.js`, { headers: { Range: 'bytes=10-19' } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 10-19/${whole.length}`);
  assert.deepEqual(Buffer.from(await part.arrayBuffer()), whole.subarray(10, 20));
  // Three requests on one connection, sent at once: three answers.
  const three = await rawExchange(`HEAD ${PREFIX} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(3));
  assert.equal(statusLines(three).length, 3);
  // Many requests in a row still work (no leak of workers or connections).
  for (let i = 0; i < 200; i++) assert.equal((await timedFetch(`${base}views/svg.js`)).res.status, 200);
});

// Issue 27, 1: the old server sent a compressed model in one write under a 15 s timeout, so a
// client that fell behind for longer got 18.4 of 21.1 MB.
test('a client that stops reading for 17 s still gets the whole compressed model, byte for byte', async () => {
  const file = path.join(ROOT, 'models', 'minilm', 'model.int8.safetensors');
  assert.ok(existsSync(`${file}.gz`), `${file}.gz is missing: make test-e2e runs scripts/precompress.mjs first`);
  const { res, body } = await rawGet(`${base}models/minilm/model.int8.safetensors`, { 'Accept-Encoding': 'gzip' }, () => sleep(17_000));
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-encoding'], 'gzip');
  assert.equal(res.headers.vary, 'accept-encoding');
  assert.equal(body.length, Number(res.headers['content-length']), 'the whole compressed body arrived');
  assert.ok(zlib.gunzipSync(body).equals(readFileSync(file)), 'it unpacks to the file');
});

// Issue 27, 2: 100 readers of the 90 MB weights at a byte a second pinned all 16 workers of the
// old server; `GET /` took 90 s.
test('100 clients that read nothing of the f32 weights lock nobody out, and cost little memory', async () => {
  const socks = [];
  try {
    for (let i = 0; i < 100; i++) {
      const s = await connect();
      s.on('error', () => {});
      s.write(`GET ${PREFIX}models/minilm/model.safetensors HTTP/1.1\r\nHost: x\r\n\r\n`);
      s.pause(); // read nothing: the server's writes stall once the socket buffers fill
      socks.push(s);
    }
    await sleep(1_000);
    const { res, ms } = await timedFetch(base);
    assert.equal(res.status, 200);
    assert.ok(ms < 3_000, `GET / took ${ms} ms beside 100 stalled readers`);
    const rss = rssMb();
    assert.ok(rss < 300, `the server holds ${rss.toFixed(0)} MB with 100 stalled readers of the weights`);
  } finally {
    for (const s of socks) s.destroy();
  }
});

// Issue 27, 2: 16 requests trickling a declared 1 MB body, or 16 request heads trickled, made the
// old server unreachable while they went on.
test('trickled bodies, trickled heads and an oversized head cost their own connections only', async () => {
  const socks = [];
  let trickling = true;
  try {
    for (let i = 0; i < 20; i++) {
      const body = await connect();
      body.on('error', () => {});
      body.write(`GET ${PREFIX} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n`);
      const head = await connect();
      head.on('error', () => {});
      head.write(`GET ${PREFIX} HTTP/1.1\r\nHost: x\r\nX-Pad: `);
      socks.push(body, head);
    }
    (async () => {
      while (trickling) {
        for (const s of socks) if (!s.destroyed) s.write('a');
        await sleep(200);
      }
    })();
    await sleep(1_000);
    const { res, ms } = await timedFetch(`${base}core/state.js`);
    assert.equal(res.status, 200);
    assert.ok(ms < 3_000, `an answer took ${ms} ms beside 40 trickling connections`);
    // A head larger than the server takes is refused (431), not buffered without end.
    const big = await rawExchange(`GET ${PREFIX} HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(200_000)}\r\n\r\n`, 1_000);
    assert.deepEqual(statusLines(big), ['HTTP/1.1 431'], `answers to a 200 kB head: ${statusLines(big).join(', ') || 'none'}`);
    assert.equal((await timedFetch(base)).res.status, 200);
  } finally {
    trickling = false;
    for (const s of socks) s.destroy();
  }
});

/** A server over its own root: www/index.html and a 24 MB compressible file with its variant. */
async function serverOverTempRoot() {
  const root = mkdtempSync(path.join(os.tmpdir(), 'attnviz-serve-'));
  mkdirSync(path.join(root, 'www'));
  writeFileSync(path.join(root, 'www', 'index.html'), '<!doctype html><title>t</title>');
  const big = path.join(root, 'www', 'big.json');
  const text = JSON.stringify(Array.from({ length: 1_500_000 }, (_, i) => (i * 7919) % 100_003));
  writeFileSync(big, text);
  writeFileSync(`${big}.gz`, zlib.gzipSync(text, { level: 1 }));
  const s = await startServer({ root });
  return { ...s, root, big, text, close: async () => { await s.close(); rmSync(root, { recursive: true, force: true }); } };
}

// Issue 27, 3: the old server gzipped a large file on its first request under one global lock
// (`GET /` with gzip waited 3.5 s) and kept every compressed copy (RSS 23.7 → 1,150 MB).
test('nothing is compressed at request time: a fresh variant is sent, a stale or missing one never made', async () => {
  const s = await serverOverTempRoot();
  try {
    const gzip = { 'Accept-Encoding': 'gzip' };
    const rssBefore = rssMb(s.pid);
    const pending = Array.from({ length: 4 }, () => rawGet(`${s.url}big.json`, gzip));
    const t0 = Date.now();
    const page = await rawGet(s.url, gzip);
    const ms = Date.now() - t0;
    assert.equal(page.res.statusCode, 200);
    assert.ok(ms < 2_000, `GET / took ${ms} ms beside four requests for a 24 MB file`);
    for (const { res, body } of await Promise.all(pending)) {
      assert.equal(res.headers['content-encoding'], 'gzip');
      assert.equal(zlib.gunzipSync(body).toString(), s.text);
    }
    // Edited after its variant was made: sent as it is (never the stale variant, never compressed now).
    const later = new Date(Date.now() + 5_000);
    utimesSync(s.big, later, later);
    const fresh = await rawGet(`${s.url}big.json`, gzip);
    assert.equal(fresh.res.headers['content-encoding'], undefined);
    assert.equal(fresh.body.toString(), s.text);
    // No variant at all: as it is.
    const page2 = await rawGet(`${s.url}index.html`, gzip);
    assert.equal(page2.res.headers['content-encoding'], undefined);
    const grown = rssMb(s.pid) - rssBefore;
    assert.ok(grown < 100, `the server grew by ${grown.toFixed(0)} MB serving 24 MB five times`);
  } finally {
    await s.close();
  }
});

// Issue 27, 4: with file descriptors exhausted the old server spun at 100 % CPU and answered 404
// for files that exist.
test('out of file descriptors it waits without spinning, and existing files are never called missing', async () => {
  const s = await startServer({ prefix: PREFIX, shell: 'ulimit -n 96 && exec "$@"' });
  const socks = [];
  try {
    const p = s.port;
    for (let i = 0; i < 150; i++) {
      const sock = await connect(p);
      sock.on('error', () => {});
      socks.push(sock);
    }
    await sleep(500);
    const cpu0 = cpuSeconds(s.pid);
    await sleep(2_000);
    const used = cpuSeconds(s.pid) - cpu0;
    assert.ok(used < 0.5, `the server used ${used.toFixed(2)} CPU-s in 2 s holding 150 connections on 96 file descriptors`);
    // Every accepted connection asks for a file that exists: each answer is the file or "busy".
    const answers = await Promise.all(socks.slice(0, 40).map((sock) => new Promise((resolve) => {
      let got = '';
      sock.on('data', (d) => { got += d.toString('latin1'); });
      sock.write(`GET ${PREFIX}core/state.js HTTP/1.1\r\nHost: x\r\n\r\n`);
      setTimeout(() => resolve(statusLines(got)), 1_500);
    })));
    const statuses = answers.flat();
    assert.ok(statuses.length > 0, 'the accepted connections were answered');
    assert.ok(statuses.every((l) => l === 'HTTP/1.1 200' || l === 'HTTP/1.1 503'), `answers: ${[...new Set(statuses)].join(', ')}`);
    for (const sock of socks) sock.destroy();
    socks.length = 0;
    await sleep(500);
    const { res } = await timedFetch(`${s.url}core/state.js`);
    assert.equal(res.status, 200);
  } finally {
    for (const sock of socks) sock.destroy();
    await s.close();
  }
});

// Issue 27, 5: `/%2Fviews` was redirected to `//views/`, which a browser takes for the host `views`.
test('a folder redirect stays on this server, whatever slashes the path decodes to', async () => {
  const s = await startServer();
  try {
    for (const p of ['%2Fviews', '%2F%2Fviews', '/views', 'views']) {
      const res = await fetch(`${s.url}${p}`, { redirect: 'manual' });
      assert.equal(res.status, 301, `/${p}`);
      const location = res.headers.get('location');
      assert.ok(location.startsWith('/') && !location.startsWith('//'), `/${p} → ${location}`);
      assert.equal(new URL(location, s.url).origin, new URL(s.url).origin);
    }
    assert.equal((await fetch(`${s.url}%2Fviews`)).url, `${s.url}views/`);
  } finally {
    await s.close();
  }
});

// Issue 44, 10: a valid multi-range request got 416; `serve --prefix ../../` printed a URL that
// answered 404; heads of up to 114,685 bytes were taken where the README says 64 KiB.
test('several ranges get the whole file, a prefix no request can reach is refused, heads stop at 64 KiB', async () => {
  const whole = readFileSync(path.join(ROOT, 'www', 'core', 'state.js'));
  for (const range of ['bytes=0-1,5-6', 'bytes=0-9, 20-29', 'bytes=-5,0-0']) {
    const res = await fetch(`${base}core/state.js`, { headers: { Range: range } });
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, `Range: ${range}`);
    assert.deepEqual(body, whole, `Range: ${range}`);
  }
  // One range still gets its bytes.
  assert.equal((await fetch(`${base}core/state.js`, { headers: { Range: 'bytes=0-1' } })).status, 206);

  for (const prefix of ['../../', '/course/../week3/', '/./', '/week?3/', '/week%203/']) {
    const run = spawnSync(cliBinary(), ['serve', '--port', '0', '--prefix', prefix, '--root', ROOT], { timeout: 5_000, encoding: 'utf8' });
    assert.equal(run.status, 2, `--prefix ${prefix}: ${run.stdout}${run.stderr}`);
    assert.match(run.stderr, /^attnviz: --prefix /, `--prefix ${prefix}`);
    assert.equal(run.stdout, '', `--prefix ${prefix}`);
  }
  // A prefix that needs encoding is printed encoded, and its URL serves the page.
  const odd = await startServer({ prefix: 'cours//été 3' });
  try {
    assert.match(odd.url, /\/cours\/%C3%A9t%C3%A9%203\/$/);
    assert.equal((await fetch(odd.url)).status, 200);
    const redirect = await fetch(odd.url.replace(/\/$/, ''), { redirect: 'manual' });
    assert.equal(redirect.headers.get('location'), '/cours/%C3%A9t%C3%A9%203/');
  } finally {
    await odd.close();
  }

  // Heads of exactly 64 KiB are answered, one byte more is 431, however the bytes arrive.
  const head = (bytes) => {
    const start = `GET ${PREFIX} HTTP/1.1\r\nHost: x\r\nX-Pad: `;
    return `${start}${'p'.repeat(bytes - start.length - 4)}\r\n\r\n`;
  };
  assert.equal(head(65_536).length, 65_536);
  for (const [bytes, status] of [[65_536, 200], [65_537, 431], [114_685, 431]]) {
    const answer = await rawExchange(head(bytes), 1_000);
    assert.deepEqual(statusLines(answer), [`HTTP/1.1 ${status}`], `a ${bytes}-byte head`);
  }
});

// Issue 27, 3: the old server's memory grew to 1,150 MB over such a probe and never came down.
test('after all of the above, the server holds little memory', async (t) => {
  await sleep(500);
  const rss = rssMb();
  t.diagnostic(`attnviz serve resident memory after the suite: ${rss.toFixed(1)} MB`);
  assert.ok(rss < 200, `${rss.toFixed(0)} MB`);
});
