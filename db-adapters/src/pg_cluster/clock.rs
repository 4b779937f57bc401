//! Clock faults on PostgreSQL nodes (`--nemesis clock`): with
//! [`PgClusterConfig::clock`] every node's postmaster runs under
//! libfaketime (`pg_ctl` is started with the preload, the server inherits
//! it) with the control file `<node dir>/faketime.rc`, written `+0.000`
//! when the node directory is made and kept across restarts. The
//! database's clock is `clock_timestamp()` over a client connection,
//! bracketed by the harness clock. A rate skew restarts a node with a
//! fast shutdown (`pg_ctl stop -m fast`), which loses nothing a kill
//! would.

use super::{BIN, PgClusterConfig, Servers};
use crate::db::DbError;
use nemesis::Node;
use nemesis::clock::node as clock_node;
use std::time::Duration;

impl Servers<PgClusterConfig> {
    /// `node`'s libfaketime control file.
    pub(super) fn clock_path(&self, node: &Node) -> String {
        format!("{}/faketime.rc", self.node_dir(node))
    }

    /// `(before, preload)`: the shell before the start command (stale
    /// shared memory removed) and the words before `pg_ctl` after
    /// `runuser … --`; both empty without clock faults.
    pub(super) fn clock_words(&self, node: &Node) -> (&'static str, String) {
        if self.cfg.clock {
            (
                clock_node::remove_stale_shm_sh(),
                clock_node::preload_words_sh(&self.clock_path(node)),
            )
        } else {
            ("", String::new())
        }
    }

    /// With clock faults: checks libfaketime on the node and writes its
    /// control file at `+0.000` (the node directory was just made).
    pub(super) async fn prepare_clock(&self, node: &Node) -> Result<(), DbError> {
        if !self.cfg.clock {
            return Ok(());
        }
        let r = self.remote(node)?;
        let out = r
            .exec(
                &clock_node::installed_check_sh(),
                None,
                Duration::from_secs(10),
            )
            .await?;
        if !out.success() {
            return Err(DbError::Missing {
                node: node.name.clone(),
                what: format!("libfaketime ({})", nemesis::clock::LIBFAKETIME),
                packages: "libfaketime".to_string(),
            });
        }
        r.run(&clock_node::reset_command(&self.clock_path(node)))
            .await?;
        Ok(())
    }

    /// A fast shutdown of `node`'s server (sessions end, the WAL is
    /// flushed); returns once it is down.
    pub(super) async fn fast_shutdown(&self, node: &Node) -> Result<(), DbError> {
        let d = self.node_dir(node);
        self.remote(node)?
            .run_timeout(
                &format!(
                    "cd /tmp && B={BIN} && if ! runuser -u postgres -- $B/pg_ctl -D {d}/data status >/dev/null 2>&1; then exit 0; fi; \
                     runuser -u postgres -- $B/pg_ctl -D {d}/data -m fast -w -t 60 stop >/dev/null"
                ),
                Duration::from_secs(70),
            )
            .await?;
        Ok(())
    }
}
