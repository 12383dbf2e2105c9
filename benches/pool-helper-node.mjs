// A GEMM helper thread of pkg/threads/ under Node (benches/wasm-builds.mjs loadThreadsBuild): the
// worker_threads twin of www/worker/pool-helper.js.
import { parentPort, workerData } from 'node:worker_threads';
import { enableRelaxedSimd } from './wasm-builds.mjs';

enableRelaxedSimd();
const glue = await import(workerData.glue);
glue.initSync({ module: workerData.module, memory: workerData.memory });
parentPort.postMessage('ready');
glue.poolHelper(); // never returns
