// Adapters for the peer benchmark (../shared/peers, see its README): attnviz's wasm from pkg/ next
// to candle's BERT, in one Node process. `make bench` runs it when a built copy of the peers is
// found (PEERS_DIR). Two adapters, one per weight file: f32 (the exact weights) and int8 (the
// page's default, model.int8.safetensors). Each times AttnModel.attend(text) with a text its own
// tokenizer turns into exactly T tokens (what the page pays per keystroke); load() is not timed.
// run() returns NaN: the hidden state is not exposed (parity is tested elsewhere).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// This checkout (not ATTNVIZ_DIR, which the peers' own adapter reads: both can run side by side).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const inputsFile = process.env.PEER_INPUTS || path.join(process.env.PEERS_DIR || '', 'inputs.json');

let glue = null;
async function wasm() {
  if (!glue) {
    glue = await import(pathToFileURL(path.join(root, 'pkg/attnviz.js')).href);
    await glue.default({ module_or_path: fs.readFileSync(path.join(root, 'pkg/attnviz_bg.wasm')) });
  }
  return glue;
}

function adapter(name, variant) {
  return {
    name,
    describe: `attnviz AttnModel.attend(text), ${variant || 'f32'} weights, pkg/ (release, +simd128), 1 thread`,
    async load() {
      const m = await wasm();
      const dir = path.join(root, 'models/minilm');
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
      if (variant) manifest.files = manifest.variants[variant];
      const files = {};
      for (const f of manifest.files) files[f] = new Uint8Array(fs.readFileSync(path.join(dir, f)));
      this.model = m.AttnModel.load(JSON.stringify(manifest), files);
      this.sentence = JSON.parse(fs.readFileSync(inputsFile, 'utf8')).sentence;
      this.texts = new Map();
    },
    /** Words of the inputs' sentence, then single-piece filler, until the tokenizer gives T tokens. */
    textFor(T) {
      if (this.texts.has(T)) return this.texts.get(T);
      const words = [];
      while (words.length < 4 * T) words.push(...this.sentence.replace(/[.,]/g, '').split(' '));
      const count = (t) => this.model.attend(t).tokens.source.length;
      let n = 1;
      while (count(words.slice(0, n + 1).join(' ')) <= T) n++;
      let text = words.slice(0, n).join(' ');
      while (count(text) < T) text += ' the';
      if (count(text) !== T) throw new Error(`${name}: could not build a ${T}-token text`);
      this.texts.set(T, text);
      return text;
    },
    run(ids) {
      const r = this.model.attend(this.textFor(ids.length));
      if (r.tokens.source.length !== ids.length) throw new Error(`${name}: token count changed`);
      return NaN;
    },
    free() {
      this.model.free();
    },
  };
}

export default [adapter('attnviz_f32', null), adapter('attnviz_int8', 'int8')];
