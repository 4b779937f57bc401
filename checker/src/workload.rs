//! Which kind of transactions a history holds ([`Workload`]): a leaf every
//! part of the checker may name (observations, the weak levels, the
//! analyses) without importing the analysis pipeline.

use store::{History, MopKinds};

/// Which kind of transactions a history holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    /// `append` + list reads.
    ListAppend,
    /// `w` + scalar reads.
    RwRegister,
}

impl Workload {
    /// Guesses the workload from the micro-ops: appends or list reads mean
    /// list-append, writes or scalar reads rw-register; `None` if the history
    /// has neither or both.
    pub fn detect(history: &History) -> Option<Workload> {
        // The history's census of micro-op kinds, taken as it was loaded:
        // no micro-op is read again. A list-append micro-op is one an
        // rw-register check cannot read, and the other way round.
        let kinds = history.mop_kinds();
        let la = kinds.any_of(Workload::RwRegister.unreadable());
        let rw = kinds.any_of(Workload::ListAppend.unreadable());
        match (la, rw) {
            (true, false) => Some(Workload::ListAppend),
            (false, true) => Some(Workload::RwRegister),
            _ => None,
        }
    }

    /// The kinds of micro-op a check of this workload cannot interpret
    /// (Elle's `unexpected-txn-micro-op-types`): writes and single-value
    /// reads in list-append; appends, list reads and range reads in
    /// rw-register. A `nil` read is either's.
    pub fn unreadable(self) -> MopKinds {
        match self {
            Workload::ListAppend => MopKinds::WRITE | MopKinds::READ_SCALAR,
            Workload::RwRegister => MopKinds::APPEND | MopKinds::READ_LIST | MopKinds::READ_RANGE,
        }
    }

    /// The CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            Workload::ListAppend => "list-append",
            Workload::RwRegister => "rw-register",
        }
    }
}

impl std::str::FromStr for Workload {
    type Err = String;

    /// Parses `list-append` (`append`) or `rw-register` (`wr`), with or
    /// without Elle's leading `:`. (`register` is not one of them: it names
    /// the linearizable register, `workloads::WorkloadKind`.)
    ///
    /// # Errors
    /// Names the text and the known workloads.
    fn from_str(s: &str) -> Result<Workload, String> {
        match s.trim_start_matches(':') {
            "list-append" | "append" => Ok(Workload::ListAppend),
            "rw-register" | "wr" => Ok(Workload::RwRegister),
            other => Err(format!(
                "unknown workload {other:?}; known workloads: list-append (append), rw-register (wr)"
            )),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use store::{Key, MicroOp, Op, OpType, ReadValue, Val};

    /// `n` appends and `extra`, each an ok transaction of its own
    /// process; `extra` at position `at`.
    fn history(n: usize, extra: MicroOp, at: usize) -> History {
        let mut mops: Vec<MicroOp> = (0..n)
            .map(|i| MicroOp::Append(Key::int(1), Val::int(i as i64)))
            .collect();
        mops.insert(at, extra);
        let ops = mops.into_iter().enumerate();
        let ops = ops.map(|(i, m)| Op::txn(i as u64, OpType::Ok, i as u64, vec![m]));
        History::new(ops.collect()).unwrap()
    }

    /// The census decides as the micro-ops do, on a small history and on
    /// one whose arena is walked in halves (the odd micro-op in either).
    #[test]
    fn the_workload_is_the_kinds_of_every_micro_op() {
        let k = || Key::int(2);
        let list = ReadValue::List([Val::int(1)].into_iter().collect());
        for (n, at) in [(1, 1), (100_000, 0), (100_000, 100_000)] {
            let history = |m| history(n, m, at);
            let la = Some(Workload::ListAppend);
            assert_eq!(
                Workload::detect(&history(MicroOp::Read(k(), list.clone()))),
                la
            );
            assert_eq!(
                Workload::detect(&history(MicroOp::Read(k(), ReadValue::Nil))),
                la
            );
            let write = MicroOp::Write(k(), Val::int(1));
            assert_eq!(Workload::detect(&history(write)), None, "{n} at {at}");
            let scalar = MicroOp::Read(k(), ReadValue::Scalar(Val::int(1)));
            assert_eq!(Workload::detect(&history(scalar)), None, "{n} at {at}");
        }
        let only = |m: MicroOp| History::new(vec![Op::txn(0, OpType::Ok, 0, vec![m])]).unwrap();
        let scalar = MicroOp::Read(k(), ReadValue::Scalar(Val::int(1)));
        assert_eq!(Workload::detect(&only(scalar)), Some(Workload::RwRegister));
        assert_eq!(
            Workload::detect(&only(MicroOp::Read(k(), ReadValue::Nil))),
            None
        );
    }
}
