//! `harness serve` over raw HTTP: the index (with an error row for a
//! malformed run), a run page, refusal of `..` and absolute paths, symlinks
//! out of the store, read-only methods.

#![allow(clippy::panic)]

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

/// A file outside the store that symlinks in the store point at.
fn secret_outside() -> (tempfile::TempDir, std::path::PathBuf) {
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let secret = outside.path().join("secret.json");
    std::fs::write(
        &secret,
        r#"{"name":"SECRET-NAME","valid?":false,"anomaly-types":["SECRET-TYPE"],"config":{"db":"SECRET-DB"}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (outside, secret)
}

fn link(target: &std::path::Path, at: &std::path::Path) {
    let _ = std::fs::remove_file(at);
    std::os::unix::fs::symlink(target, at).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_symlinked_history_out_of_the_store_is_not_served_or_converted() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // A real history outside, gzip-compressed, with a recognisable value.
    let plain = outside.path().join("other.jsonl");
    std::fs::write(
        &plain,
        "{\"index\":0,\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",\"SECRET\",1]]}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let gz = outside.path().join("other.jsonl.gz");
    store::format::compress_file(&plain, &gz, 1).unwrap_or_else(|e| panic!("{e}"));
    let run = valid_run(dir.path(), "t", "20261122T050000.000");
    link(&gz, &run.join("history.jsonl.gz"));
    let srv = serve(dir.path());
    let base = "/run/t/20261122T050000.000";
    for f in ["history.jsonl", "history.edn", "history.jsonl.gz"] {
        let (status, body) = raw_get(&srv.addr, "GET", &format!("{base}/{f}"));
        assert_eq!(status, 403, "{f}: {body}");
        assert!(!body.contains("SECRET"), "{f} leaked: {body}");
    }
    let (status, page) = raw_get(&srv.addr, "GET", &format!("{base}/"));
    assert_eq!(status, 200);
    assert!(
        !page.contains("href=\"history.jsonl\""),
        "no conversion offered for a history out of the store: {page}"
    );
}

#[test]
fn symlinked_test_and_results_json_out_of_the_store_are_not_shown() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (_outside, secret) = secret_outside();
    let a = valid_run(dir.path(), "linked-test", "20261122T050000.000");
    link(&secret, &a.join("test.json"));
    let b = valid_run(dir.path(), "linked-results", "20261122T060000.000");
    link(&secret, &b.join("results.json"));
    let srv = serve(dir.path());
    let (status, index) = raw_get(&srv.addr, "GET", "/");
    assert_eq!(status, 200);
    assert!(!index.contains("SECRET"), "index leaked: {index}");
    assert!(
        index.contains("outside the store"),
        "the rows say why: {index}"
    );
    for (run, file) in [
        ("linked-test/20261122T050000.000", "test.json"),
        ("linked-results/20261122T060000.000", "results.json"),
    ] {
        let (status, page) = raw_get(&srv.addr, "GET", &format!("/run/{run}/"));
        assert_eq!(status, 200, "{page}");
        assert!(!page.contains("SECRET"), "{run} page leaked: {page}");
        let (status, body) = raw_get(&srv.addr, "GET", &format!("/run/{run}/{file}"));
        assert_eq!(status, 403, "{body}");
        assert!(!body.contains("SECRET"));
    }
}

#[test]
fn a_symlinked_explanation_or_directory_out_of_the_store_is_not_shown() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (outside, secret) = secret_outside();
    let run = invalid_run(dir.path(), "pg-append", "20261122T040000.000");
    link(&secret, &run.join("elle/G1c.txt"));
    // A run directory that is a link to one outside.
    let elsewhere = outside.path().join("run");
    valid_run(&elsewhere, "x", "y");
    std::fs::create_dir_all(dir.path().join("linked")).unwrap_or_else(|e| panic!("{e}"));
    link(
        &elsewhere.join("x/y"),
        &dir.path().join("linked/20261122T070000.000"),
    );
    let srv = serve(dir.path());
    let (status, page) = raw_get(&srv.addr, "GET", "/run/pg-append/20261122T040000.000/");
    assert_eq!(status, 200);
    assert!(!page.contains("SECRET"), "{page}");
    let (status, _) = raw_get(&srv.addr, "GET", "/run/linked/20261122T070000.000/");
    assert_eq!(status, 403);
    let (status, _) = raw_get(
        &srv.addr,
        "GET",
        "/run/linked/20261122T070000.000/test.json",
    );
    assert_eq!(status, 403);
    let (_, index) = raw_get(&srv.addr, "GET", "/");
    assert!(!index.contains("linked"), "linked run not listed: {index}");
}

#[test]
fn run_pages_say_the_timeline_is_sampled_what_a_sim_bug_ran_and_the_harness_version() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = dir
        .path()
        .join("sim-list-append-lost-update/20261126T170000.000");
    std::fs::create_dir_all(&run).unwrap_or_else(|e| panic!("{e}"));
    // What `harness run --db sim --sim-bug lost-update` writes.
    std::fs::write(
        run.join("test.json"),
        r#"{"schema_version":1,"name":"sim-list-append-lost-update","harness":{"version":"0.1.0","commit":"abc1234"},
            "config":{"db":"sim","workload":"list-append","isolation":"serializable","sim_bug":"lost-update",
                      "expected_consistency_model":"snapshot-isolation","nemesis":"none"}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        run.join("results.json"),
        r#"{"valid?":false,"anomaly-types":["lost-update"],"anomalies":{"lost-update":[{"key":1}]},"anomaly-counts":{"lost-update":123456},"not":["snapshot-isolation"],"also-not":[]}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(run.join("timeline.html"), "<html></html>").unwrap_or_else(|e| panic!("{e}"));
    let srv = serve(dir.path());
    let (_, page) = raw_get(
        &srv.addr,
        "GET",
        "/run/sim-list-append-lost-update/20261126T170000.000/",
    );
    assert!(!page.contains("timeline of every operation"), "{page}");
    assert!(page.contains("is sampled"), "{page}");
    assert!(
        page.contains("bug mode lost-update, claims snapshot-isolation"),
        "{page}"
    );
    assert!(!page.contains("<td>serializable</td>"), "{page}");
    assert!(
        page.contains("<td id=\"harness-version\">0.1.0 (abc1234)</td>"),
        "{page}"
    );
    assert!(page.contains("(123456 found)"), "exact count: {page}");
    let (_, index) = raw_get(&srv.addr, "GET", "/");
    assert!(
        index.contains("bug mode lost-update, claims snapshot-isolation"),
        "{index}"
    );
}

#[test]
fn run_page_names_the_lost_writes_the_text_report_names() {
    // A real run: the Galera coordinated-crash finding (14 acknowledged
    // appends lost in the first kill of all three nodes), re-checked by
    // `harness analyze`, which rewrites results.json (its `lost-writes` is
    // made by the code that prints `harness run`'s text report).
    let finding = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("findings/galera-flush0-coordinated-crash-lost-writes");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let run = dir.path().join("galera-kill-all/20261127T000000.000");
    std::fs::create_dir_all(&run).unwrap_or_else(|e| panic!("{e}"));
    for f in ["test.json", "history.jsonl.gz"] {
        std::fs::copy(finding.join(f), run.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let (code, out, err) = report_support::harness(&["analyze", &run.display().to_string()]);
    assert_eq!(code, 1, "invalid: {out}\n{err}");
    // The sentences `harness run` prints under LOST ACKNOWLEDGED WRITES
    // (the finding's lost-writes.txt holds that run's), as results.json
    // records them.
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("results.json")).unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report: Vec<String> = results["lost-writes"]["listed"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|l| l["explanation"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(report.len(), 14, "{results}");
    let text = std::fs::read_to_string(finding.join("lost-writes.txt")).unwrap_or_default();
    assert_eq!(
        text.lines().next(),
        Some(report[0].as_str()),
        "the text report's first line"
    );
    let srv = serve(dir.path());
    let (status, page) = raw_get(
        &srv.addr,
        "GET",
        "/run/galera-kill-all/20261127T000000.000/",
    );
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<h2 id=\"lost-writes\">Lost acknowledged writes</h2>"),
        "{page}"
    );
    assert!(
        page.contains("14 write(s) the database acknowledged are missing from every later read (14 in a crash window)"),
        "{page}"
    );
    for sentence in &report {
        assert!(
            page.contains(sentence.as_str()),
            "the page lacks {sentence:?}"
        );
    }
    // The page lists all 14 (results.json keeps up to 100), one row each,
    // with the crash window in its own column.
    let table = &page[page.find("id=\"lost-writes-table\"").unwrap_or(0)..];
    let table = &table[..table.find("</table>").unwrap_or(table.len())];
    assert_eq!(table.matches("<tr><td>").count(), 14, "{table}");
    assert!(
        table.contains("<td>95</td><td>28</td><td>19.920 s (op 4715)</td><td>kill of n1, n2, n3, begun at 19.922 s, done at 20.320 s (op 4761); restarted at 36.928 s (op 5535)</td><td>69.156 s (op 9397)</td>"),
        "{table}"
    );
    // A run without lost writes has no such section.
    let (_, other) = raw_get(&srv.addr, "GET", "/");
    assert!(other.contains("galera-kill-all"), "{other}");
    let plain = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    invalid_run(plain.path(), "pg-append", "20261122T040000.000");
    let srv = serve(plain.path());
    let (_, page) = raw_get(&srv.addr, "GET", "/run/pg-append/20261122T040000.000/");
    assert!(!page.contains("Lost acknowledged writes"), "{page}");
}
