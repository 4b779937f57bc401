//! Version orders: what a workload's inference rules say about the order in
//! which each key's versions were installed, and the `ww`, `wr`, `rw`
//! dependencies between transactions that follow. A workload has one
//! [`VersionOrder`], built from the observations by its providers
//! (list-append: the prefix rule, `list_append`; rw-register: the initial
//! state, writes-follow-reads, process order and real-time order,
//! `rw_register`).

use crate::explain::Step;
use crate::graph::Edges;
use crate::observe::Read;
use crate::rels::Rel;
use crate::txn::Txns;
use store::{History, ReadValue};

/// A per-key version order and the data dependencies it implies.
pub trait VersionOrder<'h>: Sync {
    /// The `ww`, `wr` and `rw` edges between transactions (ids of `txns`),
    /// as a source that yields them on each call (what it needs to, it
    /// indexes once).
    fn edges<'s>(&'s self, txns: &'s Txns<'h>) -> Box<dyn Edges + 's>;

    /// Why `a →rel b` (a data relation), if this order implies that edge.
    fn explain(&self, txns: &Txns<'h>, history: &History, a: u32, b: u32, rel: Rel)
    -> Option<Step>;

    /// The version `read` observed, comparable with the versions other
    /// reads of its key observed (equal = the same state); `None` when the
    /// order cannot place it.
    fn read_version(&self, txns: &Txns<'h>, read: &Read) -> Option<u32>;

    /// The state of key `k` that version `version` (from
    /// [`VersionOrder::read_version`]) stands for.
    fn version_value(&self, k: u32, version: u32) -> ReadValue;
}
