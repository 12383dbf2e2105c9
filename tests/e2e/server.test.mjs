// scripts/serve.py under load it should shrug off (issue 13, item 11): idle and half-open
// connections hold no thread and do not keep others waiting, a GET with a body is answered once,
// and every answer carries the pages' Content-Security-Policy and a Referrer-Policy, while prefix
// mounts, 304 and Range work as before. Loopback only; bounded counts; timings are generous bounds
// against a hang, never speed claims.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PREFIX = '/course/week3/';
let child;
let base; // http://127.0.0.1:PORT/course/week3/
let port;

// Started here rather than with the harness's startServer: the test needs the process id to count
// its threads.
before(async () => {
  child = spawn(process.env.PYTHON || 'python3', [path.join(ROOT, 'scripts', 'serve.py'), '--port', '0', '--prefix', PREFIX], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.resume();
  base = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('serve.py did not start within 15 s')), 15_000);
    child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = /served at (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`serve.py exited (${code})`)));
  });
  port = Number(new URL(base).port);
});

after(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(t);
  }
});

function threads() {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/^Threads:\s+(\d+)/m.exec(status)[1]);
}

function connect() {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Everything the server sends on one connection within `ms` after `bytes` are written. */
async function rawExchange(bytes, ms = 1500) {
  const s = await connect();
  const chunks = [];
  s.on('data', (d) => chunks.push(d));
  s.write(bytes);
  await new Promise((r) => setTimeout(r, ms));
  s.destroy();
  return Buffer.concat(chunks).toString('latin1');
}

const statusLines = (text) => text.match(/HTTP\/1\.[01] \d{3}/g) || [];

async function timedFetch(url, init = {}) {
  const t0 = Date.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(20_000) });
  await res.arrayBuffer();
  return { res, ms: Date.now() - t0 };
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
    assert.ok(n <= 40, `serve.py runs ${n} threads with 340 open connections (a thread per connection piles up)`);
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
