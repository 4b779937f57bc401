//! The text format of PolySI, Plume, IsoVista and AWDIT (AWDIT calls it
//! `plume`): one micro-op a line, `r(KEY,VALUE,SESSION,TXN)` or
//! `w(KEY,VALUE,SESSION,TXN)`, all integers.
//!
//! What the peers do, and what we do (see ARCHITECTURE.md, store):
//! - transaction ids are global; a transaction's lines need not be adjacent
//!   (AWDIT, Plume and IsoVista group by id); a session's transactions are in
//!   order of their first line;
//! - txn `-1` marks an aborted write (Plume, IsoVista, AWDIT; PolySI accepts
//!   no `-`). Consecutive `-1` lines of one session become one aborted
//!   transaction; any other negative id is an aborted transaction of its own
//!   (ours: the peers would read it as committed), and is written back as `-1`;
//! - value `0` is every key's initial value (PolySI and AWDIT add an initial
//!   transaction writing 0 to every key, Plume's `ZERO`).
//!
//! Ours beyond the peers: blank lines, `#` comment lines and spaces around
//! fields are accepted.

use super::txns::PTxn;
use crate::format::FormatError;
use crate::history::{Atom, Key, MicroOp, ReadValue, Val};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;
use std::path::Path;

/// The value the text format's tools treat as every key's initial state.
pub(crate) const INITIAL: i64 = 0;

fn err(file: Option<&Path>, line: u64, column: usize, reason: impl Into<String>) -> FormatError {
    FormatError {
        file: file.map(Path::to_path_buf),
        line,
        column: Some(column as u64 + 1),
        op: None,
        reason: reason.into(),
    }
}

/// Parses one line (already known not to be blank or a comment) into
/// `(is_write, key, value, session, txn)`; errors carry a 0-based column.
/// One parsed line: `(is_write, key, value, session, txn)`.
type Line = (bool, i64, i64, i64, i64);

fn parse_line(l: &[u8]) -> Result<Line, (usize, String)> {
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while l.get(*i).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r')) {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    let write = match l.get(i) {
        Some(b'r') => false,
        Some(b'w') => true,
        _ => {
            return Err((
                i,
                "expected `r(key,value,session,txn)` or `w(key,value,session,txn)`".into(),
            ));
        }
    };
    i += 1;
    if l.get(i) != Some(&b'(') {
        return Err((i, "expected `(` after the operation letter".into()));
    }
    i += 1;
    const NAMES: [&str; 4] = ["key", "value", "session", "txn"];
    let mut fields = [0i64; 4];
    for (n, name) in NAMES.iter().enumerate() {
        skip_ws(&mut i);
        let start = i;
        let negative = l.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        // Accumulated negatively, so i64::MIN parses too.
        let mut v: Option<i64> = Some(0);
        while let Some(d) = l.get(i).filter(|c| c.is_ascii_digit()) {
            v = v.and_then(|v| v.checked_mul(10)?.checked_sub(i64::from(d - b'0')));
            i += 1;
        }
        let out_of_range = || {
            let digits = String::from_utf8_lossy(&l[start..i]);
            (
                start,
                format!("the {name} {digits} is out of range (64-bit integers)"),
            )
        };
        fields[n] = match v {
            _ if i == start + usize::from(negative) => {
                return Err((start, format!("expected an integer {name}")));
            }
            Some(v) if negative => v,
            Some(v) => v.checked_neg().ok_or_else(out_of_range)?,
            None => return Err(out_of_range()),
        };
        skip_ws(&mut i);
        let sep = if n == 3 { b')' } else { b',' };
        if l.get(i) != Some(&sep) {
            let what = if n == 3 {
                "`)` after the txn id (four fields: key, value, session, txn)".to_string()
            } else {
                format!("`,` after the {name}")
            };
            return Err((i, format!("expected {what}")));
        }
        i += 1;
    }
    skip_ws(&mut i);
    if i < l.len() {
        return Err((i, "unexpected text after `)`".into()));
    }
    Ok((write, fields[0], fields[1], fields[2], fields[3]))
}

/// Transaction ids → (position in the transactions, line of first use).
/// The peers number transactions 0, 1, 2, … in file order: ids below
/// twice the line count go in a table by id, read and written in file
/// order; a hash lookup of each new id was a cache miss, half the reader's
/// time on a 2M-line file (BENCHMARKS.md, "h10-startup"). Other ids
/// (negative, larger) go in a map. The table is at most 2 entries a line.
struct TxnIds {
    dense: Vec<(usize, u64)>,
    limit: u64,
    sparse: FxHashMap<i64, (usize, u64)>,
}

impl TxnIds {
    /// A vacant entry of the table.
    const VACANT: (usize, u64) = (usize::MAX, 0);

    fn new(lines: usize) -> TxnIds {
        TxnIds {
            dense: Vec::with_capacity(lines / 3),
            limit: (lines as u64).saturating_mul(2),
            sparse: FxHashMap::default(),
        }
    }

    fn get(&self, t: i64) -> Option<(usize, u64)> {
        match u64::try_from(t) {
            Ok(i) if i < self.limit => self
                .dense
                .get(i as usize)
                .copied()
                .filter(|e| *e != Self::VACANT),
            _ => self.sparse.get(&t).copied(),
        }
    }

    /// Records a new id `t` (not yet recorded).
    fn insert(&mut self, t: i64, pos: usize, line: u64) {
        match u64::try_from(t) {
            Ok(i) if i < self.limit => {
                let i = i as usize;
                if i >= self.dense.len() {
                    self.dense.resize(i + 1, Self::VACANT);
                }
                self.dense[i] = (pos, line);
            }
            _ => {
                self.sparse.insert(t, (pos, line));
            }
        }
    }
}

/// Reads the text format.
///
/// # Errors
/// A malformed line, or a transaction id used in two sessions (file, line,
/// column, reason).
pub(crate) fn read(bytes: &[u8], file: Option<&Path>) -> Result<Vec<PTxn>, FormatError> {
    // Sized for the usual files (AWDIT's and PolySI's: 3–4 lines a
    // transaction, ids used once), so neither grows by copying all it
    // holds; a file of other shapes only grows them.
    let lines = memchr::memchr_iter(b'\n', bytes).count() + 1;
    let mut txns: Vec<PTxn> = Vec::with_capacity(lines / 3);
    // Committed (and `< -1`) txn id → (position in `txns`, line of first use).
    let mut by_id = TxnIds::new(lines);
    // The open group of `-1` lines: (session, position).
    let mut aborted_run: Option<(u64, usize)> = None;
    // The last committed line's (txn id, position): a transaction's lines
    // are usually adjacent, and those after the first need no lookup.
    let mut last: Option<(i64, usize)> = None;
    let mut start = 0;
    let mut n = 0u64;
    while start <= bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let raw = &bytes[start..end];
        start = end + 1;
        n += 1;
        let line = n;
        let trimmed = raw.trim_ascii();
        if trimmed.is_empty() || trimmed.starts_with(b"#") {
            continue;
        }
        let (write, k, v, s, t) =
            parse_line(raw).map_err(|(col, reason)| err(file, line, col, reason))?;
        let session = u64::try_from(s).map_err(|_| {
            err(
                file,
                line,
                0,
                format!("session id {s} is negative; sessions are numbered from 0"),
            )
        })?;
        let mop = if write {
            MicroOp::Write(Key::int(k), Val::int(v))
        } else {
            MicroOp::Read(Key::int(k), ReadValue::Scalar(Val::int(v)))
        };
        let pos = if t == -1 {
            last = None;
            match aborted_run {
                Some((rs, p)) if rs == session => p,
                _ => {
                    txns.push(PTxn {
                        session,
                        committed: false,
                        mops: Vec::new(),
                    });
                    aborted_run = Some((session, txns.len() - 1));
                    txns.len() - 1
                }
            }
        } else {
            aborted_run = None;
            let known = match last {
                Some((lt, p)) if lt == t => Some(p),
                _ => by_id.get(t).map(|(p, _)| p),
            };
            let p = match known {
                Some(p) => {
                    if txns[p].session != session {
                        let first = by_id.get(t).map_or(0, |(_, first)| first);
                        return Err(err(
                            file,
                            line,
                            0,
                            format!(
                                "transaction {t} is in session {session} here but in session {} at line {first}",
                                txns[p].session
                            ),
                        ));
                    }
                    p
                }
                None => {
                    txns.push(PTxn {
                        session,
                        committed: t >= 0,
                        mops: Vec::new(),
                    });
                    by_id.insert(t, txns.len() - 1, line);
                    txns.len() - 1
                }
            };
            last = Some((t, p));
            p
        };
        txns[pos].mops.push(mop);
    }
    Ok(txns)
}

fn int(a: &Atom, what: &str) -> Result<i64, String> {
    match a {
        Atom::Int(i) => Ok(*i),
        other => Err(format!(
            "{what} {other} is not an integer; the text format holds integers only"
        )),
    }
}

/// Writes `txns` in the text format: committed transactions numbered from 1
/// in order, aborted ones as `-1`; a read of `nil` (the initial state) as
/// `0`. Sessions are written as they are.
///
/// # Errors
/// A key or value that is not an integer, or a list read (the format holds
/// registers only).
pub(crate) fn write(txns: &[PTxn]) -> Result<String, String> {
    let mut out = String::new();
    let mut id = 0u64;
    for t in txns {
        if t.mops.is_empty() {
            continue;
        }
        let txn = if t.committed {
            id += 1;
            id.to_string()
        } else {
            "-1".to_string()
        };
        for m in &t.mops {
            let (c, k, v) = match m {
                MicroOp::Write(k, v) => ('w', int(&k.0, "key")?, int(&v.0, "value")?),
                MicroOp::Read(k, ReadValue::Nil) => ('r', int(&k.0, "key")?, INITIAL),
                MicroOp::Read(k, ReadValue::Scalar(v)) => {
                    ('r', int(&k.0, "key")?, int(&v.0, "value")?)
                }
                MicroOp::Read(_, ReadValue::List(_))
                | MicroOp::Append(..)
                | MicroOp::ReadRange(_) => {
                    return Err(
                        "list-append micro-ops: the text format holds rw-register histories only"
                            .into(),
                    );
                }
            };
            let _ = writeln!(out, "{c}({k},{v},{},{txn})", t.session);
        }
    }
    Ok(out)
}
