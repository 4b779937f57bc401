//! `harness serve`: a read-only web UI over the run store.
//!
//! `/` lists runs (name, db, workload, nemesis, isolation, date, verdict,
//! anomaly types; filter and sort in the page); `/run/<test>/<timestamp>/`
//! shows one run (configuration, verdict, anomalies with explanations and
//! cycle graphs, lost acknowledged writes with their crash windows, plots,
//! timeline, files, node logs); any other path under `/run/` serves a file
//! of the store or lists a directory.
//!
//! Key decisions: one fallback handler routes by hand so that every path is
//! checked in one place before it touches the file system: after percent-
//! decoding, a `..` or `.` segment, an empty segment (`//etc`), a backslash
//! or a NUL is refused with 400, and the resolved path must still lie inside
//! the canonical store root (symlinks cannot lead out; 403) — and so must
//! every file a page or a conversion opens (`runs::open_inside`). Only GET
//! and HEAD are answered. Binds 127.0.0.1 unless `--bind` says otherwise.
//!
//! Several `--store`s: `/` lists the first; the runs of store k (from 1 for
//! the second) are under `/s/<k>/run/…`; `/trends` and `/api/runs`
//! (`serve/trends.rs`) show the soak-tagged runs of all of them.
//! `<run>/archive.tar.gz` streams a run as one file (`serve/archive.rs`).
//!
//! Bounded by design: what the server holds does not grow with
//! the runs. Pages come from a small digest per run (`runs::Cache`, made
//! once per version of `results.json`, streaming); files are streamed in
//! [`CHUNK_BYTES`] pieces, and `history.jsonl` / `history.edn` are converted
//! from `history.jsonl.gz` op by op into the response through a bounded
//! channel. Work that reads the store takes a permit first: at most
//! [`PAGE_PERMITS`] pages and [`CONVERSION_PERMITS`] conversions at once;
//! a request that waits [`QUEUE_WAIT_S`] without one gets 503 with
//! `Retry-After` and a "busy" page (the wait is the hidden
//! `--queue-wait-ms`, or `HARNESS_SERVE_QUEUE_WAIT_MS`, for tests).

mod archive;
mod lost;
mod pages;
mod runs;
mod soak_section;
mod stream;
mod trends;

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, Method, Response, StatusCode, Uri, header};
use clap::Args;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Pages and file opens that may read the store at once.
pub const PAGE_PERMITS: usize = 4;
/// History conversions that may run at once (each one core while it runs).
pub const CONVERSION_PERMITS: usize = 2;
/// How long a request waits for a permit before it gets 503.
pub const QUEUE_WAIT_S: u64 = 120;
/// Bytes per piece of a streamed file or conversion.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Pieces a conversion may have made ahead of the client.
const CONVERSION_AHEAD_CHUNKS: usize = 4;

/// `harness serve` options.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (use 0.0.0.0 to allow other machines).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// Port (0 picks a free one; the address is printed on stdout).
    #[arg(long, short, default_value_t = 8080)]
    pub port: u16,
    /// The run store: the `runs` directory (or the directory holding it, as
    /// given to `harness run --store`). Repeat for several stores (one per
    /// shard or per night): `/trends` shows them together.
    #[arg(long, default_value = "runs")]
    pub store: Vec<PathBuf>,
    /// How long a request waits for a permit before 503, in milliseconds
    /// (hidden: for tests; the default is [`QUEUE_WAIT_S`]).
    #[arg(long, hide = true, env = "HARNESS_SERVE_QUEUE_WAIT_MS", default_value_t = QUEUE_WAIT_S * 1000)]
    pub queue_wait_ms: u64,
}

struct ServeState {
    /// Canonical store root (the first `--store`).
    root: PathBuf,
    /// Digests of the runs.
    cache: runs::Cache,
    /// The other stores: canonical root and digests.
    more: Vec<(PathBuf, runs::Cache)>,
    /// Permits for pages and file opens.
    pages: Arc<Semaphore>,
    /// Permits for history conversions.
    conversions: Arc<Semaphore>,
    /// How long a request waits for a permit.
    queue_wait: Duration,
}

/// Runs the server until Ctrl-C.
///
/// # Errors
/// When the store does not exist or the address cannot be bound.
pub fn run(args: ServeArgs) -> anyhow::Result<u8> {
    let mut roots = Vec::new();
    for s in &args.store {
        roots.push(store_root(s)?);
    }
    let mut roots = roots.into_iter();
    let root = roots.next().context("no --store given")?;
    let more: Vec<(PathBuf, runs::Cache)> = roots.map(|r| (r, runs::Cache::default())).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let addr = SocketAddr::new(args.bind, args.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let local = listener.local_addr().context("local address")?;
        // Tests and scripts read this line to learn the port.
        engine::say!("listening on http://{local}/ (store {})", root.display());
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::new(ServeState {
                root,
                cache: runs::Cache::default(),
                more,
                pages: Arc::new(Semaphore::new(PAGE_PERMITS)),
                conversions: Arc::new(Semaphore::new(CONVERSION_PERMITS)),
                queue_wait: Duration::from_millis(args.queue_wait_ms),
            }));
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")?;
        Ok(crate::exit::VALID)
    })
}

/// The canonical runs directory of a `--store`.
fn store_root(store: &Path) -> anyhow::Result<PathBuf> {
    let root = store
        .canonicalize()
        .with_context(|| format!("store directory {}", store.display()))?;
    anyhow::ensure!(root.is_dir(), "store {} is not a directory", root.display());
    // `harness run --store DIR` keeps runs in DIR/runs/: accept DIR too.
    Ok(match root.join("runs").canonicalize() {
        Ok(inner) if inner.is_dir() && !root.join(store::run::TEST_JSON).exists() => inner,
        _ => root,
    })
}

/// What a reply's body is.
enum Content {
    /// Made in memory (pages: bounded by their caps).
    Bytes(Vec<u8>),
    /// A file of the store, opened and checked, streamed.
    File(std::fs::File, u64),
    /// A history converted while it is sent.
    Convert(PathBuf, store::Format),
    /// A run directory (store root, run, archive's top directory) as a
    /// tar.gz made while it is sent.
    Archive(PathBuf, PathBuf, String),
}

/// A response before it becomes HTTP.
struct Reply {
    status: StatusCode,
    content_type: &'static str,
    body: Content,
    location: Option<String>,
    retry_after_s: Option<u64>,
}

impl Reply {
    fn html(body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            content_type: "text/html; charset=utf-8",
            body: Content::Bytes(body.into_bytes()),
            location: None,
            retry_after_s: None,
        }
    }

    fn error(status: StatusCode, message: &str) -> Reply {
        Reply {
            status,
            content_type: "text/html; charset=utf-8",
            body: Content::Bytes(pages::error_page(status.as_u16(), message).into_bytes()),
            location: None,
            retry_after_s: None,
        }
    }

    fn busy() -> Reply {
        let mut r = Reply::error(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy: too many requests are reading the store; retry shortly",
        );
        r.retry_after_s = Some(5);
        r
    }
}

/// A permit of `sem`, waiting at most `wait` ([`QUEUE_WAIT_S`] unless
/// `--queue-wait-ms` / `HARNESS_SERVE_QUEUE_WAIT_MS` says otherwise).
async fn permit(sem: &Arc<Semaphore>, wait: Duration) -> Option<OwnedSemaphorePermit> {
    tokio::time::timeout(wait, Arc::clone(sem).acquire_owned())
        .await
        .ok()?
        .ok()
}

async fn handle(State(state): State<Arc<ServeState>>, method: Method, uri: Uri) -> Response<Body> {
    let reply = if method != Method::GET && method != Method::HEAD {
        Reply::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "read-only: only GET and HEAD",
        )
    } else if let Some(page_permit) = permit(&state.pages, state.queue_wait).await {
        let path = uri.path().to_string();
        let st = Arc::clone(&state);
        let reply = tokio::task::spawn_blocking(move || route(&st, &path))
            .await
            .unwrap_or_else(|e| Reply::error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()));
        drop(page_permit);
        reply
    } else {
        Reply::busy()
    };
    let mut disposition = None;
    let (body, length) = match reply.body {
        Content::Bytes(b) => {
            let n = b.len() as u64;
            (Body::from(b), Some(n))
        }
        Content::File(file, len) => (stream::file_body(file.take(len)), Some(len)),
        Content::Convert(gz, format) => match permit(&state.conversions, state.queue_wait).await {
            Some(p) => (stream::conversion_body(gz, format, p), None),
            None => return busy_response(),
        },
        Content::Archive(root, dir, top) => {
            match permit(&state.conversions, state.queue_wait).await {
                Some(p) => {
                    disposition = Some(format!("attachment; filename=\"{top}.tar.gz\""));
                    (archive::body(root, dir, top, p), None)
                }
                None => return busy_response(),
            }
        }
    };
    let mut resp = respond(
        reply.status,
        reply.content_type,
        reply.location,
        reply.retry_after_s,
        body,
    );
    if let Some(n) = length {
        resp.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    if let Some(v) = disposition.and_then(|d| HeaderValue::from_str(&d).ok()) {
        resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    resp
}

/// 503 with `Retry-After` (no permit in time).
fn busy_response() -> Response<Body> {
    let busy = Reply::busy();
    respond(busy.status, busy.content_type, None, Some(5), {
        match busy.body {
            Content::Bytes(b) => Body::from(b),
            _ => Body::empty(),
        }
    })
}

fn respond(
    status: StatusCode,
    content_type: &'static str,
    location: Option<String>,
    retry_after_s: Option<u64>,
    body: Body,
) -> Response<Body> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    if let Some(s) = retry_after_s {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // No network: pages may only load their own inline code and store files.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'none'",
        ),
    );
    if let Some(loc) = location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        h.insert(header::LOCATION, loc);
    }
    resp
}

/// Why a request path was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum PathRefusal {
    /// Not valid percent-encoding or not UTF-8.
    BadEncoding,
    /// A `..` or `.` segment.
    Traversal,
    /// An absolute path (empty segment, leading `/` after decoding, backslash, NUL).
    Absolute,
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Splits a request path (after the route prefix) into safe segments.
/// A trailing `/` is allowed (`dir_slash`); nothing else empty is.
pub fn safe_segments(raw: &str) -> Result<(Vec<String>, bool), PathRefusal> {
    let mut segs = Vec::new();
    let dir_slash = raw.ends_with('/');
    let trimmed = raw.strip_suffix('/').unwrap_or(raw);
    if trimmed.is_empty() {
        return Ok((segs, dir_slash));
    }
    for enc in trimmed.split('/') {
        let seg = percent_decode(enc).ok_or(PathRefusal::BadEncoding)?;
        if seg == ".." || seg == "." {
            return Err(PathRefusal::Traversal);
        }
        if seg.is_empty() || seg.contains(['/', '\\', '\0']) {
            return Err(PathRefusal::Absolute);
        }
        if seg.split(['/', '\\']).any(|p| p == "..") {
            return Err(PathRefusal::Traversal);
        }
        segs.push(seg);
    }
    Ok((segs, dir_slash))
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "json" => "application/json",
        "css" => "text/css",
        _ => "text/plain; charset=utf-8",
    }
}

fn route(state: &ServeState, path: &str) -> Reply {
    // Every path is checked, whatever its route.
    let whole = path.strip_prefix('/').unwrap_or(path);
    if let Err(refusal) = safe_segments(whole) {
        return refuse(refusal);
    }
    if path == "/" || path == "/index.html" {
        return match runs::list_runs(&state.root, &state.cache) {
            Ok(list) => Reply::html(pages::index(&state.root, &list)),
            Err(e) => Reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("reading the store: {e}"),
            ),
        };
    }
    if path == "/trends" || path == "/api/runs" {
        let roots = state.roots();
        let runs = trends::collect(&roots);
        let cells = trends::cells(&runs);
        if path == "/trends" {
            return Reply::html(trends::page(&runs, &cells, &roots));
        }
        let mut r = Reply::html(
            serde_json::to_string_pretty(&trends::api(&runs, &cells, &roots)).unwrap_or_default(),
        );
        r.content_type = "application/json";
        return r;
    }
    if let Some(rest) = path.strip_prefix("/run/") {
        return run_route(&state.root, &state.cache, "/run/", rest);
    }
    // `/s/<k>/run/…`: store k (from 1: the second --store).
    if let Some((k, rest)) = path.strip_prefix("/s/").and_then(|p| p.split_once("/run/"))
        && let Some((root, cache)) = k
            .parse::<usize>()
            .ok()
            .and_then(|k| state.more.get(k.wrapping_sub(1)))
    {
        return run_route(root, cache, &format!("/s/{k}/run/"), rest);
    }
    Reply::error(StatusCode::NOT_FOUND, "no such page")
}

impl ServeState {
    /// Every store's root, the first first.
    fn roots(&self) -> Vec<PathBuf> {
        std::iter::once(self.root.clone())
            .chain(self.more.iter().map(|(r, _)| r.clone()))
            .collect()
    }
}

/// A path under `prefix` (`/run/` or `/s/<k>/run/`) of the store at `root`.
fn run_route(root: &Path, cache: &runs::Cache, prefix: &str, rest: &str) -> Reply {
    let (segs, dir_slash) = match safe_segments(rest) {
        Ok(x) => x,
        Err(r) => return refuse(r),
    };
    let mut target = root.to_path_buf();
    for s in &segs {
        target.push(s);
    }
    if let Some(reply) = converted_history(root, &target) {
        return reply;
    }
    if let Some(reply) = archive::reply(root, &target) {
        return reply;
    }
    let Ok(real) = target.canonicalize() else {
        return Reply::error(StatusCode::NOT_FOUND, "no such file or run");
    };
    if !real.starts_with(root) {
        return Reply::error(StatusCode::FORBIDDEN, "outside the store");
    }
    let rel = segs.join("/");
    if real.is_dir() {
        if !dir_slash {
            // Relative links on the page need the trailing slash.
            return Reply {
                status: StatusCode::MOVED_PERMANENTLY,
                content_type: "text/plain; charset=utf-8",
                body: Content::Bytes(Vec::new()),
                location: Some(format!("{prefix}{}/", pages::url_path(&rel))),
                retry_after_s: None,
            };
        }
        let is_run = runs::RUN_FILES
            .iter()
            .any(|f| std::fs::symlink_metadata(real.join(f)).is_ok());
        if is_run {
            // The digest (cached) plus this run's test.json (capped).
            let real_rel = real
                .strip_prefix(root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or(rel);
            let mut info = cache.run(root, &real_rel);
            info.test = runs::read_run_test(root, &real_rel);
            return Reply::html(pages::run_page(&info));
        }
        return Reply::html(pages::listing(&rel, &real));
    }
    match runs::open_inside(root, &real) {
        Ok((file, meta)) => Reply {
            status: StatusCode::OK,
            content_type: content_type(&real),
            body: Content::File(file, meta.len()),
            location: None,
            retry_after_s: None,
        },
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Reply::error(StatusCode::FORBIDDEN, "outside the store")
        }
        Err(e) => Reply::error(StatusCode::NOT_FOUND, &format!("{rel}: {e}")),
    }
}

/// `<run>/history.edn` or `<run>/history.jsonl` when the run keeps only
/// `history.jsonl.gz`: converted on request (the store keeps one copy of a
/// history). `None` when `target` is anything else.
fn converted_history(root: &Path, target: &Path) -> Option<Reply> {
    let format = match target.file_name()?.to_str()? {
        "history.edn" => store::Format::Edn,
        "history.jsonl" => store::Format::JsonLines,
        _ => return None,
    };
    if std::fs::symlink_metadata(target).is_ok() {
        return None;
    }
    let run = target.parent()?.canonicalize().ok()?;
    if !run.starts_with(root) {
        return None;
    }
    let gz = run.join("history.jsonl.gz");
    // The history itself must be in the store too, not just its directory.
    let real = match runs::resolve_inside(root, &gz) {
        Ok(real) if real.is_file() => real,
        Ok(_) => return None,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Some(Reply::error(
                StatusCode::FORBIDDEN,
                "history.jsonl.gz leads outside the store",
            ));
        }
        Err(_) => return None,
    };
    Some(Reply {
        status: StatusCode::OK,
        content_type: "text/plain; charset=utf-8",
        body: Content::Convert(real, format),
        location: None,
        retry_after_s: None,
    })
}

fn refuse(r: PathRefusal) -> Reply {
    let why = match r {
        PathRefusal::BadEncoding => "bad percent-encoding in the path",
        PathRefusal::Traversal => "refused: the path contains a '..' or '.' segment",
        PathRefusal::Absolute => {
            "refused: absolute paths (empty segments, backslashes) are not served"
        }
    };
    Reply::error(StatusCode::BAD_REQUEST, why)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn segments_refuse_traversal_and_absolute_paths() {
        assert_eq!(safe_segments("a/../b"), Err(PathRefusal::Traversal));
        assert_eq!(safe_segments("a/%2e%2E/b"), Err(PathRefusal::Traversal));
        assert_eq!(safe_segments("./a"), Err(PathRefusal::Traversal));
        assert_eq!(safe_segments("/etc/passwd"), Err(PathRefusal::Absolute));
        assert_eq!(safe_segments("a//b"), Err(PathRefusal::Absolute));
        assert_eq!(safe_segments("%2Fetc%2Fpasswd"), Err(PathRefusal::Absolute));
        assert_eq!(safe_segments("a%5C..%5Cb"), Err(PathRefusal::Absolute));
        assert_eq!(safe_segments("a%00"), Err(PathRefusal::Absolute));
        assert_eq!(safe_segments("a%zz"), Err(PathRefusal::BadEncoding));
        assert_eq!(
            safe_segments("t/2026%20x/elle/G1c.txt"),
            Ok((
                vec!["t".into(), "2026 x".into(), "elle".into(), "G1c.txt".into()],
                false
            ))
        );
        assert_eq!(
            safe_segments("t/r/"),
            Ok((vec!["t".into(), "r".into()], true))
        );
        assert_eq!(safe_segments(""), Ok((vec![], false)));
    }
}
