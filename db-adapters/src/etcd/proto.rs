//! The subset of etcd's v3 gRPC messages (`etcdserverpb`, `mvccpb`) the
//! adapter sends and reads: `KV.Range`, `KV.DeleteRange`, `KV.Txn` (with
//! range and put operations and compares) and `Cluster.MemberList`,
//! `MemberAdd`, `MemberRemove`.
//!
//! Key decision: the messages are written by hand as `prost` structs with
//! the field numbers and types of etcd's `rpc.proto` and `kv.proto`, not
//! generated at build time, so a fresh clone builds with cargo alone (no
//! `protoc`, no build script). Fields the adapter never uses are left out:
//! protobuf decoding skips unknown fields, and a field left out of a
//! request is its proto3 default on the server, so the subset is
//! wire-compatible with every etcd 3.x. The unit tests pin the encoding
//! against bytes derived by hand from the field numbers.

/// The header of every answer (`etcdserverpb.ResponseHeader`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseHeader {
    /// The cluster's id.
    #[prost(uint64, tag = "1")]
    pub cluster_id: u64,
    /// The answering member's id.
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
    /// The key-value store's revision when the request was applied.
    #[prost(int64, tag = "3")]
    pub revision: i64,
    /// The raft term when the request was applied.
    #[prost(uint64, tag = "4")]
    pub raft_term: u64,
}

/// A stored key (`mvccpb.KeyValue`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The key.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// The revision of the key's last creation.
    #[prost(int64, tag = "2")]
    pub create_revision: i64,
    /// The revision of the key's last modification.
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    /// How often the key was modified since its creation.
    #[prost(int64, tag = "4")]
    pub version: i64,
    /// The value.
    #[prost(bytes = "vec", tag = "5")]
    pub value: Vec<u8>,
}

/// `KV.Range` (`etcdserverpb.RangeRequest`); linearizable unless
/// `serializable`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeRequest {
    /// The key, or the first key of the range.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// The end of the range `[key, range_end)`; empty: only `key`.
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    /// At most this many keys; 0: no limit.
    #[prost(int64, tag = "3")]
    pub limit: i64,
    /// Served from the member's local state (may be stale).
    #[prost(bool, tag = "7")]
    pub serializable: bool,
}

/// The answer to [`RangeRequest`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeResponse {
    /// The header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// The keys found.
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
    /// More keys are in the range than returned.
    #[prost(bool, tag = "3")]
    pub more: bool,
    /// The number of keys in the range.
    #[prost(int64, tag = "4")]
    pub count: i64,
}

/// A put inside a [`TxnRequest`] (`etcdserverpb.PutRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutRequest {
    /// The key.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// The value.
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// The answer to a [`PutRequest`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutResponse {
    /// The header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// `KV.DeleteRange` (`etcdserverpb.DeleteRangeRequest`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeRequest {
    /// The key, or the first key of the range.
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// The end of the range `[key, range_end)`; empty: only `key`.
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
}

/// The answer to [`DeleteRangeRequest`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeResponse {
    /// The header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// How many keys were deleted.
    #[prost(int64, tag = "2")]
    pub deleted: i64,
}

/// One operation of a [`TxnRequest`] (`etcdserverpb.RequestOp`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestOp {
    /// The operation.
    #[prost(oneof = "Request", tags = "1, 2, 3")]
    pub request: Option<Request>,
}

/// The operations a [`RequestOp`] may hold.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Request {
    /// A read.
    #[prost(message, tag = "1")]
    Range(RangeRequest),
    /// A write.
    #[prost(message, tag = "2")]
    Put(PutRequest),
    /// A delete.
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeRequest),
}

/// One answer inside a [`TxnResponse`] (`etcdserverpb.ResponseOp`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseOp {
    /// The answer.
    #[prost(oneof = "Response", tags = "1, 2, 3")]
    pub response: Option<Response>,
}

/// The answers a [`ResponseOp`] may hold.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Response {
    /// To a read.
    #[prost(message, tag = "1")]
    Range(RangeResponse),
    /// To a write.
    #[prost(message, tag = "2")]
    Put(PutResponse),
    /// To a delete.
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeResponse),
}

/// `Compare.CompareResult`: how the target is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CompareResult {
    /// Equal.
    Equal = 0,
    /// Greater.
    Greater = 1,
    /// Less.
    Less = 2,
    /// Not equal.
    NotEqual = 3,
}

/// `Compare.CompareTarget`: which field of the key is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CompareTarget {
    /// The key's version.
    Version = 0,
    /// Its create revision.
    Create = 1,
    /// Its mod revision (0 for an absent key).
    Mod = 2,
    /// Its value.
    Value = 3,
}

/// A guard of a [`TxnRequest`] (`etcdserverpb.Compare`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Compare {
    /// A [`CompareResult`].
    #[prost(enumeration = "CompareResult", tag = "1")]
    pub result: i32,
    /// A [`CompareTarget`].
    #[prost(enumeration = "CompareTarget", tag = "2")]
    pub target: i32,
    /// The key compared.
    #[prost(bytes = "vec", tag = "3")]
    pub key: Vec<u8>,
    /// The value compared to (its variant matches `target`). A oneof
    /// field is encoded even when zero, so `mod_revision == 0` (absent)
    /// reaches the server.
    #[prost(oneof = "TargetUnion", tags = "4, 5, 6, 7")]
    pub target_union: Option<TargetUnion>,
}

/// What a [`Compare`] compares against.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum TargetUnion {
    /// A version.
    #[prost(int64, tag = "4")]
    Version(i64),
    /// A create revision.
    #[prost(int64, tag = "5")]
    CreateRevision(i64),
    /// A mod revision.
    #[prost(int64, tag = "6")]
    ModRevision(i64),
    /// A value.
    #[prost(bytes, tag = "7")]
    Value(Vec<u8>),
}

impl Compare {
    /// `key`'s mod revision equals `rev` (0: the key is absent).
    pub fn mod_revision_is(key: Vec<u8>, rev: i64) -> Compare {
        Compare {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Mod as i32,
            key,
            target_union: Some(TargetUnion::ModRevision(rev)),
        }
    }

    /// `key`'s value equals `value`.
    pub fn value_is(key: Vec<u8>, value: Vec<u8>) -> Compare {
        Compare {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Value as i32,
            key,
            target_union: Some(TargetUnion::Value(value)),
        }
    }
}

impl RequestOp {
    /// A linearizable read of one key.
    pub fn get(key: Vec<u8>) -> RequestOp {
        RequestOp {
            request: Some(Request::Range(RangeRequest {
                key,
                ..RangeRequest::default()
            })),
        }
    }

    /// A put.
    pub fn put(key: Vec<u8>, value: Vec<u8>) -> RequestOp {
        RequestOp {
            request: Some(Request::Put(PutRequest { key, value })),
        }
    }
}

/// `KV.Txn` (`etcdserverpb.TxnRequest`): if every compare holds, the
/// success operations run, else the failure ones, atomically at one
/// revision.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnRequest {
    /// The guards (a conjunction).
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    /// Run when every guard holds.
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
    /// Run otherwise.
    #[prost(message, repeated, tag = "3")]
    pub failure: Vec<RequestOp>,
}

/// The answer to [`TxnRequest`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnResponse {
    /// The header (its revision is the transaction's).
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// Whether every compare held.
    #[prost(bool, tag = "2")]
    pub succeeded: bool,
    /// One answer per operation of the branch that ran.
    #[prost(message, repeated, tag = "3")]
    pub responses: Vec<ResponseOp>,
}

/// A cluster member (`etcdserverpb.Member`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Member {
    /// The member's id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its name (empty: added, never started).
    #[prost(string, tag = "2")]
    pub name: String,
    /// Its peer URLs.
    #[prost(string, repeated, tag = "3")]
    pub peer_urls: Vec<String>,
    /// Its client URLs.
    #[prost(string, repeated, tag = "4")]
    pub client_urls: Vec<String>,
}

/// `Cluster.MemberList`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemberListRequest {}

/// The answer to [`MemberListRequest`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemberListResponse {
    /// The header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// Every member.
    #[prost(message, repeated, tag = "2")]
    pub members: Vec<Member>,
}

/// `Cluster.MemberAdd`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemberAddRequest {
    /// The new member's peer URLs.
    #[prost(string, repeated, tag = "1")]
    pub peer_urls: Vec<String>,
}

/// The answer to [`MemberAddRequest`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemberAddResponse {
    /// The header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// The member added.
    #[prost(message, optional, tag = "2")]
    pub member: Option<Member>,
    /// Every member after the add (the new one without a name).
    #[prost(message, repeated, tag = "3")]
    pub members: Vec<Member>,
}

/// `Cluster.MemberRemove`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemberRemoveRequest {
    /// The id of the member to remove.
    #[prost(uint64, tag = "1")]
    pub id: u64,
}

/// The answer to [`MemberRemoveRequest`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemberRemoveResponse {
    /// The header.
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// Every member after the removal.
    #[prost(message, repeated, tag = "2")]
    pub members: Vec<Member>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use prost::Message;

    /// `compare { target: MOD, key: "k", mod_revision: 0 }`, `success {
    /// request_put { key: "k", value: "1" } }`, encoded by hand from the
    /// field numbers: a tag byte is `field << 3 | wire type` (0 varint,
    /// 2 length-delimited).
    const TXN_BYTES: &[u8] = &[
        0x0a, 0x07, // TxnRequest.compare (1, len) of 7 bytes:
        0x10, 0x02, //   Compare.target (2) = MOD (result EQUAL = 0 is omitted)
        0x1a, 0x01, 0x6b, //   Compare.key (3) = "k"
        0x30, 0x00, //   Compare.mod_revision (6) = 0, kept: a oneof field
        0x12, 0x08, // TxnRequest.success (2, len) of 8 bytes:
        0x12, 0x06, //   RequestOp.request_put (2, len) of 6 bytes:
        0x0a, 0x01, 0x6b, //     PutRequest.key (1) = "k"
        0x12, 0x01, 0x31, //     PutRequest.value (2) = "1"
    ];

    #[test]
    fn a_txn_request_encodes_to_the_bytes_derived_from_the_proto() {
        let txn = TxnRequest {
            compare: vec![Compare::mod_revision_is(b"k".to_vec(), 0)],
            success: vec![RequestOp::put(b"k".to_vec(), b"1".to_vec())],
            failure: vec![],
        };
        assert_eq!(txn.encode_to_vec(), TXN_BYTES);
        assert_eq!(TxnRequest::decode(TXN_BYTES).unwrap(), txn);
    }

    #[test]
    fn reads_and_value_compares_encode_their_field_numbers() {
        let txn = TxnRequest {
            compare: vec![Compare::value_is(b"k".to_vec(), b"7".to_vec())],
            success: vec![RequestOp::get(b"k".to_vec())],
            failure: vec![],
        };
        let expect: &[u8] = &[
            0x0a, 0x08, 0x10, 0x03, 0x1a, 0x01, 0x6b, 0x3a, 0x01,
            0x37, // target VALUE, value (7) "7"
            0x12, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0x6b, // request_range (1) { key "k" }
        ];
        assert_eq!(txn.encode_to_vec(), expect);
        let del = DeleteRangeRequest {
            key: b"a/".to_vec(),
            range_end: b"a0".to_vec(),
        };
        assert_eq!(
            del.encode_to_vec(),
            [0x0a, 0x02, b'a', b'/', 0x12, 0x02, b'a', b'0']
        );
        assert_eq!(
            MemberRemoveRequest { id: 300 }.encode_to_vec(),
            [0x08, 0xac, 0x02]
        );
    }

    #[test]
    fn a_hand_encoded_txn_response_decodes() {
        let bytes: &[u8] = &[
            0x0a, 0x02, 0x18, 0x2a, // header { revision (3): 42 }
            0x10, 0x01, // succeeded (2): true
            0x1a, 0x0e, // responses (3), 14 bytes:
            0x0a, 0x0c, //   response_range (1), 12 bytes:
            0x12, 0x0a, //     kvs (2), 10 bytes:
            0x0a, 0x01, 0x6b, //       key (1) "k"
            0x18, 0x07, //       mod_revision (3): 7
            0x2a, 0x03, b'1', b',', b'2', //       value (5) "1,2"
            0x98, 0x01, 0x05, // an unknown field (19, varint): skipped
        ];
        let r = TxnResponse::decode(bytes).unwrap();
        assert_eq!(r.header.as_ref().unwrap().revision, 42);
        assert!(r.succeeded);
        let Some(Response::Range(range)) = &r.responses[0].response else {
            panic!("not a range answer: {r:?}")
        };
        assert_eq!(range.kvs[0].mod_revision, 7);
        assert_eq!(range.kvs[0].value, b"1,2");
        assert!(TxnResponse::decode(&bytes[..5]).is_err(), "truncated");
    }

    #[test]
    fn member_answers_decode_ids_above_i64_max() {
        let m = Member {
            id: 13_803_658_152_347_727_308,
            name: String::new(),
            peer_urls: vec!["http://10.99.0.3:2380".into()],
            client_urls: vec![],
        };
        let add = MemberAddResponse {
            header: None,
            member: Some(m.clone()),
            members: vec![m.clone()],
        };
        let back = MemberAddResponse::decode(add.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back.members[0].id, 13_803_658_152_347_727_308);
        assert_eq!(back.member, Some(m));
    }
}
