// What the head overview's scores are called, one list for every layer: the labels a head can
// get (src/heads.rs HeadLabel, in legend order) and the score columns of its table. The numbers
// come from Rust (every forward's blocks carry them, induction included: headsOf) or, for maps a
// notebook supplies, from python/attnviz/heads.py.

/** [label, what it means], in legend order. */
export const HEAD_LABELS = [
  ['sink', 'sink (first / special token)'],
  ['previous', 'previous token'],
  ['next', 'next token'],
  ['self', 'self (diagonal)'],
  ['delimiter', 'delimiter ([SEP], punctuation)'],
  ['induction', 'induction'],
  ['broad', 'broad (near uniform)'],
  ['mixed', 'mixed (no pattern)'],
];

/** The label names alone. */
export const HEAD_LABEL_NAMES = HEAD_LABELS.map(([k]) => k);

/** Score columns, in table order: [key, header, what it is]. */
export const SCORES = [
  ['score', 'score', 'the score behind the label'],
  ['entropy', 'entropy', 'mean row entropy (nats)'],
  ['broad', 'broad', 'normalised entropy H (the model view’s and chart’s): entropy ÷ ln(keys seen), 1 = uniform'],
  ['first', 'first', 'weight on the first token'],
  ['special', 'special', 'weight on special tokens'],
  ['previous', 'prev', 'weight on the previous token'],
  ['next', 'next', 'weight on the next token'],
  ['self', 'self', 'weight on the token itself'],
  ['delimiter', 'delim', 'weight on [SEP] and punctuation'],
  ['induction', 'induct', 'induction score (causal models)'],
];

const headsByResult = new WeakMap(); // a forward's result → headsOf it

/**
 * The head overview's data from a forward's result (the shape of the wasm facade's heads(),
 * src/output.rs HeadsResult): every block's scores, which the forward computed with its maps.
 */
export function headsOf(result) {
  if (!result) return null;
  let heads = headsByResult.get(result);
  if (!heads) {
    const { model, text, tokens } = result;
    heads = { model, text, tokens, induction_tokens: result.induction_tokens ?? null, heads: result.attentions.flatMap((b) => b.scores || []) };
    headsByResult.set(result, heads);
  }
  return heads;
}
