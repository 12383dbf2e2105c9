// A stand-in for the Hugging Face Hub (no machine here reaches the real one): the Hub's URL
// layout, /{owner}/{name}/resolve/{revision}/{file}, served from local model folders, with what
// the Hub does that a client must handle: weights answered by a 302 to another path (the Hub's
// LFS/CDN redirect), Range requests (206 + Content-Range), CORS for pages of another origin, and
// its refusals (404 with X-Error-Code EntryNotFound / RepoNotFound / RevisionNotFound, 401
// GatedRepo). `requests` logs every path asked for.
//
//   const hub = await startHub({ 'owner/name': '/path/to/folder' }, { gated: ['owner/gated'], silent: […], stalling: […], stallingHead: […] });
//   hub.url  // 'http://127.0.0.1:PORT'
//   await hub.close();

import http from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const REVISIONS = ['main', '0123456789abcdef0123456789abcdef01234567'];
const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-headers': 'range',
  'access-control-expose-headers': 'content-range, content-length, etag, x-error-code, x-repo-commit',
  'cross-origin-resource-policy': 'cross-origin',
};

export function startHub(repos, { gated = [], silent = [], stalling = [], stallingHead = [] } = {}) {
  const requests = [];
  // silent: repos whose every file gets no answer at all; stalling: repos whose weights' download
  // (a request not from byte 0) sends its headers and a few bytes, then nothing; stallingHead:
  // repos whose weights' header read (bytes=0-N, N > 0) sends 1 MiB, then nothing. Until release(repo).
  const held = new Set([...silent, ...stalling, ...stallingHead]);
  const hanging = new Set();
  const hang = (res) => {
    hanging.add(res);
    res.on('close', () => hanging.delete(res));
  };
  const refuse = (res, status, code) => {
    res.writeHead(status, { ...CORS, 'content-type': 'application/json', 'x-error-code': code });
    res.end(JSON.stringify({ error: code }));
  };
  const sendFile = (req, res, file) => {
    const size = statSync(file).size;
    const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range || '');
    if (m) {
      const start = Number(m[1]);
      const end = Math.min(size - 1, m[2] ? Number(m[2]) : size - 1);
      if (start >= size || end < start) {
        res.writeHead(416, { ...CORS, 'content-range': `bytes */${size}` });
        res.end();
        return;
      }
      const body = readFileSync(file).subarray(start, end + 1);
      res.writeHead(206, { ...CORS, 'content-type': 'application/octet-stream', 'content-length': body.length, 'content-range': `bytes ${start}-${end}/${size}`, 'accept-ranges': 'bytes' });
      res.end(body);
      return;
    }
    res.writeHead(200, { ...CORS, 'content-type': 'application/octet-stream', 'content-length': size, 'accept-ranges': 'bytes', etag: `"${size}"` });
    res.end(readFileSync(file));
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://hub');
    requests.push({ path: decodeURIComponent(url.pathname), range: req.headers.range || null });
    if (req.method === 'OPTIONS') {
      res.writeHead(204, CORS);
      res.end();
      return;
    }
    // The CDN side of the weights' redirect: /cdn/<owner>/<name>/<file>.
    const cdn = /^\/cdn\/([^/]+\/[^/]+)\/([^/]+)$/.exec(url.pathname);
    if (cdn && repos[cdn[1]]) {
      if (stalling.includes(cdn[1]) && held.has(cdn[1]) && !/^bytes=0-/.test(req.headers.range || '')) {
        const size = statSync(path.join(repos[cdn[1]], cdn[2])).size;
        const start = Number(/^bytes=(\d+)-/.exec(req.headers.range || '')?.[1] || 0);
        res.writeHead(206, { ...CORS, 'content-type': 'application/octet-stream', 'content-range': `bytes ${start}-${size - 1}/${size}`, 'content-length': String(size - start) });
        res.write(Buffer.alloc(100));
        hang(res);
        return;
      }
      const head = /^bytes=0-(\d+)$/.exec(req.headers.range || '');
      if (stallingHead.includes(cdn[1]) && held.has(cdn[1]) && head && Number(head[1]) > 0) {
        const file = path.join(repos[cdn[1]], cdn[2]);
        const size = statSync(file).size;
        const end = Math.min(size - 1, Number(head[1]));
        res.writeHead(206, { ...CORS, 'content-type': 'application/octet-stream', 'content-range': `bytes 0-${end}/${size}`, 'content-length': String(end + 1) });
        res.write(readFileSync(file).subarray(0, Math.min(end + 1, 1 << 20)));
        hang(res);
        return;
      }
      sendFile(req, res, path.join(repos[cdn[1]], cdn[2]));
      return;
    }
    const m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (!m) return refuse(res, 404, 'RepoNotFound');
    const [, repo, revision, name] = m.map(decodeURIComponent);
    if (silent.includes(repo) && held.has(repo)) return hang(res);
    if (gated.includes(repo)) return refuse(res, 401, 'GatedRepo');
    if (!repos[repo]) return refuse(res, 401, 'RepoNotFound'); // the Hub answers 401 for a repo it will not say exists
    if (!REVISIONS.includes(revision)) return refuse(res, 404, 'RevisionNotFound');
    const file = path.join(repos[repo], name);
    if (name === 'manifest.json' || !existsSync(file)) return refuse(res, 404, 'EntryNotFound');
    if (/\.(safetensors|gguf|bin)$/.test(name)) {
      res.writeHead(302, { ...CORS, location: `/cdn/${repo}/${name}`, 'x-repo-commit': REVISIONS[1] });
      res.end();
      return;
    }
    sendFile(req, res, file);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        requests,
        release: (repo) => held.delete(repo),
        close: () => {
          for (const res of hanging) res.destroy();
          return new Promise((r) => server.close(r));
        },
      });
    });
  });
}
