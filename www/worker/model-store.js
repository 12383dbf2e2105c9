// Where a user's own models are kept between visits: one small interface over two backends, used
// by the worker's model-files.js (the page and the widget share the worker, so they share this
// too).
//
//   const store = await modelStore();   // null where the browser keeps nothing for us
//   await store.keep(manifest, byName); // byName: Map file name → Blob; all or nothing
//   await store.list();                 // the manifests kept
//   await store.read(manifest);         // { file name: Blob }
//   await store.remove(id);
//
// OPFS (the origin-private file system) first: it holds large files without copying them through
// memory. Where it is missing (older Safari, some private modes, some embedded webviews) or
// refuses us, IndexedDB, which every browser has in workers too, keeps each file as a Blob.

const NAME = 'attnviz-models'; // OPFS folder and IndexedDB database

// ---------------------------------------------------------------- OPFS: attnviz-models/<id>/
// A model's files, then manifest.json last: a folder without it is an unfinished copy. The
// folder's name is the id URI-encoded (a Hub id, hf:owner/name, has a slash; own-… ids are
// their own encoding, so folders kept before stay readable).

const folderOf = (id) => encodeURIComponent(id);

const opfs = {
  async open() {
    const root = await navigator.storage.getDirectory();
    return root.getDirectoryHandle(NAME, { create: true });
  },
  async keep(dir, manifest, byName) {
    const sub = await dir.getDirectoryHandle(folderOf(manifest.id), { create: true });
    for (const f of manifest.files) await writeFile(sub, f, byName.get(f));
    await writeFile(sub, 'manifest.json', new Blob([JSON.stringify(manifest)]));
  },
  async list(dir) {
    const out = [];
    for await (const [name, h] of dir.entries()) {
      if (h.kind !== 'directory') continue;
      try {
        const m = JSON.parse(await (await (await h.getFileHandle('manifest.json')).getFile()).text());
        if (m && folderOf(m.id) === name) out.push(m);
      } catch {
        // an unfinished copy: not offered
      }
    }
    return out;
  },
  async read(dir, manifest) {
    const sub = await dir.getDirectoryHandle(folderOf(manifest.id));
    const out = {};
    for (const f of manifest.files) out[f] = await (await sub.getFileHandle(f)).getFile();
    return out;
  },
  async remove(dir, id) {
    try {
      await dir.removeEntry(folderOf(id), { recursive: true });
    } catch (e) {
      if (e.name !== 'NotFoundError') throw e;
    }
  },
};

async function writeFile(dir, name, blob) {
  const h = await dir.getFileHandle(name, { create: true });
  if (h.createWritable) {
    const w = await h.createWritable();
    await w.write(blob);
    await w.close();
    return;
  }
  // Safari writes OPFS files only through sync access handles, which exist in workers.
  const a = await h.createSyncAccessHandle();
  try {
    a.truncate(0);
    a.write(new Uint8Array(await blob.arrayBuffer()), { at: 0 });
    a.flush();
  } finally {
    a.close();
  }
}

// ---------------------------------------------------------------- IndexedDB: database attnviz-models
// Store `files`: a Blob per key [id, file name]; store `manifests`: a manifest per id. One
// transaction writes or deletes a whole model, so there is no unfinished copy to skip.

const idb = {
  open() {
    return new Promise((resolve, reject) => {
      const req = indexedDB.open(NAME, 1);
      req.onupgradeneeded = () => {
        req.result.createObjectStore('files');
        req.result.createObjectStore('manifests', { keyPath: 'id' });
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
      req.onblocked = () => reject(new Error('IndexedDB is blocked by another tab'));
    });
  },
  keep(db, manifest, byName) {
    return transact(db, 'readwrite', (files, manifests) => {
      for (const f of manifest.files) files.put(byName.get(f), [manifest.id, f]);
      manifests.put(manifest);
    });
  },
  list(db) {
    return transact(db, 'readonly', (files, manifests) => manifests.getAll());
  },
  async read(db, manifest) {
    const blobs = await transact(db, 'readonly', (files) => manifest.files.map((f) => files.get([manifest.id, f])));
    if (blobs.some((b) => !(b instanceof Blob))) throw new Error(`${manifest.name}: a file is missing from IndexedDB`);
    return Object.fromEntries(manifest.files.map((f, i) => [f, blobs[i]]));
  },
  remove(db, id) {
    return transact(db, 'readwrite', (files, manifests) => {
      files.delete(IDBKeyRange.bound([id], [id, []])); // every [id, name]: arrays sort after strings
      manifests.delete(id);
    });
  },
};

/** Run fill(files, manifests) in one transaction; resolves, once it commits, to the result(s) of
 *  the request(s) fill returned. */
function transact(db, mode, fill) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(['files', 'manifests'], mode);
    const reqs = fill(tx.objectStore('files'), tx.objectStore('manifests'));
    tx.oncomplete = () => resolve(Array.isArray(reqs) ? reqs.map((r) => r.result) : reqs && reqs.result);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error || new Error('IndexedDB transaction aborted'));
  });
}

// ---------------------------------------------------------------- the store in use

const BACKENDS = [
  ['opfs', opfs, () => typeof navigator !== 'undefined' && navigator.storage && typeof navigator.storage.getDirectory === 'function'],
  ['indexeddb', idb, () => typeof indexedDB !== 'undefined'],
];
let chosen = null;

/**
 * The first backend that opens here, bound to its handle: { kind, keep, list, read, remove }, or
 * null when none does. Decided once per worker.
 */
export function modelStore() {
  if (!chosen) {
    chosen = (async () => {
      for (const [kind, b, present] of BACKENDS) {
        if (!present()) continue;
        try {
          const h = await b.open();
          return {
            kind,
            keep: async (manifest, byName) => {
              try {
                await b.keep(h, manifest, byName);
              } catch (e) {
                await b.remove(h, manifest.id).catch(() => {}); // no half copy left behind
                throw e;
              }
            },
            list: async () => (await b.list(h)).filter((m) => m && m.user && Array.isArray(m.files)),
            read: (manifest) => b.read(h, manifest),
            remove: (id) => b.remove(h, id),
          };
        } catch {
          // refused here (e.g. OPFS in a private window): try the next one
        }
      }
      return null;
    })();
  }
  return chosen;
}
