//! A database harness set up on nodes, at an exit that skips
//! [`super::Cluster::finish`] (a second Ctrl-C): one generic entry in
//! `db_adapters::exit_cleanup` per cluster, for every database on nodes
//! at once (no code per database).
//!
//! Key decisions: the entry is made before setup starts (a second Ctrl-C
//! during setup leaves nothing either) and dropped with the cluster, after
//! `finish` tore it down. It runs the database's own [`Db::teardown`] —
//! servers killed by their exact command line or pid file, mounts
//! released, node directories removed — bounded by [`TEARDOWN_BOUND`],
//! after the fault heal. The run's task is aborted first (`run.rs`), so
//! its recovery cannot restart a server behind the teardown and its SSH
//! commands in flight are killed (on drop); the teardown then runs on a
//! runtime and thread of its own (the run's runtime is no longer driven).
//! Its line says what happened: stopped and removed; a teardown error or
//! the bound hit, with what is left and that the next run's setup removes
//! it (every `Db::setup` tears down first); or, with `--leave-db-running`,
//! that the database was left running on purpose.

use db_adapters::db::Db;
use db_adapters::exit_cleanup::{Registration, register_reporting};
use nemesis::remote::{Remote, SshConfig};
use std::sync::Arc;
use std::time::Duration;

/// How long the exit waits for the teardown on the nodes.
const TEARDOWN_BOUND: Duration = Duration::from_secs(30);

/// Registers the teardown of `db` on `remotes` (or, when `leave_running`,
/// the line saying it is left running) for an exit that skips destructors.
pub(super) fn register(
    db: Arc<dyn Db>,
    remotes: Vec<Arc<dyn Remote>>,
    leave_running: bool,
) -> Registration {
    let nodes: Vec<String> = remotes.iter().map(|r| r.node().name.clone()).collect();
    let what = format!("{} on nodes {}", db.name(), nodes.join(", "));
    if leave_running {
        return register_reporting(what.clone(), move || {
            format!(
                "left {what} running on purpose (--leave-db-running), with its node directories"
            )
        });
    }
    register_reporting(what.clone(), move || {
        teardown_bounded(db, remotes, &what, TEARDOWN_BOUND)
    })
}

/// Runs `db`'s teardown and closes the SSH sessions on a runtime and
/// thread of their own, waiting at most `bound`; the line saying what
/// came of it.
fn teardown_bounded(
    db: Arc<dyn Db>,
    remotes: Vec<Arc<dyn Remote>>,
    what: &str,
    bound: Duration,
) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("exit-teardown".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let torn = match rt {
                Ok(rt) => rt.block_on(async move {
                    let torn = db.teardown().await.map_err(|e| e.to_string());
                    for r in &remotes {
                        r.close().await;
                    }
                    torn
                }),
                Err(e) => Err(format!("no runtime: {e}")),
            };
            super::remove_control_dir(&SshConfig::new());
            let _ = tx.send(torn);
        });
    let next = "the next run of it on these nodes removes what is left before it starts";
    if let Err(e) = spawned {
        return format!("warning: {what} left running: cannot start its teardown: {e}; {next}");
    }
    match rx.recv_timeout(bound) {
        Ok(Ok(())) => format!("stopped and removed {what} (servers and node directories)"),
        Ok(Err(e)) => format!("warning: tearing down {what}: {e}; {next}"),
        Err(_) => format!(
            "warning: tearing down {what} did not finish in {} s: servers and node directories may be left there; {next}",
            bound.as_secs()
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use db_adapters::client::BoxFuture;
    use db_adapters::db::{DbError, LogFile};
    use nemesis::Node;
    use nemesis::membership::Membership;
    use nemesis::process::Process;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A lifecycle whose teardown counts its calls and takes `takes`.
    struct Counted {
        teardowns: AtomicU32,
        takes: Duration,
    }

    impl Db for Counted {
        fn name(&self) -> &'static str {
            "counted"
        }
        fn nodes(&self) -> Vec<Node> {
            Vec::new()
        }
        fn remote(&self, _: &str) -> Option<Arc<dyn Remote>> {
            None
        }
        fn setup(&self) -> BoxFuture<'_, Result<(), DbError>> {
            Box::pin(async { Ok(()) })
        }
        fn teardown(&self) -> BoxFuture<'_, Result<(), DbError>> {
            Box::pin(async {
                tokio::time::sleep(self.takes).await;
                self.teardowns.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
        }
        fn log_files(&self, _: &Node) -> Vec<LogFile> {
            Vec::new()
        }
        fn primaries(&self) -> Vec<Node> {
            Vec::new()
        }
        fn settings(&self) -> Vec<(String, String)> {
            Vec::new()
        }
        fn client_nodes(&self) -> Vec<Node> {
            Vec::new()
        }
        fn process(&self) -> Option<Arc<dyn Process>> {
            None
        }
        fn membership(&self) -> Option<Arc<dyn Membership>> {
            None
        }
        fn await_ready(&self, _: Duration) -> BoxFuture<'_, Result<(), DbError>> {
            Box::pin(async { Ok(()) })
        }
    }

    #[test]
    fn the_teardown_runs_on_its_own_runtime_and_a_hit_bound_is_said() {
        let quick = Arc::new(Counted {
            teardowns: AtomicU32::new(0),
            takes: Duration::ZERO,
        });
        let line = teardown_bounded(quick.clone(), Vec::new(), "q", TEARDOWN_BOUND);
        assert_eq!(line, "stopped and removed q (servers and node directories)");
        assert_eq!(quick.teardowns.load(Ordering::SeqCst), 1);
        let slow = Arc::new(Counted {
            teardowns: AtomicU32::new(0),
            takes: Duration::from_secs(3600),
        });
        let line = teardown_bounded(slow.clone(), Vec::new(), "s", Duration::ZERO);
        assert!(
            line.starts_with("warning: tearing down s did not finish in 0 s"),
            "{line}"
        );
        assert!(line.contains("the next run"), "{line}");
        assert_eq!(slow.teardowns.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn with_leave_db_running_the_exit_tears_nothing_down_and_says_so() {
        let db = Arc::new(Counted {
            teardowns: AtomicU32::new(0),
            takes: Duration::ZERO,
        });
        let kept = register(db.clone(), Vec::new(), true);
        let lines = db_adapters::exit_cleanup::run_all();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("left counted on nodes  running on purpose")),
            "{lines:?}"
        );
        assert_eq!(db.teardowns.load(Ordering::SeqCst), 0);
        drop(kept);
    }
}
