//! dbcop's binary history, `history.bincode`: what dbcop (`dbcop generate`
//! / its database drivers), AWDIT (`--features dbcop`) and PolySI's
//! `DBCopHistoryLoader` read and write.
//!
//! It is bincode 1.x's default encoding (fixed-width little-endian integers,
//! `usize` as `u64`, a `bool` as one byte 0 or 1, a `String` or `Vec` as a
//! `u64` length then its items) of dbcop's `History` (rnbguy/dbcop, commit
//! 5044c45, src/db/history.rs; serde serializes fields in declaration
//! order):
//!
//! ```text
//! History     { params: HistParams, info: String, start: DateTime, end: DateTime, data: Vec<Session> }
//! HistParams  { id, n_node, n_variable, n_transaction, n_event: usize }
//! Session     = Vec<Transaction>
//! Transaction { events: Vec<Event>, success: bool }
//! Event       { write: bool, variable: usize, value: usize, success: bool }
//! ```
//!
//! chrono serializes a `DateTime` as its RFC 3339 string, so `start` and
//! `end` are strings like `info`. Value `0` is every key's initial state
//! (dbcop's verifier maps a read of 0 to its root transaction; AWDIT and
//! PolySI add a transaction writing 0 to every key).
//!
//! Key decisions:
//! - session `i` (0-based) becomes process `i`; the header is not checked
//!   against the data (dbcop does not either), and bytes after the history
//!   are a warning (bincode's `deserialize_from` leaves them unread);
//! - in a committed transaction a failed read is dropped and a failed write
//!   becomes an aborted transaction of its own right after it (as the dbcop
//!   JSON reader does with the same events: AWDIT's aborted writes); in an
//!   aborted transaction every event stays in it, whatever its flag (its
//!   writes are visible to nobody either way, its reads are not checked);
//! - the writer marks every event of an aborted transaction failed, so the
//!   peers that ignore a transaction's flag (AWDIT) or one of them (PolySI
//!   drops aborted transactions, AWDIT failed events) all read it as
//!   aborted; what it writes reads back to the same transactions, and a file
//!   it wrote is written again byte for byte;
//! - malformed input is an error naming the byte offset and what was
//!   expected there; a length is checked against the bytes left before
//!   anything is allocated for it, so a corrupt length cannot ask for more
//!   memory than the file's size.

use super::txns::PTxn;
use crate::format::FormatError;
use crate::history::{Atom, Key, MicroOp, ReadValue, Val};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

/// The value dbcop's tools treat as every key's initial state.
pub(crate) const INITIAL: i64 = 0;

/// The name dbcop, AWDIT and PolySI give the file inside a history directory.
pub const FILE_NAME: &str = "history.bincode";

/// `info` of a file we write.
const INFO: &str = "harness history convert";
/// `start` and `end` of a file we write: RFC 3339 as chrono writes the
/// epoch (and parses it back).
const EPOCH: &str = "1970-01-01T00:00:00Z";

/// The file size [`sniff`] assumes when it is not told one (1 TiB): a
/// count no file could hold is not dbcop's.
const UNKNOWN_FILE_BYTES: u64 = 1 << 40;
/// Bytes of one event: `write`, `variable`, `value`, `success`.
const EVENT_BYTES: u64 = 1 + 8 + 8 + 1;
/// The fewest bytes of one transaction: its event count and `success`.
const TXN_MIN_BYTES: u64 = 8 + 1;
/// The fewest bytes of one session: its transaction count.
const SESSION_MIN_BYTES: u64 = 8;

/// A read position in the bytes; every failure names its offset.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let b = self
            .pos
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.pos..end))
            .ok_or_else(|| {
                format!(
                    "byte {}: expected {what} ({n} bytes), but the file ends after {} bytes",
                    self.pos,
                    self.bytes.len()
                )
            })?;
        self.pos += n;
        Ok(b)
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn bool(&mut self, what: &str) -> Result<bool, String> {
        let at = self.pos;
        match self.take(1, what)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(format!(
                "byte {at}: expected {what} (a bool: 0 or 1), found 0x{b:02x}"
            )),
        }
    }

    /// A `u64` count of items of at least `min_bytes` each, no more than
    /// the bytes left can hold; `what` names it in a message.
    fn len(&mut self, min_bytes: u64, what: impl Fn() -> String) -> Result<usize, String> {
        let at = self.pos;
        let n = self.u64("a length (u64)").map_err(|_| {
            format!(
                "byte {at}: expected {} (u64), but the file ends after {} bytes",
                what(),
                self.bytes.len()
            )
        })?;
        if n > self.left() / min_bytes {
            return Err(format!(
                "byte {at}: {} is {n}, more than the {} bytes left can hold ({min_bytes} bytes each): a corrupt or truncated file",
                what(),
                self.left()
            ));
        }
        usize::try_from(n).map_err(|_| format!("byte {at}: {} {n} is too large", what()))
    }

    fn string(&mut self, what: &str) -> Result<&'a str, String> {
        let n = self.len(1, || format!("the length of {what}"))?;
        let at = self.pos;
        let b = self.take(n, what)?;
        std::str::from_utf8(b)
            .map_err(|e| format!("byte {}: {what} is not UTF-8", at + e.valid_up_to()))
    }

    /// A `u64` variable or value as our signed integer.
    fn int(&mut self, what: &str) -> Result<i64, String> {
        let at = self.pos;
        let v = self.u64(what)?;
        i64::try_from(v).map_err(|_| {
            format!("byte {at}: {what} {v} is above 2^63-1 (harness holds signed 64-bit integers)")
        })
    }
}

/// The strings of the header (`info`, `start`, `end`); its counts
/// (`params`) are skipped: nothing depends on them.
fn header<'a>(c: &mut Cursor<'a>) -> Result<[&'a str; 3], String> {
    for what in [
        "params.id (u64)",
        "params.n_node (u64)",
        "params.n_variable (u64)",
        "params.n_transaction (u64)",
        "params.n_event (u64)",
    ] {
        c.u64(what)?;
    }
    Ok([c.string("info")?, c.string("start")?, c.string("end")?])
}

/// Reads the data after the header into transactions.
fn sessions(c: &mut Cursor<'_>, out: &mut Vec<PTxn>) -> Result<(), String> {
    // (write, variable, value, success) of one transaction, reused.
    let mut events: Vec<(bool, i64, i64, bool)> = Vec::new();
    let n_session = c.len(SESSION_MIN_BYTES, || "the session count".into())?;
    for s in 0..n_session {
        let session = s as u64;
        let n_txn = c.len(TXN_MIN_BYTES, || {
            format!("the transaction count of session {s}")
        })?;
        for t in 0..n_txn {
            let n_event = c.len(EVENT_BYTES, || {
                format!("the event count of session {s}'s transaction {t}")
            })?;
            events.clear();
            for _ in 0..n_event {
                let write = c.bool("event.write")?;
                let key = c.int("event.variable (u64)")?;
                let value = c.int("event.value (u64)")?;
                let ok = c.bool("event.success")?;
                events.push((write, key, value, ok));
            }
            let committed = c.bool("transaction.success")?;
            let mut mops = Vec::with_capacity(events.len());
            let mut failed_writes = Vec::new();
            for &(write, key, value, ok) in &events {
                let k = Key::int(key);
                let m = if write {
                    MicroOp::Write(k, Val::int(value))
                } else {
                    MicroOp::Read(k, ReadValue::Scalar(Val::int(value)))
                };
                match (ok || !committed, write) {
                    (true, _) => mops.push(m),
                    (false, true) => failed_writes.push(m),
                    (false, false) => {}
                }
            }
            out.push(PTxn {
                session,
                committed,
                mops,
            });
            if !failed_writes.is_empty() {
                out.push(PTxn {
                    session,
                    committed: false,
                    mops: failed_writes,
                });
            }
        }
    }
    Ok(())
}

fn format_err(file: Option<&Path>, reason: String) -> FormatError {
    FormatError {
        file: file.map(Path::to_path_buf),
        line: 0,
        column: None,
        op: None,
        reason: format!("dbcop bincode history: {reason}"),
    }
}

/// Reads a `history.bincode`; returns its transactions and warnings.
///
/// # Errors
/// Truncated or malformed input: the byte offset and what was expected.
pub(crate) fn read(
    bytes: &[u8],
    file: Option<&Path>,
) -> Result<(Vec<PTxn>, Vec<String>), FormatError> {
    let mut c = Cursor { bytes, pos: 0 };
    let mut out = Vec::new();
    header(&mut c)
        .and_then(|_| sessions(&mut c, &mut out))
        .map_err(|e| format_err(file, e))?;
    let mut warnings = Vec::new();
    if c.left() > 0 {
        warnings.push(format!(
            "{}: {} bytes after the history (from byte {}) ignored",
            file.map_or_else(|| "<input>".into(), |p| p.display().to_string()),
            c.left(),
            c.pos
        ));
    }
    Ok((out, warnings))
}

/// Whether `head`, the first bytes of a file of `file_len` bytes (`None`:
/// unknown, taken as [`UNKNOWN_FILE_BYTES`]), is the start of a
/// `history.bincode`: the whole header with
/// printable strings, then sessions, transactions and events as far as
/// `head` reaches, each bool 0 or 1 and each count no more than the file's
/// bytes can hold. Nothing else we read passes: text has no 0 bytes in its
/// first lengths, and a Cobra log's first 64 bytes are records whose ids
/// and hashes make no printable strings.
pub(crate) fn sniff(head: &[u8], file_len: Option<u64>) -> bool {
    let mut c = Cursor {
        bytes: head,
        pos: 0,
    };
    let Ok(strings) = header(&mut c) else {
        return false;
    };
    if !strings.iter().all(|s| s.chars().all(|ch| !ch.is_control())) {
        return false;
    }
    // Counts are bounded by the file, not by the head read.
    let total = file_len
        .unwrap_or(UNKNOWN_FILE_BYTES)
        .max(head.len() as u64);
    let fits = |c: &Cursor<'_>, n: u64, min: u64| n <= (total - c.pos as u64) / min;
    // The data as far as the head reaches; running out is fine.
    let mut walk = || -> Option<bool> {
        let n_session = c.u64("").ok()?;
        if !fits(&c, n_session, SESSION_MIN_BYTES) {
            return Some(false);
        }
        // No session and more bytes: nothing a dbcop writer makes, but what
        // a stream of NUL bytes (`/dev/zero`) reads as; it would be read
        // whole before the trailing bytes were named.
        if n_session == 0 && c.left() > 0 {
            return Some(false);
        }
        for _ in 0..n_session {
            let n_txn = c.u64("").ok()?;
            if !fits(&c, n_txn, TXN_MIN_BYTES) {
                return Some(false);
            }
            for _ in 0..n_txn {
                let n_event = c.u64("").ok()?;
                if !fits(&c, n_event, EVENT_BYTES) {
                    return Some(false);
                }
                for _ in 0..n_event {
                    let ok = c.take(18, "").ok()?;
                    if ok[0] > 1 || ok[17] > 1 {
                        return Some(false);
                    }
                }
                if *c.take(1, "").ok()?.first()? > 1 {
                    return Some(false);
                }
            }
        }
        Some(true)
    };
    walk().unwrap_or(true)
}

fn uint(a: &Atom, what: &str) -> Result<u64, String> {
    match a {
        Atom::Int(i) if *i >= 0 => Ok(*i as u64),
        other => Err(format!(
            "{what} {other} is not a non-negative integer; dbcop holds u64 variables and values"
        )),
    }
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Writes `txns` as a `history.bincode`: one session per process in process
/// order (renumbered from 0), a read of `nil` as `0`, every event of an
/// aborted transaction marked failed; header `id` 0, the counts of what is
/// written, `info` "harness history convert", `start` = `end` = the epoch.
///
/// # Errors
/// A key or value that is not a non-negative integer, list-append
/// micro-ops, or a `nil` read of a key some transaction writes 0 to (0 is
/// the format's initial state: the read would change meaning).
pub(crate) fn write(txns: &[PTxn]) -> Result<Vec<u8>, String> {
    let mut sessions: BTreeMap<u64, Vec<&PTxn>> = BTreeMap::new();
    let mut vars = BTreeSet::new();
    let mut zero_written = HashSet::new();
    let mut n_event = 0u64;
    for t in txns {
        sessions.entry(t.session).or_default().push(t);
        n_event += t.mops.len() as u64;
        for m in &t.mops {
            vars.insert(m.key());
            if let MicroOp::Write(k, v) = m
                && v.0 == Atom::Int(INITIAL)
            {
                zero_written.insert(k);
            }
        }
    }
    let mut out = Vec::with_capacity(120 + 9 * txns.len() + 18 * n_event as usize);
    for v in [
        0,
        sessions.len() as u64,
        vars.len() as u64,
        txns.len() as u64,
        n_event,
    ] {
        put_u64(&mut out, v);
    }
    put_str(&mut out, INFO);
    put_str(&mut out, EPOCH);
    put_str(&mut out, EPOCH);
    put_u64(&mut out, sessions.len() as u64);
    for ts in sessions.values() {
        put_u64(&mut out, ts.len() as u64);
        for t in ts {
            put_u64(&mut out, t.mops.len() as u64);
            for m in &t.mops {
                let (write, k, v) = match m {
                    MicroOp::Write(k, v) => (true, k, uint(&v.0, "value")?),
                    MicroOp::Read(k, ReadValue::Scalar(v)) => (false, k, uint(&v.0, "value")?),
                    MicroOp::Read(k, ReadValue::Nil) => {
                        if zero_written.contains(k) {
                            return Err(format!(
                                "key {k} is read as nil and written as 0; in dbcop's format 0 is the initial state, so the read would become a read of that write"
                            ));
                        }
                        (false, k, INITIAL as u64)
                    }
                    MicroOp::Read(_, ReadValue::List(_)) | MicroOp::Append(..) => {
                        return Err("list-append micro-ops: dbcop holds registers only".into());
                    }
                    MicroOp::ReadRange(_) => {
                        return Err("range reads: dbcop holds registers only".into());
                    }
                };
                out.push(u8::from(write));
                put_u64(&mut out, uint(&k.0, "key")?);
                put_u64(&mut out, v);
                out.push(u8::from(t.committed));
            }
            out.push(u8::from(t.committed));
        }
    }
    Ok(out)
}
