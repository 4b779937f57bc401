//! Every history of the conformance corpus (testdata/conformance) reads, and converts
//! JSON → EDN → JSON and EDN → JSON → EDN with its ops unchanged.

// Tests may panic on failure; the workspace lints target library code.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]
use std::path::{Path, PathBuf};
use store::format::{self, Format};

fn corpus() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/conformance"
    ))
    .to_path_buf()
}

fn histories() -> Vec<PathBuf> {
    let manifest = corpus().join("MANIFEST.json");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let v: serde_json::Value = serde_json::from_str(&text).expect("MANIFEST.json parses");
    let mut out: Vec<PathBuf> = v
        .as_array()
        .expect("MANIFEST.json is an array")
        .iter()
        .map(|e| corpus().join(e["history"].as_str().expect("history is a string")))
        .collect();
    out.sort();
    out.dedup();
    out
}

fn via(ops: &[store::Op], f: Format) -> Vec<store::Op> {
    let mut buf = Vec::new();
    format::write_ops(&mut buf, ops, f).expect("write to memory");
    let text = String::from_utf8(buf).expect("writers write UTF-8");
    let back = format::read_str(&text, f).unwrap_or_else(|e| panic!("re-read as {f}: {e}\n{text}"));
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);
    back.ops
}

#[test]
fn every_manifest_history_reads_and_round_trips() {
    let hs = histories();
    assert!(
        hs.len() >= 50,
        "expected the whole corpus, found {}",
        hs.len()
    );
    for h in &hs {
        let out = format::read_path(h).unwrap_or_else(|e| panic!("{e}"));
        assert!(!out.ops.is_empty(), "{}: no ops", h.display());
        assert!(
            out.warnings.is_empty(),
            "{}: {:?}",
            h.display(),
            out.warnings
        );
        let is_edn = h.extension().is_some_and(|e| e == "edn");
        assert_eq!(out.format == Format::Edn, is_edn, "{}", h.display());
        // Both directions, through both JSON writers.
        for json in [Format::JsonLines, Format::ElleJson] {
            let (a, b) = if is_edn {
                (Format::Edn, json)
            } else {
                (json, Format::Edn)
            };
            let once = via(&out.ops, b);
            assert_eq!(once, out.ops, "{}: {a} → {b}", h.display());
            let twice = via(&once, a);
            assert_eq!(twice, out.ops, "{}: {a} → {b} → {a}", h.display());
        }
        // And they form valid histories.
        format::load_history(h).unwrap_or_else(|e| panic!("{e}"));
    }
}
