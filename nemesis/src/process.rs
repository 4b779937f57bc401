//! The capability kill/pause faults act on: a database's processes on a node.
//!
//! Implemented by each database lifecycle (`db-adapters::db`), which knows
//! its pid files and start commands. Every method is idempotent: killing a
//! dead process or resuming a running one succeeds.

use crate::lossyfs::ctl::Reply;
use crate::{BoxFuture, Node};

/// A failed process action, naming the node.
#[derive(Debug, Clone, thiserror::Error)]
#[error("node {node}: {action} failed: {message}")]
pub struct ProcessError {
    /// Node name.
    pub node: String,
    /// `kill`, `start`, `pause` or `resume`.
    pub action: &'static str,
    /// What went wrong.
    pub message: String,
}

/// Kill/start/pause/resume of the database processes on one node.
pub trait Process: Send + Sync {
    /// SIGKILL of every database process on `node`; returns once they are gone.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn kill<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>>;

    /// Starts the database on `node` again (no-op when it runs); returns once
    /// it has been started (not necessarily serving yet).
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn start<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>>;

    /// Stops the database on `node` for a restart that is not a fault (a
    /// rate skew: libfaketime measures a rate from process start); returns
    /// once it is gone. By default a kill; a database with a clean
    /// shutdown uses it, so the restart loses nothing a kill would.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn shut_down<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        self.kill(node)
    }

    /// SIGSTOP of the database processes on `node`.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn pause<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>>;

    /// SIGCONT of the database processes on `node`.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn resume<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>>;

    /// Whether the data directories sit on the lossy filesystem
    /// ([`crate::lossy`]), so a kill is followed by losing un-synced writes.
    fn lossy(&self) -> bool {
        false
    }

    /// Loses the un-synced writes of `node`'s data directory (the process
    /// is down); `None` when it is not on the lossy filesystem.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn lose_unsynced<'a>(
        &'a self,
        _node: &'a Node,
    ) -> BoxFuture<'a, Result<Option<Reply>, ProcessError>> {
        Box::pin(async { Ok(None) })
    }

    /// Sends a command to the lossy filesystem under `node`'s data directory.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node (always, without the filesystem).
    fn lossy_ctl<'a>(
        &'a self,
        node: &'a Node,
        _cmd: &'a crate::lossyfs::ctl::Command,
    ) -> BoxFuture<'a, Result<Reply, ProcessError>> {
        Box::pin(async move {
            Err(ProcessError {
                node: node.name.clone(),
                action: "lossyfs",
                message: "the data directory is not on the lossy filesystem (run with --lazyfs)"
                    .to_string(),
            })
        })
    }

    /// Whether the database on `node` runs (`Some(false)`: down, e.g.
    /// killed and not restarted; `None`: this database cannot tell). The
    /// nemesis asks before a kill or a pause, so that a pause of a dead
    /// process fails with its reason and a kill of one is a no-op said as
    /// such, and neither is recorded as a fault in force.
    ///
    /// # Errors
    /// [`ProcessError`] naming the node.
    fn is_running<'a>(
        &'a self,
        _node: &'a Node,
    ) -> BoxFuture<'a, Result<Option<bool>, ProcessError>> {
        Box::pin(async { Ok(None) })
    }

    /// The libfaketime control file of `node` (a path on the node) when
    /// the database was started under libfaketime for clock faults
    /// (`None`: clock faults cannot reach it).
    fn clock_file(&self, _node: &Node) -> Option<String> {
        None
    }

    /// Reads the database's own clock on `node` through a client
    /// connection, bracketed by the harness clock (connection set up
    /// before the bracket).
    ///
    /// # Errors
    /// [`ProcessError`] naming the node (always, without clock faults).
    fn db_clock<'a>(
        &'a self,
        node: &'a Node,
    ) -> BoxFuture<'a, Result<crate::clock::ClockReading, ProcessError>> {
        Box::pin(async move {
            Err(ProcessError {
                node: node.name.clone(),
                action: "clock",
                message: "the database was not started under libfaketime".to_string(),
            })
        })
    }

    /// Where the database's data files are, relative to its data directory
    /// (what corruption and disk errors aim at; empty: everything).
    fn data_files(&self) -> &'static str {
        ""
    }
}

/// POSIX shell that waits until every pid in `pids` (shell words, e.g.
/// `"$P $CH"`; empty words are skipped) is gone or a zombie, for at most
/// `limit_s` seconds of wall-clock time (whole seconds: between `limit_s`
/// and `limit_s` + 1). Its status is 0 when they are
/// gone; on timeout it prints, per pid still there, its state, the states
/// of its threads and its kernel wait channel to stderr, and its status
/// is 1.
///
/// The state and the time (`/proc/uptime`) are read with the shell's own
/// `read`, so checking forks nothing, and the limit is wall-clock time,
/// not a count of sleeps: a loop of `sleep`s ends early when `sleep`
/// itself fails (e.g. fork refused), which once reported a SIGKILLed
/// process "alive 60 s" after 0.1 s.
pub fn wait_gone_sh(pids: &str, limit_s: u64) -> String {
    format!(
        "hl_alive() {{ [ -n \"$1\" ] || return 1; hl_s=; \
           while read -r hl_k hl_v hl_r; do if [ \"$hl_k\" = State: ]; then hl_s=$hl_v; break; fi; done 2>/dev/null </proc/$1/status; \
           [ -n \"$hl_s\" ] && [ \"$hl_s\" != Z ] && [ \"$hl_s\" != X ]; }}; \
         hl_now() {{ read -r hl_u hl_r </proc/uptime; hl_u=${{hl_u%.*}}; }}; \
         hl_now; hl_t0=$hl_u; hl_end=$((hl_t0 + {limit_s} + 1)); \
         while :; do hl_a=; for hl_p in {pids}; do hl_alive $hl_p && hl_a=\"$hl_a $hl_p\"; done; \
           [ -z \"$hl_a\" ] && break; hl_now; [ \"$hl_u\" -ge \"$hl_end\" ] && break; sleep 0.05; done; \
         if [ -n \"$hl_a\" ]; then hl_now; for hl_p in $hl_a; do \
           echo \"pid $hl_p still alive $((hl_u - hl_t0)) s after the signal (limit {limit_s} s): \
state $(sed -n 's/^State:[[:space:]]*//p' /proc/$hl_p/status 2>/dev/null), \
threads by state $(for t in /proc/$hl_p/task/*; do sed 's/.*) \\(.\\).*/\\1/' $t/stat 2>/dev/null; done | sort | uniq -c | tr -s ' \\n' ' '), \
wchan $(cat /proc/$hl_p/wchan 2>/dev/null)\" >&2; done; false; else true; fi"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::wait_gone_sh;
    use std::process::Command;

    fn sh(script: &str) -> std::process::Output {
        Command::new("sh").arg("-c").arg(script).output().unwrap()
    }

    #[test]
    fn waits_for_a_killed_process_and_skips_empty_words() {
        let s = format!(
            "sleep 30 & P=$!; E=; kill -KILL $P; {} && echo gone",
            wait_gone_sh("$P $E", 5)
        );
        let out = sh(&s);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "gone",
            "{out:?}"
        );
    }

    #[test]
    fn a_zombie_counts_as_gone() {
        // The child's parent execs `sleep`, which never reaps it: once
        // killed it stays a zombie (checked) and must count as gone.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pid");
        let s = format!(
            "sh -c 'sleep 30 & echo $! > {f}; exec sleep 2' & \
             while [ ! -s {f} ]; do sleep 0.01; done; P=$(cat {f}); kill -KILL $P; \
             while ! grep -q '^State:.*Z' /proc/$P/status; do sleep 0.01; done; echo zombie; \
             {} && echo gone",
            wait_gone_sh("$P", 3),
            f = f.display()
        );
        let out = sh(&s);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("zombie") && stdout.contains("gone"),
            "{out:?}"
        );
    }

    #[test]
    fn a_live_process_times_out_by_the_clock_and_says_its_state() {
        let t = std::time::Instant::now();
        let s = format!(
            "sleep 30 & P=$!; {} && echo gone; R=$?; kill -KILL $P; exit $R",
            wait_gone_sh("$P", 2)
        );
        let out = sh(&s);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("gone"),
            "{out:?}"
        );
        assert!(
            t.elapsed() >= std::time::Duration::from_millis(1500),
            "{:?}",
            t.elapsed()
        );
        assert!(
            err.contains("still alive") && err.contains("(limit 2 s): state S"),
            "{err}"
        );
        assert!(
            err.contains("threads by state") && err.contains("wchan"),
            "{err}"
        );
    }

    #[test]
    fn checking_needs_no_external_command() {
        // With no command found at all (as when forks are refused), a
        // killed process is still seen gone.
        let s = format!(
            "/bin/sleep 30 & P=$!; kill -KILL $P; PATH=/nonexistent; {} && echo gone",
            wait_gone_sh("$P", 3)
        );
        let out = sh(&s);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("gone"),
            "{out:?}"
        );
    }

    #[test]
    fn the_limit_is_wall_clock_even_when_sleep_fails() {
        // A `sleep` that fails at once must not end the wait early.
        let t = std::time::Instant::now();
        let s = format!(
            "sleep() {{ return 1; }}; /bin/sleep 30 & P=$!; {}; R=$?; kill -KILL $P; exit $R",
            wait_gone_sh("$P", 1)
        );
        let out = sh(&s);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(
            t.elapsed() >= std::time::Duration::from_millis(900),
            "{:?}",
            t.elapsed()
        );
    }
}
