//! PostgreSQL replicas leaving and joining (`--nemesis membership`).
//!
//! - View: the primary when it serves, and every replica whose WAL
//!   receiver says `streaming` (`pg_stat_wal_receiver`), each asked in
//!   parallel for a few seconds.
//! - Rules: the primary (the first node) is never removed; one member
//!   (the primary) is enough. Promotion is failover, not membership, and
//!   is not done here.
//! - `remove n`: `pg_ctl stop -m fast` (SIGKILL of its processes if that
//!   fails), drop the replication slot named after the node if there is
//!   one (harness's replicas use none: `pg_basebackup -X stream` uses a
//!   temporary slot), wipe the data directory (its contents: under
//!   `--lazyfs` it is a mount point), then wait until the primary's
//!   `pg_stat_replication` no longer lists the node's address.
//! - `add n`: `pg_basebackup -R -X stream -c fast` from the primary, its
//!   own settings, start, wait until `streaming`; the completion says how
//!   long the base backup took.
//! - Clients of `--replica-reads` pinned to a removed replica get errors
//!   (`fail`/`info`) until it is back.

use super::PgClusterConfig;
use crate::db::LossyConfig;
use crate::db::{DbError, Servers, poll};
use nemesis::Node;
use nemesis::lossy;
use nemesis::lossyfs::ctl::Command;
use nemesis::membership::{Membership, MembershipError, Rules, ms_data, names_data, result_data};
use std::time::{Duration, Instant};
use store::Data;

impl Servers<PgClusterConfig> {
    fn node_named(&self, name: &str) -> Result<Node, DbError> {
        self.nodes()
            .into_iter()
            .find(|n| n.name == name)
            .ok_or_else(|| DbError::Topology(format!("unknown node {name}")))
    }

    /// psql on `node`'s own socket; the one-line answer.
    async fn query(&self, node: &Node, sql: &str, timeout: Duration) -> Result<String, DbError> {
        let d = self.node_dir(node);
        self.pg(
            node,
            &format!(
                "$B/psql -h {d}/sock -p {} -U postgres -Atc {}",
                self.cfg.port,
                nemesis::remote::shell_quote(sql)
            ),
            timeout,
        )
        .await
        .map(|o| o.trim().to_string())
    }

    async fn streaming(&self, node: &Node) -> bool {
        self.query(
            node,
            "select status from pg_stat_wal_receiver",
            Duration::from_secs(5),
        )
        .await
        .is_ok_and(|s| s == "streaming")
    }

    /// Serving members in test order: the primary, streaming replicas.
    async fn serving_members(&self) -> Vec<String> {
        let nodes = self.nodes();
        let checks = nodes.iter().enumerate().map(|(i, n)| async move {
            if i == 0 {
                self.serving(n).await.unwrap_or(false)
            } else {
                self.streaming(n).await
            }
        });
        let ok = futures_util::future::join_all(checks).await;
        nodes
            .into_iter()
            .zip(ok)
            .filter_map(|(n, ok)| ok.then_some(n.name))
            .collect()
    }

    /// How many of the primary's WAL senders stream to `node`'s address
    /// (`None` when its host is a name, not an address).
    async fn senders_to(&self, primary: &Node, node: &Node) -> Result<Option<u64>, String> {
        if node.host.parse::<std::net::IpAddr>().is_err() {
            return Ok(None);
        }
        let sql = format!(
            "select count(*) from pg_stat_replication where client_addr = '{}'",
            node.host
        );
        let out = self
            .query(primary, &sql, Duration::from_secs(10))
            .await
            .map_err(|e| e.to_string())?;
        out.parse().map(Some).map_err(|e| format!("{out:?}: {e}"))
    }

    async fn remove_replica(&self, name: &str) -> Result<Data, DbError> {
        let t = Instant::now();
        let node = self.node_named(name)?;
        let primary = self
            .primary()
            .ok_or_else(|| DbError::Topology("no primary".to_string()))?;
        if primary.name == node.name {
            return Err(DbError::Step {
                node: name.to_string(),
                step: "remove".to_string(),
                detail: "the primary is never removed".to_string(),
            });
        }
        let d = self.node_dir(&node);
        let stopped = self
            .pg(
                &node,
                &format!("$B/pg_ctl -D {d}/data stop -m fast -t 30 >/dev/null"),
                Duration::from_secs(40),
            )
            .await;
        let how = if stopped.is_ok() { "stopped" } else { "killed" };
        self.signal_all(&node, "KILL", true).await?;
        // Best effort: the primary may be down (a kill of another package).
        let slot = format!(
            "select count(pg_drop_replication_slot(slot_name)) from pg_replication_slots \
             where slot_name = '{}' and not active",
            name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        );
        let dropped = self
            .query(&primary, &slot, Duration::from_secs(10))
            .await
            .ok()
            .and_then(|s| s.parse::<i64>().ok());
        self.remote(&node)?
            .run(&format!("find {d}/data -mindepth 1 -delete"))
            .await?;
        let gone = poll(Duration::from_secs(30), Duration::from_millis(200), || {
            let (primary, node) = (&primary, &node);
            async move { Ok(self.senders_to(primary, node).await?.is_none_or(|c| c == 0)) }
        })
        .await;
        if let Err(detail) = gone {
            tracing::warn!("postgres: {name} still listed by the primary: {detail}");
        }
        Ok(result_data(vec![
            ("how", Data::Str(how.to_string())),
            ("wiped", Data::Bool(true)),
            ("slots-dropped", dropped.map_or(Data::Nil, Data::Int)),
            ("ms", ms_data(t.elapsed())),
            ("members", names_data(&self.serving_members().await)),
        ]))
    }

    async fn add_back(&self, name: &str) -> Result<Data, DbError> {
        let t = Instant::now();
        let node = self.node_named(name)?;
        let primary = self
            .primary()
            .ok_or_else(|| DbError::Topology("no primary".to_string()))?;
        if self.streaming(&node).await {
            return Ok(result_data(vec![(
                "skipped",
                Data::Str("already streaming".to_string()),
            )]));
        }
        // A failed earlier attempt may have left part of a backup.
        let d = self.node_dir(&node);
        self.signal_all(&node, "KILL", true).await?;
        self.remote(&node)?
            .run(&format!(
                "install -d -o postgres -g postgres -m 700 {d}/data && find {d}/data -mindepth 1 -delete"
            ))
            .await?;
        self.add_replica(&primary, &node).await?;
        let backup = t.elapsed();
        poll(
            self.cfg.start_timeout,
            Duration::from_millis(100),
            || async { Ok(self.streaming(&node).await) },
        )
        .await
        .map_err(|detail| DbError::NotReady {
            node: name.to_string(),
            db: "postgres".to_string(),
            waited_ms: self.cfg.start_timeout.as_millis(),
            detail: format!("replica not streaming: {detail}"),
        })?;
        if let Some(LossyConfig { binary, .. }) = &self.cfg.lossy {
            let c = lossy::ctl_command(binary, &self.data_dir(&node), &Command::Checkpoint);
            self.remote(&node)?
                .run_timeout(&c, Duration::from_secs(60))
                .await?;
        }
        Ok(result_data(vec![
            ("transfer", Data::Str("basebackup".to_string())),
            ("basebackup-ms", ms_data(backup)),
            ("ms", ms_data(t.elapsed())),
            ("members", names_data(&self.serving_members().await)),
        ]))
    }
}

impl Membership for Servers<PgClusterConfig> {
    fn members(&self) -> nemesis::BoxFuture<'_, Result<Vec<String>, MembershipError>> {
        Box::pin(async move {
            let m = self.serving_members().await;
            if m.is_empty() {
                return Err(MembershipError::new("*", "members", "no node serves"));
            }
            Ok(m)
        })
    }

    fn rules(&self) -> Rules {
        Rules {
            min_members: 1,
            fixed: self.primary().map(|p| p.name).into_iter().collect(),
        }
    }

    fn remove<'a>(
        &'a self,
        node: &'a str,
    ) -> nemesis::BoxFuture<'a, Result<Data, MembershipError>> {
        Box::pin(async move {
            self.remove_replica(node)
                .await
                .map_err(|e| MembershipError::new(node, "leave", e))
        })
    }

    fn add<'a>(&'a self, node: &'a str) -> nemesis::BoxFuture<'a, Result<Data, MembershipError>> {
        Box::pin(async move {
            self.add_back(node)
                .await
                .map_err(|e| MembershipError::new(node, "join", e))
        })
    }
}
