//! Clock faults on MariaDB and Galera nodes (`--nemesis clock`): with
//! [`MariaDbConfig::clock`] each node's mariadbd runs under the clock preload
//! with the control file `<node dir>/faketime.rc`, written `+0.000` when
//! the node is prepared, kept across restarts (a restarted server keeps
//! the node's offset); the nemesis rewrites it over SSH. The database's
//! clock is `NOW(6)` read over a client connection (session time zone
//! UTC), bracketed by the harness clock.
//!
//! The preload is that of the run's clock mode (`nemesis::clock::ClockMode`):
//! by default harness's wall-clock library, which leaves `CLOCK_MONOTONIC`
//! — MariaDB's timers (InnoDB lock waits, Galera's `evs` suspect and
//! inactive timeouts) — alone, as on a machine whose clock is stepped.
//! With `--clock-monotonic fake` (libfaketime 0.9.10) the monotonic clock
//! moves too: a bump of more than Galera's `evs.inactive_timeout` makes
//! the node drop its peers and merge again, and a reset after a large
//! positive offset moves the node's monotonic clock back by as much, so
//! its group-communication timers stall that long (inferred: once after a
//! final heal the donor exceeded `max_install_timeouts` and left, and the
//! cluster missed `--heal-timeout`) — harsher than a real machine.

use super::{MariaDbConfig, Servers};
use crate::db::DbError;
use mysql_async::prelude::Queryable;
use nemesis::Node;
use nemesis::clock::{ClockReading, node as clock_node, now_s};

impl Servers<MariaDbConfig> {
    /// What goes before `setsid mariadbd …`: the preload with clock faults,
    /// nothing without.
    pub(super) fn clock_prefix(&self, node: &Node) -> String {
        if self.cfg.clock {
            clock_node::start_prefix_sh(&self.clock_path(node))
        } else {
            String::new()
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
