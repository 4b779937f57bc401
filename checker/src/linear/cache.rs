//! The search's linearized set and its cache of configurations, both in a
//! compact form.
//!
//! Ops are given bit positions in the order of their calls, and ops that
//! never return (open: `info`, no completion) a region of their own after
//! the others. The search can linearize an op only while no earlier return
//! is pending, so the set of linearized ops that return is, in call order,
//! nearly always a run of ones, then a short window of mixed bits, then
//! zeros. A configuration is stored as that window alone: `[key, state,
//! lo | len << 32, window…, open region…]` — `lo` the count of leading
//! all-ones words, the window the words from `lo` to the last non-zero
//! one. The form is canonical (one set, one record), so records compare
//! word for word. On a single-key register history of 100,000 ops a
//! record is 4–5 words where the whole bitset was 1,563 (12.5 KB): the
//! cache went from gigabytes to megabytes (BENCHMARKS.md,
//! "Linearizability vs Porcupine").

use super::search::Memory;

/// Words of one arena chunk (512 KiB): the arena grows a chunk at a time,
/// never by doubling and copying. A record longer than a chunk gets a
/// chunk of its own.
const CHUNK_WORDS: usize = 1 << 16;

/// Words of a record before its bits.
const HEADER: usize = 3;

/// The linearized set: a bitset of `main` words (ops that return, by call)
/// then the open ops' words, with the all-ones prefix and the last
/// non-zero word of the first part kept up to date.
pub(super) struct LinSet {
    bits: Vec<u64>,
    main: usize,
    /// Leading words of `bits[..main]` that are all ones.
    lo: usize,
    /// One past the last non-zero word of `bits[..main]` (≥ `lo` is not
    /// implied: the window is `lo..max(lo, hi)`).
    hi: usize,
}

impl LinSet {
    /// A set for `main_bits` returning ops and `open_bits` open ones.
    pub(super) fn new(main_bits: usize, open_bits: usize) -> LinSet {
        let main = main_bits.div_ceil(64);
        LinSet {
            bits: vec![0; main + open_bits.div_ceil(64)],
            main,
            lo: 0,
            hi: 0,
        }
    }

    /// Adds bit `b` (absent).
    pub(super) fn insert(&mut self, b: u32) {
        let w = b as usize / 64;
        self.bits[w] |= 1 << (b % 64);
        if w < self.main {
            if w == self.lo {
                while self.lo < self.main && self.bits[self.lo] == u64::MAX {
                    self.lo += 1;
                }
            }
            self.hi = self.hi.max(w + 1);
        }
    }

    /// Removes bit `b` (present).
    pub(super) fn remove(&mut self, b: u32) {
        let w = b as usize / 64;
        self.bits[w] &= !(1 << (b % 64));
        if w < self.main {
            self.lo = self.lo.min(w);
            if w + 1 == self.hi {
                while self.hi > 0 && self.bits[self.hi - 1] == 0 {
                    self.hi -= 1;
                }
            }
        }
    }

    fn window(&self) -> (usize, usize) {
        (self.lo, self.hi.max(self.lo))
    }

    /// Words of this set's record.
    fn record_len(&self) -> usize {
        let (lo, hi) = self.window();
        HEADER + (hi - lo) + (self.bits.len() - self.main)
    }

    /// Whether `rec` is the record of (this set, `state`) under `key`.
    fn matches(&self, rec: &[u64], key: u64, state: u32) -> bool {
        let (lo, hi) = self.window();
        let len = hi - lo;
        rec[0] == key
            && rec[1] == u64::from(state)
            && rec[2] == (lo as u64 | (len as u64) << 32)
            && rec[HEADER..HEADER + len] == self.bits[lo..hi]
            && rec[HEADER + len..] == self.bits[self.main..]
    }

    fn write(&self, rec: &mut [u64], key: u64, state: u32) {
        let (lo, hi) = self.window();
        let len = hi - lo;
        rec[0] = key;
        rec[1] = u64::from(state);
        rec[2] = lo as u64 | (len as u64) << 32;
        rec[HEADER..HEADER + len].copy_from_slice(&self.bits[lo..hi]);
        rec[HEADER + len..].copy_from_slice(&self.bits[self.main..]);
    }
}

/// The configurations already explored: records of [`LinSet`]'s compact
/// form in a chunked arena, found through an open-addressing table of
/// 4-byte record ids (the key is read back from the record) and an 8-byte
/// start per record.
pub(super) struct Cache<'m> {
    /// Where its allocations are charged, and how much it holds.
    memory: &'m Memory,
    charged: usize,
    chunks: Vec<Box<[u64]>>,
    /// Words used of the last chunk.
    used: usize,
    /// Per record: chunk index << 32 | offset in it (its length is in
    /// its header).
    starts: Vec<u64>,
    /// Words of the open ops' region (the same in every record).
    open_words: usize,
    /// Record id + 1 per slot (0: empty); a power of two, at most 3/4 full.
    slots: Vec<u32>,
}

/// What [`Cache::insert`] did.
#[derive(PartialEq, Eq)]
pub(super) enum Inserted {
    New,
    Seen,
    /// It needed memory the limit does not leave.
    Full,
}

impl Drop for Cache<'_> {
    fn drop(&mut self) {
        self.memory.give(self.charged);
    }
}

impl<'m> Cache<'m> {
    pub(super) fn new(memory: &'m Memory, set: &LinSet) -> Cache<'m> {
        let charged = if memory.take(1024 * 4) { 1024 * 4 } else { 0 };
        Cache {
            memory,
            charged,
            chunks: Vec::new(),
            used: 0,
            starts: Vec::new(),
            open_words: set.bits.len() - set.main,
            slots: vec![0; 1024],
        }
    }

    /// Configurations held.
    pub(super) fn len(&self) -> usize {
        self.starts.len()
    }

    fn record(&self, r: usize) -> &[u64] {
        let at = self.starts[r];
        let off = (at & u64::from(u32::MAX)) as usize;
        let chunk = &self.chunks[(at >> 32) as usize];
        let len = HEADER + (chunk[off + 2] >> 32) as usize + self.open_words;
        &chunk[off..off + len]
    }

    fn charge(&mut self, bytes: usize) -> bool {
        let ok = self.memory.take(bytes);
        if ok {
            self.charged += bytes;
        }
        ok
    }

    /// Inserts (set, state) under `key` (a hash of both), unless it was
    /// already there or the memory it needs is not left.
    pub(super) fn insert(&mut self, key: u64, set: &LinSet, state: u32) -> Inserted {
        let mask = self.slots.len() - 1;
        let mut i = key as usize & mask;
        loop {
            match self.slots[i] {
                0 => break,
                r => {
                    if set.matches(self.record(r as usize - 1), key, state) {
                        return Inserted::Seen;
                    }
                }
            }
            i = (i + 1) & mask;
        }
        let len = set.record_len();
        let room = self.chunks.last().map_or(0, |c| c.len() - self.used);
        let new_chunk = (len > room).then(|| len.max(CHUNK_WORDS));
        // The next chunk, the record's start, and the doubled table (old
        // and new at once while it grows): charged before they are
        // allocated.
        let starts_grow = if self.starts.len() == self.starts.capacity() {
            (self.starts.capacity() + self.starts.capacity().max(64)) * 8
        } else {
            0
        };
        let table_grows = (self.len() + 1) * 4 > self.slots.len() * 3;
        let bytes = new_chunk.map_or(0, |w| w * 8)
            + starts_grow
            + if table_grows { self.slots.len() * 8 } else { 0 };
        if !self.charge(bytes) {
            return Inserted::Full;
        }
        if starts_grow > 0 {
            // Charged as its new capacity; what it had is given back.
            let had = self.starts.capacity() * 8;
            self.starts.reserve_exact(self.starts.capacity().max(64));
            self.memory.give(had);
            self.charged -= had;
        }
        if let Some(w) = new_chunk {
            self.chunks.push(vec![0; w].into_boxed_slice());
            self.used = 0;
        }
        let c = self.chunks.len() - 1;
        let at = self.used;
        set.write(&mut self.chunks[c][at..at + len], key, state);
        self.used += len;
        self.starts.push((c as u64) << 32 | at as u64);
        self.slots[i] = self.starts.len() as u32;
        if table_grows {
            let old = self.slots.len() * 4;
            self.grow();
            // The old table is freed.
            self.memory.give(old);
            self.charged -= old;
        }
        Inserted::New
    }

    fn grow(&mut self) {
        let mut slots = vec![0u32; self.slots.len() * 2];
        let mask = slots.len() - 1;
        for r in 0..self.len() {
            let mut i = self.record(r)[0] as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = r as u32 + 1;
        }
        self.slots = slots;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compact form is canonical: the same set reached by different
    /// paths is found, a different set or state is not.
    #[test]
    fn same_set_by_another_path_is_seen() {
        let memory = Memory::unlimited();
        let mut a = LinSet::new(300, 70);
        let mut cache = Cache::new(&memory, &a);
        for b in (0..130).chain([200, 310]) {
            a.insert(b);
        }
        assert!(cache.insert(7, &a, 1) == Inserted::New);
        let mut b = LinSet::new(300, 70);
        for bit in [310, 200].into_iter().chain((0..130).rev()) {
            b.insert(bit);
        }
        b.insert(250);
        b.remove(250);
        assert_eq!((a.lo, a.window()), (b.lo, b.window()));
        assert!(cache.insert(7, &b, 1) == Inserted::Seen);
        assert!(cache.insert(7, &b, 2) == Inserted::New);
        b.remove(310);
        assert!(cache.insert(7, &b, 1) == Inserted::New);
        b.remove(0);
        assert_eq!(b.lo, 0);
        assert!(cache.insert(7, &b, 1) == Inserted::New);
        assert_eq!(cache.len(), 4);
        // Every record reads back as written.
        for r in 0..cache.len() {
            assert_eq!(cache.record(r)[0], 7);
        }
    }

    /// Thousands of records across chunks and table growths stay findable.
    #[test]
    fn many_records_stay_findable() {
        let memory = Memory::unlimited();
        let mut s = LinSet::new(100_000, 0);
        let mut cache = Cache::new(&memory, &s);
        for b in 0..20_000u32 {
            s.insert(b);
            assert!(cache.insert(u64::from(b) * 0x9e37_79b9, &s, b % 3) == Inserted::New);
        }
        for b in (0..20_000u32).rev() {
            assert!(cache.insert(u64::from(b) * 0x9e37_79b9, &s, b % 3) == Inserted::Seen);
            s.remove(b);
        }
        assert_eq!((s.lo, s.hi), (0, 0));
    }

    /// Under a small limit the cache says `Full` instead of allocating.
    #[test]
    fn full_under_the_limit() {
        let memory = Memory::new(64 * 1024);
        let mut s = LinSet::new(1000, 0);
        let mut cache = Cache::new(&memory, &s);
        let mut full = false;
        for b in 0..1000u32 {
            s.insert(b);
            let inserted = cache.insert(u64::from(b), &s, 0);
            assert!(inserted != Inserted::Seen, "a new set was seen");
            if inserted == Inserted::Full {
                full = true;
                break;
            }
        }
        assert!(full, "a chunk of 512 KiB does not fit in 64 KiB");
    }
}
