//! Patroni's distributed configuration store: a private etcd cluster, one
//! member per node, started over each node's [`Remote`] before Patroni
//! and ended with it. Patroni talks to it through `etcd3:` (the v3 JSON
//! gateway; etcd 3.4 turns the v2 API off).
//!
//! Flags per member `nI` (Debian `etcd-server` 3.4): `--name nI`, peer and
//! client URLs on the node's address (ports 2380/2379; a partition then
//! also cuts the isolated member off, so an isolated primary's Patroni
//! loses its lease as in production), `--initial-cluster` naming every
//! member, `--initial-cluster-state new` and a per-setup cluster token (a
//! stray member of an earlier run cannot join), `--snapshot-count 100`,
//! zap logger to `etcd.log`. The member runs as root under `setsid`; its
//! pid file is written by the shell that `exec`s it, so the pid is etcd's.
//! The start command is `cd /tmp; setsid … &`, never `cd /tmp && setsid …
//! &`: the latter backgrounds a subshell that keeps the SSH channel open
//! until the daemon exits, and the command never returns.
//!
//! Key decision: this is a small bootstrap of its own rather than the
//! shared etcd-on-nodes lifecycle, so the two can change independently
//! until they are folded together; it only starts, checks and kills.

use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::Arc;
use std::time::Duration;

/// etcd's client port.
pub const CLIENT_PORT: u16 = 2379;
/// etcd's peer port.
pub const PEER_PORT: u16 = 2380;
/// The etcd binary (Debian `etcd-server`).
pub const ETCD: &str = "/usr/bin/etcd";
/// The etcd client (Debian `etcd-client`), for the health check.
pub const ETCDCTL: &str = "/usr/bin/etcdctl";

/// The client address (`host:port`) of every member.
pub fn client_hosts(nodes: &[Node]) -> Vec<String> {
    nodes
        .iter()
        .map(|n| format!("{}:{CLIENT_PORT}", n.host))
        .collect()
}

/// The command that starts `node`'s member in the background, keeping its
/// files in `dir` (`etcd/`, `etcd.log`, `etcd.pid`).
pub fn start_command(node: &Node, nodes: &[Node], dir: &str, token: &str) -> String {
    let cluster: Vec<String> = nodes
        .iter()
        .map(|n| format!("{}=http://{}:{PEER_PORT}", n.name, n.host))
        .collect();
    let listen = super::settings::listen_addr(&node.host);
    let h = &node.host;
    format!(
        "cd /tmp; setsid sh -c 'echo $$ > {dir}/etcd.pid; exec {ETCD} --name {name} --data-dir {dir}/etcd \
         --listen-client-urls http://{listen}:{CLIENT_PORT} --advertise-client-urls http://{h}:{CLIENT_PORT} \
         --listen-peer-urls http://{listen}:{PEER_PORT} --initial-advertise-peer-urls http://{h}:{PEER_PORT} \
         --initial-cluster {cluster} --initial-cluster-state new --initial-cluster-token {token} \
         --snapshot-count 100 --logger zap --log-outputs stderr' </dev/null >>{dir}/etcd.log 2>&1 &",
        name = node.name,
        cluster = cluster.join(","),
    )
}

/// The command that answers 0 when `node`'s member is healthy (it has a
/// leader and serves a linearizable read).
pub fn health_command(node: &Node) -> String {
    format!(
        "ETCDCTL_API=3 {ETCDCTL} --endpoints http://{}:{CLIENT_PORT} --command-timeout 2s endpoint health >/dev/null 2>&1",
        node.host
    )
}

/// Whether every member is healthy.
///
/// # Errors
/// The first unhealthy or unreachable member, named.
pub async fn healthy(remotes: &[Arc<dyn Remote>]) -> Result<bool, String> {
    for r in remotes {
        let out = r
            .exec(&health_command(r.node()), None, Duration::from_secs(5))
            .await
            .map_err(|e| e.to_string())?;
        if !out.success() {
            return Err(format!("etcd member {} not healthy yet", r.node().name));
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.99.0.{i}"),
            })
            .collect()
    }

    #[test]
    fn start_command_names_every_member_and_writes_its_own_pid() {
        let ns = nodes();
        let c = start_command(&ns[1], &ns, "/var/lib/harness/patroni/n2", "tok-1");
        for needle in [
            "echo $$ > /var/lib/harness/patroni/n2/etcd.pid; exec /usr/bin/etcd --name n2 ",
            "--listen-client-urls http://10.99.0.2:2379",
            "--initial-cluster n1=http://10.99.0.1:2380,n2=http://10.99.0.2:2380,n3=http://10.99.0.3:2380 ",
            "--initial-cluster-token tok-1",
            "--initial-cluster-state new",
            ">>/var/lib/harness/patroni/n2/etcd.log 2>&1 &",
        ] {
            assert!(c.contains(needle), "{needle} in {c}");
        }
        assert_eq!(
            client_hosts(&ns),
            ["10.99.0.1:2379", "10.99.0.2:2379", "10.99.0.3:2379"]
        );
        assert!(health_command(&ns[0]).contains("--endpoints http://10.99.0.1:2379"));
    }
}
