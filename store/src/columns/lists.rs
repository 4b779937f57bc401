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
//! Invariant: what every read holds is unchanged (a `ValList` compares
//! as its elements); a read that is not a prefix of its key's longest
//! (an invalid history) keeps its own buffer.

use crate::history::{Key, MicroOp, ReadValue, ValList};
use rustc_hash::FxHashMap;

/// Makes the list reads in `mops` that are prefixes of their key's longest
/// one views of its buffer (see the module doc).
pub(crate) fn share_per_key(mops: &mut [MicroOp]) {
    let mut longest: FxHashMap<Key, ValList> = FxHashMap::default();
    for m in mops.iter() {
        let MicroOp::Read(k, ReadValue::List(l)) = m else {
            continue;
        };
        match longest.get_mut(k) {
            Some(cur) if cur.len() < l.len() => *cur = l.clone(),
            Some(_) => {}
            None if l.is_empty() => {}
            None => {
                longest.insert(k.clone(), l.clone());
            }
        }
    }
    if longest.is_empty() {
        return;
    }
    for m in mops.iter_mut() {
        let MicroOp::Read(k, ReadValue::List(l)) = m else {
            continue;
        };
        let n = l.len();
        let Some(cur) = longest.get(k).filter(|_| n > 0) else {
            continue;
        };
        // Views of one buffer: the shorter is a prefix of the longer.
        if !l.shares(cur) && cur[..n] == l[..] {
            *l = cur.prefix(n);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::history::Val;

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
            read(1, &[1, 2]),
            MicroOp::Append(Key::int(1), Val::int(3)),
            read(1, &[1, 2, 3]),
            read(2, &[1, 2]),
            read(1, &[1]),
            read(1, &[1, 9]),
            read(1, &[]),
            MicroOp::Read(Key::int(1), ReadValue::Nil),
        ];
        let before = mops.clone();
        share_per_key(&mut mops);
        assert_eq!(mops, before, "every read holds what it held");
        let (a, b, c) = (list(&mops[0]), list(&mops[2]), list(&mops[4]));
        assert!(a.shares(b) && b.shares(c));
        // Another key, and a read that diverges, keep buffers of their own.
        assert!(!list(&mops[3]).shares(b));
        assert!(!list(&mops[5]).shares(b));
        assert_eq!(list(&mops[5]).to_vec(), [Val::int(1), Val::int(9)]);
    }
}
