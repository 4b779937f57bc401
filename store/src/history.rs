//! The history model: operations, micro-ops and a validated, paired `History`.
//!
//! Pure types: no IO, no clock, no async. Every reader in `format` produces
//! these, every writer consumes them, and the checker reads only these.
//!
//! Key decision: a read micro-op keeps what was written (`nil`, a list or a
//! scalar) as [`ReadValue`] instead of deciding list-vs-register at parse time,
//! because `["r", k, null]` means different things in different workloads and
//! op types; the checker interprets it, the store keeps it losslessly.

use crate::data::Data;
pub use crate::list::ValList;
use std::borrow::Cow;
use std::fmt;

/// Position of an op in its history (Elle's `:index`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpIndex(pub u64);

impl fmt::Display for OpIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A logical client id (Jepsen's integer `:process`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProcessId(pub u64);

/// Who performed an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Process {
    /// A client process (a database session).
    Client(ProcessId),
    /// The fault injector.
    Nemesis,
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Process::Client(p) => write!(f, "{}", p.0),
            Process::Nemesis => f.write_str("nemesis"),
        }
    }
}

/// Elle's op types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpType {
    /// The request was about to be sent.
    Invoke,
    /// Definitely happened (committed).
    Ok,
    /// Definitely did not happen.
    Fail,
    /// May or may not have happened.
    Info,
}

impl OpType {
    /// Elle's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OpType::Invoke => "invoke",
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
        }
    }

    /// Parses Elle's spelling; `None` for anything else.
    pub fn parse(s: &str) -> Option<OpType> {
        Some(match s {
            "invoke" => OpType::Invoke,
            "ok" => OpType::Ok,
            "fail" => OpType::Fail,
            "info" => OpType::Info,
            _ => return None,
        })
    }

    /// Whether this is a completion (`ok`, `fail` or `info`).
    pub fn is_completion(self) -> bool {
        self != OpType::Invoke
    }
}

/// A string in an [`Atom`]: one thin pointer (8 B) to a boxed `str`, so an
/// `Atom` is 16 B instead of 24. Strings are rare in histories (harness
/// writes integers) and every key, value and list element is an `Atom`, so
/// the second indirection on the rare path pays for itself many times over.
/// Compares, hashes and prints (`Debug`, `Display`) as its `str`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Text(Box<Box<str>>);

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(Box::new(s.into()))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(Box::new(s.into_boxed_str()))
    }
}

impl From<Box<str>> for Text {
    fn from(s: Box<str>) -> Text {
        Text(Box::new(s))
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

/// A scalar as found in keys and values: integer, string or EDN keyword.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// An integer (what harness itself generates).
    Int(i64),
    /// A string.
    Str(Text),
    /// An EDN keyword, without the colon.
    Keyword(Text),
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Int(i) => write!(f, "{i}"),
            Atom::Str(s) => write!(f, "{s:?}"),
            Atom::Keyword(k) => write!(f, ":{k}"),
        }
    }
}

/// A key of the key-value model.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(pub Atom);

impl Key {
    /// An integer key.
    pub fn int(i: i64) -> Key {
        Key(Atom::Int(i))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A value written (register) or appended (list element).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Val(pub Atom);

impl Val {
    /// An integer value.
    pub fn int(i: i64) -> Val {
        Val(Atom::Int(i))
    }
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What a read micro-op carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReadValue {
    /// `null`/`nil`: not yet known (in an invocation or `info`), or the
    /// initial nil state of a register (in an `ok` rw-register read).
    Nil,
    /// A list (list-append reads); shares its elements with the key's other
    /// reads where one is a prefix of another ([`ValList`]).
    List(ValList),
    /// A single value (rw-register reads).
    Scalar(Val),
}

/// One step of a transaction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MicroOp {
    /// `["append", k, v]`.
    Append(Key, Val),
    /// `["w", k, v]`.
    Write(Key, Val),
    /// `["r", k, value]`.
    Read(Key, ReadValue),
    /// `["rr", [lo, hi], rows]` / `["rc", [lo, hi], n]`: a predicate read
    /// of rows or of their count ([`crate::predicate`]).
    ReadRange(Box<crate::predicate::RangeRead>),
}

impl MicroOp {
    /// The key this micro-op touches.
    pub fn key(&self) -> &Key {
        match self {
            MicroOp::Append(k, _) | MicroOp::Write(k, _) | MicroOp::Read(k, _) => k,
            // Its lower bound: a range read has no one key.
            MicroOp::ReadRange(r) => &r.lo,
        }
    }

    /// Elle's function name: `append`, `w` or `r`.
    pub fn f_name(&self) -> &'static str {
        match self {
            MicroOp::Append(..) => "append",
            MicroOp::Write(..) => "w",
            MicroOp::Read(..) => "r",
            MicroOp::ReadRange(r) => r.f_name(),
        }
    }

    /// Whether `self` and `other` are the same step apart from a read's result
    /// (an invocation and its completion have the same shape).
    pub fn same_shape(&self, other: &MicroOp) -> bool {
        match (self, other) {
            (MicroOp::Append(k1, v1), MicroOp::Append(k2, v2))
            | (MicroOp::Write(k1, v1), MicroOp::Write(k2, v2)) => k1 == k2 && v1 == v2,
            (MicroOp::Read(k1, _), MicroOp::Read(k2, _)) => k1 == k2,
            (MicroOp::ReadRange(a), MicroOp::ReadRange(b)) => {
                a.lo == b.lo && a.hi == b.hi && a.is_count() == b.is_count()
            }
            _ => false,
        }
    }
}

/// An op's function (`:f`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum F {
    /// A client transaction.
    Txn,
    /// Nemesis: a partition begins (value: the grudge).
    StartPartition,
    /// Nemesis: partitions heal.
    StopPartition,
    /// Nemesis: database processes killed (value: nodes).
    Kill,
    /// Nemesis: database processes started again (value: nodes).
    Start,
    /// Nemesis: database processes paused (value: nodes).
    Pause,
    /// Nemesis: paused processes resumed (value: nodes).
    Resume,
    /// Nemesis: clocks skewed.
    StartClock,
    /// Nemesis: clocks reset.
    StopClock,
    /// Nemesis: packet loss begins.
    StartLoss,
    /// Nemesis: packet loss ends.
    StopLoss,
    /// Any other function, as found in a history written by another tool.
    Other(Text),
}

impl F {
    /// The spelling in histories.
    pub fn as_str(&self) -> &str {
        match self {
            F::Txn => "txn",
            F::StartPartition => "start-partition",
            F::StopPartition => "stop-partition",
            F::Kill => "kill",
            F::Start => "start",
            F::Pause => "pause",
            F::Resume => "resume",
            F::StartClock => "start-clock",
            F::StopClock => "stop-clock",
            F::StartLoss => "start-loss",
            F::StopLoss => "stop-loss",
            F::Other(s) => s,
        }
    }

    /// Parses a spelling; unknown names become [`F::Other`] so foreign
    /// histories survive a round trip.
    pub fn parse(s: &str) -> F {
        match s {
            "txn" => F::Txn,
            "start-partition" => F::StartPartition,
            "stop-partition" => F::StopPartition,
            "kill" => F::Kill,
            "start" => F::Start,
            "pause" => F::Pause,
            "resume" => F::Resume,
            "start-clock" => F::StartClock,
            "stop-clock" => F::StopClock,
            "start-loss" => F::StartLoss,
            "stop-loss" => F::StopLoss,
            other => F::Other(other.into()),
        }
    }
}

/// An op's `:value`.
#[derive(Clone, Debug, PartialEq)]
pub enum OpValue {
    /// A transaction: a sequence of micro-ops.
    Txn(Vec<MicroOp>),
    /// Anything else (nemesis grudges and node lists, foreign values), kept
    /// as data (boxed: rare, and it would make every op 8 B bigger).
    Data(Box<Data>),
    /// Only in a [`History`] (and in what its readers hand to
    /// `History::new`): an invocation whose micro-ops are its completion's
    /// with every read `nil`, so they are not stored twice (issue 15).
    /// [`History::txn`] and [`History::op`] give them back; `History::ops`
    /// shows this marker, and [`OpValue::txn`] is `None` for it.
    AsCompletion,
}

impl OpValue {
    /// The micro-ops, if this is a transaction (not for
    /// [`OpValue::AsCompletion`]: ask the [`History`]).
    pub fn txn(&self) -> Option<&[MicroOp]> {
        match self {
            OpValue::Txn(m) => Some(m),
            OpValue::Data(_) | OpValue::AsCompletion => None,
        }
    }

    /// Whether this is a transaction, stored here or as its completion's.
    pub fn is_txn(&self) -> bool {
        matches!(self, OpValue::Txn(_) | OpValue::AsCompletion)
    }
}

/// One event of a history.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    /// Position in the history.
    pub index: OpIndex,
    /// Nanoseconds since the test started; `None` when the source had no time.
    pub time_ns: Option<i64>,
    /// Invocation or completion kind.
    pub op_type: OpType,
    /// Who did it; `None` when the source had no `:process`.
    pub process: Option<Process>,
    /// The function; `None` when the source had no `:f` (Elle's list-append files).
    pub f: Option<F>,
    /// The transaction or other value.
    pub value: OpValue,
    /// The error a client reported, if any (boxed: rare).
    pub error: Option<Box<Data>>,
    /// Fields this model does not name (`:node`, …), kept for lossless conversion.
    pub extra: Extra,
}

/// An op's fields that the model does not name, in the order they were
/// read: one thin pointer, no allocation while empty (the usual case), so
/// an [`Op`] pays 8 B for them instead of a `Vec`'s 24. Derefs to the
/// `(name, value)` slice.
#[derive(Clone, Default, PartialEq)]
#[allow(clippy::box_collection)] // on purpose: a thin pointer, not a 24-B `Vec`
pub struct Extra(Option<Box<Vec<(String, Data)>>>);

impl Extra {
    /// No fields.
    pub fn new() -> Extra {
        Extra(None)
    }

    /// Adds a field at the end.
    pub fn push(&mut self, field: (String, Data)) {
        self.0.get_or_insert_with(Box::default).push(field);
    }

    /// Removes every field (and the allocation).
    pub fn clear(&mut self) {
        self.0 = None;
    }
}

impl std::ops::Deref for Extra {
    type Target = [(String, Data)];
    fn deref(&self) -> &[(String, Data)] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl std::ops::DerefMut for Extra {
    fn deref_mut(&mut self) -> &mut [(String, Data)] {
        self.0.as_deref_mut().map_or(&mut [], Vec::as_mut_slice)
    }
}

impl From<Vec<(String, Data)>> for Extra {
    fn from(v: Vec<(String, Data)>) -> Extra {
        Extra((!v.is_empty()).then(|| Box::new(v)))
    }
}

impl FromIterator<(String, Data)> for Extra {
    fn from_iter<I: IntoIterator<Item = (String, Data)>>(iter: I) -> Extra {
        Extra::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = &'a (String, Data);
    type IntoIter = std::slice::Iter<'a, (String, Data)>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Op {
    /// A client transaction op (convenience for generators and tests).
    pub fn txn(index: u64, op_type: OpType, process: u64, mops: Vec<MicroOp>) -> Op {
        Op {
            index: OpIndex(index),
            time_ns: None,
            op_type,
            process: Some(Process::Client(ProcessId(process))),
            f: Some(F::Txn),
            value: OpValue::Txn(mops),
            error: None,
            extra: Extra::new(),
        }
    }

    /// Whether this op was performed by the nemesis.
    pub fn is_nemesis(&self) -> bool {
        self.process == Some(Process::Nemesis)
    }

    /// Whether this is a client op (not the nemesis).
    pub fn is_client(&self) -> bool {
        !self.is_nemesis()
    }
}

/// A structural problem in a sequence of ops, naming the op where it was found.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum HistoryError {
    /// Op indices must strictly increase.
    #[error("op {index}: index is not greater than the previous op's index {previous}")]
    NonMonotonicIndex {
        /// The offending op's index.
        index: OpIndex,
        /// The index before it.
        previous: OpIndex,
    },
    /// A process invoked again while its previous invocation was still open.
    #[error(
        "op {index}: process {process} invoked while its invocation at op {open} is still open"
    )]
    DoubleInvoke {
        /// The second invocation.
        index: OpIndex,
        /// The process.
        process: Process,
        /// The invocation still open.
        open: OpIndex,
    },
    /// A completion whose `f` differs from its invocation's.
    #[error(
        "op {index}: completion f {completion_f:?} does not match invocation op {invoke}'s f {invoke_f:?}"
    )]
    FMismatch {
        /// The completion.
        index: OpIndex,
        /// Its invocation.
        invoke: OpIndex,
        /// The invocation's f.
        invoke_f: Option<String>,
        /// The completion's f.
        completion_f: Option<String>,
    },
    /// A completion whose value is not the same kind as its invocation's
    /// (a transaction completed by a non-transaction, or different micro-ops).
    #[error("op {index}: completion value does not match invocation op {invoke}: {reason}")]
    ValueMismatch {
        /// The completion.
        index: OpIndex,
        /// Its invocation.
        invoke: OpIndex,
        /// What differs.
        reason: String,
    },
}

/// Something odd but acceptable in a history.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryWarning {
    /// A process was used again after an `info` completion (seen in other
    /// tools' histories; harness itself never does this).
    ProcessReusedAfterInfo {
        /// The invocation reusing the process.
        index: OpIndex,
        /// The process.
        process: Process,
    },
    /// An invocation that never completed (treated as `info`).
    Unmatched {
        /// The invocation.
        index: OpIndex,
    },
}

impl fmt::Display for HistoryWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryWarning::ProcessReusedAfterInfo { index, process } => write!(
                f,
                "op {index}: process {process} reused after an info completion"
            ),
            HistoryWarning::Unmatched { index } => {
                write!(
                    f,
                    "op {index}: invocation never completed (treated as info)"
                )
            }
        }
    }
}

const NONE: u32 = u32::MAX;

/// A validated history: ops in order, each invocation paired with its
/// completion (by process, or by adjacency where `process` is missing).
///
/// Positions (`usize`) index [`History::ops`]; they equal op order, which is
/// real-time order. Completions without an invocation stand for their own
/// invocation (Elle's completion-only histories).
#[derive(Clone, Debug, Default)]
pub struct History {
    ops: Vec<Op>,
    /// For each position: the paired op's position, or `NONE`.
    partner: Vec<u32>,
    warnings: Vec<HistoryWarning>,
    /// The value a read returns for a key's initial state, when the source
    /// format has one besides `nil` (PolySI, Plume, AWDIT, dbcop: `0`).
    initial_value: Option<Val>,
    /// Whether op order says nothing about real time between processes
    /// (histories from tools that record only sessions, no clock).
    session_order_only: bool,
}

impl History {
    /// Validates and pairs `ops`.
    ///
    /// Invocations that are their completion's micro-ops with reads `nil`
    /// are stored as [`OpValue::AsCompletion`] (`crate::elide`): read
    /// micro-ops through [`History::txn`] or [`History::op`].
    ///
    /// # Errors
    /// A [`HistoryError`] naming the first op that breaks the rules.
    pub fn new(mut ops: Vec<Op>) -> Result<History, HistoryError> {
        let mut partner = vec![NONE; ops.len()];
        let mut pairing = crate::pairing::Pairing::default();
        for (pos, op) in ops.iter().enumerate() {
            if let Some(inv) = pairing.push(pos, op, |i| &ops[i])? {
                partner[inv] = pos as u32;
                partner[pos] = inv as u32;
            }
        }
        let warnings = pairing.finish(|i| ops[i].index);
        elide_pairs(&mut ops, &partner);
        Ok(History {
            ops,
            partner,
            warnings,
            initial_value: None,
            session_order_only: false,
        })
    }

    /// Names the value that stands for a key's initial state in this
    /// history's source format (`0` for PolySI / Plume / AWDIT / dbcop
    /// files): a read of it, on a key no transaction writes that value to,
    /// reads the initial state like `nil` does, not a garbage value.
    pub fn with_initial_value(mut self, v: Option<Val>) -> History {
        self.initial_value = v;
        self
    }

    /// The value standing for the initial state besides `nil`, if any.
    pub fn initial_value(&self) -> Option<&Val> {
        self.initial_value.as_ref()
    }

    /// Declares that op order carries no real-time information between
    /// processes: the source recorded sessions but no clock, so the only
    /// order known is each process's own (session order).
    pub fn with_session_order_only(mut self, yes: bool) -> History {
        self.session_order_only = yes;
        self
    }

    /// Whether op order is real-time order (Jepsen histories), rather than
    /// only each process's session order.
    pub fn has_realtime_order(&self) -> bool {
        !self.session_order_only
    }

    /// All ops, in history order, as stored: an invocation may hold
    /// [`OpValue::AsCompletion`] ([`History::txn`] / [`History::op`] give
    /// its micro-ops).
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The micro-ops of the op at `pos` as read (an elided invocation's
    /// rebuilt from its completion), if it is a transaction.
    pub fn txn(&self, pos: usize) -> Option<Cow<'_, [MicroOp]>> {
        match &self.ops.get(pos)?.value {
            OpValue::Txn(m) => Some(Cow::Borrowed(m)),
            OpValue::Data(_) => None,
            OpValue::AsCompletion => Some(Cow::Owned(self.elided_mops(pos))),
        }
    }

    /// The op at `pos` as read (what a writer should write).
    ///
    /// # Panics
    /// If `pos` is out of bounds, like indexing [`History::ops`].
    pub fn op(&self, pos: usize) -> Cow<'_, Op> {
        let op = &self.ops[pos];
        match op.value {
            OpValue::AsCompletion => Cow::Owned(Op {
                value: OpValue::Txn(self.elided_mops(pos)),
                ..op.clone()
            }),
            _ => Cow::Borrowed(op),
        }
    }

    /// Every op as read, in history order ([`History::op`] of each).
    pub fn iter_ops(&self) -> impl Iterator<Item = Cow<'_, Op>> {
        (0..self.ops.len()).map(|pos| self.op(pos))
    }

    /// An elided invocation's micro-ops (empty if it has no completion,
    /// which only ops built by hand can cause).
    fn elided_mops(&self, pos: usize) -> Vec<MicroOp> {
        let comp = self.partner(pos).map(|p| &self.ops[p].value);
        crate::elide::invocation_mops(comp.and_then(OpValue::txn).unwrap_or_default())
    }

    /// Consumes the history, returning its ops as read.
    pub fn into_ops(mut self) -> Vec<Op> {
        for pos in 0..self.ops.len() {
            if matches!(self.ops[pos].value, OpValue::AsCompletion) {
                self.ops[pos].value = OpValue::Txn(self.elided_mops(pos));
            }
        }
        self.ops
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether there are no ops.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The position of the op paired with the op at `pos` (its completion if
    /// it is an invocation, its invocation if it is a completion).
    pub fn partner(&self, pos: usize) -> Option<usize> {
        match self.partner.get(pos) {
            Some(&p) if p != NONE => Some(p as usize),
            _ => None,
        }
    }

    /// The completion of the invocation at `pos`, if it completed.
    pub fn completion(&self, pos: usize) -> Option<&Op> {
        let op = self.ops.get(pos)?;
        if op.op_type != OpType::Invoke {
            return None;
        }
        self.partner(pos).map(|p| &self.ops[p])
    }

    /// The invocation of the completion at `pos`; a completion without one is
    /// its own invocation.
    pub fn invocation(&self, pos: usize) -> Option<&Op> {
        let op = self.ops.get(pos)?;
        if op.op_type == OpType::Invoke {
            return None;
        }
        Some(self.partner(pos).map_or(op, |p| &self.ops[p]))
    }

    /// Oddities found while pairing.
    pub fn warnings(&self) -> &[HistoryWarning] {
        &self.warnings
    }
}

/// Elides every paired invocation that can be (`crate::elide`).
fn elide_pairs(ops: &mut [Op], partner: &[u32]) {
    for (inv, &comp) in partner.iter().enumerate() {
        if comp == NONE || (comp as usize) < inv {
            continue;
        }
        let (head, tail) = ops.split_at_mut(comp as usize);
        if crate::elide::elidable(&head[inv], &tail[0]) {
            head[inv].value = OpValue::AsCompletion;
        }
    }
}

fn f_string(f: &Option<F>) -> Option<String> {
    f.as_ref().map(|f| f.as_str().to_string())
}

pub(crate) fn check_pair(inv: &Op, comp: &Op) -> Result<(), HistoryError> {
    if inv.f != comp.f {
        return Err(HistoryError::FMismatch {
            index: comp.index,
            invoke: inv.index,
            invoke_f: f_string(&inv.f),
            completion_f: f_string(&comp.f),
        });
    }
    if let (OpValue::Txn(a), OpValue::Txn(b)) = (&inv.value, &comp.value) {
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
    if matches!(inv.value, OpValue::AsCompletion) && !matches!(comp.value, OpValue::Txn(_)) {
        return Err(HistoryError::ValueMismatch {
            index: comp.index,
            invoke: inv.index,
            reason:
                "an invocation stored as its completion's micro-ops completed by no transaction"
                    .into(),
        });
    }
    Ok(())
}

pub(crate) fn same_call(inv: &Op, comp: &Op) -> bool {
    if inv.f != comp.f {
        return false;
    }
    match (&inv.value, &comp.value) {
        (OpValue::Txn(a), OpValue::Txn(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_shape(y))
        }
        (OpValue::Data(_), OpValue::Data(_)) | (OpValue::AsCompletion, OpValue::Txn(_)) => true,
        _ => false,
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// A loaded history is mostly these (two ops and ~5 micro-ops per
    /// transaction, an atom per list element): growing one is a memory
    /// regression on every big check (BENCHMARKS.md, issue 15).
    #[test]
    fn the_model_stays_compact() {
        assert_eq!(size_of::<Atom>(), 16);
        assert_eq!(size_of::<MicroOp>(), 40);
        assert_eq!(size_of::<Op>(), 104);
    }

    #[test]
    fn text_and_extra_behave_like_what_they_wrap() {
        let t = Text::from("a\"b");
        assert_eq!(format!("{t:?} {t}"), format!("{:?} {}", "a\"b", "a\"b"));
        assert!(Text::from("a") < Text::from("b"));
        let mut e = Extra::new();
        assert!(e.is_empty());
        e.push(("node".into(), Data::Int(1)));
        e[0].1 = Data::Int(2);
        assert_eq!(*e, [("node".to_string(), Data::Int(2))]);
        assert_eq!(format!("{e:?}"), r#"[("node", Int(2))]"#);
        e.clear();
        assert_eq!(e, Extra::from(Vec::new()));
    }
}
