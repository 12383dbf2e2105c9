// Models from the Hugging Face Hub by id, fetched by the worker from the Hub's own URL layout,
// {hub}/{repo}/resolve/{revision}/{file} (any server laid out the same way will do: a mirror, or
// the tests' local one):
//
//   hf:<owner>/<name>[@<revision>][?file=<name>.gguf]
//
// A repo gives config.json, tokenizer.json and model.safetensors (or the shards its
// model.safetensors.index.json names), or the one .gguf that `file=` names. Only their headers
// are fetched first (HTTP Range requests), so the architecture and sizes are checked
// (inspectModel, as for a dropped folder) before any weights are downloaded. Errors name the repo,
// the revision and the file. A file is downloaded by the loop every model file is
// (model-files.js receive(): progress and a size check).

import { receive } from './model-files.js';

export const DEFAULT_HUB = 'https://huggingface.co';
/** How long a Hub may keep us waiting, for its answer and between bytes, before it is given up
 *  with a word (configure({ hubTimeout }) in seconds; the page's ?hubTimeout=). */
export const DEFAULT_HUB_PATIENCE_MS = 30_000;
const ID = /^hf:([A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*)(?:@([\w./-]+?))?(?:\?file=([^?#/]+\.gguf))?$/;

/** Is this model id a Hub id? */
export const isHubId = (id) => String(id).startsWith('hf:');

/** 'hf:owner/name@rev?file=x.gguf' → { repo, revision, file } (revision 'main' by default). */
export function parseHubId(id) {
  const m = ID.exec(String(id).trim());
  if (!m) throw new Error(`"${id}" is not a Hub model id: write hf:owner/name, optionally @revision and ?file=name.gguf`);
  return { repo: m[1], revision: m[2] || 'main', file: m[3] || null };
}

// A repo's address as copied from a Hub's address bar: /owner/name, then optionally
// /tree/<revision>, or /blob|resolve/<revision>/<file>.gguf.
const REPO_PATH = /^\/([A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*)(?:\/(?:tree|blob|resolve)\/([\w.-]+)(?:\/([^/]+\.gguf))?)?\/?$/;

/** A pasted Hub URL (https://huggingface.co/owner/name, …/tree/<rev>, …/blob/<rev>/<file>.gguf,
 *  or a mirror's) → { repo, revision, file }; null when the text is no such URL. */
export function hubRepoFromUrl(text) {
  let url;
  try {
    url = new URL(String(text).trim());
  } catch {
    return null;
  }
  const m = /^https?:$/.test(url.protocol) ? REPO_PATH.exec(url.pathname) : null;
  return m ? { repo: m[1], revision: m[2] || 'main', file: m[3] || null } : null;
}

/** The id with its parts in one spelling (the revision named only when it is not main). */
export function hubId({ repo, revision, file }) {
  return `hf:${repo}${revision && revision !== 'main' ? `@${revision}` : ''}${file ? `?file=${file}` : ''}`;
}

/** Why the Hub said no, in words, from the status and the Hub's X-Error-Code header. */
function refusal(res, where) {
  const code = res.headers.get('x-error-code') || '';
  if (code === 'GatedRepo') return `${where}: the repo is gated (its page on the Hub asks you to accept its terms; attnviz sends no token, so it cannot fetch gated repos)`;
  if (code === 'RepoNotFound' || (res.status === 401 && !code)) return `${where}: no such repo, or a private one (HTTP ${res.status})`;
  if (code === 'RevisionNotFound') return `${where}: the repo has no revision by that name (HTTP ${res.status})`;
  if (res.status === 404) return `${where}: not in the repo (HTTP 404)`;
  return `${where}: HTTP ${res.status}`;
}

/**
 * One repo at one revision on one hub: finds its model files and reads them.
 *   const repo = new HubRepo(hub, parseHubId(id));
 *   const files = await repo.modelFiles();           // Map name → RemoteFile (size known)
 *   const bytes = await files.get(name).bytes(onChunk);
 */
export class HubRepo {
  /** onHeadBytes(name, loaded, total, whole): a header read's progress (a GGUF's is its first
   *  32 MiB; whole: the read is the whole file, as config.json's is). */
  constructor(hub, { repo, revision, file }, patienceMs = DEFAULT_HUB_PATIENCE_MS, onHeadBytes = () => {}) {
    this.patienceMs = patienceMs;
    this.onHeadBytes = onHeadBytes;
    this.hub = String(hub || DEFAULT_HUB).replace(/\/+$/, '');
    this.repo = repo;
    this.revision = revision;
    this.file = file;
  }

  url(name) {
    return `${this.hub}/${this.repo}/resolve/${encodeURIComponent(this.revision)}/${name}`;
  }

  /** "owner/name@revision/file", as errors name a file. */
  where(name) {
    return `${this.repo}@${this.revision}/${name}`;
  }

  /** GET (with a Range when given): the response, or null for a file the repo does not have. */
  async get(name, range = null, { optional = false } = {}) {
    let res;
    // Given up when no answer (its headers) came in time; the body is watched by receive().
    const answer = new AbortController();
    const timer = setTimeout(() => answer.abort(), this.patienceMs);
    try {
      res = await fetch(this.url(name), { headers: range ? { Range: range } : {}, credentials: 'omit', signal: answer.signal });
    } catch (e) {
      if (answer.signal.aborted) throw new Error(`${this.where(name)}: no answer from ${this.hub} within ${Math.round(this.patienceMs / 1000)} s (a slow or stalled network)`, { cause: e });
      throw new Error(`${this.where(name)}: could not be fetched from ${this.hub} (${e.message}: no network, or the server does not allow this page to read it, CORS)`, { cause: e });
    } finally {
      clearTimeout(timer);
    }
    if (res.ok) return res;
    if (optional && res.status === 404 && (res.headers.get('x-error-code') || 'EntryNotFound') === 'EntryNotFound') return null;
    throw new Error(refusal(res, this.where(name)));
  }

  /** A file's size from one byte of it (206 Content-Range); null when the repo does not have it. */
  async probe(name, { optional = false } = {}) {
    const res = await this.get(name, 'bytes=0-0', { optional });
    if (!res) return null;
    const range = /\/(\d+)\s*$/.exec(res.headers.get('content-range') || '');
    const size = range ? Number(range[1]) : Number(res.headers.get('content-length'));
    if (res.body) res.body.cancel().catch(() => {}); // a server that ignored the Range sends it all: stop it
    if (!Number.isFinite(size) || size < 0 || (!range && res.status !== 200)) throw new Error(`${this.where(name)}: the server gave no size for it`);
    return new RemoteFile(this, name, size);
  }

  /** The model's files as RemoteFiles (sizes known, nothing of the weights read yet). */
  async modelFiles() {
    const out = new Map();
    const add = async (name, optional = false) => {
      const f = await this.probe(name, { optional });
      if (f) out.set(name, f);
      return f;
    };
    if (this.file) {
      await add(this.file);
      return out;
    }
    await add('config.json');
    await add('tokenizer.json');
    if (!(await add('model.safetensors', true))) {
      const index = await add('model.safetensors.index.json', true);
      if (!index) throw new Error(`${this.where('model.safetensors')}: the repo has neither model.safetensors nor model.safetensors.index.json (attnviz reads safetensors weights, or one .gguf named with ?file=)`);
      let shards;
      try {
        shards = [...new Set(Object.values(JSON.parse(new TextDecoder().decode(await index.bytes())).weight_map || {}))];
      } catch (e) {
        throw new Error(`${this.where('model.safetensors.index.json')}: not a shard index (${e.message})`, { cause: e });
      }
      for (const s of shards.map(String)) {
        if (!/^[\w.-]+\.safetensors$/.test(s)) throw new Error(`${this.where('model.safetensors.index.json')}: names a shard "${s}" that is not a file of the repo's top level`);
        await add(s);
      }
    }
    return out;
  }
}

/** A file of a Hub repo with the slice()/size of a Blob (what own-model.js readHeads reads). */
export class RemoteFile {
  constructor(repo, name, size) {
    this.repo = repo;
    this.name = name;
    this.size = size;
    this.head = null; // the bytes from 0 that a slice read (a GGUF's first 32 MiB): not fetched twice
  }

  /** Bytes [start, end) as a Blob's slice would give them: { arrayBuffer() }, one Range request,
   *  read as a download is (its progress told, given up when the bytes stop coming). */
  slice(start = 0, end = this.size) {
    const from = Math.max(0, start);
    const to = Math.min(this.size, end);
    return {
      arrayBuffer: async () => {
        if (to <= from) return new ArrayBuffer(0);
        const res = await this.repo.get(this.name, `bytes=${from}-${to - 1}`);
        // A server that ignored the Range sends the whole file.
        const partial = res.status === 206;
        const expected = partial ? to - from : this.size;
        let loaded = 0;
        const got = await receive(res, {
          expected,
          onChunk: (n) => this.repo.onHeadBytes(this.name, (loaded += n), expected, to - from === this.size),
          what: this.repo.where(this.name),
          said: 'the server said',
          stallMs: this.repo.patienceMs,
        });
        const buf = partial ? got : got.slice(from, to); // each its own whole buffer
        if (from === 0 && buf.byteLength === to) this.head = buf; // (read only, by readHeads and bytes())
        return buf.buffer;
      },
    };
  }

  /** The whole file; onChunk(bytes) as it arrives. Checked against the size the probe gave.
   *  The head a slice read already is not fetched again: only the rest is (one Range request). */
  async bytes(onChunk = () => {}) {
    const what = this.repo.where(this.name);
    const head = this.head;
    this.head = null;
    if (head && head.byteLength === this.size) {
      onChunk(head.byteLength);
      return head;
    }
    if (head) {
      const res = await this.repo.get(this.name, `bytes=${head.byteLength}-${this.size - 1}`);
      if (res.status === 206) {
        onChunk(head.byteLength);
        const rest = await receive(res, { expected: this.size - head.byteLength, onChunk, what, said: 'the server said', stallMs: this.repo.patienceMs });
        const out = new Uint8Array(this.size);
        out.set(head, 0);
        out.set(rest, head.byteLength);
        return out;
      }
      return receive(res, { expected: this.size, onChunk, what, said: 'the server said', stallMs: this.repo.patienceMs }); // the Range was ignored: it all came
    }
    const res = await this.repo.get(this.name);
    return receive(res, { expected: this.size, onChunk, what, said: 'the server said', stallMs: this.repo.patienceMs });
  }
}
