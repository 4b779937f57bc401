//! Histories recorded from real databases (`testdata/recorded/`), checked
//! on every `cargo test`: what a live run showed once stays shown.

#![allow(clippy::unwrap_used, clippy::panic)]

use checker::model::ConsistencyModel;
use checker::{CheckOptions, Valid, Workload};
use std::path::Path;

fn recorded(name: &str) -> store::History {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/recorded")
        .join(name);
    match store::format::load_history(&path) {
        Ok((h, _warnings)) => h,
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

fn serializable(history: &store::History, complete: bool) -> checker::CheckResult {
    let mut opts = CheckOptions::new(Workload::RwRegister);
    opts.models = vec![ConsistencyModel::Serializable];
    opts.complete = complete;
    checker::check(history, &opts)
}

/// PostgreSQL 15 at repeatable read allows write skew. In this run Elle's
/// inference alone finds no cycle (it cannot order the versions it would
/// need); the complete check proves G2-item.
#[test]
fn postgres_repeatable_read_write_skew_that_only_the_complete_check_proves() {
    let h = recorded("postgres15-rr-wr-seed22.jsonl.gz");
    let elle = serializable(&h, false);
    assert_ne!(elle.valid, Valid::False, "{:?}", elle.anomaly_types);
    let complete = serializable(&h, true);
    assert_eq!(complete.valid, Valid::False);
    assert!(
        complete
            .anomaly_types
            .iter()
            .any(|t| t.name().starts_with("G2")),
        "{:?}",
        complete.anomaly_types
    );
}
