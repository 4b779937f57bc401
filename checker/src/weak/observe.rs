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
//!
//! Indeterminate (`info`) transactions: their reads are not observations
//! (the client never received them) and are left out; one takes part, as
//! committed, iff a committed transaction read one of its writes. With its
//! reads unconstrained, committing one only adds constraints, so this is
//! the choice that makes the history valid if any does.

use crate::observe::ReadFrom;
use crate::txn::{Status, Txns};
use crate::workload::Workload;
use rustc_hash::FxHashMap;
use store::MicroOp;

/// The writer of a read that observed the initial state.
pub const INIT: u32 = u32::MAX;
/// No session (a transaction without a client process).
pub const NO_SESSION: u32 = u32::MAX;

/// One external read of a participating transaction: 8 B, what the
/// saturation reads (where it was, in the reader and the writer, only a
/// report needs: [`Sites`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    /// Interned key.
    pub key: u32,
    /// The writing transaction, or [`INIT`].
    pub writer: u32,
}

/// Where each of [`Observations`]' reads is: `(mop, wmop)`, the micro-op of
/// the read in its transaction and of the write in the writer (0 for
/// [`INIT`]), in the order of [`Observations::reads`]. Made only for a
/// report (a history the level's check found invalid), from the same
/// observations, by the same selection of reads.
#[derive(Debug, Default)]
pub struct Sites(Vec<(u32, u32)>);

impl Sites {
    /// The sites of `obs`'s reads, from the observations it was made of.
    pub fn new(txns: &Txns<'_>, seen: &crate::observe::Observations<'_>) -> Sites {
        let mut sites = Vec::with_capacity(seen.reads.len());
        each_external_read(txns, seen, |m| {
            if let Met::Read(_, mop, wmop) = m {
                sites.push((mop, wmop));
            }
        });
        Sites(sites)
    }

    /// The sites of `t`'s reads in `obs` (one per [`Observations::reads`]).
    pub fn of(&self, obs: &Observations, t: u32) -> &[(u32, u32)] {
        let t = t as usize;
        &self.0[obs.read_off[t] as usize..obs.read_off[t + 1] as usize]
    }
}

/// Whether `m` is a write of the workload (`list`: an append, else a
/// register write), as the shared observations index them.
fn is_write(list: bool, m: &MicroOp) -> bool {
    crate::observe::Observations::write_mop(m, list).is_some()
}

/// The micro-op of `t`'s last write of `key`, if it writes it (a failed
/// transaction writes nothing; nor does [`INIT`]); `list`: list-append.
pub fn last_write(txns: &Txns<'_>, list: bool, t: u32, key: u32) -> Option<u32> {
    let txn = txns.txns.get(t as usize)?;
    if txn.status == Status::Fail {
        return None;
    }
    let mops = txns.mops_of(txn);
    (0..mops.len())
        .rev()
        .find(|&i| is_write(list, &mops[i]) && txns.key_of(t, i) == key)
        .map(|i| i as u32)
}

/// What [`each_external_read`] meets.
enum Met {
    /// An external read of a committed transaction whose writer is named
    /// uniquely, with its micro-op and its writer's (`mop`, `wmop`).
    Read(Read, u32, u32),
    /// A read left out for want of a uniquely named writer.
    Skipped,
    /// The end of a transaction's reads.
    Done,
}

/// Calls `on` for each external read of each committed transaction, in
/// transaction order, whose writer is named uniquely — the initial state,
/// or a committed or indeterminate transaction's final write of the value,
/// not its own ([`Met::Read`]), for each read left out for want of one
/// ([`Met::Skipped`]), and after each transaction ([`Met::Done`]).
fn each_external_read(
    txns: &Txns<'_>,
    seen: &crate::observe::Observations<'_>,
    mut on: impl FnMut(Met),
) {
    let mut reads = seen.reads.iter().peekable();
    for (t, txn) in txns.txns.iter().enumerate() {
        let t = t as u32;
        let committed = txn.status == Status::Ok;
        while let Some(r) = reads.next_if(|r| r.txn == t) {
            if !committed || r.after_own_write() {
                continue; // internal reads: `internal` checks them
            }
            let (writer, wmop) = match r.from() {
                ReadFrom::Initial => (INIT, 0),
                ReadFrom::Write(id) => {
                    let w = seen.write(id);
                    let named = w.is_final && !w.repeated && w.txn != t;
                    if !named || txns.status(w.txn) == Status::Fail {
                        on(Met::Skipped);
                        continue;
                    }
                    (w.txn, w.mop)
                }
                ReadFrom::Garbage => {
                    on(Met::Skipped);
                    continue;
                }
            };
            let key = r.key(txns);
            on(Met::Read(Read { key, writer }, r.mop, wmop));
        }
        on(Met::Done);
    }
}

/// Per-transaction observations, as flat arrays indexed by transaction id
/// (the position in [`Txns::txns`]).
#[derive(Debug, Default)]
pub struct Observations {
    /// Number of transactions (participating or not).
    pub n: usize,
    /// Whether the transaction takes part: committed, or indeterminate and
    /// read by a committed transaction.
    pub included: Vec<bool>,
    /// External reads, grouped by transaction (see [`Observations::reads`]).
    read_list: Vec<Read>,
    read_off: Vec<u32>,
    /// Keys written (sorted, distinct), grouped by transaction (where the
    /// last write of each is, only a report asks: [`last_write`]).
    write_list: Vec<u32>,
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

    /// Number of external reads, over all transactions.
    pub fn read_count(&self) -> usize {
        self.read_list.len()
    }

    /// The keys `t` writes, sorted.
    pub fn writes(&self, t: u32) -> &[u32] {
        let t = t as usize;
        &self.write_list[self.write_off[t] as usize..self.write_off[t + 1] as usize]
    }

    /// The keys written, grouped by transaction, and each group's end
    /// (as [`keys_written`] gives them).
    pub fn written_keys(&self) -> (&[u32], &[u32]) {
        (&self.write_list, &self.write_off)
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

    /// Whether `t` writes `key`.
    #[inline]
    pub fn writes_key(&self, t: u32, key: u32) -> bool {
        t != INIT && self.writes(t).binary_search(&key).is_ok()
    }

    /// Collects what the saturation needs from `txns` and what the shared
    /// observations (`seen`, computed once for every analysis) say each
    /// read observed — no value is looked up again here.
    pub fn new(
        txns: &Txns<'_>,
        seen: &crate::observe::Observations<'_>,
        workload: Workload,
    ) -> Observations {
        let n = txns.len();
        // Sized once: the lists hold at most the shared observations'
        // writes and reads (growing them by doubling faulted in fresh
        // pages for every copy on a big history).
        let mut out = Observations {
            n,
            included: vec![false; n],
            read_list: Vec::with_capacity(seen.reads.len()),
            read_off: Vec::with_capacity(n + 1),
            ..Observations::default()
        };
        // Keys each transaction writes, sorted. list-append: one per final
        // write of the shared observations (by transaction, each key's last
        // write marked), when they hold every append (a value appended
        // twice keeps its first writer only); else from the micro-ops.
        if workload == Workload::ListAppend && seen.writes.len() == txns.n_appends {
            out.write_list.reserve_exact(seen.writes.len());
            out.write_off.reserve_exact(n + 1);
            out.write_off.push(0);
            let mut ws = seen.writes.iter().peekable();
            for (t, txn) in txns.txns.iter().enumerate() {
                let start = out.write_list.len();
                while let Some(w) = ws.next_if(|w| w.txn == t as u32) {
                    if w.is_final && txn.status != Status::Fail {
                        out.write_list.push(w.key(txns));
                    }
                }
                out.write_list[start..].sort_unstable();
                out.write_off.push(out.write_list.len() as u32);
            }
        } else {
            (out.write_list, out.write_off) = keys_written(txns, workload, seen.writes.len());
        }

        // External reads of committed transactions whose writer is named
        // uniquely (`each_external_read`).
        out.read_off.push(0);
        for (t, txn) in txns.txns.iter().enumerate() {
            out.included[t] = txn.status == Status::Ok;
        }
        each_external_read(txns, seen, |m| match m {
            Met::Read(r, _, _) => out.read_list.push(r),
            Met::Skipped => out.skipped_reads += 1,
            Met::Done => out.read_off.push(out.read_list.len() as u32),
        });
        for r in &out.read_list {
            if r.writer != INIT {
                out.included[r.writer as usize] = true;
            }
        }

        // Sessions: one per process, participating transactions in order;
        // each session's list sized by a first pass (its length).
        out.session = vec![NO_SESSION; n];
        out.pos = vec![0; n];
        let mut by_process: FxHashMap<u64, u32> = FxHashMap::default();
        let mut len: Vec<u32> = Vec::new();
        for t in 0..txns.len() {
            let (true, Some(p)) = (out.included[t], txns.process(t as u32)) else {
                continue;
            };
            let next = len.len() as u32;
            let s = *by_process.entry(p).or_insert(next);
            if s == next {
                len.push(0);
                out.session_process.push(p);
            }
            out.session[t] = s;
            out.pos[t] = len[s as usize];
            len[s as usize] += 1;
        }
        out.sessions = len
            .iter()
            .map(|&l| Vec::with_capacity(l as usize))
            .collect();
        for (t, &s) in out.session.iter().enumerate() {
            if s != NO_SESSION {
                out.sessions[s as usize].push(t as u32);
            }
        }
        out
    }
}

/// The keys each transaction writes, from its micro-ops, as
/// ([`Observations::written_keys`]) a list grouped by transaction (each
/// group sorted, distinct) and the groups' ends: what [`Observations::new`]
/// takes from the shared observations of a list-append history, and the
/// reference it is tested against. No hash map: transactions are mostly a
/// few micro-ops. `room`: the writes expected (the list is sized once).
pub fn keys_written(txns: &Txns<'_>, workload: Workload, room: usize) -> (Vec<u32>, Vec<u32>) {
    let is_list = workload == Workload::ListAppend;
    let mut list = Vec::with_capacity(room);
    let mut off = Vec::with_capacity(txns.len() + 1);
    off.push(0);
    for (t, txn) in txns.txns.iter().enumerate() {
        let start = list.len();
        if txn.status != Status::Fail {
            for (i, m) in txns.mops_of(txn).iter().enumerate() {
                if is_write(is_list, m) {
                    list.push(txns.key_of(t as u32, i));
                }
            }
        }
        list[start..].sort_unstable();
        let mut kept = start;
        for j in start..list.len() {
            if kept == start || list[kept - 1] != list[j] {
                list[kept] = list[j];
                kept += 1;
            }
        }
        list.truncate(kept);
        off.push(list.len() as u32);
    }
    (list, off)
}

#[cfg(test)]
impl Observations {
    /// `n` transactions that read and write nothing, in no session.
    pub(crate) fn empty_for_test(n: usize) -> Observations {
        Observations {
            n,
            included: vec![true; n],
            read_off: vec![0; n + 1],
            write_off: vec![0; n + 1],
            session: vec![NO_SESSION; n],
            pos: vec![0; n],
            ..Observations::default()
        }
    }
}
