//! Running commands on nodes: the [`Remote`] trait, its SSH implementation
//! ([`SshRemote`]) and a local one ([`LocalRemote`]).
//!
//! Key decision: SSH goes through the system OpenSSH client, started as
//! `tokio::process::Command`, with one ControlMaster connection per node
//! (opened by [`Remote::connect`] with `ssh -f -N -M`, reused by every later
//! command through its control socket). This gets `~/.ssh/config`, agents,
//! known_hosts and bastions for free (what Jepsen users rely on), adds no C
//! or crypto code to the build, and a multiplexed command costs ~20–30 ms.
//! A command's timeout kills the local `ssh` client; exit status 255 is
//! OpenSSH's own failure (connection, login) and is reported as
//! [`RemoteError::Unreachable`] with the node's name.

use crate::{BoxFuture, Node};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// Default limit for one command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What a finished command returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Exit status; `-1` when it was killed by a signal.
    pub status: i32,
    /// Standard output, raw.
    pub stdout: Vec<u8>,
    /// Standard error, raw.
    pub stderr: Vec<u8>,
}

impl Output {
    /// Whether the command exited with status 0.
    pub fn success(&self) -> bool {
        self.status == 0
    }

    /// Standard output as text (lossy), trimmed.
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_string()
    }

    /// Standard error as text (lossy), trimmed.
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_string()
    }
}

/// A failure to run a command on a node. Every variant names the node.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The node cannot be reached or the login failed.
    #[error("node {node}: unreachable or SSH login failed: {detail}")]
    Unreachable {
        /// Node name.
        node: String,
        /// What ssh said.
        detail: String,
    },
    /// The command did not finish in time (the local client was killed).
    #[error("node {node}: `{cmd}` timed out after {timeout_ms} ms")]
    Timeout {
        /// Node name.
        node: String,
        /// The command.
        cmd: String,
        /// The limit.
        timeout_ms: u128,
    },
    /// The command exited with a non-zero status.
    #[error("node {node}: `{cmd}` exited with status {status}: {stderr}")]
    Failed {
        /// Node name.
        node: String,
        /// The command.
        cmd: String,
        /// Its exit status.
        status: i32,
        /// Its standard error (trimmed).
        stderr: String,
    },
    /// A local IO error (spawning ssh, reading or writing a local file).
    #[error("node {node}: {context}: {source}")]
    Io {
        /// Node name.
        node: String,
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '/' | '.' | '-' | '_' | '=' | ':' | ',' | '@' | '%' | '+')
        })
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs commands on one node.
pub trait Remote: Send + Sync {
    /// The node this remote reaches.
    fn node(&self) -> &Node;

    /// Opens (or checks) the connection: reachability and login.
    ///
    /// # Errors
    /// [`RemoteError::Unreachable`] naming the node.
    fn connect(&self) -> BoxFuture<'_, Result<(), RemoteError>>;

    /// Runs `cmd` through `sh -c` on the node (as root: through `sudo -n`
    /// when the login user is not root), feeding it `stdin`, and returns its
    /// exit status and output whatever the status.
    ///
    /// # Errors
    /// Timeout, unreachable node, local IO.
    ///
    /// # Cancel safety
    /// Dropping the future kills the local client; the remote command may
    /// keep running.
    fn exec<'a>(
        &'a self,
        cmd: &'a str,
        stdin: Option<Vec<u8>>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, RemoteError>>;

    /// Closes the reused connection (best effort).
    fn close(&self) -> BoxFuture<'_, ()>;

    /// Runs `cmd` with `timeout`; a non-zero exit is an error.
    ///
    /// # Errors
    /// As [`Remote::exec`], plus [`RemoteError::Failed`].
    fn run_timeout<'a>(
        &'a self,
        cmd: &'a str,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, RemoteError>> {
        Box::pin(async move {
            let out = self.exec(cmd, None, timeout).await?;
            if out.success() {
                Ok(out)
            } else {
                Err(RemoteError::Failed {
                    node: self.node().name.clone(),
                    cmd: cmd.to_string(),
                    status: out.status,
                    stderr: out.stderr_str(),
                })
            }
        })
    }

    /// Runs `cmd` with the default timeout; a non-zero exit is an error.
    ///
    /// # Errors
    /// As [`Remote::run_timeout`].
    fn run<'a>(&'a self, cmd: &'a str) -> BoxFuture<'a, Result<Output, RemoteError>> {
        self.run_timeout(cmd, DEFAULT_TIMEOUT)
    }

    /// Writes `data` to `path` on the node (mode 0644, parent must exist).
    ///
    /// # Errors
    /// As [`Remote::exec`], plus [`RemoteError::Failed`].
    fn upload_bytes<'a>(
        &'a self,
        data: Vec<u8>,
        path: &'a str,
    ) -> BoxFuture<'a, Result<(), RemoteError>> {
        Box::pin(async move {
            let cmd = format!("cat > {}", shell_quote(path));
            let out = self.exec(&cmd, Some(data), DEFAULT_TIMEOUT).await?;
            if out.success() {
                Ok(())
            } else {
                Err(RemoteError::Failed {
                    node: self.node().name.clone(),
                    cmd,
                    status: out.status,
                    stderr: out.stderr_str(),
                })
            }
        })
    }

    /// Copies the local file `local` to `path` on the node.
    ///
    /// # Errors
    /// Local IO, or as [`Remote::upload_bytes`].
    fn upload<'a>(
        &'a self,
        local: &'a Path,
        path: &'a str,
    ) -> BoxFuture<'a, Result<(), RemoteError>> {
        Box::pin(async move {
            let data = tokio::fs::read(local)
                .await
                .map_err(|source| RemoteError::Io {
                    node: self.node().name.clone(),
                    context: format!("reading {}", local.display()),
                    source,
                })?;
            self.upload_bytes(data, path).await
        })
    }

    /// Copies `path` on the node to the local file `local`.
    ///
    /// # Errors
    /// As [`Remote::exec`], [`RemoteError::Failed`] when the remote file
    /// cannot be read, local IO.
    fn download<'a>(
        &'a self,
        path: &'a str,
        local: &'a Path,
    ) -> BoxFuture<'a, Result<(), RemoteError>> {
        Box::pin(async move {
            let cmd = format!("cat {}", shell_quote(path));
            let out = self.run(&cmd).await?;
            tokio::fs::write(local, &out.stdout)
                .await
                .map_err(|source| RemoteError::Io {
                    node: self.node().name.clone(),
                    context: format!("writing {}", local.display()),
                    source,
                })
        })
    }
}

async fn run_command(
    node: &str,
    mut command: Command,
    display_cmd: &str,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Output, RemoteError> {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let io = |context: &str, source| RemoteError::Io {
        node: node.to_string(),
        context: context.to_string(),
        source,
    };
    let mut child = command.spawn().map_err(|e| io("spawning the command", e))?;
    if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // Written concurrently so a command that talks back before reading
        // all its input cannot deadlock against us.
        tokio::spawn(async move {
            let _ = pipe.write_all(&data).await;
            let _ = pipe.shutdown().await;
        });
    }
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Err(_) => Err(RemoteError::Timeout {
            node: node.to_string(),
            cmd: display_cmd.to_string(),
            timeout_ms: timeout.as_millis(),
        }),
        Ok(Err(e)) => Err(io("waiting for the command", e)),
        Ok(Ok(out)) => Ok(Output {
            status: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: out.stderr,
        }),
    }
}

/// Runs commands on this machine with `sh -c` (for `--local` databases,
/// which use the same lifecycle code as a cluster).
#[derive(Clone, Debug)]
pub struct LocalRemote {
    node: Node,
}

impl LocalRemote {
    /// A local remote presenting itself as `node`.
    pub fn new(node: Node) -> LocalRemote {
        LocalRemote { node }
    }
}

impl Remote for LocalRemote {
    fn node(&self) -> &Node {
        &self.node
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), RemoteError>> {
        Box::pin(async { Ok(()) })
    }

    fn exec<'a>(
        &'a self,
        cmd: &'a str,
        stdin: Option<Vec<u8>>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, RemoteError>> {
        Box::pin(async move {
            let mut c = Command::new("sh");
            c.arg("-c").arg(cmd);
            run_command(&self.node.name, c, cmd, stdin, timeout).await
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// How to log in to nodes over SSH.
#[derive(Clone, Debug)]
pub struct SshConfig {
    /// Login user (`--ssh-user`); commands go through `sudo -n` unless it is `root`.
    pub user: String,
    /// Private key (`--ssh-key`); `None` uses ssh's defaults and agent.
    pub key: Option<PathBuf>,
    /// Port (`--ssh-port`).
    pub port: u16,
    /// Check host keys against known_hosts (`--ssh-strict-host-key-checking`).
    pub strict_host_key_checking: bool,
    /// Limit for establishing a connection.
    pub connect_timeout: Duration,
    /// Directory for the control sockets (short path: sockets are limited to 108 bytes).
    pub control_dir: PathBuf,
}

impl SshConfig {
    /// Root login with the default key, port 22, no host key checking, and
    /// control sockets under `/tmp/harness-ssh-<pid>`.
    pub fn new() -> SshConfig {
        SshConfig {
            user: "root".to_string(),
            key: None,
            port: 22,
            strict_host_key_checking: false,
            connect_timeout: Duration::from_secs(5),
            control_dir: PathBuf::from(format!("/tmp/harness-ssh-{}", std::process::id())),
        }
    }
}

impl Default for SshConfig {
    fn default() -> Self {
        SshConfig::new()
    }
}

/// Runs commands on a node through the system `ssh` client, reusing one
/// ControlMaster connection.
#[derive(Clone, Debug)]
pub struct SshRemote {
    node: Node,
    config: SshConfig,
}

impl SshRemote {
    /// A remote for `node` (no connection is made until used).
    pub fn new(node: Node, config: SshConfig) -> SshRemote {
        SshRemote { node, config }
    }

    fn control_path(&self) -> PathBuf {
        self.config.control_dir.join("%C")
    }

    fn base_command(&self) -> Command {
        let mut c = Command::new("ssh");
        let cfg = &self.config;
        c.arg("-o").arg("BatchMode=yes");
        c.arg("-o")
            .arg(format!("ControlPath={}", self.control_path().display()));
        c.arg("-o").arg(format!(
            "ConnectTimeout={}",
            cfg.connect_timeout.as_secs().max(1)
        ));
        c.arg("-o").arg("LogLevel=ERROR");
        c.arg("-o").arg("ServerAliveInterval=5");
        if cfg.strict_host_key_checking {
            c.arg("-o").arg("StrictHostKeyChecking=yes");
        } else {
            c.arg("-o").arg("StrictHostKeyChecking=no");
            c.arg("-o").arg("UserKnownHostsFile=/dev/null");
        }
        if let Some(key) = &cfg.key {
            c.arg("-o").arg("IdentitiesOnly=yes");
            c.arg("-i").arg(key);
        }
        c.arg("-p").arg(cfg.port.to_string());
        c.arg("-l").arg(&cfg.user);
        c
    }

    fn wrap(&self, cmd: &str) -> String {
        if self.config.user == "root" {
            cmd.to_string()
        } else {
            format!("sudo -n sh -c {}", shell_quote(cmd))
        }
    }
}

impl Remote for SshRemote {
    fn node(&self) -> &Node {
        &self.node
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), RemoteError>> {
        Box::pin(async move {
            let name = self.node.name.clone();
            std::fs::create_dir_all(&self.config.control_dir).map_err(|source| {
                RemoteError::Io {
                    node: name.clone(),
                    context: format!("creating {}", self.config.control_dir.display()),
                    source,
                }
            })?;
            // Already connected?
            let mut check = self.base_command();
            check.arg("-O").arg("check").arg(&self.node.host);
            let out =
                run_command(&name, check, "ssh -O check", None, Duration::from_secs(5)).await?;
            if out.success() {
                return Ok(());
            }
            // -f forks the master after authentication: the foreground client's
            // exit status is the login result. Its stderr goes to a file because
            // the backgrounded master may keep an inherited pipe open.
            let err_path = self.config.control_dir.join(format!("connect-{name}.err"));
            let err_file = std::fs::File::create(&err_path).map_err(|source| RemoteError::Io {
                node: name.clone(),
                context: format!("creating {}", err_path.display()),
                source,
            })?;
            let mut c = self.base_command();
            c.arg("-o")
                .arg("ControlMaster=yes")
                .arg("-o")
                .arg("ControlPersist=300");
            c.arg("-f").arg("-N").arg(&self.node.host);
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::from(err_file));
            let limit = self.config.connect_timeout + Duration::from_secs(5);
            let status = match tokio::time::timeout(limit, c.status()).await {
                Err(_) => {
                    return Err(RemoteError::Unreachable {
                        node: name,
                        detail: format!("no SSH login within {} ms", limit.as_millis()),
                    });
                }
                Ok(Err(source)) => {
                    return Err(RemoteError::Io {
                        node: name,
                        context: "spawning ssh".to_string(),
                        source,
                    });
                }
                Ok(Ok(s)) => s,
            };
            if status.success() {
                // The login user must also be able to act as root.
                if self.config.user != "root" {
                    let out = self.exec("true", None, DEFAULT_TIMEOUT).await?;
                    if !out.success() {
                        return Err(RemoteError::Unreachable {
                            node: name,
                            detail: format!(
                                "user {} cannot run `sudo -n`: {}",
                                self.config.user,
                                out.stderr_str()
                            ),
                        });
                    }
                }
                Ok(())
            } else {
                let detail = std::fs::read_to_string(&err_path).unwrap_or_default();
                Err(RemoteError::Unreachable {
                    node: name,
                    detail: format!(
                        "ssh {}@{}: {}",
                        self.config.user,
                        self.node.host,
                        detail.trim()
                    ),
                })
            }
        })
    }

    fn exec<'a>(
        &'a self,
        cmd: &'a str,
        stdin: Option<Vec<u8>>,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Output, RemoteError>> {
        Box::pin(async move {
            let mut c = self.base_command();
            // Without a live master this falls back to a direct connection.
            c.arg("-o").arg("ControlMaster=no");
            c.arg(&self.node.host).arg("--").arg(self.wrap(cmd));
            let out = run_command(&self.node.name, c, cmd, stdin, timeout).await?;
            if out.status == 255 {
                return Err(RemoteError::Unreachable {
                    node: self.node.name.clone(),
                    detail: out.stderr_str(),
                });
            }
            Ok(out)
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut c = self.base_command();
            c.arg("-O").arg("exit").arg(&self.node.host);
            let _ = run_command(
                &self.node.name,
                c,
                "ssh -O exit",
                None,
                Duration::from_secs(5),
            )
            .await;
        })
    }
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn non_root_users_run_commands_through_sudo() {
        let mut cfg = SshConfig::new();
        assert_eq!(
            SshRemote::new(Node::local(), cfg.clone()).wrap("id -u"),
            "id -u"
        );
        cfg.user = "admin".to_string();
        assert_eq!(
            SshRemote::new(Node::local(), cfg).wrap("echo 'a b'"),
            r#"sudo -n sh -c 'echo '\''a b'\'''"#
        );
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("abc/d.e"), "abc/d.e");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[tokio::test]
    async fn local_exec_reports_status_output_stdin_and_timeout() {
        let r = LocalRemote::new(Node::local());
        let out = r
            .exec(
                "cat; echo err >&2; exit 3",
                Some(b"hi".to_vec()),
                DEFAULT_TIMEOUT,
            )
            .await;
        let out = match out {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            (out.status, out.stdout_str(), out.stderr_str()),
            (3, "hi".into(), "err".into())
        );
        let e = r.run_timeout("sleep 5", Duration::from_millis(100)).await;
        assert!(matches!(e, Err(RemoteError::Timeout { .. })), "{e:?}");
        let e = r.run("exit 7").await;
        assert!(
            matches!(e, Err(RemoteError::Failed { status: 7, .. })),
            "{e:?}"
        );
        let dir = std::env::temp_dir().join(format!("harness-remote-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("f");
        let ps = p.display().to_string();
        assert!(r.upload_bytes(b"x\ny".to_vec(), &ps).await.is_ok());
        let q = dir.join("g");
        assert!(r.download(&ps, &q).await.is_ok());
        assert_eq!(std::fs::read(&q).unwrap_or_default(), b"x\ny");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
