//! Membership changes of etcd on nodes (`--nemesis membership`):
//! [`EtcdNodes::remove_member`] and [`EtcdNodes::add_member`], through
//! etcd's gRPC cluster API (`Cluster.MemberList`, `MemberAdd`,
//! `MemberRemove`), as Jepsen's etcd suite does
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
use nemesis::membership::{Membership, MembershipError, Rules, ms_data, names_data, result_data};
use std::future::Future;
use std::time::{Duration, Instant};
use store::Data;
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
    /// Sends `call` to each of `ask` in turn until one answers; retries
    /// refusals etcd may lift (see the module doc) until `limit`. Errors
    /// name `about` (the node changed, `*` for a view).
    async fn cluster_call<T, F, Fut>(
        &self,
        about: &str,
        ask: &[Node],
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
            let mut last = format!("no member to ask (about {about})");
            for n in ask {
                let conn = EtcdConn::new(&self.cfg.client_addr(n), Duration::from_secs(5));
                let e = match call(conn).await {
                    Ok(v) => return Ok(v),
                    Err(e) => e,
                };
                last = format!("{n}: {e}");
                if !retryable(&e) {
                    return Err(DbError::Step {
                        node: about.to_string(),
                        step: format!("etcd {what}"),
                        detail: last,
                    });
                }
            }
            if start.elapsed() >= limit {
                return Err(DbError::Step {
                    node: about.to_string(),
                    step: format!("etcd {what}"),
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
                "member list",
                limit,
                |mut c| async move { c.member_list().await },
            )
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
            let id = m.id;
            self.cluster_call(
                &node.name,
                &self.others(node),
                "member remove",
                limit,
                |mut c| async move { c.member_remove(MemberRemoveRequest { id }).await },
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
                        "member add",
                        limit,
                        |mut c| {
                            let peer_urls = vec![peer.clone()];
                            async move { c.member_add(MemberAddRequest { peer_urls }).await }
                        },
                    )
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
                "member list",
                VIEW_READ_LIMIT,
                |mut c| async move { c.member_list().await },
            )
            .await?;
        let listed = parse_members(&v.members);
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
                .map_err(|e| MembershipError::new("*", "members", e))
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
