//! The observations' (key, value) → write id index.
//!
//! Key decision: integer values (what harness writes) of a key whose values
//! are dense (harness appends 1, 2, 3, … per key) live in one flat table, 4 B
//! a value and no hashing (a hash map costs several times that per
//! append); other keys' integers, and other atoms, in hash maps keyed
//! inline, so probes never dereference into the history.

use crate::observe::NO;
use rustc_hash::FxHashMap;
use store::Atom;

/// (key, value) → write id: dense keys' integers in one flat table, the
/// rest hashed (module doc).
#[derive(Debug, Default)]
pub(crate) struct WriteIds<'h> {
    /// Per key: its slice of `dense`, if its integer values are dense.
    spans: Vec<Span>,
    /// Write id per (key, value) of the dense keys ([`NO`]: none).
    dense: Vec<u32>,
    ints: FxHashMap<(u32, i64), u32>,
    others: FxHashMap<(u32, &'h Atom), u32>,
}

/// A key's integer values `lo ..= lo + len - 1` at `dense[start ..]`;
/// `len == 0`: the key's integers are in the hash map.
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    lo: i64,
    start: usize,
    len: usize,
}

/// A key's integer values are kept dense when they span at most this many
/// slots per value written, plus [`SLACK`].
const SPREAD: usize = 2;
const SLACK: usize = 64;

impl<'h> WriteIds<'h> {
    /// Sized for the written integers of each key (`ranges[k]`: lowest,
    /// highest, how many).
    pub(crate) fn new(ranges: &[(i64, i64, usize)]) -> WriteIds<'h> {
        let mut ids = WriteIds::default();
        let mut hashed = 0;
        ids.spans = ranges
            .iter()
            .map(|&(lo, hi, n)| {
                let len = (hi as i128 - lo as i128 + 1).max(0) as u128;
                if n == 0 || len > (n * SPREAD + SLACK) as u128 {
                    hashed += n;
                    return Span::default();
                }
                let start = ids.dense.len();
                ids.dense.resize(start + len as usize, NO);
                Span {
                    lo,
                    start,
                    len: len as usize,
                }
            })
            .collect();
        ids.ints.reserve(hashed);
        ids
    }

    /// The slot of integer `i` of key `k` in `dense`; `None`: hashed
    /// (a sparse key, or a value `new` was not told of).
    #[inline]
    fn slot(&self, k: u32, i: i64) -> Option<usize> {
        let s = self.spans.get(k as usize)?;
        let off = usize::try_from(i as i128 - s.lo as i128).ok()?;
        (off < s.len).then_some(s.start + off)
    }

    #[inline]
    pub(crate) fn get(&self, k: u32, v: &Atom) -> Option<u32> {
        match v {
            Atom::Int(i) => match self.slot(k, *i) {
                Some(d) => Some(self.dense[d]).filter(|&id| id != NO),
                None => self.ints.get(&(k, *i)).copied(),
            },
            other => self.others.get(&(k, other)).copied(),
        }
    }

    /// Inserts `id` unless present; returns the id already there.
    pub(crate) fn insert(&mut self, k: u32, v: &'h Atom, id: u32) -> Option<u32> {
        let slot = match v {
            Atom::Int(i) => match self.slot(k, *i) {
                Some(d) => &mut self.dense[d],
                None => return first(self.ints.entry((k, *i)), id),
            },
            other => return first(self.others.entry((k, other)), id),
        };
        if *slot == NO {
            *slot = id;
            None
        } else {
            Some(*slot)
        }
    }
}

/// Inserts `id` at a vacant entry; the id already there otherwise.
fn first<K>(e: std::collections::hash_map::Entry<'_, K, u32>, id: u32) -> Option<u32> {
    use std::collections::hash_map::Entry;
    match e {
        Entry::Occupied(o) => Some(*o.get()),
        Entry::Vacant(e) => {
            e.insert(id);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_ids_dense_sparse_and_other_atoms_agree() {
        // Key 0 dense (1..=3), key 1 sparse (two values far apart), key 2
        // never written as an integer.
        let mut ids = WriteIds::new(&[(1, 3, 3), (5, 1 << 40, 2), (i64::MAX, i64::MIN, 0)]);
        assert!(ids.spans[0].len == 3 && ids.spans[1].len == 0);
        let s = Atom::Str("x".into());
        let a = [Atom::Int(1), Atom::Int(3), Atom::Int(5), Atom::Int(1 << 40)];
        assert_eq!(ids.insert(0, &a[0], 7), None);
        assert_eq!(ids.insert(0, &a[1], 8), None);
        assert_eq!(ids.insert(1, &a[2], 9), None);
        assert_eq!(ids.insert(1, &a[3], 10), None);
        assert_eq!(ids.insert(2, &s, 11), None);
        // A value outside the span it was sized for still gets an id.
        assert_eq!(ids.insert(0, &a[3], 12), None);
        assert_eq!(ids.insert(0, &a[0], 13), Some(7), "repeated value");
        let got: Vec<_> = [
            (0, &a[0]),
            (0, &a[1]),
            (1, &a[2]),
            (1, &a[3]),
            (2, &s),
            (0, &a[3]),
        ]
        .iter()
        .map(|&(k, v)| ids.get(k, v))
        .collect();
        assert_eq!(got, [7, 8, 9, 10, 11, 12].map(Some));
        assert_eq!(
            ids.get(0, &Atom::Int(2)),
            None,
            "in the span, never written"
        );
        assert_eq!(ids.get(0, &Atom::Int(-4)), None);
        assert_eq!(ids.get(1, &a[0]), None);
        assert_eq!(ids.get(3, &a[0]), None, "unknown key");
    }
}
