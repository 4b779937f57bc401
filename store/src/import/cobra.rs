//! Cobra's per-client logs (CobraBench / CobraVerifier, OSDI'20), as read by
//! CobraVerifier `AbstractVerifier.ExtractClientLogFromStream`, PolySI's
//! `CobraHistoryLoader` and AWDIT's `parse_cobra_history`.
//!
//! A history is a directory of `*.log` files, one per client session
//! (CobraBench names them `T<n>.log`); each file is a sequence of records,
//! integers 64-bit big-endian (Java `DataOutputStream`):
//!
//! | record | bytes |
//! |---|---|
//! | `S` txn id | 9 |
//! | `C` txn id | 9 |
//! | `W` write id, key hash, value hash | 25 |
//! | `R` writer's txn id, write id, key hash, value hash | 33 |
//!
//! Write ids are unique, so a write becomes `[w key-hash write-id]` and a
//! read `[r key-hash write-id]`. A read whose writer txn id and write id are
//! `0xbebeebee` (INIT) or `0xdeadbeef` (NULL) reads the initial state (`nil`).
//! Garbage-collection reads (write id `0x23332333` / `0x66666666`) carry no
//! value and are skipped with a warning. Cobra logs hold committed
//! transactions only (`A` never appears: CobraVerifier asserts, AWDIT
//! rejects); logs written with `TIME_ORDER_ON=true` (8-byte timestamps after
//! `S` and `C`; off by default) are not read.

use super::txns::PTxn;
use crate::format::FormatError;
use crate::history::{Atom, Key, MicroOp, ReadValue, Val};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

const INIT_ID: i64 = 0xbebe_ebee;
const NULL_ID: i64 = 0xdead_beef;
const GC_TRUE: i64 = 0x2333_2333;
const GC_FALSE: i64 = 0x6666_6666;

fn err(file: &Path, reason: String) -> FormatError {
    FormatError {
        file: Some(file.to_path_buf()),
        line: 0,
        column: None,
        op: None,
        reason,
    }
}

/// The log files of a Cobra history: `path` itself, or the `*.log` files
/// of the directory `path`, `T2.log` before `T10.log`.
pub(crate) fn log_files(path: &Path) -> Result<Vec<PathBuf>, FormatError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let rd = fs::read_dir(path).map_err(|e| err(path, e.to_string()))?;
    let mut files = Vec::new();
    for e in rd {
        let p = e.map_err(|e| err(path, e.to_string()))?.path();
        if p.is_file() && p.extension().is_some_and(|x| x == "log") {
            files.push(p);
        }
    }
    files.sort_by_key(|p| {
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let digits: String = stem.chars().filter(char::is_ascii_digit).collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), stem)
    });
    if files.is_empty() {
        return Err(err(
            path,
            "a directory without *.log files is not a Cobra history".into(),
        ));
    }
    Ok(files)
}

/// Reads one client log as session `session`; returns the skipped GC reads.
fn read_log(
    bytes: &[u8],
    file: &Path,
    session: u64,
    out: &mut Vec<PTxn>,
) -> Result<u64, FormatError> {
    let mut i = 0usize;
    let mut gc = 0u64;
    let mut open: Option<(i64, Vec<MicroOp>)> = None;
    let long = |at: usize| -> Option<i64> {
        let b: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
        Some(i64::from_be_bytes(b))
    };
    while i < bytes.len() {
        let rec = bytes[i];
        let fields = match rec {
            b'S' | b'C' => 1,
            b'W' => 3,
            b'R' => 4,
            other => {
                return Err(err(
                    file,
                    format!(
                        "byte {i}: unknown record type 0x{other:02x} (expected S, C, W or R; `A` and timestamped logs are not Cobra's default layout)"
                    ),
                ));
            }
        };
        let mut f = [0i64; 4];
        for (n, slot) in f.iter_mut().take(fields).enumerate() {
            *slot = long(i + 1 + 8 * n).ok_or_else(|| {
                err(
                    file,
                    format!("byte {i}: the log ends inside a `{}` record", rec as char),
                )
            })?;
        }
        match (rec, &mut open) {
            (b'S', None) => open = Some((f[0], Vec::new())),
            (b'S', Some((t, _))) => {
                return Err(err(
                    file,
                    format!(
                        "byte {i}: transaction {} starts inside transaction {t}",
                        f[0]
                    ),
                ));
            }
            (b'C', Some((t, _))) if *t == f[0] => {
                if let Some((_, mops)) = open.take() {
                    out.push(PTxn {
                        session,
                        committed: true,
                        mops,
                    });
                }
            }
            (b'C', _) => {
                return Err(err(
                    file,
                    format!(
                        "byte {i}: commit of transaction {} that is not the open one",
                        f[0]
                    ),
                ));
            }
            (_, None) => {
                return Err(err(
                    file,
                    format!("byte {i}: a `{}` record outside a transaction", rec as char),
                ));
            }
            (b'W', Some((_, mops))) => {
                mops.push(MicroOp::Write(Key::int(f[1]), Val::int(f[0])));
            }
            (_, Some((_, mops))) => {
                let (writer, wid, key) = (f[0], f[1], f[2]);
                let init = |x: i64| x == INIT_ID || x == NULL_ID;
                if init(writer) && init(wid) {
                    mops.push(MicroOp::Read(Key::int(key), ReadValue::Nil));
                } else if writer == INIT_ID && (wid == GC_TRUE || wid == GC_FALSE) {
                    gc += 1;
                } else {
                    mops.push(MicroOp::Read(
                        Key::int(key),
                        ReadValue::Scalar(Val::int(wid)),
                    ));
                }
            }
        }
        i += 1 + 8 * fields;
    }
    if let Some((t, _)) = open {
        return Err(err(
            file,
            format!("the log ends inside transaction {t} (no `C` record)"),
        ));
    }
    Ok(gc)
}

/// Reads a Cobra history (a directory of client logs, or one log file).
///
/// # Errors
/// IO failure, or a malformed record (file and byte offset).
pub(crate) fn read(path: &Path) -> Result<(Vec<PTxn>, Vec<String>), FormatError> {
    let mut out = Vec::new();
    let mut gc = 0;
    for (s, f) in log_files(path)?.iter().enumerate() {
        let bytes = fs::read(f).map_err(|e| err(f, e.to_string()))?;
        gc += read_log(&bytes, f, s as u64, &mut out)?;
    }
    let mut warnings = Vec::new();
    if gc > 0 {
        warnings.push(format!(
            "{}: {gc} garbage-collection reads skipped (they carry no value)",
            path.display()
        ));
    }
    Ok((out, warnings))
}

/// A client log to write: file name and contents.
pub(crate) type LogFile = (String, Vec<u8>);

fn int(a: &Atom, what: &str) -> Result<i64, String> {
    match a {
        Atom::Int(i) => Ok(*i),
        other => Err(format!(
            "{what} {other} is not an integer; Cobra logs hold 64-bit integers"
        )),
    }
}

/// What [`write`] produced: the logs, and what it had to change or drop.
pub(crate) struct Written {
    /// `(file name, bytes)` per session.
    pub files: Vec<LogFile>,
    /// Aborted transactions left out (Cobra logs cannot hold them).
    pub aborted: u64,
    /// Whether values were renumbered as write ids (a value written to two
    /// keys: Cobra's write ids are unique across keys).
    pub renumbered: bool,
}

/// Writes `txns` as Cobra client logs, `T<session>.log` each. Transaction
/// ids count from 1; a write's id is its value when no value is written to
/// two keys (then a round trip is exact), else a fresh number per (key,
/// value); its value hash is the value. A read names its writer's txn and
/// write id, or INIT for `nil`; a read of a value nobody wrote names txn 0.
///
/// # Errors
/// Non-integer keys or values, list micro-ops.
pub(crate) fn write(txns: &[PTxn]) -> Result<Written, String> {
    // (key, value) → (writer txn id, write id).
    let mut writer: HashMap<(i64, i64), (i64, i64)> = HashMap::new();
    let mut key_of_value: HashMap<i64, i64> = HashMap::new();
    let mut renumbered = false;
    for (t, id) in txns.iter().zip(1i64..) {
        if !t.committed {
            continue;
        }
        for m in &t.mops {
            if let MicroOp::Write(k, v) = m {
                let (k, v) = (int(&k.0, "key")?, int(&v.0, "value")?);
                let next = writer.len() as i64 + 1;
                writer.entry((k, v)).or_insert((id, next));
                renumbered |= *key_of_value.entry(v).or_insert(k) != k;
            }
        }
    }
    if !renumbered {
        for ((_, v), (_, wid)) in writer.iter_mut() {
            *wid = *v;
        }
    }
    let mut files: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut aborted = 0u64;
    for (t, id) in txns.iter().zip(1i64..) {
        if !t.committed {
            aborted += 1;
            continue;
        }
        let buf = match files.iter().position(|(s, _)| *s == t.session) {
            Some(p) => &mut files[p].1,
            None => {
                files.push((t.session, Vec::new()));
                let last = files.len() - 1;
                &mut files[last].1
            }
        };
        let mut rec = |c: u8, xs: &[i64]| {
            buf.push(c);
            for x in xs {
                buf.extend_from_slice(&x.to_be_bytes());
            }
        };
        rec(b'S', &[id]);
        for m in &t.mops {
            match m {
                MicroOp::Write(k, v) => {
                    let (k, v) = (int(&k.0, "key")?, int(&v.0, "value")?);
                    let wid = writer.get(&(k, v)).map_or(v, |w| w.1);
                    rec(b'W', &[wid, k, v]);
                }
                MicroOp::Read(k, ReadValue::Nil) => {
                    rec(b'R', &[INIT_ID, INIT_ID, int(&k.0, "key")?, 0]);
                }
                MicroOp::Read(k, ReadValue::Scalar(v)) => {
                    let (k, v) = (int(&k.0, "key")?, int(&v.0, "value")?);
                    // Every Cobra read names its writer, a committed
                    // transaction: a read of an aborted or never-written
                    // value (an anomaly in the original) has none, and
                    // writing it anyway would hide the anomaly.
                    let Some(&(w, wid)) = writer.get(&(k, v)) else {
                        return Err(format!(
                            "a committed transaction reads value {v} of key {k}, which no committed transaction wrote (an aborted or garbage read): Cobra logs name a committed writer for every read and cannot hold it; convert to another format"
                        ));
                    };
                    rec(b'R', &[w, wid, k, v]);
                }
                MicroOp::Read(_, ReadValue::List(_))
                | MicroOp::Append(..)
                | MicroOp::ReadRange(_) => {
                    return Err("list-append micro-ops: Cobra logs hold registers only".into());
                }
            }
        }
        rec(b'C', &[id]);
    }
    if files.is_empty() {
        return Err(
            "no committed transaction: Cobra logs hold committed transactions only, so they would be empty"
                .into(),
        );
    }
    Ok(Written {
        files: files
            .into_iter()
            .map(|(s, b)| (format!("T{s}.log"), b))
            .collect(),
        aborted,
        renumbered,
    })
}
