//! etcd's catalog entry (`--db etcd`): a key-value store without SQL. Its
//! clients ([`super::EtcdFactory`]) run list-append, rw-register and the
//! linearizable register as one `Txn` per transaction; every transaction
//! is strict-serializable, the only level etcd runs (`--isolation
//! serializable`, checked as strict-serializable behind one URL).
//!
//! Where it runs: behind `--url` — `etcd://host:port[,host:port…]` or
//! `http://…` (the client URLs of its members; port 2379 where none is
//! given) — or `--local`: a throwaway 3-member cluster of
//! `/usr/bin/etcd` (Debian `etcd-server`) on free loopback ports, its data
//! and member logs in `<run dir>/etcd/`. The members are started and ended
//! by pid ([`super::LocalCluster`]); at the end of the run their data
//! directories are removed and the logs kept. Clients are spread over the
//! members round-robin, so transactions go through followers too.
//!
//! On `--nodes` (`n1,n2,n3` or `testbed`): one member per node, started
//! and supervised over SSH ([`super::EtcdNodes`]); `--nemesis
//! partition,kill,pause` act on them, and `--nemesis membership` removes a
//! member and adds it back (`super::membership`). With `--local`,
//! `--nemesis kill,pause` act on the local members by pid
//! ([`LocalEtcd`]'s process); membership changes need `--nodes`.
//!
//! `--version-order db`: every `ok` transaction records the revision etcd
//! gave it ([`super::client`]), so the checker has etcd's own order.

use super::local::{LocalMembers, wait_members_healthy};
use super::{EtcdFactory, LocalCluster};
use crate::catalog::{
    Capabilities, ClockFaults, Database, DbSettings, LocalServer, NodeCount, OnNodes, OpenError,
    Placement, SqlDialect, check_reach_and_flags,
};
use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::db::NodeLog;
use crate::sql::Isolation;
use crate::tarball::NewSqlSpec;
use nemesis::Node;
use nemesis::remote::Remote;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use workloads::WorkloadKind;

/// etcd.
pub struct Etcd;

/// The etcd binary `--local` runs.
pub const ETCD_BINARY: &str = "/usr/bin/etcd";

/// Members of the `--local` cluster.
pub const LOCAL_MEMBERS: usize = 3;

/// How long the `--local` members have to answer a linearizable read.
const LOCAL_START_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The log kept from each node (the local cluster's member logs stay in
/// `<run dir>/etcd/e0.log`, …).
const LOGS: &[NodeLog] = super::nodes::LOGS;

/// The members named by an `etcd://` or `http://` URL, as nodes
/// `e0`, `e1`, … whose host is `host:port`.
///
/// # Errors
/// Another scheme, or no member.
pub fn parse_url(url: &str) -> Result<Vec<Node>, String> {
    let rest = ["etcd://", "http://"]
        .iter()
        .find_map(|s| url.strip_prefix(s))
        .ok_or_else(|| {
            format!(
                "--db etcd: --url must be etcd://host:port[,host:port…] or http://…, got {url:?}"
            )
        })?;
    let members: Vec<Node> = rest
        .trim_end_matches('/')
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .enumerate()
        .map(|(i, h)| Node {
            name: format!("e{i}"),
            host: h.to_string(),
        })
        .collect();
    if members.is_empty() || members.iter().any(|m| m.host.contains('/')) {
        return Err(format!(
            "--db etcd: --url names no member (host:port, comma-separated): {url:?}"
        ));
    }
    Ok(members)
}

/// Clients of the members behind a URL: the schema step clears the key
/// prefix once (on the first member), and each opened client goes to the
/// next member in turn.
pub struct EtcdUrlFactory {
    inner: EtcdFactory,
    members: Vec<Node>,
    next: AtomicUsize,
}

impl EtcdUrlFactory {
    /// Clients of `members` (not empty: [`parse_url`]'s answer).
    pub fn new(inner: EtcdFactory, members: Vec<Node>) -> EtcdUrlFactory {
        EtcdUrlFactory {
            inner,
            members,
            next: AtomicUsize::new(0),
        }
    }

    /// The member the next client opens on.
    fn pick(&self) -> Result<&Node, ClientError> {
        let n = self.members.len().max(1);
        let i = self.next.fetch_add(1, Ordering::Relaxed) % n;
        self.members
            .get(i)
            .ok_or_else(|| ClientError::definite("no-member", "etcd: no member to connect to"))
    }
}

impl ClientFactory for EtcdUrlFactory {
    fn setup<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            match self.members.first() {
                Some(m) => self.inner.setup(m).await,
                None => Err(ClientError::definite(
                    "no-member",
                    "etcd: no member to connect to",
                )),
            }
        })
    }

    fn open<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move { self.inner.open(self.pick()?).await })
    }
}

/// The `--local` cluster as a [`LocalServer`]: its URL names every
/// member; stopping it ends the members (by pid) and removes their data;
/// its process faults act on one member at a time ([`LocalMembers`]).
pub struct LocalEtcd {
    cluster: Arc<Mutex<LocalCluster>>,
    dir: std::path::PathBuf,
    /// Ends the members and removes their data at an exit that skips
    /// `stop` (a second Ctrl-C).
    _at_exit: crate::exit_cleanup::Registration,
}

/// Kills every member of `cluster` by pid (a paused one too: SIGKILL ends
/// a stopped process) and closes it (none starts again), waiting at most
/// 2 s for the lock a fault or the start may hold.
fn kill_members(cluster: &Mutex<LocalCluster>) {
    for _ in 0..100 {
        if let Ok(mut c) = cluster.try_lock() {
            c.close();
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Removes the members' data directories (`*.etcd`) under `dir`.
fn remove_member_dirs(dir: &std::path::Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().ends_with(".etcd") {
            std::fs::remove_dir_all(e.path())
                .map_err(|err| format!("{}: {err}", e.path().display()))?;
        }
    }
    Ok(())
}

impl LocalServer for LocalEtcd {
    fn url(&self) -> String {
        let hosts: Vec<String> = self
            .cluster
            .lock()
            .map(|c| c.nodes())
            .unwrap_or_default()
            .into_iter()
            .map(|n| n.host)
            .collect();
        format!("etcd://{}", hosts.join(","))
    }

    fn settings(&self) -> Vec<(String, String)> {
        // Topology only: etcd's durability defaults (every commit fsynced)
        // are left as they are.
        let members = self.cluster.lock().map(|c| c.len()).unwrap_or(0);
        vec![
            ("members".to_string(), members.to_string()),
            (
                "initial-cluster-token".to_string(),
                "harness-local".to_string(),
            ),
        ]
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, Result<(), String>> {
        // Kill and reap every member by pid (a paused one too: SIGKILL
        // ends a stopped process).
        if let Ok(mut c) = self.cluster.lock() {
            c.close();
        }
        let dir = self.dir.clone();
        Box::pin(async move { remove_member_dirs(&dir) })
    }

    fn process(&self) -> Option<std::sync::Arc<dyn nemesis::process::Process>> {
        Some(Arc::new(LocalMembers::new(self.cluster.clone())))
    }
}

/// The clients' factory of a run's settings.
fn factory(s: &DbSettings) -> EtcdFactory {
    let mut f = EtcdFactory::new(s.model);
    f.timeout = s.op_timeout;
    f.version_order = s.version_order_db;
    f
}

impl Database for Etcd {
    fn name(&self) -> &'static str {
        "etcd"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    fn about(&self) -> &'static str {
        "etcd (`--url etcd://host:port,…` to a running cluster, `--local` for a throwaway 3-member cluster of /usr/bin/etcd, or one member per `--nodes` node; append, rw-register and register)"
    }
    fn url_schemes(&self) -> &'static [&'static str] {
        &["etcd", "http"]
    }
    fn placement(&self) -> Placement {
        Placement::UrlOrNodes
    }
    fn node_count(&self) -> NodeCount {
        NodeCount::ANY
    }
    fn default_port(&self) -> Option<u16> {
        Some(super::client::DEFAULT_CLIENT_PORT)
    }
    fn log_files(&self) -> &'static [NodeLog] {
        LOGS
    }
    fn isolation_levels(&self) -> &'static [Isolation] {
        // etcd runs every Txn strict-serializably: there is no weaker level.
        &[Isolation::Serializable]
    }
    fn dialect(&self) -> Option<SqlDialect> {
        None
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            range_reads: false,
            bug_modes: false,
            tarball: false,
            local_server: true,
            replicas: false,
            lossy_data_dir: false,
            clock_faults: ClockFaults::No(
                "etcd is a Go binary: it reads the clock through the vDSO, which libfaketime cannot intercept",
            ),
            membership: true,
            default_ops: None,
        }
    }
    fn records_version_order(&self, _on_nodes: bool) -> bool {
        true
    }
    fn supports(&self, w: WorkloadKind, _on_nodes: bool) -> bool {
        matches!(
            w,
            WorkloadKind::ListAppend | WorkloadKind::RwRegister | WorkloadKind::Register
        )
    }
    fn check_settings(&self, s: &DbSettings, nodes: Option<&[Node]>) -> Result<Isolation, String> {
        if nodes.is_some() && (s.url.is_some() || s.local) {
            return Err(
                "--db etcd: --nodes starts its own cluster; it does not combine with --url or --local"
                    .to_string(),
            );
        }
        check_reach_and_flags(self, s, nodes.is_some())?;
        if s.isolation != Isolation::Serializable {
            return Err(format!(
                "--db etcd runs only --isolation serializable (every Txn is strict-serializable), not {}",
                s.isolation.name()
            ));
        }
        if let Some(u) = &s.url {
            parse_url(u)?;
        }
        Ok(Isolation::Serializable)
    }
    fn client_nodes(&self, _newsql: &NewSqlSpec, nodes: Vec<Node>) -> Result<Vec<Node>, String> {
        Ok(nodes)
    }
    fn client_factory(
        &self,
        s: &DbSettings,
        url: Option<&str>,
    ) -> Result<Arc<dyn ClientFactory>, String> {
        let url = url.ok_or("--db etcd needs --url etcd://host:port,… or --local")?;
        let members = parse_url(url)?;
        Ok(Arc::new(EtcdUrlFactory::new(factory(s), members)))
    }
    fn lifecycle(
        &self,
        s: &DbSettings,
        remotes: Vec<Arc<dyn Remote>>,
    ) -> Result<OnNodes, OpenError> {
        let db = super::EtcdNodes::new(super::EtcdNodesConfig::new(), remotes);
        Ok(OnNodes {
            db: Arc::new(db),
            factory: Arc::new(factory(s)),
        })
    }
    fn start_local(
        &self,
        s: &DbSettings,
    ) -> BoxFuture<'static, Result<Box<dyn LocalServer>, String>> {
        let dir = s.dir.join("etcd");
        Box::pin(async move {
            let failed = |e: &dyn std::fmt::Display| format!("local etcd: {e}");
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let c = LocalCluster::unstarted(ETCD_BINARY, &dir, LOCAL_MEMBERS)
                .map_err(|e| failed(&e))?;
            let cluster = Arc::new(Mutex::new(c));
            // Registered before any member starts: each is recorded under
            // the lock as it is spawned, and the cleanup closes the cluster
            // under that lock, so no member starts after it or escapes it.
            let (at, d) = (cluster.clone(), dir.clone());
            let _at_exit = crate::exit_cleanup::register(
                format!("local etcd in {}", dir.display()),
                move || {
                    kill_members(&at);
                    let _ = remove_member_dirs(&d);
                },
            );
            let started = match cluster.lock() {
                Ok(mut c) => c.spawn_all().map(|()| c.health_checks()),
                Err(_) => Err(super::LocalClusterError::Closed),
            };
            let healthy = match started {
                Ok(checks) => wait_members_healthy(&checks, LOCAL_START_LIMIT).await,
                Err(e) => Err(e),
            };
            if let Err(e) = healthy {
                kill_members(&cluster);
                let _ = remove_member_dirs(&dir);
                return Err(failed(&e));
            }
            Ok(Box::new(LocalEtcd {
                cluster,
                dir,
                _at_exit,
            }) as Box<dyn LocalServer>)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn urls_name_every_member() {
        let m = parse_url("etcd://127.0.0.1:2379,127.0.0.1:22379/").unwrap();
        assert_eq!(
            m.iter().map(|n| n.host.as_str()).collect::<Vec<_>>(),
            ["127.0.0.1:2379", "127.0.0.1:22379"]
        );
        assert_eq!(m[1].name, "e1");
        assert_eq!(parse_url("http://db1").unwrap()[0].host, "db1");
        assert!(parse_url("postgres://x").is_err());
        assert!(parse_url("etcd://").is_err());
        assert!(parse_url("http://h:1/v3/kv").is_err());
    }

    #[test]
    fn clients_go_round_robin_and_setup_to_the_first_member() {
        let members = parse_url("etcd://a:1,b:2,c:3").unwrap();
        let f = EtcdUrlFactory::new(EtcdFactory::new(crate::sql::DataModel::ListAppend), members);
        let picked: Vec<String> = (0..4).map(|_| f.pick().unwrap().host.clone()).collect();
        assert_eq!(picked, ["a:1", "b:2", "c:3", "a:1"]);
    }
}
