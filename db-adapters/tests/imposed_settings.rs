//! Every lifecycle on nodes says which settings harness imposes on the
//! servers it starts (`Db::settings`, recorded in test.json), so a loss a
//! setting permits is not blamed on the database. Pure: the lifecycles
//! are built on remotes that are never used.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use db_adapters::db::Db;
use db_adapters::etcd::{EtcdNodes, EtcdNodesConfig};
use db_adapters::mysql::{MariaDb, MariaDbConfig};
use db_adapters::patroni::{PatroniCluster, PatroniConf, PatroniConfig, PatroniDb};
use db_adapters::postgres::cluster::{PgCluster, PgClusterConfig};
use nemesis::Node;
use nemesis::remote::{LocalRemote, Remote};
use std::collections::BTreeMap;
use std::sync::Arc;

fn remotes(n: usize) -> Vec<Arc<dyn Remote>> {
    (1..=n)
        .map(|i| {
            Arc::new(LocalRemote::new(Node::new(
                format!("n{i}"),
                format!("10.0.0.{i}"),
            ))) as Arc<dyn Remote>
        })
        .collect()
}

fn map(db: &dyn Db) -> BTreeMap<String, String> {
    db.settings().into_iter().collect()
}

#[test]
fn galera_records_its_durability_settings_and_db_conf_over_them() {
    let mut cfg = MariaDbConfig::new(true);
    cfg.extra_conf = vec!["innodb_flush_log_at_trx_commit=0".to_string()];
    let s = map(&MariaDb::new(cfg, remotes(3)));
    // --db-conf is applied after harness's own line, so it is what counts.
    assert_eq!(s["innodb_flush_log_at_trx_commit"], "0");
    assert_eq!(s["wsrep_on"], "ON");
    assert_eq!(s["binlog_format"], "ROW");
    // Per-node paths and addresses are not settings.
    for k in ["datadir", "socket", "bind-address", "wsrep_node_address"] {
        assert!(!s.contains_key(k), "{k} recorded: {s:?}");
    }
    let plain = map(&MariaDb::new(MariaDbConfig::new(false), remotes(1)));
    assert_eq!(plain["innodb_flush_log_at_trx_commit"], "2");
    assert!(!plain.contains_key("wsrep_on"));
}

#[test]
fn postgres_on_nodes_records_its_conf_and_db_conf() {
    let cfg = PgClusterConfig {
        extra_conf: vec!["synchronous_commit = off".to_string()],
        ..PgClusterConfig::default()
    };
    let s = map(&PgCluster::new(cfg, remotes(3)));
    assert_eq!(s["synchronous_commit"], "off");
    assert_eq!(s["wal_level"], "replica");
    assert_eq!(s["recovery_init_sync_method"], "syncfs");
    assert!(!s.contains_key("listen_addresses"));
}

#[test]
fn patroni_records_its_replication_mode_and_parameters() {
    let conf = PatroniConf::parse(&[
        "synchronous_mode_strict=true".to_string(),
        "max_connections=300".to_string(),
    ])
    .unwrap();
    let cfg = PatroniConfig {
        conf,
        ..PatroniConfig::default()
    };
    let s = map(&PatroniDb(Arc::new(PatroniCluster::new(cfg, remotes(3)))));
    assert_eq!(s["synchronous_mode_strict"], "true");
    assert_eq!(s["max_connections"], "300");
    assert_eq!(s["wal_level"], "replica");
}

#[test]
fn etcd_records_its_snapshot_count() {
    let s = map(&EtcdNodes::new(EtcdNodesConfig::default(), remotes(3)));
    assert_eq!(s["snapshot-count"], "100");
}
