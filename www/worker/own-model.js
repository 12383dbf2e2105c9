// "Open your model…": the user's files, as the page's pickers and drops and the widget's
// openModel() hand them over, become [{ name, file }] for the worker, which reads them (off the
// main thread), inspects their headers, loads and keeps them (library.js). Nothing is uploaded.
// File names and config values are the user's: shells show them with textContent only.

/** Files a folder holds that a model may use: those at its top level (an HF checkout's
 *  subfolders, e.g. 1_Pooling/, are not model files). */
function topLevel(files) {
  return files.filter((f) => (f.webkitRelativePath || f.name).split('/').length <= 2);
}

/** What to call the model: its folder's name, or the .gguf's; null for loose files (the worker
 *  names them from their config.json). */
function nameOf(files) {
  const rel = files.map((f) => f.webkitRelativePath).find(Boolean);
  if (rel) return rel.split('/')[0];
  const gguf = files.find((f) => /\.gguf$/i.test(f.name));
  return gguf ? gguf.name.replace(/\.gguf$/i, '') : null;
}

/**
 * A FileList or array of Files (a folder picker's, a multi-file picker's, or a host page's) →
 * { name, files: [{ name, file }] }. `name` overrides the model's name.
 */
export function collectFiles(list, name = null) {
  const given = Array.from(list || []).filter((f) => f instanceof Blob);
  const files = topLevel(given);
  const wanted = 'pick a model folder (config.json, model.safetensors or its shards, tokenizer.json) or one .gguf file';
  if (!given.length) throw new Error(`no files: the folder is empty (or nothing was picked); ${wanted}`);
  if (!files.length) throw new Error(`the folder holds only subfolders, and a model's files are at its top level; ${wanted}`);
  const named = name || nameOf(files);
  return { name: named ? String(named) : null, files: files.map((f) => ({ name: f.name, file: f })) };
}

/** The entries of a dropped folder (top level only). */
function readFolder(dir) {
  const reader = dir.createReader();
  const all = [];
  return new Promise((resolve, reject) => {
    const next = () =>
      reader.readEntries((batch) => {
        if (!batch.length) resolve(all);
        else {
          all.push(...batch);
          next();
        }
      }, reject);
    next();
  });
}

const fileOf = (entry) => new Promise((resolve, reject) => entry.file(resolve, reject));

/**
 * A drop's DataTransfer → { files, name } for session.openFiles: one folder (its top-level
 * files; name: the folder's) or loose files (name null). Call it within the drop event: its
 * items are gone once the handler returns.
 */
export function collectDrop(dt) {
  const entries = Array.from(dt.items || [])
    .filter((i) => i.kind === 'file')
    .map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
  const loose = Array.from(dt.files || []);
  const dir = entries.find((e) => e && e.isDirectory);
  if (!dir) return Promise.resolve({ files: loose, name: null });
  return readFolder(dir).then(async (es) => ({ files: await Promise.all(es.filter((e) => e.isFile).map(fileOf)), name: dir.name }));
}

const MAX_CONFIG_BYTES = 1 << 20;
const MAX_SAFETENSORS_HEADER = 100e6; // src/models/inspect.rs

/** The first bytes of a file that inspectModel() reads: only headers, never the weights. */
async function headOf(name, file, ggufHeadBytes) {
  const read = async (start, end) => new Uint8Array(await file.slice(start, end).arrayBuffer());
  if (name === 'config.json') {
    if (file.size > MAX_CONFIG_BYTES) throw new Error(`config.json is ${file.size} bytes: real ones are a few KB (at most ${MAX_CONFIG_BYTES} accepted)`);
    return read(0, file.size);
  }
  if (name.endsWith('.safetensors')) {
    const len = await read(0, 8);
    const n = len.length === 8 ? Number(new DataView(len.buffer).getBigUint64(0, true)) : 0;
    return n > 0 && n <= MAX_SAFETENSORS_HEADER ? read(0, 8 + n) : len; // else inspectModel says what is wrong
  }
  if (name.endsWith('.gguf')) return read(0, Math.min(file.size, ggufHeadBytes));
  return new Uint8Array(0);
}

/** Map name → Blob → inspectModel()'s argument { name: { size, head } } (the worker's and
 *  scripts/measure-own-model.mjs's). */
export async function readHeads(byName, ggufHeadBytes) {
  const heads = {};
  for (const [name, file] of byName) heads[name] = { size: file.size, head: await headOf(name, file, ggufHeadBytes) };
  return heads;
}

const bytes = (n) => (n >= 1 << 30 ? `${Number((n / (1 << 30)).toFixed(2))} GiB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${Math.max(1, Math.round(n / 1024))} KiB`);
const count = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(2)} B` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} M` : `${(n / 1e3).toFixed(1)} k`);
const FAMILY = {
  bert: 'BERT encoder',
  roberta: 'RoBERTa encoder',
  'xlm-roberta': 'XLM-RoBERTa encoder',
  distilbert: 'DistilBERT encoder',
  llama: 'Llama decoder',
  marian: 'Marian encoder-decoder (opus-mt)',
  gpt2: 'GPT-2 decoder',
};

/** One sentence on what inspectModel() found (src/models/inspect.rs). */
export function describeReport(r) {
  const kv = r.kv_heads < r.heads ? ` (${r.kv_heads} key/value heads)` : '';
  const layers = r.decoder_layers ? `${r.layers} encoder + ${r.decoder_layers} decoder layers` : `${r.layers} layers`;
  return `${FAMILY[r.architecture] || r.architecture}, ${r.format}: ${layers} × ${r.heads} heads${kv}, hidden size ${r.hidden_size}, ${count(r.parameters)} parameters, ${bytes(r.file_bytes)} of files; about ${bytes(r.memory_bytes)} of memory (budget ${bytes(r.memory_budget)}).`;
}

/** What the page says it opens. */
export const SUPPORTED_TEXT = 'a Hugging Face folder of a BERT-family encoder (config.json with model_type bert, roberta, xlm-roberta or distilbert, model.safetensors in f32, f16 or bf16, or the shards of a larger checkpoint, model-00001-of-0000N.safetensors, tokenizer.json), a Llama model (model_type llama, or one .gguf file: F32, F16, Q4_0, Q4_1, Q8_0), a GPT-2 model (model_type gpt2) or a Marian opus-mt translator (model_type marian, model.safetensors, and a tokenizer.json made from its vocab.json and source.spm by scripts/opus_mt_tokenizer.py)';
