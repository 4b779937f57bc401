//! A local etcd cluster for tests without the testbed: `n` members on
//! loopback ports (chosen free by the OS), data and logs in a temporary
//! directory, each process started and ended by its pid (never by name).
//!
//! Members are named `e0`, `e1`, …; [`LocalCluster::nodes`] gives them as
//! [`Node`]s whose host carries the client port, which
//! [`super::client_addr`] understands.

use super::http::post_json;
use nemesis::Node;
use serde_json::json;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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
}

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// A running local cluster; dropping it kills its members (by pid).
pub struct LocalCluster {
    binary: String,
    dir: PathBuf,
    members: Vec<Member>,
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
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
        let mut members = Vec::with_capacity(n);
        for i in 0..n {
            members.push(Member {
                name: format!("e{i}"),
                client_port: free_port()?,
                peer_port: free_port()?,
                child: None,
            });
        }
        let mut c = LocalCluster {
            binary: binary.to_string(),
            dir: dir.to_path_buf(),
            members,
        };
        for i in 0..n {
            c.spawn(i, "new")?;
        }
        c.wait_healthy(Duration::from_secs(30)).await?;
        Ok(c)
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
        Ok(())
    }

    /// Waits until every running member answers a linearizable read.
    ///
    /// # Errors
    /// [`LocalClusterError::NotHealthy`] naming the first member that did not.
    pub async fn wait_healthy(&self, limit: Duration) -> Result<(), LocalClusterError> {
        let start = Instant::now();
        for (i, m) in self.members.iter().enumerate() {
            if m.child.is_none() {
                continue;
            }
            let addr = format!("127.0.0.1:{}", m.client_port);
            loop {
                let body = json!({"key": "aGVhbHRo"});
                let r = post_json(&addr, "/v3/kv/range", &body, Duration::from_secs(2)).await;
                if matches!(r, Ok((200, _))) {
                    break;
                }
                if start.elapsed() > limit {
                    return Err(LocalClusterError::NotHealthy {
                        member: m.name.clone(),
                        waited: limit,
                        log: self.log_path(i).display().to_string(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok(())
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
        if let Some(mut c) = self.members.get_mut(i).and_then(|m| m.child.take()) {
            let _ = c.kill();
            let _ = c.wait();
        }
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

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}
