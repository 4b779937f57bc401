//! Pruning (PolySI §4.1): a side with an edge `a → b` where `b ⇝ a`
//! already is impossible, so the other side is forced. Each pass asks its
//! questions of one reachability snapshot ([`Closure`]); passes repeat
//! until one resolves under 1 % of a large open set (pruning accelerates,
//! the search decides).
//!
//! A hot key has millions of writer pairs, nearly all resolved by the
//! first pass, so the cost of one pass is what is spent per constraint:
//! each is decoded once (not once per question and again to apply its
//! side), its sides are walked without being collected, and open ids keep
//! their order, so decoding an id is usually a step within the row of the
//! one before it (a resolved id used to be replaced by the last one, from
//! another key: two full decodes per resolved id). On a 5k-transaction
//! zipfian history (14M constraints) that halved the check's CPU time.
//! (Reading the snapshot by the constraint's first writer only, with a
//! second copy of it by target, did not pay: measured in BENCHMARKS.md.)

use super::{Side, Solver, Step};
use crate::sat::dag::{Closure, Conflict, EdgeRec, Why};
use crate::sat::polygraph::{Constraint, Fact};

/// Open constraints from which a pruning pass uses a reachability snapshot.
const CLOSURE_MIN: usize = 256;

impl Solver<'_> {
    /// Prunes `open` to a fixpoint (or until a pass resolves under 1 % of
    /// a large set); resolved constraints are removed from it, the others
    /// keep their order.
    pub(super) fn propagate(&mut self, open: &mut Vec<u32>) -> Step<Result<(), Conflict>> {
        loop {
            let start = open.len();
            // Many questions: answer them from one reachability snapshot
            // per pass. Edges this pass adds are missing from it, so it
            // prunes less than a DFS would, never wrongly; a pass that
            // changes nothing had the exact relation, so the fixpoint is
            // the same.
            let closure = if open.len() >= CLOSURE_MIN {
                self.dag.closure(self.budget)?
            } else {
                None
            };
            let mut kept = 0;
            for i in 0..open.len() {
                let cid = open[i];
                let done = match &closure {
                    Some(c) => self.prune_snap(cid, c)?,
                    None => self.prune_dfs(cid)?,
                };
                match done {
                    Err(c) => return Ok(Err(c)),
                    Ok(true) => {}
                    Ok(false) => {
                        open[kept] = cid;
                        kept += 1;
                    }
                }
            }
            open.truncate(kept);
            // Propagation is an accelerator, not needed for correctness (a
            // wrong case still ends in a cycle at insertion): on a large
            // set, stop once a pass resolves under 1% of it.
            let resolved = start - open.len();
            if resolved == 0 || (start > 2000 && resolved * 100 < start) {
                return Ok(Ok(()));
            }
        }
    }

    /// Resolves `cid` if a DFS shows one side blocked: `Ok(true)` when its
    /// other side went in.
    fn prune_dfs(&mut self, cid: u32) -> Step<Result<bool, Conflict>> {
        let forced = match self.blocked(cid, 0)? {
            Side::Blocked(f, _) => Some((1, f)),
            Side::Open => match self.blocked(cid, 1)? {
                Side::Blocked(f, _) => Some((0, f)),
                Side::Open => None,
            },
        };
        let Some((side, blocked)) = forced else {
            return Ok(Ok(false));
        };
        Ok(self
            .apply(cid, side, Why::Forced { blocked })?
            .map(|()| true))
    }

    /// As [`Self::prune_dfs`], from the snapshot `c`.
    ///
    /// Nearly every forced side of a hot key holds already (the snapshot
    /// has a path for each of its edges): that is asked first, and only a
    /// side with an edge to add looks up the blocked edge it is justified
    /// by. The common path thus moves no edge records or conflicts around
    /// (copying those through the stack stalled on every constraint).
    fn prune_snap(&mut self, cid: u32, c: &Closure) -> Step<Result<bool, Conflict>> {
        let con = self.poly.constraint(cid);
        let blocked = |_: &Fact, (from, to): (u32, u32)| c.reaches(to, from);
        let side = if self.poly.side_find_of(con, 0, blocked).is_some() {
            1
        } else if self.poly.side_find_of(con, 1, blocked).is_some() {
            0
        } else {
            return Ok(Ok(false));
        };
        let missing = |_: &Fact, (from, to): (u32, u32)| from == to || !c.reaches(from, to);
        if self.poly.side_find_of(con, side, missing).is_none() {
            return Ok(Ok(true));
        }
        let Some(blocked) = self.poly.side_find_of(con, 1 - side, blocked) else {
            return Ok(Ok(false));
        };
        Ok(self
            .apply_snap(con, side, Why::Forced { blocked }, c)?
            .map(|()| true))
    }

    /// Adds the edges of `side` of `con` but those the snapshot shows to
    /// hold already (a path `from ⇝ to`: they change no reachability).
    fn apply_snap(
        &mut self,
        con: Constraint,
        side: u8,
        why: Why,
        c: &Closure,
    ) -> Step<Result<(), Conflict>> {
        let (dag, budget) = (&mut self.dag, self.budget);
        let mut out = Ok(Ok(()));
        self.poly.side_find_of(con, side, |&fact, (from, to)| {
            if from != to && c.reaches(from, to) {
                return false;
            }
            let e = EdgeRec {
                from,
                to,
                fact,
                why,
            };
            match dag.add(e, budget) {
                Ok(Ok(())) => false,
                other => {
                    out = other;
                    true
                }
            }
        });
        out
    }
}
