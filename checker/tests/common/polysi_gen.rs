//! Histories of the shape of PolySI's published fig. 7 benchmarks (20
//! sessions, 100–250 transactions a session, 15 micro-ops a transaction,
//! 10k keys, 50 % reads, uniform / zipfian / hotspot keys), from a simulated
//! store, in the PolySI / Plume text format (`op(key,value,session,txn)`,
//! value 0 = every key's initial value; only committed transactions, as
//! PolySI's histories from PostgreSQL). Seeded. Shared by `tests/sat.rs`
//! and `examples/sat_polysi.rs`.
//!
//! The store is a snapshot-isolation database (a transaction reads the
//! snapshot at its start plus its own writes; first committer wins, a loser
//! is retried) or a serializable one (a transaction runs alone at its
//! commit). Sessions interleave at random: a step picks a session, which
//! starts a transaction or commits its open one. An injected anomaly makes
//! one transaction misbehave once: `lost-update` lets a transaction commit
//! although a concurrent one wrote one of its keys (first committer wins is
//! skipped once), `stale-read` makes one read return the version before the
//! one its snapshot holds.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;

/// Key distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// Every key alike.
    Uniform,
    /// Zipfian, exponent 1 (PolySI's zipf).
    Zipf,
    /// 80 % of accesses to 20 % of the keys.
    Hotspot,
}

/// Which database produced the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    /// Snapshot isolation.
    Si,
    /// Serializable (serial at commit).
    Ser,
}

/// An anomaly to inject once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inject {
    /// None.
    None,
    /// First committer wins skipped once: two concurrent writers of a key
    /// both commit.
    LostUpdate,
    /// One read returns the version before the one its snapshot holds.
    StaleRead,
}

/// The shape of a history.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub sessions: usize,
    pub txns_per_session: usize,
    pub ops_per_txn: usize,
    pub keys: usize,
    pub read_pct: usize,
    pub dist: Dist,
}

impl Shape {
    /// PolySI's defaults (Table 1) with `txns_per_session`.
    pub fn polysi(txns_per_session: usize, dist: Dist) -> Shape {
        Shape {
            sessions: 20,
            txns_per_session,
            ops_per_txn: 15,
            keys: 10_000,
            read_pct: 50,
            dist,
        }
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Keys {
    dist: Dist,
    n: usize,
    cdf: Vec<f64>,
}

impl Keys {
    fn new(dist: Dist, n: usize) -> Keys {
        let mut cdf = Vec::new();
        if dist == Dist::Zipf {
            let mut acc = 0.0;
            for i in 1..=n {
                acc += 1.0 / i as f64;
                cdf.push(acc);
            }
            for c in &mut cdf {
                *c /= acc;
            }
        }
        Keys { dist, n, cdf }
    }
    fn pick(&self, rng: &mut Rng) -> usize {
        match self.dist {
            Dist::Uniform => rng.below(self.n),
            Dist::Zipf => {
                let u = rng.unit();
                self.cdf.partition_point(|&c| c < u).min(self.n - 1)
            }
            Dist::Hotspot => {
                let hot = (self.n / 5).max(1);
                if rng.below(100) < 80 {
                    rng.below(hot)
                } else {
                    hot + rng.below(self.n - hot)
                }
            }
        }
    }
}

/// One planned micro-op: (is_write, key).
type Plan = Vec<(bool, usize)>;

/// Generates a history of `shape` from `db` with `inject`, as text.
pub fn generate(shape: Shape, db: Db, inject: Inject, seed: u64) -> String {
    let mut rng = Rng(seed ^ 0x9017_5100);
    let keys = Keys::new(shape.dist, shape.keys);
    // versions[k]: (commit number, value), in commit order.
    let mut versions: Vec<Vec<(u64, u64)>> = vec![Vec::new(); shape.keys];
    let mut commits: u64 = 0;
    let mut next_val: u64 = 1;
    let mut next_txn: u64 = 0;
    let mut left: Vec<usize> = vec![shape.txns_per_session; shape.sessions];
    // Open transaction per session: (plan, snapshot commit number).
    let mut open: Vec<Option<(Plan, u64)>> = vec![None; shape.sessions];
    let mut out = String::new();
    let mut injected = inject == Inject::None;
    // The transaction to misbehave: somewhere in the middle.
    let target_commit = (shape.sessions * shape.txns_per_session / 2) as u64;
    let mut live: Vec<usize> = (0..shape.sessions).collect();
    while !live.is_empty() {
        let s = live[rng.below(live.len())];
        let Some((plan, snap)) = open[s].take() else {
            let mut plan = Plan::new();
            for _ in 0..shape.ops_per_txn {
                plan.push((rng.below(100) >= shape.read_pct, keys.pick(&mut rng)));
            }
            open[s] = Some((plan, commits));
            continue;
        };
        let mut plan = plan;
        let snap = if db == Db::Ser { commits } else { snap };
        let misbehave = !injected && commits >= target_commit;
        let mut lost = false;
        if misbehave && inject == Inject::LostUpdate {
            // Another session, idle, reads and writes a key k that nobody
            // wrote since our snapshot and commits; then we read k (the
            // version before its write) and write k too: a lost update.
            let other = (0..shape.sessions).find(|&o| o != s && open[o].is_none() && left[o] > 0);
            let k = (0..1000)
                .map(|_| keys.pick(&mut rng))
                .find(|&k| versions[k].last().is_none_or(|&(c, _)| c < snap));
            if let (Some(o), Some(k)) = (other, k) {
                let cur = versions[k].last().map_or(0, |x| x.1);
                let (txn, v) = (next_txn, next_val);
                next_txn += 1;
                next_val += 1;
                let _ = writeln!(out, "r({k},{cur},{o},{txn})");
                let _ = writeln!(out, "w({k},{v},{o},{txn})");
                versions[k].push((commits, v));
                commits += 1;
                left[o] -= 1;
                plan.insert(0, (true, k));
                plan.insert(0, (false, k));
                lost = true;
            }
        }
        // First committer wins.
        let conflict = plan
            .iter()
            .any(|&(w, k)| w && versions[k].last().is_some_and(|&(c, _)| c >= snap));
        if conflict && !lost {
            // Aborted: retried from a fresh snapshot.
            open[s] = Some((plan, commits));
            continue;
        }
        let txn = next_txn;
        next_txn += 1;
        let mut own: Vec<(usize, u64)> = Vec::new();
        let mut stale_done = false;
        let mut writes: Vec<(usize, u64)> = Vec::new();
        for &(w, k) in &plan {
            if w {
                let v = next_val;
                next_val += 1;
                let _ = writeln!(out, "w({k},{v},{s},{txn})");
                own.retain(|x| x.0 != k);
                own.push((k, v));
                writes.retain(|x| x.0 != k);
                writes.push((k, v));
            } else {
                let v = match own.iter().find(|x| x.0 == k) {
                    Some(&(_, v)) => v,
                    None => {
                        let vs = &versions[k];
                        let n = vs.partition_point(|&(c, _)| c < snap);
                        if misbehave && inject == Inject::StaleRead && !stale_done && n >= 1 {
                            stale_done = true;
                            if n >= 2 { vs[n - 2].1 } else { 0 }
                        } else if n == 0 {
                            0
                        } else {
                            vs[n - 1].1
                        }
                    }
                };
                let _ = writeln!(out, "r({k},{v},{s},{txn})");
            }
        }
        if lost || stale_done {
            injected = true;
        }
        for (k, v) in writes {
            versions[k].push((commits, v));
        }
        commits += 1;
        left[s] -= 1;
        live.retain(|&x| left[x] > 0 || open[x].is_some());
    }
    out
}
