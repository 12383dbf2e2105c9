// Adapters for the peer benchmark (../shared/peers, see its README): attnviz's wasm builds
// (pkg/: SIMD128, pkg/relaxed/: relaxed SIMD, pkg/threads/: relaxed on 2 threads;
// benches/wasm-builds.mjs) next to candle's BERT, in one Node process. `make bench` runs it when a built copy of the peers is found (PEERS_DIR).
// Four adapters, one per build and weight file: f32 (the exact weights) and int8 (the page's
// default, model.int8.safetensors). Each times AttnModel.attend(text) with a text its own
// tokenizer turns into exactly T tokens (what the page pays per keystroke); load() is not timed.
// run() returns NaN: the hidden state is not exposed (parity is tested elsewhere).
import fs from 'node:fs';
import path from 'node:path';
import { BUILDS as PAGE_BUILDS } from '../www/worker/wasm-build.js';
import { BUILDS, loadBuild, loadModel, loadThreadsBuild, root, textOfTokens } from './wasm-builds.mjs';

const inputsFile = process.env.PEER_INPUTS || path.join(process.env.PEERS_DIR || '', 'inputs.json');

function adapter(name, build, variant) {
  const threaded = build.id === 'threads';
  return {
    name,
    describe: `attnviz AttnModel.attend(text), ${variant || 'f32'} weights, ${build.dir} (release, ${build.id === 'simd' ? '+simd128' : '+relaxed-simd'}), ${threaded ? '2 threads' : '1 thread'}`,
    async load() {
      const glue = threaded ? await loadThreadsBuild(1) : (await loadBuild(build.dir)).glue;
      this.model = loadModel(glue, 'minilm', variant);
      this.sentence = JSON.parse(fs.readFileSync(inputsFile, 'utf8')).sentence;
      this.texts = new Map();
    },
    textFor(T) {
      if (!this.texts.has(T)) this.texts.set(T, textOfTokens(this.model, this.sentence, T));
      return this.texts.get(T);
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

const one = BUILDS.flatMap((b) => {
  const suffix = b.id === 'relaxed' ? '_relax' : '';
  return [adapter(`attnviz_f32${suffix}`, b, null), adapter(`attnviz_int8${suffix}`, b, 'int8')];
});
// The shared-memory build with one helper thread, where it was built (the int8 weights the page loads).
const threads = fs.existsSync(path.join(root, PAGE_BUILDS.threads.dir, 'attnviz_bg.wasm')) ? [adapter('attnviz_int8_2threads', PAGE_BUILDS.threads, 'int8')] : [];
export default [...one, ...threads];
