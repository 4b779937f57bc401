//! The table's own tests: every entry's answers agree with each other,
//! names are unique, and each database's settings are checked as its
//! entry says (the flags of the tarball databases, `--url`/`--local`).

use super::*;
use crate::sql::{DataModel, Isolation};
use crate::tarball::NewSqlSpec;
use nemesis::Node;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

fn db(name: &str) -> DbKind {
    DbKind::lookup(name).unwrap()
}

#[test]
fn names_round_trip_and_unknown_names_are_errors() {
    let mut seen = HashSet::new();
    for k in DbKind::all() {
        assert_eq!(k.name().parse::<DbKind>().unwrap(), k);
        for n in std::iter::once(k.name()).chain(k.aliases().iter().copied()) {
            assert!(seen.insert(n), "{n} names two databases");
        }
    }
    let e = "oracle".parse::<DbKind>().unwrap_err();
    assert!(e.contains("\"oracle\"") && e.contains("yugabyte"), "{e}");
}

#[test]
fn entries_answer_consistently() {
    for k in DbKind::all() {
        let caps = k.capabilities();
        assert_eq!(
            k.default_port().is_none(),
            k.placement() == Placement::Embedded,
            "{k}"
        );
        assert_eq!(
            k.log_files().is_empty(),
            k.placement() == Placement::Embedded,
            "{k}"
        );
        assert!(!k.isolation_levels().is_empty(), "{k}");
        assert!(k.node_count().min >= 1 && k.node_count().min <= k.node_count().max);
        // A URL needs a scheme; an embedded database takes none.
        assert_eq!(
            k.url_schemes().is_empty(),
            k.placement() != Placement::UrlOrNodes,
            "{k}"
        );
        // Range reads are SQL range reads.
        assert!(!caps.range_reads || k.dialect().is_some(), "{k}");
        assert_eq!(
            k.supports(workloads::WorkloadKind::Predicate, false),
            caps.range_reads,
            "{k}"
        );
        assert!(!k.about().is_empty(), "{k}");
    }
    assert_eq!(db("tidb").dialect().unwrap().tables.table_count, 7);
    assert_eq!(db("cockroach").default_port(), Some(26257));
    assert!(db("sim").dialect().is_none());
    assert_eq!(
        names_where(DbKind::is_tarball),
        "cockroach, tidb and yugabyte"
    );
    assert_eq!(names_where(DbKind::has_local_server), "postgres and etcd");
}

/// The answers of every entry, written out once: a change to any entry's
/// answer shows up here.
#[test]
fn the_table_answers_as_written() {
    let rows: Vec<String> = DbKind::all()
        .map(|k| {
            let c = k.capabilities();
            format!(
                "{} {:?} {:?} {:?} vo={}/{} range={} bugs={} tarball={} local={} replicas={} ops={:?} sql={:?}",
                k.name(),
                k.placement(),
                k.node_count(),
                k.default_port(),
                k.records_version_order(false),
                k.records_version_order(true),
                c.range_reads,
                c.bug_modes,
                c.tarball,
                c.local_server,
                c.replicas,
                c.default_ops,
                k.dialect().map(|d| (d.family, d.tables.table_count, d.for_update_flag, d.innodb, d.native)),
            )
        })
        .collect();
    let max = usize::MAX;
    let want = [
        format!("sqlite Embedded NodeCount {{ min: 1, max: {max} }} None vo=true/true range=true bugs=false tarball=false local=false replicas=false ops=Some(800000) sql=Some((Postgres, 3, false, false, false))"),
        format!("sim Embedded NodeCount {{ min: 1, max: {max} }} None vo=false/false range=false bugs=true tarball=false local=false replicas=false ops=Some(100000) sql=None"),
        format!("postgres UrlOrNodes NodeCount {{ min: 1, max: {max} }} Some(5432) vo=true/false range=true bugs=false tarball=false local=true replicas=true ops=None sql=Some((Postgres, 3, false, false, true))"),
        format!("galera Nodes NodeCount {{ min: 3, max: {max} }} Some(3306) vo=false/false range=true bugs=false tarball=false local=false replicas=false ops=None sql=Some((Mysql, 3, false, true, true))"),
        "mariadb Nodes NodeCount { min: 1, max: 1 } Some(3306) vo=false/false range=true bugs=false tarball=false local=false replicas=false ops=None sql=Some((Mysql, 3, false, true, true))".to_string(),
        format!("cockroach UrlOrNodes NodeCount {{ min: 1, max: {max} }} Some(26257) vo=true/true range=true bugs=false tarball=true local=false replicas=false ops=None sql=Some((Postgres, 3, true, false, true))"),
        format!("tidb UrlOrNodes NodeCount {{ min: 1, max: {max} }} Some(4000) vo=true/true range=true bugs=false tarball=true local=false replicas=false ops=None sql=Some((Mysql, 7, true, false, true))"),
        format!("yugabyte UrlOrNodes NodeCount {{ min: 1, max: {max} }} Some(5433) vo=false/false range=true bugs=false tarball=true local=false replicas=false ops=None sql=Some((Postgres, 5, true, false, true))"),
        format!("etcd UrlOrNodes NodeCount {{ min: 1, max: {max} }} Some(2379) vo=true/true range=false bugs=false tarball=false local=true replicas=false ops=None sql=None"),
        "patroni Nodes NodeCount { min: 3, max: 3 } Some(5432) vo=false/false range=true bugs=false tarball=false local=false replicas=false ops=None sql=Some((Postgres, 3, false, false, true))".to_string(),
    ];
    assert_eq!(rows, want);
}

/// Which workloads each database's clients run, on nodes and not.
#[test]
fn workloads_per_database() {
    use workloads::{JepsenWorkload, WorkloadKind};
    let bank = WorkloadKind::Jepsen(JepsenWorkload::Bank);
    let fork = WorkloadKind::Jepsen(JepsenWorkload::LongFork);
    let runs = |w: WorkloadKind, on_nodes: bool| names_where(|k| k.supports(w, on_nodes));
    let every =
        "sqlite, sim, postgres, galera, mariadb, cockroach, tidb, yugabyte, etcd and patroni";
    assert_eq!(runs(WorkloadKind::ListAppend, false), every);
    assert_eq!(runs(WorkloadKind::RwRegister, false), every);
    assert_eq!(runs(WorkloadKind::Register, true), every);
    assert_eq!(
        runs(fork, true),
        "sqlite, sim, postgres, galera, mariadb, cockroach, tidb and yugabyte"
    );
    assert_eq!(
        runs(bank, false),
        "sqlite, sim, postgres, galera and mariadb"
    );
    assert_eq!(runs(bank, true), "sqlite, sim, galera and mariadb");
    assert_eq!(
        runs(WorkloadKind::Predicate, false),
        "sqlite, postgres, galera, mariadb, cockroach, tidb, yugabyte and patroni"
    );
}

/// etcd: `--url` (its own schemes), `--local` or `--nodes` (not combined
/// with either), serializable only (every `Txn` is strict-serializable).
#[test]
fn etcd_settings_are_checked() {
    let none = NewSqlSpec::default();
    let etcd = db("etcd");
    let e = check_err(etcd, &none, None, Isolation::Serializable);
    assert_eq!(e, "--db etcd needs --url etcd://… or --local");
    let url = Some("etcd://127.0.0.1:2379,127.0.0.1:22379");
    assert_eq!(
        check(etcd, &none, url, None, Isolation::Serializable),
        Ok(Isolation::Serializable)
    );
    let e = check(etcd, &none, url, None, Isolation::ReadCommitted).unwrap_err();
    assert!(e.contains("only --isolation serializable"), "{e}");
    let e = check(
        etcd,
        &none,
        Some("postgres://h/db"),
        None,
        Isolation::Serializable,
    )
    .unwrap_err();
    assert!(e.contains("etcd://host:port"), "{e}");
    assert_eq!(
        check(etcd, &none, None, Some(&nodes()), Isolation::Serializable),
        Ok(Isolation::Serializable)
    );
    let e = check(etcd, &none, url, Some(&nodes()), Isolation::Serializable).unwrap_err();
    assert!(e.contains("does not combine with --url or --local"), "{e}");
    let e = check(etcd, &none, None, Some(&nodes()), Isolation::RepeatableRead).unwrap_err();
    assert!(e.contains("only --isolation serializable"), "{e}");
    let local = DbSettings {
        local: true,
        ..settings(&none, None)
    };
    assert_eq!(
        etcd.check_settings(&local, None),
        Ok(Isolation::Serializable)
    );
    assert!(etcd.client_factory(&local, Some("etcd://a:1,b:2")).is_ok());
    assert!(etcd.client_factory(&local, None).is_err());
}

/// Patroni: on 3 `--nodes` only; `--db-conf` is Patroni's own (checked
/// here, before anything starts); `--lazyfs` and `--replica-reads` refused.
#[test]
fn patroni_settings_are_checked() {
    let none = NewSqlSpec::default();
    let patroni = db("patroni");
    let n = nodes();
    let e = check_err(patroni, &none, None, Isolation::Serializable);
    assert!(e.contains("--db patroni runs on --nodes"), "{e}");
    assert_eq!(
        check(patroni, &none, None, Some(&n), Isolation::RepeatableRead),
        Ok(Isolation::RepeatableRead)
    );
    let e = check(
        patroni,
        &none,
        Some("postgres://h/db"),
        Some(&n),
        Isolation::Serializable,
    )
    .unwrap_err();
    assert!(e.contains("--url applies to"), "{e}");
    let with = |f: &dyn Fn(&mut DbSettings)| {
        let mut s = settings(&none, None);
        f(&mut s);
        patroni.check_settings(&s, Some(&n))
    };
    let strict = |s: &mut DbSettings| {
        s.db_conf = vec!["synchronous_mode_strict=true".into(), "kill=patroni".into()];
    };
    assert_eq!(with(&strict), Ok(Isolation::Serializable));
    let e = with(&|s| s.db_conf = vec!["kill=everything".into()]).unwrap_err();
    assert!(e.contains("kill=everything"), "{e}");
    let e = with(&|s| s.db_conf = vec!["ttl=5".into()]).unwrap_err();
    assert!(e.contains("must not exceed ttl"), "{e}");
    let e = with(&|s| s.lazyfs = true).unwrap_err();
    assert!(e.contains("--lazyfs"), "{e}");
    let e = with(&|s| s.replica_reads = true).unwrap_err();
    assert!(e.contains("--replica-reads"), "{e}");
    assert!(
        patroni
            .client_factory(&settings(&none, None), None)
            .is_err()
    );
    assert!(!patroni.has_local_server());
}

fn check(
    kind: DbKind,
    a: &NewSqlSpec,
    url: Option<&str>,
    nodes: Option<&[Node]>,
    isolation: Isolation,
) -> Result<Isolation, String> {
    let s = DbSettings {
        isolation,
        ..settings(a, url)
    };
    kind.check_settings(&s, nodes)
}

fn settings(a: &NewSqlSpec, url: Option<&str>) -> DbSettings {
    DbSettings {
        isolation: Isolation::Serializable,
        model: DataModel::ListAppend,
        url: url.map(str::to_string),
        local: false,
        newsql: a.clone(),
        replica_reads: false,
        lazyfs: false,
        lazyfs_strict: false,
        db_conf: Vec::new(),
        version_order_db: false,
        dir: PathBuf::from("unused"),
        op_timeout: Duration::from_secs(1),
        sim_bug: None,
        sim_replicas: 0,
        seed: 0,
        clock: false,
        jepsen: None,
    }
}

/// The error of a spec without `--url`.
fn check_err(kind: DbKind, a: &NewSqlSpec, nodes: Option<&[Node]>, isolation: Isolation) -> String {
    check(kind, a, None, nodes, isolation).unwrap_err()
}

fn nodes() -> Vec<Node> {
    (1..=3)
        .map(|i| Node::new(format!("n{i}"), format!("10.0.0.{i}")))
        .collect()
}

#[test]
fn flags_are_checked_per_database() {
    let n = nodes();
    let none = NewSqlSpec::default();
    let e = check_err(db("cockroach"), &none, Some(&n), Isolation::Serializable);
    assert!(e.contains("--tarball PATH|URL"), "{e}");
    let e = check_err(db("yugabyte"), &none, None, Isolation::Serializable);
    assert!(e.contains("--db yugabyte needs --nodes"), "{e}");
    let no_setup = NewSqlSpec {
        no_setup: true,
        ..NewSqlSpec::default()
    };
    assert_eq!(
        check(
            db("yugabyte"),
            &no_setup,
            None,
            Some(&n),
            Isolation::SnapshotIsolation
        )
        .unwrap(),
        Isolation::RepeatableRead
    );
    let tidb_flags = NewSqlSpec {
        txn_mode: Some(crate::tidb::TxnMode::Pessimistic),
        ..no_setup.clone()
    };
    let e = check_err(
        db("cockroach"),
        &tidb_flags,
        Some(&n),
        Isolation::Serializable,
    );
    assert!(e.contains("apply to --db tidb only"), "{e}");
    // PostgreSQL on nodes: reachable, but the flags are not its own.
    let e = check_err(
        db("postgres"),
        &tidb_flags,
        Some(&n),
        Isolation::Serializable,
    );
    assert!(
        e.contains("apply to --db cockroach, tidb and yugabyte only"),
        "{e}"
    );
    let e = check_err(db("postgres"), &none, None, Isolation::Serializable);
    assert!(
        e.contains("--db postgres needs --url postgres://… or --local"),
        "{e}"
    );
    let local = DbSettings {
        local: true,
        ..settings(&none, None)
    };
    let e = db("sqlite").check_settings(&local, None).unwrap_err();
    assert_eq!(
        e,
        "--url applies to --db postgres, cockroach, tidb, yugabyte and etcd; --local to postgres and etcd only"
    );
    assert_eq!(
        check(
            db("tidb"),
            &tidb_flags,
            None,
            Some(&n),
            Isolation::ReadCommitted
        )
        .unwrap(),
        Isolation::ReadCommitted
    );
    let e = check_err(db("tidb"), &no_setup, Some(&n), Isolation::Serializable);
    assert!(e.contains("TiDB runs repeatable-read"), "{e}");
    let bad_roles = NewSqlSpec {
        roles: Some("pd=n1;tikv=n9;tidb=n1".into()),
        ..no_setup.clone()
    };
    let e = check_err(db("tidb"), &bad_roles, Some(&n), Isolation::RepeatableRead);
    assert!(e.contains("unknown node \"n9\""), "{e}");
    let missing = NewSqlSpec {
        tarball: Some("/nonexistent/crdb.tgz".into()),
        ..NewSqlSpec::default()
    };
    let e = check_err(db("cockroach"), &missing, Some(&n), Isolation::Serializable);
    assert!(e.contains("/nonexistent/crdb.tgz"), "{e}");
    // --url: no nodes needed.
    assert!(
        check(
            db("cockroach"),
            &none,
            Some("postgres://root@h:26257/defaultdb"),
            None,
            Isolation::ReadCommitted
        )
        .is_ok()
    );
    // A bad --auto-retry is refused where the text is parsed.
    assert!("sometimes".parse::<crate::tidb::AutoRetry>().is_err());
    let _ = no_setup;
}

/// A way to reach a database: its name, `--url`, `--local`, `--nodes`.
type Reach<'a> = (&'a str, Option<String>, bool, Option<&'a [Node]>);
/// Sets one flag on the settings.
type SetFlag = fn(&mut DbSettings);

/// No flag accepted and ignored. `--db-conf` and `--lazyfs` for
/// every database and every way of reaching it: where the spec is fine
/// without the flag, the flag is either used — by the code named here,
/// which applies it — or refused naming it.
#[test]
fn db_conf_and_lazyfs_are_used_or_refused_for_every_database() {
    let none = NewSqlSpec::default();
    let n = nodes();
    let mut used = Vec::new();
    for k in DbKind::all() {
        let mut reaches: Vec<Reach<'_>> = vec![("nodes", None, false, Some(&n[..]))];
        if k.placement() == Placement::Embedded {
            reaches.push(("embedded", None, false, None));
        }
        if let Some(scheme) = k.url_schemes().first() {
            reaches.push(("url", Some(format!("{scheme}://h:1/db")), false, None));
        }
        if k.has_local_server() {
            reaches.push(("local", None, true, None));
        }
        for (how, url, local, on) in reaches {
            let base = DbSettings {
                local,
                ..settings(&none, url.as_deref())
            };
            if k.check_settings(&base, on).is_err() {
                continue;
            }
            let flags: [(&str, SetFlag); 2] = [
                ("--db-conf", |s| {
                    s.db_conf = vec!["synchronous_commit=on".into()]
                }),
                ("--lazyfs", |s| s.lazyfs = true),
            ];
            for (flag, set) in flags {
                let mut s = base.clone();
                set(&mut s);
                match k.check_settings(&s, on) {
                    Ok(_) => used.push(format!("{flag} {k} {how}")),
                    Err(e) => assert!(e.contains(flag), "{flag} {k} {how}: {e}"),
                }
            }
        }
    }
    // Each accepted combination and the code that applies the flag:
    // `postgres::database` (`PgClusterConfig` on nodes; `local::parse_conf`
    // → `-c key=value` for `--local`), `mysql::database` (`extra_conf` in
    // the node's option file, LazyFS under its data directory),
    // `patroni::settings` (its own keys, the rest PostgreSQL parameters).
    assert_eq!(
        used,
        [
            "--db-conf postgres nodes",
            "--lazyfs postgres nodes",
            "--db-conf postgres local",
            "--db-conf galera nodes",
            "--lazyfs galera nodes",
            "--db-conf mariadb nodes",
            "--lazyfs mariadb nodes",
            "--db-conf patroni nodes",
        ],
        "{used:#?}"
    );
    // --local applies what it accepts, and refuses what it cannot apply.
    let conf =
        crate::postgres::local::parse_conf(&["synchronous_commit=on,fsync=on".into()]).unwrap();
    let applied = crate::postgres::local::settings(&conf);
    assert!(applied.contains(&("synchronous_commit".into(), "on".into())));
    assert!(applied.contains(&("fsync".into(), "on".into())));
    assert!(applied.contains(&("full_page_writes".into(), "off".into())));
    let s = DbSettings {
        local: true,
        db_conf: vec!["shared_buffers='1 GB'".into()],
        ..settings(&none, None)
    };
    let e = db("postgres").check_settings(&s, None).unwrap_err();
    assert!(
        e.contains("--db-conf") && e.contains("shared_buffers"),
        "{e}"
    );
}
