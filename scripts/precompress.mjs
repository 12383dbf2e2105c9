// Compresses, once at build time, what the page fetches: a `.br` and a `.gz` beside each
// compressible file of www/, pkg/ and models/ (the int8 weights, the translator's int8 .bin and
// its SentencePiece model among them; the exact f32 weights stay as they are). `attnviz serve` sends a variant to a browser that accepts it while
// the variant is no older than its file (src/bin/attnviz/serve.rs); `make site` copies them, for static
// hosts that serve precompressed files. A variant that is already up to date is kept, one that
// would not be smaller is not written (and a stale one removed).
//
// Usage: node scripts/precompress.mjs [DIR…]   (default: www pkg models, under the repository)
import { readdirSync, readFileSync, statSync, writeFileSync, renameSync, rmSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The same list as src/bin/attnviz/serve.rs COMPRESSIBLE.
const COMPRESSIBLE = new Set(['wasm', 'js', 'mjs', 'json', 'map', 'html', 'htm', 'css', 'svg', 'txt', 'md', 'ts', 'safetensors', 'bin', 'spm']);
// Brotli's quality by size (measured on this machine, another build beside it): 11 is worth it on
// scripts, but took 84 s on a 2.8 MB wasm build (740 kB; quality 7: 858 kB in 3 s); on the int8
// weights (17–23 MB) quality 4 packs within 0.1 % of 9 (MiniLM's: 20.98 MB) in 1.7 s, not 15.
const brotliQuality = (size) => (size <= 1 << 20 ? 11 : size <= 4 << 20 ? 7 : 4);

/** Whether `file` is one to compress: a compressible type, and of weights only the int8 ones. */
function wanted(file) {
  const name = path.basename(file);
  if (name.startsWith('.')) return false;
  const ext = path.extname(name).slice(1).toLowerCase();
  if (!COMPRESSIBLE.has(ext)) return false;
  return ext !== 'safetensors' || name.includes('.int8.');
}

function* files(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    // (pkg/threads.new/: a wasm build being written, swapped in whole when done)
    if (e.name.startsWith('.') || e.name.endsWith('.new')) continue;
    const p = path.join(dir, e.name);
    // models/ may be a link to a shared folder; follow links to folders and files alike.
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) yield* files(p);
    else if (st.isFile() && wanted(p)) yield p;
  }
}

const ENCODERS = {
  '.br': (bytes) => zlib.brotliCompressSync(bytes, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: brotliQuality(bytes.length),
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
    },
  }),
  '.gz': (bytes) => zlib.gzipSync(bytes, { level: 9 }),
};

function precompress(file, totals) {
  const source = statSync(file);
  let bytes = null;
  for (const [suffix, encode] of Object.entries(ENCODERS)) {
    const variant = file + suffix;
    const old = statSync(variant, { throwIfNoEntry: false });
    if (old && old.mtimeMs >= source.mtimeMs) {
      totals.kept++;
      continue;
    }
    bytes ??= readFileSync(file);
    const packed = encode(bytes);
    if (packed.length >= bytes.length) {
      if (existsSync(variant)) rmSync(variant);
      continue;
    }
    const tmp = `${variant}.tmp-${process.pid}`;
    writeFileSync(tmp, packed);
    renameSync(tmp, variant);
    totals.written++;
    totals.before += bytes.length;
    totals.after += packed.length;
  }
}

const dirs = process.argv.slice(2).length ? process.argv.slice(2) : ['www', 'pkg', 'models'];
const start = Date.now();
const totals = { written: 0, kept: 0, before: 0, after: 0 };
for (const dir of dirs) {
  for (const file of files(path.resolve(ROOT, dir))) {
    try {
      precompress(file, totals);
    } catch (err) {
      // make test precompresses beside the threads build, which swaps pkg/threads/ in whole:
      // a file gone since it was listed has nothing to compress (the next run does the new one).
      if (err.code !== 'ENOENT') throw err;
    }
  }
}
const mb = (n) => (n / 1e6).toFixed(1);
console.log(`[precompress] ${totals.written} variants written (${mb(totals.before)} → ${mb(totals.after)} MB), ${totals.kept} up to date, in ${((Date.now() - start) / 1000).toFixed(1)} s`);
