//! What the fields of an op mean, independent of the file syntax.
//!
//! Both readers end here: EDN builds a [`Data`] map per op and calls
//! [`op_from_entries`]; the JSON reader parses the common fields directly (for
//! speed) but uses the same rules for everything else through [`RawOp`], so
//! the two formats cannot drift apart.

use crate::data::Data;
use crate::history::{
    Atom, F, Key, MicroOp, Op, OpIndex, OpType, OpValue, Process, ProcessId, ReadValue, Val,
};

/// An op's fields as found, before defaults are applied.
#[derive(Debug, Default)]
pub(crate) struct RawOp {
    pub index: Option<u64>,
    pub time_ns: Option<i64>,
    pub op_type: Option<OpType>,
    pub process: Option<Process>,
    pub f: Option<F>,
    pub value: Option<RawValue>,
    pub error: Option<Data>,
    pub extra: Vec<(String, Data)>,
    /// Names seen so far, to reject duplicates.
    pub seen: u8,
}

/// A value parsed either straight into micro-ops (the fast path) or as data.
#[derive(Debug)]
pub(crate) enum RawValue {
    Txn(Vec<MicroOp>),
    Data(Data),
}

/// An op of the usual shape, read by [`super::json::Json::usual_op`]
/// without building an [`Op`]: a client transaction (`f` `"txn"`) whose
/// micro-ops are in the reader's scratch vector, every other field absent.
/// [`UsualOp::into_op`] gives the op the general path reads from the same
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UsualOp {
    pub index: u64,
    pub time_ns: Option<i64>,
    pub op_type: OpType,
    pub process: u64,
}

impl UsualOp {
    /// The op, its micro-ops moved out of `mops` into a vector of exactly
    /// their number.
    pub fn into_op(self, mops: &mut Vec<MicroOp>) -> Op {
        let mut exact = Vec::with_capacity(mops.len());
        exact.append(mops);
        Op {
            index: OpIndex(self.index),
            time_ns: self.time_ns,
            op_type: self.op_type,
            process: Some(Process::Client(ProcessId(self.process))),
            f: Some(F::Txn),
            value: OpValue::Txn(exact),
            error: None,
            extra: crate::history::Extra::new(),
        }
    }
}

/// Bits of [`RawOp::seen`].
pub(crate) const SEEN_INDEX: u8 = 1;
pub(crate) const SEEN_TIME: u8 = 2;
pub(crate) const SEEN_TYPE: u8 = 4;
pub(crate) const SEEN_PROCESS: u8 = 8;
pub(crate) const SEEN_F: u8 = 16;
pub(crate) const SEEN_VALUE: u8 = 32;
pub(crate) const SEEN_ERROR: u8 = 64;
/// The six fields an op of the usual shape ([`UsualOp`]) may have.
pub(crate) const SEEN_ALL_USUAL: u8 =
    SEEN_INDEX | SEEN_TIME | SEEN_TYPE | SEEN_PROCESS | SEEN_F | SEEN_VALUE;

impl RawOp {
    /// Marks field `bit` (named `name`) as seen; a second time is an error.
    pub fn mark(&mut self, bit: u8, name: &str) -> Result<(), String> {
        if self.seen & bit != 0 {
            return Err(format!("duplicate field `{name}`"));
        }
        self.seen |= bit;
        Ok(())
    }

    /// Sets the field called `name` from a data value.
    pub fn set(&mut self, name: &str, v: Data) -> Result<(), String> {
        match name {
            "index" => {
                self.mark(SEEN_INDEX, name)?;
                self.index = index_from_data(&v)?;
            }
            "time" => {
                self.mark(SEEN_TIME, name)?;
                self.time_ns = time_from_data(&v)?;
            }
            "type" => {
                self.mark(SEEN_TYPE, name)?;
                self.op_type = Some(type_from_data(&v)?);
            }
            "process" => {
                self.mark(SEEN_PROCESS, name)?;
                self.process = process_from_data(&v)?;
            }
            "f" => {
                self.mark(SEEN_F, name)?;
                self.f = f_from_data(&v)?;
            }
            "value" => {
                self.mark(SEEN_VALUE, name)?;
                self.value = Some(RawValue::Data(v));
            }
            "error" => {
                self.mark(SEEN_ERROR, name)?;
                self.error = Some(v);
            }
            other => {
                if self.extra.iter().any(|(k, _)| k == other) {
                    return Err(format!("duplicate field `{other}`"));
                }
                self.extra.push((other.to_string(), v));
            }
        }
        Ok(())
    }

    /// [`RawOp::set`] of the integer `i` to `index`, without building the data.
    pub fn set_index(&mut self, i: i64) -> Result<(), String> {
        self.mark(SEEN_INDEX, "index")?;
        self.index = index_from_data(&Data::Int(i))?;
        Ok(())
    }

    /// [`RawOp::set`] of the integer `i` to `time`, without building the data.
    pub fn set_time(&mut self, i: i64) -> Result<(), String> {
        self.mark(SEEN_TIME, "time")?;
        self.time_ns = time_from_int(i);
        Ok(())
    }

    /// [`RawOp::set`] of the integer `i` to `process`, without building the data.
    pub fn set_process(&mut self, i: i64) -> Result<(), String> {
        self.mark(SEEN_PROCESS, "process")?;
        self.process = Some(process_from_int(i)?);
        Ok(())
    }

    /// Applies defaults and the value rules; `next_index` is used when the
    /// op had no index (indices are then assigned in file order).
    pub fn finish(self, next_index: u64) -> Result<Op, String> {
        let op_type = self.op_type.ok_or("missing field `type`")?;
        let value = match self.value {
            None => OpValue::Data(Box::new(Data::Nil)),
            Some(v) => value_for(self.f.as_ref(), v)?,
        };
        Ok(Op {
            index: OpIndex(self.index.unwrap_or(next_index)),
            time_ns: self.time_ns,
            op_type,
            process: self.process,
            f: self.f,
            value,
            error: self.error.map(Box::new),
            extra: self.extra.into(),
        })
    }
}

/// Builds an op from the entries of an op map (EDN, or JSON's slow path).
pub(crate) fn op_from_entries(entries: Vec<(Data, Data)>, next_index: u64) -> Result<Op, String> {
    let mut raw = RawOp::default();
    for (k, v) in entries {
        let name = match k {
            Data::Keyword(s) | Data::Str(s) => s,
            other => {
                return Err(format!(
                    "op field names must be keywords, found {}",
                    kind(&other)
                ));
            }
        };
        raw.set(&name, v).map_err(|e| e.to_string())?;
    }
    raw.finish(next_index)
}

/// Builds an op from a whole op form (a map, or a tagged record such as
/// `#jepsen.history.Op{…}`).
pub(crate) fn op_from_data(d: Data, next_index: u64) -> Result<Op, String> {
    match d {
        Data::Map(entries) => op_from_entries(entries, next_index),
        Data::Tagged(_, inner) => match *inner {
            Data::Map(entries) => op_from_entries(entries, next_index),
            other => Err(format!(
                "expected an op map, found a tagged {}",
                kind(&other)
            )),
        },
        other => Err(format!("expected an op map, found {}", kind(&other))),
    }
}

/// A short name of what kind of value `d` is, for error messages. A
/// number is named with its value: `1e29` or `100000000000000000000000000000`
/// is "a number too large for a 64-bit integer", not "a float".
pub(crate) fn kind(d: &Data) -> std::borrow::Cow<'static, str> {
    use std::borrow::Cow;
    Cow::Borrowed(match d {
        Data::Nil => "nil",
        Data::Bool(_) => "a boolean",
        Data::Int(_) => "an integer",
        Data::Float(f) => return Cow::Owned(number_kind(*f)),
        Data::Str(_) => "a string",
        Data::Keyword(_) => "a keyword",
        Data::Symbol(_) => "a symbol",
        Data::Vec(_) => "a list",
        Data::Set(_) => "a set",
        Data::Map(_) => "a map",
        Data::Tagged(..) => "a tagged value",
    })
}

/// What a number that did not read as a 64-bit integer is.
fn number_kind(f: f64) -> String {
    if !f.is_finite() {
        format!("a non-finite number ({f})")
    } else if f.fract() == 0.0 && f.abs() >= 9.223_372_036_854_776e18 {
        format!("a number too large for a 64-bit integer ({f:e})")
    } else if f.fract() == 0.0 {
        format!("a number written as a float ({f:?}), not an integer")
    } else {
        format!("a fractional number ({f})")
    }
}

fn index_from_data(v: &Data) -> Result<Option<u64>, String> {
    match v {
        Data::Nil => Ok(None),
        Data::Int(i) if *i >= 0 => Ok(Some(*i as u64)),
        Data::Int(i) => Err(format!(
            "field `index`: expected a non-negative integer, found {i}"
        )),
        other => Err(format!(
            "field `index`: expected a non-negative integer, found {}",
            kind(other)
        )),
    }
}

/// Elle writes `-1` for an absent time; we keep `None`.
pub(crate) fn time_from_int(i: i64) -> Option<i64> {
    (i != -1).then_some(i)
}

fn time_from_data(v: &Data) -> Result<Option<i64>, String> {
    match v {
        Data::Nil => Ok(None),
        Data::Int(i) => Ok(time_from_int(*i)),
        other => Err(format!(
            "field `time`: expected an integer (nanoseconds), found {}",
            kind(other)
        )),
    }
}

pub(crate) fn type_from_name(s: &str) -> Result<OpType, String> {
    OpType::parse(s).ok_or_else(|| {
        format!("field `type`: unknown op type {s:?} (expected invoke, ok, fail or info)")
    })
}

fn type_from_data(v: &Data) -> Result<OpType, String> {
    match v {
        Data::Str(s) | Data::Keyword(s) => type_from_name(s),
        other => Err(format!(
            "field `type`: expected invoke, ok, fail or info, found {}",
            kind(other)
        )),
    }
}

pub(crate) fn process_from_int(i: i64) -> Result<Process, String> {
    if i < 0 {
        return Err(format!("field `process`: negative process {i}"));
    }
    Ok(Process::Client(ProcessId(i as u64)))
}

pub(crate) fn process_from_name(s: &str) -> Result<Process, String> {
    if s == "nemesis" {
        Ok(Process::Nemesis)
    } else {
        Err(format!(
            "field `process`: expected an integer or nemesis, found {s:?}"
        ))
    }
}

fn process_from_data(v: &Data) -> Result<Option<Process>, String> {
    match v {
        Data::Nil => Ok(None),
        Data::Int(i) => process_from_int(*i).map(Some),
        Data::Str(s) | Data::Keyword(s) => process_from_name(s).map(Some),
        other => Err(format!(
            "field `process`: expected an integer or nemesis, found {}",
            kind(other)
        )),
    }
}

fn f_from_data(v: &Data) -> Result<Option<F>, String> {
    match v {
        Data::Nil => Ok(None),
        Data::Str(s) | Data::Keyword(s) => Ok(Some(F::parse(s))),
        other => Err(format!("field `f`: expected a name, found {}", kind(other))),
    }
}

/// The rule deciding what an op's value is: client ops (`f` absent or `txn`)
/// carry a transaction or nil; Jepsen's workload functions (`read`,
/// `transfer`, `add`, …) a transaction when their value is one, else data;
/// every other `f` carries free-form data.
fn value_for(f: Option<&F>, v: RawValue) -> Result<OpValue, String> {
    // Jepsen's workload functions carry micro-ops when harness wrote them
    // (workloads' `jepsen` encoding), Jepsen's own data otherwise.
    if matches!(
        f,
        Some(F::Read | F::Write | F::Add | F::Transfer | F::Insert | F::Delete | F::Inc)
    ) {
        return Ok(match v {
            RawValue::Txn(m) => OpValue::Txn(m),
            RawValue::Data(d) => match txn_from_data(&d) {
                Ok(m) if !m.is_empty() => OpValue::Txn(m),
                _ => OpValue::Data(Box::new(d)),
            },
        });
    }
    let is_txn_f = matches!(f, None | Some(F::Txn));
    match (is_txn_f, v) {
        (true, RawValue::Txn(m)) => Ok(OpValue::Txn(m)),
        (true, RawValue::Data(Data::Nil)) => Ok(OpValue::Data(Box::new(Data::Nil))),
        (true, RawValue::Data(d)) => txn_from_data(&d).map(OpValue::Txn),
        (false, RawValue::Txn(m)) => Ok(OpValue::Data(Box::new(txn_to_data(&m, false)))),
        (false, RawValue::Data(d)) => Ok(OpValue::Data(Box::new(d))),
    }
}

/// A transaction from a list of `[f k v]` micro-ops.
pub(crate) fn txn_from_data(d: &Data) -> Result<Vec<MicroOp>, String> {
    let Data::Vec(items) = d else {
        return Err(format!(
            "field `value`: expected a transaction (a list of [f, key, value] micro-ops), found {}",
            kind(d)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, m)| {
            micro_op_from_data(m).map_err(|e| format!("field `value`: micro-op {i}: {e}"))
        })
        .collect()
}

fn micro_op_from_data(d: &Data) -> Result<MicroOp, String> {
    let Data::Vec(parts) = d else {
        return Err(format!("expected [f, key, value], found {}", kind(d)));
    };
    let [f, k, v] = parts.as_slice() else {
        return Err(format!(
            "expected [f, key, value], found {} elements",
            parts.len()
        ));
    };
    let fname = match f {
        Data::Str(s) | Data::Keyword(s) => s.as_str(),
        other => {
            return Err(format!(
                "micro-op function must be a name, found {}",
                kind(other)
            ));
        }
    };
    if let Some(r) = crate::predicate::RangeRead::decode(fname, k, v) {
        return r.map(|r| MicroOp::ReadRange(Box::new(r)));
    }
    let key = Key(atom_from_data(k).map_err(|e| format!("key: {e}"))?);
    match fname {
        "append" => Ok(MicroOp::Append(
            key,
            Val(atom_from_data(v).map_err(|e| format!("value: {e}"))?),
        )),
        "w" => Ok(MicroOp::Write(
            key,
            Val(atom_from_data(v).map_err(|e| format!("value: {e}"))?),
        )),
        "r" => Ok(MicroOp::Read(key, read_value_from_data(v)?)),
        other => Err(format!(
            "unknown micro-op function {other:?} (expected append, r, rc, rr or w)"
        )),
    }
}

fn read_value_from_data(v: &Data) -> Result<ReadValue, String> {
    match v {
        Data::Nil => Ok(ReadValue::Nil),
        Data::Vec(items) => items
            .iter()
            .map(|x| atom_from_data(x).map(Val))
            .collect::<Result<Vec<_>, _>>()
            .map(|l| ReadValue::List(l.into()))
            .map_err(|e| format!("read list element: {e}")),
        other => atom_from_data(other)
            .map(|a| ReadValue::Scalar(Val(a)))
            .map_err(|e| format!("read value: {e}")),
    }
}

fn atom_from_data(d: &Data) -> Result<Atom, String> {
    match d {
        Data::Int(i) => Ok(Atom::Int(*i)),
        Data::Str(s) => Ok(Atom::Str(s.as_str().into())),
        Data::Keyword(s) => Ok(Atom::Keyword(s.as_str().into())),
        other => Err(format!(
            "expected an integer, string or keyword, found {}",
            kind(other)
        )),
    }
}

pub(crate) fn atom_to_data(a: &Atom) -> Data {
    match a {
        Atom::Int(i) => Data::Int(*i),
        Atom::Str(s) => Data::Str(s.to_string()),
        Atom::Keyword(s) => Data::Keyword(s.to_string()),
    }
}

/// Micro-ops as data; function names as keywords (EDN) or strings (JSON).
pub(crate) fn txn_to_data(m: &[MicroOp], keyword_names: bool) -> Data {
    Data::Vec(
        m.iter()
            .map(|mop| {
                let name = mop.f_name().to_string();
                let f = if keyword_names {
                    Data::Keyword(name)
                } else {
                    Data::Str(name)
                };
                if let MicroOp::ReadRange(r) = mop {
                    return Data::Vec(vec![f, r.range_to_data(), r.value_to_data()]);
                }
                let v = match mop {
                    MicroOp::ReadRange(_) => Data::Nil,
                    MicroOp::Append(_, v) | MicroOp::Write(_, v) => atom_to_data(&v.0),
                    MicroOp::Read(_, ReadValue::Nil) => Data::Nil,
                    MicroOp::Read(_, ReadValue::Scalar(v)) => atom_to_data(&v.0),
                    MicroOp::Read(_, ReadValue::List(l)) => {
                        Data::Vec(l.iter().map(|v| atom_to_data(&v.0)).collect())
                    }
                };
                Data::Vec(vec![f, atom_to_data(&mop.key().0), v])
            })
            .collect(),
    )
}
