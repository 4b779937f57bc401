//! Kill, start, pause and resume of a `--local` PostgreSQL cluster: the
//! processes this machine started, by pid, without root.
//!
//! The postmaster's pid comes from `postmaster.pid`; its backends are the
//! processes whose parent it is (`/proc/<pid>/stat`). Kill: SIGKILL the
//! postmaster and every backend, wait until they are gone (a surviving
//! backend keeps the shared memory and blocks the restart). Start:
//! `pg_ctl start -w` with the options of the first start (same port).
//! Pause: SIGSTOP the postmaster first (it forks no more backends), then
//! its backends; resume: SIGCONT in the reverse order. Every action is
//! idempotent. With clock faults, restarts run under the libfaketime
//! preload too, and the database clock is read with
//! `clock_timestamp()` ([`Process::db_clock`]).

use super::signal;
use nemesis::clock::ClockReading;
use nemesis::process::{Process, ProcessError};
use nemesis::{BoxFuture, Node};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Process control over one local cluster.
#[derive(Debug, Clone)]
pub struct LocalProcess {
    /// `pg_ctl`.
    pub pg_ctl: PathBuf,
    /// The data directory.
    pub data: PathBuf,
    /// The server log.
    pub log: PathBuf,
    /// The `-o` options of the first start (port, socket directory, …).
    pub opts: String,
    /// Run `pg_ctl` as the `postgres` user (harness runs as root).
    pub as_postgres: bool,
    /// The libfaketime control file: restarts run under the preload too.
    pub clock: Option<PathBuf>,
    /// The connection URL (the clock is read through it).
    pub url: String,
}

/// The postmaster's pid from `postmaster.pid`, if that process lives.
pub fn postmaster_pid(data: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
}

/// The live processes (not this one, not zombies) whose command line
/// names `path`: a cluster directory is unique to its run, so this finds
/// what a start left without a pid file yet (the `sh -c exec postgres -D
/// <path>/data` of `pg_ctl`, a postmaster before it writes
/// `postmaster.pid`), never another program's server.
pub fn naming(path: &Path) -> Vec<u32> {
    let want = path.as_os_str().as_encoded_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| p != std::process::id())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| !want.is_empty() && c.windows(want.len()).any(|w| w == want))
        })
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| !s.contains(") Z "))
        })
        .collect()
}

/// The processes whose parent is `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| parent(*p) == Some(pid))
        .collect()
}

fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

impl LocalProcess {
    fn err(&self, node: &Node, action: &'static str, message: String) -> ProcessError {
        ProcessError {
            node: node.name.clone(),
            action,
            message,
        }
    }

    async fn kill_all(&self, node: &Node) -> Result<(), ProcessError> {
        let Some(pm) = postmaster_pid(&self.data) else {
            return Ok(());
        };
        let mut pids = vec![pm];
        pids.extend(children(pm));
        for p in &pids {
            signal(*p, "KILL");
        }
        for _ in 0..250 {
            if pids
                .iter()
                .all(|p| !Path::new(&format!("/proc/{p}")).exists())
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(self.err(
            node,
            "kill",
            format!("processes {pids:?} still alive after 5 s"),
        ))
    }

    async fn start_server(&self, node: &Node) -> Result<(), ProcessError> {
        if postmaster_pid(&self.data).is_some() {
            return Ok(());
        }
        let env = self
            .clock
            .as_deref()
            .map(|f| nemesis::clock::preload_env(f, true))
            .unwrap_or_default();
        let mut cmd = super::command(&self.pg_ctl, self.as_postgres, &env);
        cmd.arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(&self.log)
            .args(["-w", "-t", "60", "-o", &self.opts, "start"])
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let owned = crate::exit_cleanup::owned_output("pg_ctl start", &mut cmd);
        let out = tokio::time::timeout(Duration::from_secs(90), owned)
            .await
            .map_err(|_| self.err(node, "start", "pg_ctl start timed out after 90 s".into()))?
            .map_err(|e| self.err(node, "start", format!("running pg_ctl: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(self.err(
                node,
                "start",
                format!(
                    "pg_ctl start: {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ))
        }
    }

    fn signal_all(&self, sig: &str, postmaster_first: bool) {
        let Some(pm) = postmaster_pid(&self.data) else {
            return;
        };
        if postmaster_first {
            signal(pm, sig);
        }
        for c in children(pm) {
            signal(c, sig);
        }
        if !postmaster_first {
            signal(pm, sig);
        }
    }
}

impl LocalProcess {
    async fn read_clock(&self, node: &Node) -> Result<ClockReading, ProcessError> {
        crate::postgres::read_clock(&self.url)
            .await
            .map_err(|m| self.err(node, "clock", m))
    }
}

impl Process for LocalProcess {
    fn clock_file(&self, _node: &Node) -> Option<String> {
        self.clock.as_ref().map(|p| p.display().to_string())
    }

    fn db_clock<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<ClockReading, ProcessError>> {
        Box::pin(self.read_clock(node))
    }

    /// Whether the postmaster of the pid file is alive.
    fn is_running<'a>(
        &'a self,
        _node: &'a Node,
    ) -> BoxFuture<'a, Result<Option<bool>, ProcessError>> {
        let up = postmaster_pid(&self.data).is_some();
        Box::pin(async move { Ok(Some(up)) })
    }

    fn kill<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(self.kill_all(node))
    }

    fn start<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(self.start_server(node))
    }

    /// A fast shutdown (SIGINT to the postmaster: sessions end, the WAL is
    /// flushed, nothing acknowledged is lost, unlike a kill with
    /// `synchronous_commit=off`).
    fn shut_down<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            if let Some(pm) = postmaster_pid(&self.data) {
                signal(pm, "INT");
                let mut gone = false;
                for _ in 0..1500 {
                    if !Path::new(&format!("/proc/{pm}")).exists() {
                        gone = true;
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                if !gone {
                    return Err(self.err(
                        node,
                        "shut down",
                        format!("postmaster {pm} still alive 30 s after a fast shutdown"),
                    ));
                }
            }
            Ok(())
        })
    }

    fn pause<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal_all("STOP", true);
            Ok(())
        })
    }

    fn resume<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        Box::pin(async move {
            self.signal_all("CONT", false);
            Ok(())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn children_of_this_process_include_a_spawned_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let kids = children(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(kids.contains(&child.id()), "{kids:?}");
        assert_eq!(parent(child.id()), None, "reaped");
    }

    #[test]
    fn naming_finds_a_process_by_a_path_in_its_command_line_only() {
        let d = tempfile::tempdir().unwrap();
        let mark = d.path().join("data");
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("sleep 30; : {}", mark.display()))
            .spawn()
            .unwrap();
        // `spawn` returns once the child's exec has begun (the kernel wakes
        // a vfork parent when the new program's memory is in place), which
        // is before its arguments are: `/proc/PID/cmdline` can read empty
        // for that instant. Wait until it names the program.
        let cmdline = format!("/proc/{}/cmdline", child.id());
        for _ in 0..500 {
            if std::fs::read(&cmdline).is_ok_and(|c| !c.is_empty()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let found = naming(d.path());
        assert!(found.contains(&child.id()), "{found:?}");
        assert!(!found.contains(&std::process::id()), "never this process");
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            !naming(d.path()).contains(&child.id()),
            "not once it is gone"
        );
        assert!(naming(&d.path().join("other")).is_empty());
    }

    #[test]
    fn no_postmaster_pid_file_means_nothing_to_signal() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(postmaster_pid(d.path()), None);
        std::fs::write(d.path().join("postmaster.pid"), "999999999\n").unwrap();
        assert_eq!(postmaster_pid(d.path()), None, "a dead pid");
    }
}
