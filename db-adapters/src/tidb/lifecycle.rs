//! TiDB's cluster lifecycle from a release tarball, as command plans
//! (see the module doc of `super`).

use super::*;
use crate::cluster::{Daemon, Install, Plan, Spec, Step, Tarball, UNPACK_LOG, host_ports};
use crate::db::NodeLog;
use crate::tarball::lifecycle::{Cluster, Member, Stage};
use nemesis::Node;
use std::collections::BTreeMap;
use std::time::Duration;

/// Logs kept from each node: each role's log and output where it runs,
/// and the unpack log (the catalog's `log_files`).
pub const LOGS: &[NodeLog] = &[
    NodeLog::of_daemon("pd", "pd.log", "pd.log"),
    NodeLog::of_daemon("pd", "pd.stdout.log", "pd.stdout.log"),
    NodeLog::of_daemon("tikv", "tikv.log", "tikv.log"),
    NodeLog::of_daemon("tikv", "tikv.stdout.log", "tikv.stdout.log"),
    NodeLog::of_daemon("tidb", "tidb.log", "tidb.log"),
    NodeLog::of_daemon("tidb", "tidb.stdout.log", "tidb.stdout.log"),
    UNPACK_LOG,
];

/// A TiDB component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Placement Driver (`pd-server`).
    Pd,
    /// Storage (`tikv-server`).
    Tikv,
    /// SQL layer (`tidb-server`).
    Tidb,
}

impl Role {
    /// Every role, in start order.
    pub const ALL: [Role; 3] = [Role::Pd, Role::Tikv, Role::Tidb];

    /// `pd`, `tikv`, `tidb`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Pd => "pd",
            Role::Tikv => "tikv",
            Role::Tidb => "tidb",
        }
    }

    /// The binary, relative to the unpacked release.
    pub fn binary(self) -> &'static str {
        match self {
            Role::Pd => "bin/pd-server",
            Role::Tikv => "bin/tikv-server",
            Role::Tidb => "bin/tidb-server",
        }
    }
}

/// Which nodes run which role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roles(pub BTreeMap<Role, Vec<Node>>);

impl Roles {
    /// Every role on every node (Jepsen's TiDB suite does this).
    pub fn spread(nodes: &[Node]) -> Roles {
        Roles(Role::ALL.iter().map(|r| (*r, nodes.to_vec())).collect())
    }

    /// Parses `--roles pd=n1,n2,n3;tikv=n1,n2,n3;tidb=n4,n5` against the
    /// test's nodes. Every role needs at least one node.
    ///
    /// # Errors
    /// Names the bad entry: unknown role or node, a duplicate or missing role.
    pub fn parse(s: &str, nodes: &[Node]) -> Result<Roles, String> {
        let mut map: BTreeMap<Role, Vec<Node>> = BTreeMap::new();
        for (i, part) in s
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .enumerate()
        {
            let Some((role, list)) = part.split_once('=') else {
                return Err(format!(
                    "--roles entry {} {part:?}: expected role=node,node,…",
                    i + 1
                ));
            };
            let role = match role.trim() {
                "pd" => Role::Pd,
                "tikv" | "kv" => Role::Tikv,
                "tidb" | "db" => Role::Tidb,
                other => {
                    return Err(format!(
                        "--roles entry {} {part:?}: unknown role {other:?} (expected pd, tikv or tidb)",
                        i + 1
                    ));
                }
            };
            if map.contains_key(&role) {
                return Err(format!(
                    "--roles entry {} {part:?}: role {} given twice",
                    i + 1,
                    role.name()
                ));
            }
            let mut members = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let Some(n) = nodes.iter().find(|n| n.name == name) else {
                    return Err(format!(
                        "--roles entry {} {part:?}: unknown node {name:?}",
                        i + 1
                    ));
                };
                members.push(n.clone());
            }
            if members.is_empty() {
                return Err(format!(
                    "--roles entry {} {part:?}: role {} has no nodes",
                    i + 1,
                    role.name()
                ));
            }
            map.insert(role, members);
        }
        for r in Role::ALL {
            if !map.contains_key(&r) {
                return Err(format!("--roles {s:?}: role {} has no nodes", r.name()));
            }
        }
        Ok(Roles(map))
    }

    /// The nodes of `role`.
    pub fn nodes(&self, role: Role) -> &[Node] {
        self.0.get(&role).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Settings of a TiDB cluster.
#[derive(Clone, Debug)]
pub struct TidbConfig {
    /// Where and what to install (the tarball holds `bin/pd-server`,
    /// `bin/tikv-server`, `bin/tidb-server`, as
    /// `tidb-<version>-linux-amd64.tar.gz`), tidb-server's MySQL port,
    /// `--no-setup`.
    pub install: Install,
    /// Role assignment.
    pub roles: Roles,
}

/// PD client port.
pub const PD_CLIENT_PORT: u16 = 2379;
/// PD peer port.
pub const PD_PEER_PORT: u16 = 2380;
/// TiKV port.
pub const TIKV_PORT: u16 = 20160;
/// TiKV status port.
pub const TIKV_STATUS_PORT: u16 = 20180;
/// tidb-server status port.
pub const TIDB_STATUS_PORT: u16 = 10080;

impl TidbConfig {
    /// Defaults: `/var/lib/harness/tidb`, port 4000.
    pub fn new(tarball: Tarball, roles: Roles) -> TidbConfig {
        TidbConfig {
            install: Install::new("/var/lib/harness/tidb", tarball, DEFAULT_PORT),
            roles,
        }
    }

    fn pd_endpoints(&self) -> String {
        host_ports(
            self.roles.nodes(Role::Pd).iter().map(|n| n.host.as_str()),
            PD_CLIENT_PORT,
        )
    }

    /// The daemon of `role` on `node`. Flags from PingCAP's command-line
    /// references:
    /// * pd-server (<https://docs.pingcap.com/tidb/stable/command-line-flags-for-pd-configuration>):
    ///   `--name`, `--data-dir`, `--client-urls`, `--peer-urls`,
    ///   `--advertise-client-urls`, `--advertise-peer-urls`,
    ///   `--initial-cluster` (`name=peer-url,…` of every PD), `--log-file`;
    /// * tikv-server (<https://docs.pingcap.com/tidb/stable/command-line-flags-for-tikv-configuration>):
    ///   `--pd` (PD endpoints), `--addr`, `--advertise-addr`, `--status-addr`,
    ///   `--data-dir`, `--log-file`;
    /// * tidb-server (<https://docs.pingcap.com/tidb/stable/command-line-flags-for-tidb-configuration>):
    ///   `--store=tikv`, `--path` (PD endpoints), `--host`, `-P` (port),
    ///   `--status`, `--advertise-address`, `--log-file`.
    pub fn daemon(&self, role: Role, node: &Node) -> Daemon {
        let dir = self.install.layout.dir(&node.name);
        let h = &node.host;
        let args = match role {
            Role::Pd => {
                let initial: Vec<String> = self
                    .roles
                    .nodes(Role::Pd)
                    .iter()
                    .map(|n| format!("pd-{}=http://{}:{PD_PEER_PORT}", n.name, n.host))
                    .collect();
                vec![
                    format!("--name=pd-{}", node.name),
                    format!("--data-dir={dir}/pd"),
                    format!("--client-urls=http://{h}:{PD_CLIENT_PORT}"),
                    format!("--peer-urls=http://{h}:{PD_PEER_PORT}"),
                    format!("--advertise-client-urls=http://{h}:{PD_CLIENT_PORT}"),
                    format!("--advertise-peer-urls=http://{h}:{PD_PEER_PORT}"),
                    format!("--initial-cluster={}", initial.join(",")),
                    format!("--log-file={dir}/pd.log"),
                ]
            }
            Role::Tikv => vec![
                format!("--pd={}", self.pd_endpoints()),
                format!("--addr={h}:{TIKV_PORT}"),
                format!("--advertise-addr={h}:{TIKV_PORT}"),
                format!("--status-addr={h}:{TIKV_STATUS_PORT}"),
                format!("--data-dir={dir}/tikv"),
                format!("--log-file={dir}/tikv.log"),
            ],
            Role::Tidb => vec![
                "--store=tikv".to_string(),
                format!("--path={}", self.pd_endpoints()),
                format!("--host={h}"),
                "-P".to_string(),
                self.install.port.to_string(),
                format!("--status={TIDB_STATUS_PORT}"),
                format!("--advertise-address={h}"),
                format!("--log-file={dir}/tidb.log"),
            ],
        };
        Daemon {
            name: role.name().to_string(),
            bin: format!("{}/{}", self.install.layout.dist(&node.name), role.binary()),
            args,
            cwd: dir.clone(),
            pid_file: self.install.layout.pid_file(&node.name, role.name()),
            stdout: self.install.layout.stdout_file(&node.name, role.name()),
        }
    }

    /// Every node that runs some role, in test order.
    fn members(&self, nodes: &[Node]) -> Vec<Node> {
        nodes
            .iter()
            .filter(|n| Role::ALL.iter().any(|r| self.roles.nodes(*r).contains(n)))
            .cloned()
            .collect()
    }

    /// The whole lifecycle: install the binaries each node's roles need,
    /// then start every PD, wait until PD answers
    /// (`curl http://<pd>:2379/pd/api/v1/health`), start every TiKV, then
    /// every TiDB, and wait until each tidb-server answers on its status
    /// port (`curl http://<host>:10080/status`).
    pub fn spec(&self, nodes: &[Node]) -> Spec {
        let runs = |n: &Node| -> Vec<Role> {
            Role::ALL
                .into_iter()
                .filter(|r| self.roles.nodes(*r).contains(n))
                .collect()
        };
        let members = self
            .members(nodes)
            .into_iter()
            .map(|n| {
                let dir = self.install.layout.dir(&n.name);
                let roles = runs(&n);
                Member {
                    binaries: roles.iter().map(|r| r.binary()).collect(),
                    then: Plan::default(),
                    wipe: roles
                        .iter()
                        .flat_map(|r| {
                            [
                                format!("{dir}/{}", r.name()),
                                format!("{dir}/{}.log", r.name()),
                            ]
                        })
                        .collect(),
                    node: n,
                }
            })
            .collect();
        let stages = Role::ALL
            .into_iter()
            .map(|role| {
                let nodes = self.roles.nodes(role);
                let mut then = Plan::default();
                if role == Role::Pd {
                    for n in nodes {
                        then.push(
                            Step::run(
                                &n.name,
                                "pd ready",
                                format!(
                                    "curl -fsS http://{}:{PD_CLIENT_PORT}/pd/api/v1/health",
                                    n.host
                                ),
                            )
                            .retry(120, Duration::from_secs(1)),
                        );
                    }
                }
                Stage {
                    daemons: nodes
                        .iter()
                        .map(|n| (n.name.clone(), self.daemon(role, n)))
                        .collect(),
                    then,
                }
            })
            .collect();
        let ready = self
            .roles
            .nodes(Role::Tidb)
            .iter()
            .map(|n| {
                Step::run(
                    &n.name,
                    "tidb ready",
                    format!("curl -fsS http://{}:{TIDB_STATUS_PORT}/status", n.host),
                )
                .retry(180, Duration::from_secs(1))
            })
            .collect();
        Cluster {
            name: "tidb",
            product: "TiDB",
            install: &self.install,
            logs: LOGS,
            members,
            stages,
            ready: Plan { steps: ready },
            client_nodes: self.roles.nodes(Role::Tidb).to_vec(),
            primaries: self.roles.nodes(Role::Pd).to_vec(),
        }
        .spec()
    }
}

/// Sends `signal` to the `role` daemon on `node` only (TiDB's per-role
/// faults: kill-pd, pause-kv, …): the plan to run with
/// [`crate::cluster::execute`].
pub fn role_signal_plan(cfg: &TidbConfig, role: Role, node: &Node, signal: &str) -> Plan {
    let d = cfg.daemon(role, node);
    let mut p = Plan::default();
    let cmd = if signal == "START" {
        d.start_cmd()
    } else {
        d.signal_cmd(signal)
    };
    p.push(Step::run(
        &node.name,
        format!("{signal} {}", role.name()),
        cmd,
    ));
    p
}
