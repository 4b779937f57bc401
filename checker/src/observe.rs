//! What the history shows, computed once from the preprocessed [`Txns`] and
//! shared by every analysis: each write (an append or a register write) with
//! its transaction, micro-op, key, value and whether it is its transaction's
//! final write of the key, indexed by (key, value); and each read of a
//! transaction that did not abort, with what it returned and whose write it
//! observed (a write, the initial state — nil, or the history's initial
//! value on a key nobody writes it to — or nothing anyone wrote). For
//! list-append also each key's longest read — the observation the prefix
//! version order is built from — and which reads need an element-by-element
//! look.
//!
//! Key decision: values are interned only where they are written (one hash
//! insert per write); a list read is compared element-wise against its key's
//! longest read and needs no hashing at all unless it disagrees with that
//! read or reaches something suspicious in it (a garbage, duplicate or
//! aborted element). Reads the store shares with the longest read (one
//! buffer, `store::ValList`) are known prefixes by their address alone.
//! A [`Write`] or [`Read`] holds ids and flags only (12 and 16 B; one per
//! micro-op of a history): keys and values are read back from `Txns`.

mod reads;

use crate::graph::{PARALLEL_FROM, halves};
use crate::txn::{Status, Txns};
use crate::workload::Workload;
use crate::write_ids::WriteIds;
use store::{Atom, History, Key, MicroOp, ReadValue, Val};

/// "None" for dense ids (write ids, positions).
pub const NO: u32 = u32::MAX;

/// One write micro-op, of any transaction (committed, aborted or
/// indeterminate): 12 B (its key and value are read back from its
/// micro-op, [`Write::key`], [`Write::val`]).
#[derive(Clone, Copy, Debug)]
pub struct Write {
    /// The writing transaction.
    pub txn: u32,
    /// The micro-op's position in it.
    pub mop: u32,
    /// Whether it is the transaction's last write of `key` (else an
    /// intermediate write).
    pub is_final: bool,
    /// Another micro-op wrote the same value to `key` too (values must be
    /// unique per key; a read of it cannot name its writer).
    pub repeated: bool,
}

impl Write {
    /// Its interned key.
    #[inline]
    pub fn key(&self, txns: &Txns<'_>) -> u32 {
        txns.key_of(self.txn, self.mop as usize)
    }

    /// The value appended or written, read from its micro-op in `txns`
    /// (`None` only for a write of other transactions than `txns`').
    pub fn val<'h>(&self, txns: &Txns<'h>) -> Option<&'h Val> {
        let tx = txns.txns.get(self.txn as usize)?;
        match txns.mops_of(tx).get(self.mop as usize)? {
            MicroOp::Append(_, v) | MicroOp::Write(_, v) => Some(v),
            MicroOp::Read(..) | MicroOp::ReadRange(_) => None,
        }
    }
}

/// Whose state a read observed: the last element of a list read, the value
/// of a register read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFrom {
    /// The initial state (an empty list, nil, or the history's initial
    /// value on a key nobody writes it to).
    Initial,
    /// This write (an id into [`Observations::writes`]).
    Write(u32),
    /// A value nobody wrote.
    Garbage,
}

/// What a read returned.
#[derive(Clone, Copy, Debug)]
pub enum Value<'h> {
    /// A list (a committed `nil` is the empty list).
    List(&'h [Val]),
    /// A register value (`None` = nil).
    Register(Option<&'h Val>),
}

/// One read micro-op of a transaction that did not abort, whose value the
/// workload can interpret: 16 B (its key and what it returned are read
/// back from its micro-op, [`Read::key`], [`Read::value`]; the facts about
/// it are bits).
#[derive(Clone, Copy, Debug)]
pub struct Read {
    /// The reading transaction.
    pub txn: u32,
    /// The micro-op's position in it.
    pub mop: u32,
    /// Whose state it observed: a write id, [`INITIAL`] or [`GARBAGE`].
    from: u32,
    /// [`Read::FIRST_ON_KEY`] … [`Read::LIST`].
    flags: u8,
}

/// [`Read::from`] as stored: the initial state.
const INITIAL: u32 = u32::MAX - 1;
/// [`Read::from`] as stored: a value nobody wrote.
const GARBAGE: u32 = u32::MAX;

impl Read {
    /// No earlier micro-op of the transaction touches `key` (an external read).
    const FIRST_ON_KEY: u8 = 1;
    /// A later micro-op of the transaction writes `key`.
    const WRITES_LATER: u8 = 2;
    /// An earlier micro-op of the transaction writes `key`.
    const AFTER_OWN_WRITE: u8 = 4;
    /// list-append: a prefix of its key's longest read.
    const PREFIX: u8 = 8;
    /// list-append: may hold garbage, duplicate or aborted elements.
    const CAREFUL: u8 = 16;
    /// A list read (else a register read).
    const LIST: u8 = 32;

    /// A read of `(txn, mop)` that observed `from`; `flags` are the
    /// `Read::*` bits.
    fn new(txn: u32, mop: u32, from: ReadFrom, flags: u8) -> Read {
        let from = match from {
            ReadFrom::Initial => INITIAL,
            ReadFrom::Write(id) => id,
            ReadFrom::Garbage => GARBAGE,
        };
        Read {
            txn,
            mop,
            from,
            flags,
        }
    }

    /// Its interned key.
    #[inline]
    pub fn key(&self, txns: &Txns<'_>) -> u32 {
        txns.key_of(self.txn, self.mop as usize)
    }

    /// Whose state it observed.
    #[inline]
    pub fn from(&self) -> ReadFrom {
        match self.from {
            INITIAL => ReadFrom::Initial,
            GARBAGE => ReadFrom::Garbage,
            id => ReadFrom::Write(id),
        }
    }

    /// What it returned, read from its micro-op in `txns`.
    pub fn value<'h>(&self, txns: &Txns<'h>) -> Value<'h> {
        let tx = &txns.txns[self.txn as usize];
        let rv = match txns.mops_of(tx).get(self.mop as usize) {
            Some(MicroOp::Read(_, rv)) => Some(rv),
            _ => None,
        };
        if self.has(Read::LIST) {
            Value::List(rv.and_then(|rv| read_list(tx.status, rv)).unwrap_or(&[]))
        } else {
            Value::Register(rv.and_then(read_scalar).flatten())
        }
    }

    #[inline]
    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// No earlier micro-op of the transaction touches `key` (an external read).
    #[inline]
    pub fn first_on_key(&self) -> bool {
        self.has(Read::FIRST_ON_KEY)
    }

    /// A later micro-op of the transaction writes `key`.
    #[inline]
    pub fn writes_later(&self) -> bool {
        self.has(Read::WRITES_LATER)
    }

    /// An earlier micro-op of the transaction writes `key` (the read should
    /// see that write: `internal` checks it).
    #[inline]
    pub fn after_own_write(&self) -> bool {
        self.has(Read::AFTER_OWN_WRITE)
    }

    /// list-append: the read is a prefix of its key's longest read (always
    /// for a register read).
    #[inline]
    pub fn prefix(&self) -> bool {
        !self.has(Read::LIST) || self.has(Read::PREFIX)
    }

    /// list-append: the read may hold garbage, duplicate or aborted
    /// elements and needs an element-by-element look.
    #[inline]
    pub fn careful(&self) -> bool {
        self.has(Read::CAREFUL)
    }
}

/// Everything observed, per key: writes and reads.
#[derive(Debug, Default)]
pub struct Observations<'h> {
    /// Every write, by transaction then micro-op from last to first (a
    /// repeated (key, value) keeps its first writer only).
    pub writes: Vec<Write>,
    ids: WriteIds<'h>,
    /// Every interpretable read of a transaction that did not abort, by
    /// transaction then micro-op.
    pub reads: Vec<Read>,
    /// list-append: per key, the longest read (ok and info reads; ties go
    /// to the earliest transaction), empty if none.
    pub longest: Vec<&'h [Val]>,
    /// list-append: per key, start of its longest read's write ids in
    /// [`Observations::longest_ids`].
    longest_off: Vec<usize>,
    /// list-append: the write id of each element of each longest read
    /// ([`NO`]: nobody appended it).
    longest_ids: Vec<u32>,
    /// Oddities (values written twice, reads of the wrong shape).
    pub warnings: Vec<String>,
    /// rw-register: the history's initial value, when its format has one
    /// other than nil ([`History::initial_value`]).
    initial: Option<&'h Val>,
}

/// A list read as a list: `nil` is the empty list only in a committed
/// transaction (an indeterminate `nil` read says nothing).
pub fn read_list(status: Status, rv: &ReadValue) -> Option<&[Val]> {
    match rv {
        ReadValue::List(l) => Some(l),
        ReadValue::Nil if status == Status::Ok => Some(&[]),
        _ => None,
    }
}

/// A register read as a value (`Some(None)` = nil); `None` for a list.
pub fn read_scalar(rv: &ReadValue) -> Option<Option<&Val>> {
    match rv {
        ReadValue::Nil => Some(None),
        ReadValue::Scalar(v) => Some(Some(v)),
        ReadValue::List(_) => None,
    }
}

impl<'h> Observations<'h> {
    /// Observes `txns` as `workload` transactions.
    pub fn new(txns: &Txns<'h>, history: &'h History, workload: Workload) -> Observations<'h> {
        Self::build(txns, history, workload, history.len() >= PARALLEL_FROM)
    }

    /// As [`Observations::new`]; `parallel`: in two halves, side by side
    /// (the same observations).
    fn build(
        txns: &Txns<'h>,
        history: &'h History,
        workload: Workload,
        parallel: bool,
    ) -> Observations<'h> {
        let list = workload == Workload::ListAppend;
        let mut o = Observations {
            ids: WriteIds::new(&int_ranges(txns, list, parallel)),
            // Sized once: a doubling vector held the old and the new block
            // (tens of MB at 1M transactions) while it copied.
            writes: Vec::with_capacity(if list { txns.n_appends } else { 0 }),
            initial: history.initial_value(),
            ..Observations::default()
        };
        o.index_writes(txns, history, list, parallel);
        if list {
            o.list_reads(txns, parallel);
        } else {
            o.register_reads(txns, parallel);
        }
        o
    }

    /// Indexes every write (a repeated (key, value) keeps its first
    /// writer, said in a warning).
    fn writes_of(&mut self, txns: &Txns<'h>, history: &History, list: bool) {
        let opi = |t: u32| txns.op_index(history, t);
        let key = |k: u32| Key(txns.keys[k as usize].clone());
        let mut seen_keys: Vec<u32> = Vec::new();
        for (t, tx) in txns.txns.iter().enumerate() {
            seen_keys.clear();
            for (i, m) in txns.mops_of(tx).iter().enumerate().rev() {
                let Some(v) = Self::write_mop(m, list) else {
                    continue;
                };
                let k = txns.key_of(t as u32, i);
                let is_final = !seen_keys.contains(&k);
                if is_final {
                    seen_keys.push(k);
                }
                let id = self.writes.len() as u32;
                match self.ids.insert(k, &v.0, id) {
                    Some(existing) => {
                        self.writes[existing as usize].repeated = true;
                        let first = self.writes[existing as usize].txn;
                        self.warnings.push(format!(
                            "value {v} {} key {} more than once (ops {} and {}); values must be unique per key",
                            if list { "appended to" } else { "written to" },
                            key(k),
                            opi(first),
                            opi(t as u32)
                        ));
                    }
                    None => self.writes.push(Write {
                        txn: t as u32,
                        mop: i as u32,
                        is_final,
                        repeated: false,
                    }),
                }
            }
        }
    }

    /// The write of `v` to key `k`, if any.
    #[inline]
    pub fn write_of(&self, k: u32, v: &Val) -> Option<u32> {
        self.ids.get(k, &v.0)
    }

    /// rw-register: whether reading `v` from key `k` is a read of the
    /// initial state: `v` is the history's initial value and nobody writes
    /// it to `k` (where someone does, the read has that writer).
    #[inline]
    pub fn reads_initial(&self, k: u32, v: &Val) -> bool {
        self.initial.is_some_and(|iv| iv == v) && self.write_of(k, v).is_none()
    }

    /// The write with id `w`.
    #[inline]
    pub fn write(&self, w: u32) -> &Write {
        &self.writes[w as usize]
    }

    /// list-append: the write ids of key `k`'s longest read, element by element.
    pub fn longest_ids(&self, k: u32) -> &[u32] {
        match (
            self.longest_off.get(k as usize),
            self.longest_off.get(k as usize + 1),
        ) {
            (Some(&a), Some(&b)) => &self.longest_ids[a..b],
            _ => &[],
        }
    }

    /// The transaction's micro-op writes (appends in list-append, writes in
    /// rw-register), as their key and value.
    pub(crate) fn write_mop(m: &MicroOp, list: bool) -> Option<&Val> {
        match (m, list) {
            (MicroOp::Append(_, v), true) | (MicroOp::Write(_, v), false) => Some(v),
            _ => None,
        }
    }

    /// Indexes every write; for list-append, also picks the longest read of
    /// each key (`parallel`: on a thread of its own, beside the writes).
    fn index_writes(&mut self, txns: &Txns<'h>, history: &History, list: bool, parallel: bool) {
        let nkeys = txns.keys.len();
        let (longest, bad_type) = match (list, parallel) {
            (false, _) => {
                self.writes_of(txns, history, list);
                return;
            }
            (true, false) => {
                self.writes_of(txns, history, list);
                longest_reads(txns)
            }
            (true, true) => std::thread::scope(|s| {
                let longest = s.spawn(|| longest_reads(txns));
                self.writes_of(txns, history, list);
                match longest.join() {
                    Ok(l) => l,
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }),
        };
        if bad_type > 0 {
            self.warnings.push(format!(
                "{bad_type} reads returned a single value rather than a list; ignored by list-append"
            ));
        }
        self.longest = longest
            .iter()
            .map(|&(t, i)| {
                if t == NO {
                    return &[][..];
                }
                let tx = &txns.txns[t as usize];
                match &txns.mops_of(tx)[i as usize] {
                    MicroOp::Read(_, rv) => read_list(tx.status, rv).unwrap_or(&[]),
                    _ => &[],
                }
            })
            .collect();
        self.longest_off = Vec::with_capacity(nkeys + 1);
        for k in 0..nkeys {
            self.longest_off.push(self.longest_ids.len());
            for v in self.longest[k] {
                let id = self.ids.get(k as u32, &v.0).unwrap_or(NO);
                self.longest_ids.push(id);
            }
        }
        self.longest_off.push(self.longest_ids.len());
    }
}

/// list-append: per key, the longest read of a transaction that did not
/// abort — `(transaction, micro-op)`, `(NO, 0)` if none; ties go to the
/// earliest transaction, inside one to its earliest micro-op — and how
/// many reads returned a single value.
fn longest_reads(txns: &Txns<'_>) -> (Vec<(u32, u32)>, usize) {
    let nkeys = txns.keys.len();
    let mut longest: Vec<(u32, u32)> = vec![(NO, 0); nkeys];
    let mut longest_len: Vec<usize> = vec![0; nkeys];
    let mut bad_type = 0usize;
    for (t, tx) in txns.txns.iter().enumerate() {
        if tx.status == Status::Fail {
            continue;
        }
        for (i, m) in txns.mops_of(tx).iter().enumerate().rev() {
            let MicroOp::Read(_, rv) = m else { continue };
            if matches!(rv, ReadValue::Scalar(_)) {
                bad_type += 1;
                continue;
            }
            let Some(l) = read_list(tx.status, rv) else {
                continue;
            };
            let k = txns.key_of(t as u32, i) as usize;
            if longest[k].0 == NO
                || l.len() > longest_len[k]
                || (l.len() == longest_len[k] && longest[k].0 == t as u32)
            {
                longest[k] = (t as u32, i as u32);
                longest_len[k] = l.len();
            }
        }
    }
    (longest, bad_type)
}

/// Per key: the lowest and highest integer written (appended in
/// list-append) and how many writes of an integer there are (`parallel`:
/// the transactions in two halves, one on a thread of its own).
fn int_ranges(txns: &Txns<'_>, list: bool, parallel: bool) -> Vec<(i64, i64, usize)> {
    let parts = halves(parallel, txns.len(), |part| {
        let mut ranges = vec![(i64::MAX, i64::MIN, 0usize); txns.keys.len()];
        for t in part {
            for (i, m) in txns.mops(t as u32).iter().enumerate() {
                if let Some(Val(Atom::Int(v))) = Observations::write_mop(m, list) {
                    let r = &mut ranges[txns.key_of(t as u32, i) as usize];
                    *r = (r.0.min(*v), r.1.max(*v), r.2 + 1);
                }
            }
        }
        ranges
    });
    let mut parts = parts.into_iter();
    let mut ranges = parts.next().unwrap_or_default();
    for part in parts {
        for (r, p) in ranges.iter_mut().zip(part) {
            *r = (r.0.min(p.0), r.1.max(p.1), r.2 + p.2);
        }
    }
    ranges
}

/// The [`Read`] flags of micro-op `i` (on key `k`) of `t` that depend on
/// the rest of its transaction: whether it is the first on `k`, whether a
/// later micro-op writes `k`, and whether an earlier one does.
fn around(txns: &Txns<'_>, t: u32, i: usize, k: u32, list: bool) -> u8 {
    let mops = txns.mops(t);
    let on_k = |j: usize| txns.key_of(t, j) == k;
    let writes = |j: usize| Observations::write_mop(&mops[j], list).is_some();
    let mut flags = 0;
    if !(0..i).any(on_k) {
        flags |= Read::FIRST_ON_KEY;
    }
    if (i + 1..mops.len()).any(|j| writes(j) && on_k(j)) {
        flags |= Read::WRITES_LATER;
    }
    if (0..i).any(|j| writes(j) && on_k(j)) {
        flags |= Read::AFTER_OWN_WRITE;
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of each per micro-op of a history-sized check: their size is
    /// the checker's memory (56 and 24 B before).
    #[test]
    fn reads_and_writes_stay_small() {
        assert_eq!(std::mem::size_of::<Read>(), 16);
        assert_eq!(std::mem::size_of::<Write>(), 12);
        let r = Read::new(1, 2, ReadFrom::Write(INITIAL - 1), Read::LIST);
        assert_eq!(r.from(), ReadFrom::Write(INITIAL - 1));
        assert!(!r.prefix() && !r.careful() && !r.first_on_key());
        let r = Read::new(1, 2, ReadFrom::Initial, Read::FIRST_ON_KEY);
        assert!(r.from() == ReadFrom::Initial && r.prefix() && r.first_on_key());
        assert_eq!(
            Read::new(0, 0, ReadFrom::Garbage, 0).from(),
            ReadFrom::Garbage
        );
    }

    /// Both workloads' observations, one pass or in halves side by side,
    /// are the same: writes (a repeated value among them), reads with
    /// their writers and flags, longest reads, warnings.
    #[test]
    fn halves_observe_as_one_pass() {
        use store::{Op, OpType};
        for workload in [Workload::ListAppend, Workload::RwRegister] {
            let mut lists: Vec<Vec<Val>> = vec![Vec::new(); 10];
            let ops: Vec<Op> = (0..5000u64)
                .map(|i| {
                    let (k, r) = ((i % 10) as usize, ((i + 3) % 10) as usize);
                    let v = Val::int(if i == 4000 { 10 } else { i as i64 });
                    let mops = if workload == Workload::ListAppend {
                        lists[k].push(v.clone());
                        let mut seen = lists[r].clone();
                        if i % 97 == 0 {
                            seen.push(Val::int(-1));
                        }
                        let read = match i % 301 {
                            0 => ReadValue::Scalar(Val::int(1)),
                            _ => ReadValue::List(seen.into()),
                        };
                        vec![
                            MicroOp::Read(Key::int(k as i64), ReadValue::Nil),
                            MicroOp::Append(Key::int(k as i64), v),
                            MicroOp::Read(Key::int(r as i64), read),
                        ]
                    } else {
                        vec![
                            MicroOp::Write(Key::int(k as i64), v),
                            MicroOp::Read(
                                Key::int(r as i64),
                                ReadValue::Scalar(Val::int(i as i64 - 7)),
                            ),
                        ]
                    };
                    let ty = if i % 13 == 0 {
                        OpType::Fail
                    } else {
                        OpType::Ok
                    };
                    Op::txn(i, ty, i % 5, mops)
                })
                .collect();
            let h = History::new(ops).unwrap_or_default();
            let txns = Txns::new(&h);
            let one = Observations::build(&txns, &h, workload, false);
            let two = Observations::build(&txns, &h, workload, true);
            assert_eq!(format!("{two:?}"), format!("{one:?}"));
            assert!(!one.warnings.is_empty() && one.reads.len() > 4000);
        }
    }
}
