// Which weights of a model load (state.weights), one rule for the session and the worker: its
// int8 file set by default where the manifest has one (MiniLM: a quarter of the f32 download),
// else, and for 'exact', its own `files`.

/** The files a model loads with the chosen weights. */
export const modelFiles = (m, weights) => (weights !== 'exact' && m.variants && m.variants.int8) || m.files;

/** The worker's name for a model with its weights: `id`, or `id@exact` for the f32 file of a model that has an int8 one. */
export const modelKey = (m, weights) => (weights === 'exact' && m.variants && m.variants.int8 ? `${m.id}@exact` : m.id);
