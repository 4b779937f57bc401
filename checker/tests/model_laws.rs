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
