#!/usr/bin/env python3
"""Tiny static file server for attnviz (python3 stdlib only).

URL layout (PREFIX defaults to "/"):
  PREFIX pkg/...     -> pkg/      (wasm-bindgen output)
  PREFIX models/...  -> models/   (weights fetched by `make models`)
  PREFIX ...         -> www/      (the page; a directory serves its index.html)

Every response carries the cross-origin isolation headers that a later threads/WebGPU path needs
(COOP same-origin + COEP require-corp), CORP cross-origin, ACAO *, Cache-Control: no-cache and
Referrer-Policy: no-referrer; HTML, SVG and JavaScript also carry the pages' Content-Security-Policy
(the same as their <meta> tag; it also covers the Web Worker, which no <meta> tag reaches).
Scripts, wasm, JSON and safetensors go gzip-compressed (Content-Encoding) to clients that accept it,
compressed once per file and kept in memory.
Once listening it prints exactly one line: "attnviz is being served at http://127.0.0.1:PORT/PREFIX".

Connections: one thread waits on every open connection at once (selectors) and receives request
heads without blocking; only a whole head goes to a bounded pool of WORKERS threads, so idle or
half-open connections (even ones that send half a request and stall) hold no thread. A connection
idle for IDLE_TIMEOUT s, or whose request head is not complete REQUEST_TIMEOUT s after it began,
is closed (at most MAX_IDLE wait, the oldest closed first); a worker drops a connection whose body
or answer stalls for REQUEST_TIMEOUT s. A body sent with GET, HEAD or OPTIONS is read and
discarded (never taken for the next request); one too large to skip closes the connection after
the answer. The listen backlog is LISTEN_BACKLOG.

Usage: python3 scripts/serve.py [--port N (default $PORT or 8080; 0 = any free port)]
                                [--host 127.0.0.1] [--prefix /course/week3/] [--verbose]
"""
from __future__ import annotations

import argparse
import email.utils
import http.server
import io
import os
import posixpath
import selectors
import signal
import socket
import sys
import threading
import time
import urllib.parse
import zlib
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MIME = {
    ".wasm": "application/wasm",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".wgsl": "text/plain; charset=utf-8",
    ".woff2": "font/woff2",
    ".ts": "text/plain; charset=utf-8",  # the .d.ts files wasm-bindgen writes
}
BINARY_DEFAULT = "application/octet-stream"  # .safetensors, .bin, .gguf, .spm, ...

# The pages' <meta http-equiv="Content-Security-Policy"> (www/index.html, embed.html, examples.html;
# tests/e2e/server.test.mjs checks that they agree). connect-src: models by Hub id are fetched
# from the Hugging Face Hub, its CDN or a mirror (any https origin), or a Hub-layout server on
# this machine; scripts stay 'self' only.
CSP = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; "
       "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "connect-src 'self' https: http://127.0.0.1:* http://localhost:*; "
       "object-src 'none'; base-uri 'self'; form-action 'none'")

WORKERS = 16  # threads that answer requests
LISTEN_BACKLOG = 128  # connections the kernel queues before accept()
REQUEST_TIMEOUT = 15.0  # s: a started request must be read, and each write progress, within this
IDLE_TIMEOUT = 30.0  # s: a connection that sends nothing for this long is closed
MAX_IDLE = 1000  # idle connections kept open at most (the oldest is closed first)
MAX_DISCARD = 1 << 20  # a GET/HEAD/OPTIONS body up to this many bytes is read and dropped
MAX_HEAD = 65536 + 8192  # bytes of a request head received before it goes to a worker regardless

# The policy goes on what a browser runs as a document or a worker: HTML, SVG and JavaScript (the
# Web Worker's own response is what governs it). Data (JSON, wasm, weights, text) gets none, so a
# plain file can still stand in for a page of another site in tests/e2e/widget.test.mjs.
CSP_TYPES = ("text/html", "image/svg+xml", "text/javascript")

# Sent gzip-compressed to a client that accepts it (a whole-file GET, no Range): the wasm, scripts,
# JSON (tokenizer.json 466 → 193 KB) and safetensors (MiniLM int8: 23.0 → 21.1 MB); that is what
# keeps a first visit under 25 MB. Each file is compressed once per (mtime, size) and kept.
GZIP_EXT = {".wasm", ".js", ".mjs", ".json", ".map", ".html", ".htm", ".css", ".svg", ".txt", ".md", ".ts", ".safetensors"}
GZIP_MAX_BYTES = 256 << 20  # larger files go as they are (the memory the cache may hold per file)
_gzip_cache: dict[str, tuple[tuple[float, int], bytes]] = {}
_gzip_lock = threading.Lock()


def accepts_gzip(header: str | None) -> bool:
    """Accept-Encoding lists gzip (or *) without q=0."""
    for part in (header or "").split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = params.strip().lower()
            if not q.startswith("q="):
                return True
            try:
                return float(q[2:]) > 0
            except ValueError:
                return False
    return False


def gzipped(fs_path: str, st: os.stat_result) -> bytes:
    """The gzip bytes of a file, compressed on first use and kept until it changes."""
    key = (st.st_mtime, st.st_size)
    with _gzip_lock:  # one compression per file even when requests for it arrive together
        hit = _gzip_cache.get(fs_path)
        if hit and hit[0] == key:
            return hit[1]
        with open(fs_path, "rb") as f:
            c = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: a gzip container
            data = c.compress(f.read()) + c.flush()
        _gzip_cache[fs_path] = (key, data)
        return data


COMMON_HEADERS = [
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Embedder-Policy", "require-corp"),
    ("Cross-Origin-Resource-Policy", "cross-origin"),
    ("Access-Control-Allow-Origin", "*"),
    ("Cache-Control", "no-cache"),
    ("X-Content-Type-Options", "nosniff"),
]


def make_handler(prefix: str, mounts: list[tuple[str, str]], verbose: bool):
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "attnviz-serve"

        def version_string(self):
            return self.server_version
        protocol_version = "HTTP/1.1"

        # -- plumbing ---------------------------------------------------------------------------
        def log_message(self, fmt, *args):  # quiet unless --verbose
            if verbose:
                sys.stderr.write("%s - %s\n" % (self.address_string(), fmt % args))

        def send_header(self, keyword, value):
            if keyword.lower() == "content-type":
                self.content_type = value
            super().send_header(keyword, value)

        def end_headers(self):
            if getattr(self, "content_type", "").startswith(CSP_TYPES):
                self.send_header("Content-Security-Policy", CSP)
            for k, v in COMMON_HEADERS:
                self.send_header(k, v)
            super().end_headers()

        # -- one request per call: the server keeps the connection between requests ----------
        def setup(self):
            conn = self.request  # a Conn (see Server): its buffered reader lives across requests
            self.connection = conn.sock
            self.rfile = conn.rfile
            self.wfile = conn.wfile

        def handle(self):
            self.close_connection = True  # parse_request() clears it for a keep-alive request
            self.handle_one_request()

        def finish(self):
            pass  # the files belong to the connection, which the server closes

        def discard_body(self):
            """Read and drop a request body (GET, HEAD and OPTIONS take none) so that its bytes
            are not read as the next request; a body that cannot be skipped closes the
            connection after the answer."""
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
                return
            cl = self.headers.get("Content-Length")
            if cl is None:
                return
            try:
                n = int(cl.strip())
            except ValueError:
                n = -1
            if n < 0 or n > MAX_DISCARD:
                self.close_connection = True
                return
            while n > 0:
                chunk = self.rfile.read(min(n, 1 << 16))
                if not chunk:
                    self.close_connection = True
                    return
                n -= len(chunk)

        def send_plain(self, code: int, text: str, extra: list[tuple[str, str]] = ()):
            body = (text + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        # -- mapping ----------------------------------------------------------------------------
        def resolve(self, raw_path: str):
            """Return ("file", fs_path) | ("redirect", url) | ("error", code)."""
            path = urllib.parse.unquote(raw_path, errors="strict")
            if "\x00" in path or "\\" in path:
                return ("error", 400)
            if not path.startswith(prefix):
                if path + "/" == prefix:
                    return ("redirect", prefix)
                return ("error", 404)
            rest = path[len(prefix):]
            parts = rest.split("/")
            if any(p in ("..", ".") for p in parts):
                return ("error", 403)
            if any(p.startswith(".") for p in parts if p):  # no dotfiles (.gitkeep, temp dirs)
                return ("error", 404)
            for url_dir, fs_dir in mounts:
                if url_dir and (rest == url_dir.rstrip("/") or rest.startswith(url_dir)):
                    sub = rest[len(url_dir):] if rest.startswith(url_dir) else ""
                    base = fs_dir
                    break
            else:
                sub, base = rest, os.path.join(ROOT, "www")
            fs_path = os.path.normpath(os.path.join(base, *[p for p in sub.split("/") if p]))
            base_real = os.path.realpath(base)
            real = os.path.realpath(fs_path)
            if real != base_real and not real.startswith(base_real + os.sep):
                return ("error", 403)
            if os.path.isdir(real):
                if not path.endswith("/"):
                    return ("redirect", urllib.parse.quote(path + "/"))
                real = os.path.join(real, "index.html")
            if not os.path.isfile(real):
                return ("error", 404)
            return ("file", real)

        # -- verbs ------------------------------------------------------------------------------
        def do_OPTIONS(self):
            self.discard_body()
            self.send_response(204)
            self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "*")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_HEAD(self):
            self.discard_body()
            self.do_GET()

        def do_GET(self):
            if self.command == "GET":  # do_HEAD comes here too, once
                self.discard_body()
            url = urllib.parse.urlsplit(self.path)
            try:
                kind, val = self.resolve(url.path)
            except UnicodeDecodeError:
                kind, val = "error", 400
            if kind == "redirect":
                loc = val + (("?" + url.query) if url.query else "")
                return self.send_plain(301, f"moved to {loc}", [("Location", loc)])
            if kind == "error":
                msg = {400: "bad request", 403: "forbidden", 404: "not found"}[val]
                return self.send_plain(val, msg)
            self.send_file(val)

        def send_file(self, fs_path: str):
            ext = posixpath.splitext(fs_path)[1].lower()
            ctype = MIME.get(ext, BINARY_DEFAULT)
            try:
                f = open(fs_path, "rb")
            except OSError:
                return self.send_plain(404, "not found")
            with f:
                st = os.fstat(f.fileno())
                size = st.st_size
                ims = self.headers.get("If-Modified-Since")
                if ims and not self.headers.get("Range"):
                    try:
                        since = email.utils.parsedate_to_datetime(ims).timestamp()
                    except (TypeError, ValueError):
                        since = None
                    if since is not None and int(st.st_mtime) <= since:
                        self.send_response(304)
                        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
                        self.end_headers()
                        return
                start, end = 0, size - 1
                status = 200
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes=") and "," not in rng and size > 0:
                    a, _, b = rng[6:].strip().partition("-")
                    try:
                        if a == "":
                            start, end = max(0, size - int(b)), size - 1
                        else:
                            start = int(a)
                            end = min(int(b), size - 1) if b else size - 1
                        if start > end or start >= size:
                            return self.send_plain(416, "range not satisfiable",
                                                   [("Content-Range", f"bytes */{size}")])
                        status = 206
                    except ValueError:
                        start, end, status = 0, size - 1, 200
                length = end - start + 1 if size else 0
                body = None
                if status == 200 and ext in GZIP_EXT and 0 < size <= GZIP_MAX_BYTES \
                        and accepts_gzip(self.headers.get("Accept-Encoding")):
                    body = gzipped(fs_path, st)
                    length = len(body)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(length))
                if ext in GZIP_EXT:
                    self.send_header("Vary", "Accept-Encoding")
                if body is not None:
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                self.end_headers()
                if self.command == "HEAD" or length == 0:
                    return
                if body is not None:
                    try:
                        self.wfile.write(body)
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True
                    return
                f.seek(start)
                remaining = length
                try:
                    while remaining > 0:
                        chunk = f.read(min(1 << 20, remaining))
                        if not chunk:
                            break
                        self.wfile.write(chunk)
                        remaining -= len(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

    return Handler


class SocketWriter:
    """The write side of a connection (unbuffered: every write is one sendall)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def write(self, b) -> int:
        self.sock.sendall(b)
        return len(b)

    def writable(self) -> bool:
        return True

    def flush(self):
        pass


class ConnReader(io.RawIOBase):
    """The read side of a connection: first the bytes the waiting thread already received
    (`pending`), then the socket."""

    def __init__(self, sock: socket.socket):
        super().__init__()
        self.sock = sock
        self.pending = bytearray()

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int | None:
        if self.pending:
            n = min(len(b), len(self.pending))
            b[:n] = self.pending[:n]
            del self.pending[:n]
            return n
        try:
            return self.sock.recv_into(b)
        except (BlockingIOError, InterruptedError):
            return None


class Conn:
    """One client connection, kept from one request to the next."""

    __slots__ = ("sock", "addr", "raw", "rfile", "wfile", "deadline")

    def __init__(self, sock: socket.socket, addr):
        self.sock = sock
        self.addr = addr
        self.raw = ConnReader(sock)
        self.rfile = io.BufferedReader(self.raw)
        self.wfile = SocketWriter(sock)
        self.deadline = 0.0

    def head_complete(self) -> bool:
        """Whether the received bytes hold a whole request head (or more than a head may be)."""
        p = self.raw.pending
        return b"\r\n\r\n" in p or b"\n\n" in p or len(p) > MAX_HEAD

    def keep_unread(self):
        """Move what the buffered reader holds beyond the last request back to `pending`
        (without reading the socket), so the waiting thread sees a pipelined request."""
        self.sock.setblocking(False)
        try:
            left = self.rfile.peek(1)
            if left:
                self.raw.pending[:0] = self.rfile.read(len(left))
        finally:
            self.sock.setblocking(False)  # the waiting thread never blocks on a connection

    def close(self):
        for f in (self.rfile, self.sock):
            try:
                f.close()
            except OSError:
                pass


class Server(http.server.HTTPServer):
    """An HTTP server on which idle and half-open connections cost no thread.

    The thread in serve_forever() waits on the listening socket and on every waiting connection at
    once (selectors) and receives, without blocking, the head of each request; only a whole head
    goes to the pool of WORKERS threads, which answers it. A keep-alive connection then comes back
    to wait. A connection that sends nothing for IDLE_TIMEOUT s, or starts a head and does not
    finish it within REQUEST_TIMEOUT s, is closed; at most MAX_IDLE wait (the oldest goes first).
    """

    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address, handler):
        super().__init__(address, handler)
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="serve")
        self.selector = selectors.DefaultSelector()
        self.waiting: dict[Conn, None] = {}  # connections the selector watches, oldest first
        self.active: set[Conn] = set()  # connections a worker is answering
        self.lock = threading.Lock()
        self.returned: list[Conn] = []  # from the workers, to wait again (guarded by lock)
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.stopping = False

    # -- the waiting thread ---------------------------------------------------------------------
    def serve_forever(self, poll_interval: float = 0.5):
        self.socket.setblocking(False)
        self.selector.register(self.socket, selectors.EVENT_READ, "listen")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        while not self.stopping:
            for key, _ in self.selector.select(poll_interval):
                if key.data == "listen":
                    self.accept_some()
                elif key.data == "wake":
                    self.take_returned()
                else:
                    self.receive(key.data)
            self.expire()

    def accept_some(self):
        for _ in range(64):
            try:
                sock, addr = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. out of file descriptors: the rest stays in the backlog
                return
            sock.setblocking(False)
            try:  # headers and body go out in separate writes: do not let Nagle hold the second
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            self.wait_on(Conn(sock, addr))

    def wait_on(self, conn: Conn):
        if conn.head_complete():  # a pipelined request: answer it at once
            self.dispatch(conn)
            return
        while len(self.waiting) >= MAX_IDLE:
            self.drop(next(iter(self.waiting)))
        try:
            self.selector.register(conn.sock, selectors.EVENT_READ, conn)
        except (ValueError, OSError):  # closed meanwhile
            conn.close()
            return
        now = time.monotonic()
        conn.deadline = now + (REQUEST_TIMEOUT if conn.raw.pending else IDLE_TIMEOUT)
        self.waiting[conn] = None

    def receive(self, conn: Conn):
        try:
            data = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client closed (or reset) the connection
            self.drop(conn)
            return
        if not conn.raw.pending:  # a request starts: its head has REQUEST_TIMEOUT s to arrive
            conn.deadline = time.monotonic() + REQUEST_TIMEOUT
        conn.raw.pending += data
        if conn.head_complete():
            self.unwatch(conn)
            self.dispatch(conn)

    def unwatch(self, conn: Conn):
        self.waiting.pop(conn, None)
        try:
            self.selector.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass

    def drop(self, conn: Conn):
        self.unwatch(conn)
        conn.close()

    def expire(self):
        now = time.monotonic()
        for conn in [c for c in self.waiting if c.deadline <= now]:
            self.drop(conn)

    def take_returned(self):
        try:
            while self.wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        with self.lock:
            back, self.returned = self.returned, []
        for conn in back:
            self.wait_on(conn)

    def dispatch(self, conn: Conn):
        with self.lock:
            self.active.add(conn)
        try:
            self.pool.submit(self.answer, conn)
        except RuntimeError:  # the pool is shut down
            self.finished(conn, keep=False)

    # -- the workers ----------------------------------------------------------------------------
    def answer(self, conn: Conn):
        keep = False
        try:
            conn.sock.settimeout(REQUEST_TIMEOUT)  # for a body and for writing the answer
            handler = self.RequestHandlerClass(conn, conn.addr, self)
            if not handler.close_connection and not self.stopping:
                conn.keep_unread()
                keep = True
        except Exception:  # a reset, a timeout, a bug: this connection ends, the server goes on
            keep = False
        self.finished(conn, keep)

    def finished(self, conn: Conn, keep: bool):
        with self.lock:
            self.active.discard(conn)
            keep = keep and not self.stopping
            if keep:
                self.returned.append(conn)
        if not keep:
            conn.close()
            return
        try:
            self.wake_w.send(b"\0")
        except (BlockingIOError, InterruptedError):
            pass  # wake-ups are pending already
        except OSError:  # stopping
            pass

    # -- stopping -------------------------------------------------------------------------------
    def shutdown(self):
        self.stopping = True
        try:
            self.wake_w.send(b"\0")
        except OSError:
            pass

    def server_close(self):
        self.stopping = True
        super().server_close()
        for conn in list(self.waiting):
            self.drop(conn)
        with self.lock:
            active, returned = list(self.active), self.returned
            self.returned = []
        for conn in returned:
            conn.close()
        for conn in active:  # unblock the workers answering them
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.selector.close()
        self.wake_r.close()
        self.wake_w.close()


def normalise_prefix(p: str) -> str:
    p = "/" + p.strip("/")
    return p if p == "/" else p + "/"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Serve the attnviz page, pkg/ and models/.")
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8080),
                    help="port (default $PORT or 8080; 0 picks a free one)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--prefix", default="/", help="mount everything under this URL path")
    ap.add_argument("--verbose", "-v", action="store_true", help="log every request to stderr")
    args = ap.parse_args(argv)

    prefix = normalise_prefix(args.prefix)
    mounts = [("pkg/", os.path.join(ROOT, "pkg")), ("models/", os.path.join(ROOT, "models"))]
    handler = make_handler(prefix, mounts, args.verbose)
    try:
        httpd = Server((args.host, args.port), handler)
    except OSError as e:
        print(f"serve.py: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    port = httpd.server_address[1]
    host = args.host if ":" not in args.host else f"[{args.host}]"
    def stop(signum, frame):  # SIGTERM (e.g. from the test harness): shut down like Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"attnviz is being served at http://{host}:{port}{prefix}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
