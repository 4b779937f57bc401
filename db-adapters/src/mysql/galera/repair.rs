//! The end-of-run heal of a Galera cluster: the cluster is waited for,
//! then repaired in rounds ([`Servers::galera_await_ready`]) on a plan made
//! from what each member shows ([`repair_plan`]): restart the members that
//! do not serve (a full SST for a member whose IST failed, or one an
//! earlier round restarted), or bootstrap from the most advanced node.
//! Every restart is read back (a new mariadbd runs), and so is the end
//! (every member `Primary` / `Synced`, counting all of them).

use crate::db::{DbError, Servers, join_errors, poll};
use crate::mysql::lifecycle::MariaDbConfig;
use nemesis::Node;
use std::time::Duration;

impl Servers<MariaDbConfig> {
    /// The end-of-run heal of a Galera cluster (`await_ready`): waits a
    /// third of `limit` for every member to serve by itself, then runs
    /// [`Servers::galera_repair`] up to [`REPAIR_ROUNDS`] times, a third of
    /// `limit` apart, each round reading every member again. A member a
    /// round restarted that still does not serve at the next one rejoins by
    /// a full SST ([`Rejoin::FullSst`]). Done when every member serves and
    /// sees the whole cluster ([`Servers::galera_whole`], read back, never
    /// assumed).
    pub(in crate::mysql) async fn galera_await_ready(
        &self,
        members: &[Node],
        limit: Duration,
    ) -> Result<(), DbError> {
        let start = std::time::Instant::now();
        let round_wait = limit / (REPAIR_ROUNDS as u32 + 1);
        let whole = || self.galera_whole(members, members.len());
        let every = Duration::from_millis(250);
        let mut last = match poll(round_wait, every, whole).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let mut restarted: Vec<String> = Vec::new();
        for round in 1..=REPAIR_ROUNDS {
            tracing::warn!(round, state = %last, "galera: the cluster did not come back by itself; repairing");
            restarted.extend(self.galera_repair(members, &restarted).await?);
            let wait = if round == REPAIR_ROUNDS {
                limit.saturating_sub(start.elapsed())
            } else {
                round_wait
            };
            match poll(wait, every, whole).await {
                Ok(()) => {
                    for n in members {
                        if let Ok(s) = self.wsrep_status(n).await {
                            tracing::info!(node = %n.name, state = %s, "galera: serving again after the repair");
                        }
                    }
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        let mut errs = Vec::new();
        for n in members {
            if let Err(detail) = self
                .galera_whole(std::slice::from_ref(n), members.len())
                .await
            {
                errs.push(DbError::NotReady {
                    node: n.name.clone(),
                    db: "galera".to_string(),
                    waited_ms: limit.as_millis(),
                    detail,
                });
            }
        }
        if errs.is_empty() {
            tracing::warn!(last = %last, "galera: every member serves, read back after the last wait");
        }
        join_errors(errs)
    }

    /// Whether each of `nodes` is `Primary` / `Synced` / ready in a
    /// component of `size` members ([`super::status::WsrepStatus::members`]: see
    /// [`super::status`]); else the state of the first that is not (the
    /// detail a timeout reports).
    async fn galera_whole(&self, nodes: &[Node], size: usize) -> Result<bool, String> {
        for n in nodes {
            let s = self.wsrep_status(n).await.map_err(|e| e.to_string())?;
            if !s.serving() || s.members() as usize != size {
                return Err(if nodes.len() > 1 {
                    format!("node {}: {s}", n.name)
                } else {
                    s.to_string()
                });
            }
        }
        Ok(true)
    }

    /// Galera did not come back by itself after the heal: reads each
    /// member's state and acts on [`repair_plan`] (`restarted`: the members
    /// earlier rounds restarted). Returns the members it restarted.
    async fn galera_repair(
        &self,
        members: &[Node],
        restarted: &[String],
    ) -> Result<Vec<String>, DbError> {
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
        match repair_plan(&seen, restarted) {
            Repair::Bootstrap(why) => {
                tracing::warn!("galera: {why}; bootstrapping from the most advanced node");
                self.bootstrap_recovery().await?;
                Ok(Vec::new())
            }
            Repair::Restart(nodes) => {
                let mut names = Vec::new();
                for (n, why, rejoin) in nodes {
                    tracing::warn!(node = %n.name, %why, ?rejoin, "galera: restarting the member to rejoin");
                    let before = self.pids(&n).await;
                    self.kill_node(&n, "KILL").await?;
                    if rejoin == Rejoin::FullSst {
                        self.reset_galera_state(&n).await?;
                    }
                    self.start_node(&n, false).await?;
                    self.started_again(&n, &before).await?;
                    names.push(n.name);
                }
                Ok(names)
            }
        }
    }

    /// The pids of `node`'s mariadbd (empty: none, or unreadable).
    async fn pids(&self, node: &Node) -> Vec<String> {
        let Ok(r) = self.remote(node) else {
            return Vec::new();
        };
        let cmd = format!("pgrep -f {}; true", self.pattern(node));
        r.exec(&cmd, None, Duration::from_secs(10))
            .await
            .map(|o| {
                o.stdout_str()
                    .split_whitespace()
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Read back that a restart started a new mariadbd (a pid not in
    /// `before`) that still runs a second later: a start that dies at once
    /// is an error naming the end of its `stdout.log` and error log, not
    /// a wait that times out with nothing to show.
    async fn started_again(&self, node: &Node, before: &[String]) -> Result<(), DbError> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = self.pids(node).await;
        if let Some(p) = now.iter().find(|p| !before.contains(p)) {
            tracing::info!(node = %node.name, pid = %p, old = ?before, "galera: the member's mariadbd runs again");
            return Ok(());
        }
        let dir = self.node_dir(node);
        let tail = match self.remote(node) {
            Ok(r) => r
                .exec(
                    &format!("tail -n 5 {dir}/stdout.log {dir}/error.log 2>&1"),
                    None,
                    Duration::from_secs(10),
                )
                .await
                .map(|o| o.stdout_str())
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        Err(DbError::Step {
            node: node.name.clone(),
            step: "restart".to_string(),
            detail: format!(
                "no new mariadbd after the restart (pids before {before:?}, now {now:?}): {tail}"
            ),
        })
    }

    /// Sets `node`'s Galera state aside (`grastate.dat`, `gvwstate.dat`,
    /// kept as `*.before-sst` in the node directory) and writes the state
    /// Galera documents as undefined ([`UNDEFINED_GRASTATE`]), so the next
    /// start asks for a full SST. Galera keeps the position after a failed
    /// IST, and a plain restart asks for the same IST again (Galera's issue
    /// "RBR error on IST not zeroing grastate"). Written rather than
    /// removed: without the file Galera assumes `safe_to_bootstrap: 1`,
    /// and a later bootstrap must never start from a node whose SST did
    /// not finish.
    async fn reset_galera_state(&self, node: &Node) -> Result<(), DbError> {
        let dir = self.node_dir(node);
        let r = self.remote(node)?;
        r.run(&format!(
            "for f in grastate.dat gvwstate.dat; do if [ -e {dir}/data/$f ]; then mv -f {dir}/data/$f {dir}/$f.before-sst; fi; done"
        ))
        .await?;
        let state = format!("{dir}/data/grastate.dat");
        r.upload_bytes(UNDEFINED_GRASTATE.as_bytes().to_vec(), &state)
            .await?;
        r.run(&format!("chown mysql:mysql {state}; chmod 660 {state}"))
            .await?;
        Ok(())
    }
}

/// A `grastate.dat` whose state is undefined (no cluster, seqno `-1`, not
/// safe to bootstrap): the node asks for a full SST.
pub const UNDEFINED_GRASTATE: &str = "# GALERA saved state\nversion: 2.1\nuuid:    00000000-0000-0000-0000-000000000000\nseqno:   -1\nsafe_to_bootstrap: 0\n";

/// How many times the end-of-run heal repairs a Galera cluster that did not
/// come back by itself.
pub const REPAIR_ROUNDS: usize = 2;

/// `wsrep_local_state_comment` of a donor.
const DONOR: &str = "Donor/Desynced";

/// What the repair read of a member.
#[derive(Clone, Debug)]
pub enum Seen {
    /// Its Galera status, and whether an SST script runs for it.
    Status(crate::mysql::lifecycle::WsrepStatus, bool),
    /// It did not answer (down, or a joiner waiting for its SST).
    Silent(String),
}

/// How a member the repair restarts rejoins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejoin {
    /// A plain start: IST or SST, as Galera decides from its position.
    Plain,
    /// Its Galera state set aside first: no position, a full SST.
    FullSst,
}

/// What the repair does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    /// Bootstrap a new cluster from the most advanced node (why).
    Bootstrap(String),
    /// Restart these members, each with why and how it rejoins (none:
    /// wait).
    Restart(Vec<(Node, String, Rejoin)>),
}

/// `wsrep_cluster_status` of a member whose Galera provider closed after
/// an error it cannot recover from without a restart ("Receiving IST
/// failed, node restart required"): it never rejoins by itself.
const DISCONNECTED: &str = "Disconnected";

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
///
/// A member restarted rejoins by a full SST ([`Rejoin::FullSst`]) when its
/// Galera is `Disconnected`, or when an earlier round (`restarted`)
/// restarted it already. In testbed runs of CI's overlapping-faults test
/// (1 of 3 in one session, 4 of 33 in the next) a member
/// killed and started again failed the IST of its state transfer
/// ("Unsupported CC action version" while reading the IST stream, "node
/// restart required"), each time on the configuration change of the view
/// its data recorded at its last SST (the member in it under its previous
/// identity: "Recovered view from SST"),
/// and stayed `Disconnected` with its mariadbd up. Each of the two times
/// the repair restarted it plainly, it kept its position, asked for the
/// same IST, failed the same way and the run failed; each of the three
/// times it gave it a full SST, it rejoined and the run passed.
pub fn repair_plan(seen: &[(Node, Seen)], restarted: &[String]) -> Repair {
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
            let disconnected = matches!(s, Seen::Status(w, _) if w.status == DISCONNECTED);
            let again = restarted.contains(&n.name);
            let rejoin = if disconnected || again {
                Rejoin::FullSst
            } else {
                Rejoin::Plain
            };
            let why = if again {
                format!("{why}, restarted by an earlier round")
            } else {
                why
            };
            (n.clone(), why, rejoin)
        })
        .collect();
    Repair::Restart(restart)
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    fn node(name: &str) -> Node {
        Node::new(name, name)
    }

    fn st(status: &str, state: &str) -> crate::mysql::lifecycle::WsrepStatus {
        crate::mysql::lifecycle::WsrepStatus::new(3, status, state, true)
    }

    fn restarted(r: Repair) -> Vec<String> {
        match r {
            Repair::Restart(v) => v.into_iter().map(|(n, _, _)| n.name).collect(),
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
            repair_plan(&ci, &[]),
            Repair::Bootstrap("no member serves and no SST runs".into())
        );
        // The same donor with its SST running is on its way: left alone.
        let mut donating = ci.clone();
        donating[1].1 = Seen::Status(st("Primary", DONOR), true);
        assert_eq!(restarted(repair_plan(&donating, &[])), ["n1", "n3"]);
        // Testbed reruns that cut a donation: n3 serving, n2 stuck, n1
        // joining for good; both are restarted, n3 left alone. While the
        // donor's SST runs, it and its joiner are left alone.
        let synced = vec![
            (node("n1"), Seen::Status(st("Primary", "Joining"), false)),
            (node("n2"), Seen::Status(st("Primary", DONOR), false)),
            (node("n3"), Seen::Status(st("Primary", "Synced"), false)),
        ];
        assert_eq!(restarted(repair_plan(&synced, &[])), ["n1", "n2"]);
        let mut sending = synced.clone();
        sending[1].1 = Seen::Status(st("Primary", DONOR), true);
        assert_eq!(restarted(repair_plan(&sending, &[])), Vec::<String>::new());
        // No primary component anywhere: bootstrap, as before.
        let none = vec![
            (node("n1"), Seen::Silent("down".into())),
            (
                node("n2"),
                Seen::Status(st("non-Primary", "Initialized"), false),
            ),
        ];
        assert_eq!(
            repair_plan(&none, &[]),
            Repair::Bootstrap("no primary component".into())
        );
    }

    fn plan(r: Repair) -> Vec<(String, Rejoin)> {
        match r {
            Repair::Restart(v) => v.into_iter().map(|(n, _, j)| (n.name, j)).collect(),
            Repair::Bootstrap(why) => panic!("bootstrap: {why}"),
        }
    }

    #[test]
    fn a_member_whose_ist_failed_rejoins_by_a_full_sst() {
        // The testbed run: n1's IST from n3 failed ("Unsupported CC action
        // version", "node restart required"); its mariadbd stayed up,
        // `Disconnected / Initialized`, cluster size 0; n2 and n3 served.
        let mut gone = st(DISCONNECTED, "Initialized");
        gone.size = 0;
        gone.server_size = 0;
        gone.ready = false;
        let ci = vec![
            (node("n1"), Seen::Status(gone, false)),
            (node("n2"), Seen::Status(st("Primary", "Synced"), false)),
            (node("n3"), Seen::Status(st("Primary", "Synced"), false)),
        ];
        assert_eq!(
            plan(repair_plan(&ci, &[])),
            [("n1".to_string(), Rejoin::FullSst)]
        );
        // A member cut off by a partition that has not healed yet, or a
        // joiner that is silent: a plain restart first ...
        let mut cut = ci.clone();
        cut[0].1 = Seen::Status(st("non-Primary", "Initialized"), false);
        assert_eq!(
            plan(repair_plan(&cut, &[])),
            [("n1".to_string(), Rejoin::Plain)]
        );
        cut[2].1 = Seen::Silent("no socket".into());
        assert_eq!(
            plan(repair_plan(&cut, &[])),
            [
                ("n1".to_string(), Rejoin::Plain),
                ("n3".to_string(), Rejoin::Plain)
            ]
        );
        // ... and a full SST when it still does not serve at the next round.
        assert_eq!(
            plan(repair_plan(&cut, &["n3".to_string()])),
            [
                ("n1".to_string(), Rejoin::Plain),
                ("n3".to_string(), Rejoin::FullSst)
            ]
        );
        // A member restarted before that serves now is left alone.
        assert_eq!(plan(repair_plan(&ci, &["n2".to_string()])).len(), 1);
    }
}
