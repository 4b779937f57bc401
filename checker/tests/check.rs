//! `checker::check` end to end: analysis + Elle's verdict. Empty and
//! undecidable runs are unknown (never valid), requested models and extra
//! anomalies decide what fails, and every anomaly found counts for `not`.

mod common;

use checker::anomaly::AnomalyType as A;
use checker::model::ConsistencyModel as M;
use checker::{Budget, CheckOptions, CheckResult, Valid, Workload, check};
use common::h;

fn run(text: &str, models: &[M], extra: &[A]) -> CheckResult {
    let hist = h(text);
    let opts = CheckOptions {
        models: models.to_vec(),
        anomalies: extra.to_vec(),
        ..CheckOptions::new(Workload::ListAppend)
    };
    check(&hist, &opts)
}

fn names<T: std::fmt::Display>(xs: &[T]) -> Vec<String> {
    xs.iter().map(ToString::to_string).collect()
}

/// Elle's README example: T2 -wr-> T1 on y, T1 -ww-> T2 on x.
const G1C: &str = "invoke 0 [a x 1] [r y nil]
                   invoke 1 [a x 2] [a y 1]
                   ok 1 [a x 2] [a y 1]
                   ok 0 [a x 1] [r y [1]]
                   ok 2 [r x [1 2]]";

#[test]
fn nothing_committed_is_unknown_never_valid() {
    for text in [
        "",
        "fail 0 [a x 1]\nfail 1 [a x 2]",
        "info 0 [a x 1]",
        "ok 0 [r x []]",
    ] {
        let r = run(text, &[M::StrictSerializable], &[]);
        assert_eq!(r.valid, Valid::Unknown, "{text:?}: {:?}", r.anomaly_types);
        assert_eq!(r.anomaly_types, vec![A::EmptyTransactionGraph], "{text:?}");
        assert!(r.not.is_empty(), "{text:?}");
    }
}

#[test]
fn serial_history_is_valid_and_prints_only_valid() {
    let r = run(
        "ok 0 [a x 1]\nok 1 [r x [1]] [a y 1]\nok 0 [r y [1]] [r x [1]]",
        &[M::StrictSerializable],
        &[A::G0],
    );
    assert_eq!(r.valid, Valid::True, "{:?}", r.anomaly_types);
    assert_eq!(r.to_json(), serde_json::json!({"valid?": true}));
}

#[test]
fn models_and_extra_anomalies_decide_what_fails() {
    let r = run(G1C, &[M::StrictSerializable], &[]);
    assert_eq!(r.valid, Valid::False);
    assert_eq!(names(&r.anomaly_types), ["G1c"]);
    // Cursor stability does not imply our read-committed (it allows
    // non-monotonic reads): both are weakest models ruled out.
    assert_eq!(names(&r.not), ["cursor-stability", "read-committed"]);
    assert!(names(&r.also_not).contains(&"strong-serializable".to_string()));
    assert_eq!(r.anomalies[&A::G1c].len(), 1);

    // read-uncommitted allows G1c.
    assert_eq!(run(G1C, &[M::ReadUncommitted], &[]).valid, Valid::True);
    // No models, extra G1: G1c implies G1.
    assert_eq!(run(G1C, &[], &[A::G1]).valid, Valid::False);
    // No models, extra G0: G1c does not imply G0.
    assert_eq!(run(G1C, &[], &[A::G0]).valid, Valid::True);
    // The default model is strict-serializable.
    let hist = h(G1C);
    let d = check(&hist, &CheckOptions::new(Workload::ListAppend));
    assert_eq!(d.valid, Valid::False);
}

#[test]
fn unrequested_anomalies_count_for_not_but_not_for_validity() {
    // Write skew: each txn reads the key the other appends to (G2-item).
    let skew = "invoke 0 [a x 1] [r y nil]
                invoke 1 [a y 1] [r x nil]
                ok 0 [a x 1] [r y []]
                ok 1 [a y 1] [r x []]
                ok 2 [r x [1]] [r y [1]]";
    let si = run(skew, &[M::SnapshotIsolation], &[]);
    assert_eq!(si.valid, Valid::True, "{:?}", si.found_types);
    assert!(si.anomaly_types.is_empty());
    assert!(si.found_types.contains(&A::G2Item), "{:?}", si.found_types);
    let ser = run(skew, &[M::Serializable], &[]);
    assert_eq!(ser.valid, Valid::False);
    assert_eq!(names(&ser.anomaly_types), ["G2-item"]);
    assert_eq!(names(&ser.not), ["repeatable-read"]);
}

#[test]
fn exhausted_budget_is_unknown_never_valid() {
    let hist = h(G1C);
    let opts = CheckOptions {
        budget: Budget::steps(0),
        ..CheckOptions::new(Workload::ListAppend)
    };
    let r = check(&hist, &opts);
    assert_ne!(r.valid, Valid::True);
    assert!(
        r.found_types.contains(&A::CycleSearchTimeout),
        "{:?}",
        r.found_types
    );
    assert!(r.anomaly_types.contains(&A::CycleSearchTimeout));
    // Whatever else was proven before the budget ran out still fails the
    // check (e.g. a cycle-exists summary); with nothing else, unknown.
    let decisive = r
        .found_types
        .iter()
        .any(|a| !a.is_unknown() && r.anomaly_types.contains(a));
    assert_eq!(
        r.valid,
        if decisive {
            Valid::False
        } else {
            Valid::Unknown
        },
        "{:?}",
        r.found_types
    );
    // A probe that says "expired" right away behaves the same.
    let opts = CheckOptions {
        budget: Budget::until(Box::new(|| true)),
        ..CheckOptions::new(Workload::ListAppend)
    };
    assert_ne!(check(&hist, &opts).valid, Valid::True);
}

#[test]
fn garbage_reads_fail_every_model() {
    let r = run("ok 0 [a x 1]\nok 1 [r x [1 9]]", &[M::ReadUncommitted], &[]);
    assert_eq!(r.valid, Valid::False, "{:?}", r.found_types);
    assert!(
        r.anomaly_types.contains(&A::GarbageRead),
        "{:?}",
        r.anomaly_types
    );
    assert_eq!(names(&r.not), ["read-uncommitted"]);
}

#[test]
fn edn_and_json_agree() {
    let r = run(G1C, &[M::StrictSerializable], &[]);
    let j = r.to_json();
    assert_eq!(j["valid?"], serde_json::json!(false));
    assert_eq!(j["anomaly-types"], serde_json::json!(["G1c"]));
    let e = r.to_edn();
    assert!(e.contains(":valid? false"), "{e}");
    assert!(e.contains(":anomaly-types [:G1c]"), "{e}");
    assert!(
        e.contains(":not [:cursor-stability :read-committed]"),
        "{e}"
    );
    assert!(e.contains(":G1c [{"), "{e}");
}

#[test]
fn a_history_of_another_workload_is_never_valid() {
    // A list-append history checked as rw-register: every list read would be
    // ignored, so it must not pass (Elle: unexpected-txn-micro-op-types).
    let hist = h("ok 0 [a x 1]\nok 1 [r x [1]]");
    let r = check(&hist, &CheckOptions::new(Workload::RwRegister));
    assert_eq!(r.valid, Valid::Unknown, "{:?}", r.found_types);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("unexpected-txn-micro-op-types")),
        "{:?}",
        r.warnings
    );
    assert_eq!(
        check(&hist, &CheckOptions::new(Workload::ListAppend)).valid,
        Valid::True
    );
    // Found anomalies still make it invalid.
    let r = check(&h(G1C), &CheckOptions::new(Workload::RwRegister));
    assert_ne!(r.valid, Valid::True);
}

fn register(hist: store::History, models: &[M]) -> CheckResult {
    let opts = CheckOptions {
        models: models.to_vec(),
        ..CheckOptions::new(Workload::RwRegister)
    };
    check(&hist, &opts)
}

#[test]
fn a_read_of_the_named_initial_value_reads_the_initial_state() {
    // PolySI / Plume / AWDIT files: `0` is every key's initial value.
    let text = "ok 0 [w x 1]\nok 1 [r y 0] [r x 1]";
    let plain = register(h(text), &[M::Serializable]);
    assert!(
        plain.found_types.contains(&A::GarbageRead),
        "{:?}",
        plain.found_types
    );
    let zero = Some(store::Val::int(0));
    let r = register(h(text).with_initial_value(zero.clone()), &[M::Serializable]);
    assert!(
        !r.found_types.contains(&A::GarbageRead),
        "{:?}",
        r.found_types
    );
    assert_eq!(r.valid, Valid::True, "{:?}", r.found_types);
    // Two read-modify-writes from the initial state: a lost update.
    let lost = h("ok 0 [r x 0] [w x 1]\nok 1 [r x 0] [w x 2]").with_initial_value(zero.clone());
    let r = register(lost, &[M::SnapshotIsolation]);
    assert!(
        r.found_types.contains(&A::LostUpdate),
        "{:?}",
        r.found_types
    );
    assert!(
        !r.found_types.contains(&A::GarbageRead),
        "{:?}",
        r.found_types
    );
    // A key some transaction writes 0 to: a read of 0 there has a writer.
    let written = h("ok 0 [w x 0]\nok 1 [r x 0] [w x 5]").with_initial_value(zero);
    let r = register(written, &[M::Serializable]);
    assert_eq!(r.valid, Valid::True, "{:?}", r.found_types);
}
