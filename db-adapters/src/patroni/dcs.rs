//! Patroni's distributed configuration store: an etcd cluster of its own,
//! one member per node, run by the same lifecycle as `--db etcd` on nodes
//! ([`EtcdNodes`]: bootstrap with a per-setup cluster token, start by pid
//! file, readiness by a linearizable read, SIGKILL by pid and removal of
//! the node's directory at teardown). Patroni talks to it through
//! `etcd3:` (the v3 JSON gateway; etcd 3.4 turns the v2 API off).
//!
//! It differs from an etcd under test only in where it lives: its own
//! base directory ([`BASE_DIR`], so its `<node>/data`, `etcd.log` and
//! `etcd.pid` are apart from Patroni's files and from `--db etcd`'s
//! `/var/lib/harness/etcd`) and its own ports ([`CLIENT_PORT`],
//! [`PEER_PORT`] instead of 2379/2380), so the two can never collide on a
//! node. Members listen on the node's address, so a partition also cuts
//! the isolated member off and an isolated primary's Patroni loses its
//! lease as in production. Faults leave it alone: the DCS is
//! infrastructure, and partitions reach it anyway.
//!
//! Its members run with `--pre-vote` (etcd 3.5's default; 3.4, Debian's,
//! has it off). Without it a member cut off by a partition raises its
//! term with every election it tries alone, and when the partition heals
//! it makes the leader step down: the DCS had no leader for 2.3 s right
//! after a heal, the new primary's Patroni could not renew its key, and
//! the old primary — its `pg_rewind` cut short — took the key and kept
//! it while its PostgreSQL could not start (a CI run of the
//! `patroni-async-loss` scenario, 2026-12-07). The run records it among
//! the cluster's settings (`dcs_pre_vote`).

use crate::etcd::{EtcdNodes, EtcdNodesConfig};
use nemesis::remote::Remote;
use std::sync::Arc;

/// Where the DCS members keep `<node>/`.
pub const BASE_DIR: &str = "/var/lib/harness/patroni-etcd";
/// The DCS's client port (not etcd's default 2379: an etcd under test
/// may use that one).
pub const CLIENT_PORT: u16 = 2479;
/// The DCS's peer port (not etcd's default 2380).
pub const PEER_PORT: u16 = 2480;

/// Whether the DCS's members run with `--pre-vote` (see the module's
/// header); the run's settings record it (`dcs_pre_vote`).
pub const PRE_VOTE: bool = true;

/// The DCS's settings: etcd's defaults (binary, snapshot count, a fresh
/// token) with [`BASE_DIR`], the DCS ports and `--pre-vote`.
pub fn config() -> EtcdNodesConfig {
    let mut c = EtcdNodesConfig::new();
    c.base_dir = BASE_DIR.to_string();
    c.client_port = CLIENT_PORT;
    c.peer_port = PEER_PORT;
    c.pre_vote = PRE_VOTE;
    c
}

/// The DCS on the nodes behind `remotes` (one member each).
pub fn cluster(remotes: Vec<Arc<dyn Remote>>) -> EtcdNodes {
    EtcdNodes::new(config(), remotes)
}

/// The client address (`host:port`) of every member, for Patroni's
/// `etcd3.hosts`.
pub fn client_hosts(dcs: &EtcdNodes) -> Vec<String> {
    dcs.all_nodes()
        .iter()
        .map(|n| dcs.config().client_addr(n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;
    use crate::etcd::ClusterState;
    use nemesis::Node;

    #[test]
    fn the_dcs_cannot_collide_with_an_etcd_under_test() {
        let dcs = config();
        let tested = EtcdNodesConfig::new();
        assert_ne!(dcs.base_dir, tested.base_dir);
        assert!(!dcs.base_dir.starts_with(&format!("{}/", tested.base_dir)));
        for p in [dcs.client_port, dcs.peer_port] {
            assert!(p != tested.client_port && p != tested.peer_port, "{p}");
        }
        let n2 = Node::new("n2", "10.99.0.2");
        let line = dcs
            .daemon(&n2, "n2=http://10.99.0.2:2480", ClusterState::New)
            .command_line();
        for want in [
            "--data-dir /var/lib/harness/patroni-etcd/n2/data",
            "--listen-client-urls http://10.99.0.2:2479",
            "--listen-peer-urls http://10.99.0.2:2480",
            "--initial-cluster-state new",
        ] {
            assert!(line.contains(want), "{want} not in {line}");
        }
        let c = cluster(Vec::new());
        assert!(client_hosts(&c).is_empty());
        assert_eq!(
            c.log_files(&n2)[0].remote_path,
            "/var/lib/harness/patroni-etcd/n2/etcd.log"
        );
        assert_eq!(dcs.client_addr(&n2), "10.99.0.2:2479");
    }

    /// The DCS's members vote before they campaign; an etcd under test
    /// runs with etcd's own default (off in 3.4), and the run records the
    /// DCS's setting.
    #[test]
    fn only_the_dcs_members_pre_vote_and_the_record_says_so() {
        let n2 = Node::new("n2", "10.99.0.2");
        let line = |c: &EtcdNodesConfig| {
            c.daemon(&n2, "n2=http://10.99.0.2:2480", ClusterState::New)
                .command_line()
        };
        assert!(
            line(&config()).ends_with(" --pre-vote"),
            "{}",
            line(&config())
        );
        let tested = EtcdNodesConfig::new();
        assert!(!line(&tested).contains("--pre-vote"), "{}", line(&tested));
        let recorded = super::super::settings::settings(&Default::default());
        assert!(recorded.contains(&("dcs_pre_vote".to_string(), "true".to_string())));
    }
}
