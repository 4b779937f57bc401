//! Pruning and search over the polygraph's constraints.
//!
//! 1. Known edges go into the [`Dag`]; a cycle among them is a violation.
//! 2. Pruning to a fixpoint: a side with an edge `a → b` where `b ⇝ a`
//!    already is impossible, so the other side is forced (PolySI §4.1); a
//!    side whose edges all hold already (`a ⇝ b`) is free and taken
//!    without adding anything. Forcing both ways closes a cycle: violation.
//! 3. What is left is split into independent components (SCCs of the known
//!    graph plus every remaining side's edges: an edge between two SCCs is
//!    on no cycle), each solved by a DPLL search (chronological
//!    backtracking, the same pruning as propagation, the `Dag` as the
//!    acyclicity theory).

use super::dag::{Conflict, Dag, EdgeRec, Exhausted, Why};
use super::polygraph::{Fact, Poly};
use crate::budget::Budget;
use crate::graph::{EdgeList, Graph, tarjan};
use crate::rels::Rels;

/// How solving ended.
pub(crate) enum Solved {
    /// Acyclic: the `Dag` holds a compatible graph.
    Sat,
    /// Every compatible graph is cyclic; this cycle is the last one met.
    Unsat(Conflict),
    /// Out of budget.
    Unknown,
}

/// Counters for reports and benchmarks.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Transactions in the polygraph.
    pub txns: usize,
    /// Known edges.
    pub known_edges: usize,
    /// Constraints before pruning.
    pub constraints: usize,
    /// Constraints left for the search.
    pub after_pruning: usize,
    /// Independent components searched.
    pub components: usize,
    /// Search decisions.
    pub decisions: u64,
    /// Search conflicts.
    pub conflicts: u64,
}

enum Side {
    Blocked(Fact),
    Open,
}

struct Solver<'a> {
    poly: &'a Poly,
    dag: Dag,
    budget: &'a Budget,
    buf: Vec<Fact>,
    stats: Stats,
}

type Step<T> = Result<T, Exhausted>;

impl Solver<'_> {
    /// Whether some edge of `side` of `cid` would close a cycle.
    fn blocked(&mut self, cid: u32, side: u8) -> Step<Side> {
        self.poly.side(cid, side, &mut self.buf);
        for i in 0..self.buf.len() {
            let f = self.buf[i];
            let (a, b) = self.poly.ends(&f);
            if self.dag.reaches(b, a, self.budget)?.is_some() {
                return Ok(Side::Blocked(f));
            }
        }
        Ok(Side::Open)
    }

    /// Whether every edge of `side` holds already.
    fn implied(&mut self, cid: u32, side: u8) -> Step<bool> {
        self.poly.side(cid, side, &mut self.buf);
        for i in 0..self.buf.len() {
            let (a, b) = self.poly.ends(&self.buf[i]);
            if self.dag.reaches(a, b, self.budget)?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Adds the edges of `side` of `cid`.
    fn apply(&mut self, cid: u32, side: u8, why: Why) -> Step<Result<(), Conflict>> {
        let mut facts = Vec::new();
        self.poly.side(cid, side, &mut facts);
        for f in facts {
            let (from, to) = self.poly.ends(&f);
            let e = EdgeRec {
                from,
                to,
                fact: f,
                why,
            };
            if let Err(c) = self.dag.add(e, self.budget)? {
                return Ok(Err(c));
            }
        }
        Ok(Ok(()))
    }

    /// Prunes `open` to a fixpoint; resolved constraints are removed from it
    /// (and recorded in `resolved` for undo, if given).
    fn propagate(&mut self, open: &mut Vec<u32>) -> Step<Result<(), Conflict>> {
        loop {
            let mut changed = false;
            let mut i = 0;
            while i < open.len() {
                let cid = open[i];
                let forced = match self.blocked(cid, 0)? {
                    Side::Blocked(f) => Some((1, f)),
                    Side::Open => match self.blocked(cid, 1)? {
                        Side::Blocked(f) => Some((0, f)),
                        Side::Open => None,
                    },
                };
                let done = match forced {
                    Some((side, f)) => {
                        if let Err(c) = self.apply(cid, side, Why::Forced { blocked: f })? {
                            return Ok(Err(c));
                        }
                        true
                    }
                    None => self.implied(cid, 0)? || self.implied(cid, 1)?,
                };
                if done {
                    open.swap_remove(i);
                    changed = true;
                } else {
                    i += 1;
                }
            }
            if !changed {
                return Ok(Ok(()));
            }
        }
    }

    /// Independent groups of `open` (see the module doc); constraints with
    /// a side that lies wholly between SCCs are dropped (that side is free).
    fn components(&mut self, open: &[u32]) -> (Vec<Vec<u32>>, Vec<(u32, u8)>) {
        let n = self.poly.nodes();
        let mut el = EdgeList::default();
        for e in &self.dag.edges {
            el.add(e.from, e.to, Rels::WW);
        }
        let mut facts = Vec::new();
        for &cid in open {
            for side in 0..2 {
                self.poly.side(cid, side, &mut facts);
                for f in &facts {
                    let (a, b) = self.poly.ends(f);
                    el.add(a, b, Rels::WW);
                }
            }
        }
        let g = Graph::from_edges(n, el);
        let sccs = tarjan(&g, Rels::WW).nontrivial();
        let mut comp = vec![u32::MAX; n];
        for (i, s) in sccs.iter().enumerate() {
            for &v in s {
                comp[v as usize] = i as u32;
            }
        }
        // Union-find over SCC ids, joined by constraints.
        let mut uf: Vec<u32> = (0..sccs.len() as u32).collect();
        fn find(uf: &mut [u32], mut x: u32) -> u32 {
            while uf[x as usize] != x {
                uf[x as usize] = uf[uf[x as usize] as usize];
                x = uf[x as usize];
            }
            x
        }
        let mut home: Vec<(u32, u32)> = Vec::new();
        let mut free_sides: Vec<(u32, u8)> = Vec::new();
        for &cid in open {
            let mut first = u32::MAX;
            let mut free = None;
            for side in 0..2 {
                self.poly.side(cid, side, &mut facts);
                let mut inside = false;
                for f in &facts {
                    let (a, b) = self.poly.ends(f);
                    let (ca, cb) = (comp[a as usize], comp[b as usize]);
                    if ca != u32::MAX && ca == cb {
                        inside = true;
                        if first == u32::MAX {
                            first = ca;
                        } else {
                            let (x, y) = (find(&mut uf, first), find(&mut uf, ca));
                            uf[x as usize] = y;
                        }
                    }
                }
                if !inside && free.is_none() {
                    free = Some(side);
                }
            }
            match free {
                Some(side) => free_sides.push((cid, side)),
                None => home.push((cid, first)),
            }
        }
        let mut groups: Vec<(u32, u32)> = home
            .into_iter()
            .map(|(cid, c)| (find(&mut uf, c), cid))
            .collect();
        groups.sort_unstable();
        let mut out: Vec<Vec<u32>> = Vec::new();
        let mut last = u32::MAX;
        for (g, cid) in groups {
            if g != last || out.is_empty() {
                out.push(Vec::new());
                last = g;
            }
            if let Some(v) = out.last_mut() {
                v.push(cid);
            }
        }
        (out, free_sides)
    }

    /// DPLL over one component.
    fn search(&mut self, comp: Vec<u32>) -> Step<Result<(), Conflict>> {
        // Frame: (constraint, side taken, edges before, open set before).
        let mut frames: Vec<(u32, u8, usize, Vec<u32>)> = Vec::new();
        let mut open = comp;
        loop {
            let mut res = self.propagate(&mut open)?;
            if res.is_ok() {
                let Some(&cid) = open.first() else {
                    return Ok(Ok(()));
                };
                self.stats.decisions += 1;
                frames.push((cid, 0, self.dag.edges.len(), open.clone()));
                open.swap_remove(0);
                res = self.apply(cid, 0, Why::Decided)?;
            }
            while let Err(conflict) = res {
                self.stats.conflicts += 1;
                while frames.last().is_some_and(|f| f.1 == 1) {
                    frames.pop();
                }
                let Some((cid, _, len, before)) = frames.pop() else {
                    return Ok(Err(conflict));
                };
                self.dag.truncate(len);
                open = before;
                frames.push((cid, 1, len, open.clone()));
                open.retain(|&c| c != cid);
                res = self.apply(cid, 1, Why::Flipped)?;
            }
        }
    }
}

/// Runs the whole pipeline; on `Sat` the returned `Dag` holds the witness.
pub(crate) fn solve(poly: &Poly, budget: &Budget) -> (Solved, Dag, Stats) {
    let mut s = Solver {
        poly,
        dag: Dag::new(&poly.hint),
        budget,
        buf: Vec::new(),
        stats: Stats {
            txns: poly.global.len(),
            known_edges: poly.known.len(),
            constraints: poly.constraints.len(),
            ..Stats::default()
        },
    };
    let r = run(&mut s);
    let out = match r {
        Ok(Ok(())) => Solved::Sat,
        Ok(Err(c)) => Solved::Unsat(c),
        Err(Exhausted) => Solved::Unknown,
    };
    (out, s.dag, s.stats)
}

fn run(s: &mut Solver<'_>) -> Step<Result<(), Conflict>> {
    // Building the polygraph was work too (and a zero budget must say so).
    if s.budget
        .charge((s.poly.known.len() + s.poly.constraints.len()) as u64 + 1)
    {
        return Err(Exhausted);
    }
    for f in &s.poly.known {
        let (from, to) = s.poly.ends(f);
        let e = EdgeRec {
            from,
            to,
            fact: *f,
            why: Why::Known,
        };
        if let Err(c) = s.dag.add(e, s.budget)? {
            return Ok(Err(c));
        }
    }
    let mut open: Vec<u32> = (0..s.poly.constraints.len() as u32).collect();
    if let Err(c) = s.propagate(&mut open)? {
        return Ok(Err(c));
    }
    s.stats.after_pruning = open.len();
    if open.is_empty() {
        return Ok(Ok(()));
    }
    let (comps, free) = s.components(&open);
    s.stats.components = comps.len();
    for comp in comps {
        if let Err(c) = s.search(comp)? {
            return Ok(Err(c));
        }
    }
    // Free sides lie between SCCs of a supergraph of every compatible
    // graph: they close no cycle, and the witness order must respect them.
    for (cid, side) in free {
        if let Err(c) = s.apply(cid, side, Why::Decided)? {
            return Ok(Err(c));
        }
    }
    Ok(Ok(()))
}
