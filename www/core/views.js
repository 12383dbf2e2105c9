// What the core knows of each view: its id and label, which attention kinds it can show, which
// shared controls it uses and which data it needs besides the maps (the step internals, the
// position table, the head scores). The drawing, hover and click of each view are the views'
// own (views/index.js adds them to these entries); the core, the permalinks and the tabs read
// this list, so nothing below the views needs to import them.
//
// Fields of an entry:
//   id, label          — permalink value and tab text
//   kinds              — attention kinds it can show (null = any the model has)
//   forceKind          — the kind it always shows (cross view)
//   kindless           — it shows no attention, so no kind tabs (positions view)
//   controls           — which shared controls are visible: layer, heads ('multi' | 'one'), agg,
//                        query, step, threshold, measure (the raw / value-weighted switch applies),
//                        stepPart (which part of the step view)
//   needsStep          — it draws the step() internals of one head
//   needsPositions     — it draws the model's position table (positions()) with the wasm charts
//   needsHeads         — it draws the model's head scores (heads())
//   needsLens          — it draws the logit lens (attend's `lens` option: result.logit_lens)
export const VIEW_SPECS = [
  { id: 'head', label: 'Head view', kinds: null, controls: { layer: true, heads: 'multi', agg: true, threshold: true, measure: true } },
  { id: 'model', label: 'Model view', kinds: null, controls: { measure: true } },
  { id: 'heatmap', label: 'Heatmap', kinds: null, controls: { layer: true, heads: 'one', agg: true, measure: true } },
  // threshold: its lines from the decoder step to the source tokens are left out under it too
  { id: 'cross', label: 'Cross-attention', kinds: ['cross'], forceKind: 'cross', controls: { layer: true, heads: 'one', agg: true, step: true, threshold: true, measure: true } },
  { id: 'step', label: 'Step view', kinds: null, needsStep: true, controls: { layer: true, heads: 'one', query: true, stepPart: true } },
  { id: 'positions', label: 'Positions', kinds: null, needsPositions: true, kindless: true, controls: {} },
  { id: 'heads', label: 'Head overview', kinds: null, needsHeads: true, controls: {} },
  { id: 'qk', label: 'Query/key space', kinds: null, needsStep: true, controls: { layer: true, heads: 'one' } },
  { id: 'parts', label: 'Score parts', kinds: null, needsStep: true, controls: { layer: true, heads: 'one', query: true } },
  // the lens reads the decoder's outputs: decoder-only models (decoder_self) and translators (cross)
  { id: 'lens', label: 'Logit lens', kinds: ['decoder_self', 'cross'], kindless: true, needsLens: true, controls: {} },
];

export const VIEW_IDS = VIEW_SPECS.map((v) => v.id);

/** Views that can set a second sentence (or model) beside the first (views/compare.js draws them). */
export const COMPARE_VIEWS = ['head', 'heatmap'];

/** The entry of a view id (the head view's for an unknown id). */
export function viewSpec(id) {
  return VIEW_SPECS.find((v) => v.id === id) || VIEW_SPECS[0];
}

/** Can this view show anything for a result with these kinds? */
export function viewAvailable(view, kinds) {
  const v = typeof view === 'string' ? viewSpec(view) : view;
  return !v.kinds || v.kinds.some((k) => kinds.includes(k));
}

/** The attention kind a view draws in a state (the cross view always draws cross-attention). */
export function kindShown(s) {
  return viewSpec(s.view).forceKind || s.kind;
}
