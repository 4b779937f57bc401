//! A directed graph kept acyclic with an incremental topological order
//! (Pearce–Kelly): adding `a → b` with `ord[a] < ord[b]` is O(1); otherwise
//! only nodes ordered between `b` and `a` are searched and reordered. Every
//! search is an explicit-stack DFS charged to the [`Budget`].
//!
//! [`Dag::closure`] snapshots the whole reachability relation as bit rows
//! (one reverse-topological pass, each row the union of its successors'
//! rows): pruning asks one question per constraint edge, and on
//! PolySI-sized graphs a DFS per question cost ~90 % of the check, while
//! the closure answers each in O(1). It is a snapshot: edges added later
//! are not in it, so it may only say "unreachable" wrongly, never
//! "reachable" (edges are only added while it is used).

use super::polygraph::Fact;
use crate::budget::Budget;
use std::collections::VecDeque;

/// Why an edge is in the graph.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Why {
    /// Read off the history.
    Known,
    /// The other side of constraint `cid` would have closed a cycle through
    /// its edge `blocked`.
    Forced { blocked: Fact },
    /// A case of the search (tried first).
    Decided,
    /// A case of the search, taken after the other case failed.
    Flipped,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct EdgeRec {
    pub from: u32,
    pub to: u32,
    pub fact: Fact,
    pub why: Why,
}

/// The budget ran out.
#[derive(Debug)]
pub(crate) struct Exhausted;

/// A cycle the new edge would close: the edge plus the path (edge ids)
/// from its target back to its source.
#[derive(Debug)]
pub(crate) struct Conflict {
    pub edge: EdgeRec,
    pub path: Vec<u32>,
}

pub(crate) struct Dag {
    ord: Vec<u32>,
    out: Vec<Vec<(u32, u32)>>,
    inn: Vec<Vec<(u32, u32)>>,
    pub edges: Vec<EdgeRec>,
    mark: Vec<u32>,
    stamp: u32,
    parent: Vec<u32>,
    stack: Vec<u32>,
    fwd: Vec<u32>,
    bwd: Vec<u32>,
}

const NONE: u32 = u32::MAX;

/// Largest closure built, in bytes (above it callers use DFS).
const CLOSURE_BYTES: usize = 64 << 20;

/// A snapshot of reachability (see the module doc): row `pos[v]` holds the
/// positions of the nodes reachable from `v` by at least one edge.
pub(crate) struct Closure {
    pos: Vec<u32>,
    words: usize,
    bits: Vec<u64>,
}

impl Closure {
    /// Whether `dst` was reachable from `src` (or is `src`) when the
    /// snapshot was taken.
    #[inline]
    pub fn reaches(&self, src: u32, dst: u32) -> bool {
        if src == dst {
            return true;
        }
        let (ps, pd) = (
            self.pos[src as usize] as usize,
            self.pos[dst as usize] as usize,
        );
        if ps >= pd {
            return false;
        }
        self.bits[ps * self.words + pd / 64] >> (pd % 64) & 1 == 1
    }
}

impl Dag {
    /// Nodes `0..n`, initially ordered by `hint` (any order is correct;
    /// one close to the final one makes insertions cheap).
    pub fn new(hint: &[u64]) -> Dag {
        let n = hint.len();
        let mut by: Vec<u32> = (0..n as u32).collect();
        by.sort_by_key(|&v| (hint[v as usize], v));
        let mut ord = vec![0u32; n];
        for (i, &v) in by.iter().enumerate() {
            ord[v as usize] = i as u32;
        }
        Dag {
            ord,
            out: vec![Vec::new(); n],
            inn: vec![Vec::new(); n],
            edges: Vec::new(),
            mark: vec![0; n],
            stamp: 0,
            parent: vec![NONE; n],
            stack: Vec::new(),
            fwd: Vec::new(),
            bwd: Vec::new(),
        }
    }

    fn next_stamp(&mut self) -> u32 {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.stamp = 1;
        }
        self.stamp
    }

    /// The position of `v` in the current topological order.
    #[inline]
    pub fn pos(&self, v: u32) -> u32 {
        self.ord[v as usize]
    }

    /// Whether `a` comes before `b` in the current topological order.
    #[inline]
    pub fn before(&self, a: u32, b: u32) -> bool {
        self.ord[a as usize] < self.ord[b as usize]
    }

    /// The reachability snapshot, or `None` when it would take more than
    /// 64 MiB. Charged one unit per edge and per 64 rows' words.
    pub fn closure(&self, budget: &Budget) -> Result<Option<Closure>, Exhausted> {
        let n = self.ord.len();
        let words = n.div_ceil(64);
        if n.saturating_mul(words).saturating_mul(8) > CLOSURE_BYTES {
            return Ok(None);
        }
        if budget.charge((self.edges.len() + n) as u64 + (n as u64 * words as u64) / 64) {
            return Err(Exhausted);
        }
        // `ord` is a permutation of 0..n: rows and bits by position.
        let mut at = vec![0u32; n];
        for (v, &p) in self.ord.iter().enumerate() {
            at[p as usize] = v as u32;
        }
        let mut bits = vec![0u64; n * words];
        let mut succ: Vec<usize> = Vec::new();
        for p in (0..n).rev() {
            let (head, tail) = bits.split_at_mut((p + 1) * words);
            let row = &mut head[p * words..];
            // Nearest successors first: a farther one they reach (or a
            // parallel edge) is then already in the row and skipped.
            succ.clear();
            succ.extend(
                self.out[at[p] as usize]
                    .iter()
                    .map(|&(w, _)| self.ord[w as usize] as usize),
            );
            succ.sort_unstable();
            succ.dedup();
            for &q in &succ {
                // q > p: a successor comes later in a topological order.
                let Some(off) = q.checked_sub(p + 1) else {
                    continue;
                };
                if row[q / 64] >> (q % 64) & 1 == 1 {
                    continue;
                }
                row[q / 64] |= 1 << (q % 64);
                let src = &tail[off * words..(off + 1) * words];
                // Bits of row q are all above q.
                for (r, s) in row[q / 64..words].iter_mut().zip(&src[q / 64..]) {
                    *r |= s;
                }
            }
        }
        Ok(Some(Closure {
            pos: self.ord.clone(),
            words,
            bits,
        }))
    }

    /// Nodes in topological order.
    pub fn topo(&self) -> Vec<u32> {
        let mut v: Vec<u32> = (0..self.ord.len() as u32).collect();
        v.sort_by_key(|&x| self.ord[x as usize]);
        v
    }

    /// Forward DFS from `src` among nodes ordered at most `ord[dst]`; the
    /// path (edge ids) to `dst` if it is reached. Visited nodes go to `fwd`.
    fn forward(
        &mut self,
        src: u32,
        dst: u32,
        budget: &Budget,
    ) -> Result<Option<Vec<u32>>, Exhausted> {
        let lim = self.ord[dst as usize];
        let st = self.next_stamp();
        self.fwd.clear();
        self.stack.clear();
        self.mark[src as usize] = st;
        self.parent[src as usize] = NONE;
        self.stack.push(src);
        self.fwd.push(src);
        while let Some(u) = self.stack.pop() {
            if u == dst {
                let mut path = Vec::new();
                let mut x = dst;
                while self.parent[x as usize] != NONE {
                    let e = self.parent[x as usize];
                    path.push(e);
                    x = self.edges[e as usize].from;
                }
                path.reverse();
                return Ok(Some(path));
            }
            let out = &self.out[u as usize];
            if budget.charge(out.len() as u64 + 1) {
                return Err(Exhausted);
            }
            for &(v, e) in out {
                if self.mark[v as usize] != st && self.ord[v as usize] <= lim {
                    self.mark[v as usize] = st;
                    self.parent[v as usize] = e;
                    self.stack.push(v);
                    self.fwd.push(v);
                }
            }
        }
        Ok(None)
    }

    /// Whether `dst` is reachable from `src` (a path of edge ids if so).
    pub fn reaches(
        &mut self,
        src: u32,
        dst: u32,
        budget: &Budget,
    ) -> Result<Option<Vec<u32>>, Exhausted> {
        if src == dst {
            return Ok(Some(Vec::new()));
        }
        if self.ord[src as usize] > self.ord[dst as usize] {
            return Ok(None);
        }
        self.forward(src, dst, budget)
    }

    /// Adds an edge unless it closes a cycle.
    pub fn add(&mut self, e: EdgeRec, budget: &Budget) -> Result<Result<(), Conflict>, Exhausted> {
        let (a, b) = (e.from, e.to);
        if a == b {
            return Ok(Err(Conflict {
                edge: e,
                path: Vec::new(),
            }));
        }
        if self.ord[a as usize] > self.ord[b as usize] {
            if let Some(path) = self.forward(b, a, budget)? {
                return Ok(Err(Conflict { edge: e, path }));
            }
            // Backward from a among nodes ordered at least ord[b].
            let lo = self.ord[b as usize];
            let st = self.next_stamp();
            self.bwd.clear();
            self.stack.clear();
            self.mark[a as usize] = st;
            self.stack.push(a);
            self.bwd.push(a);
            while let Some(u) = self.stack.pop() {
                let inn = &self.inn[u as usize];
                if budget.charge(inn.len() as u64 + 1) {
                    return Err(Exhausted);
                }
                for &(v, _) in inn {
                    if self.mark[v as usize] != st && self.ord[v as usize] >= lo {
                        self.mark[v as usize] = st;
                        self.stack.push(v);
                        self.bwd.push(v);
                    }
                }
            }
            let ord = &mut self.ord;
            self.bwd.sort_unstable_by_key(|&v| ord[v as usize]);
            self.fwd.sort_unstable_by_key(|&v| ord[v as usize]);
            let mut slots: Vec<u32> = self
                .bwd
                .iter()
                .chain(self.fwd.iter())
                .map(|&v| ord[v as usize])
                .collect();
            slots.sort_unstable();
            for (&v, &s) in self.bwd.iter().chain(self.fwd.iter()).zip(slots.iter()) {
                ord[v as usize] = s;
            }
        }
        let id = self.edges.len() as u32;
        self.out[a as usize].push((b, id));
        self.inn[b as usize].push((a, id));
        self.edges.push(e);
        Ok(Ok(()))
    }

    /// Removes edges (newest first) until `len` remain.
    pub fn truncate(&mut self, len: usize) {
        while self.edges.len() > len {
            let Some(e) = self.edges.pop() else { break };
            self.out[e.from as usize].pop();
            self.inn[e.to as usize].pop();
        }
    }

    /// A shortest path (edge ids) from `src` to `dst` using only edges with
    /// id below `limit` (the graph as it was when edge `limit` was added).
    pub fn path_before(&self, src: u32, dst: u32, limit: u32, budget: &Budget) -> Option<Vec<u32>> {
        let n = self.ord.len();
        let mut parent = vec![NONE; n];
        let mut seen = vec![false; n];
        let mut q = VecDeque::new();
        seen[src as usize] = true;
        q.push_back(src);
        while let Some(u) = q.pop_front() {
            if u == dst {
                let mut path = Vec::new();
                let mut x = dst;
                while x != src {
                    let e = parent[x as usize];
                    path.push(e);
                    x = self.edges[e as usize].from;
                }
                path.reverse();
                return Some(path);
            }
            if budget.charge(self.out[u as usize].len() as u64 + 1) {
                return None;
            }
            for &(v, e) in &self.out[u as usize] {
                if e < limit && !seen[v as usize] {
                    seen[v as usize] = true;
                    parent[v as usize] = e;
                    q.push_back(v);
                }
            }
        }
        None
    }
}
