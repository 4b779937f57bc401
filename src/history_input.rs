//! A history file named on the command line (`check`, `history convert`,
//! `history stats`): plain words when it is not a history at all.
//!
//! Key decision: the parser's positioned error stays for anything that may
//! be a broken history; only files that `store::format::not_a_history` can
//! name (a directory, an empty file, Markdown, TOML, YAML, HTML, binary, an
//! empty JSON array) get a sentence instead, and a run directory points at
//! `harness analyze` (recognised before any look at its files' content).
//! Binary files whose first bytes are a peer's binary history (dbcop's
//! `history.bincode`, a Cobra log) are histories: their errors keep the
//! parser's byte offset.
//!
//! `-` is standard input; it, a pipe (`/dev/stdin`, `/dev/fd/N`, `<(…)`)
//! and a FIFO are streams, read once: the format is sniffed from the bytes
//! read ahead (`store::format::Peeked`), never by seeking or opening the
//! input again.

use anyhow::Context as _;
use std::path::Path;
use store::History;
use store::format::NotHistory;
use store::import::PeerFormat;

/// The formats a history may be in, for messages.
pub const EXPECTED: &str = "expected a history: JSON Lines, Elle JSON or Jepsen EDN \
     (gzip-compressed or not), the PolySI/Plume/AWDIT text format, dbcop JSON, \
     dbcop's history.bincode (or a directory holding one), or a directory of Cobra logs";

/// Why `path` cannot be a history, in one sentence; `None` when it may be.
pub fn not_a_history(path: &Path) -> Option<String> {
    explain(path).map(|(_, why)| why)
}

/// [`not_a_history`] with the kind it named.
fn explain(path: &Path) -> Option<(NotHistory, String)> {
    let kind = store::format::not_a_history(path)?;
    if kind == NotHistory::Binary && is_peer_binary(path) {
        return None;
    }
    Some((kind, sentence(path, kind)?))
}

/// Whether the file is a peer's binary history: dbcop's bincode (by
/// content or its `.bincode` name) or a Cobra log (by content).
fn is_peer_binary(path: &Path) -> bool {
    use std::io::Read as _;
    if store::import::FileFormat::detect(path)
        == Ok(store::import::FileFormat::Peer(PeerFormat::DbcopBincode))
    {
        return true;
    }
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path).is_ok_and(|f| f.take(4096).read_to_end(&mut head).is_ok())
        && store::import::sniff_peer(&head) == Some(PeerFormat::Cobra)
}

/// The sentence for `kind`; `None` for a directory of Cobra logs or with a
/// `history.bincode` (a history).
fn sentence(path: &Path, kind: NotHistory) -> Option<String> {
    if kind == NotHistory::Directory {
        // A run directory first: every run has a `harness.log`, which is
        // not a Cobra log.
        let is_run = ["test.json", "history.jsonl", "history.jsonl.gz"]
            .iter()
            .any(|f| path.join(f).is_file());
        if !is_run
            && (has_cobra_logs(path) || path.join(store::import::DBCOP_BINCODE_FILE).is_file())
        {
            return None;
        }
        return Some(if is_run {
            format!(
                "{} is a run directory, not a history file: `harness analyze {}` re-checks the run \
                 (or check its history file, {}/history.jsonl.gz)",
                path.display(),
                path.display(),
                path.display()
            )
        } else {
            format!("{} is a directory; {EXPECTED}", path.display())
        });
    }
    Some(format!(
        "{} is {}; {EXPECTED}",
        path.display(),
        kind.describe()
    ))
}

/// Whether the directory holds `*.log` files (Cobra's per-client logs).
fn has_cobra_logs(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "log"))
    })
}

/// A history read by [`load`]: the history, the reader's warnings, and
/// the format a file (not a stream) was read as, so that nothing opens the
/// file again to ask.
pub struct LoadedFile {
    /// The validated history.
    pub history: History,
    /// What the reader forgave, each with its position.
    pub warnings: Vec<String>,
    /// The format a file was read as; `None` for a stream.
    pub file_format: Option<store::import::FileFormat>,
}

/// Reads and validates the history at `path`, in `format` or detected.
///
/// # Errors
/// `path` is not a history (named in plain words), is malformed (file, line,
/// column, reason), or holds no operation.
pub fn load(path: &Path, format: Option<store::import::FileFormat>) -> anyhow::Result<LoadedFile> {
    let stream = |(history, warnings)| LoadedFile {
        history,
        warnings,
        file_format: None,
    };
    if path == Path::new("-") {
        return load_stream(Path::new("<stdin>"), std::io::stdin(), format).map(stream);
    }
    let md = match std::fs::metadata(path) {
        Ok(md) => md,
        Err(e) => anyhow::bail!(missing(path, &e)),
    };
    if !md.is_file() && !md.is_dir() {
        // A pipe, a FIFO, a character device (`/dev/stdin` on a terminal).
        let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        return load_stream(path, f, format).map(stream);
    }
    // A directory or an empty file is named before parsing; a file that
    // merely looks like Markdown or TOML only after the parser gave up, so
    // that nothing readable is ever refused. A file with bytes is looked
    // at only then: a history read whole is opened once more, not thrice.
    let up_front = md.is_dir() || md.len() == 0;
    let named_first = if up_front { explain(path) } else { None };
    if let Some((NotHistory::Directory | NotHistory::Empty, why)) = &named_first {
        anyhow::bail!(why.clone());
    }
    let result = match store::import::load(path, format) {
        Ok(loaded) if !loaded.history.is_empty() => {
            return Ok(LoadedFile {
                history: loaded.history,
                warnings: loaded.warnings,
                file_format: Some(loaded.format),
            });
        }
        other => other,
    };
    let named = named(up_front, named_first, path)?;
    match result {
        Ok(_) => Err(no_operations(path, named)),
        Err(e) => match named {
            Some((_, why)) if format.is_none() => Err(anyhow::anyhow!(why)),
            _ => Err(reading(e, path)),
        },
    }
}

/// What [`explain`] names the file at `path` after the parser read it:
/// the up-front answer for a directory or an empty file, else asked now;
/// a file whose first bytes are all blank is refused as empty whatever the
/// parser said (as when it was asked before parsing).
fn named(
    up_front: bool,
    first: Option<(NotHistory, String)>,
    path: &Path,
) -> anyhow::Result<Option<(NotHistory, String)>> {
    let named = if up_front { first } else { explain(path) };
    if let Some((NotHistory::Empty, why)) = &named {
        anyhow::bail!(why.clone());
    }
    Ok(named)
}

/// The error for a history without operations: `named`'s sentence, else
/// "holds no operations".
fn no_operations(path: &Path, named: Option<(NotHistory, String)>) -> anyhow::Error {
    anyhow::anyhow!(named.map_or_else(
        || format!("{} holds no operations; {EXPECTED}", path.display()),
        |(_, why)| why
    ))
}

/// A reading error in context, naming `path` once: the readers' errors
/// mostly begin with it (`FILE:LINE:COL: …`). Also `analyze`'s.
pub(crate) fn reading<E>(e: E, path: &Path) -> anyhow::Error
where
    E: std::fmt::Display + Send + Sync + 'static,
    anyhow::Error: From<E>,
{
    let p = path.display().to_string();
    if e.to_string().contains(&p) {
        anyhow::Error::from(e)
    } else {
        anyhow::Error::from(e).context(format!("cannot read {p}"))
    }
}

/// Why `path` cannot be opened, named: a symlink loop or a dangling link
/// is not "does not exist".
fn missing(path: &Path, e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::ELOOP) {
        return format!(
            "{} is a symbolic link loop (a link that leads back to itself); {EXPECTED}",
            path.display()
        );
    }
    if e.kind() == std::io::ErrorKind::NotFound {
        if let Ok(target) = std::fs::read_link(path) {
            return format!(
                "{} is a symbolic link to {}, which does not exist",
                path.display(),
                target.display()
            );
        }
        return format!("{} does not exist", path.display());
    }
    format!("cannot read {}: {e}", path.display())
}

/// Whether `path` is a stream read once: `-` (standard input), a pipe
/// (`/dev/stdin`, `/dev/fd/N`, `<(…)`), a FIFO or a character device.
pub fn is_stream(path: &Path) -> bool {
    path == Path::new("-") || std::fs::metadata(path).is_ok_and(|md| !md.is_file() && !md.is_dir())
}

/// The name a stream is reported under: `<stdin>` for `-`, else the path.
pub fn stream_name(path: &Path) -> &Path {
    if path == Path::new("-") {
        Path::new("<stdin>")
    } else {
        path
    }
}

/// Reads the stream at `path` (see [`is_stream`]) whole, sniffing its
/// format from the bytes read ahead unless `format` is given: the reader
/// `history convert` and `history stats` use for `-`, pipes and FIFOs.
///
/// # Errors
/// The stream cannot be opened or read, or is malformed (name, line,
/// column, reason).
pub fn read_stream(
    path: &Path,
    format: Option<store::import::FileFormat>,
) -> Result<store::import::Loaded, store::format::FormatError> {
    let name = stream_name(path);
    let io_err = |e: std::io::Error| store::format::FormatError {
        file: Some(name.to_path_buf()),
        line: 0,
        column: None,
        op: Some("read"),
        reason: e.to_string(),
    };
    let peeked = if path == Path::new("-") {
        store::format::Peeked::new(std::io::stdin(), 8192)
    } else {
        std::fs::File::open(path).and_then(|f| store::format::Peeked::new(f, 8192))
    }
    .map_err(io_err)?;
    if store::format::classify_head(peeked.head()) == Some(NotHistory::Empty) {
        return Err(store::format::FormatError {
            file: Some(name.to_path_buf()),
            line: 0,
            column: None,
            op: None,
            reason: format!("empty input; {EXPECTED}"),
        });
    }
    store::import::load_stream(name, peeked, format)
}

/// [`load`] of a stream read once: `-`, a pipe, a FIFO.
fn load_stream(
    name: &Path,
    r: impl std::io::Read + Send + 'static,
    format: Option<store::import::FileFormat>,
) -> anyhow::Result<(History, Vec<String>)> {
    let peeked = store::format::Peeked::new(r, 8192)
        .with_context(|| format!("cannot read {}", name.display()))?;
    let named = store::format::classify_head(peeked.head()).map(|kind| {
        (
            kind,
            format!("{} is {}; {EXPECTED}", name.display(), kind.describe()),
        )
    });
    if let Some((NotHistory::Empty, why)) = &named {
        anyhow::bail!(why.clone());
    }
    match store::import::load_stream(name, peeked, format) {
        Ok(loaded) if !loaded.history.is_empty() => Ok((loaded.history, loaded.warnings)),
        Ok(_) => Err(anyhow::anyhow!(named.map_or_else(
            || format!("{} holds no operations; {EXPECTED}", name.display()),
            |(_, why)| why
        ))),
        Err(e) => match named {
            Some((_, why)) if format.is_none() => Err(anyhow::anyhow!(why)),
            _ => Err(reading(e, name)),
        },
    }
}
