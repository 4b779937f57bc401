//! Laws of the anomaly implication graph and the consistency-model lattice,
//! as properties over random models and anomaly sets.

use checker::anomaly::{AnomalyType, all_implied, all_implying};
use checker::model::{
    ConsistencyModel, all_implied_models, all_impossible_models, anomalies_prohibited_by, boundary,
    impossible_models, prohibited_anomaly_types,
};
use checker::result::{Valid, verdict};
use proptest::prelude::*;
use proptest::sample::select;
use std::collections::BTreeSet;

fn model() -> impl Strategy<Value = ConsistencyModel> {
    select(ConsistencyModel::ALL)
}

fn anomaly() -> impl Strategy<Value = AnomalyType> {
    select(AnomalyType::ALL)
}

fn anomalies() -> impl Strategy<Value = BTreeSet<AnomalyType>> {
    proptest::collection::btree_set(anomaly(), 0..6)
}

proptest! {
    #[test]
    fn model_implication_is_reflexive_and_transitive(a in model(), b in model(), c in model()) {
        let from_a = all_implied_models([a]);
        prop_assert!(from_a.contains(&a));
        if from_a.contains(&b) && all_implied_models([b]).contains(&c) {
            prop_assert!(from_a.contains(&c), "{a} => {b} => {c} but not {a} => {c}");
        }
    }

    #[test]
    fn model_implication_is_antisymmetric(a in model(), b in model()) {
        if a != b && all_implied_models([a]).contains(&b) {
            prop_assert!(!all_implied_models([b]).contains(&a), "{a} <=> {b}");
        }
    }

    #[test]
    fn stronger_model_prohibits_a_superset(a in model(), b in model()) {
        if all_implied_models([a]).contains(&b) {
            let pa = anomalies_prohibited_by([a]);
            let pb = anomalies_prohibited_by([b]);
            prop_assert!(pb.is_subset(&pa), "{a} => {b} but {b} prohibits {:?} that {a} allows",
                pb.difference(&pa).collect::<Vec<_>>());
        }
    }

    #[test]
    fn anomaly_implication_is_transitive(a in anomaly(), b in anomaly(), c in anomaly()) {
        let from_a = all_implied([a]);
        prop_assert!(from_a.contains(&a));
        if from_a.contains(&b) && all_implied([b]).contains(&c) {
            prop_assert!(from_a.contains(&c));
        }
        // Forward and backward closures agree.
        prop_assert_eq!(all_implied([a]).contains(&b), all_implying([b]).contains(&a));
    }

    #[test]
    fn implied_anomalies_rule_out_no_more(a in anomaly(), b in anomaly()) {
        if all_implied([a]).contains(&b) {
            prop_assert!(impossible_models([b]).is_subset(&impossible_models([a])));
        }
    }

    /// A model is ruled out by found anomalies exactly when it prohibits one
    /// of them: the two directions of the lattice agree.
    #[test]
    fn impossible_iff_prohibited(m in model(), found in anomalies()) {
        let impossible = impossible_models(found.iter().copied()).contains(&m);
        let prohibited = anomalies_prohibited_by([m]);
        prop_assert_eq!(impossible, found.iter().any(|a| prohibited.contains(a)));
    }

    #[test]
    fn impossible_models_are_upward_closed(found in anomalies()) {
        let imp = impossible_models(found.iter().copied());
        prop_assert_eq!(all_impossible_models(imp.iter().copied()), imp);
    }

    #[test]
    fn boundary_partitions_the_impossible_models(found in anomalies()) {
        let b = boundary(found.iter().copied());
        let imp = impossible_models(found.iter().copied());
        prop_assert!(b.not.is_disjoint(&b.also_not));
        let union: BTreeSet<_> = b.not.union(&b.also_not).copied().collect();
        prop_assert_eq!(union, imp);
        // `not` is an antichain, and every also-not model implies a `not` model.
        for &n in &b.not {
            for &o in &b.not {
                prop_assert!(n == o || !all_implied_models([n]).contains(&o));
            }
        }
        for &s in &b.also_not {
            prop_assert!(all_implied_models([s]).iter().any(|m| b.not.contains(m)), "{s}");
        }
    }

    #[test]
    fn more_models_or_anomalies_prohibit_more(
        ms in proptest::collection::vec(model(), 0..4),
        m in model(),
        xs in proptest::collection::vec(anomaly(), 0..4),
        x in anomaly(),
    ) {
        let base = prohibited_anomaly_types(&ms, &xs);
        let mut ms2 = ms.clone();
        ms2.push(m);
        let mut xs2 = xs.clone();
        xs2.push(x);
        prop_assert!(base.is_subset(&prohibited_anomaly_types(&ms2, &xs2)));
        prop_assert!(prohibited_anomaly_types(&[], &[x]).contains(&x));
    }

    #[test]
    fn names_round_trip(m in model(), a in anomaly()) {
        prop_assert_eq!(ConsistencyModel::parse(m.name()), Ok(m));
        prop_assert_eq!(AnomalyType::parse(a.name()), Ok(a));
    }

    /// Elle's verdict: invalid iff a prohibited anomaly was found; valid iff
    /// nothing reportable was; reported types are found types.
    #[test]
    fn verdict_laws(
        found in anomalies(),
        more in anomalies(),
        ms in proptest::collection::vec(model(), 0..3),
        xs in proptest::collection::vec(anomaly(), 0..3),
    ) {
        let v = verdict(&found, &ms, &xs);
        let prohibited = prohibited_anomaly_types(&ms, &xs);
        prop_assert_eq!(v.valid == Valid::False, found.iter().any(|a| prohibited.contains(a)));
        prop_assert_eq!(v.valid == Valid::True, v.reported.is_empty());
        prop_assert!(v.reported.is_subset(&found));
        if v.valid == Valid::True {
            prop_assert!(v.not.is_empty() && v.also_not.is_empty());
        }
        // Finding more never improves the verdict (invalid > unknown > valid).
        let all: BTreeSet<_> = found.union(&more).copied().collect();
        let w = verdict(&all, &ms, &xs);
        prop_assert_eq!(w.valid.combine(v.valid), w.valid);
    }
}

// ---------------------------------------------------------------------------
// The lattice against the analyses: random small histories checked at every
// model (finding 7 of the review of real histories).

mod random_histories {
    use checker::anomaly::AnomalyType;
    use checker::model::{ConsistencyModel as M, all_implied_models};
    use checker::{Budget, CheckOptions, CheckResult, Valid, Workload};
    use store::{History, Key, MicroOp, Op, OpType, ReadValue, Val};

    /// SplitMix64.
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
        fn pct(&mut self, p: usize) -> bool {
            self.below(100) < p
        }
    }

    /// One planned transaction: (key, Some(value) for a write/append, None
    /// for a read).
    type Plan = Vec<(i64, Option<i64>)>;

    /// A small history of 2–7 transactions over 1–3 sessions and 3 keys:
    /// interleaved, mostly reading what a serial database would (or its own
    /// writes), sometimes any value ever written to the key (aborted, later,
    /// intermediate ones included) or the initial state; 10% aborted, 10%
    /// indeterminate (half of those take effect).
    pub fn generate(seed: u64, workload: Workload) -> History {
        let mut rng = Rng(seed);
        let ntx = 2 + rng.below(6);
        let nsess = 1 + rng.below(3);
        let mut next_val = 1i64;
        let plans: Vec<Plan> = (0..ntx)
            .map(|_| {
                (0..1 + rng.below(3))
                    .map(|_| {
                        let k = rng.below(3) as i64;
                        if rng.pct(50) {
                            next_val += 1;
                            (k, Some(next_val - 1))
                        } else {
                            (k, None)
                        }
                    })
                    .collect()
            })
            .collect();
        // Every value ever written to each key, in plan order.
        let mut all: Vec<Vec<i64>> = vec![Vec::new(); 3];
        for p in &plans {
            for &(k, v) in p {
                if let Some(v) = v {
                    all[k as usize].push(v);
                }
            }
        }
        // The serial database: per key the committed values in order.
        let mut db: Vec<Vec<i64>> = vec![Vec::new(); 3];
        let mut ops: Vec<Op> = Vec::new();
        let mut open: Vec<Option<usize>> = vec![None; nsess];
        let (mut started, mut done) = (0, 0);
        let mop = |k: i64, v: Option<i64>, read: Option<ReadValue>| match (workload, v) {
            (Workload::ListAppend, Some(v)) => MicroOp::Append(Key::int(k), Val::int(v)),
            (Workload::RwRegister, Some(v)) => MicroOp::Write(Key::int(k), Val::int(v)),
            (_, None) => MicroOp::Read(Key::int(k), read.unwrap_or(ReadValue::Nil)),
        };
        while done < ntx {
            let s = rng.below(nsess);
            match open[s] {
                None if started < ntx => {
                    let inv = plans[started]
                        .iter()
                        .map(|&(k, v)| mop(k, v, None))
                        .collect();
                    ops.push(Op::txn(ops.len() as u64, OpType::Invoke, s as u64, inv));
                    open[s] = Some(started);
                    started += 1;
                }
                None => {}
                Some(t) => {
                    open[s] = None;
                    done += 1;
                    let roll = rng.below(10);
                    let status = match roll {
                        0 => OpType::Fail,
                        1 => OpType::Info,
                        _ => OpType::Ok,
                    };
                    let mut own: Vec<Vec<i64>> = vec![Vec::new(); 3];
                    let mut comp = Vec::new();
                    for &(k, v) in &plans[t] {
                        let ku = k as usize;
                        if let Some(v) = v {
                            own[ku].push(v);
                            comp.push(mop(k, Some(v), None));
                            continue;
                        }
                        if status != OpType::Ok {
                            comp.push(mop(k, None, None));
                            continue;
                        }
                        let r = rng.below(100);
                        let list: Vec<i64> = if r < 60 {
                            let mut l = db[ku].clone();
                            l.extend(own[ku].iter().copied());
                            l
                        } else if r < 85 && !all[ku].is_empty() {
                            let n = 1 + rng.below(all[ku].len());
                            all[ku][..n].to_vec()
                        } else {
                            Vec::new()
                        };
                        let read = match workload {
                            Workload::ListAppend => ReadValue::List(
                                list.iter().map(|&v| Val::int(v)).collect::<Vec<_>>().into(),
                            ),
                            Workload::RwRegister => match list.last() {
                                Some(&v) => ReadValue::Scalar(Val::int(v)),
                                None => ReadValue::Nil,
                            },
                        };
                        comp.push(mop(k, None, Some(read)));
                    }
                    let effective = status == OpType::Ok || (status == OpType::Info && rng.pct(50));
                    if effective {
                        for (k, vs) in own.iter().enumerate() {
                            db[k].extend(vs.iter().copied());
                        }
                    }
                    ops.push(Op::txn(ops.len() as u64, status, s as u64, comp));
                }
            }
        }
        History::new(ops).unwrap_or_default()
    }

    /// The models checked: every transactional model of the lattice.
    pub const MODELS: &[M] = &[
        M::ReadUncommitted,
        M::ReadCommitted,
        M::CursorStability,
        M::MonotonicView,
        M::MonotonicSnapshotRead,
        M::MonotonicAtomicView,
        M::ConsistentView,
        M::ForwardConsistentView,
        M::RepeatableRead,
        M::SnapshotIsolation,
        M::UpdateSerializable,
        M::Serializable,
        M::StrictSerializable,
        M::StrongSessionReadUncommitted,
        M::StrongSessionReadCommitted,
        M::StrongReadUncommitted,
        M::StrongReadCommitted,
        M::ReadAtomic,
        M::CausalCerone,
        M::Prefix,
        M::ParallelSnapshotIsolation,
        M::UpdateAtomic,
        M::StrongSessionSnapshotIsolation,
        M::StrongSnapshotIsolation,
        M::StrongSessionSerializable,
    ];

    pub fn check(h: &History, w: Workload, m: M) -> CheckResult {
        let opts = CheckOptions {
            models: vec![m],
            budget: Budget::unlimited(),
            ..CheckOptions::new(w)
        };
        checker::check(h, &opts)
    }

    fn dump(h: &History) -> String {
        h.iter_ops()
            .map(|o| format!("{o:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Checks one history at every model; returns the violations of the
    /// two laws, if any.
    pub fn violations(h: &History, w: Workload) -> Vec<String> {
        let results: Vec<(M, CheckResult)> = MODELS.iter().map(|&m| (m, check(h, w, m))).collect();
        let valid = |m: M| results.iter().find(|(x, _)| *x == m).map(|(_, r)| r.valid);
        let mut bad = Vec::new();
        for (x, rx) in &results {
            // Law 1: x implies y, so y invalid and x valid never happen.
            for y in all_implied_models([*x]) {
                if valid(y) == Some(Valid::False) && rx.valid == Valid::True {
                    let ry = results.iter().find(|(m, _)| *m == y).map(|(_, r)| r);
                    bad.push(format!(
                        "{x} valid but the weaker {y} invalid ({:?})",
                        ry.map(|r| r.anomaly_types.iter().map(|a| a.name()).collect::<Vec<_>>())
                    ));
                }
            }
            // Law 2: what `-c x` rules out, `-c y` never calls valid.
            for y in rx.not.iter().chain(&rx.also_not) {
                if valid(*y) == Some(Valid::True) {
                    bad.push(format!(
                        "-c {x} rules out {y} (found {:?}) but -c {y} is valid",
                        rx.found_types
                            .iter()
                            .map(|a: &AnomalyType| a.name())
                            .collect::<Vec<_>>()
                    ));
                }
            }
        }
        if !bad.is_empty() {
            bad.push(format!("{w:?} history:\n{}", dump(h)));
        }
        bad
    }
}

fn lattice_agrees_with_the_analyses_on(w: checker::Workload, seeds: std::ops::Range<u64>) {
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for seed in seeds {
        let h = random_histories::generate(seed, w);
        let bad = random_histories::violations(&h, w);
        assert!(bad.is_empty(), "seed {seed}:\n{}", bad.join("\n"));
        let v = random_histories::check(&h, w, ConsistencyModel::Serializable).valid;
        *kinds.entry(v.as_str()).or_default() += 1;
    }
    // The generator gives both verdicts (the laws are not vacuous).
    assert!(kinds.get("true").copied().unwrap_or(0) > 50, "{kinds:?}");
    assert!(kinds.get("false").copied().unwrap_or(0) > 50, "{kinds:?}");
}

/// For every lattice pair (stronger, weaker), never weaker invalid and
/// stronger valid; and `-c X` never lists in `not`/`also-not` a model that
/// `-c Y` calls valid. 1,000 random rw-register histories.
#[test]
fn lattice_agrees_with_the_analyses_rw_register() {
    lattice_agrees_with_the_analyses_on(checker::Workload::RwRegister, 0..1000);
}

/// As above, 1,000 random list-append histories.
#[test]
fn lattice_agrees_with_the_analyses_list_append() {
    lattice_agrees_with_the_analyses_on(checker::Workload::ListAppend, 10_000..11_000);
}

// ---------------------------------------------------------------------------
// Histories on which no dependency can be inferred (finding 6) and
// the counterexamples H1–H4 of checker/CONFORMANCE.md.

mod fixed {
    use checker::{Budget, CheckOptions, CheckResult, ConsistencyModel, Workload};
    use store::{History, Key, MicroOp, Op, OpType, ReadValue, Val};

    /// Transactions one after the other, `(process, micro-ops)` each.
    pub fn serial(txns: Vec<(u64, Vec<MicroOp>)>) -> History {
        let mut ops = Vec::new();
        for (p, mops) in txns {
            let inv = mops
                .iter()
                .map(|m| match m {
                    MicroOp::Read(k, _) => MicroOp::Read(k.clone(), ReadValue::Nil),
                    m => m.clone(),
                })
                .collect();
            ops.push(Op::txn(ops.len() as u64, OpType::Invoke, p, inv));
            ops.push(Op::txn(ops.len() as u64, OpType::Ok, p, mops));
        }
        History::new(ops).unwrap_or_default()
    }

    pub fn w(k: i64, v: i64) -> MicroOp {
        MicroOp::Write(Key::int(k), Val::int(v))
    }

    pub fn r(k: i64, v: Option<i64>) -> MicroOp {
        MicroOp::Read(
            Key::int(k),
            v.map_or(ReadValue::Nil, |v| ReadValue::Scalar(Val::int(v))),
        )
    }

    pub fn check(h: &History, w: Workload, models: &[ConsistencyModel]) -> CheckResult {
        let opts = CheckOptions {
            models: models.to_vec(),
            budget: Budget::unlimited(),
            ..CheckOptions::new(w)
        };
        checker::check(h, &opts)
    }

    pub fn names(ms: &[ConsistencyModel]) -> Vec<&'static str> {
        ms.iter().map(|m| m.name()).collect()
    }
}

use checker::Workload;
use fixed::{check, names, r, serial, w};

const DECIDED: [ConsistencyModel; 4] = [
    ConsistencyModel::ReadCommitted,
    ConsistencyModel::ReadAtomic,
    ConsistencyModel::CausalCerone,
    ConsistencyModel::Serializable,
];

/// 1,000 writes over 10 keys from 5 processes, no reads: nothing to infer a
/// dependency from, but the complete checks (weak for read committed, read
/// atomic, causal; sat for serializable) decide it: valid, and the reason
/// says so. Before: `unknown` (empty-transaction-graph).
#[test]
fn write_only_register_history_is_valid_where_a_complete_check_decides() {
    let h = serial(
        (0..1000)
            .map(|i| (i % 5, vec![w((i % 10) as i64, i as i64 + 1)]))
            .collect(),
    );
    for m in DECIDED {
        let res = check(&h, Workload::RwRegister, &[m]);
        assert_eq!(res.valid, Valid::True, "{m}: {:?}", res.anomaly_types);
        assert!(res.anomaly_types.is_empty(), "{m}");
        assert!(
            res.warnings
                .iter()
                .any(|w| w.contains("empty-transaction-graph")
                    && w.contains("complete checks decided")),
            "{m}: {:?}",
            res.warnings
        );
    }
    // Asked for together too.
    assert_eq!(check(&h, Workload::RwRegister, &DECIDED).valid, Valid::True);
}

/// 1,000 reads of the initial state: likewise valid.
#[test]
fn read_only_register_history_is_valid_where_a_complete_check_decides() {
    let h = serial(
        (0..1000)
            .map(|i| (i % 5, vec![r((i % 10) as i64, None)]))
            .collect(),
    );
    for m in DECIDED {
        let res = check(&h, Workload::RwRegister, &[m]);
        assert_eq!(res.valid, Valid::True, "{m}: {:?}", res.anomaly_types);
    }
}

/// Nothing decided stays `unknown`, as Elle says: Elle's inference alone
/// (the complete check off) at serializable, a list-append history (no
/// complete serializable check) at serializable, and a model no complete
/// check decides (cursor-stability).
#[test]
fn write_only_history_stays_unknown_where_nothing_complete_decides() {
    let h = serial(
        (0..100)
            .map(|i| (i % 5, vec![w((i % 10) as i64, i as i64 + 1)]))
            .collect(),
    );
    let elle_only = checker::CheckOptions {
        models: vec![ConsistencyModel::Serializable],
        complete: false,
        ..checker::CheckOptions::new(Workload::RwRegister)
    };
    let res = checker::check(&h, &elle_only);
    assert_eq!(res.valid, Valid::Unknown);
    assert_eq!(res.anomaly_types, vec![AnomalyType::EmptyTransactionGraph]);
    let cs = check(
        &h,
        Workload::RwRegister,
        &[ConsistencyModel::CursorStability],
    );
    assert_eq!(cs.valid, Valid::Unknown);
    // Read committed is decided, cursor-stability is not: unknown.
    let both = check(
        &h,
        Workload::RwRegister,
        &[
            ConsistencyModel::ReadCommitted,
            ConsistencyModel::CursorStability,
        ],
    );
    assert_eq!(both.valid, Valid::Unknown);

    let appends = serial(
        (0..100)
            .map(|i| {
                (
                    i % 5,
                    vec![MicroOp::Append(
                        Key::int(i as i64 % 10),
                        Val::int(i as i64 + 1),
                    )],
                )
            })
            .collect(),
    );
    let ser = check(
        &appends,
        Workload::ListAppend,
        &[ConsistencyModel::Serializable],
    );
    assert_eq!(ser.valid, Valid::Unknown);
    assert_eq!(ser.anomaly_types, vec![AnomalyType::EmptyTransactionGraph]);
    // The weak check decides list-append read committed / read atomic.
    for m in [
        ConsistencyModel::ReadCommitted,
        ConsistencyModel::ReadAtomic,
    ] {
        assert_eq!(
            check(&appends, Workload::ListAppend, &[m]).valid,
            Valid::True,
            "{m}"
        );
    }
}

use store::{Key, MicroOp, Val};

/// H1 (checker/CONFORMANCE.md): T1 writes x=1 (session 0); session 1 runs T2
/// (reads x=1, writes x=2) then T3, which reads x=1 again. Serializable
/// without sessions (T1, T3, T2), so serializable and snapshot-isolation
/// hold; Cerone's read atomic (read your writes across a session) does
/// not. Our read-atomic says so without ruling out serializable (Elle's
/// snapshot-isolation → prefix → … → read-atomic would have).
#[test]
fn h1_serializable_yet_not_read_atomic() {
    let h = serial(vec![
        (0, vec![w(1, 1)]),
        (1, vec![r(1, Some(1)), w(1, 2)]),
        (1, vec![r(1, Some(1))]),
    ]);
    let rw = Workload::RwRegister;
    for m in [
        ConsistencyModel::Serializable,
        ConsistencyModel::SnapshotIsolation,
        ConsistencyModel::ReadCommitted,
        ConsistencyModel::MonotonicAtomicView,
    ] {
        let res = check(&h, rw, &[m]);
        assert_eq!(res.valid, Valid::True, "{m}: {:?}", res.anomaly_types);
    }
    let ra = check(&h, rw, &[ConsistencyModel::ReadAtomic]);
    assert_eq!(ra.valid, Valid::False);
    assert!(
        ra.anomaly_types
            .contains(&AnomalyType::FracturedReadProcess),
        "{:?}",
        ra.anomaly_types
    );
    assert_eq!(names(&ra.not), ["read-atomic"]);
    let ruled_out: Vec<&str> = names(&ra.also_not);
    for m in [
        "serializable",
        "snapshot-isolation",
        "monotonic-atomic-view",
    ] {
        assert!(!ruled_out.contains(&m), "{ruled_out:?}");
    }
    for m in ["causal-cerone", "prefix", "parallel-snapshot-isolation"] {
        assert!(ruled_out.contains(&m), "{ruled_out:?}");
    }
    // With the session order it is not serializable either.
    for m in [
        ConsistencyModel::StrongSessionSerializable,
        ConsistencyModel::StrongSessionSnapshotIsolation,
        ConsistencyModel::CausalCerone,
    ] {
        assert_eq!(check(&h, rw, &[m]).valid, Valid::False, "{m}");
    }
}

/// H4 (§5.3): T1 writes x=1; T2 reads it and writes x=2, y=2; T3 reads
/// y=2, then x=1 — a non-monotonic read, over two keys, which Adya's
/// cursor stability (one-item G-cursor) allows and our read-committed
/// (Biswas & Enea's) forbids. Read-committed's `also-not` no longer lists
/// cursor-stability; every model that implies read-committed (here the
/// ones whose checks run the weak check) is invalid too.
#[test]
fn h4_cursor_stability_yet_not_read_committed() {
    let h = serial(vec![
        (0, vec![w(1, 1)]),
        (1, vec![r(1, Some(1)), w(1, 2), w(2, 2)]),
        (2, vec![r(2, Some(2)), r(1, Some(1))]),
    ]);
    let rw = Workload::RwRegister;
    let cs = check(&h, rw, &[ConsistencyModel::CursorStability]);
    assert_eq!(cs.valid, Valid::True, "{:?}", cs.anomaly_types);
    let rc = check(&h, rw, &[ConsistencyModel::ReadCommitted]);
    assert_eq!(rc.valid, Valid::False);
    assert_eq!(
        rc.anomaly_types,
        vec![AnomalyType::NonMonotonicRead],
        "{:?}",
        rc.anomaly_types
    );
    assert_eq!(names(&rc.not), ["read-committed"]);
    assert!(!rc.also_not.contains(&ConsistencyModel::CursorStability));
    for m in [
        ConsistencyModel::MonotonicAtomicView,
        ConsistencyModel::ConsistentView,
        ConsistencyModel::RepeatableRead,
        ConsistencyModel::SnapshotIsolation,
        ConsistencyModel::Serializable,
        ConsistencyModel::ReadAtomic,
    ] {
        assert!(rc.also_not.contains(&m), "{m}");
        assert_eq!(check(&h, rw, &[m]).valid, Valid::False, "{m}");
    }
}
