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

use super::txns::{PTxn, to_ops};
use crate::HistoryBuilder;
use crate::format::{FormatError, UsualOp};
use crate::history::{Atom, History, HistoryError, Key, MicroOp, OpType, ReadValue, Val};
use rustc_hash::{FxHashMap, FxHashSet};
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

/// [`parse_line`] of the usual line at the start of `rest`, `r(` or `w(`
/// then four integers of at most 18 digits (no overflow), each maybe
/// negative, separated by `,` and closed by `)` at the line's end, without
/// spaces: one pass that also finds the line's end (no search for the
/// newline first, no checked arithmetic). The line and its length
/// (without the newline); `None` for any other line, which the caller
/// cuts at its newline and [`parse_line`] reads (or rejects, with its
/// column).
#[inline(always)]
fn scan_usual(rest: &[u8]) -> Option<(Line, usize)> {
    let write = match rest {
        [b'r', b'(', ..] => false,
        [b'w', b'(', ..] => true,
        _ => return None,
    };
    let mut it = rest[2..].iter();
    let k = usual_int(&mut it, b',')?;
    let v = usual_int(&mut it, b',')?;
    let s = usual_int(&mut it, b',')?;
    let t = usual_int(&mut it, b')')?;
    let len = rest.len() - it.as_slice().len();
    match it.next() {
        None | Some(b'\n') => Some(((write, k, v, s, t), len)),
        Some(_) => None,
    }
}

/// One field of [`scan_usual`] from `it`: maybe `-`, then 1 to 18
/// digits, then `end`, which it takes too. (Wrapping arithmetic: a longer
/// number is refused after its digits.)
#[inline(always)]
fn usual_int(it: &mut std::slice::Iter<'_, u8>, end: u8) -> Option<i64> {
    let mut c = *it.next()?;
    let negative = c == b'-';
    if negative {
        c = *it.next()?;
    }
    let mut d = c.wrapping_sub(b'0');
    if d > 9 {
        return None;
    }
    let (mut v, mut digits) = (i64::from(d), 1u32);
    loop {
        c = *it.next()?;
        d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(i64::from(d));
        digits += 1;
    }
    if c != end || digits > 18 {
        return None;
    }
    Some(if negative { -v } else { v })
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

/// One parsed line of a file: its number, session, transaction id and
/// micro-op.
struct Parsed {
    line: u64,
    session: u64,
    txn: i64,
    mop: MicroOp,
}

/// The lines of a file that are neither blank nor comments, parsed.
struct Lines<'a> {
    bytes: &'a [u8],
    file: Option<&'a Path>,
    /// Start of the next line.
    start: usize,
    /// Number of the last line read (from 1).
    n: u64,
}

impl<'a> Lines<'a> {
    fn new(bytes: &'a [u8], file: Option<&'a Path>) -> Lines<'a> {
        Lines {
            bytes,
            file,
            start: 0,
            n: 0,
        }
    }
}

impl Iterator for Lines<'_> {
    type Item = Result<Parsed, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.start <= self.bytes.len() {
            let rest = &self.bytes[self.start..];
            self.n += 1;
            let line = self.n;
            if let Some((p, len)) = scan_usual(rest) {
                self.start += len + 1;
                return Some(self.parsed(line, p));
            }
            let raw = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
            self.start += raw.len() + 1;
            let trimmed = raw.trim_ascii();
            if trimmed.is_empty() || trimmed.starts_with(b"#") {
                continue;
            }
            let p = match parse_line(raw) {
                Ok(p) => p,
                Err((col, reason)) => return Some(Err(err(self.file, line, col, reason))),
            };
            return Some(self.parsed(line, p));
        }
        None
    }
}

impl Lines<'_> {
    /// The next line if it is the usual one ([`scan_usual`]) of a session
    /// numbered from 0; `None` leaves the line to [`Lines::next`] (any
    /// other line, the end, an error).
    #[inline(always)]
    fn usual(&mut self) -> Option<Parsed> {
        let rest = self.bytes.get(self.start..)?;
        let ((write, k, v, s, txn), len) = scan_usual(rest)?;
        let session = u64::try_from(s).ok()?;
        self.start += len + 1;
        self.n += 1;
        Some(Parsed {
            line: self.n,
            session,
            txn,
            mop: mop(write, k, v),
        })
    }

    /// Line `line`'s micro-op, or the error of its negative session.
    #[inline]
    fn parsed(&self, line: u64, (write, k, v, s, txn): Line) -> Result<Parsed, FormatError> {
        let Ok(session) = u64::try_from(s) else {
            return Err(err(
                self.file,
                line,
                0,
                format!("session id {s} is negative; sessions are numbered from 0"),
            ));
        };
        Ok(Parsed {
            line,
            session,
            txn,
            mop: mop(write, k, v),
        })
    }
}

/// The micro-op of a line: a write of `v` to `k`, or a read of it.
#[inline(always)]
fn mop(write: bool, k: i64, v: i64) -> MicroOp {
    if write {
        MicroOp::Write(Key::int(k), Val::int(v))
    } else {
        MicroOp::Read(Key::int(k), ReadValue::Scalar(Val::int(v)))
    }
}

/// Number of lines in `bytes`, for the readers' reservations.
fn line_count(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count() + 1
}

/// The error of transaction `t`'s line `line` in `session`, first used in
/// `first_session` at line `first`.
fn two_sessions(
    file: Option<&Path>,
    line: u64,
    t: i64,
    session: u64,
    first_session: u64,
    first: u64,
) -> FormatError {
    err(
        file,
        line,
        0,
        format!(
            "transaction {t} is in session {session} here but in session {first_session} at line {first}"
        ),
    )
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
    let lines = line_count(bytes);
    let mut txns: Vec<PTxn> = Vec::with_capacity(lines / 3);
    // Committed (and `< -1`) txn id → (position in `txns`, line of first use).
    let mut by_id = TxnIds::new(lines);
    // The open group of `-1` lines: (session, position).
    let mut aborted_run: Option<(u64, usize)> = None;
    // The last committed line's (txn id, position): a transaction's lines
    // are usually adjacent, and those after the first need no lookup.
    let mut last: Option<(i64, usize)> = None;
    for parsed in Lines::new(bytes, file) {
        let got = parsed?;
        let (line, session, t) = (got.line, got.session, got.txn);
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
                        return Err(two_sessions(file, line, t, session, txns[p].session, first));
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
        txns[pos].mops.push(got.mop);
    }
    Ok(txns)
}

/// Reads the text format into the history of [`read`]'s transactions as
/// `to_ops` makes them ops; the usual file ([`stream`]) without their
/// vector, a vector of micro-ops each, or the ops. The parent module
/// (`peer_history_of`) sets the format's initial value and session order.
///
/// # Errors
/// As [`read`] (outer); a history rule broken (inner).
pub(crate) fn build(
    bytes: &[u8],
    file: Option<&Path>,
) -> Result<Result<History, HistoryError>, FormatError> {
    Ok(match stream(bytes, file)? {
        Some(b) => b.finish(),
        None => History::new(to_ops(read(bytes, file)?)),
    })
}

/// The transaction [`stream`] is reading: its id, session and first line.
struct Open {
    txn: i64,
    session: u64,
    line: u64,
}

/// Ids [`stream`] has seen: those below twice the line count in a bit
/// table (the peers number transactions from 0 in file order), others in
/// a set.
struct IdSet {
    dense: Vec<u64>,
    sparse: FxHashSet<i64>,
}

impl IdSet {
    fn new(lines: usize) -> IdSet {
        IdSet {
            dense: vec![0; lines.saturating_mul(2).div_ceil(64)],
            sparse: FxHashSet::default(),
        }
    }

    /// Adds `t`; whether it was new.
    fn insert(&mut self, t: i64) -> bool {
        match usize::try_from(t)
            .ok()
            .filter(|&i| i / 64 < self.dense.len())
        {
            Some(i) => {
                let (word, bit) = (&mut self.dense[i / 64], 1u64 << (i % 64));
                let new = *word & bit == 0;
                *word |= bit;
                new
            }
            None => self.sparse.insert(t),
        }
    }
}

/// The usual file — each transaction's lines adjacent, a run of `-1`
/// lines of one session one aborted transaction — read straight into a
/// history's columns, each transaction's ops pushed as its last line
/// ends: the same ops as [`read`] then `to_ops` give (positions, order,
/// status, session, micro-ops), with no allocation per transaction and
/// columns sized by the line count (growing them by doubling faulted in
/// fresh pages for every copy). `None` when a transaction's lines are not
/// adjacent: [`read`] groups those.
fn stream(bytes: &[u8], file: Option<&Path>) -> Result<Option<HistoryBuilder>, FormatError> {
    let lines = line_count(bytes);
    let mut b = HistoryBuilder::with_capacity(lines / 3, lines);
    let mut ids = IdSet::new(lines);
    let mut open: Option<Open> = None;
    let mut mops: Vec<MicroOp> = Vec::new();
    let mut pos = 0u64;
    let push = |b: &mut HistoryBuilder, o: &Open, pos: u64, mops: &mut Vec<MicroOp>| {
        let op = UsualOp {
            index: pos,
            time_ns: None,
            op_type: if o.txn >= 0 { OpType::Ok } else { OpType::Fail },
            process: o.session,
        };
        b.push_usual(op, mops);
    };
    let mut lines = Lines::new(bytes, file);
    loop {
        // The usual line inline; any other (and the end) by `next`.
        let p = match lines.usual() {
            Some(p) => p,
            None => match lines.next() {
                Some(p) => p?,
                None => break,
            },
        };
        let (line, session, t) = (p.line, p.session, p.txn);
        match &open {
            Some(o) if o.txn == t && (t != -1 || o.session == session) => {
                if o.session != session {
                    return Err(two_sessions(file, line, t, session, o.session, o.line));
                }
            }
            _ => {
                if let Some(o) = open.take() {
                    push(&mut b, &o, pos, &mut mops);
                    pos += 1;
                }
                if t != -1 && !ids.insert(t) {
                    return Ok(None);
                }
                open = Some(Open {
                    txn: t,
                    session,
                    line,
                });
            }
        }
        mops.push(p.mop);
    }
    if let Some(o) = open {
        push(&mut b, &o, pos, &mut mops);
    }
    Ok(Some(b))
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
