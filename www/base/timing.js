// How long the app's own main-thread work takes, measured by the app itself: every slice of a
// sliced drawing (slices.js) and every handler the page and the widget run (their event
// listeners, animation frames and the tasks they schedule, the session's updates). The page shows
// the log in window.attnvizDebug.timings, a widget in its element's `timings` (the same log: one
// per page, whatever the number of hosts). The e2e tests hold each entry to a budget
// (tests/e2e/main-thread.mjs). This is what the product controls; the browser's Long Tasks API (a
// task over 50 ms) also counts style, layout, paint, garbage collection and the time other
// processes took the CPU.

// The log keeps its newest entries: a test takes them (take()) after each thing it does.
const MAX_ENTRIES = 20_000;
const entries = [];
let total = 0;

/** Note that `what` has held the main thread since `start` (a performance.now()); extra: more
 *  fields for the entry. An entry: { what, at: start, ms, …extra }. */
export function record(what, start, extra) {
  total++;
  const e = { what, at: start, ms: performance.now() - start };
  entries.push(extra ? Object.assign(e, extra) : e);
  if (entries.length > MAX_ENTRIES) entries.splice(0, entries.length - MAX_ENTRIES);
}

/** fn, each call timed as `what` (its `this` and arguments passed on, its value returned). */
export function timed(what, fn) {
  return function timedCall(...args) {
    const t0 = performance.now();
    try {
      return fn.apply(this, args);
    } finally {
      record(what, t0);
    }
  };
}

/** target.addEventListener(type, fn, options), the listener timed as `${label}:${type}`. */
export function listen(label, target, type, fn, options = undefined) {
  target.addEventListener(type, timed(`${label}:${type}`, fn), options);
}

/** requestAnimationFrame(fn), timed as `what`. */
export const onFrame = (what, fn) => requestAnimationFrame(timed(what, fn));

/** setTimeout(fn, ms), timed as `what`. */
export const later = (what, fn, ms = 0) => setTimeout(timed(what, fn), ms);

/** The log: entries ({ what, at, ms, …}) since the last take(), oldest first. TEST HOOK, not an API. */
export const timings = {
  /** The entries recorded since the last take(), and the log emptied. */
  take: () => entries.splice(0),
  /** How many entries were ever recorded (including those taken or dropped). */
  get total() {
    return total;
  },
};
