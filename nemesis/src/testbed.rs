//! The local testbed: N database nodes on this machine, each a network
//! namespace (own IP on a private bridge, own iptables) with its own PID,
//! UTS and mount namespaces, `tini` as PID 1 and `sshd` under it, and a
//! private tmpfs on `/dev/shm` ([`SHM_SOURCE`]).
//!
//! Fixed names (so a stale testbed can always be found and removed): bridge
//! [`BRIDGE`] on 10.99.0.0/24 with the host on `.254`, nodes `n1…nN` at
//! `10.99.0.1…N`, veth `hv-nI`, state under [`STATE_DIR`]. `up` is
//! idempotent: a healthy testbed of the same size is kept, anything else is
//! torn down and rebuilt. Killing a node's outer `unshare` (SIGKILL, it
//! ignores SIGTERM) kills every process of the node.
//!
//! Tests that use the testbed hold [`TestbedLock`] so they never run in
//! parallel (the names are global).

use crate::Node;
use crate::remote::{Remote, SshConfig, SshRemote};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::Command;

/// Directory holding keys, sshd configs, pid files and control sockets.
pub const STATE_DIR: &str = "/run/harness-testbed";
/// The bridge the nodes are attached to.
pub const BRIDGE: &str = "hbr0";
/// The first three octets of every testbed address.
pub const NET: &str = "10.99.0";
/// The host's address on the bridge.
pub const HOST_IP: &str = "10.99.0.254";
/// Lock file serializing tests that use the testbed.
pub const LOCK_PATH: &str = "/run/harness-testbed.lock";
/// The source name of each node's private `/dev/shm` (a tmpfs mounted in
/// the node's mount namespace before sshd starts). Processes of different
/// nodes never share POSIX shared memory: libfaketime 0.9.10 names its
/// segments by pid alone, and pids repeat across the nodes' pid namespaces.
pub const SHM_SOURCE: &str = "harness-shm";

/// The node-side probe that its `/dev/shm` is its own ([`SHM_SOURCE`]): a
/// testbed built before nodes had one fails it and is rebuilt.
fn shm_probe() -> String {
    format!("grep -q '^{SHM_SOURCE} /dev/shm ' /proc/mounts")
}

/// Most nodes a testbed may have.
pub const MAX_NODES: usize = 50;

/// Packages the testbed needs, with the binary that proves each one.
const REQUIRED: &[(&str, &str)] = &[
    ("ip", "iproute2"),
    ("unshare", "util-linux"),
    ("setsid", "util-linux"),
    ("tini", "tini"),
    ("sshd", "openssh-server"),
    ("ssh", "openssh-client"),
    ("ssh-keygen", "openssh-client"),
    ("iptables", "iptables"),
];

/// Why the testbed could not be built or inspected.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// Not running as root.
    #[error(
        "the testbed needs root (network namespaces, bridges, iptables): run as root or with sudo"
    )]
    NotRoot,
    /// Packages are missing; the message is the exact install line.
    #[error(
        "the testbed needs packages that are not installed ({missing}); install them with:\n  apt-get install -y {packages}"
    )]
    MissingPackages {
        /// The missing binaries.
        missing: String,
        /// The packages to install, space separated.
        packages: String,
    },
    /// A node count out of range.
    #[error("--nodes {0}: a testbed has 1 to {MAX_NODES} nodes")]
    BadSize(usize),
    /// A setup command failed.
    #[error("testbed: `{cmd}` failed: {detail}")]
    Command {
        /// The command.
        cmd: String,
        /// Its error output.
        detail: String,
    },
    /// A node's sshd did not accept a login in time.
    #[error("testbed node {node}: sshd did not accept a login within {waited_ms} ms: {detail}")]
    NodeNotReady {
        /// Node name.
        node: String,
        /// How long we waited.
        waited_ms: u128,
        /// The last ssh error.
        detail: String,
    },
    /// No testbed is up.
    #[error("no testbed is up (run `harness testbed up`)")]
    NotUp,
    /// Local IO.
    #[error("testbed: {context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> TestbedError {
    let context = context.into();
    move |source| TestbedError::Io { context, source }
}

/// An exclusive lock on [`LOCK_PATH`], released on drop.
#[derive(Debug)]
pub struct TestbedLock {
    _file: File,
}

impl TestbedLock {
    /// Blocks until no other holder remains.
    ///
    /// # Errors
    /// The lock file cannot be opened or locked.
    pub fn acquire() -> Result<TestbedLock, TestbedError> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_PATH)
            .map_err(io_err(format!("opening {LOCK_PATH}")))?;
        file.lock()
            .map_err(io_err(format!("locking {LOCK_PATH}")))?;
        Ok(TestbedLock { _file: file })
    }
}

/// Whether this process runs as root (from `/proc/self/status`).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

fn find_binary(name: &str) -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .any(|d| Path::new(d).join(name).is_file())
}

/// Checks root and the required packages.
///
/// # Errors
/// [`TestbedError::NotRoot`] or [`TestbedError::MissingPackages`] with the
/// exact `apt-get install` line.
pub fn preflight() -> Result<(), TestbedError> {
    if !is_root() {
        return Err(TestbedError::NotRoot);
    }
    let mut missing = Vec::new();
    let mut packages: Vec<&str> = Vec::new();
    for (bin, pkg) in REQUIRED {
        if !find_binary(bin) {
            missing.push(*bin);
            if !packages.contains(pkg) {
                packages.push(pkg);
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(TestbedError::MissingPackages {
            missing: missing.join(", "),
            packages: packages.join(" "),
        })
    }
}

/// The name of node `i` (1-based).
pub fn node_name(i: usize) -> String {
    format!("n{i}")
}

/// The nodes of a testbed of `n` nodes.
pub fn nodes(n: usize) -> Vec<Node> {
    (1..=n)
        .map(|i| Node::new(node_name(i), format!("{NET}.{i}")))
        .collect()
}

async fn sh(cmd: &str) -> Result<String, TestbedError> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(io_err(format!("running `{cmd}`")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(TestbedError::Command {
            cmd: cmd.to_string(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

async fn sh_quiet(cmd: &str) -> bool {
    sh(cmd).await.is_ok()
}

/// A testbed that is up.
#[derive(Clone, Debug)]
pub struct Testbed {
    /// Its state directory.
    pub dir: PathBuf,
    /// Its nodes, `n1…nN`.
    pub nodes: Vec<Node>,
}

/// One node's health.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeStatus {
    /// The node.
    pub node: Node,
    /// Its network namespace exists.
    pub netns: bool,
    /// Its outer process is alive.
    pub running: bool,
    /// An SSH login works and the node has its own `/dev/shm`.
    pub ssh: bool,
}

fn pid_alive(pid: u32) -> bool {
    // A zombie still has /proc/<pid>; its state says so.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
                .unwrap_or(false)
        })
        .unwrap_or(false)
}

fn read_pid(dir: &Path, name: &str) -> Option<u32> {
    std::fs::read_to_string(dir.join(format!("node-{name}.pid")))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

impl Testbed {
    /// SSH settings for the testbed's nodes (root, the generated key).
    pub fn ssh_config(&self) -> SshConfig {
        SshConfig {
            user: "root".to_string(),
            key: Some(self.dir.join("ssh/id_ed25519")),
            port: 22,
            strict_host_key_checking: false,
            connect_timeout: Duration::from_secs(3),
            control_dir: self.dir.join("cm"),
        }
    }

    /// One SSH remote per node.
    pub fn remotes(&self) -> Vec<SshRemote> {
        self.nodes
            .iter()
            .map(|n| SshRemote::new(n.clone(), self.ssh_config()))
            .collect()
    }

    /// [`Testbed::remotes`] as shared trait objects, what lifecycles and
    /// the nemesis take.
    pub fn dyn_remotes(&self) -> Vec<std::sync::Arc<dyn crate::remote::Remote>> {
        self.remotes()
            .into_iter()
            .map(|r| std::sync::Arc::new(r) as std::sync::Arc<dyn crate::remote::Remote>)
            .collect()
    }

    /// The testbed that is up, if any (read from its state file).
    ///
    /// # Errors
    /// [`TestbedError::NotUp`] when there is none.
    pub fn current() -> Result<Testbed, TestbedError> {
        let dir = PathBuf::from(STATE_DIR);
        let n: usize = std::fs::read_to_string(dir.join("size"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or(TestbedError::NotUp)?;
        Ok(Testbed {
            dir,
            nodes: nodes(n),
        })
    }

    /// Health of every node.
    pub async fn status(&self) -> Vec<NodeStatus> {
        let netns = sh("ip netns list").await.unwrap_or_default();
        let mut out = Vec::new();
        for r in self.remotes() {
            let name = r.node().name.clone();
            let has_ns = netns
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name.as_str()));
            let running = read_pid(&self.dir, &name).is_some_and(pid_alive);
            let ssh = running
                && r.exec(&shm_probe(), None, Duration::from_secs(5))
                    .await
                    .is_ok_and(|o| o.success());
            out.push(NodeStatus {
                node: r.node().clone(),
                netns: has_ns,
                running,
                ssh,
            });
        }
        out
    }

    /// Brings up a testbed of `n` nodes; keeps a healthy one of that size.
    ///
    /// # Errors
    /// Not root, missing packages (with the install line), a failed
    /// command, or a node whose sshd does not come up.
    pub async fn up(n: usize) -> Result<Testbed, TestbedError> {
        preflight()?;
        if n == 0 || n > MAX_NODES {
            return Err(TestbedError::BadSize(n));
        }
        if let Ok(tb) = Testbed::current()
            && tb.nodes.len() == n
            && tb
                .status()
                .await
                .iter()
                .all(|s| s.netns && s.running && s.ssh)
        {
            return Ok(tb);
        }
        Testbed::down().await?;
        let dir = PathBuf::from(STATE_DIR);
        let tb = Testbed {
            dir: dir.clone(),
            nodes: nodes(n),
        };
        match tb.build().await {
            Ok(()) => Ok(tb),
            Err(e) => {
                let _ = Testbed::down().await;
                Err(e)
            }
        }
    }

    async fn build(&self) -> Result<(), TestbedError> {
        let dir = &self.dir;
        let ssh = dir.join("ssh");
        std::fs::create_dir_all(&ssh).map_err(io_err(format!("creating {}", ssh.display())))?;
        std::fs::create_dir_all(dir.join("cm")).map_err(io_err("creating the control dir"))?;
        std::fs::create_dir_all("/run/sshd").map_err(io_err("creating /run/sshd"))?;
        let d = dir.display();
        sh(&format!(
            "chmod 700 {d}/ssh && ssh-keygen -q -t ed25519 -N '' -f {d}/ssh/id_ed25519 -C harness-testbed \
             && ssh-keygen -q -t ed25519 -N '' -f {d}/ssh/host_ed25519 -C harness-testbed-host \
             && cp {d}/ssh/id_ed25519.pub {d}/ssh/authorized_keys"
        ))
        .await?;
        sh(&format!(
            "ip link add {BRIDGE} type bridge && ip addr add {HOST_IP}/24 dev {BRIDGE} && ip link set {BRIDGE} up"
        ))
        .await?;
        for node in &self.nodes {
            let ns = &node.name;
            let ip = &node.host;
            sh(&format!(
                "ip netns add {ns} && ip link add hv-{ns} type veth peer name eth0 netns {ns} \
                 && ip link set hv-{ns} master {BRIDGE} up && ip -n {ns} addr add {ip}/24 dev eth0 \
                 && ip -n {ns} link set eth0 up && ip -n {ns} link set lo up"
            ))
            .await?;
            let conf = format!(
                "ListenAddress {ip}:22\nHostKey {d}/ssh/host_ed25519\nPidFile none\n\
                 PermitRootLogin prohibit-password\nAuthorizedKeysFile {d}/ssh/authorized_keys\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 UseDNS no\nMaxStartups 100:30:200\nMaxSessions 100\nSetEnv SHLVL=1\n"
            );
            let conf_path = dir.join(format!("ssh/sshd-{ns}.conf"));
            std::fs::write(&conf_path, conf)
                .map_err(io_err(format!("writing {}", conf_path.display())))?;
            // The outer sh exits at once, so the node is re-parented to init
            // and never becomes our zombie; $! is the outer unshare's pid.
            let pid = sh(&format!(
                "setsid ip netns exec {ns} unshare --uts --pid --mount --fork --kill-child --mount-proc \
                 tini -s -- sh -c 'hostname {ns}; mount -t tmpfs -o size=256m,mode=1777 {SHM_SOURCE} /dev/shm && exec /usr/sbin/sshd -D -f {d}/ssh/sshd-{ns}.conf -E {d}/ssh/sshd-{ns}.log' \
                 </dev/null >/dev/null 2>&1 & echo $!"
            ))
            .await?;
            std::fs::write(dir.join(format!("node-{ns}.pid")), &pid)
                .map_err(io_err("writing a pid file"))?;
        }
        std::fs::write(dir.join("size"), self.nodes.len().to_string())
            .map_err(io_err("writing the size file"))?;
        for r in self.remotes() {
            let start = Instant::now();
            let limit = Duration::from_secs(10);
            loop {
                match r.connect().await {
                    Ok(()) => break,
                    Err(e) if start.elapsed() > limit => {
                        return Err(TestbedError::NodeNotReady {
                            node: r.node().name.clone(),
                            waited_ms: start.elapsed().as_millis(),
                            detail: e.to_string(),
                        });
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }
        Ok(())
    }

    /// Tears down whatever testbed exists (also a partial or stale one):
    /// closes SSH connections, kills every node, deletes namespaces, veths,
    /// the bridge and the state directory. Idempotent.
    ///
    /// # Errors
    /// Not root, or a leftover that could not be removed.
    pub async fn down() -> Result<(), TestbedError> {
        if !is_root() {
            return Err(TestbedError::NotRoot);
        }
        let dir = PathBuf::from(STATE_DIR);
        // Nodes: from the state file, plus any hv-* veth or nI namespace left.
        let mut names: Vec<String> = Testbed::current()
            .map(|t| t.nodes.into_iter().map(|n| n.name).collect())
            .unwrap_or_default();
        let links = sh("ip -o link show").await.unwrap_or_default();
        for l in links.lines() {
            if let Some(rest) = l.split(": ").nth(1)
                && let Some(name) = rest.split('@').next().and_then(|s| s.strip_prefix("hv-"))
            {
                names.push(name.to_string());
            }
        }
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                let f = e.file_name().to_string_lossy().to_string();
                if let Some(n) = f.strip_prefix("node-").and_then(|s| s.strip_suffix(".pid")) {
                    names.push(n.to_string());
                }
            }
        }
        names.sort();
        names.dedup();
        let tb = Testbed {
            dir: dir.clone(),
            nodes: names
                .iter()
                .map(|n| {
                    let i = n.trim_start_matches('n');
                    Node::new(n.clone(), format!("{NET}.{i}"))
                })
                .collect(),
        };
        for r in tb.remotes() {
            if dir.join("cm").exists() {
                r.close().await;
            }
        }
        let mut pids = Vec::new();
        for n in &names {
            if let Some(pid) = read_pid(&dir, n)
                && pid_alive(pid)
            {
                let _ = sh_quiet(&format!("kill -KILL {pid}")).await;
                pids.push(pid);
            }
        }
        let start = Instant::now();
        while pids.iter().any(|p| pid_alive(*p)) && start.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let netns = sh("ip netns list").await.unwrap_or_default();
        for n in &names {
            if netns
                .lines()
                .any(|l| l.split_whitespace().next() == Some(n.as_str()))
            {
                sh(&format!("ip netns del {n}")).await?;
            }
            if links.contains(&format!("hv-{n}@")) || links.contains(&format!("hv-{n}:")) {
                let _ = sh_quiet(&format!("ip link del hv-{n}")).await;
            }
        }
        if links.contains(&format!(": {BRIDGE}:")) {
            sh(&format!("ip link del {BRIDGE}")).await?;
        }
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io_err(format!("removing {}", dir.display())))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_and_addresses_are_fixed() {
        let n = nodes(3);
        assert_eq!(n[2], Node::new("n3", "10.99.0.3"));
    }

    #[test]
    fn missing_package_error_gives_the_install_line() {
        let e = TestbedError::MissingPackages {
            missing: "tini, sshd".into(),
            packages: "tini openssh-server".into(),
        };
        assert!(
            e.to_string()
                .ends_with("apt-get install -y tini openssh-server")
        );
    }
}
