//! The monotonic checker (TiDB's form, Elle's `monotonic-key-order`): per
//! key, every op that observed a value precedes every op that observed the
//! next larger value; with real-time order (an op that completed before
//! another was invoked precedes it), any cycle is a violation — e.g. a read
//! that began after an increment to 5 finished, yet saw 4.
//!
//! Ops: `inc [[r k v]]` (v the value it wrote; the first inc of a key
//! writes 0) and `read [[r k v] …]` (nil = no row, ordered before 0); only
//! ok ops take part. Two ok increments of one key that wrote the same value
//! are a `duplicate-inc` (a lost update: each read the value the other
//! overwrote).
//!
//! Key decision: the graph stays linear in the history. "Every op with v
//! precedes every op with the next value" goes through one barrier node per
//! (key, value) (`op → B → op′`), and real time through one node per
//! completion, chained in history order (`op → C(its completion) → C(next)
//! … → op′` when op′ was invoked after it). Tarjan's SCC is iterative; one
//! cycle per strongly connected component is found by BFS and explained op
//! to op.

use super::{Finding, Report, atom_int, completions, idx, op_name, read_int};
use rustc_hash::FxHashMap;
use serde_json::json;
use std::collections::VecDeque;
use store::{F, History, MicroOp, OpType};

/// At most this many cycles are explained (all are counted).
const MAX_EXPLAINED: usize = 32;

/// What an edge between nodes stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// Through a value barrier of (key, lower value, higher value).
    Value(i64, i64, i64),
    /// Through the real-time chain.
    Realtime,
}

/// An ok op: completion position, invocation position, (key, value) seen.
type OkOp = (usize, Option<usize>, Vec<(i64, i64)>);

struct Graph {
    adj: Vec<Vec<u32>>,
}

impl Graph {
    fn edge(&mut self, a: usize, b: usize) {
        self.adj[a].push(b as u32);
    }
}

/// Iterative Tarjan: the component of every node.
fn scc(g: &Graph) -> Vec<u32> {
    let n = g.adj.len();
    let (mut index, mut low, mut comp) = (vec![u32::MAX; n], vec![0u32; n], vec![u32::MAX; n]);
    let mut on = vec![false; n];
    let (mut stack, mut call): (Vec<u32>, Vec<(u32, usize)>) = (Vec::new(), Vec::new());
    let (mut next, mut comps) = (0u32, 0u32);
    for root in 0..n {
        if index[root] != u32::MAX {
            continue;
        }
        call.push((root as u32, 0));
        while let Some(&mut (v, ref mut i)) = call.last_mut() {
            let v = v as usize;
            if *i == 0 && index[v] == u32::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v as u32);
                on[v] = true;
            }
            if let Some(&w) = g.adj[v].get(*i) {
                *i += 1;
                let w = w as usize;
                if index[w] == u32::MAX {
                    call.push((w as u32, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            call.pop();
            if let Some(&(p, _)) = call.last() {
                low[p as usize] = low[p as usize].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on[w as usize] = false;
                    comp[w as usize] = comps;
                    if w as usize == v {
                        break;
                    }
                }
                comps += 1;
            }
        }
    }
    comp
}

/// Checks the monotonic-key and real-time orders for cycles.
pub fn check(history: &History) -> Report {
    let mut report = Report::new("monotonic");
    // ok ops: (completion pos, invocation pos, observations)
    let mut ops: Vec<OkOp> = Vec::new();
    let mut incs: FxHashMap<(i64, i64), usize> = FxHashMap::default();
    for c in completions(history) {
        if c.op_type != OpType::Ok || !(c.f == F::Inc || c.f == F::Read) {
            continue;
        }
        let mut obs = Vec::with_capacity(c.mops.len());
        for m in c.mops.iter() {
            if let MicroOp::Read(k, v) = m
                && let (Some(k), Some(v)) = (atom_int(&k.0), read_int(v))
            {
                obs.push((k, v.unwrap_or(-1)));
            }
        }
        if c.f == F::Inc
            && let [(k, v)] = obs[..]
            && let Some(other) = incs.insert((k, v), c.pos)
        {
            report.add(Finding {
                kind: "duplicate-inc",
                ops: vec![idx(history, other), idx(history, c.pos)],
                explanation: format!(
                    "increments {} and {} both wrote key {k} = {v}: each read the value the other replaced, so one increment was lost",
                    op_name(history, other),
                    op_name(history, c.pos)
                ),
                data: json!({"key": k, "value": v}),
            });
        }
        ops.push((c.pos, c.inv, obs));
    }
    let n = ops.len();
    // Value barriers.
    let mut by_key: FxHashMap<i64, Vec<(i64, u32)>> = FxHashMap::default();
    for (i, (_, _, obs)) in ops.iter().enumerate() {
        for &(k, v) in obs {
            by_key.entry(k).or_default().push((v, i as u32));
        }
    }
    let mut g = Graph {
        adj: vec![Vec::new(); n],
    };
    // barrier node → (key, value below it, value above it)
    let mut barrier: FxHashMap<u32, (i64, i64, i64)> = FxHashMap::default();
    let mut keys: Vec<i64> = by_key.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        let list = by_key.get_mut(&k).map(std::mem::take).unwrap_or_default();
        let mut list = list;
        list.sort_unstable();
        let mut start = 0;
        while start < list.len() {
            let v = list[start].0;
            let end = start + list[start..].iter().take_while(|x| x.0 == v).count();
            if end < list.len() {
                let next_v = list[end].0;
                let b = g.adj.len();
                g.adj.push(Vec::new());
                barrier.insert(b as u32, (k, v, next_v));
                for &(_, op) in &list[start..end] {
                    g.edge(op as usize, b);
                }
                let next_end = end + list[end..].iter().take_while(|x| x.0 == next_v).count();
                for &(_, op) in &list[end..next_end] {
                    g.edge(b, op as usize);
                }
            }
            start = end;
        }
    }
    // Real time: one chain node per ok completion, in history order.
    let chain0 = g.adj.len();
    let mut comp_rank: FxHashMap<usize, usize> = FxHashMap::default();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| ops[i].0);
    for (r, &i) in order.iter().enumerate() {
        comp_rank.insert(ops[i].0, r);
        g.adj.push(Vec::new());
        g.edge(i, chain0 + r);
        if r > 0 {
            g.edge(chain0 + r - 1, chain0 + r);
        }
    }
    if history.has_realtime_order() {
        let mut by_inv: Vec<(usize, usize)> = ops
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.1.map(|inv| (inv, i)))
            .collect();
        by_inv.sort_unstable();
        let mut r = 0usize; // completions before the invocation
        for (inv, i) in by_inv {
            while r < order.len() && ops[order[r]].0 < inv {
                r += 1;
            }
            if r > 0 {
                g.edge(chain0 + r - 1, i);
            }
        }
    }
    let comp = scc(&g);
    let mut size: FxHashMap<u32, usize> = FxHashMap::default();
    for &c in &comp[..n] {
        *size.entry(c).or_default() += 1;
    }
    let mut done: FxHashMap<u32, ()> = FxHashMap::default();
    let mut cycles = 0usize;
    for s in 0..n {
        let c = comp[s];
        if size.get(&c).copied().unwrap_or(0) < 2 || done.insert(c, ()).is_some() {
            continue;
        }
        cycles += 1;
        if cycles > MAX_EXPLAINED {
            continue;
        }
        let path = cycle_from(&g, &comp, s);
        report.add(explain(history, &ops, &path, n, &barrier));
    }
    report.stat("op-count", n);
    report.stat("cycle-count", cycles);
    report
}

/// A shortest cycle through `s` inside its component (nodes, `s` first).
fn cycle_from(g: &Graph, comp: &[u32], s: usize) -> Vec<usize> {
    let mut parent: FxHashMap<usize, usize> = FxHashMap::default();
    let mut q = VecDeque::from([s]);
    while let Some(v) = q.pop_front() {
        for &w in &g.adj[v] {
            let w = w as usize;
            if comp[w] != comp[s] {
                continue;
            }
            if w == s {
                let mut path = vec![v];
                let mut x = v;
                while x != s {
                    x = parent[&x];
                    path.push(x);
                }
                path.reverse();
                return path;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(w) {
                e.insert(v);
                q.push_back(w);
            }
        }
    }
    vec![s]
}

fn explain(
    history: &History,
    ops: &[OkOp],
    path: &[usize],
    n: usize,
    barrier: &FxHashMap<u32, (i64, i64, i64)>,
) -> Finding {
    // Op to op steps: the ops on the cycle and what joined each to the next.
    let op_at: Vec<usize> = (0..path.len()).filter(|&i| path[i] < n).collect();
    let mut steps = Vec::new();
    let mut ids = Vec::new();
    for (j, &i) in op_at.iter().enumerate() {
        let a = path[i];
        let next_i = op_at.get(j + 1).copied().unwrap_or(path.len() + op_at[0]);
        let b = path[next_i % path.len()];
        let via = (i + 1..next_i)
            .map(|x| path[x % path.len()])
            .find_map(|x| {
                barrier
                    .get(&(x as u32))
                    .map(|&(k, v, w)| Via::Value(k, v, w))
            })
            .unwrap_or(Via::Realtime);
        ids.push(idx(history, ops[a].0));
        let (an, bn) = (op_name(history, ops[a].0), op_name(history, ops[b].0));
        let show = |v: i64| {
            if v < 0 {
                "nil".to_string()
            } else {
                v.to_string()
            }
        };
        steps.push(match via {
            Via::Value(k, v, w) => {
                format!(
                    "{an} < {bn} because {an} observed key {k} = {} and {bn} observed {}",
                    show(v),
                    show(w)
                )
            }
            Via::Realtime => format!("{an} < {bn} because {an} completed before {bn} was invoked"),
        });
    }
    Finding {
        kind: "cycle",
        ops: ids.clone(),
        explanation: format!(
            "{}; a cycle: the observed values go backwards in time",
            steps.join("; however ")
        ),
        data: json!({"cycle": ids}),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::super::tests::{H, r, rn};
    use super::*;
    use crate::result::Valid;

    fn inc(h: &mut H, p: u64, k: i64, v: i64) -> u64 {
        h.both(OpType::Ok, p, F::Inc, vec![rn(k)], vec![r(k, Some(v))])
    }
    fn read(h: &mut H, p: u64, a: Option<i64>, b: Option<i64>) -> u64 {
        h.both(
            OpType::Ok,
            p,
            F::Read,
            vec![rn(0), rn(1)],
            vec![r(0, a), r(1, b)],
        )
    }

    #[test]
    fn increasing_values_are_valid() {
        let mut h = H::default();
        read(&mut h, 0, None, None);
        inc(&mut h, 1, 0, 0);
        read(&mut h, 0, Some(0), None);
        inc(&mut h, 1, 0, 1);
        inc(&mut h, 2, 1, 0);
        read(&mut h, 0, Some(1), Some(0));
        let rep = check(&h.history());
        assert_eq!(rep.valid, Valid::True, "{}", rep.render_text(3));
        assert_eq!(rep.stats["op-count"], 6);
    }

    #[test]
    fn a_read_after_an_increment_that_misses_it_is_a_cycle() {
        let mut h = H::default();
        inc(&mut h, 1, 0, 0);
        let i = inc(&mut h, 1, 0, 1);
        let stale = read(&mut h, 0, Some(0), None);
        let rep = check(&h.history());
        assert_eq!(rep.valid, Valid::False);
        assert_eq!(rep.kinds(), ["cycle"]);
        let f = &rep.findings[0];
        assert!(f.ops.contains(&i) && f.ops.contains(&stale), "{:?}", f.ops);
        assert!(
            f.explanation.contains("observed key 0 = 0 and op 3"),
            "{}",
            f.explanation
        );
        assert!(
            f.explanation.contains("completed before"),
            "{}",
            f.explanation
        );
    }

    #[test]
    fn two_reads_in_opposite_orders_without_real_time_are_a_cycle() {
        // Concurrent reads (no real-time order between them) that disagree
        // on which key moved first.
        let mut h = H::default();
        h.op(OpType::Invoke, 0, F::Read, vec![rn(0), rn(1)]);
        h.op(OpType::Invoke, 1, F::Read, vec![rn(0), rn(1)]);
        h.op(OpType::Ok, 0, F::Read, vec![r(0, Some(1)), r(1, Some(0))]);
        h.op(OpType::Ok, 1, F::Read, vec![r(0, Some(0)), r(1, Some(1))]);
        let rep = check(&h.history());
        assert_eq!(rep.kinds(), ["cycle"]);
    }

    #[test]
    fn duplicate_increments_are_lost_updates() {
        let mut h = H::default();
        inc(&mut h, 1, 0, 0);
        inc(&mut h, 2, 0, 1);
        inc(&mut h, 3, 0, 1);
        let rep = check(&h.history());
        assert_eq!(rep.kinds(), ["duplicate-inc"]);
    }
}
