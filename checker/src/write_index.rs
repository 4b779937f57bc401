//! The element index: (key, value) → write id, the one lookup every list
//! read's elements and every register read's value go through.
//!
//! Key decision: built once, after every write is known, as one table of
//! (value, id) pairs grouped by key (a counting sort on the dense key ids)
//! and sorted by value within each key; a lookup is a binary search in its
//! key's run. A hash map keyed by (key, value) cost one random probe into a
//! table several times the size of the data per write and per lookup —
//! ~45 % of `Observations::new` in `perf` at 1M and 10M transactions — where
//! this table is 16 B per write, built with sequential passes, and a key's
//! run is a few cache lines. Values that are not integers (strings,
//! keywords: foreign histories only) stay in a hash map.
//!
//! The same (key, value) written twice keeps its first writer (values must
//! be unique per key); the builder reports each later one with the first.

use rustc_hash::FxHashMap;
use store::Atom;

/// (key, value) → id of the value's first write.
#[derive(Debug, Default)]
pub struct WriteIndex<'h> {
    /// Per key, the start of its run in `ints` (`off[k]..off[k + 1]`).
    off: Vec<u32>,
    /// Integer values and their ids, by key then value.
    ints: Vec<(i64, u32)>,
    /// Other values.
    others: FxHashMap<(u32, &'h Atom), u32>,
}

/// A write of a (key, value) already written: `(later, first)` as ids of
/// the writes given to [`WriteIndex::build`].
pub type Repeat = (u32, u32);

impl<'h> WriteIndex<'h> {
    /// Indexes `writes` (key id < `nkeys`, value; iterated twice), numbered
    /// by position;
    /// returns the index and the repeated writes, by `later`. A repeated
    /// write is not in the index (its (key, value) names the first).
    pub fn build<I>(nkeys: usize, writes: I) -> (WriteIndex<'h>, Vec<Repeat>)
    where
        I: Iterator<Item = (u32, &'h Atom)> + Clone,
    {
        let mut repeats = Vec::new();
        let mut others: FxHashMap<(u32, &'h Atom), u32> = FxHashMap::default();
        let mut off = vec![0u32; nkeys + 1];
        for (id, (k, v)) in writes.clone().enumerate() {
            match v {
                Atom::Int(_) => off[k as usize + 1] += 1,
                other => {
                    if let Some(&first) = others.get(&(k, other)) {
                        repeats.push((id as u32, first));
                    } else {
                        others.insert((k, other), id as u32);
                    }
                }
            }
        }
        for k in 0..nkeys {
            off[k + 1] += off[k];
        }
        let mut ints = vec![(0i64, 0u32); off[nkeys] as usize];
        let mut fill = off.clone();
        for (id, (k, v)) in writes.enumerate() {
            if let Atom::Int(i) = v {
                let slot = &mut fill[k as usize];
                ints[*slot as usize] = (*i, id as u32);
                *slot += 1;
            }
        }
        drop(fill);
        let mut index = WriteIndex { off, ints, others };
        index.sort_runs(&mut repeats);
        repeats.sort_unstable();
        (index, repeats)
    }

    /// Sorts each key's run by (value, id) and drops every repeated value
    /// but its first (lowest) id, recording the others in `repeats`.
    fn sort_runs(&mut self, repeats: &mut Vec<Repeat>) {
        let mut w = 0usize;
        let mut start = 0usize;
        for k in 0..self.off.len() - 1 {
            let end = self.off[k + 1] as usize;
            let run = &mut self.ints[start..end];
            run.sort_unstable();
            let from = w;
            for i in start..end {
                let (v, id) = self.ints[i];
                match self.ints[from..w].last() {
                    Some(&(pv, first)) if pv == v => repeats.push((id, first)),
                    _ => {
                        self.ints[w] = (v, id);
                        w += 1;
                    }
                }
            }
            self.off[k + 1] = w as u32;
            start = end;
        }
        self.ints.truncate(w);
        self.ints.shrink_to_fit();
    }

    /// The id of `v`'s first write to key `k`.
    #[inline]
    pub fn get(&self, k: u32, v: &Atom) -> Option<u32> {
        match v {
            Atom::Int(i) => {
                let (a, b) = (self.off.get(k as usize)?, self.off.get(k as usize + 1)?);
                let run = &self.ints[*a as usize..*b as usize];
                let at = run.binary_search_by_key(i, |e| e.0).ok()?;
                Some(run[at].1)
            }
            other => self.others.get(&(k, other)).copied(),
        }
    }

    /// Renumbers the ids: `new[id]` for each id in the index.
    pub fn renumber(&mut self, new: &[u32]) {
        self.ints.iter_mut().for_each(|e| e.1 = new[e.1 as usize]);
        self.others
            .values_mut()
            .for_each(|id| *id = new[*id as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atoms(xs: &[(u32, i64)]) -> Vec<(u32, Atom)> {
        xs.iter().map(|&(k, v)| (k, Atom::Int(v))).collect()
    }

    #[test]
    fn finds_each_first_write_and_reports_repeats() {
        let a = atoms(&[(0, 5), (1, 5), (0, 3), (0, 5), (2, -1), (1, 5), (0, 9)]);
        let refs: Vec<(u32, &Atom)> = a.iter().map(|(k, v)| (*k, v)).collect();
        let (ix, repeats) = WriteIndex::build(3, refs.iter().copied());
        assert_eq!(repeats, vec![(3, 0), (5, 1)]);
        assert_eq!(ix.get(0, &Atom::Int(5)), Some(0));
        assert_eq!(ix.get(1, &Atom::Int(5)), Some(1));
        assert_eq!(ix.get(0, &Atom::Int(3)), Some(2));
        assert_eq!(ix.get(2, &Atom::Int(-1)), Some(4));
        assert_eq!(ix.get(0, &Atom::Int(9)), Some(6));
        assert_eq!(ix.get(2, &Atom::Int(5)), None);
        assert_eq!(ix.get(7, &Atom::Int(5)), None, "a key beyond the table");
    }

    #[test]
    fn other_values_and_renumbering() {
        let s = Atom::Str("x".into());
        let i = Atom::Int(1);
        let refs = [(0, &s), (0, &i), (0, &s), (1, &s)];
        let (mut ix, repeats) = WriteIndex::build(2, refs.iter().copied());
        assert_eq!(repeats, vec![(2, 0)]);
        assert_eq!(ix.get(0, &s), Some(0));
        assert_eq!(ix.get(1, &s), Some(3));
        ix.renumber(&[0, 1, u32::MAX, 2]);
        assert_eq!(ix.get(1, &s), Some(2));
        assert_eq!(ix.get(0, &i), Some(1));
    }
}
