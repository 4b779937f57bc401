//! Conformance with Porcupine's own test data: every etcd log and every kv
//! history gets Porcupine's expected verdict (`testdata/porcupine/README.md`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::Budget;
use checker::linear::{LinearOptions, check_kv, check_register};
use checker::result::Valid;
use std::path::PathBuf;

/// Porcupine's `checkJepsen(t, n, true)` cases.
const ETCD_LINEARIZABLE: &[u32] = &[
    2, 5, 7, 18, 25, 31, 38, 45, 48, 49, 51, 53, 56, 67, 75, 76, 80, 87, 92, 98, 100, 101, 102,
];

fn data(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/porcupine")
        .join(p)
}

#[test]
fn etcd_logs_match_porcupine() {
    let mut checked = 0;
    for n in 0..=102u32 {
        if n == 95 {
            // Empty: etcd never started in that test; Porcupine has no case.
            continue;
        }
        let path = data(&format!("jepsen/etcd_{n:03}.log"));
        let loaded = store::import::load(&path, None).unwrap();
        assert_eq!(
            loaded.format,
            store::import::FileFormat::Peer(store::import::PeerFormat::PorcupineEtcd)
        );
        let r = check_register(
            &loaded.history,
            &LinearOptions::default(),
            &Budget::unlimited(),
        )
        .unwrap();
        let want = if ETCD_LINEARIZABLE.contains(&n) {
            Valid::True
        } else {
            Valid::False
        };
        assert_eq!(r.valid, want, "etcd_{n:03}.log");
        checked += 1;
    }
    assert_eq!(checked, 102);
}

#[test]
fn kv_histories_match_porcupine() {
    for c in ["c01", "c10", "c50"] {
        for (kind, want) in [("ok", Valid::True), ("bad", Valid::False)] {
            let path = data(&format!("kv/{c}-{kind}.txt"));
            let loaded = store::import::load(&path, None).unwrap();
            let r = check_kv(
                &loaded.history,
                &LinearOptions::default(),
                &Budget::unlimited(),
            )
            .unwrap();
            assert_eq!(r.valid, want, "{c}-{kind}");
            assert!(
                r.keys.len() > 1 || c == "c01",
                "{c}-{kind}: partitioned by key"
            );
        }
    }
}
