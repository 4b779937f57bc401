//! Pruning and search over the polygraph's constraints.
//!
//! 1. Known edges go into the [`Dag`]; a cycle among them is a violation.
//! 2. Pruning (top level only, `prune`): a side with an edge `a → b` where
//!    `b ⇝ a` already is impossible, so the other side is forced (PolySI
//!    §4.1). Each pass asks its questions of one reachability snapshot
//!    ([`Dag::closure`], O(1) a question, the side's edges enumerated
//!    without collecting them); a forced edge the snapshot already implies
//!    is not added. Passes repeat until one resolves under 1 % of a large
//!    open set (pruning accelerates, the search decides).
//! 3. What is left is split into independent components (SCCs of the known
//!    graph plus every remaining side's edges: an edge between two SCCs is
//!    on no cycle), each solved by a DPLL search with the `Dag` as the
//!    acyclicity theory (`Solver::search`): only *hard* constraints (no
//!    side running forward in the current topological order) are decided,
//!    each checked by DFS when picked; once none is left, every open
//!    constraint takes its forward side at once. Backtracking jumps to the
//!    newest decision a conflict's cycle involves (conflict-directed
//!    backjumping). On PolySI-shaped plain-SI histories the former search
//!    (decide every constraint, forward sides greedily first; a snapshot
//!    per decision; chronological backtracking) spent thousands of
//!    conflicts unwinding unrelated forward choices one by one; this one
//!    takes tens (measured in BENCHMARKS.md).

mod prune;

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
    /// Restarts with another initial order.
    pub restarts: u32,
    /// Decided `valid` by a witness of the strong-session level (a plain
    /// level asked: see `check_register_stats`); the counters are that
    /// attempt's.
    pub via_session: bool,
}

enum Side {
    /// An edge of the side would close a cycle: the edge, and the path
    /// (edge ids) back from its target to its source (empty when a
    /// reachability snapshot answered).
    Blocked(Fact, Vec<u32>),
    Open,
}

pub(crate) struct Solver<'a> {
    poly: &'a Poly,
    pub(crate) dag: Dag,
    budget: &'a Budget,
    buf: Vec<Fact>,
    pub(crate) stats: Stats,
    /// Give up (to restart with another initial order) after this many conflicts.
    pub(crate) max_conflicts: u64,
    pub(crate) gave_up: bool,
}

type Step<T> = Result<T, Exhausted>;

impl<'a> Solver<'a> {
    /// A solver over `dag` (nodes of `poly`) giving up after
    /// `max_conflicts` conflicts.
    pub(crate) fn new(
        poly: &'a Poly,
        dag: Dag,
        budget: &'a Budget,
        max_conflicts: u64,
    ) -> Solver<'a> {
        Solver {
            poly,
            dag,
            budget,
            buf: Vec::new(),
            stats: Stats::default(),
            max_conflicts,
            gave_up: false,
        }
    }

    /// Whether some edge of `side` of `cid` would close a cycle (DFS).
    fn blocked(&mut self, cid: u32, side: u8) -> Step<Side> {
        self.poly.side(cid, side, &mut self.buf);
        for i in 0..self.buf.len() {
            let f = self.buf[i];
            let (a, b) = self.poly.ends(&f);
            if let Some(path) = self.dag.reaches(b, a, self.budget)? {
                return Ok(Side::Blocked(f, path));
            }
        }
        Ok(Side::Open)
    }

    /// A side of `cid` whose edges all run forward in the current
    /// topological order: taking it needs no search and closes no cycle.
    fn forward_side(&mut self, cid: u32) -> Option<u8> {
        let dag = &self.dag;
        (0..2u8).find(|&side| {
            self.poly
                .side_find(cid, side, |_, (a, b)| !dag.before(a, b))
                .is_none()
        })
    }

    /// Adds the edges of `side` of `cid`.
    fn apply(&mut self, cid: u32, side: u8, why: Why) -> Step<Result<(), Conflict>> {
        // The buffer is lent out while edges go in (no allocation per side).
        let mut facts = std::mem::take(&mut self.buf);
        self.poly.side(cid, side, &mut facts);
        let mut out = Ok(Ok(()));
        for &fact in &facts {
            let (from, to) = self.poly.ends(&fact);
            let e = EdgeRec {
                from,
                to,
                fact,
                why,
            };
            match self.dag.add(e, self.budget) {
                Ok(Ok(())) => {}
                other => {
                    out = other;
                    break;
                }
            }
        }
        self.buf = facts;
        out
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

    /// How far `side` of `cid` runs against the current topological order:
    /// (edges running backward, total positions they run back). The search
    /// takes the side that moves the order least first.
    fn backwardness(&self, cid: u32, side: u8) -> (usize, u64) {
        let mut n = 0;
        let mut dist = 0u64;
        self.poly.side_find(cid, side, |_, (a, b)| {
            let (oa, ob) = (self.dag.pos(a), self.dag.pos(b));
            if oa > ob {
                n += 1;
                dist += u64::from(oa - ob);
            }
            false
        });
        (n, dist)
    }

    /// DPLL over one component, deciding only *hard* constraints: those
    /// with no side running forward in the current topological order.
    /// Once every open constraint has a forward side, taking all those
    /// sides at once keeps the order topological (no cycle), so they are
    /// never decided one by one: a greedy early choice of such a side
    /// could only block a hard constraint later.
    ///
    /// A hard constraint is checked when picked (lazy propagation): a side
    /// with an edge `a → b` where `b ⇝ a` forces the other, both blocked
    /// is a conflict; otherwise the side that moves the order least is
    /// tried first.
    ///
    /// Backtracking is conflict-directed (backjumping): every edge belongs
    /// to the decision level it was added at, a conflict blames the levels
    /// of the edges on its cycle(s), and the search returns to the newest
    /// blamed decision, skipping the ones in between (they took no part).
    /// An edge forced at a level is blamed on that level, which is at
    /// least as new as its real reasons: the jump is never too far. A
    /// decision whose both sides failed passes the union of both blames
    /// (minus itself) further down.
    pub(crate) fn search(&mut self, comp: Vec<u32>) -> Step<Result<(), Conflict>> {
        let mut frames: Vec<Frame> = Vec::new();
        let mut open = comp;
        let mut removed: Vec<u32> = Vec::new();
        // Scan cursor and how many open constraints in a row were found to
        // have a forward side (all of them: done).
        let mut i = 0usize;
        let mut streak = 0usize;
        while !open.is_empty() && streak < open.len() {
            if i >= open.len() {
                i = 0;
            }
            let cid = open[i];
            if self.forward_side(cid).is_some() {
                i += 1;
                streak += 1;
                continue;
            }
            streak = 0;
            removed.push(open.swap_remove(i));
            // The path that blocked a side, blamed along with the conflict
            // if the other side fails too.
            let (res, reason) = match (self.blocked(cid, 0)?, self.blocked(cid, 1)?) {
                // Adding the other side closes the cycle its edge would.
                (Side::Blocked(f, p), _) => (self.apply(cid, 1, Why::Forced { blocked: f })?, p),
                (Side::Open, Side::Blocked(f, p)) => {
                    (self.apply(cid, 0, Why::Forced { blocked: f })?, p)
                }
                (Side::Open, Side::Open) => {
                    let side = u8::from(self.backwardness(cid, 1) < self.backwardness(cid, 0));
                    self.stats.decisions += 1;
                    frames.push(Frame {
                        cid,
                        side,
                        flipped: false,
                        edges: self.dag.edges.len(),
                        removed: removed.len() - 1,
                        blame: Vec::new(),
                    });
                    (self.apply(cid, side, Why::Decided)?, Vec::new())
                }
            };
            let Err(conflict) = res else { continue };
            let mut blame = levels(&frames, reason.iter().chain(&conflict.path));
            // The new edge is on the cycle too: it is at the newest level.
            blame.push(frames.len() as u32);
            let mut conflict = conflict;
            loop {
                self.stats.conflicts += 1;
                if self.stats.conflicts > self.max_conflicts {
                    self.gave_up = true;
                    return Err(Exhausted);
                }
                // The newest blamed level; 0 is the known graph: unsat.
                let target = blame.iter().copied().max().unwrap_or(0);
                if target == 0 {
                    return Ok(Err(conflict));
                }
                frames.truncate(target as usize);
                let Some(f) = frames.last_mut() else {
                    return Ok(Err(conflict));
                };
                blame.retain(|&l| l != target);
                if f.flipped {
                    // Both sides failed: blame both sides' reasons.
                    blame.append(&mut f.blame);
                    blame.sort_unstable();
                    blame.dedup();
                    frames.pop();
                    continue;
                }
                f.flipped = true;
                f.side = 1 - f.side;
                blame.sort_unstable();
                blame.dedup();
                f.blame = std::mem::take(&mut blame);
                let (cid, side, edges, before) = (f.cid, f.side, f.edges, f.removed);
                self.dag.truncate(edges);
                while removed.len() > before {
                    if let Some(c) = removed.pop() {
                        open.push(c);
                    }
                }
                if let Some(p) = open.iter().position(|&c| c == cid) {
                    removed.push(open.swap_remove(p));
                }
                match self.apply(cid, side, Why::Flipped)? {
                    Ok(()) => break,
                    Err(c) => {
                        blame = levels(&frames, c.path.iter());
                        blame.push(frames.len() as u32);
                        conflict = c;
                    }
                }
            }
            streak = 0;
        }
        // Every open constraint has a forward side: take them all.
        for cid in std::mem::take(&mut open) {
            let side = self.forward_side(cid).unwrap_or(0);
            if let Err(c) = self.apply(cid, side, Why::Decided)? {
                return Ok(Err(c));
            }
        }
        Ok(Ok(()))
    }
}

/// A decision of the search.
struct Frame {
    cid: u32,
    /// The side taken now.
    side: u8,
    /// Whether this is the second side tried.
    flipped: bool,
    /// Edges in the graph before the decision.
    edges: usize,
    /// Resolved constraints before the decision.
    removed: usize,
    /// For a flipped decision: the levels the first side's failure blamed,
    /// other than this one.
    blame: Vec<u32>,
}

/// The decision levels (1-based frame numbers; 0 = before any decision)
/// the edges `ids` were added at.
fn levels<'a>(frames: &[Frame], ids: impl Iterator<Item = &'a u32>) -> Vec<u32> {
    let mut out: Vec<u32> = ids
        .map(|&e| frames.partition_point(|f| f.edges <= e as usize) as u32)
        .filter(|&l| l > 0)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Decides `s`'s polygraph: known edges, pruning, components, search.
pub(crate) fn run(s: &mut Solver<'_>) -> Step<Result<(), Conflict>> {
    // Building the polygraph was work too (and a zero budget must say so).
    if s.budget
        .charge((s.poly.known.len() + s.poly.constraint_count()) as u64 + 1)
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
    let mut open: Vec<u32> = (0..s.poly.constraint_count() as u32).collect();
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
