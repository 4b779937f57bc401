//! The causal axiom's edges (Biswas & Enea's transactional causal
//! consistency): vector clocks over session order and write-read, pushed
//! along a topological order, then for each read the latest writer of its
//! key in each session that happens before the reader.
//!
//! Key decision: a key's writers are grouped by session in one array
//! (`KeyWriters`), so a read visits only the sessions that write its key,
//! with no hashing, and a clock is merged into another as two slices. On
//! the performance guard's 50k-transaction register history (20 sessions)
//! the whole `check -c causal-cerone` went from 886 M instructions to 556 M
//! (a map keyed by (session, key), probed for every session, and the
//! clocks merged entry by entry, before; a release build without LTO).

use super::{Cat, Inferred, kahn_order};
use crate::weak::observe::{INIT, NO_SESSION, Observations};
use rustc_hash::FxHashSet;

/// What [`causal`] could not do.
#[derive(Debug, Default)]
pub struct CausalReport {
    /// Transactions left out because (so ∪ wr) is cyclic through them
    /// (reported as cycles at the weaker levels).
    pub cyclic: usize,
    /// The vector clocks would exceed the memory limit: nothing was done.
    pub too_large: Option<usize>,
}

/// Vector-clock entries above which the causal check gives up (4 bytes
/// each: 1 GiB).
pub const MAX_CLOCK_ENTRIES: usize = 1 << 28;

/// Causal edges (those of the weaker levels may be repeated as `Cc`).
pub fn causal(obs: &Observations, out: &mut Vec<Inferred>) -> CausalReport {
    let mut report = CausalReport::default();
    let k = obs.sessions.len();
    let n = obs.n;
    // Dense ids of participating transactions.
    let mut dense = vec![u32::MAX; n];
    let mut ids: Vec<u32> = Vec::new();
    for (t, d) in dense.iter_mut().enumerate() {
        if obs.included[t] {
            *d = ids.len() as u32;
            ids.push(t as u32);
        }
    }
    let m = ids.len();
    let entries = m.saturating_mul(k.max(1));
    if entries > MAX_CLOCK_ENTRIES {
        report.too_large = Some(entries);
        return report;
    }
    // Kahn's topological order of so ∪ wr.
    let mut indeg = vec![0u32; m];
    let mut succ_off = vec![0u32; m + 1];
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for &t in &ids {
        let d = dense[t as usize];
        for r in obs.reads(t) {
            if r.writer != INIT && r.writer != t {
                pairs.push((dense[r.writer as usize], d));
            }
        }
    }
    for s in &obs.sessions {
        for w in s.windows(2) {
            pairs.push((dense[w[0] as usize], dense[w[1] as usize]));
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    for &(a, b) in &pairs {
        succ_off[a as usize + 1] += 1;
        indeg[b as usize] += 1;
    }
    for i in 0..m {
        succ_off[i + 1] += succ_off[i];
    }
    let succ: Vec<u32> = pairs.iter().map(|&(_, b)| b).collect();
    let order = kahn_order(&succ_off, &succ, indeg);
    report.cyclic = m - order.len();

    // Vector clocks: vc[d][s] = how many of session s's transactions happen
    // before or are d.
    let mut vc = vec![0u32; entries];
    let kk = k.max(1);
    // Predecessors are visited through successor lists: push clocks forward.
    for &u in &order {
        let ui = u as usize;
        let t = ids[ui];
        let s = obs.session[t as usize];
        if s != NO_SESSION {
            let e = &mut vc[ui * kk + s as usize];
            *e = (*e).max(obs.pos[t as usize] + 1);
        }
        for &v in &succ[succ_off[ui] as usize..succ_off[ui + 1] as usize] {
            // Row v = max(row v, row u), as two slices (no bounds check
            // per entry; the compiler vectorizes it). A self-loop (none is
            // made) would add nothing.
            let vi = v as usize;
            if vi == ui {
                continue;
            }
            let (from, into) = if ui < vi {
                let (lo, hi) = vc.split_at_mut(vi * kk);
                (&lo[ui * kk..(ui + 1) * kk], &mut hi[..kk])
            } else {
                let (lo, hi) = vc.split_at_mut(ui * kk);
                (&hi[..kk], &mut lo[vi * kk..(vi + 1) * kk])
            };
            for (b, &a) in into.iter_mut().zip(from) {
                *b = (*b).max(a);
            }
        }
    }
    drop(succ);

    // Per key, the sessions that write it (ascending), each with the
    // positions of its writers of the key (ascending): a read looks at
    // those sessions only, with no hashing.
    let writers = KeyWriters::new(obs);
    let mut ordered = vec![false; m];
    for &u in &order {
        ordered[u as usize] = true;
    }
    let mut done: FxHashSet<(u32, u32)> = FxHashSet::default();
    for &t3 in &ids {
        let d = dense[t3 as usize] as usize;
        if !ordered[d] {
            continue;
        }
        done.clear();
        // t3's clock, and its own session's limit: strictly before t3.
        let clock = &vc[d * kk..(d + 1) * kk];
        let (own, own_pos) = (obs.session[t3 as usize], obs.pos[t3 as usize]);
        for r in obs.reads(t3) {
            if !done.insert((r.key, r.writer)) {
                continue;
            }
            for (si, ps) in writers.of(r.key) {
                let limit = if own == si as u32 { own_pos } else { clock[si] };
                if limit == 0 {
                    continue;
                }
                // The latest writer at a position < limit.
                let i = ps.partition_point(|&p| p < limit);
                if i == 0 {
                    continue;
                }
                let p2 = ps[i - 1];
                let t2 = obs.sessions[si][p2 as usize];
                // Already implied when t2 happens before the writer (so ∪ wr
                // are edges of the causal graph): most edges of a valid
                // history, so skipping them bounds the edge list in practice.
                let implied = r.writer != INIT && {
                    let dw = dense[r.writer as usize] as usize;
                    ordered[dw] && vc[dw * kk + si] > p2
                };
                if t2 != r.writer && t2 != t3 && !implied {
                    out.push(Inferred {
                        from: t2,
                        to: r.writer,
                        cat: Cat::Cc,
                        reader: t3,
                        key: r.key,
                    });
                }
            }
        }
    }
    report
}

/// The positions of each session's writers of each key, grouped by key
/// then session (both ascending) in one array.
struct KeyWriters {
    /// `(session, end in pos)` of each group, grouped by key.
    groups: Vec<(u32, u32)>,
    /// Where each key's groups end in `groups` (a key past the end has
    /// none).
    key_end: Vec<u32>,
    /// The positions, group after group.
    pos: Vec<u32>,
}

impl KeyWriters {
    fn new(obs: &Observations) -> KeyWriters {
        let mut all: Vec<(u32, u32, u32)> = Vec::new();
        for (si, s) in obs.sessions.iter().enumerate() {
            for (p, &t) in s.iter().enumerate() {
                for &y in obs.writes(t) {
                    all.push((y, si as u32, p as u32));
                }
            }
        }
        all.sort_unstable();
        let keys = all.last().map_or(0, |&(y, _, _)| y as usize + 1);
        let mut out = KeyWriters {
            groups: Vec::new(),
            key_end: vec![0; keys],
            pos: Vec::with_capacity(all.len()),
        };
        for (i, &(y, si, p)) in all.iter().enumerate() {
            out.pos.push(p);
            let last_of_group = all.get(i + 1).is_none_or(|n| (n.0, n.1) != (y, si));
            if last_of_group {
                out.groups.push((si, out.pos.len() as u32));
                out.key_end[y as usize] = out.groups.len() as u32;
            }
        }
        // A key nobody in a session writes ends where the key before it does.
        for y in 1..keys {
            out.key_end[y] = out.key_end[y].max(out.key_end[y - 1]);
        }
        out
    }

    /// The sessions writing `key`, each with its writers' positions.
    fn of(&self, key: u32) -> impl Iterator<Item = (usize, &[u32])> + '_ {
        let k = key as usize;
        let (lo, hi) = match self.key_end.get(k) {
            Some(&end) => (if k == 0 { 0 } else { self.key_end[k - 1] }, end),
            None => (0, 0),
        };
        self.groups[lo as usize..hi as usize]
            .iter()
            .enumerate()
            .map(move |(i, &(si, end))| {
                let g = lo as usize + i;
                let start = if g == 0 { 0 } else { self.groups[g - 1].1 };
                (si as usize, &self.pos[start as usize..end as usize])
            })
    }
}
