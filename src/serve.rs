//! `harness serve`: a read-only web UI over the run store.
//!
//! `/` lists runs (name, db, workload, nemesis, isolation, date, verdict,
//! anomaly types; filter and sort in the page); `/run/<test>/<timestamp>/`
//! shows one run (configuration, verdict, anomalies with explanations and
//! cycle graphs, plots, timeline, files, node logs); any other path under
//! `/run/` serves a file of the store or lists a directory.
//!
//! Key decisions: one fallback handler routes by hand so that every path is
//! checked in one place before it touches the file system: after percent-
//! decoding, a `..` or `.` segment, an empty segment (`//etc`), a backslash
//! or a NUL is refused with 400, and the resolved path must still lie inside
//! the canonical store root (symlinks cannot lead out; 403). Only GET and
//! HEAD are answered. Binds 127.0.0.1 unless `--bind` says otherwise.

mod pages;
mod runs;

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, Method, Response, StatusCode, Uri, header};
use clap::Args;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// given to `harness run --store`).
    #[arg(long, default_value = "runs")]
    pub store: PathBuf,
}

struct ServeState {
    /// Canonical store root.
    root: PathBuf,
}

/// Runs the server until Ctrl-C.
///
/// # Errors
/// When the store does not exist or the address cannot be bound.
pub fn run(args: ServeArgs) -> anyhow::Result<u8> {
    let root = args
        .store
        .canonicalize()
        .with_context(|| format!("store directory {}", args.store.display()))?;
    anyhow::ensure!(root.is_dir(), "store {} is not a directory", root.display());
    // `harness run --store DIR` keeps runs in DIR/runs/: accept DIR too.
    let root = match root.join("runs").canonicalize() {
        Ok(inner) if inner.is_dir() && !root.join("test.json").exists() => inner,
        _ => root,
    };
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
            .with_state(Arc::new(ServeState { root }));
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")?;
        Ok(crate::exit::VALID)
    })
}

/// A response before it becomes HTTP.
struct Reply {
    status: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
    location: Option<String>,
}

impl Reply {
    fn html(body: String) -> Reply {
        Reply {
            status: StatusCode::OK,
            content_type: "text/html; charset=utf-8",
            body: body.into_bytes(),
            location: None,
        }
    }

    fn error(status: StatusCode, message: &str) -> Reply {
        Reply {
            status,
            content_type: "text/html; charset=utf-8",
            body: pages::error_page(status.as_u16(), message).into_bytes(),
            location: None,
        }
    }
}

async fn handle(State(state): State<Arc<ServeState>>, method: Method, uri: Uri) -> Response<Body> {
    let reply = if method != Method::GET && method != Method::HEAD {
        Reply::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "read-only: only GET and HEAD",
        )
    } else {
        let path = uri.path().to_string();
        tokio::task::spawn_blocking(move || route(&state, &path))
            .await
            .unwrap_or_else(|e| Reply::error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))
    };
    let mut resp = Response::new(Body::from(reply.body));
    *resp.status_mut() = reply.status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(reply.content_type),
    );
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
    if let Some(loc) = reply.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
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
        return match runs::list_runs(&state.root) {
            Ok(list) => Reply::html(pages::index(&state.root, &list)),
            Err(e) => Reply::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("reading the store: {e}"),
            ),
        };
    }
    let Some(rest) = path.strip_prefix("/run/") else {
        return Reply::error(StatusCode::NOT_FOUND, "no such page");
    };
    let (segs, dir_slash) = match safe_segments(rest) {
        Ok(x) => x,
        Err(r) => return refuse(r),
    };
    let mut target = state.root.clone();
    for s in &segs {
        target.push(s);
    }
    if let Some(reply) = converted_history(state, &target) {
        return reply;
    }
    let Ok(real) = target.canonicalize() else {
        return Reply::error(StatusCode::NOT_FOUND, "no such file or run");
    };
    if !real.starts_with(&state.root) {
        return Reply::error(StatusCode::FORBIDDEN, "outside the store");
    }
    let rel = segs.join("/");
    if real.is_dir() {
        if !dir_slash {
            // Relative links on the page need the trailing slash.
            return Reply {
                status: StatusCode::MOVED_PERMANENTLY,
                content_type: "text/plain; charset=utf-8",
                body: Vec::new(),
                location: Some(format!("/run/{}/", pages::url_path(&rel))),
            };
        }
        let is_run = [
            "test.json",
            "results.json",
            "history.jsonl",
            "history.jsonl.gz",
        ]
        .iter()
        .any(|f| real.join(f).is_file());
        if is_run {
            let info = runs::read_run(&state.root, &rel);
            return Reply::html(pages::run_page(&info));
        }
        return Reply::html(pages::listing(&rel, &real));
    }
    match std::fs::read(&real) {
        Ok(body) => Reply {
            status: StatusCode::OK,
            content_type: content_type(&real),
            body,
            location: None,
        },
        Err(e) => Reply::error(StatusCode::NOT_FOUND, &format!("{rel}: {e}")),
    }
}

/// `<run>/history.edn` or `<run>/history.jsonl` when the run keeps only
/// `history.jsonl.gz`: converted on request (the store keeps one copy of a
/// history). `None` when `target` is anything else.
fn converted_history(state: &ServeState, target: &Path) -> Option<Reply> {
    let format = match target.file_name()?.to_str()? {
        "history.edn" => store::Format::Edn,
        "history.jsonl" => store::Format::JsonLines,
        _ => return None,
    };
    if target.exists() {
        return None;
    }
    let run = target.parent()?.canonicalize().ok()?;
    if !run.starts_with(&state.root) {
        return None;
    }
    let gz = run.join("history.jsonl.gz");
    if !gz.is_file() {
        return None;
    }
    let converted = (|| -> anyhow::Result<Vec<u8>> {
        let mut w = store::format::OpWriter::new(Vec::new(), format);
        for op in store::format::OpReader::open(&gz)? {
            w.write(&op?)?;
        }
        Ok(w.finish()?)
    })();
    Some(match converted {
        Ok(body) => Reply {
            status: StatusCode::OK,
            content_type: "text/plain; charset=utf-8",
            body,
            location: None,
        },
        Err(e) => Reply::error(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e:#}")),
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
