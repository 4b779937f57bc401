//! Predicate reads: the one micro-op kind that reads a set of rows chosen by
//! a predicate rather than one key.
//!
//! A range read `SELECT k, v FROM t WHERE k BETWEEN lo AND hi` returns whole
//! rows, so for every key in the range it tells which version the
//! predicate was evaluated over: a returned row's list (a list-append
//! version), or the row's absence (the initial state). That is the
//! version set Adya's predicate dependencies need, without white-box access.
//!
//! Encoding (JSON and EDN alike, the usual `[f key value]` shape with the
//! range in the key position): `["rr", [lo, hi], rows]` /
//! `[:rr [lo hi] rows]`, where `rows` is `null`/`nil` when not yet known
//! (an invocation, an `info`) and otherwise a list of `[k, [v …]]` pairs in
//! key order, one per row returned. Bounds are inclusive.
//!
//! A count read (`rc`) is the same predicate with `count(*)` as its
//! result: `["rc", [lo, hi], n]` / `[:rc [lo hi] n]`, `n` a non-negative
//! integer or `null`/`nil` while unknown. It says how many keys of the
//! range existed in the version set, not which: the checker derives only
//! the edges a count pins down (none seen, or all seen; see
//! `checker::analysis::predicate`). Both kinds are one [`RangeRead`] (one
//! `MicroOp::ReadRange`), told apart by [`RangeKind`].
//!
//! Invariant: this module and its three encoders/decoders (`convert.rs`,
//! `op_writer.rs`) are the only places in `store` that know the shape.

use crate::data::Data;
use crate::history::{Atom, Key, Val};

/// The micro-op function name (`rr`: range read).
pub const RANGE_READ: &str = "rr";

/// The micro-op function name of a count read (`rc`: range count).
pub const RANGE_COUNT: &str = "rc";

/// What a predicate read returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RangeKind {
    /// The rows themselves (`rr`, in [`RangeRead::rows`]).
    Rows,
    /// `count(*)` of the rows (`rc`); `None` until known.
    Count(Option<u64>),
}

/// `["rr", [lo, hi], rows]`: the rows whose key lies in `lo..=hi`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RangeRead {
    /// Inclusive lower bound.
    pub lo: Key,
    /// Inclusive upper bound.
    pub hi: Key,
    /// The rows returned (key, its list), in key order; `None` until known,
    /// and always for a count read.
    pub rows: Option<Vec<(Key, Vec<Val>)>>,
    /// Rows or a count.
    pub kind: RangeKind,
}

impl RangeRead {
    /// A range read whose result is not known yet.
    pub fn new(lo: i64, hi: i64) -> RangeRead {
        RangeRead {
            lo: Key(Atom::Int(lo)),
            hi: Key(Atom::Int(hi)),
            rows: None,
            kind: RangeKind::Rows,
        }
    }

    /// A count read (`count(*)` over `lo..=hi`) whose result is not known yet.
    pub fn count(lo: i64, hi: i64) -> RangeRead {
        RangeRead {
            kind: RangeKind::Count(None),
            ..RangeRead::new(lo, hi)
        }
    }

    /// The micro-op function name: `rr` or `rc`.
    pub fn f_name(&self) -> &'static str {
        match self.kind {
            RangeKind::Rows => RANGE_READ,
            RangeKind::Count(_) => RANGE_COUNT,
        }
    }

    /// Whether this is a count read.
    pub fn is_count(&self) -> bool {
        matches!(self.kind, RangeKind::Count(_))
    }

    /// Whether the result is known (rows or count).
    pub fn is_known(&self) -> bool {
        match self.kind {
            RangeKind::Rows => self.rows.is_some(),
            RangeKind::Count(n) => n.is_some(),
        }
    }

    /// Whether `k` satisfies the predicate (`lo <= k <= hi`); keys of
    /// different atom kinds never match.
    pub fn matches(&self, k: &Key) -> bool {
        match (&self.lo.0, &self.hi.0, &k.0) {
            (Atom::Int(lo), Atom::Int(hi), Atom::Int(x)) => lo <= x && x <= hi,
            (Atom::Str(lo), Atom::Str(hi), Atom::Str(x)) => lo <= x && x <= hi,
            _ => false,
        }
    }

    /// The range as data: `[lo, hi]`.
    pub fn range_to_data(&self) -> Data {
        Data::Vec(vec![atom_data(&self.lo.0), atom_data(&self.hi.0)])
    }

    /// The result as data: `nil`, `[[k, [v …]] …]` or the count.
    pub fn value_to_data(&self) -> Data {
        match (&self.kind, &self.rows) {
            (RangeKind::Count(Some(n)), _) => Data::Int(i64::try_from(*n).unwrap_or(i64::MAX)),
            (RangeKind::Count(None), _) | (RangeKind::Rows, None) => Data::Nil,
            (RangeKind::Rows, Some(rows)) => Data::Vec(
                rows.iter()
                    .map(|(k, l)| {
                        Data::Vec(vec![
                            atom_data(&k.0),
                            Data::Vec(l.iter().map(|v| atom_data(&v.0)).collect()),
                        ])
                    })
                    .collect(),
            ),
        }
    }

    /// Decodes `[f, [lo, hi], value]` where `f` is `rr` or `rc`; `None` for
    /// any other `f` (not a predicate read).
    pub fn decode(f: &str, range: &Data, value: &Data) -> Option<Result<RangeRead, String>> {
        match f {
            RANGE_READ => Some(RangeRead::from_data(range, value)),
            RANGE_COUNT => Some(RangeRead::count_from_data(range, value)),
            _ => None,
        }
    }

    /// Decodes a count read's `[lo, hi]` and `n`.
    pub fn count_from_data(range: &Data, n: &Data) -> Result<RangeRead, String> {
        let mut r = RangeRead::from_data(range, &Data::Nil)?;
        r.kind =
            RangeKind::Count(match n {
                Data::Nil => None,
                Data::Int(i) => Some(u64::try_from(*i).map_err(|_| {
                    format!("range count: expected a count of rows >= 0, found {i}")
                })?),
                _ => return Err("range count: the count must be null or an integer".into()),
            });
        Ok(r)
    }

    /// Decodes `[lo, hi]` and the rows; errors name the part that is wrong.
    pub fn from_data(range: &Data, rows: &Data) -> Result<RangeRead, String> {
        let Data::Vec(b) = range else {
            return Err("range read: expected [lo, hi] as its key".into());
        };
        let [lo, hi] = b.as_slice() else {
            return Err(format!(
                "range read: expected [lo, hi], found {} bounds",
                b.len()
            ));
        };
        let lo = Key(atom(lo).map_err(|e| format!("range read lower bound: {e}"))?);
        let hi = Key(atom(hi).map_err(|e| format!("range read upper bound: {e}"))?);
        let rows = match rows {
            Data::Nil => None,
            Data::Vec(rs) => Some(
                rs.iter()
                    .enumerate()
                    .map(|(i, r)| row(r).map_err(|e| format!("range read row {i}: {e}")))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => return Err("range read: rows must be null or a list of [k, [v …]]".into()),
        };
        Ok(RangeRead {
            lo,
            hi,
            rows,
            kind: RangeKind::Rows,
        })
    }
}

fn row(d: &Data) -> Result<(Key, Vec<Val>), String> {
    let Data::Vec(p) = d else {
        return Err("expected [k, [v …]]".into());
    };
    let [k, Data::Vec(l)] = p.as_slice() else {
        return Err("expected [k, [v …]]".into());
    };
    let vals = l
        .iter()
        .map(|v| atom(v).map(Val))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((Key(atom(k)?), vals))
}

fn atom(d: &Data) -> Result<Atom, String> {
    match d {
        Data::Int(i) => Ok(Atom::Int(*i)),
        Data::Str(s) => Ok(Atom::Str(s.as_str().into())),
        Data::Keyword(s) => Ok(Atom::Keyword(s.as_str().into())),
        _ => Err("expected an integer, string or keyword".into()),
    }
}

fn atom_data(a: &Atom) -> Data {
    match a {
        Atom::Int(i) => Data::Int(*i),
        Atom::Str(s) => Data::Str(s.to_string()),
        Atom::Keyword(s) => Data::Keyword(s.to_string()),
    }
}
