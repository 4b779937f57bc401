//! Clock faults on MariaDB and Galera nodes (`--nemesis clock`): with
//! [`MariaDbConfig::clock`] each node's mariadbd runs under libfaketime
//! with the control file `<node dir>/faketime.rc`, written `+0.000` when
//! the node is prepared, kept across restarts (a restarted server keeps
//! the node's offset); the nemesis rewrites it over SSH. The database's
//! clock is `NOW(6)` read over a client connection (session time zone
//! UTC), bracketed by the harness clock.
//!
//! MariaDB's timers (InnoDB lock waits, Galera's `evs` suspect and
//! inactive timeouts) read `CLOCK_MONOTONIC`, which libfaketime 0.9.10
//! fakes too (`nemesis::clock`): a bump of more than Galera's
//! `evs.inactive_timeout` makes the node drop its peers and merge again,
//! a real consequence of the fault, recorded as unavailability.

use super::{MariaDbConfig, Servers};
use crate::db::DbError;
use mysql_async::prelude::Queryable;
use nemesis::Node;
use nemesis::clock::{ClockReading, node as clock_node, now_s};
use std::time::Duration;

impl Servers<MariaDbConfig> {
    /// `node`'s libfaketime control file.
    pub(super) fn clock_path(&self, node: &Node) -> String {
        format!("{}/faketime.rc", self.node_dir(node))
    }

    /// What goes before `setsid mariadbd …`: the preload with clock faults,
    /// nothing without.
    pub(super) fn clock_prefix(&self, node: &Node) -> String {
        if self.cfg.clock {
            clock_node::start_prefix_sh(&self.clock_path(node))
        } else {
            String::new()
        }
    }

    /// With clock faults: checks libfaketime on the node and writes its
    /// control file at `+0.000` (after the node directory was made anew).
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

    /// `NOW(6)` of `node`'s server, bracketed by the harness clock (the
    /// connection is made before the bracket).
    pub(super) async fn read_clock(&self, node: &Node) -> Result<ClockReading, String> {
        let c = &self.cfg;
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(node.host.clone())
            .tcp_port(c.port)
            .user(Some(c.user.clone()))
            .pass(Some(c.password.clone()))
            .db_name(Some(c.database.clone()))
            .prefer_socket(false)
            .init(vec!["SET time_zone = '+00:00'".to_string()]);
        let mut conn = mysql_async::Conn::new(opts)
            .await
            .map_err(|e| format!("connecting: {e}"))?;
        let q = "SELECT CAST(UNIX_TIMESTAMP(NOW(6)) AS CHAR)";
        let sent_s = now_s();
        let row: Result<Option<String>, _> = conn.query_first(q).await;
        let received_s = now_s();
        let _ = conn.disconnect().await;
        let text = row
            .map_err(|e| format!("{q}: {e}"))?
            .ok_or_else(|| format!("{q}: no row"))?;
        let db_s: f64 = text
            .trim()
            .parse()
            .map_err(|e| format!("{q}: {text:?}: {e}"))?;
        Ok(ClockReading {
            sent_s,
            db_s,
            received_s,
        })
    }
}
