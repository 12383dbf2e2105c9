// Which of the two wasm builds (`make build`) a browser loads: pkg/relaxed/ (relaxed SIMD: the
// GEMM's multiply-adds are f32x4.relaxed_madd, an FMA where the CPU has one) where
// WebAssembly.validate accepts a relaxed-SIMD instruction, else pkg/ (SIMD128, every browser with
// wasm SIMD). Both give the same numbers within 1e-5 of the native build (make test-wasm runs its
// suite on each). The page's ?build=simd asks for pkg/ whatever the browser supports.
// Imported by the page's side (worker-client.js picks) and by the worker (which loads the pick).

/** (func (param v128 v128 v128) (result v128) local.get 0 local.get 1 local.get 2 f32x4.relaxed_madd) */
const RELAXED_PROBE = [0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 123, 123, 123, 1, 123, 3, 2, 1, 0, 10, 13, 1, 11, 0, 32, 0, 32, 1, 32, 2, 253, 133, 2, 11];

/** The builds by id: where their files are (relative to the base that holds pkg/) and their name. */
export const BUILDS = {
  relaxed: { id: 'relaxed', dir: 'pkg/relaxed/', label: 'wasm relaxed SIMD' },
  simd: { id: 'simd', dir: 'pkg/', label: 'wasm SIMD' },
};

/** Whether this browser validates a module that uses relaxed SIMD. */
export function hasRelaxedSimd() {
  try {
    return WebAssembly.validate(new Uint8Array(RELAXED_PROBE));
  } catch {
    return false;
  }
}

/** The build to load: `requested` when it names one ('simd' always works), else the best this browser validates. */
export function pickBuild(requested) {
  if (requested === 'simd') return BUILDS.simd;
  return hasRelaxedSimd() ? BUILDS.relaxed : BUILDS.simd;
}
