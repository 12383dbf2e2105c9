// The messages between a page (worker-client.js) and the model worker (worker.js): their names,
// which requests a newer one supersedes, and how answers carry their arrays. Both ends import this
// module, so a name is spelled once.
//
// Protocol (all messages carry `id`; requests also carry `channel`):
//   → { id, channel, type: 'init', base, models, build, threads, hub }
//                                                       ← { id, type: 'init', build, supported, models }
//     (base: null unless configure({ base }) named one; models: the default models' folder)
//     (build: 'threads', 'relaxed' or 'simd', the client's pick (wasm-build.js); the answer's
//     build is buildInfo() with the build loaded: id, dir, label, and for 'threads' their count)
//   → { id, channel, type: 'load', model }             ← { id, type: 'progress', model, loaded, total }*
//                                                       ← { id, type: 'loaded', info }
//     (model: a key, weights.js: `id` or `id@exact`)
//   → { id, type: 'cancel-load', model }               ← { id, type: 'cancelled', cancelled }
//     (stop that load's download: its 'load' answers an error; cancelled: one was under way)
//   → { id, type: 'cached', model }                    ← { id, type: 'cached', cached }
//     (would loading the key download nothing: loaded, or every file in the Cache API)
//   → { id, channel, type: 'attend', model, text, gen, valueNorms, step, lens, maps } ← { id, type: 'progress', forward: { kind, layer, rows } }*
//                                                       ← { id, type: 'result', result, ms }
//     (maps: null, or the layers [{ kind, layer }] whose maps to send when all of them would be
//     more than MAPS_SENT_WHOLE_BYTES: the others stay in the worker, kept for this channel, and
//     result.forward names them for 'maps' requests)
//   → { id, channel, type: 'maps', model, forward, kind, layer } ← { id, type: 'maps', maps }
//     (one layer's maps [heads, query_len, key_len] that the channel's attend `forward` kept;
//     an error once a newer attend of the channel replaced them)
//   → { id, channel, type: 'thumbnails', model, forward, kind, size } ← { id, type: 'thumbnails', thumbnails }
//     (every layer's maps of `kind` that attend `forward` kept, pooled to [layers, heads,
//     min(size, query_len), min(size, key_len)] as the views pool a map: the model view's)
//     (progress: a forward past FORWARD_PROGRESS_AFTER_MS says which attention call it finished,
//     at most every FORWARD_PROGRESS_EVERY_MS: its kind, layer and query rows; the model's
//     download, when it was not loaded, reports { model, loaded, total } first)
//     (valueNorms: true adds result.value_norms, ‖α_ij f_h(x_j)‖ laid out like attentions; step:
//     { kind, layer, head } adds result.step, that head's internals from the same forward; every
//     block's scores carry its heads' statistics and labels, src/heads.rs: one forward per text
//     feeds every view; lens: true adds result.logit_lens, what each layer would predict)
//   → { id, channel, type: 'step', model, text, kind, layer, head, gen } ← { id, type: 'step', step }
// gen: null (the text alone), or the wasm calls' own options { generate, temperature, topK, seed }
// (generationOptions below) for a model whose info says generates: true — continue the text
// `generate` tokens (no temperature: greedy; topK 0: all tokens).
// The maps and step internals then cover every position fed: the prompt and each token generated.
//   → { id, channel, type: 'positions', model, count } ← { id, type: 'positions', positions }
// `result` and `step` are exactly what the wasm facade returns: the types described once in
// schema/attend.schema.json (the CLI prints the same as JSON), arrays of floats as Float32Arrays.
//   → { id, type: 'open', files: [{ name, file: File }], name }  ← { id, type: 'progress', inspected: report }
//                                                       ← { id, type: 'opened', manifest, report, info, stored, storage }
//     (a user's model: its headers inspected, then loaded, then kept; report: inspectModel()'s;
//     storage: false where this browser keeps nothing for us, so stored is false too)
//   → { id, type: 'open-hub', model }                  ← { id, type: 'progress', inspected: report }
//                                                       ← { id, type: 'progress', loaded, total, reading? }* (reading: "<file>'s header", or the file read whole)
//                                                       ← { id, type: 'opened', … } (as for open)
//     (model: a Hub id, hub.js: its headers inspected, then its files fetched, loaded and kept)
//   → { id, type: 'remove', model }                    ← { id, type: 'removed' } (a user's model, from storage)
//   → { id, type: 'add-files', files, models }         ← { id, type: 'added', models } (files: { path
//     under base: Blob } read instead of fetched, as init's `files`; models: manifests joining the
//     index, their files among them: the notebook's kernel sends a model this way)
// A user's models kept in this browser (model-store.js: OPFS, else IndexedDB) join the index at
// init with `user: true`; their files are read from there instead of fetched.
//   → { id, type: '__panicForTest', message }          (TEST HOOK: makes the wasm panic on purpose)
//   any failure                                        ← { id, type: 'error', message }
//   a request superseded by a newer one on its channel ← { id, type: 'superseded' }
// Typed arrays in answers are transferred, not copied. Requests on one channel are collapsed:
// while the worker computes, newer requests replace older ones that have not started yet.

/**
 * A view state's generation ({ gen, temperature, topK, seed }) → the `gen` of attend and step
 * requests: exactly the wasm calls' options, sampled only at a temperature > 0, or null for
 * the text alone. The one place they are normalised (the wasm checks what it is given).
 */
export function generationOptions({ gen, temperature, topK, seed }, maxTokens) {
  const generate = Math.min(maxTokens, Math.max(0, Math.floor(Number(gen) || 0)));
  if (!generate) return null;
  const t = Number(temperature) || 0;
  if (!(t > 0)) return { generate };
  return { generate, temperature: t, topK: Math.max(0, Math.floor(Number(topK) || 0)), seed: Math.floor(Number(seed) || 0) >>> 0 };
}

/** The requests' types. */
export const REQUEST = Object.freeze({
  init: 'init',
  load: 'load',
  cancelLoad: 'cancel-load',
  cached: 'cached',
  attend: 'attend',
  step: 'step',
  maps: 'maps',
  thumbnails: 'thumbnails',
  positions: 'positions',
  open: 'open',
  openHub: 'open-hub',
  addFiles: 'add-files',
  remove: 'remove',
  panicForTest: '__panicForTest',
});

/** A forward sends every map while they take at most this many bytes (MiniLM up to ~180 tokens,
 *  SmolLM2 up to ~80); past it, the maps of the layers its view draws, the others on request. */
export const MAPS_SENT_WHOLE_BYTES = 8 << 20;

/** A forward reports its progress from this long on (a typed sentence's forward reports none)… */
export const FORWARD_PROGRESS_AFTER_MS = 150;
/** …and then at most this often. */
export const FORWARD_PROGRESS_EVERY_MS = 50;

/** The answers' types. `progress` may come any number of times before the answer; `error` and
 *  `superseded` answer any request. */
export const ANSWER = Object.freeze({
  init: 'init',
  loaded: 'loaded',
  cancelled: 'cancelled',
  cached: 'cached',
  result: 'result',
  step: 'step',
  maps: 'maps',
  thumbnails: 'thumbnails',
  positions: 'positions',
  opened: 'opened',
  added: 'added',
  removed: 'removed',
  progress: 'progress',
  error: 'error',
  superseded: 'superseded',
});

// Requests every sender waits for (several widgets may wait on one load): never superseded.
const KEPT = new Set([REQUEST.init, REQUEST.load, REQUEST.cancelLoad, REQUEST.cached, REQUEST.open, REQUEST.openHub, REQUEST.remove, REQUEST.addFiles]);

/** Does a newer request of this type on the same channel supersede an older one not yet started? */
export const collapses = (type) => !KEPT.has(type);

/** The lane a request is collapsed in: its channel and type (the newest request per lane counts). */
export const lane = (channel, type) => `${channel}:${type}`;

/**
 * The buffers of every Float32Array in an answer, to transfer instead of copy. The wasm facade
 * builds each array as a copy with its own buffer (never a view into wasm memory).
 */
export function transferables(value, out = []) {
  if (value instanceof Float32Array) out.push(value.buffer);
  else if (Array.isArray(value)) for (const v of value) transferables(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) transferables(v, out);
  return out;
}
