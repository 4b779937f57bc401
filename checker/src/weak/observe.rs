//! What the weak-isolation checkers read of a history: which transactions
//! take part, each external read's writer (or the initial state), the keys
//! each transaction writes, and the sessions (one per process).
//!
//! Key decision: only reads that name exactly one committed (or
//! indeterminate) writer's final write enter the saturation. Reads of
//! aborted, intermediate, unknown (garbage), ambiguous (a value written
//! twice) or own future writes, and reads after an own write of the same
//! key, are left out: the other analyses report them (G1a, G1b,
//! garbage-read, future-read, internal), and leaving a read out only removes
//! constraints, so it can never make a valid history look invalid.

use crate::analysis::Workload;
use crate::txn::{Status, Txns};
use rustc_hash::FxHashMap;
use store::{MicroOp, ReadValue, Val};

/// The writer of a read that observed the initial state.
pub const INIT: u32 = u32::MAX;
/// No session (a transaction without a client process).
pub const NO_SESSION: u32 = u32::MAX;

/// One external read of a participating transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    /// Interned key.
    pub key: u32,
    /// The writing transaction, or [`INIT`].
    pub writer: u32,
    /// Micro-op index of the read in its transaction.
    pub mop: u32,
    /// Micro-op index of the write in the writer (0 for [`INIT`]).
    pub wmop: u32,
}

/// Per-transaction observations, as flat arrays indexed by transaction id
/// (the position in [`Txns::txns`]).
#[derive(Debug, Default)]
pub struct Observations {
    /// Number of transactions (participating or not).
    pub n: usize,
    /// Whether the transaction takes part: committed, or indeterminate and
    /// read by a participating transaction.
    pub included: Vec<bool>,
    /// External reads, grouped by transaction (see [`Observations::reads`]).
    read_list: Vec<Read>,
    read_off: Vec<u32>,
    /// Keys written (sorted, distinct) with the micro-op of the last write
    /// of each, grouped by transaction.
    write_list: Vec<(u32, u32)>,
    write_off: Vec<u32>,
    /// Session of each transaction ([`NO_SESSION`] when it has none).
    pub session: Vec<u32>,
    /// Position of each transaction in its session.
    pub pos: Vec<u32>,
    /// Each session's participating transactions, in order.
    pub sessions: Vec<Vec<u32>>,
    /// Each session's process id.
    pub session_process: Vec<u64>,
    /// Reads left out because their writer could not be named uniquely.
    pub skipped_reads: usize,
}

impl Observations {
    /// The external reads of `t`, in program order.
    pub fn reads(&self, t: u32) -> &[Read] {
        let t = t as usize;
        &self.read_list[self.read_off[t] as usize..self.read_off[t + 1] as usize]
    }

    /// The keys `t` writes, sorted, each with the micro-op of its last write.
    pub fn writes(&self, t: u32) -> &[(u32, u32)] {
        let t = t as usize;
        &self.write_list[self.write_off[t] as usize..self.write_off[t + 1] as usize]
    }

    /// Whether `t` writes so many keys (at least √ of all keys written, over
    /// all transactions) that readers look its keys up one by one instead
    /// of bucketing them: at most √ of the writers are heavy, which keeps
    /// the per-reader work of the saturation at O(n^1.5) overall (AWDIT's
    /// split).
    pub fn heavy(&self, t: u32) -> bool {
        let k = self.writes(t).len() as u64;
        k >= 2 && k * k >= self.write_list.len() as u64
    }

    /// The micro-op of `t`'s last write of `key`, if it writes it.
    pub fn write_of(&self, t: u32, key: u32) -> Option<u32> {
        if t == INIT {
            return None;
        }
        let w = self.writes(t);
        w.binary_search_by_key(&key, |&(k, _)| k)
            .ok()
            .map(|i| w[i].1)
    }

    /// Whether `t` writes `key`.
    #[inline]
    pub fn writes_key(&self, t: u32, key: u32) -> bool {
        self.write_of(t, key).is_some()
    }

    /// Collects the observations of `txns` for `workload`.
    /// `initial`: the value the history's format names as every key's
    /// initial state (peer formats: `0`); a read of it on a key nobody
    /// writes it to reads the initial state.
    pub fn new(txns: &Txns<'_>, workload: Workload, initial: Option<&Val>) -> Observations {
        let n = txns.len();
        let mut out = Observations {
            n,
            included: vec![false; n],
            ..Observations::default()
        };
        // (key, value) → (writer, micro-op, final?), AMBIGUOUS when written twice.
        const AMBIGUOUS: u32 = u32::MAX - 1;
        let mut writer: FxHashMap<(u32, &Val), (u32, u32, bool)> = FxHashMap::default();
        let mut last_write: FxHashMap<u32, u32> = FxHashMap::default();
        out.write_off.push(0);
        for (t, txn) in txns.txns.iter().enumerate() {
            let t = t as u32;
            last_write.clear();
            for (i, m) in txn.mops.iter().enumerate() {
                let v = match (workload, m) {
                    (Workload::RwRegister, MicroOp::Write(_, v))
                    | (Workload::ListAppend, MicroOp::Append(_, v)) => v,
                    _ => continue,
                };
                let k = txns.key_of(t, i);
                writer
                    .entry((k, v))
                    .and_modify(|e| e.0 = AMBIGUOUS)
                    .or_insert((t, i as u32, false));
                last_write.insert(k, i as u32);
            }
            let start = out.write_list.len();
            for (&k, &i) in &last_write {
                if let MicroOp::Write(_, v) | MicroOp::Append(_, v) = &txn.mops[i as usize]
                    && let Some(e) = writer.get_mut(&(k, v))
                    && e.0 == t
                {
                    e.2 = true;
                }
                if txn.status != Status::Fail {
                    out.write_list.push((k, i));
                }
            }
            out.write_list[start..].sort_unstable();
            out.write_off.push(out.write_list.len() as u32);
        }

        // Reads, and which indeterminate writers are read.
        let mut own_stamp: Vec<u32> = vec![u32::MAX; txns.keys.len()];
        out.read_off.push(0);
        for (t, txn) in txns.txns.iter().enumerate() {
            let t = t as u32;
            if txn.status == Status::Ok {
                out.included[t as usize] = true;
                for (i, m) in txn.mops.iter().enumerate() {
                    let k = txns.key_of(t, i);
                    match m {
                        MicroOp::Read(_, r) => {
                            if own_stamp[k as usize] == t {
                                continue; // internal read: `internal` checks it
                            }
                            let observed = match (workload, r) {
                                (_, ReadValue::Nil) => None,
                                (Workload::ListAppend, ReadValue::List(l)) => l.last(),
                                (Workload::RwRegister, ReadValue::Scalar(v)) => Some(v),
                                _ => {
                                    out.skipped_reads += 1;
                                    continue;
                                }
                            };
                            let (w, wmop) = match observed {
                                None => (INIT, 0),
                                Some(v) if initial == Some(v) && !writer.contains_key(&(k, v)) => {
                                    (INIT, 0)
                                }
                                Some(v) => match writer.get(&(k, v)) {
                                    Some(&(w, wmop, true))
                                        if w != AMBIGUOUS
                                            && w != t
                                            && txns.txns[w as usize].status != Status::Fail =>
                                    {
                                        (w, wmop)
                                    }
                                    _ => {
                                        out.skipped_reads += 1;
                                        continue;
                                    }
                                },
                            };
                            out.read_list.push(Read {
                                key: k,
                                writer: w,
                                mop: i as u32,
                                wmop,
                            });
                        }
                        MicroOp::Write(..) | MicroOp::Append(..) => own_stamp[k as usize] = t,
                        MicroOp::ReadRange(_) => {}
                    }
                }
            }
            out.read_off.push(out.read_list.len() as u32);
        }
        for r in &out.read_list {
            if r.writer != INIT {
                out.included[r.writer as usize] = true;
            }
        }

        // Sessions: one per process, participating transactions in order.
        out.session = vec![NO_SESSION; n];
        out.pos = vec![0; n];
        let mut by_process: FxHashMap<u64, u32> = FxHashMap::default();
        for (t, txn) in txns.txns.iter().enumerate() {
            let (true, Some(p)) = (out.included[t], txn.process) else {
                continue;
            };
            let next = out.sessions.len() as u32;
            let s = *by_process.entry(p).or_insert(next);
            if s == next {
                out.sessions.push(Vec::new());
                out.session_process.push(p);
            }
            let list = &mut out.sessions[s as usize];
            out.session[t] = s;
            out.pos[t] = list.len() as u32;
            list.push(t as u32);
        }
        out
    }
}
