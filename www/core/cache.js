// The one cache type of the session's answers (step internals, head scores, position tables):
// the entries used last are kept, up to a limit, and every key is built by one function from the
// parts the answer depends on.

/** The key of an answer that depends on `parts` (strings, numbers, null, plain objects). */
export const cacheKey = (...parts) => JSON.stringify(parts);

/** A map that keeps the `limit` entries used last: a get() that finds one counts as a use. */
export class LruCache {
  constructor(limit) {
    this.limit = limit;
    this.map = new Map(); // least recently used first
  }

  /** The entry, or null; a found entry becomes the most recently used. */
  get(key) {
    if (!this.map.has(key)) return null;
    const value = this.map.get(key);
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  /** Keep `value` under `key`, forgetting the entries used least recently past the limit. */
  set(key, value) {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.limit) this.map.delete(this.map.keys().next().value);
  }
}
