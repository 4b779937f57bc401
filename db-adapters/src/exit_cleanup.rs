//! What must be stopped however harness exits: servers harness started
//! itself (`--local` PostgreSQL, the local etcd cluster; in the crate root
//! because both register here). `Drop` stops them on a normal return
//! or an error; an exit that skips destructors — a second Ctrl-C
//! (`std::process::exit`), a panic that aborts — runs [`run_all`] first.
//!
//! Key decision: a server registers a closure that knows it by pid and path
//! (never by name) when it starts and unregisters (dropping the
//! [`Registration`]) when it is stopped, so [`run_all`] only ever touches
//! what is still running of this process's own servers, and signals them
//! by pid (`signal`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

type Cleanup = Box<dyn FnOnce() + Send>;

static REGISTRY: Mutex<Vec<(u64, String, Cleanup)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

/// A registered cleanup; dropping it unregisters it (without running it).
#[derive(Debug)]
pub struct Registration(u64);

/// Registers `cleanup` of `what` (e.g. "local PostgreSQL in /tmp/…") to run
/// at an exit that skips destructors.
pub fn register(what: impl Into<String>, cleanup: impl FnOnce() + Send + 'static) -> Registration {
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
/// returns what was cleaned up. Never blocks on a poisoned lock.
pub fn run_all() -> Vec<String> {
    let taken: Vec<_> = match REGISTRY.lock() {
        Ok(mut r) => std::mem::take(&mut *r),
        Err(p) => std::mem::take(&mut *p.into_inner()),
    };
    let mut done = Vec::new();
    for (_, what, f) in taken.into_iter().rev() {
        f();
        done.push(what);
    }
    done
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn registered_cleanups_run_once_and_dropped_ones_never() {
        let ran = Arc::new(AtomicUsize::new(0));
        let (a, b) = (ran.clone(), ran.clone());
        let kept = register("kept", move || {
            a.fetch_add(1, Ordering::SeqCst);
        });
        let dropped = register("dropped", move || {
            b.fetch_add(10, Ordering::SeqCst);
        });
        drop(dropped);
        assert!(pending().contains(&"kept".to_string()));
        let done = run_all();
        assert!(done.contains(&"kept".to_string()));
        assert!(!done.contains(&"dropped".to_string()));
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert!(run_all().iter().all(|w| w != "kept"));
        drop(kept);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }
}
