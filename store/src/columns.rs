//! The storage behind [`crate::History`]: a fixed-size record per op, one
//! arena of every op's micro-ops, and a side table for what is rare.
//!
//! Key decision: an op costs one 20-B [`OpRec`] plus its micro-ops in the
//! shared arena — no allocation of its own — and, while the history is
//! built, its 8-B index in a column of its own, dropped once the indices
//! are found consecutive (Jepsen's and harness's: 16 MB at 1M
//! transactions). Everything an op seldom has
//! (an error, extra fields, a non-transaction value, an `F::Other` name, a
//! process id too big for the record's `u32`, more than 65,534 micro-ops)
//! lives in [`Rare`], found by the op's position in a sorted column the
//! record points into with one flag bit (an index of its own cost every
//! op 4 B: 8 MB at 1M transactions).
//!
//! Invariants:
//! - `recs[pos].mop_start .. + mop_len` lies inside `mops`; ranges of
//!   different ops never overlap, but the arena is not in op order: an open
//!   invocation's micro-ops wait in [`HistoryBuilder`] until its completion
//!   arrives, and go in after it (or never, when elided).
//! - A [`Kind::Elided`] invocation has no micro-ops of its own: they are its
//!   completion's with every read `nil` (`crate::elide`), and the builder
//!   elides only a client invocation followed by its completion for the same
//!   process — the pair `History`'s pairing makes of the same ops, or it
//!   refuses the history.
//! - An op's record has [`RARE`] set exactly when `rare_pos` holds its
//!   position; `rare_pos` is sorted, and `rare[i]` is the entry of the op
//!   at `rare_pos[i]`.

use crate::data::Data;
use crate::history::{Extra, F, MicroOp, Op, OpIndex, OpType, OpValue, Process, ProcessId};
use crate::pairing::{OpView, ValueView};

mod builder;
mod lists;
mod open;
pub use builder::HistoryBuilder;
pub(crate) use builder::MAX_OPS;
pub(crate) use lists::share_per_key;

/// `time_ns` of an op without a time.
const NO_TIME: i64 = i64::MIN;
/// `process` of an op without a process.
const PROC_NONE: u32 = u32::MAX;
/// `process` of a nemesis op.
const PROC_NEMESIS: u32 = u32::MAX - 1;
/// `process` of a client whose id does not fit: it is in the side table.
const PROC_RARE: u32 = u32::MAX - 2;
/// The bit of [`OpRec::type_kind`] set when the op has a [`Rare`] entry.
const RARE: u8 = 1 << 4;
/// `mop_len` of an op with more micro-ops than that: its count is in the
/// side table.
const LEN_RARE: u16 = u16::MAX;
/// `f` code of an op without an `f`.
const F_NONE: u8 = 0;
/// `f` code of [`F::Txn`] (its position in [`KNOWN_F`] + 1).
const F_TXN: u8 = 1;
/// `f` code of an [`F::Other`] (the name is in the side table).
const F_OTHER: u8 = u8::MAX;
/// The functions with a code of their own (`code = position + 1`).
static KNOWN_F: [F; 20] = [
    F::Txn,
    F::StartPartition,
    F::StopPartition,
    F::Kill,
    F::Start,
    F::Pause,
    F::Resume,
    F::StartClock,
    F::StopClock,
    F::StartLoss,
    F::StopLoss,
    F::Read,
    F::Write,
    F::Add,
    F::Transfer,
    F::Insert,
    F::Delete,
    F::Inc,
    F::Leave,
    F::Join,
];

/// What an op's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A transaction whose micro-ops are in the arena.
    Txn,
    /// An invocation stored as its completion's micro-ops (`crate::elide`).
    Elided,
    /// Any other value, in the side table.
    Data,
}

/// One op's fixed-size part (20 B; its index is in [`Columns`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpRec {
    /// The time as [`OpRec::time`] gives it, in two halves (so the record
    /// is aligned to 4 bytes, not 8: no padding).
    time_ns: [u32; 2],
    /// Where the micro-ops start in the arena (a history holds fewer than
    /// 2^32 micro-ops: 160 GiB of them).
    mop_start: u32,
    /// A client id, or [`PROC_NONE`] / [`PROC_NEMESIS`] / [`PROC_RARE`].
    process: u32,
    /// The number of micro-ops, or [`LEN_RARE`]: in the side table.
    mop_len: u16,
    /// [`OpType`] in bits 0–1, [`Kind`] in bits 2–3, [`RARE`].
    type_kind: u8,
    /// [`F_NONE`], a [`KNOWN_F`] position + 1, or [`F_OTHER`].
    f: u8,
}

const OP_TYPES: [OpType; 4] = [OpType::Invoke, OpType::Ok, OpType::Fail, OpType::Info];
const KINDS: [Kind; 3] = [Kind::Txn, Kind::Elided, Kind::Data];

impl OpRec {
    pub(crate) fn op_type(&self) -> OpType {
        OP_TYPES[usize::from(self.type_kind & 3)]
    }

    pub(crate) fn kind(&self) -> Kind {
        KINDS[usize::from(self.type_kind >> 2 & 3)]
    }

    /// Sets the type and kind (the [`RARE`] bit is kept).
    fn set(&mut self, op_type: OpType, kind: Kind) {
        self.type_kind = op_type as u8 | (kind as u8) << 2 | (self.type_kind & RARE);
    }

    /// A record of an op at `time_ns` ([`NO_TIME`] for none), by `process`,
    /// with function code `f`, and no micro-ops, type or kind yet.
    fn new(time_ns: i64, process: u32, f: u8) -> OpRec {
        let t = time_ns as u64;
        OpRec {
            time_ns: [t as u32, (t >> 32) as u32],
            mop_start: 0,
            process,
            mop_len: 0,
            type_kind: 0,
            f,
        }
    }

    /// The time, or [`NO_TIME`].
    fn time(&self) -> i64 {
        (u64::from(self.time_ns[0]) | u64::from(self.time_ns[1]) << 32) as i64
    }

    fn has_rare(&self) -> bool {
        self.type_kind & RARE != 0
    }
}

/// What few ops have.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Rare {
    error: Option<Box<Data>>,
    extra: Extra,
    /// The value of a [`Kind::Data`] op.
    data: Option<Box<Data>>,
    /// An [`F::Other`].
    f: Option<F>,
    /// A client id ≥ [`PROC_RARE`].
    process: Option<u64>,
    /// A micro-op count ≥ [`LEN_RARE`].
    mop_len: Option<u32>,
}

/// The ops of a history (or of a chunk of one) in columns.
#[derive(Clone, Debug, Default)]
pub(crate) struct Columns {
    pub(crate) recs: Vec<OpRec>,
    pub(crate) mops: Vec<MicroOp>,
    rare: Vec<Rare>,
    /// The position of each `rare` entry's op, ascending.
    rare_pos: Vec<u32>,
    /// Each op's index; empty once [`Columns::compact_indices`] found them
    /// consecutive from `first_index`.
    indices: Vec<u64>,
    /// With `indices` empty: the first op's index (each next one more).
    first_index: u64,
}

impl Columns {
    fn rare(&self, pos: usize) -> Option<&Rare> {
        if !self.recs[pos].has_rare() {
            return None;
        }
        let i = self.rare_pos.binary_search(&(pos as u32)).ok()?;
        self.rare.get(i)
    }

    /// The op's side-table entry, made if it has none.
    fn rare_mut(&mut self, pos: usize) -> &mut Rare {
        let i = match self.rare_pos.binary_search(&(pos as u32)) {
            Ok(i) => i,
            Err(i) => {
                self.rare_pos.insert(i, pos as u32);
                self.rare.insert(i, Rare::default());
                self.recs[pos].type_kind |= RARE;
                i
            }
        };
        &mut self.rare[i]
    }

    pub(crate) fn op_type(&self, pos: usize) -> OpType {
        self.recs[pos].op_type()
    }

    pub(crate) fn kind(&self, pos: usize) -> Kind {
        self.recs[pos].kind()
    }

    pub(crate) fn index(&self, pos: usize) -> OpIndex {
        match self.indices.get(pos) {
            Some(&i) => OpIndex(i),
            // Consecutive (the column was dropped): `first_index + pos` was
            // stored, so it fits. A position past the end fails on the
            // record, as it did when the record held the index.
            None => {
                let _in_range = &self.recs[pos];
                OpIndex(self.first_index + pos as u64)
            }
        }
    }

    /// The first op's index, if any.
    pub(crate) fn first_index(&self) -> Option<u64> {
        (!self.recs.is_empty()).then(|| self.index(0).0)
    }

    /// The position of the op with index `index` (indices strictly
    /// increase).
    pub(crate) fn position_of(&self, index: u64) -> Option<usize> {
        if self.indices.is_empty() {
            let pos = usize::try_from(index.checked_sub(self.first_index)?).ok()?;
            (pos < self.recs.len()).then_some(pos)
        } else {
            self.indices.binary_search(&index).ok()
        }
    }

    /// Drops the index column when every op's index is the first one's
    /// plus its position (then [`Columns::index`] computes it). The
    /// columns take no more ops after this.
    pub(crate) fn compact_indices(&mut self) {
        let first = self.indices.first().copied().unwrap_or(0);
        let consecutive = self
            .indices
            .iter()
            .enumerate()
            .all(|(pos, &i)| first.checked_add(pos as u64) == Some(i));
        if consecutive {
            self.first_index = first;
            self.indices = Vec::new();
        }
    }

    /// Reserves room for `ops` more ops' records and indices.
    pub(crate) fn reserve_ops(&mut self, ops: usize) {
        self.recs.reserve(ops);
        self.indices.reserve(ops);
    }

    /// Appends `rec` as the op with index `index`; returns its position.
    pub(crate) fn push_rec(&mut self, index: u64, rec: OpRec) -> usize {
        self.recs.push(rec);
        self.indices.push(index);
        self.recs.len() - 1
    }

    pub(crate) fn time_ns(&self, pos: usize) -> Option<i64> {
        let t = self.recs[pos].time();
        (t != NO_TIME).then_some(t)
    }

    pub(crate) fn process(&self, pos: usize) -> Option<Process> {
        let client = |p: u64| Some(Process::Client(ProcessId(p)));
        match self.recs[pos].process {
            PROC_NONE => None,
            PROC_NEMESIS => Some(Process::Nemesis),
            PROC_RARE => self.rare(pos).and_then(|r| r.process).and_then(client),
            p => client(u64::from(p)),
        }
    }

    pub(crate) fn f(&self, pos: usize) -> Option<&F> {
        match self.recs[pos].f {
            F_NONE => None,
            F_OTHER => self.rare(pos).and_then(|r| r.f.as_ref()),
            code => KNOWN_F.get(usize::from(code) - 1),
        }
    }

    /// The micro-ops stored for the op (none for an elided invocation).
    #[inline]
    pub(crate) fn stored_txn(&self, pos: usize) -> Option<&[MicroOp]> {
        let r = &self.recs[pos];
        let start = r.mop_start as usize;
        let len = match r.mop_len {
            LEN_RARE => self.rare(pos).and_then(|r| r.mop_len).unwrap_or(0) as usize,
            len => usize::from(len),
        };
        (r.kind() == Kind::Txn).then(|| &self.mops[start..start + len])
    }

    pub(crate) fn data(&self, pos: usize) -> Option<&Data> {
        self.rare(pos).and_then(|r| r.data.as_deref())
    }

    pub(crate) fn error(&self, pos: usize) -> Option<&Data> {
        self.rare(pos).and_then(|r| r.error.as_deref())
    }

    pub(crate) fn extra(&self, pos: usize) -> &[(String, Data)] {
        self.rare(pos).map_or(&[], |r| &r.extra)
    }

    /// What pairing looks at.
    pub(crate) fn view(&self, pos: usize) -> OpView<'_> {
        let r = &self.recs[pos];
        OpView {
            index: self.index(pos),
            op_type: r.op_type(),
            process: self.process(pos),
            f: self.f(pos),
            value: match r.kind() {
                Kind::Txn => ValueView::Txn(self.stored_txn(pos).unwrap_or_default()),
                Kind::Elided => ValueView::Elided,
                Kind::Data => ValueView::Data,
            },
        }
    }

    /// The op at `pos` with `value` (its own is not rebuilt here).
    pub(crate) fn op_with(&self, pos: usize, value: OpValue) -> Op {
        let rare = self.rare(pos);
        Op {
            index: self.index(pos),
            time_ns: self.time_ns(pos),
            op_type: self.op_type(pos),
            process: self.process(pos),
            f: self.f(pos).cloned(),
            value,
            error: rare.and_then(|r| r.error.clone()),
            extra: rare.map(|r| r.extra.clone()).unwrap_or_default(),
        }
    }

    /// Stores `op` at the end, its micro-ops left out (the caller places
    /// them), and returns them.
    fn push(&mut self, op: Op) -> (Kind, Vec<MicroOp>) {
        let Op {
            index,
            time_ns,
            op_type,
            process,
            f,
            value,
            error,
            extra,
        } = op;
        let mut rare = Rare {
            error,
            extra,
            ..Rare::default()
        };
        let process = match process {
            None => PROC_NONE,
            Some(Process::Nemesis) => PROC_NEMESIS,
            Some(Process::Client(p)) => u32::try_from(p.0)
                .ok()
                .filter(|&p| p < PROC_RARE)
                .unwrap_or_else(|| {
                    rare.process = Some(p.0);
                    PROC_RARE
                }),
        };
        let f = match f {
            None => F_NONE,
            Some(f) => match KNOWN_F.iter().position(|k| *k == f) {
                Some(i) => i as u8 + 1,
                None => {
                    rare.f = Some(f);
                    F_OTHER
                }
            },
        };
        let (kind, mops) = match value {
            OpValue::Txn(m) => (Kind::Txn, m),
            OpValue::Data(d) => {
                rare.data = Some(d);
                (Kind::Data, Vec::new())
            }
        };
        let mut rec = OpRec::new(time_ns.unwrap_or(NO_TIME), process, f);
        rec.set(op_type, kind);
        let pos = self.push_rec(index.0, rec);
        if rare != Rare::default() {
            // Positions fit in `u32` (the builder refuses more ops first).
            self.rare_pos.push(pos as u32);
            self.rare.push(rare);
            self.recs[pos].type_kind |= RARE;
        }
        (kind, mops)
    }

    /// Puts `mops` in the arena as the op at `pos`'s.
    fn place(&mut self, pos: usize, mut mops: Vec<MicroOp>) {
        self.place_from(pos, &mut mops);
    }

    /// [`Columns::place`], moving the micro-ops out of `mops` (left empty,
    /// its allocation kept for the caller).
    fn place_from(&mut self, pos: usize, mops: &mut Vec<MicroOp>) {
        let (start, len) = (self.mops.len(), mops.len());
        // 2^32 micro-ops are 160 GiB: no history that fits in memory.
        assert!(
            u32::try_from(start + len).is_ok(),
            "op {pos}: a history of more than 2^32 micro-ops"
        );
        self.recs[pos].mop_start = start as u32;
        self.recs[pos].mop_len = match u16::try_from(len) {
            Ok(n) if n < LEN_RARE => n,
            _ => {
                self.rare_mut(pos).mop_len = Some(len as u32);
                LEN_RARE
            }
        };
        self.mops.append(mops);
    }

    /// Consecutive parts' ops, in order, appended to the first part's
    /// columns: the parallel reader sizes those for the whole file
    /// (`format::parallel`), so only the later parts are copied (each freed
    /// once moved), not the whole history once more into fresh pages. A
    /// first part without that room grows (once), which held it twice for
    /// a moment: a 77-MB peak over the loaded history at 1M transactions.
    fn concat(parts: Vec<Columns>) -> Columns {
        let mut parts = parts.into_iter();
        let mut out = parts.next().unwrap_or_default();
        let parts: Vec<Columns> = parts.collect();
        let total = |f: fn(&Columns) -> usize| parts.iter().map(f).sum::<usize>();
        out.reserve_ops(total(|c| c.recs.len()));
        out.mops.reserve(total(|c| c.mops.len()));
        out.rare.reserve(total(|c| c.rare.len()));
        out.rare_pos.reserve(total(|c| c.rare.len()));
        assert!(
            u32::try_from(out.mops.len() + total(|c| c.mops.len())).is_ok(),
            "a history of more than 2^32 micro-ops"
        );
        // The micro-ops (the most bytes) are moved on a second thread while
        // this one moves and renumbers the records: the copy and the page
        // faults of the fresh room are most of the join, and the parsing
        // threads are done.
        let (mut mop_parts, mut rest) = (Vec::new(), Vec::new());
        for part in parts {
            mop_parts.push(part.mops);
            rest.push((part.recs, part.indices, part.rare, part.rare_pos));
        }
        let Columns {
            recs,
            mops,
            rare,
            rare_pos,
            indices,
            ..
        } = &mut out;
        let mut mop_base = mops.len() as u32;
        let bases: Vec<u32> = mop_parts
            .iter()
            .map(|m| {
                let b = mop_base;
                mop_base += m.len() as u32;
                b
            })
            .collect();
        std::thread::scope(|s| {
            s.spawn(move || {
                for m in mop_parts {
                    mops.extend(m);
                }
            });
            for ((part_recs, part_indices, part_rare, part_pos), mop_base) in
                rest.into_iter().zip(bases)
            {
                let pos_base = recs.len() as u32;
                recs.extend(part_recs.into_iter().map(|mut r| {
                    r.mop_start += mop_base;
                    r
                }));
                indices.extend(part_indices);
                rare.extend(part_rare);
                rare_pos.extend(part_pos.into_iter().map(|p| p + pos_base));
            }
        });
        out
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;

    /// Two records per transaction: growing this is a memory regression on
    /// every big check (BENCHMARKS.md).
    #[test]
    fn the_record_stays_compact() {
        assert_eq!(std::mem::size_of::<OpRec>(), 20);
    }

    /// An op's rare entry made after a later op's (an invocation of more
    /// micro-ops than the record counts, placed when its completion came)
    /// goes in position order: every op reads back its own.
    #[test]
    fn rare_entries_made_out_of_order_stay_each_ops() {
        use crate::history::{History, Key, MicroOp, ReadValue, Val};
        let txn = |last: i64| {
            let mut m: Vec<MicroOp> = (0..70_000)
                .map(|v| MicroOp::Append(Key::int(1), Val::int(v)))
                .collect();
            let read = (5..=last).map(Val::int).collect();
            m.push(MicroOp::Read(Key::int(2), ReadValue::List(read)));
            m
        };
        let mut nemesis = Op::txn(1, OpType::Info, 0, vec![]);
        nemesis.process = Some(Process::Nemesis);
        nemesis.value = OpValue::Data(Box::new(Data::Int(7)));
        let mut fail = Op::txn(3, OpType::Fail, 1, vec![]);
        fail.error = Some(Box::new(Data::Int(9)));
        let ops = vec![
            Op::txn(0, OpType::Invoke, 0, txn(5)),
            nemesis,
            Op::txn(2, OpType::Ok, 0, txn(6)),
            fail,
        ];
        let h = History::new(ops.clone()).unwrap_or_default();
        assert_eq!(h.cols.rare_pos, [0, 1, 2, 3]);
        assert_eq!(h.data(1), Some(&Data::Int(7)));
        assert_eq!(h.error(3), Some(&Data::Int(9)));
        assert_eq!(h.stored_txn(0).map(<[_]>::len), Some(70_001));
        assert_eq!(h.to_ops(), ops);
    }

    /// Consecutive indices are computed, others kept; both answer the
    /// same positions and indices.
    #[test]
    fn indices_consecutive_or_not() {
        use crate::history::{History, Key, MicroOp, Val};
        let op = |i: u64| {
            let m = vec![MicroOp::Append(Key::int(1), Val::int(i as i64))];
            Op::txn(i, OpType::Ok, i, m)
        };
        for (indices, dense) in [(vec![7, 8, 9], true), (vec![0, 2, 3], false)] {
            let h = History::new(indices.iter().map(|&i| op(i)).collect());
            let h = h.unwrap_or_default();
            assert_eq!(h.cols.indices.is_empty(), dense, "{indices:?}");
            for (pos, &i) in indices.iter().enumerate() {
                assert_eq!(h.index(pos), OpIndex(i));
                assert_eq!(h.position_of(OpIndex(i)), Some(pos));
            }
            for absent in [1, 6, 10, u64::MAX] {
                assert_eq!(h.position_of(OpIndex(absent)), None, "{absent}");
            }
            assert_eq!(h.cols.first_index(), indices.first().copied());
        }
    }
}
