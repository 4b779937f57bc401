//! Galera's restart paths: a member started again after a kill, and the
//! cluster brought back after every member crashed at once.
//!
//! * A start while another member's `mariadbd` runs is a plain start: the
//!   node rejoins the primary component by IST or SST.
//! * A start when no member runs (a coordinated crash, `--kill-targets
//!   all`) is a full-cluster restart. Galera's `pc.recovery` (on by
//!   default) re-forms the last primary component from `gvwstate.dat`
//!   once every member is back; the first start waits
//!   [`super::MariaDbConfig::recovery_wait`] for that. When it does not
//!   happen (a lost or damaged `gvwstate.dat`, e.g. on the lossy
//!   filesystem) it bootstraps as MariaDB documents: the node whose
//!   `grastate.dat` says `safe_to_bootstrap: 1` if there is one, else the
//!   node with the highest seqno (from `grastate.dat`, or
//!   `mariadbd --wsrep-recover` when it says `-1`, as after a crash) gets
//!   `safe_to_bootstrap: 1` and starts with `--wsrep-new-cluster`; the
//!   others start plainly and join it.
//! * Concurrent starts of a full-cluster restart are serialised by one
//!   lock, so exactly one of them decides; the others find the primary
//!   component it made.
//!
//! The end-of-run heal ([`repair`]) uses the same bootstrap when no member
//! is in a primary component, or when the only members in it are donors
//! that Galera left desynced after a partition cut their donation.

use super::lifecycle::MariaDbConfig;
use crate::db::{DbError, Servers, poll};
use nemesis::Node;
use nemesis::remote::shell_quote;
use std::time::Duration;

pub mod repair;
pub mod status;
pub use repair::{Rejoin, Repair, Seen, repair_plan};

/// What a node's `grastate.dat` and `--wsrep-recover` say about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The committed seqno (`-1`: unknown).
    pub seqno: i64,
    /// `safe_to_bootstrap: 1` (the last member to leave cleanly).
    pub safe_to_bootstrap: bool,
}

/// Reads `seqno:` and `safe_to_bootstrap:` from a `grastate.dat` text
/// (missing fields: `-1` and `false`).
pub fn parse_grastate(text: &str) -> Position {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            l.trim()
                .strip_prefix(name)
                .map(str::trim)
                .map(str::to_string)
        })
    };
    Position {
        seqno: field("seqno:").and_then(|v| v.parse().ok()).unwrap_or(-1),
        safe_to_bootstrap: field("safe_to_bootstrap:").is_some_and(|v| v == "1"),
    }
}

/// The node to bootstrap from, as MariaDB documents: one marked
/// `safe_to_bootstrap`, else the highest seqno (ties: the first in test
/// order). `None` for no nodes.
pub fn bootstrap_choice(positions: &[(Node, Position)]) -> Option<&Node> {
    if let Some((n, _)) = positions.iter().find(|(_, p)| p.safe_to_bootstrap) {
        return Some(n);
    }
    let mut best: Option<&(Node, Position)> = None;
    for p in positions {
        if best.is_none_or(|b| p.1.seqno > b.1.seqno) {
            best = Some(p);
        }
    }
    best.map(|(n, _)| n)
}

impl Servers<MariaDbConfig> {
    /// Whether any other member's `mariadbd` process runs.
    async fn others_running(&self, node: &Node) -> bool {
        for n in self.nodes().iter().filter(|n| n.name != node.name) {
            let Ok(r) = self.remote(n) else { continue };
            let cmd = format!("pgrep -f {} >/dev/null", self.pattern(n));
            if r.exec(&cmd, None, Duration::from_secs(10))
                .await
                .is_ok_and(|o| o.success())
            {
                return true;
            }
        }
        false
    }

    /// Whether any member is in a primary component.
    async fn any_primary(&self) -> bool {
        for n in &self.nodes() {
            if self.wsrep_status(n).await.is_ok_and(|s| s.in_primary()) {
                return true;
            }
        }
        false
    }

    /// Starts `node` after a kill (see the module doc).
    pub(super) async fn galera_start(&self, node: &Node) -> Result<(), DbError> {
        let full_restart = !self.others_running(node).await;
        self.start_node(node, false).await?;
        if !full_restart {
            return Ok(());
        }
        let _one = self.cfg.restart.lock().await;
        let waited = poll(
            self.cfg.recovery_wait,
            Duration::from_millis(500),
            || async { Ok::<bool, String>(self.any_primary().await) },
        )
        .await;
        if waited.is_ok() {
            return Ok(());
        }
        tracing::warn!(
            node = %node.name,
            "galera: every member crashed and pc.recovery did not re-form the primary component in {:?}; bootstrapping from the most advanced node",
            self.cfg.recovery_wait
        );
        self.bootstrap_recovery().await
    }

    /// This node's position: `grastate.dat`, and `--wsrep-recover` when
    /// its seqno is unknown (the server is down).
    async fn position(&self, n: &Node) -> Result<Position, DbError> {
        let r = self.remote(n)?;
        let dir = self.node_dir(n);
        let state = r
            .run_timeout(
                &format!("cat {dir}/data/grastate.dat 2>/dev/null; true"),
                Duration::from_secs(20),
            )
            .await?;
        let mut p = parse_grastate(&state.stdout_str());
        if p.seqno < 0 {
            let out = r
                .run_timeout(
                    &format!(
                        "cd /tmp; /usr/sbin/mariadbd --defaults-file={} --wsrep-recover --log-error={dir}/recover.log >/dev/null 2>&1; \
                         grep -o 'Recovered position: .*' {dir}/recover.log | tail -1 | sed 's/.*://'",
                        self.cnf(n)
                    ),
                    Duration::from_secs(120),
                )
                .await?;
            p.seqno = out.stdout_str().trim().parse().unwrap_or(-1);
        }
        Ok(p)
    }

    /// After every member crashed and `pc.recovery` could not re-form the
    /// primary component: stop every member, read each node's position,
    /// bootstrap from [`bootstrap_choice`], start the others.
    pub(super) async fn bootstrap_recovery(&self) -> Result<(), DbError> {
        let nodes = self.nodes();
        let mut positions = Vec::new();
        for n in &nodes {
            self.kill_node(n, "KILL").await?;
        }
        for n in &nodes {
            let p = self.position(n).await?;
            tracing::info!(node = %n.name, seqno = p.seqno, safe = p.safe_to_bootstrap, "galera: recovered position");
            positions.push((n.clone(), p));
        }
        let Some(first) = bootstrap_choice(&positions).cloned() else {
            return Ok(());
        };
        let r = self.remote(&first)?;
        r.run(&format!(
            "sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' {}/data/grastate.dat",
            self.node_dir(&first)
        ))
        .await?;
        self.start_node(&first, true).await?;
        self.wait_serving(&first, self.cfg.start_timeout).await?;
        for n in nodes.iter().filter(|n| n.name != first.name) {
            self.start_node(n, false).await?;
        }
        Ok(())
    }

    /// Whether an SST script (`wsrep_sst_<method>`, donor or joiner) runs
    /// for `node`'s data directory.
    async fn sst_running(&self, node: &Node) -> bool {
        let Ok(r) = self.remote(node) else {
            return false;
        };
        // `[w]`: the pattern does not match the shell that runs pgrep.
        let pat = shell_quote(&format!(
            "[w]srep_sst_[a-z]+ .*{}/data",
            self.node_dir(node)
        ));
        r.exec(
            &format!("pgrep -f {pat} >/dev/null"),
            None,
            Duration::from_secs(10),
        )
        .await
        .is_ok_and(|o| o.success())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn node(name: &str) -> Node {
        Node::new(name, name)
    }

    #[test]
    fn grastate_after_a_crash_and_after_a_clean_stop() {
        let crashed = "# GALERA saved state\nversion: 2.1\nuuid:    6a1f-aa\nseqno:   -1\nsafe_to_bootstrap: 0\n";
        assert_eq!(
            parse_grastate(crashed),
            Position {
                seqno: -1,
                safe_to_bootstrap: false
            }
        );
        let clean = "version: 2.1\nuuid: 6a1f\nseqno:   1234\nsafe_to_bootstrap: 1\n";
        assert_eq!(
            parse_grastate(clean),
            Position {
                seqno: 1234,
                safe_to_bootstrap: true
            }
        );
        // A file the lossy filesystem emptied.
        assert_eq!(parse_grastate("").seqno, -1);
        // The state the repair writes before a full SST: never chosen
        // over a node that knows its position.
        let reset = parse_grastate(repair::UNDEFINED_GRASTATE);
        assert_eq!(
            reset,
            Position {
                seqno: -1,
                safe_to_bootstrap: false
            }
        );
    }

    #[test]
    fn bootstrap_from_the_safe_node_else_the_highest_seqno() {
        let at = |s: i64, safe: bool| Position {
            seqno: s,
            safe_to_bootstrap: safe,
        };
        let ps = vec![
            (node("n1"), at(10, false)),
            (node("n2"), at(12, false)),
            (node("n3"), at(12, false)),
        ];
        assert_eq!(bootstrap_choice(&ps).unwrap().name, "n2");
        let ps = vec![
            (node("n1"), at(10, false)),
            (node("n2"), at(12, false)),
            (node("n3"), at(-1, true)),
        ];
        assert_eq!(bootstrap_choice(&ps).unwrap().name, "n3");
        let ps = vec![(node("n1"), at(-1, false)), (node("n2"), at(-1, false))];
        assert_eq!(bootstrap_choice(&ps).unwrap().name, "n1");
        assert!(bootstrap_choice(&[]).is_none());
    }
}
