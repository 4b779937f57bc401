//! `harness check` on Knossos-style EDN histories of Knossos' models
//! (cas-register with a failed cas, multi-register, mutex, FIFO and
//! unordered queue, set): the verdicts the models' definitions give
//! (`testdata/knossos/README.md` says why each is what it is).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

fn check(args: &[&str], file: &str) -> (Option<i32>, String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/knossos")
        .join(file);
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("check")
        .args(args)
        .arg(&path)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_failed_cas_did_not_happen_in_knossos_edn_and_the_choice_is_printed() {
    for file in ["cas-register-failed-cas.edn", "cas-register-list.edn"] {
        let (code, out, err) = check(&[], file);
        assert_eq!(code, Some(0), "{file}: {out}{err}");
        assert!(out.contains("failed ops: dropped"), "{out}");
        // Read the Porcupine way, the failed cas saw a value other than 0
        // while the register held 0.
        let (code, out, err) = check(&["--failed-ops", "observed"], file);
        assert_eq!(code, Some(1), "{file}: {out}{err}");
        assert!(out.contains("failed ops: observed"), "{out}");
        let (code, _, _) = check(&["--workload", "cas-register"], file);
        assert_eq!(code, Some(0));
    }
}

#[test]
fn a_history_without_client_ops_is_valid_with_a_warning() {
    let (code, out, err) = check(&[], "nemesis-only.edn");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("no client operation"), "{err}");
}

#[test]
fn knossos_models_give_knossos_verdicts() {
    let cases: &[(&str, &str, i32)] = &[
        ("multi-register", "multi-register-ok.edn", 0),
        ("multi-register", "multi-register-bad.edn", 1),
        ("mutex", "mutex-ok.edn", 0),
        ("lock", "mutex-bad.edn", 1),
        ("fifo-queue", "queue-ok.edn", 0),
        ("fifo-queue", "queue-out-of-order.edn", 1),
        ("fifo-queue", "queue-duplicate.edn", 1),
        ("unordered-queue", "queue-ok.edn", 0),
        ("unordered-queue", "queue-out-of-order.edn", 0),
        ("unordered-queue", "queue-duplicate.edn", 1),
        ("linearizable-set", "set-ok.edn", 0),
        ("knossos-set", "set-bad.edn", 1),
    ];
    for &(model, file, want) in cases {
        let (code, out, err) = check(&["--workload", model], file);
        assert_eq!(code, Some(want), "{model} {file}: {out}{err}");
        let verdict = if want == 0 { "valid: " } else { "INVALID: " };
        assert!(
            out.lines()
                .any(|l| l.starts_with(verdict) && l.contains("checked for linearizability")),
            "{model} {file}: {out}"
        );
        if want == 1 {
            assert!(out.contains("impossible in state"), "{model} {file}: {out}");
        }
    }
    // A lock history is told by its ops.
    let (code, out, _) = check(&[], "mutex-bad.edn");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("INVALID: mutex"), "{out}");
    // An op the model does not have is an error naming it.
    let (code, _, err) = check(&["--workload", "mutex"], "set-ok.edn");
    assert_eq!(code, Some(3));
    assert!(err.contains("not an op of Knossos' mutex model"), "{err}");
}
