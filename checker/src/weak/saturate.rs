//! Saturation (Biswas & Enea, OOPSLA 2019, §4): the
//! commit-order edges each level's axiom forces, computed in one pass since
//! no axiom's premise mentions the commit order.
//!
//! For a read α of key x in t3 with writer t1, every other t2 writing x
//! that t3 "saw" must commit before t1 (edge t2 → t1), where "saw" is:
//! - read committed: an earlier read of t3 read from t2;
//! - read atomic: t3 read from t2, or t2 precedes t3 in its session;
//! - causal: t2 happens before t3 ((so ∪ wr)⁺).
//!
//! Key decisions (after AWDIT, PLDI 2025): per reader, writers are bucketed
//! by the keys they write, and a read of x replaces x's bucket by its own
//! writer (the earlier ones already precede it), so read committed costs
//! the size of the writers seen rather than reads²; writers of more than
//! √(all writes) keys are not bucketed but looked up per read (there are at
//! most √ of them), which bounds both at O(n^1.5); per session only the
//! latest writer of x that precedes the reader matters (earlier ones precede
//! it in session order), so causal costs O(reads · sessions · log) with one
//! vector clock per transaction.

use super::observe::{INIT, Observations};
use rustc_hash::FxHashSet;

pub mod causal;

/// Why an edge was inferred, weakest level first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cat {
    /// Read committed: the reader read from `from` earlier.
    Rc,
    /// Read atomic: the reader read from `from` (another key).
    RaWr,
    /// Read atomic: the reader read the same key from `from` too.
    Nr,
    /// Read atomic: `from` precedes the reader in its session.
    RaSo,
    /// Causal: `from` happens before the reader.
    Cc,
}

/// An inferred commit-order edge `from → to` (`to` may be [`INIT`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inferred {
    /// The transaction that must commit first.
    pub from: u32,
    /// The writer the reader read from (or [`INIT`]).
    pub to: u32,
    /// The axiom (level) that forces it.
    pub cat: Cat,
    /// The reading transaction.
    pub reader: u32,
    /// The key read.
    pub key: u32,
}

/// Where the saturation puts the edges it infers.
pub trait Sink {
    /// Takes one edge.
    fn edge(&mut self, e: Inferred);
}

impl Sink for Vec<Inferred> {
    #[inline]
    fn edge(&mut self, e: Inferred) {
        self.push(e);
    }
}

/// The ends of the inferred edges alone, 8 B an edge instead of 20, for
/// the acyclicity test of a level whose edges all count (read committed's
/// alone): an edge into the initial state is only flagged, a self-loop
/// (none is made) left out. What a report needs is inferred again.
#[derive(Debug, Default)]
pub struct Ends {
    /// `(from, to)` of each edge between transactions.
    pub pairs: Vec<(u32, u32)>,
    /// Whether an edge went into the initial state.
    pub into_init: bool,
}

impl Sink for Ends {
    #[inline]
    fn edge(&mut self, e: Inferred) {
        if e.to == INIT {
            self.into_init = true;
        } else if e.from != e.to {
            self.pairs.push((e.from, e.to));
        }
    }
}

/// Per-reader buckets of writers by key, reused from reader to reader: a
/// cleared bucket keeps its allocation (a map of `Vec`s would free and
/// allocate one per key and reader), and keys (dense interned ids) find
/// their bucket by a flat index, no hashing. Same contents and order as a
/// `FxHashMap<u32, Vec<u32>>`.
#[derive(Default)]
struct Buckets {
    /// Bucket of each key ([`NONE`]: none yet for this reader).
    slot: Vec<u32>,
    /// The keys with a bucket, in the order their buckets were made.
    keys: Vec<u32>,
    pool: Vec<Vec<u32>>,
}

/// A key without a bucket.
const NONE: u32 = u32::MAX;

impl Buckets {
    fn clear(&mut self) {
        for (&k, b) in self.keys.iter().zip(&mut self.pool) {
            b.clear();
            self.slot[k as usize] = NONE;
        }
        self.keys.clear();
    }

    /// The bucket of `key`, created empty if it has none.
    fn entry(&mut self, key: u32) -> &mut Vec<u32> {
        let k = key as usize;
        if k >= self.slot.len() {
            self.slot.resize(k + 1, NONE);
        }
        if self.slot[k] == NONE {
            self.slot[k] = self.keys.len() as u32;
            self.keys.push(key);
            if self.keys.len() > self.pool.len() {
                self.pool.push(Vec::new());
            }
        }
        &mut self.pool[self.slot[k] as usize]
    }

    fn index(&self, key: u32) -> Option<usize> {
        match self.slot.get(key as usize) {
            Some(&i) if i != NONE => Some(i as usize),
            _ => None,
        }
    }

    fn get_mut(&mut self, key: u32) -> Option<&mut Vec<u32>> {
        let i = self.index(key)?;
        self.pool.get_mut(i)
    }

    fn get(&self, key: u32) -> &[u32] {
        self.index(key)
            .and_then(|i| self.pool.get(i))
            .map_or(&[][..], Vec::as_slice)
    }
}

/// A set of transactions, emptied in O(1) from reader to reader (a
/// generation stamp per transaction instead of a hash set). The stamps
/// are allocated at the first insert: readers of few values never ask
/// ([`new_writer`]).
struct Seen {
    stamp: Vec<u32>,
    n: usize,
    now: u32,
}

impl Seen {
    fn new(n: usize) -> Seen {
        Seen {
            stamp: Vec::new(),
            n,
            now: 0,
        }
    }

    fn clear(&mut self) {
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.stamp.fill(0);
            self.now = 1;
        }
    }

    /// Adds `t`; whether it was new.
    fn insert(&mut self, t: u32) -> bool {
        if self.stamp.is_empty() {
            self.stamp = vec![0; self.n];
        }
        let s = &mut self.stamp[t as usize];
        let new = *s != self.now;
        *s = self.now;
        new
    }
}

/// Read committed edges.
pub fn read_committed(obs: &Observations, out: &mut impl Sink) {
    let mut pending = Buckets::default();
    let mut seen = Seen::new(obs.n);
    let mut heavy: Vec<u32> = Vec::new();
    for t3 in 0..obs.n as u32 {
        let reads = obs.reads(t3);
        if reads.len() < 2 {
            continue;
        }
        pending.clear();
        seen.clear();
        heavy.clear();
        for (i, r) in reads.iter().enumerate() {
            let (x, w) = (r.key, r.writer);
            for &t2 in &heavy {
                if t2 != w && obs.writes_key(t2, x) {
                    out.edge(Inferred {
                        from: t2,
                        to: w,
                        cat: Cat::Rc,
                        reader: t3,
                        key: x,
                    });
                }
            }
            if let Some(p) = pending.get_mut(x) {
                for &t2 in p.iter() {
                    if t2 != w {
                        out.edge(Inferred {
                            from: t2,
                            to: w,
                            cat: Cat::Rc,
                            reader: t3,
                            key: x,
                        });
                    }
                }
                if w != INIT {
                    // The earlier writers now precede w, which precedes
                    // whatever a later read of x returns.
                    p.clear();
                    p.push(w);
                }
            } else if w != INIT {
                pending.entry(x).push(w);
            }
            if w != INIT && new_writer(reads, i, &mut seen) {
                if obs.heavy(w) {
                    heavy.push(w);
                    continue;
                }
                for &y in obs.writes(w) {
                    if y != x {
                        // w is new to this reader: not in any bucket yet.
                        pending.entry(y).push(w);
                    }
                }
            }
        }
    }
}

/// Whether the `i`-th read of `reads` (asked in order) is the first to
/// read from its writer. Up to [`SCAN_READS`] reads a scan of the earlier
/// ones (no access to the stamp of a writer anywhere in the history: most
/// readers read a few values), beyond it the set `seen`.
fn new_writer(reads: &[super::observe::Read], i: usize, seen: &mut Seen) -> bool {
    let w = reads[i].writer;
    if reads.len() <= SCAN_READS {
        return !reads[..i].iter().any(|q| q.writer == w);
    }
    seen.insert(w)
}

/// Read atomic edges (those of read committed are not repeated).
pub fn read_atomic(obs: &Observations, out: &mut impl Sink) {
    let mut bucket = Buckets::default();
    let mut read_from: FxHashSet<(u32, u32)> = FxHashSet::default();
    let mut seen = Seen::new(obs.n);
    let mut heavy: Vec<u32> = Vec::new();
    for t3 in 0..obs.n as u32 {
        let reads = obs.reads(t3);
        // A reader of one value infers nothing: the only writer it saw is
        // the one it read from (`t2 == t1`). A third of the transactions
        // of a list-append history read once.
        if reads.len() < 2 {
            continue;
        }
        bucket.clear();
        read_from.clear();
        seen.clear();
        heavy.clear();
        for (i, r) in reads.iter().enumerate() {
            read_from.insert((r.key, r.writer));
            if r.writer != INIT && new_writer(reads, i, &mut seen) {
                if obs.heavy(r.writer) {
                    heavy.push(r.writer);
                    continue;
                }
                for &y in obs.writes(r.writer) {
                    bucket.entry(y).push(r.writer);
                }
            }
        }
        for &(x, t1) in &read_from {
            let light = bucket.get(x);
            let heavy_x = heavy.iter().filter(|&&h| obs.writes_key(h, x));
            for &t2 in light.iter().chain(heavy_x) {
                if t2 != t1 {
                    let cat = if read_from.contains(&(x, t2)) {
                        Cat::Nr
                    } else {
                        Cat::RaWr
                    };
                    out.edge(Inferred {
                        from: t2,
                        to: t1,
                        cat,
                        reader: t3,
                        key: x,
                    });
                }
            }
        }
    }
    // Session order: the latest earlier writer of x in t3's session.
    // Per key ([`NONE`]: none yet in this session), flat; the keys set in
    // the session are reset after it.
    let mut last: Vec<u32> = Vec::new();
    let mut set: Vec<u32> = Vec::new();
    let mut done: FxHashSet<(u32, u32)> = FxHashSet::default();
    for s in &obs.sessions {
        for &k in &set {
            last[k as usize] = NONE;
        }
        set.clear();
        for &t3 in s {
            let reads = obs.reads(t3);
            done.clear();
            for (i, r) in reads.iter().enumerate() {
                if repeats_earlier(reads, i, &mut done) {
                    continue;
                }
                if let Some(&t2) = last.get(r.key as usize)
                    && t2 != NONE
                    && t2 != r.writer
                {
                    out.edge(Inferred {
                        from: t2,
                        to: r.writer,
                        cat: Cat::RaSo,
                        reader: t3,
                        key: r.key,
                    });
                }
            }
            for &y in obs.writes(t3) {
                let y = y as usize;
                if y >= last.len() {
                    last.resize(y + 1, NONE);
                }
                if last[y] == NONE {
                    set.push(y as u32);
                }
                last[y] = t3;
            }
        }
    }
}

/// Whether an earlier read of `reads` than the `i`-th (asked in order)
/// has its key and writer (a repeat adds no edge). A transaction's reads
/// are mostly few: up to [`SCAN_READS`] a scan, beyond it the set `done`.
fn repeats_earlier(
    reads: &[super::observe::Read],
    i: usize,
    done: &mut FxHashSet<(u32, u32)>,
) -> bool {
    let r = &reads[i];
    if reads.len() <= SCAN_READS {
        return reads[..i]
            .iter()
            .any(|q| q.key == r.key && q.writer == r.writer);
    }
    !done.insert((r.key, r.writer))
}

/// Reads per transaction up to which [`repeats_earlier`] scans.
const SCAN_READS: usize = 16;

/// Kahn's topological order (also the weak check's acyclicity fast path,
/// `acyclic.rs`) of the graph whose successors of `u` are
/// `succ[off[u]..off[u + 1]]` and whose in-degrees are `indeg`: a node
/// enters once all its predecessors have. Nodes on or behind a cycle never
/// enter, so the order is shorter than the graph by exactly those.
pub(super) fn kahn_order(off: &[u32], succ: &[u32], mut indeg: Vec<u32>) -> Vec<u32> {
    // Sized once for every node (a filtered `collect` grows by doubling,
    // each copy faulting in fresh pages on a big history).
    let mut order: Vec<u32> = Vec::with_capacity(indeg.len());
    order.extend((0..indeg.len() as u32).filter(|&u| indeg[u as usize] == 0));
    let mut head = 0;
    while let Some(&u) = order.get(head) {
        head += 1;
        for &v in &succ[off[u as usize] as usize..off[u as usize + 1] as usize] {
            let d = &mut indeg[v as usize];
            *d -= 1;
            if *d == 0 {
                order.push(v);
            }
        }
    }
    order
}
