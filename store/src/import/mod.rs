//! Histories of other checkers: the text format of PolySI / Plume /
//! IsoVista / AWDIT, dbcop's JSON history, dbcop's `history.bincode` (also
//! PolySI's and AWDIT's) and Cobra's client logs, read and written;
//! Porcupine's Jepsen etcd logs, read only (register ops in line order, which
//! is real time: `porcupine.rs`); plus one entry point that reads any history file, ours or
//! theirs, by content (extension as a hint) or by a forced name.
//!
//! Key decisions:
//! - peer histories become ordinary ops (session = process, a transaction =
//!   invocation + `ok`/`fail` completion) so every check applies, and two
//!   facts the ops cannot say travel on the [`History`]: the value that
//!   stands for the initial state in that format (`0`, see
//!   [`History::initial_value`]) and that op order is session order only
//!   (no clock: [`History::has_realtime_order`] is false);
//! - reads keep the file's value (`0` stays `0`), so a conversion back is
//!   exact; converting to our formats, which have no such datum, turns reads
//!   of the initial value into `nil` reads ([`initial_reads_to_nil`]).

mod cobra;
mod dbcop;
mod dbcop_bincode;
pub mod porcupine;
mod text;
mod txns;

use crate::format::{self, Format, FormatError, OpReader};
use crate::history::{History, MicroOp, Op, OpType, OpValue, ReadValue, Val};
use std::collections::HashSet;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use dbcop_bincode::FILE_NAME as DBCOP_BINCODE_FILE;

/// A history format of another checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerFormat {
    /// `r(key,value,session,txn)` / `w(…)` lines: PolySI, Plume, IsoVista,
    /// AWDIT (`plume`).
    Text,
    /// dbcop's JSON history: sessions → transactions → events.
    Dbcop,
    /// dbcop's binary `history.bincode` (bincode 1.x of dbcop's `History`;
    /// PolySI and AWDIT read and write it too): a file, or a directory
    /// holding one.
    DbcopBincode,
    /// Cobra's binary per-client logs (a directory of `*.log`).
    Cobra,
    /// Porcupine's Jepsen etcd logs (register ops, one per line; read only).
    PorcupineEtcd,
}

impl PeerFormat {
    /// The value the format's tools treat as every key's initial state,
    /// besides an explicit `nil`/`null`.
    pub fn initial_value(self) -> Option<Val> {
        match self {
            PeerFormat::Text => Some(Val::int(text::INITIAL)),
            PeerFormat::Dbcop => Some(Val::int(dbcop::INITIAL)),
            PeerFormat::DbcopBincode => Some(Val::int(dbcop_bincode::INITIAL)),
            // Initial reads are marked by INIT/NULL ids and read as nil.
            PeerFormat::Cobra | PeerFormat::PorcupineEtcd => None,
        }
    }
}

/// Any history format harness reads: ours or a peer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileFormat {
    /// JSON Lines, Elle JSON or Jepsen EDN.
    Ours(Format),
    /// Another checker's.
    Peer(PeerFormat),
}

/// Names accepted by `--format` / `--from` / `--to`, with what they mean.
pub const FORMAT_NAMES: &[(&str, FileFormat)] = &[
    ("jsonl", FileFormat::Ours(Format::JsonLines)),
    ("json", FileFormat::Ours(Format::ElleJson)),
    ("elle-json", FileFormat::Ours(Format::ElleJson)),
    ("edn", FileFormat::Ours(Format::Edn)),
    ("text", FileFormat::Peer(PeerFormat::Text)),
    ("polysi", FileFormat::Peer(PeerFormat::Text)),
    ("plume", FileFormat::Peer(PeerFormat::Text)),
    ("isovista", FileFormat::Peer(PeerFormat::Text)),
    ("awdit", FileFormat::Peer(PeerFormat::Text)),
    ("dbcop", FileFormat::Peer(PeerFormat::Dbcop)),
    ("dbcop-json", FileFormat::Peer(PeerFormat::Dbcop)),
    ("dbcop-bincode", FileFormat::Peer(PeerFormat::DbcopBincode)),
    ("bincode", FileFormat::Peer(PeerFormat::DbcopBincode)),
    ("cobra", FileFormat::Peer(PeerFormat::Cobra)),
    (
        "porcupine-etcd",
        FileFormat::Peer(PeerFormat::PorcupineEtcd),
    ),
    ("etcd-log", FileFormat::Peer(PeerFormat::PorcupineEtcd)),
];

impl std::str::FromStr for FileFormat {
    type Err = String;

    /// As [`FileFormat::parse`].
    fn from_str(s: &str) -> Result<FileFormat, String> {
        FileFormat::parse(s)
    }
}

impl FileFormat {
    /// Parses a format name (see [`FORMAT_NAMES`]).
    ///
    /// # Errors
    /// An unknown name; the message lists the known ones.
    pub fn parse(name: &str) -> Result<FileFormat, String> {
        let n = name.trim().to_ascii_lowercase();
        FORMAT_NAMES
            .iter()
            .find(|(k, _)| *k == n)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = FORMAT_NAMES.iter().map(|(k, _)| *k).collect();
                format!(
                    "unknown history format {name:?}; known formats: {}",
                    names.join(", ")
                )
            })
    }

    /// A human name.
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Ours(f) => f.name(),
            FileFormat::Peer(PeerFormat::Text) => "PolySI/Plume/AWDIT text",
            FileFormat::Peer(PeerFormat::Dbcop) => "dbcop JSON",
            FileFormat::Peer(PeerFormat::DbcopBincode) => "dbcop bincode",
            FileFormat::Peer(PeerFormat::Cobra) => "Cobra logs",
            FileFormat::Peer(PeerFormat::PorcupineEtcd) => "Porcupine etcd log",
        }
    }

    /// The format a file name implies: ours by extension, `.txt` for the
    /// text format, `.bincode` for dbcop's binary history, `.log` for a
    /// Cobra log.
    pub fn from_extension(path: &Path) -> Option<FileFormat> {
        if let Some(f) = Format::from_extension(path) {
            return Some(FileFormat::Ours(f));
        }
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "txt" => Some(FileFormat::Peer(PeerFormat::Text)),
            "bincode" => Some(FileFormat::Peer(PeerFormat::DbcopBincode)),
            "log" => Some(FileFormat::Peer(PeerFormat::Cobra)),
            _ => None,
        }
    }

    /// Detects the format of `path`: a directory is Cobra logs, or dbcop's
    /// when it holds a `history.bincode` and no `*.log`; a file by its first
    /// bytes, else its extension, else JSON Lines.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn detect(path: &Path) -> Result<FileFormat, FormatError> {
        /// gzip's first two bytes.
        const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
        // One open for a plain file: its kind, length and first bytes
        // (a small check's every system call shows in its time).
        let read_err = |e: std::io::Error| io_err("read", path, &e);
        let mut file = match fs::File::open(path) {
            Ok(f) => f,
            Err(_) if path.is_dir() => return Ok(FileFormat::of_directory(path)),
            Err(e) => return Err(read_err(e)),
        };
        let md = file.metadata().map_err(read_err)?;
        if md.is_dir() {
            return Ok(FileFormat::of_directory(path));
        }
        let mut head = Vec::with_capacity(4096);
        (&mut file)
            .take(4096)
            .read_to_end(&mut head)
            .map_err(read_err)?;
        let gzip = head.starts_with(&GZIP_MAGIC);
        if gzip {
            head.clear();
            crate::format::Input::open(path)
                .and_then(|f| f.take(4096).read_to_end(&mut head))
                .map_err(read_err)?;
        }
        // dbcop's bincode has no magic number: its counts are checked
        // against the file's length.
        Ok(FileFormat::from_head_len(&head, gzip, path, Some(md.len())))
    }

    /// A directory's format: dbcop's when it holds a `history.bincode` and
    /// no `*.log`, else Cobra's logs.
    fn of_directory(path: &Path) -> FileFormat {
        if path.join(DBCOP_BINCODE_FILE).is_file() && !has_logs(path) {
            FileFormat::Peer(PeerFormat::DbcopBincode)
        } else {
            FileFormat::Peer(PeerFormat::Cobra)
        }
    }

    /// The format of a file whose first (decompressed) bytes are `head`:
    /// by those bytes, else the extension of `name`, else JSON Lines.
    pub fn from_head(head: &[u8], gzip: bool, name: &Path) -> FileFormat {
        FileFormat::from_head_len(head, gzip, name, None)
    }

    /// [`FileFormat::from_head`] knowing the file's length (`None`: a
    /// stream).
    fn from_head_len(head: &[u8], gzip: bool, name: &Path, len: Option<u64>) -> FileFormat {
        if gzip {
            // Compressed: our own formats only (a finished run's history).
            return FileFormat::Ours(Format::sniff(head).unwrap_or(Format::JsonLines));
        }
        sniff_peer_len(head, len)
            .map(FileFormat::Peer)
            .or_else(|| Format::sniff(head).map(FileFormat::Ours))
            .or_else(|| FileFormat::from_extension(name))
            .unwrap_or(FileFormat::Ours(Format::JsonLines))
    }
}

impl fmt::Display for FileFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the directory holds `*.log` files (Cobra's client logs).
fn has_logs(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "log"))
    })
}

/// The file a dbcop bincode history at `path` is in: `path`, or the
/// `history.bincode` of the directory `path`.
fn bincode_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(DBCOP_BINCODE_FILE)
    } else {
        path.to_path_buf()
    }
}

fn io_err(op: &'static str, path: &Path, e: &std::io::Error) -> FormatError {
    FormatError {
        file: Some(path.to_path_buf()),
        line: 0,
        column: None,
        op: Some(op),
        reason: e.to_string(),
    }
}

/// Recognises a peer format from a file's first bytes.
pub fn sniff_peer(head: &[u8]) -> Option<PeerFormat> {
    sniff_peer_len(head, None)
}

/// [`sniff_peer`] knowing the file's length (`None`: unknown). dbcop's
/// bincode first: a file of it may start with `S` (its `id`), and no Cobra
/// log passes its checks.
fn sniff_peer_len(head: &[u8], file_len: Option<u64>) -> Option<PeerFormat> {
    if dbcop_bincode::sniff(head, file_len) {
        return Some(PeerFormat::DbcopBincode);
    }
    let head = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
    // A Cobra log: an `S` record, a binary txn id.
    if head.len() >= 9 && head[0] == b'S' && head[1..9].iter().any(|b| !(0x20..0x7f).contains(b)) {
        return Some(PeerFormat::Cobra);
    }
    if porcupine::sniff(head) {
        return Some(PeerFormat::PorcupineEtcd);
    }
    let mut rest = head;
    loop {
        rest = rest.trim_ascii_start();
        if rest.starts_with(b"#") {
            let nl = rest.iter().position(|&b| b == b'\n')?;
            rest = &rest[nl..];
            continue;
        }
        break;
    }
    if rest.starts_with(b"r(") || rest.starts_with(b"w(") {
        return Some(PeerFormat::Text);
    }
    let (&first, after) = rest.split_first()?;
    let after = after.trim_ascii_start();
    match first {
        // An array of sessions (arrays); Elle JSON is an array of objects.
        b'[' if after.starts_with(b"[") => Some(PeerFormat::Dbcop),
        b'{' => {
            const KEYS: [&[u8]; 5] = [
                b"\"params\"",
                b"\"data\"",
                b"\"info\"",
                b"\"start\"",
                b"\"end\"",
            ];
            KEYS.iter()
                .any(|k| after.starts_with(k))
                .then_some(PeerFormat::Dbcop)
        }
        _ => None,
    }
}

/// A history file read in any format.
#[derive(Debug)]
pub struct Loaded {
    /// The validated history, with the format's initial value and order
    /// facts set.
    pub history: History,
    /// Non-fatal problems, each with its position.
    pub warnings: Vec<String>,
    /// The format it was read as.
    pub format: FileFormat,
}

/// Reads the ops of a peer-format history at `path`.
///
/// # Errors
/// IO failure or malformed input (file, line, column, reason).
pub fn read_peer(path: &Path, f: PeerFormat) -> Result<(Vec<Op>, Vec<String>), FormatError> {
    let (txns, warnings) = match f {
        PeerFormat::PorcupineEtcd => {
            let bytes = fs::read(path).map_err(|e| io_err("read", path, &e))?;
            return Ok((porcupine::read(&bytes, Some(path))?, Vec::new()));
        }
        PeerFormat::Cobra => cobra::read(path)?,
        PeerFormat::DbcopBincode => {
            let file = bincode_file(path);
            let bytes = fs::read(&file).map_err(|e| io_err("read", &file, &e))?;
            dbcop_bincode::read(&bytes, Some(&file))?
        }
        PeerFormat::Text | PeerFormat::Dbcop => {
            let bytes = fs::read(path).map_err(|e| io_err("read", path, &e))?;
            let t = if f == PeerFormat::Text {
                text::read(&bytes, Some(path))?
            } else {
                dbcop::read(&bytes, Some(path))?
            };
            (t, Vec::new())
        }
    };
    Ok((txns::to_ops(txns), warnings))
}

/// Reads a peer-format history from text (tests, stdin).
///
/// # Errors
/// Malformed input; Cobra logs are binary and read with [`read_peer`].
pub fn read_peer_str(s: &str, f: PeerFormat) -> Result<History, FormatError> {
    read_peer_bytes(s.as_bytes(), f)
}

/// Reads a peer-format history from bytes (tests, stdin); warnings (bytes
/// after a bincode history) are dropped.
///
/// # Errors
/// Malformed input; Cobra logs (several files) are read with [`read_peer`].
pub fn read_peer_bytes(bytes: &[u8], f: PeerFormat) -> Result<History, FormatError> {
    let txns = match f {
        PeerFormat::PorcupineEtcd => {
            return peer_history(porcupine::read(bytes, None)?, f, None);
        }
        PeerFormat::Text => return peer_history_of(text::build(bytes, None)?, f, None),
        PeerFormat::Dbcop => dbcop::read(bytes, None)?,
        PeerFormat::DbcopBincode => dbcop_bincode::read(bytes, None)?.0,
        PeerFormat::Cobra => {
            return Err(FormatError {
                file: None,
                line: 0,
                column: None,
                op: None,
                reason: "Cobra logs are binary files: read them with read_peer".into(),
            });
        }
    };
    peer_history(txns::to_ops(txns), f, None)
}

fn peer_history(ops: Vec<Op>, f: PeerFormat, path: Option<&Path>) -> Result<History, FormatError> {
    peer_history_of(History::new(ops), f, path)
}

/// [`peer_history`] of a history already built (`text::build`).
fn peer_history_of(
    built: Result<History, crate::history::HistoryError>,
    f: PeerFormat,
    path: Option<&Path>,
) -> Result<History, FormatError> {
    built
        .map(|h| {
            h.with_initial_value(f.initial_value())
                // The etcd log's line order is real time.
                .with_session_order_only(f != PeerFormat::PorcupineEtcd)
        })
        .map_err(|e| FormatError {
            file: path.map(Path::to_path_buf),
            line: 0,
            column: None,
            op: None,
            reason: e.to_string(),
        })
}

/// Reads and validates a history in any format: `forced`, or detected
/// ([`FileFormat::detect`]).
///
/// # Errors
/// IO failure, malformed input, or a history rule broken.
pub fn load(path: &Path, forced: Option<FileFormat>) -> Result<Loaded, FormatError> {
    let format = match forced {
        Some(f) => f,
        None => FileFormat::detect(path)?,
    };
    match format {
        // Detected: the usual path (with its parallel JSON Lines reader).
        FileFormat::Ours(_) if forced.is_none() => {
            let (history, warnings) = format::load_history(path)?;
            Ok(Loaded {
                history,
                warnings,
                format,
            })
        }
        FileFormat::Ours(f) => {
            let file = crate::format::Input::open(path).map_err(|e| io_err("read", path, &e))?;
            load_ours(file, f, path)
        }
        FileFormat::Peer(PeerFormat::Text) => {
            let bytes = fs::read(path).map_err(|e| io_err("read", path, &e))?;
            Ok(Loaded {
                history: peer_history_of(
                    text::build(&bytes, Some(path))?,
                    PeerFormat::Text,
                    Some(path),
                )?,
                warnings: Vec::new(),
                format,
            })
        }
        FileFormat::Peer(p) => {
            let (ops, warnings) = read_peer(path, p)?;
            let history = peer_history(ops, p, Some(path))?;
            Ok(Loaded {
                history,
                warnings,
                format,
            })
        }
    }
}

/// Reads one of our formats from `r`, sequentially; `name` names it.
fn load_ours(r: impl Read, f: Format, name: &Path) -> Result<Loaded, FormatError> {
    let r = OpReader::new(r, f, Some(name.to_path_buf()));
    let mut builder = crate::HistoryBuilder::new();
    let (_, mut warnings) = crate::format::collect_into(r, &mut builder)?;
    let history = builder.finish().map_err(|e| FormatError {
        file: Some(name.to_path_buf()),
        line: 0,
        column: None,
        op: None,
        reason: e.to_string(),
    })?;
    warnings.extend(
        history
            .warnings()
            .iter()
            .map(|w| format!("{}: {w}", name.display())),
    );
    Ok(Loaded {
        history,
        warnings,
        format: FileFormat::Ours(f),
    })
}

/// Largest peer-format history (text, dbcop, bincode, Porcupine) read from
/// a stream: those formats are parsed whole, in memory.
pub const MAX_PEER_STREAM_BYTES: u64 = 512 << 20;

/// Reads and validates a history that arrives as a stream (`-`, a pipe, a
/// FIFO), read once from start to end: the format is `forced`, or sniffed
/// from the bytes [`Peeked`](crate::format::Peeked) read ahead (never by
/// seeking or opening the input again). `name` names it in messages.
///
/// # Errors
/// IO failure, malformed input, a history rule broken, or a directory
/// format (Cobra logs) asked of a stream.
pub fn load_stream(
    name: &Path,
    input: crate::format::Peeked,
    forced: Option<FileFormat>,
) -> Result<Loaded, FormatError> {
    let format =
        forced.unwrap_or_else(|| FileFormat::from_head(input.head(), input.is_gzip(), name));
    match format {
        FileFormat::Ours(f) => load_ours(input, f, name),
        FileFormat::Peer(PeerFormat::Cobra) => Err(FormatError {
            file: Some(name.to_path_buf()),
            line: 0,
            column: None,
            op: None,
            reason: "Cobra logs are a directory of files; they cannot come from a pipe".into(),
        }),
        FileFormat::Peer(p) => {
            // A peer format is parsed whole: its bytes are bounded, so an
            // endless stream stops with an error, not with memory exhausted.
            let mut bytes = Vec::new();
            input
                .take(MAX_PEER_STREAM_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| io_err("read", name, &e))?;
            if bytes.len() as u64 > MAX_PEER_STREAM_BYTES {
                return Err(FormatError {
                    file: Some(name.to_path_buf()),
                    line: 0,
                    column: None,
                    op: None,
                    reason: format!(
                        "a {} history from a stream is read whole and may be at most {} MiB; \
                         this one is longer (write it to a file, or convert it to JSON Lines)",
                        format.name(),
                        MAX_PEER_STREAM_BYTES >> 20
                    ),
                });
            }
            let (ops, warnings) = match p {
                PeerFormat::Text => (txns::to_ops(text::read(&bytes, Some(name))?), Vec::new()),
                PeerFormat::Dbcop => (txns::to_ops(dbcop::read(&bytes, Some(name))?), Vec::new()),
                PeerFormat::DbcopBincode => {
                    let (txns, warnings) = dbcop_bincode::read(&bytes, Some(name))?;
                    (txns::to_ops(txns), warnings)
                }
                PeerFormat::PorcupineEtcd => (porcupine::read(&bytes, Some(name))?, Vec::new()),
                PeerFormat::Cobra => {
                    return Err(FormatError {
                        file: Some(name.to_path_buf()),
                        line: 0,
                        column: None,
                        op: None,
                        reason: "Cobra logs are a directory of files; they cannot come from a pipe"
                            .into(),
                    });
                }
            };
            let history = peer_history(ops, p, Some(name))?;
            Ok(Loaded {
                history,
                warnings,
                format,
            })
        }
    }
}

/// Turns reads of `initial` into `nil` reads on keys no op writes `initial`
/// to, so a history from a peer format means the same in our formats
/// (which name no initial value).
pub fn initial_reads_to_nil(ops: &mut [Op], initial: &Val) {
    let written: HashSet<_> = ops
        .iter()
        .filter_map(|o| o.value.txn())
        .flatten()
        .filter_map(|m| match m {
            MicroOp::Write(k, v) if v == initial => Some(k.clone()),
            _ => None,
        })
        .collect();
    for op in ops {
        if let OpValue::Txn(mops) = &mut op.value {
            for m in mops {
                if let MicroOp::Read(k, rv @ ReadValue::Scalar(_)) = m
                    && matches!(rv, ReadValue::Scalar(v) if v == initial)
                    && !written.contains(k)
                {
                    *rv = ReadValue::Nil;
                }
            }
        }
    }
}

/// Writes `history` to `path` in a peer format (Cobra: `path` is a
/// directory, created if missing, holding `T<session>.log`; dbcop bincode:
/// the file `path`, or `history.bincode` in it when `path` is a directory).
/// Returns warnings for what the format could not hold.
///
/// # Errors
/// IO failure, or a history the format cannot express (non-integer keys or
/// values, list-append micro-ops).
pub fn write_peer(
    path: &Path,
    history: &History,
    f: PeerFormat,
) -> Result<Vec<String>, FormatError> {
    let bad = |reason: String| FormatError {
        file: Some(path.to_path_buf()),
        line: 0,
        column: None,
        op: None,
        reason,
    };
    if f == PeerFormat::PorcupineEtcd {
        return Err(bad("Porcupine etcd logs are read, not written".into()));
    }
    let (mut txns, mut warnings) = txns::from_history(history);
    if let Some(v) = history.initial_value()
        && f.initial_value().as_ref() != Some(v)
    {
        txns::initial_reads_to_nil(&mut txns, v);
    }
    match f {
        PeerFormat::Text | PeerFormat::Dbcop => {
            let s = if f == PeerFormat::Text {
                text::write(&txns)
            } else {
                dbcop::write(&txns)
            }
            .map_err(bad)?;
            fs::write(path, s).map_err(|e| io_err("write", path, &e))?;
        }
        PeerFormat::PorcupineEtcd => {}
        PeerFormat::DbcopBincode => {
            let bytes = dbcop_bincode::write(&txns).map_err(bad)?;
            let file = bincode_file(path);
            fs::write(&file, bytes).map_err(|e| io_err("write", &file, &e))?;
        }
        PeerFormat::Cobra => {
            let w = cobra::write(&txns).map_err(bad)?;
            fs::create_dir_all(path).map_err(|e| io_err("create", path, &e))?;
            for (name, bytes) in w.files {
                let p = path.join(name);
                fs::write(&p, bytes).map_err(|e| io_err("write", &p, &e))?;
            }
            if w.aborted > 0 {
                warnings.push(format!(
                    "{} aborted transactions left out: Cobra logs hold committed transactions only",
                    w.aborted
                ));
            }
            if w.renumbered {
                warnings.push(
                    "a value is written to two keys: values renumbered as Cobra write ids (unique across keys)"
                        .into(),
                );
            }
        }
    }
    if (0..history.len())
        .any(|pos| history.op_type(pos) == OpType::Ok && history.time_ns(pos).is_some())
    {
        warnings
            .push("op times left out: the format records session order only, no real time".into());
    }
    Ok(warnings)
}

/// Writes `history` in a peer format to a string (text and dbcop JSON
/// only).
///
/// # Errors
/// A history the format cannot express, or a binary format.
pub fn write_peer_string(history: &History, f: PeerFormat) -> Result<String, String> {
    let txns = peer_txns(history, f);
    match f {
        PeerFormat::Text => text::write(&txns),
        PeerFormat::Dbcop => dbcop::write(&txns),
        PeerFormat::DbcopBincode => {
            Err("dbcop bincode is binary: write it with write_peer_bytes".into())
        }
        PeerFormat::Cobra => Err("Cobra logs are binary files: write them with write_peer".into()),
        PeerFormat::PorcupineEtcd => Err("Porcupine etcd logs are read, not written".into()),
    }
}

/// Writes `history` in a one-file peer format to bytes.
///
/// # Errors
/// A history the format cannot express, or Cobra (several files).
pub fn write_peer_bytes(history: &History, f: PeerFormat) -> Result<Vec<u8>, String> {
    match f {
        PeerFormat::DbcopBincode => dbcop_bincode::write(&peer_txns(history, f)),
        PeerFormat::Text | PeerFormat::Dbcop => {
            write_peer_string(history, f).map(String::into_bytes)
        }
        PeerFormat::Cobra => Err("Cobra logs are binary files: write them with write_peer".into()),
        PeerFormat::PorcupineEtcd => Err("Porcupine etcd logs are read, not written".into()),
    }
}

/// The transactions of `history` for format `f`, reads of an initial value
/// `f` does not share made `nil`.
fn peer_txns(history: &History, f: PeerFormat) -> Vec<txns::PTxn> {
    let (mut txns, _) = txns::from_history(history);
    if let Some(v) = history.initial_value()
        && f.initial_value().as_ref() != Some(v)
    {
        txns::initial_reads_to_nil(&mut txns, v);
    }
    txns
}
