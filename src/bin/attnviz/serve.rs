//! `attnviz serve`: the static server of `make serve`, of the browser tests and of course sites
//! (`--prefix /course/week3/`), on hyper and tower-http's `ServeFile`.
//!
//! URL layout (PREFIX defaults to "/"):
//!   PREFIX pkg/...     -> ROOT/pkg/     (wasm-bindgen output)
//!   PREFIX models/...  -> ROOT/models/  (weights fetched by `make models`)
//!   PREFIX ...         -> ROOT/www/     (the page; a directory serves its index.html)
//!
//! What it adds to serving files, and why:
//! - Cross-origin isolation (COOP same-origin + COEP require-corp) for the threads build and
//!   WebGPU, CORP and ACAO for pages of other sites that embed the widget, the pages'
//!   Content-Security-Policy on what runs as a document or a worker (no `<meta>` reaches a
//!   Worker), `Cache-Control: no-cache` so an edited file is seen on reload.
//! - Compression is done once, at build time (`scripts/precompress.mjs` writes `.br` and `.gz`
//!   beside each compressible file): a variant is served only while it is at least as new as its
//!   file, so an edited source is sent as it is until the next `make precompress`, never stale.
//!   Nothing is compressed at request time, so no request waits on another's compression.
//! - Each connection is a task: a slow reader, a trickled body or a trickled head costs its own
//!   connection and nothing else. A request head must arrive within [`HEAD_TIMEOUT`] and fit in
//!   [`MAX_HEAD_BYTES`]; at most `max_connections` are open at once (the rest wait in the
//!   kernel's backlog of [`LISTEN_BACKLOG`]), derived from the file-descriptor limit so that a
//!   file can always be opened for a connection that was accepted.
//! - A request for several ranges gets the whole file (200): tower-http answers it 416, and a
//!   server may ignore Range (RFC 9110 §14.2), which every client handles.

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};
use std::io;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Semaphore;
use tower_http::services::ServeFile;

/// Time a request head has to arrive in full, counted from when the server starts waiting for
/// it (so it is also how long an idle keep-alive connection is kept).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(20);
/// The largest request head (request line and headers) answered; 431 beyond it. hyper's read
/// buffer is bounded by it too, but a read may overshoot that bound (heads of 112 KiB got
/// through), so [`head_bytes`] holds each request to it exactly.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Connections the kernel queues before they are accepted.
pub const LISTEN_BACKLOG: u32 = 1024;
/// Open connections at most, whatever the file-descriptor limit allows.
const MAX_CONNECTIONS: usize = 4096;
/// File descriptors kept for the listener, the runtime and standard streams.
const RESERVED_FDS: u64 = 64;

/// The pages' `<meta http-equiv="Content-Security-Policy">` (www/index.html, embed.html,
/// examples.html; tests/e2e/server.test.mjs checks that they agree). connect-src: models by Hub
/// id come from the Hugging Face Hub, its CDN or a mirror (any https origin), or a Hub-layout
/// server on this machine; scripts stay 'self' only.
pub const CSP: &str =
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; \
style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; \
connect-src 'self' https: http://127.0.0.1:* http://localhost:*; \
object-src 'none'; base-uri 'self'; form-action 'none'";

/// The policy goes on what a browser runs as a document or a worker. Data (JSON, wasm, weights)
/// gets none, so a plain file can stand in for a page of another site in the widget tests.
const CSP_TYPES: [&str; 3] = ["text/html", "image/svg+xml", "text/javascript"];

const COMMON_HEADERS: [(&str, &str); 7] = [
    ("referrer-policy", "no-referrer"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-embedder-policy", "require-corp"),
    ("cross-origin-resource-policy", "cross-origin"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "no-cache"),
    ("x-content-type-options", "nosniff"),
];

/// Content type by extension; anything else (.safetensors, .gguf, .spm, …) is binary.
fn content_type(path: &Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "wasm" => "application/wasm",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" | "map" => "application/json",
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "txt" | "wgsl" => "text/plain; charset=utf-8",
        "ts" => "text/plain; charset=utf-8", // the .d.ts files wasm-bindgen writes
        "md" => "text/markdown; charset=utf-8",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// Extensions `scripts/precompress.mjs` may have written `.br`/`.gz` variants for (it keeps the
/// same list); their answers vary with Accept-Encoding.
pub const COMPRESSIBLE: [&str; 15] = [
    "wasm",
    "js",
    "mjs",
    "json",
    "map",
    "html",
    "htm",
    "css",
    "svg",
    "txt",
    "md",
    "ts",
    "safetensors",
    "bin",
    "spm",
];

fn compressible(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| COMPRESSIBLE.contains(&e.to_ascii_lowercase().as_str()))
}

pub struct Options {
    pub root: PathBuf,
    pub host: String,
    pub port: u16,
    pub prefix: String,
    pub verbose: bool,
}

/// "/course/week3" → "/course/week3/"; "" → "/"; "a//b" → "/a/b/". A prefix no request can
/// reach is refused: `.` and `..` segments (a client resolves them away, so `--prefix ../../`
/// printed a URL that answered 404), and what a URL path cannot hold as it is (`?`, `#`, `%`,
/// `\`, control characters).
pub fn normalise_prefix(p: &str) -> Result<String, String> {
    let segments: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return Err(format!(
            "--prefix {p}: a prefix is a path on this server (such as /course/week3/), without . or .. segments"
        ));
    }
    if let Some(c) = p.chars().find(|&c| c.is_control() || matches!(c, '?' | '#' | '%' | '\\')) {
        return Err(format!("--prefix {p}: {c:?} cannot be part of a path prefix"));
    }
    Ok(if segments.is_empty() { "/".into() } else { format!("/{}/", segments.join("/")) })
}

/// A decoded path (the prefix, or a folder below it) as it goes in a URL: each segment
/// percent-encoded.
fn url_path<'a>(segments: impl IntoIterator<Item = &'a str>) -> String {
    let encoded: Vec<String> =
        segments.into_iter().map(|s| utf8_percent_encode(s, SEGMENT).to_string()).collect();
    encoded.join("/")
}

/// What a request path maps to.
#[derive(Debug, PartialEq)]
pub enum Target {
    File(PathBuf),
    /// A path on this server (always starting with the prefix, so never `//host`).
    Redirect(String),
    Status(StatusCode),
}

/// Characters escaped in one path segment of a redirect's Location.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'\\')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// Maps a raw (percent-encoded) request path to a file under `root`'s www/, pkg/ or models/.
/// Dot segments are refused, dotfiles are hidden, and a path that leaves its folder through a
/// symbolic link is refused. A folder without its trailing slash redirects to its canonical path
/// (empty segments dropped, so `/%2Fviews` goes to `/views/`, not to the host `views`).
pub fn resolve(root: &Path, prefix: &str, raw_path: &str) -> Target {
    let path = match percent_decode_str(raw_path).decode_utf8() {
        Ok(p) => p,
        Err(_) => return Target::Status(StatusCode::BAD_REQUEST),
    };
    if path.contains('\0') || path.contains('\\') {
        return Target::Status(StatusCode::BAD_REQUEST);
    }
    let Some(rest) = path.strip_prefix(prefix) else {
        return if format!("{path}/") == prefix {
            Target::Redirect(url_path(prefix.split('/')))
        } else {
            Target::Status(StatusCode::NOT_FOUND)
        };
    };
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return Target::Status(StatusCode::FORBIDDEN);
    }
    if segments.iter().any(|s| s.starts_with('.')) {
        return Target::Status(StatusCode::NOT_FOUND); // .gitkeep, build stamps, temp folders
    }
    let (base, inside) = match segments.first() {
        Some(&"pkg") => ("pkg", &segments[1..]),
        Some(&"models") => ("models", &segments[1..]),
        _ => ("www", &segments[..]),
    };
    let base = root.join(base);
    let wanted: PathBuf = inside.iter().fold(base.clone(), |p, s| p.join(s));
    debug_assert!(wanted.components().all(|c| !matches!(c, Component::ParentDir)));
    let (base_real, real) = match (std::fs::canonicalize(&base), std::fs::canonicalize(&wanted)) {
        (Ok(b), Ok(r)) => (b, r),
        (_, Err(e)) | (Err(e), _) => return Target::Status(io_status(&e)),
    };
    if !real.starts_with(&base_real) {
        return Target::Status(StatusCode::FORBIDDEN);
    }
    if real.is_dir() {
        if !path.ends_with('/') {
            let below = segments.iter().copied().chain([""]);
            return Target::Redirect(url_path(
                prefix.trim_end_matches('/').split('/').chain(below),
            ));
        }
        let index = real.join("index.html");
        return if index.is_file() {
            Target::File(index)
        } else {
            Target::Status(StatusCode::NOT_FOUND)
        };
    }
    if real.is_file() {
        Target::File(real)
    } else {
        Target::Status(StatusCode::NOT_FOUND)
    }
}

/// A missing file is 404; anything else (out of file descriptors, an I/O error) is the server's
/// trouble, not the file's absence: 503, so a client retries instead of taking the file as gone.
fn io_status(e: &io::Error) -> StatusCode {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => StatusCode::NOT_FOUND,
        io::ErrorKind::PermissionDenied => StatusCode::FORBIDDEN,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// A `.br`/`.gz` variant that is there and no older than its file.
fn fresh_variant(file: &Path, modified: SystemTime, suffix: &str) -> bool {
    let mut name = file.as_os_str().to_owned();
    name.push(suffix);
    std::fs::metadata(PathBuf::from(name)).and_then(|m| m.modified()).is_ok_and(|t| t >= modified)
}

type Body = UnsyncBoxBody<Bytes, io::Error>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut res = Response::new(
        Full::new(Bytes::from(format!("{text}\n"))).map_err(|never| match never {}).boxed_unsync(),
    );
    *res.status_mut() = status;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    res
}

fn status_text(status: StatusCode) -> &'static str {
    status.canonical_reason().unwrap_or("error")
}

/// The length of `req`'s head as sent without optional whitespace: request line, header lines,
/// blank line.
fn head_bytes<B>(req: &Request<B>) -> usize {
    let request_line = req.method().as_str().len() + req.uri().to_string().len() + 12;
    let headers: usize = req.headers().iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum();
    request_line + headers + 2
}

async fn answer(root: &Path, prefix: &str, req: Request<Incoming>) -> Response<Body> {
    if head_bytes(&req) > MAX_HEAD_BYTES {
        let s = StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
        return plain(s, status_text(s));
    }
    match *req.method() {
        Method::GET | Method::HEAD => {}
        Method::OPTIONS => {
            let mut res = plain(StatusCode::NO_CONTENT, "");
            *res.body_mut() =
                Full::new(Bytes::new()).map_err(|never| match never {}).boxed_unsync();
            let h = res.headers_mut();
            h.remove(header::CONTENT_TYPE);
            h.insert(
                "access-control-allow-methods",
                HeaderValue::from_static("GET, HEAD, OPTIONS"),
            );
            h.insert("access-control-allow-headers", HeaderValue::from_static("*"));
            return res;
        }
        _ => {
            let mut res = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
            res.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            return res;
        }
    }
    let target = {
        let (root, prefix, path) =
            (root.to_owned(), prefix.to_owned(), req.uri().path().to_owned());
        // canonicalize and stat are blocking calls
        tokio::task::spawn_blocking(move || resolve(&root, &prefix, &path))
            .await
            .unwrap_or(Target::Status(StatusCode::SERVICE_UNAVAILABLE))
    };
    let file = match target {
        Target::File(f) => f,
        Target::Redirect(location) => {
            let location = match req.uri().query() {
                Some(q) => format!("{location}?{q}"),
                None => location,
            };
            let mut res = plain(StatusCode::MOVED_PERMANENTLY, &format!("moved to {location}"));
            if let Ok(v) = HeaderValue::from_str(&location) {
                res.headers_mut().insert(header::LOCATION, v);
            }
            return res;
        }
        Target::Status(s) => return plain(s, status_text(s)),
    };
    let (mut parts, _body) = req.into_parts();
    let several_ranges =
        parts.headers.get(header::RANGE).is_some_and(|r| r.as_bytes().contains(&b','));
    if several_ranges {
        parts.headers.remove(header::RANGE);
    }
    let mime = content_type(&file);
    let mut service = ServeFile::new_with_mime(&file, &mime.parse().expect("a valid MIME type"));
    let vary = compressible(&file);
    // A Range asks for bytes of the file itself: the variants are for whole-file answers.
    if vary && !parts.headers.contains_key(header::RANGE) {
        if let Ok(modified) = std::fs::metadata(&file).and_then(|m| m.modified()) {
            if fresh_variant(&file, modified, ".br") {
                service = service.precompressed_br();
            }
            if fresh_variant(&file, modified, ".gz") {
                service = service.precompressed_gzip();
            }
        }
    }
    let req = Request::from_parts(parts, http_body_util::Empty::<Bytes>::new());
    match service.try_call(req).await {
        Ok(res) => {
            let mut res = res.map(|b| b.boxed_unsync());
            if vary {
                res.headers_mut().insert(header::VARY, HeaderValue::from_static("accept-encoding"));
            }
            if res.status() == StatusCode::NOT_FOUND {
                // The file was there a moment ago: gone meanwhile.
                return plain(StatusCode::NOT_FOUND, "not found");
            }
            res
        }
        Err(e) => {
            let s = io_status(&e);
            plain(s, &format!("{}: {e}", status_text(s)))
        }
    }
}

fn request_line(req: &Request<Incoming>) -> String {
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    format!("{} {target} {:?}", req.method(), req.version())
}

fn with_common_headers(mut res: Response<Body>) -> Response<Body> {
    let h = res.headers_mut();
    let runs_as_page = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| CSP_TYPES.iter().any(|p| t.starts_with(p)));
    if runs_as_page {
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    }
    for (k, v) in COMMON_HEADERS {
        h.insert(k, HeaderValue::from_static(v));
    }
    if res.status() == StatusCode::SERVICE_UNAVAILABLE {
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    res
}

/// Raises the soft file-descriptor limit to the hard one, and returns the connections that may
/// be open at once: each may hold a socket and a file, with [`RESERVED_FDS`] kept for the rest.
fn connection_budget() -> usize {
    // SAFETY: getrlimit/setrlimit write and read only the struct passed.
    let limit = unsafe {
        let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
            return 256;
        }
        if l.rlim_cur < l.rlim_max {
            let raised = libc::rlimit { rlim_cur: l.rlim_max, rlim_max: l.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                l = raised;
            }
        }
        l.rlim_cur
    };
    let budget = limit.saturating_sub(RESERVED_FDS) / 2;
    (budget as usize).clamp(1, MAX_CONNECTIONS)
}

fn listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serves until SIGINT or SIGTERM. Prints exactly one line once listening:
/// "attnviz is being served at http://HOST:PORT/PREFIX".
pub fn run(options: Options) -> Result<(), String> {
    let prefix = normalise_prefix(&options.prefix)?;
    let root = std::fs::canonicalize(&options.root)
        .map_err(|e| format!("cannot read the folder {}: {e}", options.root.display()))?;
    if !root.join("www").join("index.html").is_file() {
        return Err(format!(
            "{} has no www/index.html: run attnviz serve from the repository (or give --root)",
            root.display()
        ));
    }
    let ip: std::net::IpAddr = options
        .host
        .parse()
        .map_err(|_| format!("--host needs an IP address, not `{}`", options.host))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(16)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server's runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = listener(SocketAddr::new(ip, options.port))
            .map_err(|e| format!("cannot listen on {}:{}: {e}", options.host, options.port))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let host = if ip.is_ipv6() { format!("[{ip}]") } else { ip.to_string() };
        let url_prefix = url_path(prefix.split('/'));
        println!("attnviz is being served at http://{host}:{port}{url_prefix}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let shared = Arc::new((root, prefix));
        let slots = Arc::new(Semaphore::new(connection_budget()));
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(HEAD_TIMEOUT)
            .max_buf_size(MAX_HEAD_BYTES);
        let http = Arc::new(http);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| e.to_string())?;
        loop {
            let slot = tokio::select! {
                s = slots.clone().acquire_owned() => s.expect("the semaphore is never closed"),
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
            };
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors or memory: wait for connections to end rather than
                        // spin on accept().
                        if options.verbose {
                            eprintln!("accept: {e}");
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
            };
            let _ = stream.set_nodelay(true);
            let (shared, http, verbose) = (shared.clone(), http.clone(), options.verbose);
            tokio::spawn(async move {
                let _slot = slot;
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let shared = shared.clone();
                    async move {
                        let line = verbose.then(|| request_line(&req));
                        let res = with_common_headers(answer(&shared.0, &shared.1, req).await);
                        if let Some(line) = line {
                            // The common log format's middle: `"GET /x HTTP/1.1" 200 1234`.
                            let length = res
                                .headers()
                                .get(header::CONTENT_LENGTH)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("-");
                            eprintln!("{peer} \"{line}\" {} {length}", res.status().as_u16());
                        }
                        Ok::<_, std::convert::Infallible>(res)
                    }
                });
                let _ = http.serve_connection(TokioIo::new(stream), service).await;
            });
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_normalised() {
        for (given, prefix) in [
            ("/", "/"),
            ("", "/"),
            ("course/week3", "/course/week3/"),
            ("/course/week3/", "/course/week3/"),
            ("//course//week3", "/course/week3/"),
        ] {
            assert_eq!(normalise_prefix(given).as_deref(), Ok(prefix), "{given}");
        }
        for refused in ["../../", "/a/./b", "/a?b", "/a#b", "/a%20b", "/a\\b", "/a\u{1b}b"] {
            assert!(normalise_prefix(refused).is_err(), "{refused}");
        }
        assert_eq!(url_path("/cours/été 3/".split('/')), "/cours/%C3%A9t%C3%A9%203/");
    }

    /// root/{www/{index.html, views/a.js, .hidden}, pkg/attnviz.js, models/}, and a link out.
    fn tree() -> PathBuf {
        let root = std::env::temp_dir().join(format!("attnviz-serve-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in ["www/views", "pkg", "models", "outside"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in
            ["www/index.html", "www/views/a.js", "www/.hidden", "pkg/attnviz.js", "outside/secret"]
        {
            std::fs::write(root.join(f), f).unwrap();
        }
        std::os::unix::fs::symlink(root.join("outside"), root.join("www/out")).unwrap();
        root
    }

    #[test]
    fn paths_map_to_files_under_their_folder_and_nowhere_else() {
        let root = tree();
        let real = |p: &str| Target::File(std::fs::canonicalize(root.join(p)).unwrap());
        let at = |prefix: &str, p: &str| resolve(&root, prefix, p);
        assert_eq!(at("/", "/"), real("www/index.html"));
        assert_eq!(at("/", "/views/a.js"), real("www/views/a.js"));
        assert_eq!(at("/", "/pkg/attnviz.js"), real("pkg/attnviz.js"));
        assert_eq!(at("/c/", "/c/views/a.js"), real("www/views/a.js"));
        assert_eq!(at("/c/", "/c"), Target::Redirect("/c/".into()));
        assert_eq!(at("/c/", "/views/a.js"), Target::Status(StatusCode::NOT_FOUND));
        assert_eq!(at("/", "/views"), Target::Redirect("/views/".into()));
        // A decoded slash must not make the Location a host (`//views/` → http://views/).
        assert_eq!(at("/", "/%2Fviews"), Target::Redirect("/views/".into()));
        assert_eq!(at("/", "//views"), Target::Redirect("/views/".into()));
        assert_eq!(at("/", "/views/"), Target::Status(StatusCode::NOT_FOUND)); // no index.html
        assert_eq!(at("/", "/../Cargo.toml"), Target::Status(StatusCode::FORBIDDEN));
        assert_eq!(
            at("/", "/views/%2e%2e/%2e%2e/outside/secret"),
            Target::Status(StatusCode::FORBIDDEN)
        );
        assert_eq!(at("/", "/.hidden"), Target::Status(StatusCode::NOT_FOUND));
        assert_eq!(at("/", "/out/secret"), Target::Status(StatusCode::FORBIDDEN));
        assert_eq!(at("/", "/a%00b"), Target::Status(StatusCode::BAD_REQUEST));
        assert_eq!(at("/", "/%ff"), Target::Status(StatusCode::BAD_REQUEST));
        assert_eq!(at("/", "/nope.js"), Target::Status(StatusCode::NOT_FOUND));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
