#!/usr/bin/env python3
"""Tiny static file server for attnviz (python3 stdlib only).

URL layout (PREFIX defaults to "/"):
  PREFIX pkg/...     -> pkg/      (wasm-bindgen output)
  PREFIX models/...  -> models/   (weights fetched by `make models`)
  PREFIX ...         -> www/      (the page; a directory serves its index.html)

Every response carries the cross-origin isolation headers that a later threads/WebGPU path needs
(COOP same-origin + COEP require-corp), CORP cross-origin, ACAO *, and Cache-Control: no-cache.
Once listening it prints exactly one line: "attnviz is being served at http://127.0.0.1:PORT/PREFIX".

Usage: python3 scripts/serve.py [--port N (default $PORT or 8080; 0 = any free port)]
                                [--host 127.0.0.1] [--prefix /course/week3/] [--verbose]
"""
from __future__ import annotations

import argparse
import email.utils
import http.server
import os
import posixpath
import signal
import sys
import urllib.parse

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

COMMON_HEADERS = [
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

        def end_headers(self):
            for k, v in COMMON_HEADERS:
                self.send_header(k, v)
            super().end_headers()

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
            self.send_response(204)
            self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "*")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
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
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(length))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                self.end_headers()
                if self.command == "HEAD" or length == 0:
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


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


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
