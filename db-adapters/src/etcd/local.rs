//! A local etcd cluster for tests without the testbed: `n` members on
//! loopback ports (chosen free by the OS), data and logs in a temporary
//! directory, each process started and ended by its pid (never by name).
//!
//! Members are named `e0`, `e1`, …; [`LocalCluster::nodes`] gives them as
//! [`Node`]s whose host carries the client port, which
//! [`super::client_addr`] understands.
//!
//! Faults without root ([`LocalMembers`], the `--local` run's
//! [`Process`]): the nemesis sees one node (`local`); each kill SIGKILLs
//! the next running member in turn (its data kept), each pause SIGSTOPs the
//! next running member in turn; start restarts every killed member on its
//! data (`--initial-cluster-state existing`), resume SIGCONTs every paused
//! one. One member at a time, so a quorum of the three stays up unless
//! faults overlap.

use super::grpc::EtcdConn;
use crate::exit_cleanup::signal;
use nemesis::Node;
use nemesis::process::{Process, ProcessError};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a local cluster could not start.
#[derive(Debug, thiserror::Error)]
pub enum LocalClusterError {
    /// The etcd binary could not be run.
    #[error("cannot run {binary}: {detail}")]
    Spawn {
        /// The binary.
        binary: String,
        /// The OS error.
        detail: String,
    },
    /// A file-system or port error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A member did not become healthy in time.
    #[error("member {member} not healthy after {waited:?}; see {log}")]
    NotHealthy {
        /// The member.
        member: String,
        /// How long it was waited for.
        waited: Duration,
        /// Its log file.
        log: String,
    },
    /// The cluster was closed ([`LocalCluster::close`]): harness is exiting.
    #[error("the local cluster was stopped: harness is exiting")]
    Closed,
}

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
    paused: bool,
}

/// A running local cluster; dropping it kills its members (by pid).
pub struct LocalCluster {
    binary: String,
    dir: PathBuf,
    members: Vec<Member>,
    /// Set by [`LocalCluster::close`]: no member starts again.
    closed: bool,
}

fn free_port() -> std::io::Result<u16> {
    crate::ports::free_port()
}

impl LocalCluster {
    /// Starts `n` members of `binary` (e.g. `/usr/bin/etcd`) under `dir`
    /// and waits until each answers a linearizable read.
    ///
    /// # Errors
    /// [`LocalClusterError`]; members already started are killed.
    pub async fn start(
        binary: &str,
        dir: &Path,
        n: usize,
    ) -> Result<LocalCluster, LocalClusterError> {
        let mut c = LocalCluster::unstarted(binary, dir, n)?;
        c.spawn_all()?;
        c.wait_healthy(Duration::from_secs(30)).await?;
        Ok(c)
    }

    /// `n` members of `binary` under `dir` with their ports chosen, none
    /// running yet: what a caller registers for an exit before any starts
    /// ([`LocalCluster::spawn_all`]).
    ///
    /// # Errors
    /// [`LocalClusterError::Io`]: no free port.
    pub fn unstarted(
        binary: &str,
        dir: &Path,
        n: usize,
    ) -> Result<LocalCluster, LocalClusterError> {
        let mut members = Vec::with_capacity(n);
        for i in 0..n {
            members.push(Member {
                name: format!("e{i}"),
                client_port: free_port()?,
                peer_port: free_port()?,
                child: None,
                paused: false,
            });
        }
        Ok(LocalCluster {
            binary: binary.to_string(),
            dir: dir.to_path_buf(),
            members,
            closed: false,
        })
    }

    /// Starts every member of a new cluster, each recorded (by its
    /// [`Child`]) as soon as it is spawned.
    ///
    /// # Errors
    /// [`LocalClusterError`]; the members already started keep running
    /// (dropping the cluster kills them).
    pub fn spawn_all(&mut self) -> Result<(), LocalClusterError> {
        for i in 0..self.members.len() {
            self.spawn(i, "new")?;
        }
        Ok(())
    }

    fn initial_cluster(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn log_path(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{}.log", self.members[i].name))
    }

    fn spawn(&mut self, i: usize, state: &str) -> Result<(), LocalClusterError> {
        if self.closed {
            return Err(LocalClusterError::Closed);
        }
        let initial = self.initial_cluster();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path(i))?;
        let m = &self.members[i];
        let client = format!("http://127.0.0.1:{}", m.client_port);
        let peer = format!("http://127.0.0.1:{}", m.peer_port);
        let child = Command::new(&self.binary)
            .arg("--name")
            .arg(&m.name)
            .arg("--data-dir")
            .arg(self.dir.join(format!("{}.etcd", m.name)))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args([
                "--initial-cluster",
                &initial,
                "--initial-cluster-state",
                state,
            ])
            .args(["--initial-cluster-token", "harness-local"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| LocalClusterError::Spawn {
                binary: self.binary.clone(),
                detail: e.to_string(),
            })?;
        self.members[i].child = Some(child);
        self.members[i].paused = false;
        Ok(())
    }

    /// Waits until every running member answers a linearizable read.
    ///
    /// # Errors
    /// [`LocalClusterError::NotHealthy`] naming the first member that did not.
    pub async fn wait_healthy(&self, limit: Duration) -> Result<(), LocalClusterError> {
        wait_members_healthy(&self.health_checks(), limit).await
    }

    /// What [`wait_members_healthy`] checks of the members that run, so a
    /// cluster behind a lock can be waited for without holding it.
    pub fn health_checks(&self) -> Vec<HealthCheck> {
        self.members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.child.is_some())
            .map(|(i, m)| HealthCheck {
                member: m.name.clone(),
                addr: format!("127.0.0.1:{}", m.client_port),
                log: self.log_path(i).display().to_string(),
            })
            .collect()
    }

    /// The members as nodes (`name` e0…, `host` 127.0.0.1:client-port).
    pub fn nodes(&self) -> Vec<Node> {
        self.members
            .iter()
            .map(|m| Node {
                name: m.name.clone(),
                host: format!("127.0.0.1:{}", m.client_port),
            })
            .collect()
    }

    /// The pid of member `i`, if it runs.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members.get(i)?.child.as_ref().map(Child::id)
    }

    /// Kills member `i` (SIGKILL, by pid) and reaps it.
    pub fn kill(&mut self, i: usize) {
        if let Some(m) = self.members.get_mut(i) {
            m.paused = false;
            if let Some(mut c) = m.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// Kills every member and keeps any from starting again (an exit's
    /// cleanup, which may run before [`LocalCluster::spawn_all`] has).
    pub fn close(&mut self) {
        self.closed = true;
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }

    /// Number of members (running or not).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the cluster has no member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether member `i` runs and is not paused.
    pub fn is_serving(&self, i: usize) -> bool {
        self.members
            .get(i)
            .is_some_and(|m| m.child.is_some() && !m.paused)
    }

    /// SIGSTOPs member `i` (by pid) if it runs.
    pub fn pause(&mut self, i: usize) {
        if let Some(m) = self.members.get_mut(i)
            && let Some(c) = &m.child
        {
            signal(c.id(), "STOP");
            m.paused = true;
        }
    }

    /// SIGCONTs member `i` (by pid) if it is paused.
    pub fn resume(&mut self, i: usize) {
        if let Some(m) = self.members.get_mut(i)
            && m.paused
        {
            if let Some(c) = &m.child {
                signal(c.id(), "CONT");
            }
            m.paused = false;
        }
    }

    /// Restarts every killed member; the indices restarted.
    ///
    /// # Errors
    /// [`LocalClusterError::Spawn`].
    pub fn restart_all(&mut self) -> Result<Vec<usize>, LocalClusterError> {
        let dead: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.members[i].child.is_none())
            .collect();
        for &i in &dead {
            self.spawn(i, "existing")?;
        }
        Ok(dead)
    }

    /// Resumes every paused member; the indices resumed.
    pub fn resume_all(&mut self) -> Vec<usize> {
        let paused: Vec<usize> = (0..self.members.len())
            .filter(|&i| self.members[i].paused)
            .collect();
        for &i in &paused {
            self.resume(i);
        }
        paused
    }

    /// Restarts a killed member `i` on its data directory.
    ///
    /// # Errors
    /// [`LocalClusterError::Spawn`].
    pub fn restart(&mut self, i: usize) -> Result<(), LocalClusterError> {
        if self.members.get(i).is_some_and(|m| m.child.is_none()) {
            self.spawn(i, "existing")?;
        }
        Ok(())
    }
}

/// A member to wait for ([`LocalCluster::health_checks`]).
#[derive(Clone, Debug)]
pub struct HealthCheck {
    member: String,
    addr: String,
    log: String,
}

/// Waits until every member of `checks` answers a linearizable read.
///
/// # Errors
/// [`LocalClusterError::NotHealthy`] naming the first member that did not.
pub async fn wait_members_healthy(
    checks: &[HealthCheck],
    limit: Duration,
) -> Result<(), LocalClusterError> {
    let start = Instant::now();
    for m in checks {
        let mut conn = EtcdConn::new(&m.addr, Duration::from_secs(2));
        loop {
            if conn.linearizable_read(b"health").await.is_ok() {
                break;
            }
            if start.elapsed() > limit {
                return Err(LocalClusterError::NotHealthy {
                    member: m.member.clone(),
                    waited: limit,
                    log: m.log.clone(),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

/// The [`Process`] of a `--local` cluster: one member per kill or pause,
/// in turn (see the module doc). Cheap to clone.
#[derive(Clone)]
pub struct LocalMembers {
    cluster: Arc<Mutex<LocalCluster>>,
    next: Arc<AtomicUsize>,
}

impl LocalMembers {
    /// Faults on `cluster`'s members.
    pub fn new(cluster: Arc<Mutex<LocalCluster>>) -> LocalMembers {
        LocalMembers {
            cluster,
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn with<T>(
        &self,
        node: &Node,
        action: &'static str,
        f: impl FnOnce(&mut LocalCluster) -> Result<T, String>,
    ) -> Result<T, ProcessError> {
        let err = |message: String| ProcessError {
            node: node.name.clone(),
            action,
            message,
        };
        let mut c = self
            .cluster
            .lock()
            .map_err(|_| err("the local cluster's lock is poisoned".to_string()))?;
        f(&mut c).map_err(err)
    }

    /// The next serving member in turn (`None`: none serves).
    fn pick(&self, c: &LocalCluster) -> Option<usize> {
        let n = c.len();
        (0..n)
            .map(|_| self.next.fetch_add(1, Ordering::Relaxed) % n.max(1))
            .find(|&i| c.is_serving(i))
    }

    /// Kills the next serving member; its index.
    ///
    /// # Errors
    /// A poisoned lock.
    pub fn kill_one(&self, node: &Node) -> Result<Option<usize>, ProcessError> {
        self.with(node, "kill", |c| {
            let i = self.pick(c);
            if let Some(i) = i {
                c.kill(i);
            }
            Ok(i)
        })
    }

    /// Pauses the next serving member; its index.
    ///
    /// # Errors
    /// A poisoned lock.
    pub fn pause_one(&self, node: &Node) -> Result<Option<usize>, ProcessError> {
        self.with(node, "pause", |c| {
            let i = self.pick(c);
            if let Some(i) = i {
                c.pause(i);
            }
            Ok(i)
        })
    }
}

impl Process for LocalMembers {
    fn kill<'a>(&'a self, node: &'a Node) -> nemesis::BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move { self.kill_one(node).map(|_| ()) })
    }
    fn start<'a>(&'a self, node: &'a Node) -> nemesis::BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.with(node, "start", |c| {
                c.restart_all().map(|_| ()).map_err(|e| e.to_string())
            })
        })
    }
    fn pause<'a>(&'a self, node: &'a Node) -> nemesis::BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move { self.pause_one(node).map(|_| ()) })
    }
    fn resume<'a>(&'a self, node: &'a Node) -> nemesis::BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move { self.with(node, "resume", |c| Ok(c.resume_all()).map(|_| ())) })
    }
}
