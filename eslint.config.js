// ESLint flat config (`npx eslint .`, run by `make lint` and so by `make test`): the recommended
// rules everywhere, with the globals each kind of file really has.
//   www/        ES modules in the page (browser); worker.js runs in a Web Worker, sw.js is a
//               classic-script service worker.
//   tests/e2e/, tests/wasm/, benches/typing.mjs, benches/notebook.mjs  Node files whose page.evaluate() callbacks run
//               in the browser: both sets.
//   scripts/, benches/  Node scripts (.mjs).
import js from '@eslint/js';
import globals from 'globals';

// The layers of www/, each importing only the ones below it: base (timing: what every layer's
// main-thread work is measured by) ← the worker (the wasm and the model files, with the protocol
// that reaches them) ← core (the session, the state, the
// analyses: no DOM) ← views (drawing) ← shell (what every host binds: controls, pointer, render)
// ← page, widget, notebook (the hosts; the notebook shows the widget). Only the core talks to
// the worker (core/engine.js is what a host may configure of it).
const LAYERS = ['base', 'worker', 'core', 'views', 'shell', 'page', 'widget', 'notebook'];
const MAY_IMPORT = {
  base: [],
  worker: ['base'],
  core: ['worker', 'base'],
  views: ['core', 'base'],
  shell: ['views', 'core', 'base'],
  page: ['shell', 'views', 'core', 'base'],
  widget: ['shell', 'views', 'core', 'base'],
  notebook: ['widget', 'shell', 'core', 'base'],
};
const layerRules = LAYERS.map((layer) => ({
  files: [`www/${layer}/**/*.js`],
  rules: {
    'no-restricted-imports': ['error', {
      patterns: LAYERS.filter((l) => l !== layer && !MAY_IMPORT[layer].includes(l)).map((l) => ({
        group: [`../${l}/*`, `../../www/${l}/*`],
        message: `www/${layer}/ may import ${MAY_IMPORT[layer].map((m) => `www/${m}/`).join(', ') || 'nothing of the other layers'} (layers point down: eslint.config.js LAYERS)`,
      })),
    }],
  },
}));

export default [
  // Generated, fetched or installed files are not ours to lint.
  { ignores: ['pkg/**', 'dist/**', 'target/**', 'models/**', 'node_modules/**', '.toolchain/**', '.venv/**', 'test-results/**', 'python/attnviz/static/**', 'python/build/**'] },
  js.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      'no-unused-vars': 'error',
    },
  },
  {
    files: ['www/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['www/worker/worker.js'],
    languageOptions: { globals: { ...globals.worker } },
  },
  {
    files: ['www/sw.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.serviceworker } },
  },
  ...layerRules,
  {
    files: ['tests/e2e/**/*.mjs', 'tests/wasm/**/*.mjs', 'benches/typing.mjs', 'benches/notebook.mjs'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
  {
    files: ['scripts/**/*.mjs', 'benches/**/*.mjs', 'eslint.config.js'],
    languageOptions: { globals: { ...globals.node } },
  },
];
