//! Galera's membership changes (`--nemesis membership`).
//!
//! - View: the nodes whose server says `Primary` / `Synced` / ready (each
//!   asked in parallel, a few seconds each: a paused or partitioned node
//!   just drops out of the view).
//! - Rules: at least 2 serving members after a removal (with 3 nodes, one
//!   leave at a time; never a lone member, which a kill of it would leave
//!   with no primary component).
//! - `leave n`: a clean shutdown (SIGTERM, so the node leaves the primary
//!   component and the quorum shrinks gracefully; SIGKILL after 60 s),
//!   then its data directory is wiped, so its join is a full SST.
//! - `join n`: `my.cnf` with `wsrep_cluster_address=gcomm://<the current
//!   members>`, start, wait until `Synced` (the state transfer runs
//!   first); the transfer (`sst`/`ist`) is read from the part of the error
//!   log the join wrote. Afterwards `my.cnf` lists every node again, for
//!   later restarts.
//! - Never `gcomm://` alone nor `--wsrep-new-cluster` on a join: that
//!   would start a second primary component (split brain by operator).

use super::MariaDbConfig;
use crate::db::{DbError, Servers};
use nemesis::Node;
use nemesis::membership::{Membership, MembershipError, Rules, ms_data, names_data, result_data};
use nemesis::remote::shell_quote;
use std::time::{Duration, Instant};
use store::Data;

/// Fewest serving members a removal may leave.
const MIN_MEMBERS: usize = 2;

/// How long a clean shutdown may take before SIGKILL.
const SHUTDOWN_S: u32 = 60;

impl Servers<MariaDbConfig> {
    fn node_named(&self, name: &str) -> Result<Node, DbError> {
        self.nodes()
            .into_iter()
            .find(|n| n.name == name)
            .ok_or_else(|| DbError::Topology(format!("unknown node {name}")))
    }

    /// The serving members, in test order.
    async fn serving_members(&self) -> Vec<Node> {
        let nodes = self.nodes();
        let checks = nodes.iter().map(|n| async move {
            let s = tokio::time::timeout(Duration::from_secs(5), self.wsrep_status(n)).await;
            matches!(s, Ok(Ok(s)) if s.serving())
        });
        let ok = futures_util::future::join_all(checks).await;
        nodes
            .into_iter()
            .zip(ok)
            .filter_map(|(n, ok)| ok.then_some(n))
            .collect()
    }

    /// `wsrep_cluster_size` as a serving member other than `node` sees it.
    async fn cluster_size_without(&self, node: &str) -> Option<u32> {
        for m in self.serving_members().await {
            if m.name != node
                && let Ok(s) = self.wsrep_status(&m).await
            {
                return Some(s.size);
            }
        }
        None
    }

    async fn leave(&self, name: &str) -> Result<Data, DbError> {
        let t = Instant::now();
        let node = self.node_named(name)?;
        let before = self.cluster_size_without(name).await;
        let r = self.remote(&node)?;
        let dir = self.node_dir(&node);
        let out = r
            .exec(
                &format!(
                    "pkill -TERM -f {pat}; for i in $(seq {n}); do pgrep -f {pat} >/dev/null || exit 0; sleep 0.1; done; exit 3",
                    pat = self.pattern(&node),
                    n = SHUTDOWN_S * 10
                ),
                None,
                Duration::from_secs(u64::from(SHUTDOWN_S) + 10),
            )
            .await?;
        let how = if out.success() { "shutdown" } else { "kill" };
        // Also after a clean shutdown: a joiner's rsync daemon may linger.
        self.kill_node(&node, "KILL").await?;
        r.run(&format!(
            "rm -rf {d} && install -d -o mysql -g mysql -m 750 {d}",
            d = shell_quote(&format!("{dir}/data"))
        ))
        .await?;
        // Resolved when the others no longer count it (at once after a
        // clean shutdown; after the suspect timeout after a kill).
        let mut size = self.cluster_size_without(name).await;
        let deadline = Instant::now() + Duration::from_secs(15);
        while let (Some(b), Some(s)) = (before, size)
            && s >= b
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(200)).await;
            size = self.cluster_size_without(name).await;
        }
        let members: Vec<String> = self
            .serving_members()
            .await
            .into_iter()
            .map(|n| n.name)
            .collect();
        Ok(result_data(vec![
            ("how", Data::Str(how.to_string())),
            ("wiped", Data::Bool(true)),
            ("ms", ms_data(t.elapsed())),
            ("members", names_data(&members)),
            (
                "cluster-size",
                size.map_or(Data::Nil, |s| Data::Int(i64::from(s))),
            ),
        ]))
    }

    async fn join(&self, name: &str) -> Result<Data, DbError> {
        let t = Instant::now();
        let node = self.node_named(name)?;
        let donors: Vec<Node> = self
            .serving_members()
            .await
            .into_iter()
            .filter(|n| n.name != name)
            .collect();
        if donors.is_empty() {
            return Err(DbError::Step {
                node: name.to_string(),
                step: "join".to_string(),
                detail: "no serving member to join".to_string(),
            });
        }
        let r = self.remote(&node)?;
        let hosts: Vec<&str> = donors.iter().map(|n| n.host.as_str()).collect();
        r.upload_bytes(
            self.config_with(&node, &hosts).into_bytes(),
            &self.cnf(&node),
        )
        .await?;
        let log = format!("{}/error.log", self.node_dir(&node));
        let before = r
            .run(&format!("stat -c %s {log} 2>/dev/null || echo 0"))
            .await?
            .stdout_str();
        let before: u64 = before.trim().parse().unwrap_or(0);
        self.start_node(&node, false).await?;
        let waited = self.wait_serving(&node, self.cfg.start_timeout).await;
        // Every node again, whatever happened: a later restart may need
        // any of them.
        r.upload_bytes(self.config(&node).into_bytes(), &self.cnf(&node))
            .await?;
        waited?;
        let tail = r
            .run(&format!(
                "tail -c +{} {log} | grep -Eo '(IST|SST) received' | sort -u | tr '\\n' ' '",
                before + 1
            ))
            .await?
            .stdout_str();
        let transfer = if tail.contains("SST") {
            "sst"
        } else if tail.contains("IST") {
            "ist"
        } else {
            "unknown"
        };
        let members: Vec<String> = self
            .serving_members()
            .await
            .into_iter()
            .map(|n| n.name)
            .collect();
        let size = self.wsrep_status(&node).await.map(|s| s.size).ok();
        Ok(result_data(vec![
            ("transfer", Data::Str(transfer.to_string())),
            ("ms", ms_data(t.elapsed())),
            (
                "donors",
                names_data(&donors.into_iter().map(|n| n.name).collect::<Vec<_>>()),
            ),
            ("members", names_data(&members)),
            (
                "cluster-size",
                size.map_or(Data::Nil, |s| Data::Int(i64::from(s))),
            ),
        ]))
    }
}

impl Membership for Servers<MariaDbConfig> {
    fn members(&self) -> nemesis::BoxFuture<'_, Result<Vec<String>, MembershipError>> {
        Box::pin(async move {
            let m: Vec<String> = self
                .serving_members()
                .await
                .into_iter()
                .map(|n| n.name)
                .collect();
            if m.is_empty() {
                return Err(MembershipError::new("*", "members", "no node serves"));
            }
            Ok(m)
        })
    }

    fn rules(&self) -> Rules {
        Rules {
            min_members: MIN_MEMBERS,
            fixed: Vec::new(),
        }
    }

    fn remove<'a>(
        &'a self,
        node: &'a str,
    ) -> nemesis::BoxFuture<'a, Result<Data, MembershipError>> {
        Box::pin(async move {
            self.leave(node)
                .await
                .map_err(|e| MembershipError::new(node, "leave", e))
        })
    }

    fn add<'a>(&'a self, node: &'a str) -> nemesis::BoxFuture<'a, Result<Data, MembershipError>> {
        Box::pin(async move {
            self.join(node)
                .await
                .map_err(|e| MembershipError::new(node, "join", e))
        })
    }
}
