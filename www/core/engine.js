// The worker as the layers above the core reach it: what a host configures (where the wasm and
// the models are), the models a notebook adds or opens, the Hub ids and dropped folders the page
// reads, and the files the service worker keeps. Everything else of the worker (its requests
// and their answers) goes through the session; nothing above the core imports www/worker/.

export { addModels, configure, configuredBase, openModel, workerHub } from '../worker/worker-client.js';
export { buildFile, PREBUNDLED_FROM } from '../worker/wasm-build.js';
export { hubId, hubRepoFromUrl, parseHubId } from '../worker/hub.js';
export { collectDrop, SUPPORTED_TEXT } from '../worker/own-model.js';
