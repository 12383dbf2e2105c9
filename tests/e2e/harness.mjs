// End-to-end test harness: serves the repo with `attnviz serve` (src/bin/attnviz/serve.rs) and drives the page in headless
// Debian Chromium through playwright-core (no downloaded browsers).
//
//   const server = await startServer({ prefix: '/course/week3/' });   // { url, close }
//   const browser = await launchBrowser();
//   const app = await openApp(browser, server.url);                     // waits for state 'ready'
//   app.page, app.consoleErrors, app.pageErrors, app.failedRequests, app.outsideRequests
//
// Environment: CHROMIUM_PATH (default /usr/bin/chromium), ATTNVIZ_E2E_READY_TIMEOUT_MS (120000),
// ATTNVIZ_E2E_VERBOSE=1 echoes the page's console to stderr, ATTNVIZ_BROWSER_WS (set by
// with-browser.mjs, which make test-e2e and test-wasm run under): the Chromium to connect to.
import net from 'node:net';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { before, after } from 'node:test';
import { cliBinary } from './cli-helpers.mjs';
import { recordCoverage } from './coverage.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const READY_TIMEOUT_MS = Number(process.env.ATTNVIZ_E2E_READY_TIMEOUT_MS || 120_000);
const VERBOSE = process.env.ATTNVIZ_E2E_VERBOSE === '1';

/** The default models (make models), by their catalogue ids. */
export const DEFAULT_MODELS = ['minilm-l6', 'en-pt-tiny', 'smollm2-135m', 'paper-transformer'];
/** A projector's and a desktop's window: where a lesson must show its map whole. */
export const PROJECTOR_SCREENS = [[1280, 720], [1920, 1080]];

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // The omnibox's popup is a WebUI page headless Chromium loads for every window: 0.24-0.44 CPU-s
  // of a page open's 1.9-2.3 (measured: A/B, five opens each, same machine), for a box no test sees.
  '--disable-features=WebUIOmniboxPopup',
];

/**
 * Start `attnviz serve` (the CLI the suites compare with, cli-helpers.mjs) on a free port (it
 * binds port 0 and prints the URL), wait until it answers HTTP, and return
 * { url, port, pid, close }. `url` ends with the prefix and '/'. `root`: the folder holding
 * www/, pkg/ and models/. `shell`: a command line to run
 * the server under instead (e.g. with a lower file limit), the server's own as "$@".
 */
export async function startServer({ prefix = '/', verbose = false, shell = null, root = ROOT } = {}) {
  const args = ['serve', '--port', '0', '--prefix', prefix, '--root', root, ...(verbose ? ['--verbose'] : [])];
  const command = shell ? ['sh', ['-c', shell, 'sh', cliBinary(), ...args]] : [cliBinary(), args];
  const child = spawn(command[0], command[1], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
  child.stdout.setEncoding('utf8');

  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error('attnviz serve did not print its URL within 15 s')), 15_000);
    function fail(err) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\nstdout: ${stdout}\nstderr: ${stderr}`));
    }
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = stdout.match(/attnviz is being served at (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.once('error', fail);
    exited.then(({ code, signal }) => fail(new Error(`attnviz serve exited early (code ${code}, signal ${signal})`)));
  });

  // Wait until it answers (any HTTP status counts: the server is up).
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const res = await fetch(url, { redirect: 'manual' });
      await res.arrayBuffer();
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`attnviz serve at ${url} does not answer: ${err.message}\nstderr: ${stderr}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  let closed = false;
  async function close() {
    if (closed) return;
    closed = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(t);
    }
  }
  return { url, port: Number(new URL(url).port), pid: child.pid, close, get stderr() { return stderr; } };
}

/** A free TCP port on 127.0.0.1 (for a server a test starts: JupyterLab, Vite's). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * Debian's Chromium headless: the one with-browser.mjs started for the whole suite when there is
 * one and neither other flags nor a browser of its `own` are asked for (close() then disconnects,
 * closing this file's contexts), else a new one (playwright manages a fresh user-data-dir). A file
 * that traces the main thread (main-thread.mjs) needs its own: a trace is the whole browser's,
 * one at a time.
 */
export async function launchBrowser(extraArgs = [], { own = false } = {}) {
  const shared = process.env.ATTNVIZ_BROWSER_WS;
  if (shared && !own && extraArgs.length === 0) return recordCoverage(await chromium.connect(shared, { timeout: 60_000 }));
  return recordCoverage(await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...CHROMIUM_ARGS, ...extraArgs],
    timeout: 60_000,
  }));
}

// One context per browser that openApp/openWidget reuse: its HTTP cache, Cache API (the models)
// and compiled wasm stay warm from one test to the next, so a test that is not about a first
// visit, storage or isolation does not pay for downloading and compiling everything again.
const sharedContexts = new WeakMap(); // browser → Promise<BrowserContext>

/**
 * The context a test opens its page in: the browser's shared one, or a new one of its own when
 * `fresh` (a first visit, storage, isolation), when it has context options, or when it sets
 * something up on the context (onContext). Returns { context, own }.
 */
async function contextFor(browser, { fresh = false, contextOptions = {}, onContext } = {}) {
  if (fresh || onContext || Object.keys(contextOptions).length) {
    const context = await browser.newContext(contextOptions);
    if (onContext) await onContext(context);
    return { context, own: true };
  }
  if (!sharedContexts.has(browser)) sharedContexts.set(browser, browser.newContext());
  return { context: await sharedContexts.get(browser), own: false };
}

/** Closes a page opened by openApp/openWidget: its own context with it, or only the page. */
async function closePage(page, context, own, detach = () => {}) {
  detach();
  if (own) await context.close();
  else await page.close();
}

/**
 * Open `url` in a page (contextFor says in which context), record console errors, uncaught page
 * errors, failed requests (network failures and HTTP >= 400) and requests leaving the page's
 * origin, then wait until the page reports document.body.dataset.state === 'ready'. Throws with
 * the page's error text if it reports 'error', or with the last state and console errors on
 * timeout. onContext(context) may be async (routes, init scripts); contextOptions go to
 * browser.newContext(). Either, or `fresh: true`, gives the page a new context of its own;
 * otherwise it opens in the browser's shared context. app.close() closes what was opened.
 */
export async function openApp(browser, url, { timeout = READY_TIMEOUT_MS, onContext, contextOptions = {}, fresh = false, settle = true } = {}) {
  // onContext runs before the first request (firstVisitBytes counts them all)
  const { context, own } = await contextFor(browser, { fresh, contextOptions, onContext });
  const page = await context.newPage();
  const origin = new URL(url).origin;
  const app = {
    page,
    context,
    url,
    consoleErrors: [],
    consoleMessages: [],
    pageErrors: [],
    failedRequests: [],
    outsideRequests: [],
    close: () => closePage(page, context, own, () => context.off('request', onRequest)),
  };

  page.on('console', (msg) => {
    const line = `${msg.type()}: ${msg.text()}`;
    app.consoleMessages.push(line);
    if (msg.type() === 'error') app.consoleErrors.push(msg.text());
    if (VERBOSE) process.stderr.write(`[page] ${line}\n`);
  });
  page.on('pageerror', (err) => app.pageErrors.push(String(err && err.stack ? err.stack : err)));
  page.on('requestfailed', (req) => {
    app.failedRequests.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText ?? 'failed'}`);
  });
  page.on('response', (res) => {
    if (res.status() >= 400) app.failedRequests.push(`${res.request().method()} ${res.url()}: HTTP ${res.status()}`);
  });
  // Service workers / dedicated workers' requests are reported on the context.
  function onRequest(req) {
    let u;
    try { u = new URL(req.url()); } catch { return; }
    if ((u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'ws:' || u.protocol === 'wss:')
        && u.origin !== origin) {
      app.outsideRequests.push(req.url());
    }
  }
  context.on('request', onRequest);

  await page.goto(url, { waitUntil: 'load', timeout: 60_000 });
  try {
    await page.waitForFunction(
      () => document.body && (document.body.dataset.state === 'ready' || document.body.dataset.state === 'error'),
      null,
      { timeout, polling: 100 },
    );
  } catch (err) {
    const state = await page.evaluate(() => document.body?.dataset.state).catch(() => undefined);
    throw new Error(`page did not become ready within ${timeout} ms (state=${state ?? 'unset'})\n`
      + describe(app) + `\n${err.message}`, { cause: err });
  }
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state === 'error') {
    const text = await page.evaluate(() => {
      const el = document.querySelector('[data-role="error"], [role="alert"], .error, #error');
      return document.body.dataset.error || (el && el.textContent) || document.body.innerText;
    });
    throw new Error(`page reported state=error: ${String(text).trim().slice(0, 2000)}\n` + describe(app));
  }
  // The first map of MiniLM comes from its int8 weights; the exact ones follow in the background
  // and the maps switch to them (issue 26). Tests read the settled page (settle: false, the first map).
  if (settle) await page.waitForFunction(() => !window.attnvizDebug || !window.attnvizDebug.computing, null, { timeout, polling: 100 });
  return app;
}

function describe(app) {
  const parts = [];
  if (app.pageErrors.length) parts.push(`page errors:\n  ${app.pageErrors.join('\n  ')}`);
  if (app.consoleErrors.length) parts.push(`console errors:\n  ${app.consoleErrors.join('\n  ')}`);
  if (app.failedRequests.length) parts.push(`failed requests:\n  ${app.failedRequests.join('\n  ')}`);
  return parts.join('\n');
}

/**
 * One server and one browser for a whole test file: started before its first test, closed after
 * its last. onReady(server, browser) hands them over. `ownBrowser`: see launchBrowser's `own`.
 */
export function useServerAndBrowser(serverOpts, onReady, { ownBrowser = false } = {}) {
  let server;
  let browser;
  before(async () => {
    server = await startServer(serverOpts);
    browser = await launchBrowser([], { own: ownBrowser });
    onReady(server, browser);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
}

/**
 * The bytes of a finished download (a Buffer). Read through playwright's stream, which works in
 * the suite's shared browser too, where download.path() does not (the file is the browser's).
 */
export async function downloadBytes(download) {
  const chunks = [];
  for await (const chunk of await download.createReadStream()) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The lesson page's widgets load as they come near the screen (loading="lazy"): scroll to each in
 *  turn until it has drawn (or failed), then back to the top, and wait for the page's ready state. */
export async function loadEveryWidget(page, timeout = 180_000) {
  const ids = await page.$$eval('attention-viz', (all) => all.map((w) => w.id));
  for (const id of ids) {
    await page.evaluate((i) => document.getElementById(i).scrollIntoView({ block: 'center' }), id);
    await page.waitForFunction((i) => ['ready', 'error'].includes(document.getElementById(i).dataset.state), id, { timeout });
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state), null, { timeout });
}

/** Replace the page's body with one <attention-viz id="w"> with these attributes. */
export function mountWidget(page, attrs) {
  return page.evaluate((a) => {
    document.body.textContent = '';
    const w = document.createElement('attention-viz');
    w.id = 'w';
    for (const [k, v] of Object.entries(a)) w.setAttribute(k, v);
    document.body.appendChild(w);
  }, attrs);
}

/** A page on the examples page, holding one <attention-viz id="w"> with `attrs`: { page, close }.
 *  It opens in the browser's shared context unless `fresh` or `onContext` (a context of its own,
 *  given to onContext before the first request). */
export async function openWidget(browser, url, attrs, { fresh = false, onContext } = {}) {
  const { context, own } = await contextFor(browser, { fresh, onContext });
  const page = await context.newPage();
  const close = () => closePage(page, context, own);
  try {
    await page.goto(`${url}examples.html`);
    await mountWidget(page, attrs);
    return { page, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** Define window.rightInkColumn(canvas) in the page: its rightmost device-pixel column that is not
 *  the background colour (the top-left pixel), or -1. */
export function installInkProbe(page) {
  return page.evaluate(() => {
    window.rightInkColumn = (c) => {
      const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      const bg = [data[0], data[1], data[2]];
      let rightInk = -1;
      for (let y = 0; y < height; y += 2) {
        for (let x = width - 1; x > rightInk; x--) {
          const i = (y * width + x) * 4;
          if (Math.abs(data[i] - bg[0]) + Math.abs(data[i + 1] - bg[1]) + Math.abs(data[i + 2] - bg[2]) > 30) {
            rightInk = x;
            break;
          }
        }
      }
      return rightInk;
    };
  });
}

/**
 * A first visit to `url` in a fresh context (empty HTTP cache, no service worker yet): every
 * response's bytes as they came over the wire (Playwright's request.sizes(): headers + encoded
 * body, i.e. after Content-Encoding; the page's and its workers' requests, counted on the context)
 * until the first map is drawn (openApp's 'ready', settle: false). MiniLM's exact f32 weights,
 * which the page fetches once the first map is drawn (issue 26), are held back until then: `more()`
 * lets them through and → the bytes of every response since. Returns { total, files: [[path,
 * bytes], …] largest first, app, more } (close app when done).
 */
export async function firstVisitBytes(browser, url) {
  const finished = [];
  let release;
  const held = new Promise((r) => { release = r; });
  const app = await openApp(browser, url, {
    settle: false,
    onContext: async (context) => {
      context.on('requestfinished', (req) => {
        // (a request that finishes as the page closes has no sizes left to read: none counted)
        finished.push(req.sizes().then((s) => [new URL(req.url()).pathname, s.responseHeadersSize + s.responseBodySize], () => [new URL(req.url()).pathname, 0]));
      });
      await context.route('**/minilm/model.safetensors', async (route) => {
        await held;
        await route.continue();
      });
    },
  });
  const sorted = async (list) => (await Promise.all(list)).sort((a, b) => b[1] - a[1]);
  const files = await sorted(finished.splice(0));
  const more = async (until) => {
    release();
    await until();
    return sorted(finished.splice(0));
  };
  return { total: files.reduce((a, [, n]) => a + n, 0), files, app, more };
}

/** Moves the mouse over cell (row 1, column 2) of the step view's panel `id` (scrolling the
 *  map's box, then the window, until it is in view) and returns the panel. */
export async function hoverStepPanel(page, id) {
  const panel = (await page.evaluate(() => window.attnvizDebug.stepPanels())).find((p) => p.id === id);
  if (!panel) throw new Error(`the step view has no panel ${id}`);
  await page.evaluate((y) => {
    document.getElementById('canvas-wrap').scrollTop = Math.max(0, y - 150);
    const top = document.querySelector('canvas#view').getBoundingClientRect().top + y;
    window.scrollBy(0, top - 300);
  }, panel.y);
  const cbox = await page.locator('canvas#view').boundingBox();
  await page.mouse.move(cbox.x + panel.x + 2.5 * panel.cw, cbox.y + panel.y + 1.5 * panel.ch);
  return panel;
}

const staticServers = [];

/** A plain static server of `folder` (python3 -m http.server: no headers of ours, as a host's
 *  static site would be) → its URL; stopStaticServers() stops every one started. */
export function staticServer(folder) {
  return new Promise((resolve, reject) => {
    const p = spawn('python3', ['-u', '-m', 'http.server', '--bind', '127.0.0.1', '--directory', folder, '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
    staticServers.push(p);
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
      const m = /port (\d+)/.exec(out);
      if (m) resolve(`http://127.0.0.1:${m[1]}/`);
    });
    p.on('exit', (code) => reject(new Error(`http.server exited (${code}): ${out}`)));
  });
}

export function stopStaticServers() {
  for (const p of staticServers.splice(0)) p.kill();
}

/**
 * Resize the page's viewport and, when a map is drawn there (the page's or a widget #w's), wait
 * for its redraw: a view fits its box (the page's: the height left on the screen; a widget's: 78%
 * of the window's), so a new height lays it out anew, and geometry read before that redraw would
 * be the old one.
 */
export async function setViewport(page, size) {
  const now = page.viewportSize();
  const drawCount = () => page.evaluate(() => (window.attnvizDebug ? window.attnvizDebug.drawCount : Number(document.getElementById('w')?.dataset.drawCount || 0)));
  // The box's width and the height views fit, once the resize has been handled (two frames): a
  // new window that leaves them as they were (the page's box at its least height) is not redrawn.
  const boxSize = () => page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
    const box = document.getElementById('canvas-wrap') || document.getElementById('w')?.shadowRoot?.querySelector('.wrap');
    done(box ? `${box.clientWidth} ${getComputedStyle(box).maxHeight}` : null);
  }))));
  const before = await drawCount();
  const boxBefore = before ? await boxSize() : null;
  await page.setViewportSize(size);
  if (!before || (now && now.width === size.width && now.height === size.height)) return;
  if (boxBefore && boxBefore === await boxSize()) return;
  await page.waitForFunction((n) => {
    const d = window.attnvizDebug;
    if (d) return d.drawCount > n && !d.computing && !d.drawing;
    const w = document.getElementById('w');
    return w && Number(w.dataset.drawCount) > n && !w.shell.busy;
  }, before, { timeout: 30_000 });
}
