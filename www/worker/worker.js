// The model worker's entry: it receives the page's requests (the protocol: protocol.js), queues
// them (on a channel a newer request replaces an older one not yet started), and answers each by
// calling the library (library.js: the models, loaded or opened) and the engine (engine.js: the
// wasm instance). One worker per page, shared by the page and its widgets (worker-client.js).

import { ANSWER, collapses, FORWARD_PROGRESS_AFTER_MS, FORWARD_PROGRESS_EVERY_MS, lane, MAPS_SENT_WHOLE_BYTES, REQUEST, transferables } from './protocol.js';
import { buildInfo, guarded, supported, wasm } from './engine.js';
import { addModels, cancelLoad, catalogue, ensureInit, ensureModel, isCached, openHubModel, openUserModel, removeUserModel } from './library.js';

// ---------------------------------------------------------------- the request queue
const pending = new Map(); // lane → message (only the newest, not yet started)
let draining = false;

self.onmessage = (ev) => {
  const msg = ev.data;
  if (!msg || typeof msg !== 'object') return;
  if (!collapses(msg.type)) {
    handle(msg);
    return;
  }
  const key = lane(msg.channel, msg.type);
  const old = pending.get(key);
  if (old) self.postMessage({ id: old.id, type: ANSWER.superseded });
  pending.set(key, msg);
  if (!draining) {
    draining = true;
    yieldThen(drain);
  }
};

// Yield to the event loop without setTimeout's 4 ms clamp on nested timers: a message to
// ourselves is queued behind the messages that arrived while we computed.
const yieldChannel = new MessageChannel();
let yieldCallback = null;
yieldChannel.port1.onmessage = () => {
  const cb = yieldCallback;
  yieldCallback = null;
  if (cb) cb();
};
function yieldThen(cb) {
  yieldCallback = cb;
  yieldChannel.port2.postMessage(null);
}

async function drain() {
  const next = pending.entries().next();
  if (next.done) {
    draining = false;
    return;
  }
  const [key, msg] = next.value;
  pending.delete(key);
  await handle(msg);
  // Yield to the event loop so that messages that arrived meanwhile can supersede older ones.
  yieldThen(drain);
}

// ---------------------------------------------------------------- the answers
async function handle(msg) {
  const answer = (m, transfer = []) => self.postMessage({ id: msg.id, ...m }, transfer);
  const progress = (m) => answer({ type: ANSWER.progress, ...m });
  try {
    switch (msg.type) {
      case REQUEST.init:
        await ensureInit(msg);
        answer({ type: ANSWER.init, build: buildInfo(), supported: supported(), models: catalogue() });
        break;
      case REQUEST.load: {
        const m = await ensureModel(msg.model, progress);
        answer({ type: ANSWER.loaded, info: m.info });
        break;
      }
      case REQUEST.cancelLoad:
        answer({ type: ANSWER.cancelled, cancelled: cancelLoad(String(msg.model), `${msg.model}: the download was stopped`) });
        break;
      case REQUEST.cached: {
        await ensureInit();
        answer({ type: ANSWER.cached, cached: await isCached(String(msg.model)) });
        break;
      }
      case REQUEST.attend: {
        const m = await ensureModel(msg.model, progress);
        const t0 = performance.now();
        const step = msg.step ? { step: { kind: String(msg.step.kind), layer: msg.step.layer | 0, head: msg.step.head | 0 } } : {};
        const lens = msg.lens ? { lens: true } : {};
        // Past MAPS_SENT_WHOLE_BYTES of maps, only the layers the view draws; the rest stay here.
        const maps = Array.isArray(msg.maps) ? { maps: { keep: String(msg.channel), layers: msg.maps, wholeUpTo: MAPS_SENT_WHOLE_BYTES } } : {};
        const options = { ...generateOptions(m, msg.gen), valueNorms: !!msg.valueNorms, ...step, ...lens, ...maps };
        keepsMapsOf(msg.channel, maps.maps ? m : null);
        const result = guarded(() => m.model.attend(String(msg.text ?? ''), options, forwardProgress(progress)));
        const ms = performance.now() - t0;
        answer({ type: ANSWER.result, result, ms }, transferables(result));
        break;
      }
      case REQUEST.step: {
        const m = await ensureModel(msg.model, progress);
        const step = guarded(() => m.model.step(String(msg.text ?? ''), msg.kind, msg.layer | 0, msg.head | 0, generateOptions(m, msg.gen)));
        answer({ type: ANSWER.step, step }, transferables(step));
        break;
      }
      case REQUEST.maps: {
        const m = await ensureModel(msg.model, progress);
        const maps = guarded(() => m.model.maps(String(msg.channel), msg.forward >>> 0, String(msg.kind), msg.layer | 0));
        answer({ type: ANSWER.maps, maps }, [maps.buffer]);
        break;
      }
      case REQUEST.thumbnails: {
        const m = await ensureModel(msg.model, progress);
        const thumbnails = guarded(() => m.model.thumbnails(String(msg.channel), msg.forward >>> 0, String(msg.kind), msg.size | 0));
        answer({ type: ANSWER.thumbnails, thumbnails }, [thumbnails.buffer]);
        break;
      }
      case REQUEST.positions: {
        const m = await ensureModel(msg.model, progress);
        const positions = guarded(() => m.model.positions(msg.count | 0));
        answer({ type: ANSWER.positions, positions }, transferables(positions));
        break;
      }
      case REQUEST.open: {
        await ensureInit();
        const inspected = (report) => progress({ inspected: report });
        answer({ type: ANSWER.opened, ...(await openUserModel(msg.files, msg.name, inspected)) });
        break;
      }
      case REQUEST.openHub: {
        await ensureInit();
        answer({ type: ANSWER.opened, ...(await openHubModel(String(msg.model), progress)) });
        break;
      }
      case REQUEST.addFiles: {
        await ensureInit();
        addModels(msg.files, msg.models);
        answer({ type: ANSWER.added, models: catalogue() });
        break;
      }
      case REQUEST.remove: {
        await ensureInit();
        await removeUserModel(String(msg.model));
        answer({ type: ANSWER.removed });
        break;
      }
      case REQUEST.panicForTest: {
        // TEST HOOK (tests/e2e/robust-page.test.mjs): the page never sends it.
        await ensureInit();
        guarded(() => wasm().__panicForTest(String(msg.message ?? 'panic for test')));
        break;
      }
      default:
        throw new Error(`unknown request type ${msg.type}`);
    }
  } catch (e) {
    answer({ type: ANSWER.error, message: errorText(e) });
  }
}

const keptMaps = new Map(); // channel → the model entry whose attend keeps maps for it

/** A channel's forwards go to model entry `m` (null: none that keeps maps): the model it asked
 *  before drops the maps it kept for it (an int8 model's, once the exact weights draw). */
function keepsMapsOf(channel, m) {
  const before = keptMaps.get(channel);
  if (before && before !== m) {
    try {
      before.model.forget(String(channel));
    } catch {
      // a model of an instance that crashed since: its memory is gone with it
    }
  }
  if (m) keptMaps.set(channel, m);
  else keptMaps.delete(channel);
}

/** The hook attend() calls after each attention call (its kind, layer and query rows): posted
 *  as progress from FORWARD_PROGRESS_AFTER_MS into the forward on, at most every
 *  FORWARD_PROGRESS_EVERY_MS (the page is free meanwhile: the forward runs here). */
function forwardProgress(progress) {
  let next = performance.now() + FORWARD_PROGRESS_AFTER_MS;
  return (kind, layer, rows) => {
    const now = performance.now();
    if (now < next) return;
    next = now + FORWARD_PROGRESS_EVERY_MS;
    progress({ forward: { kind, layer, rows } });
  };
}

/** The wasm calls' options for a request's `gen` (protocol.js generationOptions): none for a
 *  model that does not generate. */
const generateOptions = (m, gen) => (gen && m.info.generates ? gen : {});

function errorText(e) {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}
