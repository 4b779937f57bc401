//! [`HistoryBuilder`]: a history's columns built op by op as a file is
//! read, invocations elided as their completions arrive, and the limits
//! of what one history holds (32-bit positions) checked on every op.

use super::open::OpenCalls;
use super::{Columns, F_TXN, Kind, NO_TIME, OpRec, PROC_RARE};
use crate::format::UsualOp;
use crate::history::{History, HistoryError, MicroOp, Op, OpIndex, OpType, OpValue, Process};

/// Most ops a history holds: positions are `u32`, `u32::MAX` meaning none.
pub(crate) const MAX_OPS: usize = u32::MAX as usize - 1;
/// Most micro-ops a history holds: the arena is addressed with `u32`.
const MAX_MOPS: usize = u32::MAX as usize;

/// Builds a [`History`] op by op, converting each [`Op`] into columns as
/// it comes, so a reader never holds the whole history as `Vec<Op>`.
///
/// An invocation's micro-ops are kept aside until its completion arrives:
/// if they are the completion's with reads `nil` (`crate::elide`) they are
/// dropped, else they go into the arena then.
#[derive(Debug)]
pub struct HistoryBuilder {
    cols: Columns,
    /// Limits on ops and on micro-ops received ([`MAX_OPS`], [`MAX_MOPS`];
    /// lower in tests).
    max_ops: usize,
    max_mops: usize,
    /// Micro-ops received so far (stored, elided or still open).
    mops_seen: usize,
    /// Set when an op passed a limit: it and every later op are dropped
    /// (memory stays bounded), and [`HistoryBuilder::finish`] returns it.
    too_large: Option<HistoryError>,
    /// Open client invocations with micro-ops (position, micro-ops), by process.
    open: OpenCalls,
    /// Emptied micro-op vectors of closed invocations, reused by
    /// [`HistoryBuilder::push_usual`] for the next ones (at most
    /// [`SPARE_VECS`], none over [`SPARE_CAPACITY`]): no allocation per op.
    spare: Vec<Vec<MicroOp>>,
}

/// Vectors [`HistoryBuilder`] keeps for reuse, at most (about one per
/// process of a usual history).
const SPARE_VECS: usize = 1024;
/// Largest capacity of a vector kept for reuse.
const SPARE_CAPACITY: usize = 256;

impl Default for HistoryBuilder {
    fn default() -> HistoryBuilder {
        HistoryBuilder {
            cols: Columns::default(),
            max_ops: MAX_OPS,
            max_mops: MAX_MOPS,
            mops_seen: 0,
            too_large: None,
            open: OpenCalls::default(),
            spare: Vec::new(),
        }
    }
}

impl HistoryBuilder {
    /// An empty builder with lower limits.
    #[cfg(test)]
    pub(crate) fn with_limits(max_ops: usize, max_mops: usize) -> HistoryBuilder {
        HistoryBuilder {
            max_ops,
            max_mops,
            ..HistoryBuilder::default()
        }
    }

    /// Whether the op with index `index` and `mops` micro-ops fits; if
    /// not, the builder refuses it and every later op.
    fn admit(&mut self, index: u64, mops: usize) -> bool {
        if self.too_large.is_some() {
            return false;
        }
        self.mops_seen = self.mops_seen.saturating_add(mops);
        let count = self.cols.recs.len();
        let (limit, what) = if count >= self.max_ops {
            (self.max_ops, "ops")
        } else if self.mops_seen > self.max_mops {
            (self.max_mops, "micro-ops")
        } else {
            return true;
        };
        self.too_large = Some(HistoryError::TooLarge {
            index: OpIndex(index),
            count: count as u64 + 1,
            limit: limit as u64,
            what,
        });
        false
    }

    /// Why the builder refuses ops, once an op passed its limits.
    pub(crate) fn refused(&self) -> Option<&HistoryError> {
        self.too_large.as_ref()
    }

    /// An empty builder.
    pub fn new() -> HistoryBuilder {
        HistoryBuilder::default()
    }

    /// An empty builder sized for about `bytes` of JSON Lines: a list-append
    /// or register history takes ~120–150 bytes per op and ~1.3 stored
    /// micro-ops per op (invocations mostly elided), so this reserves a
    /// little more than that. Growing instead copied each column about
    /// once more and faulted fresh pages for every copy: 15 % of a 100k
    /// check's CPU samples (BENCHMARKS.md). Reserved and unused
    /// capacity is never touched, so it costs address space, not memory.
    pub(crate) fn for_jsonl_bytes(bytes: u64) -> HistoryBuilder {
        let ops = usize::try_from(bytes / 112).unwrap_or(0);
        let mut b = HistoryBuilder::default();
        b.cols.reserve_ops(ops);
        b.cols.mops.reserve(ops + ops / 2);
        b
    }

    /// An empty builder with room for `ops` ops and `mops` micro-ops.
    pub(crate) fn with_capacity(ops: usize, mops: usize) -> HistoryBuilder {
        let mut b = HistoryBuilder::default();
        b.cols.reserve_ops(ops);
        b.cols.mops.reserve(mops);
        b
    }

    /// Adds the next op.
    pub fn push(&mut self, op: Op) {
        let mops = match &op.value {
            OpValue::Txn(m) => m.len(),
            OpValue::Data(_) => 0,
        };
        if !self.admit(op.index.0, mops) {
            return;
        }
        let pos = self.cols.recs.len();
        let (op_type, process) = (op.op_type, op.process);
        let (kind, mops) = self.cols.push(op);
        let Some(Process::Client(p)) = process else {
            return self.cols.place(pos, mops);
        };
        let open = self.open.remove(p.0);
        if op_type == OpType::Invoke {
            if let Some((inv, m)) = open {
                self.cols.place(inv, m);
            }
            if kind == Kind::Txn {
                self.open.insert(p.0, (pos, mops));
            }
            return;
        }
        if let Some((inv, m)) = open {
            if kind == Kind::Txn
                && self.cols.f(inv) == self.cols.f(pos)
                && crate::elide::elidable(&m, &mops)
            {
                let r = &mut self.cols.recs[inv];
                r.set(r.op_type(), Kind::Elided);
            } else {
                self.cols.place(inv, m);
            }
        }
        self.cols.place(pos, mops);
    }

    /// Adds the next op, one of the usual shape (`format::json`), its
    /// micro-ops moved out of `mops` (left empty): what [`Self::push`] of
    /// `op.into_op(mops)` does, without the [`Op`] and its allocation.
    pub(crate) fn push_usual(&mut self, op: UsualOp, mops: &mut Vec<MicroOp>) {
        let Some(process) = u32::try_from(op.process).ok().filter(|&p| p < PROC_RARE) else {
            return self.push(op.into_op(mops));
        };
        if !self.admit(op.index, mops.len()) {
            return mops.clear();
        }
        let mut rec = OpRec::new(op.time_ns.unwrap_or(NO_TIME), process, F_TXN);
        rec.set(op.op_type, Kind::Txn);
        let pos = self.cols.push_rec(op.index, rec);
        let open = self.open.remove(op.process);
        if op.op_type == OpType::Invoke {
            if let Some((inv, m)) = open {
                self.place_spare(inv, m);
            }
            let mut v = self.spare.pop().unwrap_or_default();
            v.append(mops);
            self.open.insert(op.process, (pos, v));
            return;
        }
        if let Some((inv, mut m)) = open {
            if self.cols.recs[inv].f == F_TXN && crate::elide::elidable(&m, mops) {
                let r = &mut self.cols.recs[inv];
                r.set(r.op_type(), Kind::Elided);
                m.clear();
                self.keep_spare(m);
            } else {
                self.place_spare(inv, m);
            }
        }
        self.cols.place_from(pos, mops);
    }

    /// Places an open invocation's micro-ops, keeping the vector.
    fn place_spare(&mut self, pos: usize, mut m: Vec<MicroOp>) {
        self.cols.place_from(pos, &mut m);
        self.keep_spare(m);
    }

    /// Keeps an empty vector for reuse, within the limits.
    fn keep_spare(&mut self, m: Vec<MicroOp>) {
        if self.spare.len() < SPARE_VECS && m.capacity() <= SPARE_CAPACITY {
            self.spare.push(m);
        }
    }

    /// Number of ops pushed.
    pub fn len(&self) -> usize {
        self.cols.recs.len()
    }

    /// Whether no op was pushed.
    pub fn is_empty(&self) -> bool {
        self.cols.recs.is_empty()
    }

    /// The first op's index, if any.
    pub(crate) fn first_index(&self) -> Option<u64> {
        self.cols.first_index()
    }

    /// The columns, with the invocations still open placed.
    fn into_columns(mut self) -> Columns {
        let mut open: Vec<_> = self.open.into_values().collect();
        open.sort_unstable_by_key(|(pos, _)| *pos);
        for (pos, m) in open {
            self.cols.place(pos, m);
        }
        self.cols
    }

    /// Joins builders of consecutive parts of one history, in order;
    /// `None` when they hold more than one history may (read the parts
    /// one after another to learn where the limit is passed).
    pub(crate) fn join(parts: Vec<HistoryBuilder>) -> Option<HistoryBuilder> {
        let first = parts.first()?;
        let (max_ops, max_mops) = (first.max_ops, first.max_mops);
        let ops: usize = parts.iter().map(HistoryBuilder::len).sum();
        let mops_seen = parts.iter().map(|p| p.mops_seen).sum();
        if parts.iter().any(|p| p.too_large.is_some()) || ops > max_ops || mops_seen > max_mops {
            return None;
        }
        let parts = parts
            .into_iter()
            .map(HistoryBuilder::into_columns)
            .collect();
        Some(HistoryBuilder {
            cols: Columns::concat(parts),
            max_ops,
            max_mops,
            mops_seen,
            ..HistoryBuilder::default()
        })
    }

    /// Validates and pairs the ops.
    ///
    /// # Errors
    /// A [`HistoryError`] naming the first op that breaks the rules.
    pub fn finish(mut self) -> Result<History, HistoryError> {
        if let Some(e) = self.too_large.take() {
            return Err(e);
        }
        History::from_columns(self.into_columns())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::format::{Format, FormatError, OpReader, collect_into};

    /// `n` invocation/completion pairs as JSON Lines, indices 10, 20, …,
    /// a blank line after the first op (so lines and op numbers differ).
    fn pairs(n: usize) -> String {
        let mut s = String::new();
        for i in 0..n {
            let (a, b) = (20 * i + 10, 20 * i + 20);
            s.push_str(&format!(
                "{{\"index\":{a},\"type\":\"invoke\",\"process\":{i},\"f\":\"txn\",\"value\":[[\"append\",1,{i}],[\"r\",2,null]]}}\n"
            ));
            if i == 0 {
                s.push('\n');
            }
            s.push_str(&format!(
                "{{\"index\":{b},\"type\":\"ok\",\"process\":{i},\"f\":\"txn\",\"value\":[[\"append\",1,{i}],[\"r\",2,[{i}]]]}}\n"
            ));
        }
        s
    }

    fn load(text: &str, format: Format, b: &mut HistoryBuilder) -> Result<(), FormatError> {
        let path = std::path::Path::new("h.jsonl");
        let r = OpReader::new(text.as_bytes(), format, Some(path.to_path_buf()));
        collect_into(r, b).map(|_| ())
    }

    #[test]
    fn a_history_over_the_op_limit_is_an_error_naming_the_op_and_its_line() {
        let mut b = HistoryBuilder::with_limits(5, 1000);
        let e = load(&pairs(10), Format::JsonLines, &mut b).unwrap_err();
        // Op number 6 is the third pair's completion, index 60, on line 7.
        assert_eq!(e.line, 7, "{e}");
        assert_eq!(
            e.to_string(),
            "h.jsonl:7: op 60 (op number 6): a history holds at most 5 ops; this one has more (split it)"
        );
        // Nothing is kept past the limit, and finishing says the same.
        assert_eq!(b.len(), 5);
        let e = b.finish().unwrap_err();
        assert!(
            matches!(
                e,
                HistoryError::TooLarge {
                    count: 6,
                    limit: 5,
                    what: "ops",
                    ..
                }
            ),
            "{e}"
        );
        // The op passing the limit on a last line without its newline.
        let mut b = HistoryBuilder::with_limits(5, 1000);
        let e = load(pairs(3).trim_end(), Format::JsonLines, &mut b).unwrap_err();
        assert!(
            e.to_string().starts_with("h.jsonl:7: op 60 (op number 6)"),
            "{e}"
        );
        // At the limit exactly, the history loads.
        let mut b = HistoryBuilder::with_limits(6, 1000);
        load(&pairs(3), Format::JsonLines, &mut b).unwrap();
        assert_eq!(b.finish().unwrap().len(), 6);
    }

    #[test]
    fn micro_ops_over_the_limit_are_an_error_on_every_path() {
        // Two micro-ops per op: the fourth op brings the count to 8 > 7.
        let mut b = HistoryBuilder::with_limits(100, 7);
        let e = load(&pairs(10), Format::JsonLines, &mut b).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("h.jsonl:5: op 40 (op number 4): a history holds at most 7 micro-ops"),
            "{e}"
        );
        // The general path (an op with an extra field) and `push`.
        let text = pairs(10).replace("\"f\":", "\"node\":\"n1\",\"f\":");
        let mut b = HistoryBuilder::with_limits(100, 7);
        let e = load(&text, Format::JsonLines, &mut b).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        // Another format, read op by op: the error names where it was.
        let array = format!(
            "[{}]",
            pairs(10).trim().replace("\n\n", "\n").replace('\n', ",\n")
        );
        let mut b = HistoryBuilder::with_limits(100, 7);
        let e = load(&array, Format::ElleJson, &mut b).unwrap_err();
        assert!(
            e.to_string().starts_with("h.jsonl:4: op 40 (op number 4)"),
            "{e}"
        );
    }

    #[test]
    fn parts_too_big_together_are_not_joined() {
        let part = |n| {
            let mut b = HistoryBuilder::with_limits(10, 1000);
            load(&pairs(n), Format::JsonLines, &mut b).unwrap();
            b
        };
        assert!(HistoryBuilder::join(vec![part(3), part(2)]).is_some());
        assert!(HistoryBuilder::join(vec![part(3), part(3)]).is_none());
    }
}
