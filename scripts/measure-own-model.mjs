// What "Open your model…" costs, under Node with the release wasm from pkg/ (the worker's
// module) in a fresh instance: the time to read the headers and inspect them, the memory that
// inspectModel() estimates, and the wasm memory actually used once the model is loaded and has
// run its longest input. Measures, asserts nothing.
//
//   node scripts/measure-own-model.mjs models/minilm          # a folder (config.json, …)
//   node scripts/measure-own-model.mjs models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
import { openAsBlob } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { readHeads } from '../www/worker/own-model.js';
import { MAPS_SENT_WHOLE_BYTES } from '../www/worker/protocol.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const target = path.resolve(process.argv[2] || path.join(root, 'models/minilm'));
const { default: init, AttnModel, inspectModel, ggufHeadBytes } = await import(path.join(root, 'pkg/attnviz.js'));
const exports = await init({ module_or_path: await readFile(path.join(root, 'pkg/attnviz_bg.wasm')) });
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;

const paths = (await stat(target)).isDirectory() ? (await readdir(target)).map((n) => path.join(target, n)) : [target];
const byName = new Map();
for (const p of paths) if ((await stat(p)).isFile()) byName.set(path.basename(p), await openAsBlob(p));

const before = exports.memory.buffer.byteLength;
const t0 = performance.now();
const report = inspectModel('measured', await readHeads(byName, ggufHeadBytes()));
const inspectMs = performance.now() - t0;
const files = {};
for (const f of report.manifest.files) files[f] = new Uint8Array(await byName.get(f).arrayBuffer());
const t1 = performance.now();
const model = AttnModel.load(JSON.stringify(report.manifest), files);
const loadMs = performance.now() - t1;
const loaded = exports.memory.buffer.byteLength;
// The longest input: enough words for every position the model reads, with the worker's maps
// option (past MAPS_SENT_WHOLE_BYTES of maps only the first layer's are kept).
const layers = [{ kind: model.info().kinds[0], layer: 0 }];
const maps = { keep: 'measure', layers, wholeUpTo: MAPS_SENT_WHOLE_BYTES };
const longest = model.attend(Array.from({ length: report.max_positions }, (_, i) => `word${i % 50}`).join(' '), { maps });
const ran = exports.memory.buffer.byteLength;
console.log(`${path.relative(root, target)}: ${report.architecture}, ${report.format}, ${report.layers} layers × ${report.heads} heads, ${report.parameters} parameters, ${mib(report.file_bytes)} of files`);
console.log(`inspect (headers read + inspectModel): ${inspectMs.toFixed(1)} ms; load ${loadMs.toFixed(0)} ms`);
console.log(`memory: estimated ${mib(report.memory_bytes)}; wasm memory ${mib(before)} at start, ${mib(loaded)} loaded, ${mib(ran)} after ${longest.tokens.source.length} tokens`);
