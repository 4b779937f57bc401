//! What must be stopped however harness exits: servers harness started
//! itself (`--local` PostgreSQL, the local etcd cluster, and — registered
//! by the engine, one generic entry per run — a database on nodes; in the
//! crate root because all of them register here). `Drop` stops them on a normal return
//! or an error; an exit that skips destructors — a second Ctrl-C
//! (`std::process::exit`), a panic that aborts — runs [`run_all`] first.
//!
//! Key decision: a server registers a closure that knows it by pid and path
//! (never by name) when it starts and unregisters (dropping the
//! [`Registration`]) when it is stopped, so [`run_all`] only ever touches
//! what is still running of this process's own servers, and signals them
//! by pid (`signal`). A helper command harness waits for (`pg_ctl
//! start`/`stop`, `initdb`) runs through [`owned_output`]: in a process
//! group of its own, registered while it runs, so an exit in the middle of
//! it kills the whole group (a `pg_ctl stop` in flight at the second Ctrl-C
//! no longer outlives harness). Each cleanup ends in the one line that
//! says what it did ([`run_all`] returns them): "stopped and removed …",
//! or, from [`register_reporting`], a bound that was hit or a database
//! left running on purpose — never a claim the cleanup did not make true.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

type Cleanup = Box<dyn FnOnce() -> String + Send>;

static REGISTRY: Mutex<Vec<(u64, String, Cleanup)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A registered cleanup; dropping it unregisters it (without running it).
#[derive(Debug)]
pub struct Registration(u64);

/// Registers `cleanup` of `what` (e.g. "local PostgreSQL in /tmp/…") to run
/// at an exit that skips destructors; it reports "stopped and removed
/// `what`".
pub fn register(what: impl Into<String>, cleanup: impl FnOnce() + Send + 'static) -> Registration {
    let what = what.into();
    let line = format!("stopped and removed {what}");
    register_reporting(what, move || {
        cleanup();
        line
    })
}

/// Registers `cleanup` of `what`, which returns the line saying what it
/// did (e.g. that its bound was hit, and what to do about it).
pub fn register_reporting(
    what: impl Into<String>,
    cleanup: impl FnOnce() -> String + Send + 'static,
) -> Registration {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut r) = REGISTRY.lock() {
        r.push((id, what.into(), Box::new(cleanup)));
    }
    Registration(id)
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut r) = REGISTRY.lock() {
            r.retain(|(id, _, _)| *id != self.0);
        }
    }
}

/// What is registered now, by description (tests, messages).
pub fn pending() -> Vec<String> {
    REGISTRY
        .lock()
        .map(|r| r.iter().map(|(_, w, _)| w.clone()).collect())
        .unwrap_or_default()
}

/// Runs every registered cleanup once, newest first, and forgets them;
/// returns the line each said. Never blocks on a poisoned lock.
pub fn run_all() -> Vec<String> {
    run_all_after(|| {})
}

/// [`run_all`], calling `first` between taking the cleanups and running
/// them: what stops the work that would drop their registrations (the
/// run's task) then cannot unregister one.
pub fn run_all_after(first: impl FnOnce()) -> Vec<String> {
    let taken: Vec<_> = match REGISTRY.lock() {
        Ok(mut r) => std::mem::take(&mut *r),
        Err(p) => std::mem::take(&mut *p.into_inner()),
    };
    first();
    taken.into_iter().rev().map(|(_, _, f)| f()).collect()
}

/// Sends a signal by pid with the `kill` utility (no unsafe code here):
/// how the local servers are paused, resumed and stopped.
pub(crate) fn signal(pid: u32, sig: &str) {
    let _ = std::process::Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// Runs `cmd` to completion as [`tokio::process::Command::output`] does,
/// in a process group of its own that is registered while it runs: an exit
/// that skips destructors ([`run_all`]) kills the group with SIGKILL, by its
/// id, and a drop of the future kills the child (`kill_on_drop`).
///
/// # Errors
/// The command could not be started or waited for.
pub async fn owned_output(
    what: &str,
    cmd: &mut tokio::process::Command,
) -> std::io::Result<std::process::Output> {
    cmd.process_group(0).kill_on_drop(true);
    let child = cmd.spawn()?;
    let _owned = child.id().map(|pgid| {
        register(format!("{what} (process group {pgid})"), move || {
            kill_group(pgid)
        })
    });
    child.wait_with_output().await
}

/// SIGKILL to process group `pgid` with the `kill` utility (no unsafe
/// code), waiting for it to be sent.
fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// The registry is one per process: these tests take turns.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn registered_cleanups_run_once_and_dropped_ones_never() {
        let _turn = SERIAL.lock();
        let ran = Arc::new(AtomicUsize::new(0));
        let (a, b) = (ran.clone(), ran.clone());
        let kept = register("kept", move || {
            a.fetch_add(1, Ordering::SeqCst);
        });
        let dropped = register("dropped", move || {
            b.fetch_add(10, Ordering::SeqCst);
        });
        let said = register_reporting("said", || "left said running".to_string());
        drop(dropped);
        assert!(pending().contains(&"kept".to_string()));
        let done = run_all();
        assert!(done.contains(&"stopped and removed kept".to_string()));
        assert!(done.contains(&"left said running".to_string()));
        assert!(done.iter().all(|d| !d.contains("dropped")), "{done:?}");
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert!(run_all().iter().all(|w| !w.ends_with("kept")));
        drop(said);
        drop(kept);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }

    /// A command in flight at an exit is killed with its whole group (here
    /// a shell and the `sleep` it started), read back from /proc.
    #[test]
    fn a_command_in_flight_is_killed_with_its_group_at_the_exit() {
        let _turn = SERIAL.lock();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let marker = format!("exit-cleanup-test-{}", std::process::id());
        let script = format!("sleep 300 & echo $!; wait # {marker}");
        let running = |m: &str| -> usize {
            std::fs::read_dir("/proc")
                .map(|d| {
                    d.flatten()
                        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                        .filter(|c| String::from_utf8_lossy(c).contains(m))
                        .count()
                })
                .unwrap_or(0)
        };
        rt.block_on(async {
            let mut cmd = tokio::process::Command::new("sh");
            cmd.args(["-c", &script])
                .stdout(std::process::Stdio::piped());
            let task = tokio::spawn(async move { owned_output("sh", &mut cmd).await });
            for _ in 0..200 {
                if pending().iter().any(|p| p.starts_with("sh (process group")) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            assert!(running(&marker) >= 1, "the shell runs");
            let done = run_all();
            assert!(
                done.iter()
                    .any(|d| d.starts_with("stopped and removed sh (process group")),
                "{done:?}"
            );
            let out = task.await.unwrap().unwrap();
            assert!(
                !out.status.success(),
                "killed, not finished: {:?}",
                out.status
            );
            let sleeper: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            // Gone or a zombie (SIGKILL is delivered, not waited for).
            let gone = || {
                std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
                    .map_or(true, |s| s.contains(") Z "))
            };
            for _ in 0..500 {
                if gone() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert!(
                gone(),
                "the shell's child {sleeper} was killed with the group"
            );
            assert_eq!(running(&marker), 0);
        });
    }
}
