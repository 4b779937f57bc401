//! No flag is accepted and ignored: every `harness run` flag (read from
//! clap, so a new flag without a decision here fails) against every
//! database of the catalog, reached every way it can be (embedded, `--url`,
//! `--local`, `--nodes`, the testbed, simulated replicas), planned as a run
//! plans it (`RunSpec::validate`, nothing started). Each combination is
//! either used — the decision below says where the run reads the flag — or
//! refused with a message naming the flag.

use super::{RunOnly, checked_run_flags};
use clap::CommandFactory as _;
use db_adapters::catalog::{ClockFaults, DbKind, Placement};
use std::fmt::Write as _;

/// How the database is reached in one column of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// In the process (no URL, no nodes).
    Embedded,
    /// `--sim-replicas 3`.
    Replicas,
    /// `--url`.
    Url,
    /// `--local`.
    Local,
    /// `--nodes n1,n2,n3` (tarball databases: with `--no-setup`).
    Nodes,
    /// `--nodes testbed` (its own SSH login).
    Testbed,
}

#[derive(Clone, Copy, Debug)]
struct Ctx {
    db: DbKind,
    reach: Reach,
}

impl Ctx {
    fn on_nodes(&self) -> bool {
        matches!(self.reach, Reach::Nodes | Reach::Testbed)
    }

    /// The flags that reach the database this way.
    fn base(&self) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "--db".into(),
            self.db.name().into(),
            "--seed".into(),
            "1".into(),
        ];
        // A level the database runs (TiDB runs no serializable).
        if let Some(level) = self.db.isolation_levels().first() {
            v.extend(["--isolation".into(), level.name().into()]);
        }
        let nodes = self.db.min_nodes().max(3);
        match self.reach {
            Reach::Embedded => {}
            Reach::Replicas => v.extend(["--sim-replicas".into(), "3".into()]),
            Reach::Url => v.extend(["--url".into(), url(self.db)]),
            Reach::Local => v.push("--local".into()),
            Reach::Nodes => {
                let list: Vec<String> = (1..=nodes).map(|i| format!("n{i}")).collect();
                v.extend(["--nodes".into(), list.join(",")]);
            }
            Reach::Testbed => v.extend(["--nodes".into(), format!("testbed:{nodes}")]),
        }
        if self.on_nodes() && self.db.is_tarball() {
            v.push("--no-setup".into());
        }
        v
    }
}

/// A URL of `db`'s first scheme.
fn url(db: DbKind) -> String {
    let scheme = db.url_schemes().first().copied().unwrap_or("x");
    format!("{scheme}://127.0.0.1:1")
}

/// Every way `db` is reached (by its catalog entry).
fn reaches(db: DbKind) -> Vec<Reach> {
    let mut r = Vec::new();
    match db.placement() {
        Placement::Embedded => r.push(Reach::Embedded),
        Placement::UrlOrNodes => {
            r.push(Reach::Url);
            if db.has_local_server() {
                r.push(Reach::Local);
            }
            r.extend([Reach::Nodes, Reach::Testbed]);
        }
        Placement::Nodes => r.extend([Reach::Nodes, Reach::Testbed]),
    }
    if db.has_bug_modes() {
        r.push(Reach::Replicas);
    }
    r
}

/// Where a flag is used.
struct Decision {
    /// clap's id of the flag.
    id: &'static str,
    /// The flag with a value that is not its default.
    args: fn(&Ctx) -> Vec<String>,
    /// Flags it shapes (a `--nemesis` package, `--lazyfs`): without them it
    /// is refused everywhere; with them, it is used where `used` says (when
    /// the base with them is accepted at all).
    needs: &'static [&'static str],
    /// Base flags it replaces (`--tarball` instead of `--no-setup`).
    drops: &'static [&'static str],
    /// Where a run reads it.
    used: fn(&Ctx) -> bool,
}

fn a(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn everywhere(_: &Ctx) -> bool {
    true
}

fn nemesis_reach(c: &Ctx) -> bool {
    matches!(
        c.reach,
        Reach::Local | Reach::Nodes | Reach::Testbed | Reach::Replicas
    )
}

fn tarball_on_nodes(c: &Ctx) -> bool {
    c.db.is_tarball() && c.on_nodes()
}

fn tidb(c: &Ctx) -> bool {
    c.db.name() == "tidb"
}

/// Flags the matrix does not walk, with the reason (another test decides them).
const ELSEWHERE: &[(&str, &str)] = &[
    ("db", "the matrix's own axis"),
    (
        "workload",
        "per database by `Database::supports`: db-adapters catalog `workloads_per_database`",
    ),
    ("help", "clap's"),
];

macro_rules! d {
    ($id:literal, $args:expr, $used:expr) => {
        Decision {
            id: $id,
            args: $args,
            needs: &[],
            drops: &[],
            used: $used,
        }
    };
    ($id:literal, $args:expr, needs $needs:expr, $used:expr) => {
        Decision {
            id: $id,
            args: $args,
            needs: $needs,
            drops: &[],
            used: $used,
        }
    };
    ($id:literal, $args:expr, drops $drops:expr, $used:expr) => {
        Decision {
            id: $id,
            args: $args,
            needs: &[],
            drops: $drops,
            used: $used,
        }
    };
}

/// Where each flag is read: the run for every database (limits, output,
/// workload knobs, the model), the database's entry (`check_settings`), the
/// lifecycle on nodes (SSH, teardown, heal), the nemesis packages.
fn decisions() -> Vec<Decision> {
    vec![
        d!(
            "isolation",
            |c| {
                let last =
                    c.db.isolation_levels()
                        .last()
                        .map_or("serializable", |l| l.name());
                a(&["--isolation", last])
            },
            drops & ["--isolation"],
            everywhere
        ),
        d!(
            "expected_consistency_model",
            |_| a(&["--expected-consistency-model", "read-committed"]),
            everywhere
        ),
        d!("url", |c| vec!["--url".into(), url(c.db)], |c| c.reach
            == Reach::Url
            || tarball_url_and_nodes(c)),
        d!("local", |_| a(&["--local"]), |c| c.reach == Reach::Local),
        d!("nodes", |_| a(&["--nodes", "n1,n2,n3"]), |c| c.on_nodes()
            || tarball_url_and_nodes(c)),
        d!("nodes_file", nodes_file, drops & ["--nodes"], |c| c
            .on_nodes()
            || tarball_url_and_nodes(c)),
        d!("sim_replicas", |_| a(&["--sim-replicas", "3"]), |c| c
            .db
            .has_bug_modes()),
        d!("version_order", |_| a(&["--version-order", "db"]), |c| c
            .db
            .records_version_order(c.on_nodes())),
        // Every bug mode runs on the simulated replicas too (their engine
        // options carry the mode).
        d!("sim_bug", |_| a(&["--sim-bug", "lost-update"]), |c| c
            .db
            .has_bug_modes()),
        d!("seed", |_| a(&["--seed", "7"]), everywhere),
        d!("key_count", |_| a(&["--key-count", "3"]), everywhere),
        d!(
            "max_writes_per_key",
            |_| a(&["--max-writes-per-key", "4"]),
            everywhere
        ),
        d!(
            "min_txn_length",
            |_| a(&["--min-txn-length", "2"]),
            everywhere
        ),
        d!(
            "max_txn_length",
            |_| a(&["--max-txn-length", "6"]),
            everywhere
        ),
        d!("read_ratio", |_| a(&["--read-ratio", "0.9"]), everywhere),
        d!("concurrency", |_| a(&["--concurrency", "3"]), everywhere),
        d!("rate", |_| a(&["--rate", "50"]), everywhere),
        d!("time_limit", |_| a(&["--time-limit", "5s"]), everywhere),
        d!("ops", |_| a(&["--ops", "100"]), everywhere),
        d!("op_timeout", |_| a(&["--op-timeout", "2s"]), everywhere),
        d!(
            "recovery_time",
            |_| a(&["--recovery-time", "1s"]),
            everywhere
        ),
        d!(
            "check_time_limit",
            |_| a(&["--check-time-limit", "10s"]),
            everywhere
        ),
        d!("store", |_| a(&["--store", "elsewhere"]), everywhere),
        d!("test_name", |_| a(&["--test-name", "t1"]), everywhere),
        d!("keep", |_| a(&["--keep", "edn"]), everywhere),
        // SSH logins: to given nodes; the testbed has its own.
        d!("ssh_user", |_| a(&["--ssh-user", "tester"]), |c| c.reach
            == Reach::Nodes),
        d!("ssh_key", |_| a(&["--ssh-key", "k"]), |c| c.reach
            == Reach::Nodes),
        d!("ssh_port", |_| a(&["--ssh-port", "2222"]), |c| c.reach
            == Reach::Nodes),
        d!(
            "ssh_strict_host_key_checking",
            |_| a(&["--ssh-strict-host-key-checking"]),
            |c| c.reach == Reach::Nodes
        ),
        d!("nemesis", |_| a(&["--nemesis", "kill"]), nemesis_reach),
        d!(
            "nemesis_interval",
            |_| a(&["--nemesis-interval", "3s"]),
            needs & ["--nemesis", "kill"],
            everywhere
        ),
        d!(
            "nemesis_schedule",
            |_| a(&["--nemesis-schedule", "fixed"]),
            needs & ["--nemesis", "kill"],
            everywhere
        ),
        d!(
            "initial_quiet_period",
            |_| a(&["--initial-quiet-period", "1s"]),
            needs & ["--nemesis", "kill"],
            everywhere
        ),
        d!(
            "nemesis_stable_period",
            |_| a(&["--nemesis-stable-period", "5s"]),
            needs & ["--nemesis", "kill"],
            everywhere
        ),
        d!(
            "choreography_hold",
            |_| a(&["--choreography-hold", "5s"]),
            needs & ["--nemesis", "part-kill"],
            everywhere
        ),
        d!(
            "partition",
            |_| a(&["--partition", "one"]),
            needs & ["--nemesis", "partition"],
            everywhere
        ),
        d!(
            "kill_targets",
            |_| a(&["--kill-targets", "one"]),
            needs & ["--nemesis", "kill"],
            everywhere
        ),
        d!(
            "pause_targets",
            |_| a(&["--pause-targets", "one"]),
            needs & ["--nemesis", "pause"],
            everywhere
        ),
        d!(
            "packet",
            |_| a(&["--packet", "loss=0.5"]),
            needs & ["--nemesis", "packet"],
            everywhere
        ),
        d!(
            "packet_targets",
            |_| a(&["--packet-targets", "one"]),
            needs & ["--nemesis", "packet"],
            everywhere
        ),
        d!(
            "clock_rate",
            |_| a(&["--clock-rate", "2"]),
            needs & ["--nemesis", "clock"],
            |c| c.db.capabilities().clock_faults == ClockFaults::Libfaketime
        ),
        d!(
            "clock_mix",
            |_| a(&["--clock-mix", "strobe-skews"]),
            needs & ["--nemesis", "clock"],
            everywhere
        ),
        d!(
            "clock_monotonic",
            |_| a(&["--clock-monotonic", "fake"]),
            needs & ["--nemesis", "clock"],
            |c| c.db.capabilities().clock_faults == ClockFaults::Libfaketime
        ),
        d!("replica_reads", |_| a(&["--replica-reads"]), |c| c
            .db
            .capabilities()
            .replicas
            && c.on_nodes()),
        d!("leave_db_running", |_| a(&["--leave-db-running"]), |c| c
            .on_nodes()),
        d!("lazyfs", |_| a(&["--lazyfs"]), |c| c
            .db
            .capabilities()
            .lossy_data_dir
            && c.on_nodes()),
        d!(
            "lazyfs_strict",
            |_| a(&["--lazyfs-strict"]),
            needs & ["--lazyfs"],
            everywhere
        ),
        // Patroni takes its own settings and PostgreSQL parameters.
        d!("db_conf", |_| a(&["--db-conf", "k=v"]), |c| (c
            .db
            .capabilities()
            .lossy_data_dir
            || c.db.name() == "patroni")
            && (c.on_nodes() || c.reach == Reach::Local)),
        d!("heal_timeout", |_| a(&["--heal-timeout", "10s"]), |c| c
            .on_nodes()),
        d!(
            "tarball",
            |_| a(&["--tarball", "https://example.invalid/r.tgz"]),
            drops & ["--no-setup"],
            tarball_on_nodes
        ),
        d!(
            "no_setup",
            |_| a(&["--no-setup"]),
            drops & ["--no-setup"],
            tarball_on_nodes
        ),
        d!("db_port", |_| a(&["--db-port", "4000"]), tarball_on_nodes),
        d!(
            "db_dir",
            |_| a(&["--db-dir", "/var/tmp/x"]),
            tarball_on_nodes
        ),
        d!("select_for_update", |_| a(&["--select-for-update"]), |c| c
            .db
            .is_tarball()),
        d!("txn_mode", |_| a(&["--txn-mode", "optimistic"]), tidb),
        d!("auto_retry", |_| a(&["--auto-retry", "off"]), tidb),
        d!(
            "auto_retry_limit",
            |_| a(&["--auto-retry-limit", "3"]),
            tidb
        ),
        d!(
            "roles",
            |_| a(&["--roles", "pd=n1;tikv=n1,n2,n3;tidb=n2"]),
            |c| tidb(c) && c.on_nodes()
        ),
    ]
}

/// Whether `msg` names `long` (`--nodes-file` is `--nodes` written in a
/// file: messages about the node list say `--nodes`).
fn names(msg: &str, long: &str) -> bool {
    msg.contains(long) || (long == "--nodes-file" && msg.contains("--nodes"))
}

/// `base` with the flags `drops` (and their values) removed and `extra`
/// added.
fn with(base: &[String], drops: &[&str], extra: &[String]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let mut i = 0;
    while i < base.len() {
        if drops.contains(&base[i].as_str()) {
            i += 1;
            if base.get(i).is_some_and(|n| !n.starts_with("--")) {
                i += 1;
            }
            continue;
        }
        v.push(base[i].clone());
        i += 1;
    }
    v.extend(extra.iter().cloned());
    v
}

/// `--nodes-file` naming as many nodes as the context's `--nodes`.
fn nodes_file(c: &Ctx) -> Vec<String> {
    let n = c.db.min_nodes().max(3);
    let path = std::env::temp_dir().join(format!(
        "harness-flag-matrix-{}-{n}.nodes",
        std::process::id()
    ));
    let text: String = (1..=n).map(|i| format!("n{i}\n")).collect();
    if std::fs::write(&path, text).is_err() {
        return vec!["--nodes-file".into(), "/nonexistent".into()];
    }
    vec!["--nodes-file".into(), path.to_string_lossy().into_owned()]
}

/// A tarball database behind `--url` with `--nodes` (or the reverse): the
/// cluster runs already on the nodes, which the faults reach.
fn tarball_url_and_nodes(c: &Ctx) -> bool {
    c.db.is_tarball() && (c.reach == Reach::Url || c.on_nodes())
}

#[test]
fn every_run_flag_is_used_or_refused_for_every_database() {
    let decisions = decisions();
    let cmd = RunOnly::command();
    let mut undecided = Vec::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if !decisions.iter().any(|d| d.id == id) && !ELSEWHERE.iter().any(|e| e.0 == id) {
            undecided.push(id.to_string());
        }
    }
    assert!(
        undecided.is_empty(),
        "flags without a decision in flag_matrix.rs: {undecided:?}"
    );
    let mut wrong = String::new();
    let mut cells = 0;
    for db in DbKind::all() {
        for reach in reaches(db) {
            let ctx = Ctx { db, reach };
            let base = ctx.base();
            if let Err(e) = checked_run_flags(&base) {
                let _ = writeln!(wrong, "{db} {reach:?}: the base itself is refused: {e:#}");
                continue;
            }
            for d in &decisions {
                let flag = (d.args)(&ctx);
                let long = format!("--{}", d.id.replace('_', "-"));
                // Already part of the base (its reach flag): nothing to add.
                if d.drops.is_empty() && base.contains(&long) {
                    continue;
                }
                let needs: Vec<String> = d.needs.iter().map(|s| s.to_string()).collect();
                if !needs.is_empty() {
                    // Without what it shapes: refused everywhere.
                    cells += 1;
                    match checked_run_flags(&with(&base, d.drops, &flag)) {
                        Ok(_) => {
                            let _ = writeln!(
                                wrong,
                                "{db} {reach:?}: {} without {}: accepted and ignored",
                                flag.join(" "),
                                needs.join(" ")
                            );
                        }
                        Err(e) if !names(&format!("{e:#}"), &long) => {
                            let _ = writeln!(
                                wrong,
                                "{db} {reach:?}: {} without {}: refused without naming {long}: {e:#}",
                                flag.join(" "),
                                needs.join(" ")
                            );
                        }
                        Err(_) => {}
                    }
                    if checked_run_flags(&with(&base, d.drops, &needs)).is_err() {
                        continue;
                    }
                }
                cells += 1;
                let mut extra = needs.clone();
                extra.extend(flag.iter().cloned());
                let got = checked_run_flags(&with(&base, d.drops, &extra));
                match (got, (d.used)(&ctx)) {
                    (Ok(_), true) => {}
                    (Err(e), false) if names(&format!("{e:#}"), &long) => {}
                    (Ok(_), false) => {
                        let _ = writeln!(
                            wrong,
                            "{db} {reach:?}: {}: accepted and ignored",
                            extra.join(" ")
                        );
                    }
                    (Err(e), false) => {
                        let _ = writeln!(
                            wrong,
                            "{db} {reach:?}: {}: refused without naming {long}: {e:#}",
                            extra.join(" ")
                        );
                    }
                    (Err(e), true) => {
                        let _ = writeln!(
                            wrong,
                            "{db} {reach:?}: {}: refused where it is used: {e:#}",
                            extra.join(" ")
                        );
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong}");
    eprintln!("{cells} combinations walked");
    assert!(cells > 500, "only {cells} combinations walked");
}

/// `--isolation`: each level a database's entry lists is accepted, any
/// other refused naming `--isolation` or the level.
#[test]
fn every_isolation_level_is_run_or_refused_for_every_database() {
    use db_adapters::sql::Isolation;
    let mut wrong = String::new();
    for db in DbKind::all() {
        let ctx = Ctx {
            db,
            reach: reaches(db)[0],
        };
        for level in Isolation::ALL {
            let flags = with(
                &ctx.base(),
                &["--isolation"],
                &a(&["--isolation", level.name()]),
            );
            match (
                checked_run_flags(&flags),
                db.isolation_levels().contains(&level),
            ) {
                (Ok(_), true) => {}
                (Err(e), false) if format!("{e:#}").contains(level.name()) => {}
                (r, listed) => {
                    let _ = writeln!(
                        wrong,
                        "{db} --isolation {}: listed {listed}, got {:?}",
                        level.name(),
                        r.map(|_| ()).map_err(|e| e.to_string())
                    );
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong}");
}
