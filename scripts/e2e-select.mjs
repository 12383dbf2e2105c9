// make test's e2e selection: after a change, rerun only the e2e test files that can see it.
//
//   node scripts/e2e-select.mjs FILE…             prints the files to run, one a line
//   node scripts/e2e-select.mjs --record DIR FILE…  after they all passed: their stamps, from the
//                                                 coverage tests/e2e/coverage.mjs wrote into DIR
//
// A file's stamp (.test-stamps/e2e/<name>.json) holds the hash of every file the e2e suite can
// read (scripts/test-inputs.sh's list) when it last passed, and which functions of www/ its pages
// ran on their main thread then. A file is run again unless every change since is one of:
//   - another e2e test file;
//   - a script of www/ its pages never loaded, that no worker and no Node-side import of the test
//     reaches (the worker's code is not in the pages' coverage: a change there reruns every file);
//   - a script of www/ its pages loaded, changed only inside functions they never ran.
// No stamp, a record its coverage could not vouch for (coverage.mjs: `uncovered`), CI=true or
// FORCE set: the file runs. The source each stamp's coverage was taken on is kept beside it
// (.test-stamps/e2e-sources/<sha>), to diff against the file as it is now.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAMPS = path.join(ROOT, '.test-stamps', 'e2e');
const SOURCES = path.join(ROOT, '.test-stamps', 'e2e-sources');
const stampOf = (file) => path.join(STAMPS, `${path.basename(file)}.json`);

/** Every file the e2e suite can read, with its hash: scripts/test-inputs.sh's e2e list. */
function snapshot() {
  const out = execFileSync('bash', [path.join(ROOT, 'scripts/test-inputs.sh'), '--files', 'test-e2e'], { cwd: ROOT, maxBuffer: 1 << 28 }).toString();
  const files = {};
  for (const line of out.split('\n')) if (line) files[line.slice(66)] = line.slice(0, 64);
  return files;
}

/** Relative module specifiers a JS file names: imports, re-exports, import(), new URL(…, import.meta.url). */
function imports(file) {
  let text;
  try {
    text = readFileSync(path.join(ROOT, file), 'utf8');
  } catch {
    return [];
  }
  const found = [];
  const patterns = [
    /(?:^|[\s;}])(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/g,
    /(?:^|[\s;])import\s*['"]([^'"]+)['"]/g,
    /import\(\s*['"]([^'"]+)['"]\s*\)/g,
    /new URL\(\s*['"]([^'"]+)['"]\s*,\s*import\.meta\.url\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) if (m[1].startsWith('.')) found.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1])));
  return found;
}

/** Every file reachable from `entries` through imports() (the entries included). */
function reach(entries) {
  const seen = new Set();
  const todo = [...entries];
  while (todo.length) {
    const f = todo.pop();
    if (seen.has(f)) continue;
    seen.add(f);
    if (/\.m?js$/.test(f)) todo.push(...imports(f));
  }
  return seen;
}

/** Lines [first, last] (1-based, of `before`) that `after` changed; an insertion is [n + 1, n]. */
function changedLines(before, after) {
  const dir = path.join(ROOT, '.test-stamps', 'e2e-diff');
  mkdirSync(dir, { recursive: true });
  const a = path.join(dir, 'before');
  writeFileSync(a, before);
  let out;
  try {
    out = execFileSync('git', ['diff', '--no-index', '-U0', '--no-color', a, path.join(ROOT, after.file)], { maxBuffer: 1 << 28 }).toString();
  } catch (err) {
    out = err.stdout?.toString() ?? ''; // exit 1: they differ
  }
  const hunks = [];
  for (const m of out.matchAll(/^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@/gm)) {
    const start = Number(m[1]);
    const count = m[2] === undefined ? 1 : Number(m[2]);
    hunks.push(count === 0 ? [start + 1, start] : [start, start + count - 1]);
  }
  return hunks;
}

/** Whether the change from the source the pages ran (`seen.sha`) to `file` touches code they ran. */
function touchesWhatRan(seen, file) {
  const source = readFileSync(path.join(SOURCES, seen.sha), 'utf8');
  const lineStart = [0];
  for (let i = 0; i < source.length; i++) if (source[i] === '\n') lineStart.push(i + 1);
  const offset = (line) => (line - 1 < lineStart.length ? lineStart[line - 1] : source.length);
  // The first function V8 reports is the whole script (its top level): leave it out, so that a
  // change outside every function counts as a change to the module's top level.
  const functions = seen.functions.filter(([s, e]) => !(s === 0 && e >= source.length));
  for (const [first, last] of changedLines(source, { file })) {
    const [from, to] = first > last ? [offset(first), offset(first)] : [offset(first), offset(last + 1)];
    // Inside a function means after the line it starts on (its name and parameters are part of
    // what the module defines) and before its end.
    const lineEnd = (at) => { const i = source.indexOf('\n', at); return i < 0 ? source.length : i; };
    const inside = functions.filter(([s, e]) => lineEnd(s) < from && to <= e);
    if (!inside.length) return true; // the module's top level ran when it loaded
    // The innermost function around the change: did the pages run it?
    const innermost = inside.reduce((a, b) => (b[1] - b[0] < a[1] - a[0] ? b : a));
    const ran = seen.functions.some(([s, e, count]) => s === innermost[0] && e === innermost[1] && count > 0);
    if (ran) return true;
  }
  return false;
}

function select(files) {
  if (process.env.CI || process.env.FORCE) return { run: files, why: new Map(files.map((f) => [f, 'CI or FORCE'])) };
  const now = snapshot();
  const workerSide = reach(['www/worker/worker.js', 'www/worker/pool-helper.js', 'www/sw.js']);
  const run = [];
  const why = new Map();
  for (const file of files) {
    const stampPath = stampOf(file);
    if (!existsSync(stampPath)) { run.push(file); why.set(file, 'no record of a pass'); continue; }
    const stamp = JSON.parse(readFileSync(stampPath, 'utf8'));
    if (stamp.uncovered) { run.push(file); why.set(file, `its coverage is incomplete: ${stamp.uncovered}`); continue; }
    const nodeSide = reach([file]);
    const changed = [...new Set([...Object.keys(now), ...Object.keys(stamp.inputs)])].filter((f) => now[f] !== stamp.inputs[f]);
    const reason = changed.map((f) => {
      if (f !== file && /^tests\/e2e\/[^/]+\.test\.mjs$/.test(f)) return null;
      if (!/^www\/.*\.m?js$/.test(f)) return `${f} changed`;
      if (workerSide.has(f)) return `${f} (worker side) changed`;
      if (nodeSide.has(f)) return `${f}, which the test imports, changed`;
      const seen = stamp.scripts[f];
      if (!seen) return null;
      if (!existsSync(path.join(ROOT, f))) return `${f}, which its pages ran, is gone`;
      return touchesWhatRan(seen, f) ? `${f} changed where its pages ran` : null;
    }).find(Boolean);
    if (reason) { run.push(file); why.set(file, reason); }
  }
  return { run, why };
}

function record(dir, files) {
  const inputs = snapshot();
  mkdirSync(STAMPS, { recursive: true });
  mkdirSync(SOURCES, { recursive: true });
  for (const file of files) {
    const covPath = path.join(dir, `${path.basename(file)}.json`);
    const cov = existsSync(covPath) ? JSON.parse(readFileSync(covPath, 'utf8')) : null;
    const stamp = { inputs, uncovered: cov ? cov.uncovered : 'no coverage was written (a test file that loads www/ in Node only?)', scripts: {} };
    for (const [f, s] of Object.entries(cov?.scripts ?? {})) {
      const src = path.join(SOURCES, s.sha);
      if (!existsSync(src)) writeFileSync(src, s.source);
      stamp.scripts[f] = { sha: s.sha, functions: s.functions };
    }
    writeFileSync(stampOf(file), JSON.stringify(stamp));
  }
}

const args = process.argv.slice(2);
if (args[0] === '--record') {
  record(args[1], args.slice(2));
} else {
  const { run, why } = select(args);
  for (const f of args) if (!run.includes(f)) console.error(`[e2e] ${path.basename(f)}: nothing it can see changed since it passed`);
  for (const f of run) console.error(`[e2e] ${path.basename(f)}: ${why.get(f)}`);
  process.stdout.write(run.map((f) => `${f}\n`).join(''));
}
