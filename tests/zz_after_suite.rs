//! After the whole suite: nothing a fault or a database lifecycle set up is
//! left behind — no iptables chain or rule of harness's, no traffic-control
//! qdisc, no lossy-filesystem mount, no process still under a libfaketime
//! control file, no harness daemon or database process started from a
//! test's temporary directory.
//!
//! Cargo runs test binaries one after another, so when this one runs every
//! earlier binary has finished; `.ci/run` runs it once more as its last
//! step, after every binary. It only looks for what is recognisably
//! harness's: other programs on the machine run their own `postgres` and
//! `mariadbd`, which it never names.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let o = Command::new(cmd).args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Network namespaces: the root one (`None`) and every named one.
fn namespaces() -> Vec<Option<String>> {
    let mut out = vec![None];
    if let Some(list) = output("ip", &["netns", "list"]) {
        out.extend(
            list.lines()
                .filter_map(|l| l.split_whitespace().next())
                .map(|n| Some(n.to_string())),
        );
    }
    out
}

fn in_ns(ns: &Option<String>, cmd: &[&str]) -> Option<String> {
    match ns {
        None => output(cmd[0], &cmd[1..]),
        Some(n) => {
            let mut args = vec!["netns", "exec", n.as_str()];
            args.extend_from_slice(cmd);
            output("ip", &args)
        }
    }
}

/// Lines of `iptables -S` that mention a chain of harness's.
fn harness_rules() -> Vec<String> {
    let mut left = Vec::new();
    for ns in namespaces() {
        for table in ["filter", "mangle", "raw"] {
            let Some(rules) = in_ns(&ns, &["iptables", "-t", table, "-S"]) else {
                continue;
            };
            left.extend(
                rules
                    .lines()
                    .filter(|l| l.contains("harness"))
                    .map(|l| format!("{} {table}: {l}", ns.as_deref().unwrap_or("host"))),
            );
        }
    }
    left
}

/// Rate-limiting or other non-default qdiscs (a packet fault's `tbf`).
fn fault_qdiscs() -> Vec<String> {
    let mut left = Vec::new();
    for ns in namespaces() {
        let Some(q) = in_ns(&ns, &["tc", "qdisc", "show"]) else {
            continue;
        };
        left.extend(
            q.lines()
                .filter(|l| l.contains(" tbf ") || l.contains(" netem "))
                .map(|l| format!("{}: {l}", ns.as_deref().unwrap_or("host"))),
        );
    }
    left
}

/// What a process is: its command line and whether its environment names a
/// libfaketime control file.
fn processes() -> Vec<(u32, String, bool)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let faked = std::fs::read(e.path().join("environ"))
            .map(|env| {
                env.split(|b| *b == 0)
                    .any(|v| v.starts_with(b"FAKETIME_TIMESTAMP_FILE="))
            })
            .unwrap_or(false);
        out.push((pid, cmd.trim().to_string(), faked));
    }
    out
}

/// A process harness or its tests started: a harness daemon, or a database
/// whose command line points into a test's temporary directory.
fn ours(cmd: &str) -> bool {
    let harness_daemon = cmd.contains("harness lossyfs")
        || cmd.contains("/harness run ")
        || cmd.contains("/harness serve");
    let temp = std::env::temp_dir();
    let temp = temp.to_string_lossy();
    let in_test_tmp = cmd.contains(&format!("{temp}/.tmp"));
    let database = ["postgres", "mariadbd", "mysqld", "etcd", "patroni"]
        .iter()
        .any(|d| cmd.contains(d));
    harness_daemon || (database && in_test_tmp)
}

#[test]
#[ignore = "needs root (iptables, namespaces, other users' /proc): run by .ci/run after the suite"]
fn nothing_of_harness_is_left_after_the_suite() {
    let mut problems = Vec::new();
    problems.extend(harness_rules().into_iter().map(|r| format!("rule: {r}")));
    problems.extend(fault_qdiscs().into_iter().map(|q| format!("qdisc: {q}")));
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    problems.extend(
        mounts
            .lines()
            .filter(|l| l.contains("lossyfs") || (l.contains(" fuse") && l.contains("harness")))
            .map(|l| format!("mount: {l}")),
    );
    for (pid, cmd, faked) in processes() {
        if faked {
            problems.push(format!("under libfaketime: {pid} {cmd}"));
        } else if ours(&cmd) {
            problems.push(format!("process: {pid} {cmd}"));
        }
    }
    // A testbed may stay up between tests; its namespaces were checked
    // above for rules and qdiscs.
    assert!(problems.is_empty(), "left behind:\n{}", problems.join("\n"));
}

#[test]
fn recognises_only_what_is_harness_s() {
    let temp = std::env::temp_dir();
    let temp = temp.display();
    assert!(ours("/opt/ci/target/debug/harness lossyfs mount /x"));
    assert!(ours(&format!(
        "/usr/lib/postgresql/15/bin/postgres -D {temp}/.tmpAbC/data"
    )));
    assert!(!ours(
        "/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main"
    ));
    assert!(!ours("/usr/sbin/mariadbd --datadir=/var/lib/mysql"));
    assert!(!ours("cargo test -p harness"));
}
