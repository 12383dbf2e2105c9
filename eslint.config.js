// ESLint flat config (`npx eslint .`, run by `make lint` and so by `make test`): the recommended
// rules everywhere, with the globals each kind of file really has.
//   www/        ES modules in the page (browser); worker.js runs in a Web Worker, sw.js is a
//               classic-script service worker.
//   tests/e2e/, tests/wasm/, benches/typing.mjs, benches/notebook.mjs  Node files whose page.evaluate() callbacks run
//               in the browser: both sets.
//   scripts/, benches/  Node scripts (.mjs).
import js from '@eslint/js';
import globals from 'globals';

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
  {
    files: ['tests/e2e/**/*.mjs', 'tests/wasm/**/*.mjs', 'benches/typing.mjs', 'benches/notebook.mjs'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
  {
    files: ['scripts/**/*.mjs', 'benches/**/*.mjs', 'eslint.config.js'],
    languageOptions: { globals: { ...globals.node } },
  },
];
