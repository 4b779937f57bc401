//! Membership changes of etcd on nodes (what a `membership` nemesis
//! calls): [`EtcdNodes::remove_member`] and [`EtcdNodes::add_member`],
//! through etcd's cluster API on the JSON gateway
//! (`/v3/cluster/member/{list,add,remove}`), as Jepsen's etcd suite does
//! (`shrink!`/`grow!`).
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
use serde_json::{Value, json};
use std::time::{Duration, Instant};

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
    /// Posts `body` to `path` on each member but `except` in turn until
    /// one answers 200; retries refusals etcd may lift (see the module
    /// doc) until `limit`.
    async fn cluster_call(
        &self,
        except: &Node,
        path: &str,
        body: &Value,
        limit: Duration,
    ) -> Result<Value, DbError> {
        let start = Instant::now();
        loop {
            let mut last = format!("no member but {except} to ask");
            for n in self.member_nodes().iter().filter(|n| n.name != except.name) {
                let addr = self.cfg.client_addr(n);
                let r = post_json(&addr, path, body, Duration::from_secs(5)).await;
                if let Ok((200, v)) = r {
                    return Ok(v);
                }
                last = format!("{n}: {}", describe(&r));
                if !retryable(&r) {
                    return Err(DbError::Step {
                        node: except.name.clone(),
                        step: format!("etcd {path}"),
                        detail: last,
                    });
                }
            }
            if start.elapsed() >= limit {
                return Err(DbError::Step {
                    node: except.name.clone(),
                    step: format!("etcd {path}"),
                    detail: format!("still refused after {:?}: {last}", start.elapsed()),
                });
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
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
            .cluster_call(except, "/v3/cluster/member/list", &json!({}), limit)
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
                node,
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
                        node,
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
