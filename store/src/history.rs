//! The history model: operations, micro-ops and a validated, paired `History`.
//!
//! Pure types: no IO, no clock, no async. Every reader in `format` produces
//! [`Op`]s, every writer consumes them, and the checker reads a [`History`].
//!
//! Key decisions:
//! - A read micro-op keeps what was written (`nil`, a list or a scalar) as
//!   [`ReadValue`] instead of deciding list-vs-register at parse time,
//!   because `["r", k, null]` means different things in different workloads
//!   and op types; the checker interprets it, the store keeps it losslessly.
//! - A `History` does not hold `Op`s: it holds columns (`crate::columns`) —
//!   a 20-B record per op, one arena of every op's micro-ops, a side table
//!   for what is rare — built op by op ([`HistoryBuilder`]) as a file is
//!   read, so a loaded history costs ~20 B per op plus its micro-ops (and
//!   8 B for the index when indices are not consecutive), with
//!   no allocation per op. It is read by position; `Op`s are
//!   materialised only where a whole op is wanted (writers, explanations).
//!
//! Invariants:
//! - Positions count ops in history order (= real-time order); indices
//!   strictly increase with them ([`History::position_of`] bisects).
//! - [`History::stored_txn`] borrows from the one arena; only an invocation
//!   elided as its completion's (`crate::elide`) has a transaction but no
//!   micro-ops stored, and [`History::txn`] / [`History::op`] rebuild them,
//!   so what is read back is exactly what was pushed.

pub use crate::columns::HistoryBuilder;
use crate::columns::{Columns, Kind};
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

/// Which kinds of micro-op a history's arena holds: one bit per kind
/// ([`History::mop_kinds`]). Taken once, in the pass that shares the
/// loaded history's list reads, so asking what a history holds (which
/// workload it is) reads no micro-op again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MopKinds(u8);

impl MopKinds {
    /// `append`.
    pub const APPEND: MopKinds = MopKinds(1);
    /// `w`.
    pub const WRITE: MopKinds = MopKinds(1 << 1);
    /// `r` of `nil`.
    pub const READ_NIL: MopKinds = MopKinds(1 << 2);
    /// `r` of a list.
    pub const READ_LIST: MopKinds = MopKinds(1 << 3);
    /// `r` of a single value.
    pub const READ_SCALAR: MopKinds = MopKinds(1 << 4);
    /// A predicate read (`rr`, `rc`).
    pub const READ_RANGE: MopKinds = MopKinds(1 << 5);

    /// The kind of `m`.
    #[inline]
    pub fn of(m: &MicroOp) -> MopKinds {
        match m {
            MicroOp::Append(..) => MopKinds::APPEND,
            MicroOp::Write(..) => MopKinds::WRITE,
            MicroOp::Read(_, ReadValue::Nil) => MopKinds::READ_NIL,
            MicroOp::Read(_, ReadValue::List(_)) => MopKinds::READ_LIST,
            MicroOp::Read(_, ReadValue::Scalar(_)) => MopKinds::READ_SCALAR,
            MicroOp::ReadRange(_) => MopKinds::READ_RANGE,
        }
    }

    /// Whether any kind of `other` is among these.
    pub fn any_of(self, other: MopKinds) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for MopKinds {
    type Output = MopKinds;
    fn bitor(self, other: MopKinds) -> MopKinds {
        MopKinds(self.0 | other.0)
    }
}

impl std::ops::BitOrAssign for MopKinds {
    fn bitor_assign(&mut self, other: MopKinds) {
        self.0 |= other.0;
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
    /// Jepsen workloads (bank, set, counter, monotonic, sequential): a read.
    Read,
    /// Jepsen workloads (sequential): a write.
    Write,
    /// Jepsen workloads (set, counter): an add.
    Add,
    /// Jepsen workload bank: a transfer between accounts.
    Transfer,
    /// Jepsen workload bank with inserts/deletes: an account inserted.
    Insert,
    /// Jepsen workload bank with inserts/deletes: an account deleted.
    Delete,
    /// Jepsen workload monotonic: an increment.
    Inc,
    /// Nemesis: a node leaves the cluster (value: the node; completion:
    /// `[node result]`).
    Leave,
    /// Nemesis: a node joins the cluster again (value: the node;
    /// completion: `[node result]`).
    Join,
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
            F::Read => "read",
            F::Write => "write",
            F::Add => "add",
            F::Transfer => "transfer",
            F::Insert => "insert",
            F::Delete => "delete",
            F::Inc => "inc",
            F::Leave => "leave",
            F::Join => "join",
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
            "read" => F::Read,
            "write" => F::Write,
            "add" => F::Add,
            "transfer" => F::Transfer,
            "insert" => F::Insert,
            "delete" => F::Delete,
            "inc" => F::Inc,
            "leave" => F::Leave,
            "join" => F::Join,
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
}

impl OpValue {
    /// The micro-ops, if this is a transaction.
    pub fn txn(&self) -> Option<&[MicroOp]> {
        match self {
            OpValue::Txn(m) => Some(m),
            OpValue::Data(_) => None,
        }
    }

    /// Whether this is a transaction.
    pub fn is_txn(&self) -> bool {
        matches!(self, OpValue::Txn(_))
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

/// An op's `f` in an error message: `txn`, or `none` when it has none.
fn show_f(f: &Option<String>) -> String {
    f.as_deref().unwrap_or("none").to_string()
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
        "op {index}: completion f {} does not match invocation op {invoke}'s f {}",
        show_f(.completion_f),
        show_f(.invoke_f)
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
    /// More ops or micro-ops than a history can hold: positions and the
    /// micro-op arena are addressed with 32 bits.
    #[error(
        "op {index} (op number {count}): a history holds at most {limit} {what}; this one has more (split it)"
    )]
    TooLarge {
        /// The op that passes the limit.
        index: OpIndex,
        /// Its number, counting from 1.
        count: u64,
        /// The limit.
        limit: u64,
        /// What is counted: `ops` or `micro-ops`.
        what: &'static str,
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
    /// A completion with no open invocation, in a history that has
    /// invocations (read as its own invocation, as Elle does).
    CompletionWithoutInvocation {
        /// The completion.
        index: OpIndex,
    },
    /// More completions without an invocation than are listed one by one
    /// (`pairing::MAX_ORPHANS_LISTED`).
    MoreCompletionsWithoutInvocation {
        /// How many more.
        count: u64,
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
            HistoryWarning::CompletionWithoutInvocation { index } => write!(
                f,
                "op {index}: completion without an invocation (read as its own invocation)"
            ),
            HistoryWarning::MoreCompletionsWithoutInvocation { count } => write!(
                f,
                "{count} more completions without an invocation (not listed)"
            ),
        }
    }
}

const NONE: u32 = u32::MAX;

/// A validated history: ops in order, each invocation paired with its
/// completion (by process, or by adjacency where `process` is missing).
///
/// Positions (`usize`) count ops in history order, which is real-time
/// order. Completions without an invocation stand for their own invocation
/// (Elle's completion-only histories). Ops are stored in columns (see the
/// module doc), so there is no `&Op` to hand out: read a field by position
/// ([`History::index`], [`History::txn`], …) or materialise an op
/// ([`History::op`]). Accessors taking a position panic when it is out of
/// bounds, like indexing a slice.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub(crate) cols: Columns,
    /// For each position: the paired op's position, or `NONE`.
    partner: Vec<u32>,
    warnings: Vec<HistoryWarning>,
    /// The value a read returns for a key's initial state, when the source
    /// format has one besides `nil` (PolySI, Plume, AWDIT, dbcop: `0`).
    initial_value: Option<Val>,
    /// Whether op order says nothing about real time between processes
    /// (histories from tools that record only sessions, no clock).
    session_order_only: bool,
    /// The kinds of micro-op in the arena.
    mop_kinds: MopKinds,
}

impl History {
    /// Validates and pairs `ops` (a convenience over [`HistoryBuilder`]).
    ///
    /// # Errors
    /// A [`HistoryError`] naming the first op that breaks the rules.
    pub fn new(ops: Vec<Op>) -> Result<History, HistoryError> {
        let mut b = HistoryBuilder::new();
        for op in ops {
            b.push(op);
        }
        b.finish()
    }

    /// Pairs and validates the ops in `cols`.
    pub(crate) fn from_columns(mut cols: Columns) -> Result<History, HistoryError> {
        let n = cols.recs.len();
        // Positions are stored as `u32` (the builder refuses more first).
        if n > crate::columns::MAX_OPS {
            return Err(HistoryError::TooLarge {
                index: cols.index(crate::columns::MAX_OPS),
                count: crate::columns::MAX_OPS as u64 + 1,
                limit: crate::columns::MAX_OPS as u64,
                what: "ops",
            });
        }
        let mop_kinds = crate::columns::share_per_key(&mut cols.mops);
        let mut partner = vec![NONE; n];
        let mut pairing = crate::pairing::Pairing::default();
        for pos in 0..n {
            if let Some(inv) = pairing.push(pos, cols.view(pos), |i| cols.view(i))? {
                partner[inv] = pos as u32;
                partner[pos] = inv as u32;
            }
        }
        let warnings = pairing.finish(|i| cols.index(i));
        cols.compact_indices();
        Ok(History {
            cols,
            partner,
            warnings,
            initial_value: None,
            session_order_only: false,
            mop_kinds,
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

    /// The index of the op at `pos`.
    pub fn index(&self, pos: usize) -> OpIndex {
        self.cols.index(pos)
    }

    /// The position of the op with index `index`, if there is one
    /// (indices strictly increase: a binary search).
    pub fn position_of(&self, index: OpIndex) -> Option<usize> {
        self.cols.position_of(index.0)
    }

    /// The time of the op at `pos`, if the source had one.
    pub fn time_ns(&self, pos: usize) -> Option<i64> {
        self.cols.time_ns(pos)
    }

    /// The type of the op at `pos`.
    pub fn op_type(&self, pos: usize) -> OpType {
        self.cols.op_type(pos)
    }

    /// Who performed the op at `pos`, if the source said.
    pub fn process(&self, pos: usize) -> Option<Process> {
        self.cols.process(pos)
    }

    /// Whether the op at `pos` was performed by the nemesis.
    pub fn is_nemesis(&self, pos: usize) -> bool {
        self.process(pos) == Some(Process::Nemesis)
    }

    /// Whether the op at `pos` is a client op (not the nemesis).
    pub fn is_client(&self, pos: usize) -> bool {
        !self.is_nemesis(pos)
    }

    /// The function of the op at `pos`, if the source had one.
    pub fn f(&self, pos: usize) -> Option<&F> {
        self.cols.f(pos)
    }

    /// Whether the op at `pos` is a transaction (stored, or elided as its
    /// completion's).
    pub fn is_txn(&self, pos: usize) -> bool {
        self.cols.kind(pos) != Kind::Data
    }

    /// The micro-ops stored for the op at `pos`, borrowed from the arena:
    /// `None` for a non-transaction and for an elided invocation (whose
    /// micro-ops [`History::txn`] rebuilds).
    #[inline]
    pub fn stored_txn(&self, pos: usize) -> Option<&[MicroOp]> {
        self.cols.stored_txn(pos)
    }

    /// The micro-ops of the op at `pos` as read, if it is a transaction:
    /// borrowed from the arena, or rebuilt from its completion's for an
    /// elided invocation. `None` too when `pos` is out of bounds.
    pub fn txn(&self, pos: usize) -> Option<Cow<'_, [MicroOp]>> {
        if pos >= self.len() {
            return None;
        }
        match self.cols.kind(pos) {
            Kind::Txn => self.stored_txn(pos).map(Cow::Borrowed),
            Kind::Data => None,
            Kind::Elided => Some(Cow::Owned(self.elided_mops(pos))),
        }
    }

    /// The value of the op at `pos` when it is not a transaction (a
    /// nemesis grudge, a foreign value).
    pub fn data(&self, pos: usize) -> Option<&Data> {
        self.cols.data(pos)
    }

    /// The error the client reported for the op at `pos`, if any.
    pub fn error(&self, pos: usize) -> Option<&Data> {
        self.cols.error(pos)
    }

    /// The fields of the op at `pos` that the model does not name.
    pub fn extra(&self, pos: usize) -> &[(String, Data)] {
        self.cols.extra(pos)
    }

    /// The op at `pos` as read (what a writer should write), materialised.
    pub fn op(&self, pos: usize) -> Op {
        let value = match self.cols.kind(pos) {
            Kind::Data => OpValue::Data(Box::new(self.data(pos).cloned().unwrap_or(Data::Nil))),
            Kind::Txn | Kind::Elided => {
                OpValue::Txn(self.txn(pos).map(Cow::into_owned).unwrap_or_default())
            }
        };
        self.cols.op_with(pos, value)
    }

    /// Every op as read, in history order ([`History::op`] of each).
    pub fn iter_ops(&self) -> impl Iterator<Item = Op> + '_ {
        (0..self.len()).map(|pos| self.op(pos))
    }

    /// Every op as read, in a vector (for tests and small histories: a big
    /// one is better read field by field).
    pub fn to_ops(&self) -> Vec<Op> {
        self.iter_ops().collect()
    }

    /// The kinds of micro-op stored in the arena: every op's, but for an
    /// elided invocation's `nil` reads (it is its completion with every
    /// read `nil`, `crate::elide`), which may be missing as
    /// [`MopKinds::READ_NIL`].
    pub fn mop_kinds(&self) -> MopKinds {
        self.mop_kinds
    }

    /// Number of micro-ops stored in the arena (elided invocations' not
    /// counted).
    pub fn mop_count(&self) -> usize {
        self.cols.mops.len()
    }

    /// An elided invocation's micro-ops (empty if it has no completion,
    /// which the builder never causes).
    fn elided_mops(&self, pos: usize) -> Vec<MicroOp> {
        let comp = self.partner(pos).and_then(|p| self.stored_txn(p));
        crate::elide::invocation_mops(comp.unwrap_or_default())
    }

    /// Consumes the history, returning its ops as read.
    pub fn into_ops(self) -> Vec<Op> {
        self.iter_ops().collect()
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.cols.recs.len()
    }

    /// Whether there are no ops.
    pub fn is_empty(&self) -> bool {
        self.cols.recs.is_empty()
    }

    /// The position of the op paired with the op at `pos` (its completion if
    /// it is an invocation, its invocation if it is a completion).
    pub fn partner(&self, pos: usize) -> Option<usize> {
        match self.partner.get(pos) {
            Some(&p) if p != NONE => Some(p as usize),
            _ => None,
        }
    }

    /// The position of the completion of the invocation at `pos`, if it
    /// completed.
    pub fn completion(&self, pos: usize) -> Option<usize> {
        if pos >= self.len() || self.op_type(pos) != OpType::Invoke {
            return None;
        }
        self.partner(pos)
    }

    /// The position of the invocation of the completion at `pos`; a
    /// completion without one is its own invocation.
    pub fn invocation(&self, pos: usize) -> Option<usize> {
        if pos >= self.len() || self.op_type(pos) == OpType::Invoke {
            return None;
        }
        Some(self.partner(pos).unwrap_or(pos))
    }

    /// Oddities found while pairing.
    pub fn warnings(&self) -> &[HistoryWarning] {
        &self.warnings
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// A loaded history is mostly micro-ops (~2.5 per transaction in its
    /// arena, an atom per list element; records: `crate::columns`):
    /// growing one is a memory regression on every big check
    /// (BENCHMARKS.md). `Op` is only what readers hand out.
    #[test]
    fn the_model_stays_compact() {
        assert_eq!(size_of::<Atom>(), 16);
        assert_eq!(size_of::<MicroOp>(), 40);
        assert_eq!(size_of::<Op>(), 104);
    }

    /// Ops with every rare part: an error, extra fields, a nemesis value,
    /// an `F::Other`, process ids too big for the record, no time, no `f`.
    const RARE: &str = r#"{"index":0,"time":5,"type":"invoke","process":0,"f":"txn","value":[["append",1,1],["r",1,null]]}
{"index":1,"type":"invoke","process":1,"f":"txn","value":[["append",2,1],["r",1,null]]}
{"index":2,"time":9,"type":"ok","process":0,"f":"txn","value":[["append",1,1],["r",1,[1]]]}
{"index":3,"type":"ok","process":1,"f":"txn","value":[["append",2,1],["r",1,[1]]],"node":"n2"}
{"index":4,"type":"info","process":"nemesis","f":"start-partition","value":{"n1":["n2","n3"]}}
{"index":5,"type":"invoke","process":4294967295,"f":"frobnicate","value":[1,2]}
{"index":6,"type":"fail","process":4294967295,"f":"frobnicate","value":[1,2],"error":["boom",3]}
{"index":7,"type":"ok","process":10000000000,"value":[["r",2,[1]]]}
"#;

    fn load(text: &str) -> History {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.jsonl");
        std::fs::write(&p, text).unwrap();
        crate::format::load_history(&p).unwrap().0
    }

    fn jsonl(ops: impl IntoIterator<Item = Op>) -> String {
        let mut out = Vec::new();
        crate::format::write_ops(&mut out, ops, crate::Format::JsonLines).unwrap();
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn a_loaded_historys_micro_ops_are_one_arena() {
        let h = load(RARE);
        let (Some(Cow::Borrowed(a)), Some(Cow::Borrowed(b))) = (h.txn(2), h.txn(3)) else {
            panic!("completions' micro-ops are borrowed: {:?}", h.txn(2));
        };
        let arena = h.cols.mops.as_ptr_range();
        for m in [a, b] {
            let r = m.as_ptr_range();
            assert!(arena.start <= r.start && r.end <= arena.end);
        }
        // The elided invocations' are rebuilt, not stored.
        assert!(matches!(h.txn(0), Some(Cow::Owned(_))));
        assert!(h.stored_txn(1).is_none());
        assert_eq!(h.mop_count(), 5);
    }

    #[test]
    fn rare_fields_round_trip() {
        let text = jsonl(
            crate::format::read_str(RARE, crate::Format::JsonLines)
                .unwrap()
                .ops,
        );
        let h = load(&text);
        assert_eq!(jsonl(h.iter_ops()), text);
        assert_eq!(h.time_ns(0), Some(5));
        assert_eq!(h.time_ns(1), None);
        assert_eq!(h.extra(3), [("node".to_string(), Data::Str("n2".into()))]);
        assert!(h.is_nemesis(4) && !h.is_txn(4));
        assert_eq!(h.f(4), Some(&F::StartPartition));
        assert!(matches!(h.data(4), Some(Data::Map(_))), "{:?}", h.data(4));
        assert_eq!(h.f(5), Some(&F::Other("frobnicate".into())));
        assert_eq!(
            h.process(6),
            Some(Process::Client(ProcessId(4_294_967_295)))
        );
        assert!(h.error(6).is_some() && h.error(5).is_none());
        assert_eq!(
            h.process(7),
            Some(Process::Client(ProcessId(10_000_000_000)))
        );
        assert_eq!(h.f(7), None);
        assert_eq!(
            h.to_ops(),
            History::new(h.to_ops()).unwrap_or_default().to_ops()
        );
    }

    #[test]
    fn a_transaction_longer_than_the_records_length_field_keeps_every_micro_op() {
        let big: Vec<MicroOp> = (0..70_000)
            .map(|v| MicroOp::Append(Key::int(1), Val::int(v)))
            .collect();
        let ops = vec![
            Op::txn(0, OpType::Ok, 0, vec![big[0].clone()]),
            Op::txn(1, OpType::Ok, 0, big),
            Op::txn(2, OpType::Ok, 0, vec![]),
        ];
        let h = History::new(ops.clone()).unwrap();
        assert!(matches!(h.txn(1), Some(Cow::Borrowed(m)) if m.len() == 70_000));
        assert_eq!(h.stored_txn(2), Some(&[][..]));
        assert_eq!(h.into_ops(), ops);
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
