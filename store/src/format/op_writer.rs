//! The layout of an op that JSON and EDN share: the same fields in the same
//! order, micro-ops as `[f key value]` vectors. Each format supplies only its
//! tokens ([`Syntax`]); the walk over an [`Op`] is written once.

use crate::data::Data;
use crate::history::{Atom, MicroOp, Op, OpValue, Process, ReadValue};

/// The tokens of one text format.
pub(crate) trait Syntax {
    /// Between the items of a vector.
    const SEP: &'static str;
    /// Between the fields of a map.
    const FIELD_SEP: &'static str;
    /// The nil value.
    const NIL: &'static str;
    /// Between a map key and its value.
    const KEY_SEP: &'static str;
    /// A fixed field name and what separates it from its value.
    fn field(out: &mut String, name: &str) {
        Self::name(out, name);
        out.push_str(Self::KEY_SEP);
    }
    /// An extra (unknown) field's name, written as data would be.
    fn extra_name(out: &mut String, name: &str);
    /// An extra (unknown) field's name and separator.
    fn extra_key(out: &mut String, name: &str) {
        Self::extra_name(out, name);
        out.push_str(Self::KEY_SEP);
    }
    /// A name: a fixed field's, or one in a value position (`type`, `f`, a
    /// micro-op's function, the nemesis process).
    fn name(out: &mut String, name: &str);
    /// The `f` of an op.
    fn f(out: &mut String, name: &str) {
        Self::extra_name(out, name);
    }
    /// An atom (key or value).
    fn atom(out: &mut String, a: &Atom);
    /// Arbitrary data.
    fn data(out: &mut String, d: &Data);
}

/// A transaction's micro-ops.
pub(crate) fn write_txn<S: Syntax>(out: &mut String, m: &[MicroOp]) {
    out.push('[');
    for (i, mop) in m.iter().enumerate() {
        if i > 0 {
            out.push_str(S::SEP);
        }
        out.push('[');
        S::name(out, mop.f_name());
        out.push_str(S::SEP);
        if let MicroOp::ReadRange(r) = mop {
            S::data(out, &r.range_to_data());
            out.push_str(S::SEP);
            S::data(out, &r.value_to_data());
            out.push(']');
            continue;
        }
        S::atom(out, &mop.key().0);
        out.push_str(S::SEP);
        match mop {
            MicroOp::Append(_, v) | MicroOp::Write(_, v) => S::atom(out, &v.0),
            MicroOp::Read(_, ReadValue::Nil) | MicroOp::ReadRange(_) => out.push_str(S::NIL),
            MicroOp::Read(_, ReadValue::Scalar(v)) => S::atom(out, &v.0),
            MicroOp::Read(_, ReadValue::List(l)) => {
                out.push('[');
                for (j, v) in l.iter().enumerate() {
                    if j > 0 {
                        out.push_str(S::SEP);
                    }
                    S::atom(out, &v.0);
                }
                out.push(']');
            }
        }
        out.push(']');
    }
    out.push(']');
}

/// One op as a map (no newline).
pub(crate) fn write_op<S: Syntax>(out: &mut String, op: &Op) {
    out.push('{');
    S::field(out, "index");
    out.push_str(itoa::Buffer::new().format(op.index.0));
    if let Some(t) = op.time_ns {
        out.push_str(S::FIELD_SEP);
        S::field(out, "time");
        out.push_str(itoa::Buffer::new().format(t));
    }
    out.push_str(S::FIELD_SEP);
    S::field(out, "type");
    S::name(out, op.op_type.as_str());
    match op.process {
        Some(Process::Client(p)) => {
            out.push_str(S::FIELD_SEP);
            S::field(out, "process");
            out.push_str(itoa::Buffer::new().format(p.0));
        }
        Some(Process::Nemesis) => {
            out.push_str(S::FIELD_SEP);
            S::field(out, "process");
            S::name(out, "nemesis");
        }
        None => {}
    }
    if let Some(f) = &op.f {
        out.push_str(S::FIELD_SEP);
        S::field(out, "f");
        S::f(out, f.as_str());
    }
    out.push_str(S::FIELD_SEP);
    S::field(out, "value");
    match &op.value {
        OpValue::Txn(m) => write_txn::<S>(out, m),
        OpValue::Data(d) => S::data(out, d),
    }
    if let Some(e) = &op.error {
        out.push_str(S::FIELD_SEP);
        S::field(out, "error");
        S::data(out, e);
    }
    for (k, v) in &op.extra {
        out.push_str(S::FIELD_SEP);
        S::extra_key(out, k);
        S::data(out, v);
    }
    out.push('}');
}

/// A finite float in a form that reads back as a float (always has `.` or `e`).
pub(crate) fn float_text(f: f64) -> String {
    let s = format!("{f:?}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}
