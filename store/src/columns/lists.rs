//! One buffer per key for a loaded history's list reads.
//!
//! Why: the readers share a key's list reads as they go (`crate::list`),
//! but a buffer that runs out of room is replaced by one twice its size
//! and the reads made before keep the old one alive, and each parsing
//! thread has buffers of its own. At 1M list-append transactions that is
//! 116k buffers holding 2.2M elements (and their spare room) for 1.25M
//! appended values. Once the history is whole, every read that is a
//! prefix of its key's longest read is made a view of that read's
//! buffer, and the others are freed (39k buffers, 1.19M elements).
//!
//! Key decision: the longest read's buffer is kept as it is, spare room
//! and all, rather than copied into one of exact size: the copies went
//! into fresh pages while the freed buffers' pages (mostly the parsing
//! threads') were not reused, and the 1M check's peak grew by 16 MB
//! instead of shrinking (BENCHMARKS.md, h15-mem).
//!
//! Invariants: what every read holds is unchanged (a `ValList` compares
//! as its elements); a read that is not a prefix of its key's longest
//! (an invalid history) keeps its own buffer. "Longest" is the longest
//! met walking back from the end (in a valid history, the key's longest;
//! a longer read met later becomes the target, and the reads moved before
//! keep their equal views). A buffer is known by its first element's
//! address: the pass allocates no buffer, so no live one can take the
//! address of one it frees.

use crate::history::{Atom, Key, MicroOp, MopKinds, ReadValue, Val, ValList};
use rustc_hash::FxHashMap;

/// A key's longest read so far (walking back from the history's end), and
/// the last other buffer found to hold a prefix of it.
struct Target {
    list: ValList,
    /// The first element of that buffer, and how many of its elements
    /// are known to be the target's (views of one buffer are prefixes of
    /// each other, so a shorter view of it needs no comparison).
    seen: *const Val,
    seen_len: usize,
}

/// Integer keys below this (what harness writes) find their [`Target`] by
/// index, not by hash: the lookups were half of this pass's cost.
const DENSE_KEYS: i64 = 1 << 16;

/// Each key's [`Target`].
#[derive(Default)]
struct Targets {
    dense: Vec<Option<Target>>,
    sparse: FxHashMap<Key, Target>,
}

impl Targets {
    fn dense_index(k: &Key) -> Option<usize> {
        match k.0 {
            Atom::Int(i) if (0..DENSE_KEYS).contains(&i) => Some(i as usize),
            _ => None,
        }
    }

    fn get_mut(&mut self, k: &Key) -> Option<&mut Target> {
        match Targets::dense_index(k) {
            Some(i) => self.dense.get_mut(i)?.as_mut(),
            None => self.sparse.get_mut(k),
        }
    }

    fn insert(&mut self, k: &Key, t: Target) {
        match Targets::dense_index(k) {
            Some(i) => {
                if i >= self.dense.len() {
                    self.dense.resize_with(i + 1, || None);
                }
                self.dense[i] = Some(t);
            }
            None => {
                self.sparse.insert(k.clone(), t);
            }
        }
    }
}

/// Micro-ops from which [`share_per_key`] walks the arena in two halves,
/// side by side.
const PARALLEL_MOPS: usize = 1 << 16;

/// Makes the list reads in `mops` that are prefixes of their key's longest
/// one views of its buffer (see the module doc), and returns the kinds of
/// micro-op it walked past (the history's census: this pass visits every
/// micro-op anyway). A big arena is walked in two halves side by side, each
/// sharing within itself: a key whose reads straddle the middle keeps one
/// buffer per half (a few keys; the reads hold the same elements).
pub(crate) fn share_per_key(mops: &mut [MicroOp]) -> MopKinds {
    if mops.len() < PARALLEL_MOPS {
        return share_run(mops);
    }
    let (front, back) = mops.split_at_mut(mops.len() / 2);
    std::thread::scope(|s| {
        let front = s.spawn(|| share_run(front));
        let back = share_run(back);
        match front.join() {
            Ok(front) => front | back,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// [`share_per_key`] on one run of the arena: one pass, from the end
/// (where a key's reads are longest), one lookup per read, and about one
/// comparison per buffer rather than per read.
fn share_run(mops: &mut [MicroOp]) -> MopKinds {
    let mut targets = Targets::default();
    let mut kinds = MopKinds::default();
    for m in mops.iter_mut().rev() {
        kinds |= MopKinds::of(m);
        let MicroOp::Read(k, ReadValue::List(l)) = m else {
            continue;
        };
        let n = l.len();
        if n == 0 {
            continue;
        }
        let Some(t) = targets.get_mut(k) else {
            let (seen, list) = (l.as_ptr(), l.clone());
            targets.insert(
                k,
                Target {
                    list,
                    seen,
                    seen_len: n,
                },
            );
            continue;
        };
        if n > t.list.len() {
            // Reads already moved keep their (equal) views of the old one.
            *t = Target {
                list: l.clone(),
                seen: l.as_ptr(),
                seen_len: n,
            };
        } else if l.as_ptr() == t.list.as_ptr() {
            // Already a view of the target's buffer.
        } else if l.as_ptr() == t.seen && n <= t.seen_len {
            *l = t.list.prefix(n);
        } else if t.list[..n] == l[..] {
            (t.seen, t.seen_len) = (l.as_ptr(), n);
            *l = t.list.prefix(n);
        }
    }
    kinds
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read(k: i64, vals: &[i64]) -> MicroOp {
        let l: ValList = vals.iter().map(|&v| Val::int(v)).collect();
        MicroOp::Read(Key::int(k), ReadValue::List(l))
    }

    fn list(m: &MicroOp) -> &ValList {
        match m {
            MicroOp::Read(_, ReadValue::List(l)) => l,
            _ => unreachable!("a list read"),
        }
    }

    #[test]
    fn prefixes_of_a_keys_longest_read_share_one_buffer_and_keep_their_elements() {
        let mut mops = vec![
            read(1, &[1, 9]),
            read(1, &[1, 2]),
            MicroOp::Append(Key::int(1), Val::int(3)),
            read(1, &[1]),
            read(2, &[1, 2]),
            read(1, &[1, 2, 3]),
            read(1, &[]),
            MicroOp::Read(Key::int(1), ReadValue::Nil),
        ];
        let before = mops.clone();
        let kinds = share_per_key(&mut mops);
        assert_eq!(mops, before, "every read holds what it held");
        assert_eq!(
            kinds,
            MopKinds::APPEND | MopKinds::READ_LIST | MopKinds::READ_NIL
        );
        let (a, b, c) = (list(&mops[1]), list(&mops[3]), list(&mops[5]));
        assert!(a.shares(c) && b.shares(c));
        // Another key, and a read that diverges, keep buffers of their own.
        assert!(!list(&mops[4]).shares(c));
        assert!(!list(&mops[0]).shares(c));
        assert_eq!(list(&mops[0]).to_vec(), [Val::int(1), Val::int(9)]);
    }

    /// Views of one other buffer are compared once and moved together;
    /// a longer view of it that is not a prefix stays.
    #[test]
    fn views_of_one_other_buffer_move_together() {
        let other: ValList = [1, 2, 7].iter().map(|&v| Val::int(v)).collect();
        let view = |n: usize| MicroOp::Read(Key::int(1), ReadValue::List(other.prefix(n)));
        let mut mops = vec![view(3), view(1), view(2), read(1, &[1, 2, 3, 4])];
        // Keys looked up by hash: a string, a big integer.
        for k in [Key(Atom::Str("k".into())), Key::int(1 << 40)] {
            for vals in [&[1][..], &[1, 2]] {
                let l: ValList = vals.iter().map(|&v| Val::int(v)).collect();
                mops.push(MicroOp::Read(k.clone(), ReadValue::List(l)));
            }
        }
        let before = mops.clone();
        share_per_key(&mut mops);
        assert_eq!(mops, before);
        let target = list(&mops[3]);
        assert!(list(&mops[1]).shares(target) && list(&mops[2]).shares(target));
        assert!(list(&mops[0]).shares(&other) && !list(&mops[0]).shares(target));
        assert!(list(&mops[4]).shares(list(&mops[5])) && list(&mops[6]).shares(list(&mops[7])));
        assert!(!list(&mops[4]).shares(list(&mops[6])));
    }

    /// An arena walked in two halves: what every read holds is unchanged,
    /// a key whose reads lie in one half shares one buffer, and the kinds
    /// are both halves'.
    #[test]
    fn a_big_arena_is_shared_in_halves() {
        let keys = 2 * PARALLEL_MOPS as i64 / 10;
        let mut mops = Vec::new();
        let vals: Vec<i64> = (0..8).collect();
        for k in 0..keys {
            for n in 1..=8 {
                // Each read its own buffer, as two parsing threads' may be.
                mops.push(read(k, &vals[..n]));
            }
            mops.push(MicroOp::Append(Key::int(k), Val::int(8)));
            mops.push(MicroOp::Write(Key::int(k), Val::int(9)));
        }
        assert!(mops.len() >= PARALLEL_MOPS);
        let before = mops.clone();
        let kinds = share_per_key(&mut mops);
        assert_eq!(mops, before, "every read holds what it held");
        assert_eq!(
            kinds,
            MopKinds::APPEND | MopKinds::WRITE | MopKinds::READ_LIST,
            "the kinds of both halves"
        );
        let mid = mops.len() / 2;
        for k in 0..keys as usize {
            let at = k * 10;
            if at < mid && at + 10 > mid {
                continue; // straddles the halves
            }
            let longest = list(&mops[at + 7]);
            assert!(
                (at..at + 7).all(|i| list(&mops[i]).shares(longest)),
                "key {k}: every read a view of its longest"
            );
        }
    }
}
