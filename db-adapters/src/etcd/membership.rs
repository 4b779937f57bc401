//! Membership changes of etcd on nodes (`--nemesis membership`):
//! [`EtcdNodes::remove_member`] and [`EtcdNodes::add_member`], through
//! etcd's cluster API on the JSON gateway
//! (`/v3/cluster/member/{list,add,remove}`), as Jepsen's etcd suite does
//! (`shrink!`/`grow!`), and the [`Membership`] the nemesis drives with
//! them (`leave` = remove, `join` = add).
//!
//! - View ([`Membership::members`]): the members harness knows of that
//!   answer a linearizable read within 2 s (asked in parallel: a paused,
//!   killed or partitioned member drops out) and that etcd's own member
//!   list names.
//! - Rules: a removal must leave a majority of the current members
//!   serving, and at least 2 ([`min_members`]): with 3 nodes one member
//!   is out at a time, and none while another one is down (etcd's
//!   `--strict-reconfig-check` would refuse it, or the cluster would lose
//!   its quorum). Changes are serialized (one pending change at a time);
//!   each returns only once etcd agrees (removed from the list; added and
//!   serving a linearizable read).
//!
//! - Remove: `member remove <id>` sent to another member, then the removed
//!   member is killed by pid (it usually stops itself within 2 s) and its
//!   data directory wiped: a removed member can never rejoin with its old
//!   data.
//! - Add: `member add <peer URL>` sent to another member, then the node is
//!   started with an empty data directory, `--initial-cluster-state
//!   existing` and the member list `member add` answered (starting it with
//!   another list makes it exit with "member count is unequal").
//!   `member add` right after bootstrap, or while a member is down, is
//!   refused with `Unavailable` "etcdserver: unhealthy cluster" (measured:
//!   it succeeds a few seconds later), so both requests are retried on
//!   such answers until their limit. A node that is in the member list
//!   without a name (added, never started: an earlier add failed after the
//!   request) is just started.

use super::http::{HttpError, post_json};
use super::nodes::{ClusterState, EtcdNodes};
use crate::db::DbError;
use nemesis::Node;
use nemesis::membership::{Membership, MembershipError, Rules, ms_data, names_data, result_data};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use store::Data;

/// One entry of `member list`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberInfo {
    /// The member's id.
    pub id: u64,
    /// Its name (empty: added, not started yet).
    pub name: String,
    /// Its peer URLs.
    pub peer_urls: Vec<String>,
}

/// The members of a `member list` / `member add` answer.
pub fn parse_members(v: &Value) -> Vec<MemberInfo> {
    v.get("members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| MemberInfo {
            id: json_u64_str(m.get("ID")),
            name: m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            peer_urls: m
                .get("peerURLs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        })
        .collect()
}

/// A uint64 id as proto3 JSON writes it (a string, possibly above
/// `i64::MAX`).
fn json_u64_str(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

/// `--initial-cluster` of an added member: every listed member's peer
/// URLs, the unnamed one (the member being added) named `name`.
pub fn initial_cluster_after_add(members: &[MemberInfo], name: &str) -> String {
    members
        .iter()
        .flat_map(|m| {
            let n = if m.name.is_empty() { name } else { &m.name };
            m.peer_urls.iter().map(move |u| format!("{n}={u}"))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether an answer is worth retrying: etcd refused the change for now
/// (`Unavailable`, e.g. "unhealthy cluster", "leader changed", "no
/// leader"), or the member asked is unreachable.
fn retryable(r: &Result<(u16, Value), HttpError>) -> bool {
    match r {
        Ok((200, _)) => false,
        Ok((_, v)) => v.get("code").and_then(Value::as_i64) == Some(14),
        Err(_) => true,
    }
}

fn describe(r: &Result<(u16, Value), HttpError>) -> String {
    match r {
        Ok((status, v)) => format!("HTTP {status}: {v}"),
        Err(e) => e.to_string(),
    }
}

impl EtcdNodes {
    /// Posts `body` to `path` on each of `ask` in turn until one answers
    /// 200; retries refusals etcd may lift (see the module doc) until
    /// `limit`. Errors name `about` (the node changed, `*` for a view).
    async fn cluster_call(
        &self,
        about: &str,
        ask: &[Node],
        path: &str,
        body: &Value,
        limit: Duration,
    ) -> Result<Value, DbError> {
        let start = Instant::now();
        loop {
            let mut last = format!("no member to ask (about {about})");
            for n in ask {
                let addr = self.cfg.client_addr(n);
                let r = post_json(&addr, path, body, Duration::from_secs(5)).await;
                if let Ok((200, v)) = r {
                    return Ok(v);
                }
                last = format!("{n}: {}", describe(&r));
                if !retryable(&r) {
                    return Err(DbError::Step {
                        node: about.to_string(),
                        step: format!("etcd {path}"),
                        detail: last,
                    });
                }
            }
            if start.elapsed() >= limit {
                return Err(DbError::Step {
                    node: about.to_string(),
                    step: format!("etcd {path}"),
                    detail: format!("still refused after {:?}: {last}", start.elapsed()),
                });
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The members but `except`, the ones a change of `except` is asked of.
    fn others(&self, except: &Node) -> Vec<Node> {
        self.member_nodes()
            .into_iter()
            .filter(|n| n.name != except.name)
            .collect()
    }

    /// The cluster's member list, asked of a member other than `except`.
    ///
    /// # Errors
    /// No other member answers within `limit`.
    pub async fn member_list(
        &self,
        except: &Node,
        limit: Duration,
    ) -> Result<Vec<MemberInfo>, DbError> {
        let v = self
            .cluster_call(
                &except.name,
                &self.others(except),
                "/v3/cluster/member/list",
                &json!({}),
                limit,
            )
            .await?;
        Ok(parse_members(&v))
    }

    /// Removes `node`'s member: `member remove` through another member,
    /// then kills it (by pid) and wipes its data. A node that is no member
    /// any more is only killed and wiped. Refuses to remove the last
    /// member.
    ///
    /// # Errors
    /// [`DbError`] naming the node: no other member answered within
    /// `limit`, etcd refused, or a command on the node failed.
    pub async fn remove_member(&self, node: &Node, limit: Duration) -> Result<(), DbError> {
        let _one_change = self.change.lock().await;
        let names = self.member_names();
        if names.iter().all(|n| *n == node.name) {
            return Err(DbError::Topology(format!(
                "etcd: will not remove {node}, the last member"
            )));
        }
        let peer = self.cfg.peer_url(node);
        let listed = self.member_list(node, limit).await?;
        if let Some(m) = listed
            .iter()
            .find(|m| m.name == node.name || m.peer_urls.contains(&peer))
        {
            self.cluster_call(
                &node.name,
                &self.others(node),
                "/v3/cluster/member/remove",
                &json!({"ID": m.id.to_string()}),
                limit,
            )
            .await?;
        }
        self.set_members(names.into_iter().filter(|n| *n != node.name).collect());
        self.kill_member(node).await?;
        let wipe = format!(
            "rm -rf {}",
            nemesis::remote::shell_quote(&self.cfg.data_dir(node))
        );
        self.step(node, "wipe etcd data", &wipe).await
    }

    /// Adds `node` back: `member add` through another member (retried
    /// while etcd says the cluster is unhealthy), then starts it on an
    /// empty data directory with `--initial-cluster-state existing` and
    /// the member list etcd answered, and waits until it serves. A node
    /// that is a member already is left alone.
    ///
    /// # Errors
    /// [`DbError`] naming the node: etcd kept refusing for `limit`, the
    /// start failed, or the member did not serve within `limit`.
    pub async fn add_member(&self, node: &Node, limit: Duration) -> Result<(), DbError> {
        let _one_change = self.change.lock().await;
        let mut names = self.member_names();
        if names.contains(&node.name) {
            return Ok(());
        }
        let peer = self.cfg.peer_url(node);
        let listed = self.member_list(node, limit).await?;
        let members = match listed.iter().find(|m| m.peer_urls.contains(&peer)) {
            Some(m) if m.name.is_empty() => listed,
            Some(m) => {
                return Err(DbError::Step {
                    node: node.name.clone(),
                    step: "etcd member add".to_string(),
                    detail: format!(
                        "{peer} is a running member already (named {:?}) that harness did not add",
                        m.name
                    ),
                });
            }
            None => {
                let v = self
                    .cluster_call(
                        &node.name,
                        &self.others(node),
                        "/v3/cluster/member/add",
                        &json!({"peerURLs": [peer]}),
                        limit,
                    )
                    .await?;
                parse_members(&v)
            }
        };
        let initial = initial_cluster_after_add(&members, &node.name);
        self.kill_member(node).await?;
        let dir = nemesis::remote::shell_quote(&self.cfg.node_dir(node));
        let data = nemesis::remote::shell_quote(&self.cfg.data_dir(node));
        self.step(
            node,
            "empty etcd data",
            &format!("rm -rf {data} && mkdir -p {dir}"),
        )
        .await?;
        self.start_member(node, &initial, ClusterState::Existing)
            .await?;
        names.push(node.name.clone());
        let order: Vec<String> = self
            .all_nodes()
            .into_iter()
            .map(|n| n.name)
            .filter(|n| names.contains(n))
            .collect();
        self.set_members(order);
        self.await_member(node, limit).await
    }
}

/// How long one membership change of the nemesis may take (etcd's
/// refusals retried, the added member serving).
const CHANGE_LIMIT: Duration = Duration::from_secs(30);

/// How long a member may take to answer the view's linearizable read.
const VIEW_READ_LIMIT: Duration = Duration::from_secs(2);

/// Fewest serving members a removal may leave when `current` nodes are
/// members: a majority of them (etcd's quorum, which its
/// `--strict-reconfig-check` also demands), and never fewer than 2, as
/// Jepsen's `shrink` refuses. With 3 nodes this allows one removal at a
/// time and none while another member is down.
pub fn min_members(current: usize) -> usize {
    (current / 2 + 1).max(2)
}

fn merr(node: &str, action: &'static str, e: impl std::fmt::Display) -> MembershipError {
    MembershipError {
        node: node.to_string(),
        action,
        message: e.to_string(),
    }
}

impl EtcdNodes {
    /// The view of [`Membership::members`]: the members harness knows of
    /// that answer a linearizable read within 2 s (asked in parallel) and
    /// that etcd's own member list names, in node order.
    async fn serving_members(&self) -> Result<Vec<String>, DbError> {
        let mine = self.member_nodes();
        let checks = mine
            .iter()
            .map(|n| async move { self.await_member(n, VIEW_READ_LIMIT).await.is_ok() });
        let ok = futures_util::future::join_all(checks).await;
        let serving: Vec<Node> = mine
            .into_iter()
            .zip(ok)
            .filter_map(|(n, ok)| ok.then_some(n))
            .collect();
        if serving.is_empty() {
            return Err(DbError::Topology(
                "etcd: no member answers a linearizable read".to_string(),
            ));
        }
        let v = self
            .cluster_call(
                "*",
                &serving,
                "/v3/cluster/member/list",
                &json!({}),
                VIEW_READ_LIMIT,
            )
            .await?;
        let listed = parse_members(&v);
        Ok(serving
            .into_iter()
            .filter(|n| {
                let peer = self.cfg.peer_url(n);
                listed
                    .iter()
                    .any(|m| m.name == n.name || m.peer_urls.contains(&peer))
            })
            .map(|n| n.name)
            .collect())
    }

    /// The members after a change, as a history value: etcd's view, or
    /// harness's own list when no view came.
    async fn members_after(&self) -> Data {
        let names = match self.serving_members().await {
            Ok(v) => v,
            Err(_) => self.member_names(),
        };
        names_data(&names)
    }

    fn node_named(&self, name: &str) -> Result<Node, DbError> {
        self.all_nodes()
            .into_iter()
            .find(|n| n.name == name)
            .ok_or_else(|| DbError::Topology(format!("etcd: unknown node {name}")))
    }

    async fn leave(&self, name: &str) -> Result<Data, DbError> {
        let t = Instant::now();
        let node = self.node_named(name)?;
        self.remove_member(&node, CHANGE_LIMIT).await?;
        let ms = ms_data(t.elapsed());
        Ok(result_data(vec![
            ("how", Data::Str("member-remove".to_string())),
            ("wiped", Data::Bool(true)),
            ("ms", ms),
            ("members", self.members_after().await),
        ]))
    }

    async fn join(&self, name: &str) -> Result<Data, DbError> {
        let t = Instant::now();
        let node = self.node_named(name)?;
        self.add_member(&node, CHANGE_LIMIT).await?;
        let ms = ms_data(t.elapsed());
        Ok(result_data(vec![
            ("how", Data::Str("member-add".to_string())),
            ("transfer", Data::Str("raft".to_string())),
            ("ms", ms),
            ("members", self.members_after().await),
        ]))
    }
}

impl Membership for EtcdNodes {
    fn members(&self) -> nemesis::BoxFuture<'_, Result<Vec<String>, MembershipError>> {
        Box::pin(async move {
            self.serving_members()
                .await
                .map_err(|e| merr("*", "members", e))
        })
    }

    fn rules(&self) -> Rules {
        Rules {
            min_members: min_members(self.member_names().len()),
            fixed: Vec::new(),
        }
    }

    fn remove<'a>(
        &'a self,
        node: &'a str,
    ) -> nemesis::BoxFuture<'a, Result<Data, MembershipError>> {
        Box::pin(async move { self.leave(node).await.map_err(|e| merr(node, "leave", e)) })
    }

    fn add<'a>(&'a self, node: &'a str) -> nemesis::BoxFuture<'a, Result<Data, MembershipError>> {
        Box::pin(async move { self.join(node).await.map_err(|e| merr(node, "join", e)) })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_add_answer_gives_the_new_members_initial_cluster() {
        // What etcd 3.4's gateway answers to member/add (ids as strings,
        // the new member without a name).
        let v = json!({
            "header": {"cluster_id": "1", "member_id": "2", "raft_term": "3"},
            "member": {"ID": "13803658152347727308", "peerURLs": ["http://10.99.0.3:2380"]},
            "members": [
                {"ID": "10501334649042878790", "name": "n1",
                 "peerURLs": ["http://10.99.0.1:2380"], "clientURLs": ["http://10.99.0.1:2379"]},
                {"ID": "2", "name": "n2", "peerURLs": ["http://10.99.0.2:2380"]},
                {"ID": "13803658152347727308", "peerURLs": ["http://10.99.0.3:2380"]}
            ]
        });
        let m = parse_members(&v);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].id, 10_501_334_649_042_878_790);
        assert_eq!(m[2].name, "");
        assert_eq!(
            initial_cluster_after_add(&m, "n3"),
            "n1=http://10.99.0.1:2380,n2=http://10.99.0.2:2380,n3=http://10.99.0.3:2380"
        );
    }

    #[test]
    fn removals_keep_a_majority_of_the_current_members() {
        assert_eq!(min_members(3), 2);
        assert_eq!(min_members(2), 2, "one pending removal at a time");
        assert_eq!(min_members(5), 3);
        assert_eq!(min_members(4), 3);
        let r = Rules {
            min_members: min_members(3),
            fixed: Vec::new(),
        };
        let view = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            nemesis::membership::removal_refused(&r, &view("n1,n2,n3"), "n2"),
            None
        );
        // n3 down: removing a serving member would leave no quorum.
        assert!(nemesis::membership::removal_refused(&r, &view("n1,n2"), "n2").is_some());
        assert_eq!(
            nemesis::membership::removal_refused(&r, &view("n1,n2"), "n3"),
            None
        );
    }

    #[test]
    fn only_refusals_etcd_may_lift_are_retried() {
        let unhealthy = Ok((
            503,
            json!({"error": "etcdserver: unhealthy cluster", "code": 14}),
        ));
        assert!(retryable(&unhealthy));
        let bad = Ok((400, json!({"error": "etcdserver: bad peer", "code": 3})));
        assert!(!retryable(&bad));
        assert!(!retryable(&Ok((200, json!({})))));
        assert!(retryable(&Err(HttpError::Timeout(Duration::from_secs(1)))));
        assert!(describe(&bad).contains("bad peer"));
    }
}
