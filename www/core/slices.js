// Work done in slices of a few milliseconds, each slice its own task, so the page still answers
// keys and the pointer while a 512-token drawing is prepared (no task over 50 ms). Work is a
// generator: it `yield`s wherever it may be paused and `return`s its result. Each slice's time
// goes to the app's timing log (timing.js), with the longest step it ran: a slice lasts at most
// SLICE_MS plus its last step (and the done() that ends the work).

import { record } from '../base/timing.js';

export const SLICE_MS = 8;

// A MessageChannel task runs right after pending input, without setTimeout's 4 ms clamp.
const queue = [];
let channel = null;
function nextTask(fn) {
  if (typeof MessageChannel === 'undefined') {
    setTimeout(fn, 0);
    return;
  }
  if (!channel) {
    channel = new MessageChannel();
    channel.port1.onmessage = () => queue.shift()();
  }
  queue.push(fn);
  channel.port2.postMessage(null);
}

/** Yielded before a step that is long on its own (a large canvas allocation): it then starts a task of its own. */
export const NEW_TASK = Symbol('new task');

/** Is `x` paused work (a generator object) rather than a finished value? */
export const isSteps = (x) => !!x && typeof x.next === 'function' && typeof x[Symbol.iterator] === 'function';

/** Run `steps` to the end at once (exports, tests): its return value. */
export function drain(steps) {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * Run `steps` in slices: the first now (small work ends in the caller's task), the rest in later
 * tasks; then done(returnValue, slicesTaken), or failed(error). Returns cancel(): a superseded drawing stops.
 */
export function runSliced(steps, done, failed, what = 'slice') {
  let cancelled = false;
  let slices = 0;
  const slice = () => {
    if (cancelled) return;
    const start = performance.now();
    const end = start + SLICE_MS;
    let t = start;
    let longestStep = 0;
    let count = 0;
    slices++;
    try {
      for (;;) {
        const r = steps.next();
        const now = performance.now();
        longestStep = Math.max(longestStep, now - t);
        t = now;
        count++;
        if (r.done) {
          done(r.value, slices);
          return;
        }
        if (r.value === NEW_TASK || now >= end) break;
      }
    } catch (e) {
      failed(e);
      return;
    } finally {
      record(what, start, { steps: count, longestStep });
    }
    nextTask(slice);
  };
  slice();
  return () => {
    cancelled = true;
  };
}
