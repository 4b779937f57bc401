//! The shell that signals a Patroni node's processes (faults and
//! teardown), found by the pid files in the node's directory: Patroni's
//! (`patroni.pid`, written by the shell that execs it) and the
//! postmaster's (`data/postmaster.pid`). Signals go by pid, never by name.
//!
//! A whole node (`ProcessScope::Node`: `kill=node`, `pause=node`, the
//! teardown) is Patroni and every process it started — a replica's
//! `pg_basebackup` and its WAL streamer, `pg_rewind`, `initdb` — as well
//! as the postmaster and its children: a `pg_basebackup` left behind goes
//! on writing into the node's directory after Patroni died, so the
//! teardown's `rm -rf` of it failed ("Directory not empty").

use super::settings::ProcessScope;

/// Shell that sets `PP` (Patroni) and `P` (postmaster) to the live pids of
/// `d`'s pid files (empty when not running).
pub(super) fn pids(d: &str) -> String {
    format!(
        "alive() {{ [ -n \"$1\" ] && [ -e /proc/$1 ] && ! grep -q '^State:.*Z' /proc/$1/status 2>/dev/null; }}; \
         PP=$(cat {d}/patroni.pid 2>/dev/null); alive \"$PP\" || PP=; \
         P=$(head -1 {d}/data/postmaster.pid 2>/dev/null); alive \"$P\" || P=; "
    )
}

/// Shell that sends `signal` (`KILL`, `STOP`, `CONT`, …) to what `scope`
/// covers among the processes of the node directory `d`. After a KILL it
/// waits (at most 10 s) until they are gone and fails naming those still
/// alive.
pub(super) fn signal_sh(d: &str, scope: ProcessScope, signal: &str) -> String {
    let mut cmd = pids(d);
    let mut waited = Vec::new();
    let first = if signal == "CONT" { "CONT" } else { "STOP" };
    if scope == ProcessScope::Node {
        // Patroni is listed with what it started, then signalled first (so
        // that, killed, it starts nothing more), then the rest. Not
        // stopped first as the postmaster is: `runuser`, Patroni's parent,
        // stops itself when its child stops, and a stopped `runuser` never
        // exits.
        cmd.push_str(&format!(
            "tree() {{ for c in $(pgrep -P $1); do echo $c; tree $c; done; }}; \
             T=; if [ -n \"$PP\" ]; then T=$(tree $PP); kill -{signal} $PP; \
             [ -n \"$T\" ] && kill -{signal} $T; fi; "
        ));
        waited.push("$PP $T");
    } else if scope.patroni() {
        // First, so it cannot restart PostgreSQL in between.
        cmd.push_str(&format!("[ -n \"$PP\" ] && kill -{signal} $PP; "));
        waited.push("$PP");
    }
    if scope.postgres() {
        // The postmaster is stopped first so that it forks nothing while
        // its children are signalled; then the children, then itself.
        cmd.push_str(&format!(
            "if [ -n \"$P\" ]; then kill -{first} $P; CH=$(pgrep -P $P); [ -n \"$CH\" ] && kill -{signal} $CH; kill -{signal} $P; fi; "
        ));
        waited.push("$P $CH");
    }
    if signal == "KILL" {
        cmd.push_str(&format!(
            "{} && exit 0; exit 1",
            nemesis::process::wait_gone_sh(&waited.join(" "), 10)
        ));
    } else {
        cmd.push_str("exit 0");
    }
    cmd
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::path::Path;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    /// A stand-in for Patroni with real processes: the shell writes its pid
    /// to `patroni.pid` as harness's start command does, then starts a
    /// child that starts a grandchild (pg_basebackup and its WAL streamer)
    /// and waits. In a process group of its own, which the guard ends
    /// (continued, then killed) whatever the test left, so that no stopped
    /// or orphaned process outlives a failing test.
    struct FakePatroni(Child);

    impl FakePatroni {
        fn start(d: &Path) -> FakePatroni {
            use std::os::unix::process::CommandExt;
            let script = format!(
                "echo $$ > {d}/patroni.pid; \
                 sh -c 'sleep 120 & echo $! > {d}/grandchild.pid; wait' & \
                 echo $! > {d}/child.pid; wait",
                d = d.display()
            );
            let child = Command::new("sh")
                .arg("-c")
                .arg(script)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .unwrap();
            FakePatroni(child)
        }
    }

    impl Drop for FakePatroni {
        fn drop(&mut self) {
            let group = self.0.id();
            let _ = run(&format!("kill -CONT -{group}; kill -KILL -{group}"));
            let _ = self.0.wait();
        }
    }

    fn pid_in(d: &Path, name: &str) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(p) = std::fs::read_to_string(d.join(name))
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return p;
            }
            assert!(Instant::now() < deadline, "{name} never written");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Alive and not a zombie.
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map(|s| {
                !s.lines()
                    .any(|l| l.starts_with("State:") && l.contains('Z'))
            })
            .unwrap_or(false)
    }

    fn run(cmd: &str) -> std::process::Output {
        Command::new("sh").arg("-c").arg(cmd).output().unwrap()
    }

    #[test]
    fn killing_a_node_kills_every_process_patroni_started() {
        let dir = tempfile::tempdir().unwrap();
        let _patroni = FakePatroni::start(dir.path());
        let (p, c, g) = (
            pid_in(dir.path(), "patroni.pid"),
            pid_in(dir.path(), "child.pid"),
            pid_in(dir.path(), "grandchild.pid"),
        );
        assert!(alive(c) && alive(g));
        let d = dir.path().to_str().unwrap();
        let out = run(&signal_sh(d, ProcessScope::Node, "KILL"));
        assert!(out.status.success(), "{out:?}");
        // The grandchild is reparented when its parent dies: it must be
        // gone, not only orphaned.
        let deadline = Instant::now() + Duration::from_secs(5);
        while (alive(c) || alive(g)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(p) && !alive(c) && !alive(g), "{p} {c} {g}");
    }

    #[test]
    fn killing_patroni_alone_leaves_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let _patroni = FakePatroni::start(dir.path());
        let (c, g) = (
            pid_in(dir.path(), "child.pid"),
            pid_in(dir.path(), "grandchild.pid"),
        );
        let d = dir.path().to_str().unwrap();
        let out = run(&signal_sh(d, ProcessScope::Patroni, "KILL"));
        assert!(out.status.success(), "{out:?}");
        // `kill=patroni` is Patroni's crash: what it started runs on, as on
        // a real machine.
        assert!(alive(c) && alive(g));
        let out = run(&format!("kill -KILL {c} {g}"));
        assert!(out.status.success(), "{out:?}");
    }

    #[test]
    fn pausing_a_node_stops_and_continues_the_whole_tree() {
        let dir = tempfile::tempdir().unwrap();
        let _patroni = FakePatroni::start(dir.path());
        let g = pid_in(dir.path(), "grandchild.pid");
        let d = dir.path().to_str().unwrap();
        let state = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .unwrap()
                .lines()
                .find(|l| l.starts_with("State:"))
                .unwrap()
                .to_string()
        };
        // A signal is delivered when its target next leaves the kernel: a
        // process running on the other core shows `R` for a moment after
        // `kill` returned (CI, under load). So the state is read until it
        // changes, within a bound.
        let becomes = |stopped: bool| {
            let deadline = Instant::now() + Duration::from_secs(5);
            while state(g).contains('T') != stopped && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            state(g).contains('T') == stopped
        };
        assert!(
            run(&signal_sh(d, ProcessScope::Node, "STOP"))
                .status
                .success()
        );
        assert!(becomes(true), "{}", state(g));
        assert!(
            run(&signal_sh(d, ProcessScope::Node, "CONT"))
                .status
                .success()
        );
        assert!(becomes(false), "{}", state(g));
        assert!(
            run(&signal_sh(d, ProcessScope::Node, "KILL"))
                .status
                .success()
        );
    }
}
