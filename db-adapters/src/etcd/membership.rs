//! Membership changes of etcd on nodes (what a `membership` nemesis
//! calls): [`EtcdNodes::remove_member`] and [`EtcdNodes::add_member`],
//! through etcd's gRPC cluster API (`Cluster.MemberList`, `MemberAdd`,
//! `MemberRemove`), as Jepsen's etcd suite does (`shrink!`/`grow!`).
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
//!   such answers, and on transport failures, until their limit
//!   ([`retryable`]); any other status (e.g. `FailedPrecondition` "Peer
//!   URLs already exists") is final. A node that is in the member list
//!   without a name (added, never started: an earlier add failed after the
//!   request) is just started.

use super::grpc::{EtcdConn, GrpcError};
use super::nodes::{ClusterState, EtcdNodes};
use super::proto::{Member, MemberAddRequest, MemberRemoveRequest};
use crate::db::DbError;
use nemesis::Node;
use std::future::Future;
use std::time::{Duration, Instant};
use tonic::Code;

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
pub fn parse_members(members: &[Member]) -> Vec<MemberInfo> {
    members
        .iter()
        .map(|m| MemberInfo {
            id: m.id,
            name: m.name.clone(),
            peer_urls: m.peer_urls.clone(),
        })
        .collect()
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

/// Whether a failed cluster call is worth retrying: etcd refused the
/// change for now (`Unavailable`: "unhealthy cluster", "leader changed",
/// "no leader"), or the member asked was unreachable, did not answer or
/// lost the connection (`Unknown`, `Internal`, `Cancelled`).
pub fn retryable(e: &GrpcError) -> bool {
    match e {
        GrpcError::Connect { .. } | GrpcError::Timeout(_) => true,
        GrpcError::Status { code, .. } => matches!(
            code,
            Code::Unavailable | Code::Unknown | Code::Internal | Code::Cancelled
        ),
    }
}

impl EtcdNodes {
    /// Sends `call` to each member but `except` in turn until one
    /// answers; retries refusals etcd may lift (see the module doc) until
    /// `limit`.
    async fn cluster_call<T, F, Fut>(
        &self,
        except: &Node,
        what: &str,
        limit: Duration,
        call: F,
    ) -> Result<T, DbError>
    where
        F: Fn(EtcdConn) -> Fut,
        Fut: Future<Output = Result<T, GrpcError>>,
    {
        let start = Instant::now();
        loop {
            let mut last = format!("no member but {except} to ask");
            for n in self.member_nodes().iter().filter(|n| n.name != except.name) {
                let conn = EtcdConn::new(&self.cfg.client_addr(n), Duration::from_secs(5));
                let e = match call(conn).await {
                    Ok(v) => return Ok(v),
                    Err(e) => e,
                };
                last = format!("{n}: {e}");
                if !retryable(&e) {
                    return Err(DbError::Step {
                        node: except.name.clone(),
                        step: format!("etcd {what}"),
                        detail: last,
                    });
                }
            }
            if start.elapsed() >= limit {
                return Err(DbError::Step {
                    node: except.name.clone(),
                    step: format!("etcd {what}"),
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
            .cluster_call(except, "member list", limit, |mut c| async move {
                c.member_list().await
            })
            .await?;
        Ok(parse_members(&v.members))
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
            let id = m.id;
            self.cluster_call(node, "member remove", limit, |mut c| async move {
                c.member_remove(MemberRemoveRequest { id }).await
            })
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
                    .cluster_call(node, "member add", limit, |mut c| {
                        let peer_urls = vec![peer.clone()];
                        async move { c.member_add(MemberAddRequest { peer_urls }).await }
                    })
                    .await?;
                parse_members(&v.members)
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

    fn member(id: u64, name: &str, peer: &str) -> Member {
        Member {
            id,
            name: name.to_string(),
            peer_urls: vec![peer.to_string()],
            client_urls: vec![],
        }
    }

    #[test]
    fn an_add_answer_gives_the_new_members_initial_cluster() {
        // What etcd answers to MemberAdd: every member, the new one
        // without a name (ids are uint64, above i64::MAX here).
        let members = [
            member(10_501_334_649_042_878_790, "n1", "http://10.99.0.1:2380"),
            member(2, "n2", "http://10.99.0.2:2380"),
            member(13_803_658_152_347_727_308, "", "http://10.99.0.3:2380"),
        ];
        let m = parse_members(&members);
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
        let status = |code, message: &str| GrpcError::Status {
            code,
            message: message.to_string(),
        };
        assert!(retryable(&status(
            Code::Unavailable,
            "etcdserver: unhealthy cluster"
        )));
        assert!(retryable(&status(Code::Unknown, "connection reset")));
        assert!(!retryable(&status(
            Code::FailedPrecondition,
            "etcdserver: Peer URLs already exists"
        )));
        assert!(!retryable(&status(
            Code::NotFound,
            "etcdserver: member not found"
        )));
        assert!(!retryable(&status(Code::InvalidArgument, "bad peer")));
        assert!(retryable(&GrpcError::Timeout(Duration::from_secs(1))));
        assert!(retryable(&GrpcError::Connect {
            addr: "x".into(),
            detail: "refused".into()
        }));
    }
}
