//! Predicate reads: the one micro-op kind that reads a set of rows chosen by
//! a predicate rather than one key (issue 16).
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
//! Invariant: this module and its three encoders/decoders (`convert.rs`,
//! `op_writer.rs`) are the only places in `store` that know the shape.

use crate::data::Data;
use crate::history::{Atom, Key, Val};

/// The micro-op function name (`rr`: range read).
pub const RANGE_READ: &str = "rr";

/// `["rr", [lo, hi], rows]`: the rows whose key lies in `lo..=hi`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RangeRead {
    /// Inclusive lower bound.
    pub lo: Key,
    /// Inclusive upper bound.
    pub hi: Key,
    /// The rows returned (key, its list), in key order; `None` until known.
    pub rows: Option<Vec<(Key, Vec<Val>)>>,
}

impl RangeRead {
    /// A range read whose result is not known yet.
    pub fn new(lo: i64, hi: i64) -> RangeRead {
        RangeRead {
            lo: Key(Atom::Int(lo)),
            hi: Key(Atom::Int(hi)),
            rows: None,
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

    /// The rows as data: `nil` or `[[k, [v …]] …]`.
    pub fn rows_to_data(&self) -> Data {
        match &self.rows {
            None => Data::Nil,
            Some(rows) => Data::Vec(
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
        Ok(RangeRead { lo, hi, rows })
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
