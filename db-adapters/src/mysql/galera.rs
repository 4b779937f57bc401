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
//! The end-of-run heal ([`Servers::galera_repair`], [`repair_plan`]) uses
//! the same bootstrap when no member is in a primary component, or when
//! the only members in it are donors that Galera left desynced after a
//! partition cut their donation.

use super::lifecycle::MariaDbConfig;
use crate::db::{DbError, Servers, poll};
use nemesis::Node;
use nemesis::remote::shell_quote;
use std::time::Duration;

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

    /// Galera did not come back by itself after the heal: reads each
    /// member's state and acts on [`repair_plan`].
    pub(super) async fn galera_repair(&self, members: &[Node]) -> Result<(), DbError> {
        let _one = self.cfg.restart.lock().await;
        let mut seen = Vec::new();
        for n in members {
            let state = match self.wsrep_status(n).await {
                Ok(s) if s.state == DONOR => {
                    let sst = self.sst_running(n).await;
                    Seen::Status(s, sst)
                }
                Ok(s) => Seen::Status(s, false),
                Err(e) => Seen::Silent(e.to_string()),
            };
            seen.push((n.clone(), state));
        }
        match repair_plan(&seen) {
            Repair::Bootstrap(why) => {
                tracing::warn!("galera: {why}; bootstrapping from the most advanced node");
                self.bootstrap_recovery().await
            }
            Repair::Restart(nodes) => {
                for (n, why) in nodes {
                    tracing::warn!(node = %n.name, %why, "galera: restarting the member to rejoin");
                    self.kill_node(&n, "KILL").await?;
                    self.start_node(&n, false).await?;
                }
                Ok(())
            }
        }
    }
}

/// `wsrep_local_state_comment` of a donor.
const DONOR: &str = "Donor/Desynced";

/// What the repair read of a member.
#[derive(Clone, Debug)]
pub enum Seen {
    /// Its Galera status, and whether an SST script runs for it.
    Status(super::lifecycle::WsrepStatus, bool),
    /// It did not answer (down, or a joiner waiting for its SST).
    Silent(String),
}

/// What the repair does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    /// Bootstrap a new cluster from the most advanced node (why).
    Bootstrap(String),
    /// Restart these members, each with why (none: wait).
    Restart(Vec<(Node, String)>),
}

/// The end-of-run repair, from what each member showed (after waiting a
/// third of the heal's time for the cluster to come back by itself):
///
/// * No member in a primary component (a full-cluster crash that
///   `pc.recovery` did not resolve): bootstrap.
/// * While a donor's SST runs, it and its joiner are left alone and only
///   the members outside the primary component are restarted (in one CI
///   run the only primary member was such a donor; restarting it left a
///   member that could never rejoin).
/// * Else, when a member serves, every member that does not is restarted,
///   to rejoin by IST or SST from it. Waiting alone is not enough: in one
///   CI run a member that answered queries stayed out of
///   `Primary`/`Synced` for 120 s; on the testbed, after a partition cut
///   a donation, its joiner stayed `Primary / Joining` for good.
/// * Else nobody can give the others an SST: bootstrap. This is the CI
///   failure where a partition cut n2's donation: Galera dropped its end
///   ("sst sent called when not SST donor, state CONNECTED"), n2's desync
///   count stayed 1, and every later primary component restored it as
///   `Donor/Desynced`, the others logging "No donor candidates temporarily
///   available".
pub fn repair_plan(seen: &[(Node, Seen)]) -> Repair {
    let status = |s: &Seen| match s {
        Seen::Status(w, sst) => Some((w.clone(), *sst)),
        Seen::Silent(_) => None,
    };
    let in_primary = |s: &Seen| status(s).is_some_and(|(w, _)| w.in_primary());
    let serves = |s: &Seen| status(s).is_some_and(|(w, _)| w.serving());
    let donating =
        |s: &Seen| status(s).is_some_and(|(w, sst)| w.in_primary() && w.state == DONOR && sst);
    if !seen.iter().any(|(_, s)| in_primary(s)) {
        return Repair::Bootstrap("no primary component".to_string());
    }
    let any_serves = seen.iter().any(|(_, s)| serves(s));
    let any_donating = seen.iter().any(|(_, s)| donating(s));
    if !any_serves && !any_donating {
        return Repair::Bootstrap("no member serves and no SST runs".to_string());
    }
    let restart = seen
        .iter()
        .filter(|(_, s)| {
            if any_donating {
                !in_primary(s)
            } else {
                !serves(s)
            }
        })
        .map(|(n, s)| {
            let why = match s {
                Seen::Status(w, sst) if w.state == DONOR && !sst => format!("{w}, no SST running"),
                Seen::Status(w, _) => w.to_string(),
                Seen::Silent(e) => e.clone(),
            };
            (n.clone(), why)
        })
        .collect();
    Repair::Restart(restart)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn node(name: &str) -> Node {
        Node::new(name, name)
    }

    fn st(status: &str, state: &str) -> super::super::lifecycle::WsrepStatus {
        super::super::lifecycle::WsrepStatus {
            size: 3,
            status: status.into(),
            state: state.into(),
            ready: true,
        }
    }

    fn restarted(r: Repair) -> Vec<String> {
        match r {
            Repair::Restart(v) => v.into_iter().map(|(n, _)| n.name).collect(),
            Repair::Bootstrap(why) => vec![format!("bootstrap: {why}")],
        }
    }

    #[test]
    fn the_repair_waits_only_for_a_donation_in_progress() {
        // The CI run and a testbed rerun: after a partition cut n2's
        // donation, n2 was the only member in the primary component,
        // Donor/Desynced with no SST script; n1 and n3 waited for a donor.
        let ci = vec![
            (node("n1"), Seen::Silent("no socket".into())),
            (node("n2"), Seen::Status(st("Primary", DONOR), false)),
            (
                node("n3"),
                Seen::Status(st("non-Primary", "Initialized"), false),
            ),
        ];
        assert_eq!(
            repair_plan(&ci),
            Repair::Bootstrap("no member serves and no SST runs".into())
        );
        // The same donor with its SST running is on its way: left alone.
        let mut donating = ci.clone();
        donating[1].1 = Seen::Status(st("Primary", DONOR), true);
        assert_eq!(restarted(repair_plan(&donating)), ["n1", "n3"]);
        // Testbed reruns that cut a donation: n3 serving, n2 stuck, n1
        // joining for good; both are restarted, n3 left alone. While the
        // donor's SST runs, it and its joiner are left alone.
        let synced = vec![
            (node("n1"), Seen::Status(st("Primary", "Joining"), false)),
            (node("n2"), Seen::Status(st("Primary", DONOR), false)),
            (node("n3"), Seen::Status(st("Primary", "Synced"), false)),
        ];
        assert_eq!(restarted(repair_plan(&synced)), ["n1", "n2"]);
        let mut sending = synced.clone();
        sending[1].1 = Seen::Status(st("Primary", DONOR), true);
        assert_eq!(restarted(repair_plan(&sending)), Vec::<String>::new());
        // No primary component anywhere: bootstrap, as before.
        let none = vec![
            (node("n1"), Seen::Silent("down".into())),
            (
                node("n2"),
                Seen::Status(st("non-Primary", "Initialized"), false),
            ),
        ];
        assert_eq!(
            repair_plan(&none),
            Repair::Bootstrap("no primary component".into())
        );
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
