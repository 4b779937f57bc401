//! A cap on the anomalies kept (`checker::check_capped`) changes nothing
//! but the lists: the verdict, the types, `not` and `also-not` are those of
//! the uncapped check; each list is the uncapped list's first cases; the
//! cases left out are counted exactly. On arbitrary histories (every
//! anomaly type the analyses find, many cases of each), both workloads,
//! with and without the complete checks, for strong and weak models.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/register_gen.rs"]
mod register_gen;

#[path = "common/arbitrary.rs"]
mod arbitrary;

#[path = "common/cap_compare.rs"]
mod cap_compare;

use checker::model::ConsistencyModel;
use checker::{CheckOptions, Workload};

#[test]
fn a_cap_keeps_the_first_cases_and_decides_the_same() {
    let model_sets = [
        vec![ConsistencyModel::StrictSerializable],
        vec![ConsistencyModel::SnapshotIsolation],
        vec![ConsistencyModel::ReadCommitted],
        vec![ConsistencyModel::CausalCerone],
    ];
    let mut cut = 0;
    let mut checked = 0;
    for seed in 0..150 {
        let Some(history) = arbitrary::arbitrary_history(seed, 60) else {
            continue;
        };
        for workload in [Workload::ListAppend, Workload::RwRegister] {
            for models in &model_sets {
                for complete in [false, true] {
                    let opts = CheckOptions {
                        models: models.clone(),
                        complete,
                        ..CheckOptions::new(workload)
                    };
                    for cap in [1, 3] {
                        match cap_compare::compare_capped(&history, &opts, cap) {
                            Ok(n) => cut += n,
                            Err(e) => panic!(
                                "seed {seed} {workload:?} {models:?} complete={complete}: {e}"
                            ),
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked >= 1000, "{checked} checks");
    // Many lists were long enough to be cut.
    assert!(cut >= 500, "only {cut} lists were cut");
}
