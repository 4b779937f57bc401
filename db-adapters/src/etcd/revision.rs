//! What `--version-order db` records for etcd (see [`super::client`]'s
//! module doc): each `ok` transaction's revision as `revision`, `commit-ts`
//! (`[revision, 0]` for a writer, `[revision, 1]` for a read-only
//! transaction) and, for a writer, the certificate (`txid` = revision,
//! `snapshot` = `R:R:`) that gives the checker each key's exact version
//! order.

use super::proto::ResponseHeader;
use store::Data;

/// What an `ok` transaction did: its revision and whether it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Committed {
    pub(crate) revision: i64,
    pub(crate) wrote: bool,
}

/// The extra fields an `ok` transaction records under `--version-order
/// db` (see the module doc).
pub(crate) fn revision_extra(c: Committed) -> Vec<(String, Data)> {
    let mut out = vec![
        ("revision".to_string(), Data::Int(c.revision)),
        (
            "commit-ts".to_string(),
            Data::Vec(vec![Data::Int(c.revision), Data::Int(i64::from(!c.wrote))]),
        ),
    ];
    if c.wrote {
        out.push(("txid".to_string(), Data::Int(c.revision)));
        out.push((
            "snapshot".to_string(),
            Data::Str(format!("{0}:{0}:", c.revision)),
        ));
    }
    out
}

/// A `Txn` answer's header revision (0 without a header).
pub(crate) fn header_revision(h: Option<&ResponseHeader>) -> i64 {
    h.map_or(0, |h| h.revision)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn revisions_become_commit_timestamps_and_certificates() {
        let w = revision_extra(Committed {
            revision: 9,
            wrote: true,
        });
        assert_eq!(
            w[1],
            (
                "commit-ts".to_string(),
                Data::Vec(vec![Data::Int(9), Data::Int(0)])
            )
        );
        assert_eq!(w[3], ("snapshot".to_string(), Data::Str("9:9:".into())));
        let r = revision_extra(Committed {
            revision: 9,
            wrote: false,
        });
        assert_eq!(r[0], ("revision".to_string(), Data::Int(9)));
        assert_eq!(
            r[1].1,
            Data::Vec(vec![Data::Int(9), Data::Int(1)]),
            "a reader at 9 follows the writer at 9"
        );
        assert_eq!(r.len(), 2, "a reader installs no version: no certificate");
    }

    #[test]
    fn the_header_carries_the_revision() {
        let h = ResponseHeader {
            revision: 42,
            ..ResponseHeader::default()
        };
        assert_eq!(header_revision(Some(&h)), 42);
        assert_eq!(header_revision(None), 0);
    }
}
