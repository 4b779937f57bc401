//! Preprocessing: the client transactions of a history with their commit
//! state (committed `ok`, aborted `fail`, indeterminate `info` — including
//! invocations that never completed), and dense integer ids for keys.
//!
//! Key decision: everything downstream works on dense `u32` ids (transaction
//! = position in [`Txns::txns`], key = interned id) so hot loops index `Vec`s
//! instead of hashing.

use crate::graph::{PARALLEL_FROM, halves};
use crate::workload::Workload;
use rustc_hash::FxHashMap;
use store::{Atom, F, History, MicroOp, MopKinds, OpIndex, OpType, Process};

/// Commit state of an observed transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Definitely committed.
    Ok,
    /// Definitely aborted.
    Fail,
    /// Unknown (timeout, crash, never completed).
    Info,
}

/// One client transaction: 16 B (its micro-ops are read back from the
/// history, [`Txns::mops_of`]: a slice here would double it, 16 MB at 1M
/// transactions alive through every analysis).
#[derive(Clone, Debug)]
pub struct Txn {
    /// Commit state.
    pub status: Status,
    /// Its micro-ops are the invocation's (`inv`), not those of `pos`.
    mops_at_inv: bool,
    /// Position (in the `History`) of the completion, or of the invocation
    /// if it never completed. This op stands for the transaction.
    pub pos: u32,
    /// Position of the invocation (equal to `pos` for completion-only histories).
    pub inv: u32,
    /// Start of this transaction's entries in [`Txns::mop_keys`].
    pub mop_start: u32,
}

/// The transactions of a history plus interned keys.
#[derive(Debug, Default)]
pub struct Txns<'h> {
    /// The history they come from (where [`Txns::mops_of`] reads).
    history: Option<&'h History>,
    /// Client transactions in order of their representative op.
    pub txns: Vec<Txn>,
    /// Interned key id of every micro-op, flattened (see [`Txn::mop_start`]).
    pub mop_keys: Vec<u32>,
    /// Key id → the key.
    pub keys: Vec<&'h Atom>,
    /// Number of append micro-ops (for sizing indices).
    pub n_appends: usize,
    /// Number of read micro-ops.
    pub n_reads: usize,
    /// Number of range reads (predicate reads).
    pub n_range_reads: usize,
    /// [`Census::not_list_append`].
    not_list_append: u64,
    /// [`Census::not_rw_register`].
    not_rw_register: u64,
    /// Each transaction's [`Txn::status`] again, 1 B apiece: looking up a
    /// writer's status by its id reads this small array instead of a
    /// history-sized one (a cache miss per read at 1M transactions).
    statuses: Vec<Status>,
    /// Each transaction's client process ([`Txns::process`]): the id if
    /// below [`PROCESS_RARE`], else [`PROCESS_NONE`] or [`PROCESS_RARE`]
    /// (then in `rare_processes`). 4 B apiece outside [`Txn`], which is
    /// 16 B without it (24 with an `Option<u64>`: 8 MB at 1M
    /// transactions, alive through every analysis).
    processes: Vec<u32>,
    /// `(transaction, process)` of the ids ≥ [`PROCESS_RARE`], by transaction.
    rare_processes: Vec<(u32, u64)>,
    /// Oddities noticed (ops skipped and why).
    pub warnings: Vec<String>,
}

/// What a check covered, in numbers: its transactions by outcome and the
/// keys their micro-ops touch ([`Txns::census`]). Counted from the
/// transactions the analyses read, so it says what was checked: an `ok`
/// without micro-ops of its own counts as `info` (as it is checked), a
/// completion without any is not a transaction, and a range read's bounds
/// are not keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Committed transactions.
    pub ok: u64,
    /// Aborted ones.
    pub fail: u64,
    /// Indeterminate ones (`info`, or never completed).
    pub info: u64,
    /// Distinct keys.
    pub keys: usize,
    /// Micro-ops of completed transactions that a list-append check cannot
    /// read ([`Workload::unreadable`]).
    pub not_list_append: u64,
    /// Micro-ops of completed transactions that an rw-register check
    /// cannot read ([`Workload::unreadable`]).
    pub not_rw_register: u64,
}

impl Census {
    /// How many micro-ops of completed transactions `workload` cannot
    /// interpret (Elle's `unexpected-txn-micro-op-types`).
    pub fn foreign(&self, workload: Workload) -> u64 {
        match workload {
            Workload::ListAppend => self.not_list_append,
            Workload::RwRegister => self.not_rw_register,
        }
    }
}

/// [`Txns::processes`]: no client process.
const PROCESS_NONE: u32 = u32::MAX;
/// [`Txns::processes`]: a client id too big for 4 B, in `rare_processes`.
const PROCESS_RARE: u32 = u32::MAX - 1;

impl<'h> Txns<'h> {
    /// Extracts the client transactions of `history`. A big history is
    /// read in two halves of its ops side by side (`graph::halves`); the
    /// second half's keys are numbered after the first half's in the order
    /// they first appear, as one pass numbers them.
    pub fn new(history: &'h History) -> Txns<'h> {
        let parallel = history.len() >= PARALLEL_FROM;
        let mut parts = halves(parallel, history.len(), |ops| Part::read(history, ops)).into_iter();
        let (mut out, ids) = parts.next().unwrap_or_default();
        out.history = Some(history);
        for (later, _) in parts {
            out.append(later, &ids);
        }
        out
    }

    /// Adds `later`, read from the ops after this one's, whose keys are
    /// numbered from 0 in its own order; `ids` are this one's keys' ids.
    fn append(&mut self, later: Txns<'h>, ids: &KeyIds<'h>) {
        let first = self.txns.len() as u32;
        let mop_base = self.mop_keys.len() as u32;
        let renumber: Vec<u32> = later
            .keys
            .iter()
            .map(|&k| {
                ids.get(k).unwrap_or_else(|| {
                    self.keys.push(k);
                    self.keys.len() as u32 - 1
                })
            })
            .collect();
        self.mop_keys
            .extend(later.mop_keys.iter().map(|&k| renumber[k as usize]));
        self.txns.extend(later.txns.into_iter().map(|mut t| {
            t.mop_start += mop_base;
            t
        }));
        self.statuses.extend(later.statuses);
        self.processes.extend(later.processes);
        self.rare_processes.extend(
            later
                .rare_processes
                .into_iter()
                .map(|(t, p)| (t + first, p)),
        );
        self.n_appends += later.n_appends;
        self.n_reads += later.n_reads;
        self.n_range_reads += later.n_range_reads;
        self.not_list_append += later.not_list_append;
        self.not_rw_register += later.not_rw_register;
        self.warnings.extend(later.warnings);
    }

    /// The micro-ops of `tx` (one of [`Txns::txns`]): its completion's, or
    /// its invocation's when the completion carries none.
    #[inline]
    pub fn mops_of(&self, tx: &Txn) -> &'h [MicroOp] {
        let at = if tx.mops_at_inv { tx.inv } else { tx.pos };
        self.history
            .and_then(|h| h.stored_txn(at as usize))
            .unwrap_or(&[])
    }

    /// The micro-ops of transaction `t` (none for an id out of range).
    #[inline]
    pub fn mops(&self, t: u32) -> &'h [MicroOp] {
        self.txns.get(t as usize).map_or(&[], |tx| self.mops_of(tx))
    }

    /// The commit state of transaction `t` (as `txns[t].status`).
    #[inline]
    pub fn status(&self, t: u32) -> Status {
        self.statuses[t as usize]
    }

    /// The client process of transaction `t`, if known.
    #[inline]
    pub fn process(&self, t: u32) -> Option<u64> {
        match self.processes[t as usize] {
            PROCESS_NONE => None,
            PROCESS_RARE => self
                .rare_processes
                .binary_search_by_key(&t, |&(rt, _)| rt)
                .ok()
                .map(|i| self.rare_processes[i].1),
            p => Some(u64::from(p)),
        }
    }

    /// Key id of micro-op `i` of transaction `t`.
    #[inline]
    pub fn key_of(&self, t: u32, i: usize) -> u32 {
        self.mop_keys[self.txns[t as usize].mop_start as usize + i]
    }

    /// The op index that stands for transaction `t`.
    pub fn op_index(&self, history: &History, t: u32) -> OpIndex {
        history.index(self.txns[t as usize].pos as usize)
    }

    /// The transactions by outcome and their keys ([`Census`]).
    pub fn census(&self) -> Census {
        let mut c = Census {
            not_list_append: self.not_list_append,
            not_rw_register: self.not_rw_register,
            ..Census::default()
        };
        for s in &self.statuses {
            match s {
                Status::Ok => c.ok += 1,
                Status::Fail => c.fail += 1,
                Status::Info => c.info += 1,
            }
        }
        c.keys = if self.n_range_reads == 0 {
            self.keys.len()
        } else {
            // A key only a range read names (its bound) is not counted.
            let mut named = vec![false; self.keys.len()];
            for tx in &self.txns {
                let keys = &self.mop_keys[tx.mop_start as usize..];
                for (m, &k) in self.mops_of(tx).iter().zip(keys) {
                    named[k as usize] |= !matches!(m, MicroOp::ReadRange(_));
                }
            }
            named.iter().filter(|&&n| n).count()
        };
        c
    }

    /// Number of transactions.
    pub fn len(&self) -> usize {
        self.txns.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.txns.is_empty()
    }
}

/// Key ids by key: integers by value (a probe never reads the history),
/// other atoms by reference.
#[derive(Default)]
struct KeyIds<'h> {
    ints: FxHashMap<i64, u32>,
    others: FxHashMap<&'h Atom, u32>,
}

impl<'h> KeyIds<'h> {
    fn get(&self, k: &'h Atom) -> Option<u32> {
        match k {
            Atom::Int(i) => self.ints.get(i).copied(),
            other => self.others.get(other).copied(),
        }
    }
}

/// Reading the transactions of a run of a history's ops.
struct Part;

impl Part {
    /// The client transactions of the ops in `range`, their keys numbered
    /// from 0 in the order they first appear there (and those ids). Sized
    /// for every op from `range.start` on, so that later ones can be
    /// appended without growing (a doubling vector copies, and faults in,
    /// each block again).
    fn read<'h>(history: &'h History, range: std::ops::Range<usize>) -> (Txns<'h>, KeyIds<'h>) {
        // At most one transaction per op that is not a completed
        // invocation, at most the stored micro-ops.
        let most = (range.start..history.len())
            .filter(|&p| history.op_type(p) != OpType::Invoke || history.partner(p).is_none())
            .count();
        // The micro-ops of the ops from `range.start` on, by their share
        // of the ops (a few more: the second half may hold more).
        let mops = history.mop_count();
        let share =
            mops - (mops as u128 * range.start as u128 / history.len().max(1) as u128) as usize;
        let mut out = Txns {
            txns: Vec::with_capacity(most),
            statuses: Vec::with_capacity(most),
            processes: Vec::with_capacity(most),
            mop_keys: Vec::with_capacity((share + share / 16).min(mops)),
            ..Txns::default()
        };
        let mut ids = KeyIds::default();
        for pos in range {
            if !is_client_txn(history, pos) {
                continue;
            }
            let op_type = history.op_type(pos);
            let (mut status, inv) = match op_type {
                OpType::Ok => (Status::Ok, history.partner(pos).unwrap_or(pos)),
                OpType::Fail => (Status::Fail, history.partner(pos).unwrap_or(pos)),
                OpType::Info => (Status::Info, history.partner(pos).unwrap_or(pos)),
                OpType::Invoke => {
                    if history.partner(pos).is_some() {
                        continue;
                    }
                    (Status::Info, pos)
                }
            };
            // Borrowed from the history's arena: an elided invocation has
            // none stored, but never stands for a transaction here.
            let (mops, mops_at_inv): (&'h [MicroOp], bool) =
                match (history.stored_txn(pos), history.stored_txn(inv)) {
                    (Some(m), _) if op_type != OpType::Info || !m.is_empty() => (m, false),
                    // Nothing made up: an `ok` without micro-ops of its own did
                    // not say what it read, so its reads are not the
                    // invocation's `nil`s; it is kept as indeterminate (its
                    // writes may have happened), said as such.
                    (None, Some(m)) if op_type == OpType::Ok && inv != pos => {
                        out.warnings.push(format!(
                            "op {}: an ok completion without a transaction value (its invocation \
                         is op {}); kept as info (outcome unknown): its reads are unknown",
                            history.index(pos),
                            history.index(inv)
                        ));
                        status = Status::Info;
                        (m, true)
                    }
                    (_, Some(m)) => (m, true),
                    (Some(m), _) => (m, false),
                    _ => {
                        out.warnings.push(format!(
                            "op {}: a transaction completion without micro-ops; ignored",
                            history.index(pos)
                        ));
                        continue;
                    }
                };
            let process = match history.process(pos) {
                Some(Process::Client(p)) => match u32::try_from(p.0) {
                    Ok(small) if small < PROCESS_RARE => small,
                    _ => {
                        out.rare_processes.push((out.txns.len() as u32, p.0));
                        PROCESS_RARE
                    }
                },
                _ => PROCESS_NONE,
            };
            let mop_start = out.mop_keys.len() as u32;
            // A completion's own micro-ops: what it says happened.
            let completed = op_type != OpType::Invoke && !mops_at_inv;
            for m in mops {
                let k = &m.key().0;
                let next = out.keys.len() as u32;
                // Integer keys by value: a probe never reads the history.
                let id = match k {
                    Atom::Int(i) => *ids.ints.entry(*i).or_insert(next),
                    other => *ids.others.entry(other).or_insert(next),
                };
                if id == next {
                    out.keys.push(k);
                }
                out.mop_keys.push(id);
                match m {
                    MicroOp::Append(..) => out.n_appends += 1,
                    MicroOp::Read(..) => out.n_reads += 1,
                    MicroOp::ReadRange(_) => out.n_range_reads += 1,
                    MicroOp::Write(..) => {}
                }
                if completed {
                    let kind = MopKinds::of(m);
                    out.not_list_append +=
                        u64::from(kind.any_of(Workload::ListAppend.unreadable()));
                    out.not_rw_register +=
                        u64::from(kind.any_of(Workload::RwRegister.unreadable()));
                }
            }
            out.statuses.push(status);
            out.processes.push(process);
            out.txns.push(Txn {
                status,
                mops_at_inv,
                pos: pos as u32,
                inv: inv as u32,
                mop_start,
            });
        }
        (out, ids)
    }
}

/// Whether the op at `pos` is a client transaction op (nemesis and foreign
/// functions are not; a missing `f` with a transaction value is, as in
/// Elle's files).
pub fn is_client_txn(history: &History, pos: usize) -> bool {
    if history.is_nemesis(pos) {
        return false;
    }
    match history.f(pos) {
        Some(F::Txn) => true,
        None => history.is_txn(pos) || history.op_type(pos) != OpType::Invoke,
        Some(_) => false,
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use store::{Key, Op, ReadValue, Val};

    /// The census counts transactions by the outcome they are checked
    /// with, and the keys their micro-ops name (a range read's bounds are
    /// not keys).
    #[test]
    fn the_census_counts_outcomes_and_keys() {
        let a = |k, v| MicroOp::Append(Key::int(k), Val::int(v));
        let range = || MicroOp::ReadRange(Box::new(store::RangeRead::new(5, 9)));
        let w = |k, v| MicroOp::Write(Key::int(k), Val::int(v));
        let r = |k, v| MicroOp::Read(Key::int(k), v);
        let scalar = |v| ReadValue::Scalar(Val::int(v));
        let ops = vec![
            Op::txn(0, OpType::Invoke, 0, vec![a(1, 1)]),
            Op::txn(1, OpType::Invoke, 1, vec![a(2, 1)]),
            Op::txn(2, OpType::Invoke, 2, vec![a(3, 1)]),
            Op::txn(3, OpType::Invoke, 3, vec![a(1, 2), range()]),
            Op::txn(4, OpType::Ok, 0, vec![a(1, 1)]),
            Op::txn(5, OpType::Fail, 1, vec![a(2, 1)]),
            Op::txn(6, OpType::Info, 2, vec![a(3, 1)]),
            Op::txn(7, OpType::Invoke, 4, vec![w(4, 1), r(4, ReadValue::Nil)]),
            Op::txn(8, OpType::Ok, 4, vec![w(4, 1), r(4, scalar(1))]),
        ];
        let h = History::new(ops).expect("a valid history");
        let c = Txns::new(&h).census();
        assert_eq!((c.ok, c.fail, c.info), (2, 1, 2), "the open one is info");
        assert_eq!(c.keys, 4, "key 5 is only a range read's bound");
        // Only completions' own micro-ops: not the open invocation's.
        assert_eq!((c.not_rw_register, c.not_list_append), (3, 2));
        assert_eq!(c.foreign(Workload::ListAppend), 2);
    }

    #[test]
    fn statuses_and_unmatched_invocations() {
        let a = |v| MicroOp::Append(Key::int(1), Val::int(v));
        let r = MicroOp::Read(Key::int(1), ReadValue::Nil);
        let ops = vec![
            Op::txn(0, OpType::Invoke, 0, vec![a(1)]),
            Op::txn(1, OpType::Invoke, 1, vec![a(2)]),
            Op::txn(2, OpType::Ok, 0, vec![a(1)]),
            Op::txn(3, OpType::Fail, 1, vec![a(2)]),
            Op::txn(4, OpType::Invoke, 2, vec![r.clone()]),
            Op::txn(5, OpType::Invoke, 3, vec![r]),
            Op::txn(6, OpType::Info, 2, vec![]),
        ];
        let h = History::new(ops).unwrap_or_default();
        let t = Txns::new(&h);
        let st: Vec<_> = t.txns.iter().map(|x| (x.status, x.pos, x.inv)).collect();
        assert_eq!(
            st,
            vec![
                (Status::Ok, 2, 0),
                (Status::Fail, 3, 1),
                (Status::Info, 5, 5),
                (Status::Info, 6, 4)
            ]
        );
        // The info completion without micro-ops borrows the invocation's.
        assert_eq!(t.mops(3).len(), 1);
        assert_eq!(t.mops_of(&t.txns[3]), t.mops(3));
        // The others read their own (the completion's) micro-ops.
        assert!(matches!(t.mops(0), [MicroOp::Append(_, v)] if *v == Val::int(1)));
        assert!(matches!(t.mops(2), [MicroOp::Read(..)]));
        assert!(t.mops(4).is_empty(), "no such transaction");
        assert_eq!(t.keys.len(), 1);
    }

    /// Client ids of any size come back as given (those that do not fit
    /// 4 B from the side list); ops without one have none.
    #[test]
    fn processes_small_big_and_none() {
        let a = |v| MicroOp::Append(Key::int(1), Val::int(v));
        let big = u64::from(u32::MAX) + 7;
        let mut no_process = Op::txn(3, OpType::Ok, 0, vec![a(4)]);
        no_process.process = None;
        let ops = vec![
            Op::txn(0, OpType::Ok, 5, vec![a(1)]),
            Op::txn(1, OpType::Ok, big, vec![a(2)]),
            Op::txn(2, OpType::Ok, u64::MAX, vec![a(3)]),
            no_process,
            Op::txn(4, OpType::Ok, u64::from(PROCESS_RARE), vec![a(5)]),
            Op::txn(5, OpType::Ok, u64::from(PROCESS_RARE) - 1, vec![a(6)]),
        ];
        let h = History::new(ops).unwrap_or_default();
        let t = Txns::new(&h);
        let got: Vec<_> = (0..t.len() as u32).map(|i| t.process(i)).collect();
        assert_eq!(
            got,
            vec![
                Some(5),
                Some(big),
                Some(u64::MAX),
                None,
                Some(u64::from(PROCESS_RARE)),
                Some(u64::from(PROCESS_RARE) - 1)
            ]
        );
        assert_eq!(size_of::<Txn>(), 16);
    }

    /// A history big enough to be read in halves gives what one pass
    /// gives: the same transactions, and keys first seen in the second
    /// half numbered after the first half's in the order they appear.
    #[test]
    fn halves_read_as_one_pass() {
        let key = |i: usize| match i % 5 {
            0 => Key(Atom::Str(format!("s{}", i % 13).into())),
            1 if i >= 2600 => Key::int(1000 + (i % 37) as i64),
            _ => Key::int(((i * 7919) % 300) as i64),
        };
        let ops: Vec<Op> = (0..5000)
            .map(|i| {
                let process = if i % 999 == 0 {
                    u64::MAX - i as u64
                } else {
                    i as u64 % 7
                };
                let ty = [OpType::Ok, OpType::Fail, OpType::Info][i % 3];
                let mops = vec![
                    MicroOp::Append(key(i), Val::int(i as i64)),
                    MicroOp::Read(key(i * 3 + 1), ReadValue::Nil),
                ];
                Op::txn(
                    i as u64,
                    ty,
                    process,
                    if i % 11 == 0 { vec![] } else { mops },
                )
            })
            .collect();
        let h = History::new(ops).unwrap_or_default();
        assert!(h.len() >= PARALLEL_FROM);
        let two = Txns::new(&h);
        let (one, _) = Part::read(&h, 0..h.len());
        let view = |t: &Txns<'_>| {
            format!(
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {} {} {}",
                t.txns,
                t.mop_keys,
                t.keys,
                t.statuses,
                t.processes,
                t.rare_processes,
                t.warnings,
                t.n_appends,
                t.n_reads,
                t.n_range_reads
            )
        };
        assert_eq!(view(&two), view(&one));
        assert!(two.keys.len() > 250 && !two.rare_processes.is_empty());
    }
}
