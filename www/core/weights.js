// Which weights of a model load, one rule for the session and the worker. A model with an int8
// file set (its manifest's `variants.int8`: MiniLM, a quarter of the f32 download) offers
// state.weights 'auto' (the default: int8 for the first map, then its own f32 `files` in the
// background, session.js), 'int8' or 'exact'; every other model loads its own `files`.

/** The weights a state may ask for. */
export const WEIGHTS = ['auto', 'int8', 'exact'];

/** Does the model have int8 weights beside its own (a choice of weights)? */
export const hasInt8 = (m) => !!(m && m.variants && m.variants.int8);

/** The files a model loads with the weights in use ('int8' | 'exact'; 'auto' loads int8). */
export const modelFiles = (m, weights) => (weights !== 'exact' && hasInt8(m) && m.variants.int8) || m.files;

/** The worker's name for a model with the weights in use: `id`, or `id@exact` for the f32 file of a model that has an int8 one. */
export const modelKey = (m, weights) => (weights === 'exact' && hasInt8(m) ? `${m.id}@exact` : m.id);

/** The weights as the status line, exports and a comparison name them; null for a model with one set. */
export const weightsName = (m, weights) => (hasInt8(m) ? (weights === 'exact' ? 'exact f32 weights' : 'int8 weights') : null);
