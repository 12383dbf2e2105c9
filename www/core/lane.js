// One kind of request to the worker, as the session makes it (the forward of A, of B, a head's
// step internals, the head scores, a model's positions table): at most one in flight, and at most
// one owed, which is always the newest thing the state wants (what was wanted in between is never
// asked for). Every answer that comes back is kept, even when the state has moved on meanwhile:
// it is newer than what is on screen, and a finished forward is never thrown away.
//
//   const lane = new Lane(wanted, settle);
//   lane.run();          // the state may want something new: ask now, or once the answer in flight is in
//   lane.inFlight        // the request being answered, or null
//
// wanted() → { key, ask } or null: what the state asks for now (ask() → a promise of the
// worker's answer), null when it needs nothing (the answer is there, or no model yet).
// settle(request, answer, error) keeps what came back; then wanted() is asked again. A request
// that failed is not asked for again until something else has been (its key is `failed`), so
// an error never loops. A superseded answer (worker-client.js) is not settled.

export class Lane {
  constructor(wanted, settle) {
    this.wanted = wanted;
    this.settle = settle;
    this.inFlight = null;
    this.failed = null; // the key of the last request that failed
    this.running = null; // the promise of the loop below while it runs
  }

  /** What the state wants now and has not failed: a request, or null. */
  next() {
    const request = this.wanted();
    return request && request.key !== this.failed ? request : null;
  }

  /** Ask for what the state wants. Resolves when nothing more is wanted (or nothing could be). */
  run() {
    if (this.running) return this.running; // the loop asks wanted() again when its answer is in
    const first = this.next();
    if (!first) return Promise.resolve();
    this.running = this.loop(first);
    return this.running;
  }

  async loop(request) {
    try {
      while (request) {
        this.inFlight = request;
        let answer = null;
        let error = null;
        try {
          answer = await request.ask();
        } catch (e) {
          error = e;
        }
        this.inFlight = null;
        this.failed = error ? request.key : null;
        if (error || !answer.superseded) await this.settle(request, answer, error);
        request = this.next();
      }
    } finally {
      this.running = null;
    }
  }
}
