//! Property test: on thousands of random small rw-register histories
//! (2–4 sessions, 1–3 micro-ops per transaction, 2–3 keys, unique values
//! per key, reads of the initial state, of own earlier and later writes,
//! of intermediate, aborted, indeterminate and unwritten values; some
//! transactions aborted, some indeterminate), `checker::check`'s verdict at
//! Biswas & Enea's / Plume's read committed (`strong-session-read-committed`, alias `RC`),
//! read atomic (`read-atomic`) and causal consistency (`causal-cerone`)
//! agrees with a brute-force reference written from the definitions
//! (B&E OOPSLA 2019 Def. 2.5; Plume OOPSLA 2024 §2), not
//! from the implementation:
//!
//! 1. an indeterminate transaction may or may not have committed: the
//!    history is valid if some choice of the indeterminate transactions
//!    that committed makes it valid (every subset is tried); an
//!    indeterminate transaction's reads are not observations (its client
//!    never got them) and are not judged;
//! 2. the internal conditions, read by read, in program order: a read
//!    after an own write of its key returns the last of them (TAP-d/e);
//!    any other read must not return an own later write (TAP-c), nor a
//!    value nobody wrote (TAP-a), an aborted or not-committed write
//!    (TAP-b), or a write its writer overwrote (TAP-f); what is left is an
//!    external read from the initial transaction t0 or from the writer;
//! 3. some strict total order of t0 (first) and the committed transactions
//!    contains session order and write-read and satisfies the level's
//!    axiom for every external read `t1 →wr(x) t3` and every other
//!    committed `t2` writing x: t2 before t1 when t3 read from t2 earlier
//!    (RC), when t2 →so t3 or t2 →wr t3 (RA), when t2 (so ∪ wr)⁺ t3 (CC).
//!    Every total order is enumerated (the histories are small).
//!
//! A reference "valid" may be `unknown` in harness (an empty dependency
//! graph says nothing); a reference "invalid" must be `false`.

#![allow(
    clippy::needless_range_loop,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

mod common;

use checker::model::ConsistencyModel as M;
use checker::{CheckOptions, Valid, Workload, check};

/// xorshift, so a failure reproduces from its round number.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Ok,
    Fail,
    Info,
}

#[derive(Clone, Copy, Debug)]
struct Mop {
    write: bool,
    key: usize,
    /// 0 = nil (the initial state).
    val: usize,
}

#[derive(Clone, Debug)]
struct T {
    session: usize,
    st: St,
    mops: Vec<Mop>,
}

/// A value no transaction writes.
const GARBAGE: usize = 99;

fn generate(rng: &mut Rng) -> Vec<T> {
    let sessions = 2 + rng.below(3);
    let keys = 2 + rng.below(2);
    let n = 2 + rng.below(5);
    let mut next = vec![1usize; keys];
    let mut txns: Vec<T> = (0..n)
        .map(|_| {
            let st = match rng.below(10) {
                0 => St::Fail,
                1 => St::Info,
                _ => St::Ok,
            };
            let mops = (0..1 + rng.below(3))
                .map(|_| {
                    let key = rng.below(keys);
                    let write = rng.below(20) < 9;
                    let val = if write {
                        next[key] += 1;
                        next[key] - 1
                    } else {
                        0
                    };
                    Mop { write, key, val }
                })
                .collect();
            T {
                session: rng.below(sessions),
                st,
                mops,
            }
        })
        .collect();
    // Reads: mostly another transaction's final write or nil, sometimes
    // anything written to the key (own, intermediate, aborted), garbage.
    for t in 0..n {
        for i in 0..txns[t].mops.len() {
            let m = txns[t].mops[i];
            if m.write {
                continue;
            }
            let mut finals = Vec::new();
            let mut any = Vec::new();
            for (u, x) in txns.iter().enumerate() {
                for (j, w) in x.mops.iter().enumerate() {
                    if w.write && w.key == m.key {
                        any.push(w.val);
                        let last = !x.mops[j + 1..].iter().any(|y| y.write && y.key == m.key);
                        if u != t && last && x.st != St::Fail {
                            finals.push(w.val);
                        }
                    }
                }
            }
            let own_before = txns[t].mops[..i]
                .iter()
                .rev()
                .find(|y| y.write && y.key == m.key)
                .map(|y| y.val);
            let val = match rng.below(20) {
                0..=9 if !finals.is_empty() => finals[rng.below(finals.len())],
                10..=13 => 0,
                14..=15 if own_before.is_some() => own_before.unwrap_or(0),
                16..=18 if !any.is_empty() => any[rng.below(any.len())],
                19 => GARBAGE,
                _ => own_before.unwrap_or(0),
            };
            txns[t].mops[i].val = val;
        }
    }
    txns
}

fn to_text(txns: &[T]) -> String {
    let mut s = String::new();
    for t in txns {
        s.push_str(match t.st {
            St::Ok => "ok ",
            St::Fail => "fail ",
            St::Info => "info ",
        });
        s.push_str(&t.session.to_string());
        for m in &t.mops {
            if m.write {
                s.push_str(&format!(" [w {} {}]", m.key, m.val));
            } else if m.val == 0 {
                s.push_str(&format!(" [r {} nil]", m.key));
            } else {
                s.push_str(&format!(" [r {} {}]", m.key, m.val));
            }
        }
        s.push('\n');
    }
    s
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lvl {
    Rc,
    Ra,
    Cc,
}

/// The reference: some choice of committed indeterminate transactions
/// makes the history satisfy `level` (module docs).
fn reference(txns: &[T], level: Lvl) -> bool {
    let info: Vec<usize> = (0..txns.len())
        .filter(|&t| txns[t].st == St::Info)
        .collect();
    (0..1u32 << info.len()).any(|mask| {
        let committed: Vec<bool> = (0..txns.len())
            .map(|t| {
                txns[t].st == St::Ok
                    || info
                        .iter()
                        .position(|&i| i == t)
                        .is_some_and(|b| mask & (1 << b) != 0)
            })
            .collect();
        satisfies(txns, &committed, level)
    })
}

/// External read: (reader, micro-op, key, writer; `None` = t0).
type Ext = (usize, usize, usize, Option<usize>);

fn satisfies(txns: &[T], committed: &[bool], level: Lvl) -> bool {
    let n = txns.len();
    let writes = |t: usize, k: usize| txns[t].mops.iter().any(|m| m.write && m.key == k);
    // Internal conditions and read-from.
    let mut ext: Vec<Ext> = Vec::new();
    for t in 0..n {
        if txns[t].st != St::Ok {
            continue; // aborted: not in T; indeterminate: reads not observed
        }
        for (i, m) in txns[t].mops.iter().enumerate() {
            if m.write {
                continue;
            }
            let own_before = txns[t].mops[..i]
                .iter()
                .rev()
                .find(|y| y.write && y.key == m.key);
            if let Some(w) = own_before {
                if w.val != m.val {
                    return false; // TAP-d / TAP-e
                }
                continue; // a read of its own write: no write-read edge
            }
            if m.val == 0 {
                ext.push((t, i, m.key, None));
                continue;
            }
            if txns[t].mops[i + 1..]
                .iter()
                .any(|y| y.write && y.key == m.key && y.val == m.val)
            {
                return false; // TAP-c
            }
            let writer = (0..n).find_map(|u| {
                let j = txns[u]
                    .mops
                    .iter()
                    .position(|y| y.write && y.key == m.key && y.val == m.val)?;
                Some((u, j))
            });
            let Some((u, j)) = writer else {
                return false; // TAP-a
            };
            if !committed[u] {
                return false; // TAP-b (aborted, or indeterminate taken as not committed)
            }
            if txns[u].mops[j + 1..]
                .iter()
                .any(|y| y.write && y.key == m.key)
            {
                return false; // TAP-f
            }
            ext.push((t, i, m.key, Some(u)));
        }
    }
    // so, wr, and co = (so ∪ wr)⁺ over the committed transactions.
    let mut so = vec![vec![false; n]; n];
    for a in 0..n {
        for b in a + 1..n {
            if committed[a] && committed[b] && txns[a].session == txns[b].session {
                so[a][b] = true;
            }
        }
    }
    let mut wr = vec![vec![false; n]; n];
    for &(t, _, _, w) in &ext {
        if let Some(w) = w {
            wr[w][t] = true;
        }
    }
    let mut co = vec![vec![false; n]; n];
    for a in 0..n {
        for b in 0..n {
            co[a][b] = so[a][b] || wr[a][b];
        }
    }
    for k in 0..n {
        for i in 0..n {
            if co[i][k] {
                for j in 0..n {
                    if co[k][j] {
                        co[i][j] = true;
                    }
                }
            }
        }
    }
    // The axiom's "t2 before t1" constraints.
    let mut before: Vec<(usize, usize)> = Vec::new();
    for &(t3, i, x, t1) in &ext {
        for t2 in 0..n {
            if !committed[t2] || Some(t2) == t1 || t2 == t3 || !writes(t2, x) {
                continue;
            }
            let saw = match level {
                Lvl::Rc => ext
                    .iter()
                    .any(|&(r, j, _, w)| r == t3 && j < i && w == Some(t2)),
                Lvl::Ra => so[t2][t3] || wr[t2][t3],
                Lvl::Cc => co[t2][t3],
            };
            if saw {
                match t1 {
                    None => return false, // nothing precedes t0
                    Some(t1) => before.push((t2, t1)),
                }
            }
        }
    }
    // Some total order of the committed transactions (after t0) extending
    // so ∪ wr and `before`: enumerate them all.
    let ids: Vec<usize> = (0..n).filter(|&t| committed[t]).collect();
    let mut edge = vec![vec![false; n]; n];
    for a in 0..n {
        for b in 0..n {
            edge[a][b] = so[a][b] || wr[a][b];
        }
    }
    for &(a, b) in &before {
        edge[a][b] = true;
    }
    let mut placed = vec![false; n];
    total_order_exists(&ids, &edge, &mut placed, 0)
}

/// Whether the unplaced transactions of `ids` can be put in some order
/// in which every `edge[a][b]` has a before b (plain enumeration: at each
/// position, every transaction whose predecessors are all placed).
fn total_order_exists(ids: &[usize], edge: &[Vec<bool>], placed: &mut [bool], k: usize) -> bool {
    if k == ids.len() {
        return true;
    }
    for &t in ids {
        if placed[t] || ids.iter().any(|&p| edge[p][t] && !placed[p]) {
            continue;
        }
        placed[t] = true;
        if total_order_exists(ids, edge, placed, k + 1) {
            placed[t] = false;
            return true;
        }
        placed[t] = false;
    }
    false
}

#[test]
fn weak_levels_agree_with_the_definitions() {
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    let levels = [
        (Lvl::Rc, M::StrongSessionReadCommitted),
        (Lvl::Ra, M::ReadAtomic),
        (Lvl::Cc, M::CausalCerone),
    ];
    let rounds = 3000;
    let mut invalid = [0usize; 3];
    // Histories whose verdicts differ between neighbouring levels.
    let (mut rc_only, mut ra_only) = (0usize, 0usize);
    for round in 0..rounds {
        let g = generate(&mut rng);
        let text = to_text(&g);
        let hist = common::h(&text);
        let mut truth = [true; 3];
        for (li, &(lvl, model)) in levels.iter().enumerate() {
            truth[li] = reference(&g, lvl);
            let opts = CheckOptions {
                models: vec![model],
                ..CheckOptions::new(Workload::RwRegister)
            };
            let r = check(&hist, &opts);
            let ok = if truth[li] {
                r.valid != Valid::False
            } else {
                r.valid == Valid::False
            };
            assert!(
                ok,
                "round {round}, {model}: reference says {}, harness {:?} {:?}\n{text}",
                if truth[li] { "valid" } else { "invalid" },
                r.valid,
                r.anomaly_types,
            );
            if !truth[li] {
                invalid[li] += 1;
            }
        }
        // Strength: CC ⇒ RA ⇒ RC (B&E Lemma 2.4).
        assert!(
            truth[2] <= truth[1] && truth[1] <= truth[0],
            "round {round}\n{text}"
        );
        rc_only += usize::from(truth[0] && !truth[1]);
        ra_only += usize::from(truth[1] && !truth[2]);
    }
    // The generator exercises both outcomes at every level, and the
    // differences between the levels.
    for (li, &c) in invalid.iter().enumerate() {
        assert!(
            c > rounds / 10 && c < rounds * 9 / 10,
            "level {li}: {c} invalid of {rounds}"
        );
    }
    assert!(rc_only > 20 && ra_only > 5, "{rc_only} {ra_only}");
}

/// What the weak checks read of the rw-register history `text`.
fn weak_observations(text: &str) -> checker::weak::observe::Observations {
    let hist = common::h(text);
    let txns = checker::txn::Txns::new(&hist);
    let seen = checker::observe::Observations::new(&txns, &hist, Workload::RwRegister);
    checker::weak::observe::Observations::new(&txns, &seen, Workload::RwRegister)
}

/// What lets read atomic decide a valid history from its own edges alone
/// (`weak::check_observed`): on the same random histories, every
/// read-committed edge (from, to) is also a read-atomic one, into the
/// initial state included.
#[test]
fn read_committed_edges_are_read_atomic_edges() {
    use checker::weak::saturate;
    use std::collections::HashSet;
    let mut rng = Rng(0x00DD_BA11_C0FF_EE42);
    let mut nonempty = 0usize;
    for round in 0..3000 {
        let text = to_text(&generate(&mut rng));
        let obs = weak_observations(&text);
        let (mut rc, mut ra) = (Vec::new(), Vec::new());
        saturate::read_committed(&obs, &mut rc);
        saturate::read_atomic(&obs, &mut ra);
        let ra: HashSet<(u32, u32)> = ra.iter().map(|e| (e.from, e.to)).collect();
        for e in &rc {
            assert!(ra.contains(&(e.from, e.to)), "round {round}: {e:?}\n{text}");
        }
        nonempty += usize::from(!rc.is_empty());
    }
    assert!(
        nonempty > 100,
        "{nonempty} histories with read-committed edges"
    );
}

/// Read atomic's write-read edges are exactly the axiom's, computed here
/// pair by pair: for each read of x from t1 and each other transaction t2
/// the reader read from (any key) that writes x, the edge t2 → t1 — no
/// more (a reader of one value, which `read_atomic` skips, has none), no
/// fewer.
#[test]
fn read_atomic_write_read_edges_are_the_axioms() {
    use checker::weak::observe::INIT;
    use checker::weak::saturate::{self, Cat};
    use std::collections::BTreeSet;
    let mut rng = Rng(0x5EED_0F0E_ADE5_0001);
    let mut nonempty = 0usize;
    for round in 0..3000 {
        let text = to_text(&generate(&mut rng));
        let obs = weak_observations(&text);
        let mut ra = Vec::new();
        saturate::read_atomic(&obs, &mut ra);
        let got: BTreeSet<(u32, u32, u32, u32)> = ra
            .iter()
            .filter(|e| matches!(e.cat, Cat::RaWr | Cat::Nr))
            .map(|e| (e.from, e.to, e.reader, e.key))
            .collect();
        let mut want = BTreeSet::new();
        for t3 in 0..obs.n as u32 {
            for r in obs.reads(t3) {
                for q in obs.reads(t3) {
                    let t2 = q.writer;
                    if t2 != INIT && t2 != r.writer && obs.writes_key(t2, r.key) {
                        want.insert((t2, r.writer, t3, r.key));
                    }
                }
            }
        }
        assert_eq!(got, want, "round {round}\n{text}");
        nonempty += usize::from(!want.is_empty());
    }
    assert!(nonempty > 100, "{nonempty} histories with such edges");
}
