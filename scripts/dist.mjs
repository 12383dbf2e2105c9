// `make dist`: the npm package, dist/attnviz-<version>.tgz (what `npm pack` writes). It holds the
// widget's public file (attention-viz.js), every module it reaches, the worker and the three wasm
// builds, and nothing else: the files are found by following the imports, literal import()s and
// `new URL('…', import.meta.url)`s from the entry points, as a bundler or a browser would. Its
// package.json (scripts/npm/package.json's fields + the crate's version) has no dependencies;
// README.md, the TypeScript types and bin/attnviz.mjs (`npx attnviz models`, which runs the
// fetch_models.py copied beside it) come from scripts/npm/. No model weights.
//
//   node scripts/dist.mjs            → prints the tarball's path, size and file count
//   import { packageFiles } from './dist.mjs'   (the tests compare the tarball with it)

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const WWW = path.join(ROOT, 'www');
const ENTRIES = ['attention-viz.js'];
/** Shipped beside bin/attnviz.mjs for `npx attnviz models` (from python/attnviz/). */
export const MODEL_SCRIPTS = ['fetch_models.py', 'paper_model.py'];
const REFERENCE = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*|@import url\(\s*)(['"])(\.{1,2}\/[^'"]+)\1/g;

/** A package path ('worker/worker.js', 'pkg/attnviz_bg.wasm') → the file in the repo. */
const source = (rel) => (rel.startsWith('pkg/') ? path.join(ROOT, rel) : path.join(WWW, rel));

/** Every file the entry points reach, as package paths, sorted. */
export function packageFiles() {
  const seen = new Set();
  const visit = (rel) => {
    if (seen.has(rel)) return;
    const file = source(rel);
    if (!existsSync(file)) throw new Error(`${rel} (${path.relative(ROOT, file)}) is missing: run make build first`);
    seen.add(rel);
    if (!/\.(js|css)$/.test(rel)) return;
    const text = readFileSync(file, 'utf8').replace(/^\s*\/\/.*$/gm, ''); // references in comments are prose
    for (const m of text.matchAll(REFERENCE)) {
      const ref = m[2].replace(/\?.*$/, ''); // (a query for the bundler: sw.js?no-inline)
      if (!ref.endsWith('/')) visit(path.posix.normalize(path.posix.join(path.posix.dirname(rel), ref))); // a folder is no file
    }
  };
  ENTRIES.forEach(visit);
  return [...seen].sort();
}

const cargoVersion = () => /^version\s*=\s*"([^"]+)"/m.exec(readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8'))[1];

// The widget's attributes are documented once, in README.md between these markers; the package's
// README (scripts/npm/README.md) has the same markers, filled with that text when it is packed.
const ATTRIBUTES = /<!-- widget-attributes[^>]*-->\n([\s\S]*?)<!-- \/widget-attributes -->/;

/** README.md's attribute list (the text between the markers), or null without the markers. */
export function attributeList() {
  const main = ATTRIBUTES.exec(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
  return main ? main[1].trimEnd() : null;
}

/** The package's README: scripts/npm/README.md with the main README's attribute list in it. */
export function packageReadme() {
  const list = attributeList();
  const template = readFileSync(path.join(ROOT, 'scripts/npm/README.md'), 'utf8');
  if (list === null || !ATTRIBUTES.test(template)) throw new Error('README.md and scripts/npm/README.md each need the <!-- widget-attributes --> block');
  return template.replace(ATTRIBUTES, () => `${list}\n`);
}

/** Write dist/package/ and pack it → { tarball, bytes, files }. */
export function buildPackage() {
  const out = path.join(ROOT, 'dist', 'package');
  rmSync(out, { recursive: true, force: true });
  const files = packageFiles();
  for (const rel of files) {
    mkdirSync(path.dirname(path.join(out, rel)), { recursive: true });
    copyFileSync(source(rel), path.join(out, rel));
  }
  for (const f of ['attention-viz.d.ts', 'bin/attnviz.mjs']) {
    mkdirSync(path.dirname(path.join(out, f)), { recursive: true });
    copyFileSync(path.join(ROOT, 'scripts/npm', f), path.join(out, f));
  }
  writeFileSync(path.join(out, 'README.md'), packageReadme());
  // `npx attnviz models`: the downloader make models runs, the one source of the models' hashes,
  // and the script that trains the paper's Transformer.
  for (const f of MODEL_SCRIPTS) copyFileSync(path.join(ROOT, 'python/attnviz', f), path.join(out, f));
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'scripts/npm/package.json'), 'utf8'));
  pkg.version = cargoVersion();
  pkg.files = [...files, 'attention-viz.d.ts', 'bin/attnviz.mjs', ...MODEL_SCRIPTS];
  writeFileSync(path.join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', path.join(ROOT, 'dist')], { cwd: out, env: { ...process.env, npm_config_update_notifier: 'false' } }).toString())[0];
  const tarball = path.join(ROOT, 'dist', packed.filename);
  return { tarball, bytes: statSync(tarball).size, unpacked: packed.unpackedSize, files: packed.files.map((f) => f.path).sort() };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const r = buildPackage();
  console.log(`[dist] ${path.relative(ROOT, r.tarball)}: ${(r.bytes / 1048576).toFixed(2)} MiB packed, ${(r.unpacked / 1048576).toFixed(2)} MiB unpacked, ${r.files.length} files`);
}
