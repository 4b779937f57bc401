//! Which kind of transactions a history holds ([`Workload`]): a leaf every
//! part of the checker may name (observations, the weak levels, the
//! analyses) without importing the analysis pipeline.

use crate::graph::{PARALLEL_FROM, halves};
use store::{History, MicroOp, ReadValue};

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
        // A big history in two halves of its ops, side by side
        // (`graph::halves`).
        let parallel = history.len() >= PARALLEL_FROM;
        let parts = halves(parallel, history.len(), |ops| kinds(history, ops));
        let (la, rw) = parts
            .into_iter()
            .fold((false, false), |a, b| (a.0 || b.0, a.1 || b.1));
        match (la, rw) {
            (true, false) => Some(Workload::ListAppend),
            (false, true) => Some(Workload::RwRegister),
            _ => None,
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

/// Whether the ops in `ops` hold list-append micro-ops (appends, list
/// reads), rw-register ones (writes, scalar reads); stops at both.
fn kinds(history: &History, ops: std::ops::Range<usize>) -> (bool, bool) {
    let (mut la, mut rw) = (false, false);
    for pos in ops {
        let Some(m) = history.stored_txn(pos) else {
            continue;
        };
        for x in m {
            match x {
                MicroOp::Append(..) | MicroOp::Read(_, ReadValue::List(_)) => la = true,
                MicroOp::Write(..) | MicroOp::Read(_, ReadValue::Scalar(_)) => rw = true,
                MicroOp::ReadRange(_) => la = true,
                MicroOp::Read(_, ReadValue::Nil) => {}
            }
        }
        if la && rw {
            break;
        }
    }
    (la, rw)
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
