//! `harness serve` over raw HTTP: the index (with an error row for a
//! malformed run), a run page, refusal of `..` and absolute paths, symlinks
//! out of the store, read-only methods.

mod report_support;

use report_support::{EXPLANATION, invalid_run, malformed_run, raw_get, serve, valid_run};

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    invalid_run(dir.path(), "pg-append", "20261122T040000.000");
    valid_run(dir.path(), "sqlite-wr", "20261121T100000.000");
    malformed_run(dir.path(), "broken-test", "20261120T090000.000");
    // `latest` links are skipped by the index.
    let _ = std::os::unix::fs::symlink("pg-append/20261122T040000.000", dir.path().join("latest"));
    dir
}

#[test]
fn index_lists_runs_and_shows_an_error_row_for_a_malformed_one() {
    let dir = store();
    let srv = serve(dir.path());
    assert!(
        srv.addr.starts_with("127.0.0.1:"),
        "binds localhost by default: {}",
        srv.addr
    );
    let (status, body) = raw_get(&srv.addr, "GET", "/");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("pg-append") && body.contains("sqlite-wr"),
        "{body}"
    );
    assert!(
        body.contains("postgres") && body.contains("list-append") && body.contains("partition")
    );
    assert!(
        body.contains("v-invalid") && body.contains("v-valid"),
        "verdicts in colour"
    );
    assert!(body.contains("G1c"), "anomaly types listed");
    assert!(
        body.contains("class=\"error-row\""),
        "malformed run gets an error row"
    );
    assert!(
        body.contains("broken-test") && body.contains("test.json"),
        "{body}"
    );
    assert_eq!(
        body.matches("<tr").count(),
        1 + 3,
        "header + three runs, no `latest` duplicate"
    );
}

#[test]
fn run_page_shows_config_verdict_explanation_graphs_and_files() {
    let dir = store();
    let srv = serve(dir.path());
    let (status, _) = raw_get(&srv.addr, "GET", "/run/pg-append/20261122T040000.000");
    assert_eq!(status, 301, "directory without slash redirects");
    let (status, body) = raw_get(&srv.addr, "GET", "/run/pg-append/20261122T040000.000/");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("invalid"));
    assert!(body.contains("serializable"));
    // The explanation, HTML-escaped.
    let escaped = EXPLANATION.replace('<', "&lt;").replace('>', "&gt;");
    assert!(body.contains(&escaped), "{body}");
    assert!(
        body.contains("src=\"elle/G1c/0.svg\""),
        "cycle graph inline"
    );
    assert!(body.contains("nodes/n1/postgres.log"), "node logs listed");
    let (status, log) = raw_get(
        &srv.addr,
        "GET",
        "/run/pg-append/20261122T040000.000/nodes/n1/postgres.log",
    );
    assert_eq!(status, 200);
    assert!(log.contains("database system is ready"));
    // The malformed run's page still renders, with the error.
    let (status, body) = raw_get(&srv.addr, "GET", "/run/broken-test/20261120T090000.000/");
    assert_eq!(status, 200);
    assert!(body.contains("error reading run"), "{body}");
}

#[test]
fn traversal_and_absolute_paths_are_refused() {
    let dir = store();
    let secret = dir
        .path()
        .parent()
        .map(|p| p.join("reports-serve-secret.txt"));
    let srv = serve(dir.path());
    for target in [
        "/run/../../../../etc/passwd",
        "/run/pg-append/../../etc/passwd",
        "/run/%2e%2e/%2e%2e/etc/passwd",
        "/run/pg-append/%2E%2E/%2E%2E/etc/passwd",
        "/../etc/passwd",
        "/run/..",
        "/run/./pg-append/",
    ] {
        let (status, body) = raw_get(&srv.addr, "GET", target);
        assert_eq!(status, 400, "{target}: {body}");
        assert!(!body.contains("root:"), "{target} leaked /etc/passwd");
    }
    for target in [
        "//etc/passwd",
        "/run//etc/passwd",
        "/run/%2Fetc%2Fpasswd",
        "/run/a%5C..%5Cb",
    ] {
        let (status, body) = raw_get(&srv.addr, "GET", target);
        assert_eq!(status, 400, "{target}: {body}");
        assert!(!body.contains("root:"), "{target} leaked /etc/passwd");
    }
    // A symlink inside the store that leads out of it is refused.
    let _ = std::os::unix::fs::symlink("/etc", dir.path().join("pg-append/escape"));
    let (status, body) = raw_get(&srv.addr, "GET", "/run/pg-append/escape/passwd");
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("root:"));
    drop(secret);
}

#[test]
fn serve_is_read_only() {
    let dir = store();
    let srv = serve(dir.path());
    for m in ["POST", "PUT", "DELETE"] {
        let (status, _) = raw_get(
            &srv.addr,
            m,
            "/run/pg-append/20261122T040000.000/results.json",
        );
        assert_eq!(status, 405, "{m}");
    }
    assert!(
        dir.path()
            .join("pg-append/20261122T040000.000/results.json")
            .exists()
    );
}

#[test]
fn serve_refuses_a_missing_store() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let missing = dir.path().join("no-such-store");
    let (code, _, err) = report_support::harness(&[
        "serve",
        "--port",
        "0",
        "--store",
        &missing.to_string_lossy(),
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("no-such-store"), "{err}");
}

#[test]
fn serve_accepts_the_directory_holding_runs() {
    // `harness run --store DIR` writes DIR/runs/<test>/<timestamp>/.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    valid_run(&dir.path().join("runs"), "sqlite-wr", "20261121T100000.000");
    let srv = serve(dir.path());
    let (status, body) = raw_get(&srv.addr, "GET", "/");
    assert_eq!(status, 200);
    assert!(
        body.contains("sqlite-wr") && body.contains("v-valid"),
        "{body}"
    );
}

#[test]
fn a_compressed_history_is_served_as_edn_and_json_lines_on_request() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = report_support::g1c_run(dir.path(), "sim-append", "20261122T050000.000");
    let gz = run.join("history.jsonl.gz");
    store::format::compress_file(&run.join("history.jsonl"), &gz, 1)
        .unwrap_or_else(|e| panic!("{e}"));
    let plain = std::fs::read_to_string(run.join("history.jsonl")).unwrap_or_default();
    std::fs::remove_file(run.join("history.jsonl")).unwrap_or_else(|e| panic!("{e}"));
    let srv = serve(dir.path());
    let base = "/run/sim-append/20261122T050000.000";
    let (status, page) = raw_get(&srv.addr, "GET", &format!("{base}/"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("href=\"history.edn\""), "{page}");
    let (status, edn) = raw_get(&srv.addr, "GET", &format!("{base}/history.edn"));
    assert_eq!(status, 200, "{edn}");
    assert!(
        edn.contains(":type :invoke") && edn.contains(":append"),
        "{edn}"
    );
    let (status, jsonl) = raw_get(&srv.addr, "GET", &format!("{base}/history.jsonl"));
    assert_eq!(status, 200);
    assert_eq!(jsonl.lines().count(), plain.lines().count());
    assert!(!run.join("history.edn").exists(), "serve stays read-only");
}
