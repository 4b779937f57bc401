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

    /// With clock faults: [`Servers::prepare_clock_file`].
    pub(super) async fn prepare_clock(&self, node: &Node) -> Result<(), DbError> {
        if self.cfg.clock {
            self.prepare_clock_file(node).await
        } else {
            Ok(())
        }
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
