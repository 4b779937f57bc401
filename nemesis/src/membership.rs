//! Membership changes as a fault (`--nemesis membership`): a node leaves
//! the cluster (`leave`) and joins it again (`join`), as Jepsen's
//! membership nemesis does for NATS and etcd.
//!
//! - [`Membership`] is the capability a database gives (like
//!   [`crate::process::Process`] for kill and pause): its own view of the
//!   members ([`Membership::members`]), the [`Rules`] a removal must keep,
//!   and the two changes. Galera (leave: clean shutdown, data directory
//!   wiped; join: start with `wsrep_cluster_address` of the current
//!   members, wait for SST/IST and `Synced`), PostgreSQL replicas
//!   (remove: stop, wipe; add: `pg_basebackup` from the primary, wait for
//!   `streaming`) and etcd members (below) implement it in `db-adapters`.
//! - Jepsen's state machine filters invalid ops; here the package draws a
//!   leave among the nodes that are not fixed (never a PostgreSQL
//!   primary), and at the moment of the change [`removal_refused`] checks
//!   it against the database's live view: a removal that would leave fewer
//!   than [`Rules::min_members`] serving members (a Galera quorum the
//!   database cannot survive, e.g. while another node is killed) is not
//!   done but recorded, its completion saying `skipped` and why.
//! - Pending changes: the nemesis remembers every node it removed until it
//!   joined again; the package's stop, [`crate::fault::Nemesis::heal_all`]
//!   and so the heal before the final reads join them all, so final reads
//!   see full membership. A `start` of the kill package never starts a
//!   removed node (membership owns it until its join).
//! - Recording: `leave` / `join` op pairs of process `nemesis`, value the
//!   node, completion `[node result]` (NATS's shape) where `result` says
//!   what happened (`skipped`, `wiped`, `transfer` `sst`/`ist`/`basebackup`,
//!   `ms`, the members after the change). The timeline and `results.json`
//!   draw a `membership` window from leave to join.
//! - Stale state: a node left out by a crashed run is not repaired here;
//!   the next run's setup tears every node down (processes killed, node
//!   directory removed) and builds the whole cluster again, so it starts
//!   with every node a member.
//!
//! etcd's `remove` is `member remove <id>` (asked of another member) then
//! killing the member and wiping its data directory, `add` is `member
//! add` then starting the member empty with `--initial-cluster-state
//! existing`; `members` is `member list` ∩ members answering a
//! linearizable read, and `rules` keeps a majority of the current members
//! (at least 2), one change at a time.

use crate::BoxFuture;
use store::Data;

/// A membership change or view query that failed, naming the node.
#[derive(Debug, Clone, thiserror::Error)]
#[error("node {node}: {action} failed: {message}")]
pub struct MembershipError {
    /// Node name (`*` for a view of the whole cluster).
    pub node: String,
    /// `leave`, `join` or `members`.
    pub action: &'static str,
    /// What went wrong.
    pub message: String,
}

impl MembershipError {
    /// `action` on `node` failed with `e`.
    pub fn new(node: &str, action: &'static str, e: impl std::fmt::Display) -> MembershipError {
        MembershipError {
            node: node.to_string(),
            action,
            message: e.to_string(),
        }
    }
}

/// What a removal must keep: the filter of invalid ops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    /// Fewest serving members left after a removal (Galera: 2; a primary
    /// and its replicas: 1).
    pub min_members: usize,
    /// Nodes that are never removed (PostgreSQL's primary).
    pub fixed: Vec<String>,
}

/// Removing nodes from a cluster and adding them back.
pub trait Membership: Send + Sync {
    /// The database's own view: the nodes that are members and serving
    /// now, in test order.
    ///
    /// # Errors
    /// No node answers.
    fn members(&self) -> BoxFuture<'_, Result<Vec<String>, MembershipError>>;

    /// What a removal must keep.
    fn rules(&self) -> Rules;

    /// Removes `node` from the cluster (stops it, wipes its data); returns
    /// once the others no longer count it. The value says what was done.
    ///
    /// # Errors
    /// [`MembershipError`] naming the node.
    fn remove<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<Data, MembershipError>>;

    /// Adds `node` back (a fresh copy of the data from the current
    /// members); returns once it serves as a member. The value says what
    /// was done (how the data came, how long it took).
    ///
    /// # Errors
    /// [`MembershipError`] naming the node.
    fn add<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<Data, MembershipError>>;
}

/// Why removing `node` now is not allowed, given the database's live
/// `view` of its serving members (`None`: allowed). A node outside the
/// view may always go (it is not serving anyway).
pub fn removal_refused(rules: &Rules, view: &[String], node: &str) -> Option<String> {
    if rules.fixed.iter().any(|f| f == node) {
        return Some(format!("{node} is never removed (primary)"));
    }
    let left = view.iter().filter(|m| *m != node).count();
    if view.iter().any(|m| m == node) && left < rules.min_members {
        return Some(format!(
            "would leave {left} serving member(s) of {} ({}); the database needs {}",
            view.len(),
            view.join(","),
            rules.min_members
        ));
    }
    None
}

/// A result map from `(key, value)` pairs.
pub fn result_data(pairs: Vec<(&str, Data)>) -> Data {
    Data::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (Data::Str(k.to_string()), v))
            .collect(),
    )
}

/// Node names as a history value.
pub fn names_data(names: &[String]) -> Data {
    Data::Vec(names.iter().map(|n| Data::Str(n.clone())).collect())
}

/// A completion value `[node result]`.
pub fn completion(node: &str, result: Data) -> Data {
    Data::Vec(vec![Data::Str(node.to_string()), result])
}

/// Milliseconds as a history value.
pub fn ms_data(d: std::time::Duration) -> Data {
    Data::Int(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn removals_below_the_quorum_or_of_a_fixed_node_are_refused() {
        let galera = Rules {
            min_members: 2,
            fixed: vec![],
        };
        assert_eq!(removal_refused(&galera, &names("n1,n2,n3"), "n2"), None);
        // n3 is killed: the view has two serving members; one may not go.
        let r = removal_refused(&galera, &names("n1,n2"), "n2").unwrap_or_default();
        assert!(r.contains("would leave 1 serving member(s) of 2"), "{r}");
        // A node that is not serving may always go.
        assert_eq!(removal_refused(&galera, &names("n1,n2"), "n3"), None);
        let pg = Rules {
            min_members: 1,
            fixed: names("n1"),
        };
        let r = removal_refused(&pg, &names("n1,n2,n3"), "n1").unwrap_or_default();
        assert!(r.contains("never removed"), "{r}");
        assert_eq!(removal_refused(&pg, &names("n1,n2"), "n2"), None);
        assert!(removal_refused(&pg, &names("n2"), "n2").is_some());
    }
}
