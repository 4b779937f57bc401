//! The gRPC transport to one etcd member: unary calls of the
//! [`super::proto`] messages over one HTTP/2 connection (plaintext h2c on
//! the client URL, as `etcdctl` talks), with `tonic`'s client machinery
//! and `prost` encoding and nothing generated.
//!
//! Key decision: one [`EtcdConn`] keeps one lazily connected `tonic`
//! channel and reuses it for every call (the JSON gateway it replaces
//! opened a TCP connection per request); a dropped connection is opened
//! again by the next call. Every call has its own deadline
//! ([`EtcdConn::timeout`]), enforced here, not by the server.
//!
//! Error classification starts here, by whether the request can have
//! reached etcd:
//!
//! - [`GrpcError::Connect`]: the connection could not be opened (refused,
//!   unreachable, connect timed out after half the deadline) or the
//!   channel was not ready: the request was never sent. `tonic` reports such a failure as
//!   `Unavailable` with a `ConnectError` in its source chain; that is
//!   what tells it apart from etcd's own `Unavailable` answers ("leader
//!   changed", "request timed out"), which come after the request arrived.
//! - [`GrpcError::Timeout`]: no answer within the deadline; the request
//!   may have been sent and applied.
//! - [`GrpcError::Status`]: an answer with a gRPC status other than OK —
//!   from etcd, or `tonic`'s mapping of a connection lost after sending
//!   (`Unknown`, `Internal`, `Unavailable` without a `ConnectError`).
//!
//! Which statuses are definite for a transaction is decided by the
//! client ([`super::client::classify`]).

use super::proto::{
    DeleteRangeRequest, DeleteRangeResponse, MemberAddRequest, MemberAddResponse,
    MemberListRequest, MemberListResponse, MemberRemoveRequest, MemberRemoveResponse, RangeRequest,
    RangeResponse, TxnRequest, TxnResponse,
};
use http::uri::PathAndQuery;
use std::error::Error as _;
use std::time::Duration;
use tonic::client::Grpc;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, ConnectError, Status};

/// How a call failed (see the module doc for what each means).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcError {
    /// The request was never sent.
    #[error("connect to {addr}: {detail}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// Why.
        detail: String,
    },
    /// No answer within the deadline (the request may have been applied).
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// A non-OK gRPC status.
    #[error("gRPC {code:?}: {message}")]
    Status {
        /// The status code.
        code: Code,
        /// Its message (etcd's error text, e.g. `etcdserver: leader changed`).
        message: String,
    },
}

impl GrpcError {
    /// The status code of a [`GrpcError::Status`].
    pub fn code(&self) -> Option<Code> {
        match self {
            GrpcError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Classifies a status `tonic` returned for a call to `addr`.
    pub fn from_status(addr: &str, s: &Status) -> GrpcError {
        let mut source = s.source();
        while let Some(e) = source {
            if e.downcast_ref::<ConnectError>().is_some() {
                return GrpcError::Connect {
                    addr: addr.to_string(),
                    detail: error_chain(s),
                };
            }
            source = e.source();
        }
        GrpcError::Status {
            code: s.code(),
            message: s.message().to_string(),
        }
    }
}

/// `s`'s message and every source's, `: `-joined (the OS error of a
/// failed connect sits at the end of the chain).
fn error_chain(s: &Status) -> String {
    let mut out = s.message().to_string();
    let mut source = s.source();
    while let Some(e) = source {
        let text = e.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = e.source();
    }
    out
}

/// How long opening the connection may take: half the call's deadline,
/// so that a connect that hangs (a partitioned member drops the SYN) ends
/// as the definite [`GrpcError::Connect`] before the call's deadline makes
/// it an indefinite [`GrpcError::Timeout`].
fn connect_timeout(call: Duration) -> Duration {
    call / 2
}

/// A gRPC session to one etcd member (see the module doc).
pub struct EtcdConn {
    addr: String,
    /// Deadline of each call, connecting included.
    pub timeout: Duration,
    grpc: Option<Grpc<Channel>>,
}

impl EtcdConn {
    /// A session to `addr` (`host:port`); nothing is connected until the
    /// first call.
    pub fn new(addr: &str, timeout: Duration) -> EtcdConn {
        EtcdConn {
            addr: addr.to_string(),
            timeout,
            grpc: None,
        }
    }

    /// The member's `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn channel(&mut self) -> Result<Grpc<Channel>, GrpcError> {
        if let Some(g) = &self.grpc {
            return Ok(g.clone());
        }
        let endpoint = Endpoint::from_shared(format!("http://{}", self.addr))
            .map_err(|e| GrpcError::Connect {
                addr: self.addr.clone(),
                detail: format!("not a host:port: {e}"),
            })?
            .connect_timeout(connect_timeout(self.timeout))
            .tcp_nodelay(true);
        let g = Grpc::new(endpoint.connect_lazy());
        self.grpc = Some(g.clone());
        Ok(g)
    }

    /// One unary call of `path` (`/etcdserverpb.Service/Method`).
    async fn unary<Req, Resp>(&mut self, path: &'static str, req: Req) -> Result<Resp, GrpcError>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.channel()?;
        let addr = self.addr.clone();
        let call = async move {
            grpc.ready().await.map_err(|e| GrpcError::Connect {
                addr: addr.clone(),
                detail: format!("channel not ready: {e}"),
            })?;
            let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
            grpc.unary(
                tonic::Request::new(req),
                PathAndQuery::from_static(path),
                codec,
            )
            .await
            .map(tonic::Response::into_inner)
            .map_err(|s| GrpcError::from_status(&addr, &s))
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(GrpcError::Timeout(self.timeout)),
        }
    }

    /// `KV.Txn`.
    ///
    /// # Errors
    /// [`GrpcError`] (see the module doc).
    ///
    /// # Cancel safety
    /// Not cancel safe: a dropped call may have been applied.
    pub async fn txn(&mut self, req: TxnRequest) -> Result<TxnResponse, GrpcError> {
        self.unary("/etcdserverpb.KV/Txn", req).await
    }

    /// `KV.Range`.
    ///
    /// # Errors
    /// [`GrpcError`] (see the module doc).
    pub async fn range(&mut self, req: RangeRequest) -> Result<RangeResponse, GrpcError> {
        self.unary("/etcdserverpb.KV/Range", req).await
    }

    /// `KV.DeleteRange`.
    ///
    /// # Errors
    /// [`GrpcError`] (see the module doc).
    pub async fn delete_range(
        &mut self,
        req: DeleteRangeRequest,
    ) -> Result<DeleteRangeResponse, GrpcError> {
        self.unary("/etcdserverpb.KV/DeleteRange", req).await
    }

    /// `Cluster.MemberList`.
    ///
    /// # Errors
    /// [`GrpcError`] (see the module doc).
    pub async fn member_list(&mut self) -> Result<MemberListResponse, GrpcError> {
        self.unary("/etcdserverpb.Cluster/MemberList", MemberListRequest {})
            .await
    }

    /// `Cluster.MemberAdd`.
    ///
    /// # Errors
    /// [`GrpcError`] (see the module doc).
    pub async fn member_add(
        &mut self,
        req: MemberAddRequest,
    ) -> Result<MemberAddResponse, GrpcError> {
        self.unary("/etcdserverpb.Cluster/MemberAdd", req).await
    }

    /// `Cluster.MemberRemove`.
    ///
    /// # Errors
    /// [`GrpcError`] (see the module doc).
    pub async fn member_remove(
        &mut self,
        req: MemberRemoveRequest,
    ) -> Result<MemberRemoveResponse, GrpcError> {
        self.unary("/etcdserverpb.Cluster/MemberRemove", req).await
    }

    /// Whether the member answers a linearizable read of `key` (which
    /// needs a leader and a quorum) within the deadline; the error names
    /// why not.
    ///
    /// # Errors
    /// [`GrpcError`] of the read.
    pub async fn linearizable_read(&mut self, key: &[u8]) -> Result<(), GrpcError> {
        self.range(RangeRequest {
            key: key.to_vec(),
            ..RangeRequest::default()
        })
        .await
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn connecting_gets_half_the_deadline() {
        assert_eq!(
            connect_timeout(Duration::from_secs(5)),
            Duration::from_millis(2500)
        );
    }

    #[test]
    fn a_connect_error_in_the_source_chain_means_never_sent() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let s = Status::from_error(Box::new(ConnectError(Box::new(io))));
        assert_eq!(s.code(), Code::Unavailable);
        let e = GrpcError::from_status("h:1", &s);
        assert!(matches!(&e, GrpcError::Connect { .. }), "{e:?}");
        assert!(e.to_string().contains("refused"), "{e}");
        // etcd's own Unavailable has no such source.
        let lc = Status::unavailable("etcdserver: leader changed");
        assert_eq!(
            GrpcError::from_status("h:1", &lc),
            GrpcError::Status {
                code: Code::Unavailable,
                message: "etcdserver: leader changed".into()
            }
        );
    }

    /// A port nobody listens on: refused before anything is sent.
    #[tokio::test]
    async fn a_refused_connection_is_a_connect_error() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut c = EtcdConn::new(&format!("127.0.0.1:{port}"), Duration::from_secs(2));
        let e = c.txn(TxnRequest::default()).await.unwrap_err();
        assert!(matches!(e, GrpcError::Connect { .. }), "{e:?}");
        let e = c.member_list().await.unwrap_err();
        assert!(matches!(e, GrpcError::Connect { .. }), "again: {e:?}");
    }

    /// A server that accepts and reads but never answers: the request
    /// went out, so the outcome is unknown.
    #[tokio::test]
    async fn a_silent_server_is_a_timeout() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut got = 0;
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                got += n;
            }
            got
        });
        let mut c = EtcdConn::new(&addr, Duration::from_millis(300));
        let e = c.txn(TxnRequest::default()).await.unwrap_err();
        assert_eq!(e, GrpcError::Timeout(Duration::from_millis(300)));
        drop(c);
        let got = server.await.unwrap();
        assert!(got > 24, "the HTTP/2 preface and request were sent: {got}");
    }

    /// A server that accepts the connection and closes it at once: the
    /// request may have been written, so it is no connect error.
    #[tokio::test]
    async fn a_connection_closed_by_the_server_is_not_a_connect_error() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = vec![0u8; 64];
            let _ = s.read(&mut buf).await;
        });
        let mut c = EtcdConn::new(&addr, Duration::from_secs(2));
        let e = c.txn(TxnRequest::default()).await.unwrap_err();
        assert!(matches!(e, GrpcError::Status { .. }), "{e:?}");
    }
}
