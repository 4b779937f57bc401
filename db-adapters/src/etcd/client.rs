//! Transactions on etcd, mapped as Jepsen's etcd suite maps them, as
//! `KV.Txn` calls over gRPC ([`super::grpc`], messages in [`super::proto`]).
//!
//! - A transaction first reads every key it reads or appends to, in one
//!   read-only `Txn` (linearizable range requests). It then computes its
//!   reads and final values locally, and commits ONE `Txn` whose compares
//!   require each of those keys' `mod_revision` to be unchanged (an absent
//!   key has `mod_revision` 0) and whose success branch puts each written
//!   key's final value — writes are merged per key, because etcd refuses two
//!   puts of one key in one `Txn`. A failed compare is a definite `fail`
//!   (`txn-conflict`): nothing was applied. A read-only transaction is just
//!   the first `Txn`.
//! - rw-register keys that are only written (never read) are not compared.
//! - The `register` workload's cas (`[r k old] [w k new]`) is one `Txn`
//!   comparing the key's value to `old`; a mismatch is `cas-mismatch`
//!   (definite).
//! - Values are stored as text: a list as `1,2,3`, a register as `7`.
//!
//! `--version-order db` ([`EtcdFactory::version_order`]): etcd applies
//! every modification at one cluster-wide revision, in revision order, and
//! a `Txn` response's header carries it (the commit's revision for a
//! writing `Txn`, the revision read at for a read-only one). Every `ok`
//! transaction then records `revision` (that number) and `commit-ts`
//! `[revision, 0]` for a writer, `[revision, 1]` for a read-only
//! transaction (it saw every write up to and including its revision), so
//! the checker replays the history in etcd's own order (Enne's
//! expected-order check). A writer also records the certificate the
//! checker's database version order reads (`txid` = its revision,
//! `snapshot` = `R:R:`, i.e. every revision below its own is visible):
//! of two writers of a key the lower revision is the earlier version,
//! which gives rw-register each key's exact version order. A writing
//! transaction's reads come from its first `Txn`, but its compares prove
//! those keys unchanged up to the commit, so they are the state just
//! before its revision.
//!
//! Error classification ([`classify`], on [`GrpcError`]):
//!
//! | failure | read-only txn | writing txn |
//! |---|---|---|
//! | `Connect`: refused, unreachable, connect timed out (never sent) | definite `connect` | definite `connect` |
//! | `Timeout`: no answer within the deadline | definite `read-failed` | indefinite `timeout` |
//! | status InvalidArgument, PermissionDenied, ResourceExhausted, OutOfRange, Unauthenticated, Unimplemented | definite | definite `grpc-<code>` |
//! | any other status: Unavailable ("leader changed", "request timed out", a connection lost after sending), DeadlineExceeded, Unknown, Internal, Cancelled, FailedPrecondition | definite `read-failed` | indefinite `grpc-<code>` |
//!
//! A read-only transaction changed nothing, so any failure is definite. The
//! definite status codes are answers etcd gives only to requests it refused
//! before proposing them to raft ("duplicate key given in txn request",
//! "too many requests", auth); `Unavailable` and `DeadlineExceeded` can
//! come after the proposal was made, and `Unavailable` is also what
//! `tonic` reports for a connection lost mid-call — only the
//! `ConnectError` behind a failed connect proves the request never left.

use super::grpc::{EtcdConn, GrpcError};
use super::proto::{Compare, DeleteRangeRequest, RequestOp, Response, TxnRequest, TxnResponse};
use super::revision::{Committed, header_revision, revision_extra};
use crate::client::{BoxFuture, Client, ClientError, ClientFactory};
use crate::register::cas_mismatch;
use crate::sql::{DataModel, int_key, int_val, parse_list};
use nemesis::Node;
use std::collections::BTreeMap;
use std::time::Duration;
use store::{Data, MicroOp, ReadValue, Val};
use tonic::Code;

/// etcd's default client port, used when a node's host names no port.
pub const DEFAULT_CLIENT_PORT: u16 = 2379;

/// What a transaction knows about one key: its value text (`None`:
/// absent) and its `mod_revision` when read.
#[derive(Clone, Debug, Default)]
struct KeyState {
    value: Option<String>,
    mod_revision: i64,
}

/// One session to one etcd member (one HTTP/2 connection, reused).
pub struct EtcdClient {
    conn: EtcdConn,
    prefix: String,
    model: DataModel,
    /// Record each `ok` transaction's revision (`--version-order db`).
    pub version_order: bool,
    extra: Vec<(String, Data)>,
}

impl EtcdClient {
    /// A session to `addr` (`host:port`); keys are stored as `{prefix}{k}`.
    pub fn new(addr: &str, prefix: &str, model: DataModel, timeout: Duration) -> EtcdClient {
        EtcdClient {
            conn: EtcdConn::new(addr, timeout),
            prefix: prefix.to_string(),
            model,
            version_order: false,
            extra: Vec::new(),
        }
    }

    fn key(&self, k: i64) -> Vec<u8> {
        format!("{}{k}", self.prefix).into_bytes()
    }

    async fn txn_call(
        &mut self,
        req: TxnRequest,
        read_only: bool,
    ) -> Result<TxnResponse, ClientError> {
        self.conn
            .txn(req)
            .await
            .map_err(|e| classify(&e, read_only))
    }

    /// Reads `keys` in one linearizable read-only Txn.
    async fn read_keys(
        &mut self,
        keys: &[i64],
    ) -> Result<(BTreeMap<i64, KeyState>, i64), ClientError> {
        let success = keys.iter().map(|&k| RequestOp::get(self.key(k))).collect();
        let req = TxnRequest {
            success,
            ..TxnRequest::default()
        };
        let v = self.txn_call(req, true).await?;
        let mut out = BTreeMap::new();
        for (i, &k) in keys.iter().enumerate() {
            let kv = match v.responses.get(i).and_then(|r| r.response.as_ref()) {
                Some(Response::Range(r)) => r.kvs.first(),
                _ => None,
            };
            let state = match kv {
                None => KeyState::default(),
                Some(kv) => KeyState {
                    value: Some(decode_text(&kv.value)?),
                    mod_revision: kv.mod_revision,
                },
            };
            out.insert(k, state);
        }
        Ok((out, header_revision(v.header.as_ref())))
    }

    async fn cas(&mut self, k: i64, old: i64, new: i64) -> Result<i64, ClientError> {
        let key = self.key(k);
        let req = TxnRequest {
            compare: vec![Compare::value_is(key.clone(), old.to_string().into_bytes())],
            success: vec![RequestOp::put(key, new.to_string().into_bytes())],
            failure: vec![],
        };
        let v = self.txn_call(req, false).await?;
        if v.succeeded {
            Ok(header_revision(v.header.as_ref()))
        } else {
            Err(cas_mismatch(k, old))
        }
    }

    async fn run(&mut self, txn: &[MicroOp]) -> Result<(Vec<MicroOp>, Committed), ClientError> {
        if let Some((k, old, new)) = crate::register::cas_parts(txn)? {
            let revision = self.cas(k, old, new).await?;
            let c = Committed {
                revision,
                wrote: true,
            };
            return Ok((txn.to_vec(), c));
        }
        let plan = Plan::new(txn, self.model)?;
        let (mut state, read_revision) = if plan.read.is_empty() {
            (BTreeMap::new(), 0)
        } else {
            self.read_keys(&plan.read).await?
        };
        let observed = state.clone();
        let out = apply_locally(txn, &mut state, self.model)?;
        if plan.written.is_empty() {
            let c = Committed {
                revision: read_revision,
                wrote: false,
            };
            return Ok((out, c));
        }
        let compare = observed
            .iter()
            .map(|(&k, s)| Compare::mod_revision_is(self.key(k), s.mod_revision))
            .collect();
        let success = plan
            .written
            .iter()
            .map(|k| {
                let text = state
                    .get(k)
                    .and_then(|s| s.value.clone())
                    .unwrap_or_default();
                RequestOp::put(self.key(*k), text.into_bytes())
            })
            .collect();
        let req = TxnRequest {
            compare,
            success,
            failure: vec![],
        };
        let v = self.txn_call(req, false).await?;
        if v.succeeded {
            let c = Committed {
                revision: header_revision(v.header.as_ref()),
                wrote: true,
            };
            Ok((out, c))
        } else {
            Err(ClientError::definite(
                "txn-conflict",
                "a key read by the transaction changed before its commit (compare failed; nothing applied)",
            ))
        }
    }
}

fn decode_text(v: &[u8]) -> Result<String, ClientError> {
    String::from_utf8(v.to_vec())
        .map_err(|e| ClientError::indefinite("unparseable-read", format!("value not UTF-8: {e}")))
}

/// The keys a transaction must read (and compare) and the keys it writes,
/// each sorted and unique.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    read: Vec<i64>,
    written: Vec<i64>,
}

impl Plan {
    fn new(txn: &[MicroOp], model: DataModel) -> Result<Plan, ClientError> {
        let (mut read, mut written) = (Vec::new(), Vec::new());
        for m in txn {
            match m {
                MicroOp::Read(k, _) => read.push(int_key(k)?),
                MicroOp::Append(k, _) => {
                    let k = int_key(k)?;
                    read.push(k);
                    written.push(k);
                }
                MicroOp::Write(k, _) => {
                    let k = int_key(k)?;
                    if model == DataModel::ListAppend {
                        read.push(k);
                    }
                    written.push(k);
                }
                MicroOp::ReadRange(_) => {
                    return Err(ClientError::definite(
                        "unsupported-op",
                        "etcd runs no predicate reads",
                    ));
                }
            }
        }
        for v in [&mut read, &mut written] {
            v.sort_unstable();
            v.dedup();
        }
        Ok(Plan { read, written })
    }
}

/// Runs `txn` against `state` (the values read, updated in place), and
/// returns the micro-ops with their reads filled in.
fn apply_locally(
    txn: &[MicroOp],
    state: &mut BTreeMap<i64, KeyState>,
    model: DataModel,
) -> Result<Vec<MicroOp>, ClientError> {
    let mut out = Vec::with_capacity(txn.len());
    for m in txn {
        match m {
            MicroOp::Read(k, _) => {
                let value = state.get(&int_key(k)?).and_then(|s| s.value.clone());
                let rv = match model {
                    DataModel::ListAppend => ReadValue::List(parse_list(value.as_deref())?.into()),
                    DataModel::RwRegister => match value {
                        None => ReadValue::Nil,
                        Some(t) => ReadValue::Scalar(Val::int(t.trim().parse().map_err(|_| {
                            ClientError::indefinite(
                                "unparseable-read",
                                format!("register value {t:?} is not an integer"),
                            )
                        })?)),
                    },
                };
                out.push(MicroOp::Read(k.clone(), rv));
            }
            MicroOp::Append(k, v) => {
                let e = state.entry(int_key(k)?).or_default();
                let x = int_val(v)?;
                e.value = Some(match e.value.take() {
                    Some(t) if !t.is_empty() => format!("{t},{x}"),
                    _ => x.to_string(),
                });
                out.push(m.clone());
            }
            MicroOp::Write(k, v) => {
                state.entry(int_key(k)?).or_default().value = Some(int_val(v)?.to_string());
                out.push(m.clone());
            }
            MicroOp::ReadRange(_) => {
                return Err(ClientError::definite(
                    "unsupported-op",
                    "etcd runs no predicate reads",
                ));
            }
        }
    }
    Ok(out)
}

/// gRPC codes etcd answers only for requests it refused before proposing
/// them to raft: InvalidArgument (e.g. "duplicate key given in txn
/// request"), PermissionDenied, ResourceExhausted ("too many requests"),
/// OutOfRange, Unauthenticated, and Unimplemented (no such method).
pub const DEFINITE_CODES: &[Code] = &[
    Code::InvalidArgument,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::OutOfRange,
    Code::Unauthenticated,
    Code::Unimplemented,
];

/// Classifies a failed call (the table is in the module doc): definite
/// only when nothing can have been applied.
pub fn classify(e: &GrpcError, read_only: bool) -> ClientError {
    match e {
        GrpcError::Connect { .. } => ClientError::definite("connect", e.to_string()),
        _ if read_only => ClientError::definite("read-failed", e.to_string()),
        GrpcError::Timeout(_) => ClientError::indefinite("timeout", e.to_string()),
        GrpcError::Status { code, .. } => {
            let tag = format!("grpc-{}", i32::from(*code));
            if DEFINITE_CODES.contains(code) {
                ClientError::definite(tag, e.to_string())
            } else {
                ClientError::indefinite(tag, e.to_string())
            }
        }
    }
}

impl Client for EtcdClient {
    fn invoke<'a>(
        &'a mut self,
        txn: &'a [MicroOp],
    ) -> BoxFuture<'a, Result<Vec<MicroOp>, ClientError>> {
        Box::pin(async move {
            self.extra.clear();
            let (out, c) = self.run(txn).await?;
            if self.version_order {
                self.extra = revision_extra(c);
            }
            Ok(out)
        })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    fn take_extra(&mut self) -> Vec<(String, Data)> {
        std::mem::take(&mut self.extra)
    }
}

/// Opens [`EtcdClient`]s. A node's host may carry a port (`127.0.0.1:23791`,
/// as the local cluster's members do); otherwise port 2379 is used.
pub struct EtcdFactory {
    /// Key prefix (default `harness/`).
    pub prefix: String,
    /// The transaction model.
    pub model: DataModel,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Clients record each `ok` transaction's revision (`--version-order db`).
    pub version_order: bool,
}

impl EtcdFactory {
    /// A factory for `model` with prefix `harness/` and a 5 s timeout.
    pub fn new(model: DataModel) -> EtcdFactory {
        EtcdFactory {
            prefix: "harness/".to_string(),
            model,
            timeout: Duration::from_secs(5),
            version_order: false,
        }
    }
}

/// `host:port` of a node's client endpoint.
pub fn client_addr(node: &Node) -> String {
    if node.host.contains(':') {
        node.host.clone()
    } else {
        format!("{}:{DEFAULT_CLIENT_PORT}", node.host)
    }
}

impl ClientFactory for EtcdFactory {
    fn setup<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ClientError>> {
        // No schema: clear the prefix so a rerun starts from empty keys.
        Box::pin(async move {
            let mut conn = EtcdConn::new(&client_addr(node), self.timeout);
            let req = DeleteRangeRequest {
                key: self.prefix.as_bytes().to_vec(),
                range_end: prefix_end(self.prefix.as_bytes()),
            };
            match conn.delete_range(req).await {
                Ok(_) => Ok(()),
                Err(e) => Err(classify(&e, false)),
            }
        })
    }

    fn open<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<Box<dyn Client>, ClientError>> {
        Box::pin(async move {
            let mut c = EtcdClient::new(&client_addr(node), &self.prefix, self.model, self.timeout);
            c.version_order = self.version_order;
            Ok(Box::new(c) as Box<dyn Client>)
        })
    }
}

/// The smallest key after every key with `prefix` (etcd's `range_end`).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use store::Key;

    fn st(v: &str, rev: i64) -> KeyState {
        KeyState {
            value: Some(v.to_string()),
            mod_revision: rev,
        }
    }

    #[test]
    fn plan_merges_keys_and_skips_blind_register_writes() {
        let txn = vec![
            MicroOp::Append(Key::int(2), Val::int(1)),
            MicroOp::Read(Key::int(1), ReadValue::Nil),
            MicroOp::Append(Key::int(2), Val::int(2)),
        ];
        let p = Plan::new(&txn, DataModel::ListAppend).unwrap();
        assert_eq!(
            p,
            Plan {
                read: vec![1, 2],
                written: vec![2]
            }
        );
        let txn = vec![
            MicroOp::Write(Key::int(3), Val::int(1)),
            MicroOp::Write(Key::int(3), Val::int(2)),
        ];
        let p = Plan::new(&txn, DataModel::RwRegister).unwrap();
        assert_eq!(
            p,
            Plan {
                read: vec![],
                written: vec![3]
            }
        );
    }

    #[test]
    fn local_application_sees_own_appends_and_writes() {
        let mut s = BTreeMap::from([(1, st("5,6", 9))]);
        let txn = vec![
            MicroOp::Append(Key::int(1), Val::int(7)),
            MicroOp::Read(Key::int(1), ReadValue::Nil),
            MicroOp::Read(Key::int(2), ReadValue::Nil),
            MicroOp::Append(Key::int(2), Val::int(1)),
        ];
        let out = apply_locally(&txn, &mut s, DataModel::ListAppend).unwrap();
        assert_eq!(
            out[1],
            MicroOp::Read(
                Key::int(1),
                ReadValue::List(vec![Val::int(5), Val::int(6), Val::int(7)].into())
            )
        );
        assert_eq!(
            out[2],
            MicroOp::Read(Key::int(2), ReadValue::List(vec![].into()))
        );
        assert_eq!(s[&2].value.as_deref(), Some("1"));
        let mut r = BTreeMap::new();
        let txn = vec![
            MicroOp::Read(Key::int(4), ReadValue::Nil),
            MicroOp::Write(Key::int(4), Val::int(3)),
            MicroOp::Read(Key::int(4), ReadValue::Nil),
        ];
        let out = apply_locally(&txn, &mut r, DataModel::RwRegister).unwrap();
        assert_eq!(out[0], MicroOp::Read(Key::int(4), ReadValue::Nil));
        assert_eq!(
            out[2],
            MicroOp::Read(Key::int(4), ReadValue::Scalar(Val::int(3)))
        );
    }

    /// The classification table: (error, read-only?, definite?, tag).
    #[test]
    fn classification_definite_only_when_nothing_applied() {
        use crate::client::ErrorKind::{Definite, Indefinite};
        let status = |code| GrpcError::Status {
            code,
            message: "m".into(),
        };
        let connect = GrpcError::Connect {
            addr: "x".into(),
            detail: "refused".into(),
        };
        let timeout = GrpcError::Timeout(Duration::from_secs(1));
        let table = [
            (connect.clone(), false, Definite, "connect"),
            (connect, true, Definite, "connect"),
            (timeout.clone(), false, Indefinite, "timeout"),
            (timeout, true, Definite, "read-failed"),
            (status(Code::Unavailable), true, Definite, "read-failed"),
            // etcd's "leader changed", "request timed out", "no leader":
            // the proposal may still commit.
            (status(Code::Unavailable), false, Indefinite, "grpc-14"),
            (status(Code::DeadlineExceeded), false, Indefinite, "grpc-4"),
            (status(Code::Unknown), false, Indefinite, "grpc-2"),
            (status(Code::Internal), false, Indefinite, "grpc-13"),
            (status(Code::Cancelled), false, Indefinite, "grpc-1"),
            (
                status(Code::FailedPrecondition),
                false,
                Indefinite,
                "grpc-9",
            ),
            // Refused before proposing.
            (status(Code::InvalidArgument), false, Definite, "grpc-3"),
            (status(Code::PermissionDenied), false, Definite, "grpc-7"),
            (status(Code::ResourceExhausted), false, Definite, "grpc-8"),
            (status(Code::OutOfRange), false, Definite, "grpc-11"),
            (status(Code::Unimplemented), false, Definite, "grpc-12"),
            (status(Code::Unauthenticated), false, Definite, "grpc-16"),
        ];
        for (e, read_only, kind, tag) in table {
            let c = classify(&e, read_only);
            assert_eq!(
                (c.kind, c.code.as_str()),
                (kind, tag),
                "{e:?} read-only {read_only}"
            );
        }
        assert_eq!(prefix_end(b"harness/"), b"harness0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
    }
}
