//! A conversion never changes a verdict: random rw-register
//! histories with `ok`, `fail` and `info` transactions go through every
//! format harness writes — ours (JSON Lines, Elle JSON, EDN) and the peers'
//! (PolySI/Plume text, dbcop JSON, dbcop bincode, Cobra logs) — and the
//! file read back is checked as the original was. A format may refuse a
//! history (an error); it may not write one that checks differently.
//!
//! Checked as serializable: the peer formats hold no times, so real-time
//! order is not theirs to keep (as `harness history convert` says).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::model::ConsistencyModel;
use checker::{CheckOptions, Valid, Workload, check};
use proptest::prelude::*;
use store::History;
use store::format::{Format, read_str, write_ops};
use store::import::{PeerFormat, read_peer, read_peer_bytes, write_peer, write_peer_bytes};

/// One transaction: process, outcome (0 ok, 1 fail, 2 info), micro-ops
/// (write?, key, which earlier value a read sees: 0 = nil).
type Spec = (u8, u8, Vec<(bool, u8, u8)>);

fn spec() -> impl Strategy<Value = Vec<Spec>> {
    prop::collection::vec(
        (
            0u8..4,
            prop_oneof![6 => Just(0u8), 1 => Just(1u8), 2 => Just(2u8)],
            prop::collection::vec((any::<bool>(), 0u8..3, 0u8..4), 1..4),
        ),
        1..14,
    )
}

/// The history of `specs`: each transaction invoked and completed in turn;
/// writes of fresh values per key (1, 2, …), reads of nil or of a value
/// written earlier; an `info` transaction's process is not used again.
fn history(specs: &[Spec]) -> History {
    let mut written: [Vec<u64>; 3] = Default::default();
    let mut next: [u64; 3] = [1; 3];
    let mut lines = String::new();
    let mut index = 0;
    for (i, (p, outcome, mops)) in specs.iter().enumerate() {
        let process = if *outcome == 2 {
            100 + i as u64
        } else {
            u64::from(*p)
        };
        let mut inv = Vec::new();
        let mut done = Vec::new();
        for &(write, k, pick) in mops {
            let k = usize::from(k);
            if write {
                let v = next[k];
                next[k] += 1;
                written[k].push(v);
                inv.push(format!("[\"w\",{k},{v}]"));
                done.push(format!("[\"w\",{k},{v}]"));
            } else {
                inv.push(format!("[\"r\",{k},null]"));
                let seen = match usize::from(pick) {
                    0 => None,
                    n => written[k].get(written[k].len().saturating_sub(n)).copied(),
                };
                done.push(match seen {
                    Some(v) => format!("[\"r\",{k},{v}]"),
                    None => format!("[\"r\",{k},null]"),
                });
            }
        }
        let ty = ["ok", "fail", "info"][usize::from(*outcome)];
        let value = if *outcome == 0 { &done } else { &inv };
        for (t, v) in [("invoke", &inv), (ty, value)] {
            lines.push_str(&format!(
                "{{\"index\":{index},\"time\":{index},\"type\":\"{t}\",\"process\":{process},\"f\":\"txn\",\"value\":[{}]}}\n",
                v.join(",")
            ));
            index += 1;
        }
    }
    let read = read_str(&lines, Format::JsonLines).unwrap();
    History::new(read.ops).unwrap()
}

fn verdict(h: &History) -> (Valid, Vec<String>) {
    let opts = CheckOptions {
        models: vec![ConsistencyModel::Serializable],
        ..CheckOptions::new(Workload::RwRegister)
    };
    let r = check(h, &opts);
    (
        r.valid,
        r.anomaly_types
            .iter()
            .map(|a| a.name().to_string())
            .collect(),
    )
}

/// Every conversion of `h` that is written, read back: (format, history).
fn conversions(h: &History) -> Vec<(String, History)> {
    let mut out = Vec::new();
    for f in [Format::JsonLines, Format::ElleJson, Format::Edn] {
        let mut bytes = Vec::new();
        write_ops(&mut bytes, h.clone().into_ops(), f).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let back = read_str(&text, f).unwrap();
        out.push((format!("{f:?}"), History::new(back.ops).unwrap()));
    }
    for f in [
        PeerFormat::Text,
        PeerFormat::Dbcop,
        PeerFormat::DbcopBincode,
    ] {
        if let Ok(bytes) = write_peer_bytes(h, f) {
            let back = read_peer_bytes(&bytes, f)
                .unwrap_or_else(|e| panic!("{f:?} written but not read back: {e}"));
            out.push((format!("{f:?}"), back));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let cobra = dir.path().join("cobra");
    std::fs::create_dir_all(&cobra).unwrap();
    if write_peer(&cobra, h, PeerFormat::Cobra).is_ok() {
        let (ops, _) = read_peer(&cobra, PeerFormat::Cobra).unwrap();
        if let Ok(back) = History::new(ops) {
            out.push(("Cobra".into(), back));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, .. ProptestConfig::default() })]

    #[test]
    fn every_conversion_keeps_the_verdict(specs in spec()) {
        let h = history(&specs);
        let (want, types) = verdict(&h);
        for (name, back) in conversions(&h) {
            let (got, got_types) = verdict(&back);
            prop_assert_eq!(
                got, want,
                "{}: {:?} → {:?} ({:?} → {:?}) for {:?}",
                name, want, got, types, got_types, specs
            );
        }
    }
}

/// The case the issue found: an `info` write a later read saw. Left out of
/// a text file, that read became a garbage read (invalid); now the text
/// file keeps the write and checks as the original.
#[test]
fn an_info_write_read_later_keeps_its_verdict_in_every_format() {
    let h = history(&[
        (0, 2, vec![(true, 0, 0)]),
        (1, 0, vec![(false, 0, 1)]),
        (1, 0, vec![(true, 1, 0)]),
    ]);
    let (want, _) = verdict(&h);
    assert_ne!(want, Valid::False);
    let convs = conversions(&h);
    assert!(convs.iter().any(|(n, _)| n == "Text"), "text written");
    for (name, back) in convs {
        assert_eq!(verdict(&back).0, want, "{name}");
    }
}
