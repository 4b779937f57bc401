//! [`OpenCalls`]: the client invocations a [`super::HistoryBuilder`] holds
//! until their completions arrive, by process.

use crate::history::MicroOp;
use rustc_hash::FxHashMap;

/// Processes below this have a slot of their own (a vector indexed by the
/// id: no hashing per op); others go into a map.
const DENSE: u64 = 1 << 16;

/// An open invocation: its position and its micro-ops.
type Open = (usize, Vec<MicroOp>);

/// Open invocations by process id (see the module doc).
#[derive(Debug, Default)]
pub(super) struct OpenCalls {
    dense: Vec<Option<Open>>,
    sparse: FxHashMap<u64, Open>,
}

impl OpenCalls {
    /// Takes `process`'s open invocation, if any.
    #[inline]
    pub(super) fn remove(&mut self, process: u64) -> Option<Open> {
        if process < DENSE {
            self.dense.get_mut(process as usize)?.take()
        } else {
            self.sparse.remove(&process)
        }
    }

    /// Makes `open` `process`'s open invocation (it has none).
    #[inline]
    pub(super) fn insert(&mut self, process: u64, open: Open) {
        if process < DENSE {
            let id = process as usize;
            if id >= self.dense.len() {
                self.dense.resize_with(id + 1, || None);
            }
            self.dense[id] = Some(open);
        } else {
            self.sparse.insert(process, open);
        }
    }

    /// Every open invocation, in no particular order.
    pub(super) fn into_values(self) -> impl Iterator<Item = Open> {
        self.dense
            .into_iter()
            .flatten()
            .chain(self.sparse.into_values())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_processes_keep_their_own_invocation() {
        let mut o = OpenCalls::default();
        for p in [3, DENSE - 1, DENSE, u64::MAX] {
            assert!(o.remove(p).is_none());
            o.insert(p, (p as usize, Vec::new()));
        }
        assert_eq!(o.remove(DENSE).map(|(pos, _)| pos), Some(DENSE as usize));
        assert!(o.remove(DENSE).is_none());
        assert!(o.remove(4).is_none());
        let mut left: Vec<usize> = o.into_values().map(|(pos, _)| pos).collect();
        left.sort_unstable();
        assert_eq!(left, vec![3, DENSE as usize - 1, u64::MAX as usize]);
    }
}
