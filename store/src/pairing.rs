//! Pairing invocations with completions, one op at a time.
//!
//! Owns the rules `History::new` checks (strictly increasing indices, one
//! open invocation per process, a completion matching its invocation) and
//! the warnings it gives (a process reused after `info`, invocations never
//! completed, completions without an invocation in a history that has
//! invocations: each with its op index).
//!
//! Key decision: one algorithm for the in-memory history and for streaming
//! readers (`harness history stats`). [`Pairing`] keeps only the open
//! invocations, as positions, and asks the caller for an op by position:
//! `History` reads it from its columns (`Columns::view`), [`StreamPairing`]
//! keeps copies of just the open invocations, so a pass over a file holds
//! O(processes) ops.

use crate::history::{
    F, HistoryError, HistoryWarning, MicroOp, Op, OpIndex, OpType, Process, ProcessId,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// What pairing looks at in an op: an [`Op`]'s fields or a `History`'s
/// columns, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct OpView<'a> {
    /// The op's index.
    pub index: OpIndex,
    /// Its type.
    pub op_type: OpType,
    /// Its process.
    pub process: Option<Process>,
    /// Its function.
    pub f: Option<&'a F>,
    /// Its value's shape.
    pub value: ValueView<'a>,
}

/// An op's value as pairing sees it.
#[derive(Clone, Copy, Debug)]
pub enum ValueView<'a> {
    /// A transaction's micro-ops.
    Txn(&'a [MicroOp]),
    /// An invocation stored as its completion's micro-ops (in a `History`).
    Elided,
    /// Any other value.
    Data,
}

impl Op {
    /// What pairing looks at.
    pub fn view(&self) -> OpView<'_> {
        OpView {
            index: self.index,
            op_type: self.op_type,
            process: self.process,
            f: self.f.as_ref(),
            value: match &self.value {
                crate::OpValue::Txn(m) => ValueView::Txn(m),
                crate::OpValue::Data(_) => ValueView::Data,
            },
        }
    }
}

/// The pairing state after some prefix of a history.
#[derive(Debug, Default)]
pub struct Pairing {
    /// Clients with an id below [`DENSE_IDS`], by id: their open
    /// invocation and `info` mark (a hash lookup or two per op was most of
    /// pairing's time). Other processes are in `open` and `infod`.
    dense: Vec<Slot>,
    /// Open invocation per process (its position).
    open: FxHashMap<Process, usize>,
    /// Processes whose last completion was `info`.
    infod: FxHashSet<Process>,
    /// Open invocations without a process, oldest first.
    anonymous: VecDeque<usize>,
    previous: Option<OpIndex>,
    warnings: Vec<HistoryWarning>,
    /// Whether any invocation was seen: in a completion-only history (Elle
    /// reads each completion as its own invocation) orphans are the norm.
    saw_invoke: bool,
    /// Completions that matched no open invocation: the first
    /// [`MAX_ORPHANS_LISTED`], and how many in all.
    orphans: Vec<OpIndex>,
    orphan_count: u64,
}

/// Completions without an invocation listed one by one, at most; the rest
/// are counted in one warning.
pub const MAX_ORPHANS_LISTED: usize = 1000;

/// Client ids below this are kept in [`Pairing`]'s table (16 B each, the
/// table as long as the largest id seen), not its hash maps.
const DENSE_IDS: u64 = 1 << 16;

/// A client's pairing state in [`Pairing`]'s table.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Its open invocation's position, or [`NO_POS`].
    open: usize,
    /// Whether its last completion was `info`.
    infod: bool,
}

const NO_POS: usize = usize::MAX;

/// The table index of a client with a small id.
fn dense_id(p: Process) -> Option<usize> {
    match p {
        Process::Client(ProcessId(id)) if id < DENSE_IDS => Some(id as usize),
        _ => None,
    }
}

impl Pairing {
    /// `p`'s slot in the table, made (with every slot below it) if need be.
    fn slot(&mut self, id: usize) -> &mut Slot {
        if id >= self.dense.len() {
            let empty = Slot {
                open: NO_POS,
                infod: false,
            };
            self.dense.resize(id + 1, empty);
        }
        &mut self.dense[id]
    }

    fn open_of(&self, p: Process) -> Option<usize> {
        match dense_id(p) {
            Some(id) => self.dense.get(id).map(|s| s.open).filter(|&o| o != NO_POS),
            None => self.open.get(&p).copied(),
        }
    }

    fn set_open(&mut self, p: Process, pos: usize) {
        match dense_id(p) {
            Some(id) => self.slot(id).open = pos,
            None => {
                self.open.insert(p, pos);
            }
        }
    }

    fn take_open(&mut self, p: Process) -> Option<usize> {
        match dense_id(p) {
            Some(id) => {
                let s = self.dense.get_mut(id)?;
                let o = std::mem::replace(&mut s.open, NO_POS);
                (o != NO_POS).then_some(o)
            }
            None => self.open.remove(&p),
        }
    }

    /// Clears `p`'s `info` mark; whether it had one.
    fn take_infod(&mut self, p: Process) -> bool {
        match dense_id(p) {
            Some(id) => self
                .dense
                .get_mut(id)
                .is_some_and(|s| std::mem::take(&mut s.infod)),
            None => self.infod.remove(&p),
        }
    }

    fn set_infod(&mut self, p: Process) {
        match dense_id(p) {
            Some(id) => self.slot(id).infod = true,
            None => {
                self.infod.insert(p);
            }
        }
    }

    /// Takes the op at position `pos` (positions count up from 0 with each
    /// call); `ops` returns the op at an earlier, still open position.
    /// Returns the position of the invocation `op` completes, if any.
    ///
    /// # Errors
    /// The first rule `op` breaks.
    pub fn push<'o>(
        &mut self,
        pos: usize,
        op: OpView<'o>,
        ops: impl Fn(usize) -> OpView<'o>,
    ) -> Result<Option<usize>, HistoryError> {
        let paired = self.pair(pos, op, ops)?;
        if op.op_type == OpType::Invoke {
            self.saw_invoke = true;
        } else if paired.is_none() {
            self.orphan_count += 1;
            if self.orphans.len() < MAX_ORPHANS_LISTED {
                self.orphans.push(op.index);
            }
        }
        Ok(paired)
    }

    fn pair<'o>(
        &mut self,
        pos: usize,
        op: OpView<'o>,
        ops: impl Fn(usize) -> OpView<'o>,
    ) -> Result<Option<usize>, HistoryError> {
        if let Some(previous) = self.previous
            && op.index <= previous
        {
            return Err(HistoryError::NonMonotonicIndex {
                index: op.index,
                previous,
            });
        }
        self.previous = Some(op.index);
        match (op.op_type, op.process) {
            (OpType::Invoke, Some(p)) => {
                if let Some(o) = self.open_of(p) {
                    return Err(HistoryError::DoubleInvoke {
                        index: op.index,
                        process: p,
                        open: ops(o).index,
                    });
                }
                if p != Process::Nemesis && self.take_infod(p) {
                    self.warnings.push(HistoryWarning::ProcessReusedAfterInfo {
                        index: op.index,
                        process: p,
                    });
                }
                self.set_open(p, pos);
                Ok(None)
            }
            (OpType::Invoke, None) => {
                self.anonymous.push_back(pos);
                Ok(None)
            }
            (t, Some(p)) => {
                let inv = self.take_open(p);
                if let Some(inv) = inv {
                    check_pair(ops(inv), op)?;
                }
                if t == OpType::Info {
                    self.set_infod(p);
                }
                Ok(inv)
            }
            // Adjacency: the oldest open invocation with the same f and shape.
            (_, None) => Ok(self
                .anonymous
                .iter()
                .position(|&inv| same_call(ops(inv), op))
                .and_then(|i| self.anonymous.remove(i))),
        }
    }

    /// The warnings: reused processes as they came, then completions
    /// without an invocation (when the history has invocations at all),
    /// then every invocation left open, in history order.
    /// `index` gives the op index at an open position.
    pub fn finish(self, index: impl Fn(usize) -> OpIndex) -> Vec<HistoryWarning> {
        let mut warnings = self.warnings;
        if self.saw_invoke {
            let listed = self.orphans.len() as u64;
            warnings.extend(
                self.orphans
                    .into_iter()
                    .map(|index| HistoryWarning::CompletionWithoutInvocation { index }),
            );
            if self.orphan_count > listed {
                warnings.push(HistoryWarning::MoreCompletionsWithoutInvocation {
                    count: self.orphan_count - listed,
                });
            }
        }
        let dense = self.dense.iter().map(|s| s.open).filter(|&o| o != NO_POS);
        let mut unmatched: Vec<usize> = (self.open.into_values())
            .chain(dense)
            .chain(self.anonymous)
            .collect();
        unmatched.sort_unstable();
        warnings.extend(
            unmatched
                .into_iter()
                .map(|pos| HistoryWarning::Unmatched { index: index(pos) }),
        );
        warnings
    }
}

/// [`Pairing`] over a stream of ops: keeps a copy of each open invocation
/// and nothing else.
#[derive(Debug, Default)]
pub struct StreamPairing {
    pairing: Pairing,
    kept: FxHashMap<usize, Op>,
    next: usize,
}

impl StreamPairing {
    /// Takes the next op of the stream.
    ///
    /// # Errors
    /// The first rule `op` breaks (as `History::new` would report it).
    pub fn push(&mut self, op: &Op) -> Result<(), HistoryError> {
        let pos = self.next;
        self.next += 1;
        let kept = &self.kept;
        // Every open position is kept: the fallback is never taken.
        let paired = self
            .pairing
            .push(pos, op.view(), |i| kept.get(&i).unwrap_or(op).view())?;
        if let Some(inv) = paired {
            self.kept.remove(&inv);
        }
        if op.op_type == OpType::Invoke {
            self.kept.insert(pos, op.clone());
        }
        Ok(())
    }

    /// The warnings `History::warnings` would give for the whole stream.
    pub fn finish(self) -> Vec<HistoryWarning> {
        let kept = self.kept;
        self.pairing
            .finish(|i| kept.get(&i).map_or(OpIndex(i as u64), |o| o.index))
    }
}

fn f_string(f: Option<&F>) -> Option<String> {
    f.map(|f| f.as_str().to_string())
}

fn check_pair(inv: OpView<'_>, comp: OpView<'_>) -> Result<(), HistoryError> {
    if inv.f != comp.f {
        return Err(HistoryError::FMismatch {
            index: comp.index,
            invoke: inv.index,
            invoke_f: f_string(inv.f),
            completion_f: f_string(comp.f),
        });
    }
    if let (ValueView::Txn(a), ValueView::Txn(b)) = (inv.value, comp.value) {
        // A failed or indeterminate completion may carry the invocation's
        // value or none at all; an ok one must have the same steps.
        if comp.op_type == OpType::Ok && a.len() != b.len() {
            return Err(HistoryError::ValueMismatch {
                index: comp.index,
                invoke: inv.index,
                reason: format!("{} micro-ops invoked, {} completed", a.len(), b.len()),
            });
        }
        if let Some(i) = a.iter().zip(b).position(|(x, y)| !x.same_shape(y)) {
            return Err(HistoryError::ValueMismatch {
                index: comp.index,
                invoke: inv.index,
                reason: format!("micro-op {i} differs"),
            });
        }
    }
    Ok(())
}

fn same_call(inv: OpView<'_>, comp: OpView<'_>) -> bool {
    if inv.f != comp.f {
        return false;
    }
    match (inv.value, comp.value) {
        (ValueView::Txn(a), ValueView::Txn(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_shape(y))
        }
        (ValueView::Data, ValueView::Data) | (ValueView::Elided, ValueView::Txn(_)) => true,
        _ => false,
    }
}
