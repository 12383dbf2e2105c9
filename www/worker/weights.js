// Which weights of a model load, and the key that names a model with them: one rule for the
// worker (which loads by key) and the session above it (www/core/weights.js re-exports these and
// adds what the page says about weights). A model with an int8 file set (its manifest's
// `variants.int8`: MiniLM, a quarter of the f32 download) loads it unless asked for 'exact'
// (its own `files`, the f32 weights); every other model loads its own `files`.
//
// The key: `id` for the weights a model loads by default, `id@exact` for the f32 files of a model
// that has int8 ones. Only that suffix is read as weights: a Hub id's own `@revision`
// (hf:owner/name@v2, hub.js) stays part of the id.

const EXACT = '@exact';

/** Does the model have int8 weights beside its own (a choice of weights)? */
export const hasInt8 = (m) => !!(m && m.variants && m.variants.int8);

/** The files a model loads with the weights in use ('int8' | 'exact'; 'auto' loads int8). */
export const modelFiles = (m, weights) => (weights !== 'exact' && hasInt8(m) && m.variants.int8) || m.files;

/** The worker's name for a model with the weights in use: `id`, or `id@exact` for the f32 file of a model that has an int8 one. */
export const modelKey = (m, weights) => (weights === 'exact' && hasInt8(m) ? `${m.id}${EXACT}` : m.id);

/** A key (modelKey's) → { id, weights }: weights 'exact' for `id@exact`, else null (the model's
 *  default: int8 where it has them). `id` may be a model's dir, as the worker also accepts. */
export function parseModelKey(key) {
  const k = String(key);
  return k.endsWith(EXACT) ? { id: k.slice(0, -EXACT.length), weights: 'exact' } : { id: k, weights: null };
}
