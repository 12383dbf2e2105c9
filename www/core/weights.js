// Which weights of a model load, one rule for the session and the worker. A model with an int8
// file set (its manifest's `variants.int8`: MiniLM, a quarter of the f32 download) offers
// state.weights 'auto' (the default: int8 for the first map, then its own f32 `files` in the
// background, session.js), 'int8' or 'exact'; every other model loads its own `files`.
// The rule itself and the worker's key for a model with its weights (make and parse) live in the
// worker layer, which loads by it (www/worker/weights.js); this module passes them on and adds
// the choices a state offers and how the page names them.

import { hasInt8 } from '../worker/weights.js';

export { hasInt8, modelFiles, modelKey, parseModelKey } from '../worker/weights.js';

/** The weights a state may ask for. */
export const WEIGHTS = ['auto', 'int8', 'exact'];

/** The weights as the status line, exports and a comparison name them; null for a model with one set. */
export const weightsName = (m, weights) => (hasInt8(m) ? (weights === 'exact' ? 'exact f32 weights' : 'int8 weights') : null);
