// Which functions of www/ a test file's pages ran on their main thread: what make test's e2e
// selection (scripts/e2e-select.mjs) reads to rerun, after a change in www/, only the test files
// that ran a changed function. Recorded when ATTNVIZ_E2E_COVERAGE names a folder (make test sets
// it outside CI): V8's precise coverage of every page of every context of the test file's
// browsers, from before its first navigation until it closes, written at exit as
// <folder>/<test file name>.json:
//   { file, uncovered: false | 'why the record is incomplete',
//     scripts: { 'www/views/head.js': { sha, source, functions: [[start, end, ran 1 | 0], …] } } }
// Anything it cannot vouch for makes the record `uncovered` (the selection then always reruns
// the file): a page it saw only after it had navigated, a page closed without its coverage
// taken, a script that is no file of www/ or pkg/ (a bundle, an older copy, an inline script).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DIR = process.env.ATTNVIZ_E2E_COVERAGE;
const sha = (text) => createHash('sha256').update(text).digest('hex');

const record = { file: path.relative(ROOT, process.argv[1] || ''), uncovered: false, scripts: {} };
const open = new Set(); // pages whose coverage runs
const fileSha = new Map(); // www/ path → sha of its content now (null: no such file)

function uncovered(why) {
  if (!record.uncovered) record.uncovered = why;
}

/**
 * The file a script URL serves, when its source is that file's: 'www/views/head.js', or one of
 * pkg/ (the wasm builds' glue, made from src/: a change there reruns every file anyway).
 */
function servedFile(url, source) {
  let parts;
  try {
    parts = new URL(url).pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return null;
  }
  const hash = sha(source);
  // The server serves www/ under a prefix (/course/week3/…): the longest tail that is a file of
  // www/ with this very content.
  for (let i = 0; i < parts.length; i++) {
    for (const rel of [path.posix.join('www', ...parts.slice(i)), path.posix.join(...parts.slice(i))]) {
      if (!rel.startsWith('www/') && !rel.startsWith('pkg/')) continue;
      // A wasm build's glue: made from src/, whose changes rerun every file; a test may serve
      // one it rebuilt or patched.
      if (rel.startsWith('pkg/') && existsSync(path.join(ROOT, rel))) return rel;
      if (!fileSha.has(rel)) {
        const abs = path.join(ROOT, rel);
        fileSha.set(rel, existsSync(abs) ? sha(readFileSync(abs)) : null);
      }
      if (fileSha.get(rel) === hash) return rel;
    }
  }
  return null;
}

async function take(page) {
  if (!open.delete(page)) return;
  let entries;
  try {
    entries = await page.coverage.stopJSCoverage();
  } catch (err) {
    uncovered(`a page's coverage could not be taken: ${err.message}`);
    return;
  }
  for (const { url, source, functions } of entries) {
    if (!url || /^(about|data|blob):|__playwright|^(chrome|devtools)/.test(url)) continue;
    const file = servedFile(url, source ?? '');
    if (!file) {
      uncovered(`it ran ${url}, which is no file of www/ or pkg/ as it is now`);
      continue;
    }
    if (file.startsWith('pkg/')) continue;
    const seen = record.scripts[file] ??= { sha: sha(source), source, functions: new Map() };
    // One entry per function, whether any page ran it: [start, end, 1 | 0].
    for (const f of functions) {
      const { startOffset, endOffset, count } = f.ranges[0];
      const key = `${startOffset}:${endOffset}`;
      seen.functions.set(key, Math.max(seen.functions.get(key) ?? 0, count > 0 ? 1 : 0));
    }
  }
}

function watchPage(page) {
  if (page.url() !== 'about:blank') uncovered(`a page was at ${page.url()} before its coverage started`);
  open.add(page);
  page.coverage.startJSCoverage({ resetOnNavigation: false, reportAnonymousScripts: false })
    .catch((err) => { open.delete(page); uncovered(`a page's coverage could not start: ${err.message}`); });
  const close = page.close.bind(page);
  page.close = async (...args) => { await take(page); return close(...args); };
  page.once('close', () => { if (open.delete(page)) uncovered('a page closed before its coverage was taken'); });
}

function watchContext(context) {
  context.on('page', watchPage);
  const close = context.close.bind(context);
  context.close = async (...args) => {
    await Promise.all(context.pages().map(take));
    return close(...args);
  };
}

/** Records the coverage of `browser`'s pages (when ATTNVIZ_E2E_COVERAGE is set); returns it. */
export function recordCoverage(browser) {
  if (!DIR) return browser;
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (...args) => {
    const context = await newContext(...args);
    watchContext(context);
    return context;
  };
  const newPage = browser.newPage.bind(browser);
  browser.newPage = async (...args) => {
    const page = await newPage(...args);
    if (!open.has(page)) {
      watchContext(page.context());
      watchPage(page);
    }
    return page;
  };
  const close = browser.close.bind(browser);
  browser.close = async (...args) => {
    await Promise.all(browser.contexts().flatMap((c) => c.pages()).map(take));
    return close(...args);
  };
  return browser;
}

if (DIR && record.file.endsWith('.test.mjs')) {
  process.once('exit', () => {
    if (open.size) uncovered(`${open.size} page(s) still open at exit`);
    for (const seen of Object.values(record.scripts)) {
      seen.functions = [...seen.functions].map(([key, ran]) => [...key.split(':').map(Number), ran]);
    }
    writeFileSync(path.join(DIR, `${path.basename(record.file)}.json`), JSON.stringify(record));
  });
}
