//! Anomalies as data: Elle's maps (`Data`, hence EDN) and JSON.

use super::text::render_expected;
use super::{Anomaly, Evidence, Step};
use serde::ser::{Serialize, Serializer};
use serde_json::{Map, Value, json};
use store::{Atom, Data, Key, OpIndex, ReadValue, Val};

fn atom_data(a: &Atom) -> Data {
    match a {
        Atom::Int(i) => Data::Int(*i),
        // Keys and values are written as Elle's JSON files spell them.
        Atom::Str(s) => Data::Str(s.to_string()),
        Atom::Keyword(k) => Data::Str(k.to_string()),
    }
}

fn vals_data(v: &[Val]) -> Data {
    Data::Vec(v.iter().map(|x| atom_data(&x.0)).collect())
}

fn read_data(r: &ReadValue) -> Data {
    match r {
        ReadValue::Nil => Data::Nil,
        ReadValue::List(l) => vals_data(l),
        ReadValue::Scalar(v) => atom_data(&v.0),
    }
}

fn int(i: impl TryInto<i64>) -> Data {
    i.try_into().map_or(Data::Nil, Data::Int)
}

fn ops_data(ops: &[OpIndex]) -> Data {
    Data::Vec(ops.iter().map(|o| int(o.0)).collect())
}

fn opt_val_data(v: &Option<Val>) -> Data {
    v.as_ref().map_or(Data::Nil, |v| atom_data(&v.0))
}

/// A result map: keyword keys, sorted by name (the order Elle's JSON keys
/// come out in, kept for EDN too).
pub(crate) fn map(mut entries: Vec<(&str, Data)>) -> Data {
    entries.sort_by(|a, b| a.0.cmp(b.0));
    Data::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Data::Keyword(k.to_string()), v))
            .collect(),
    )
}

/// `d` as JSON: keywords become strings.
pub(crate) fn data_to_json(d: &Data) -> Value {
    match d {
        Data::Nil => Value::Null,
        Data::Bool(b) => Value::Bool(*b),
        Data::Int(i) => json!(i),
        Data::Float(f) => json!(f),
        Data::Str(s) | Data::Keyword(s) | Data::Symbol(s) => Value::String(s.clone()),
        Data::Vec(v) | Data::Set(v) => Value::Array(v.iter().map(data_to_json).collect()),
        Data::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Data::Str(s) | Data::Keyword(s) | Data::Symbol(s) => s.clone(),
                        other => data_to_json(other).to_string(),
                    };
                    (key, data_to_json(v))
                })
                .collect::<Map<String, Value>>(),
        ),
        Data::Tagged(_, v) => data_to_json(v),
    }
}

impl Step {
    /// Elle's step map (`type`, `from`, `to`, `key`, `value`, `value'`,
    /// `a-mop-index`, `b-mop-index`, `process`, `a'`, `b`).
    pub fn to_data(&self) -> Data {
        let (from, to) = self.ends();
        let mut m = vec![
            ("type", Data::Keyword(self.rel().name().to_string())),
            ("from", int(from.0)),
            ("to", int(to.0)),
        ];
        match self {
            Step::Ww(d) | Step::Wr(d) | Step::Rw(d) => {
                if let Some(site) = &d.site {
                    m.push(("key", atom_data(&site.key.0)));
                    m.push(("value", opt_val_data(&d.value)));
                }
                if let Some(v) = &d.value2 {
                    m.push(("value'", atom_data(&v.0)));
                }
                if let Some(site) = &d.site {
                    m.push(("a-mop-index", int(site.a_mop)));
                    m.push(("b-mop-index", int(site.b_mop)));
                }
                if let Some(p) = &d.predicate {
                    m.push((
                        "predicate",
                        map(vec![
                            (
                                "range",
                                Data::Vec(vec![atom_data(&p.lo.0), atom_data(&p.hi.0)]),
                            ),
                            ("row", atom_data(&p.row.0)),
                            ("seen", Data::Bool(p.seen)),
                            ("count", p.count.map_or(Data::Nil, int)),
                        ]),
                    ));
                }
                if let Some(x) = &d.derived {
                    m.push((
                        "derived",
                        map(vec![
                            ("refuted", x.refuted.to_data()),
                            ("cycle", ops_data(&x.cycle)),
                            (
                                "rels",
                                Data::Vec(
                                    x.rels
                                        .iter()
                                        .map(|r| Data::Str(r.name().to_string()))
                                        .collect(),
                                ),
                            ),
                            ("assumed", Data::Bool(x.assumed)),
                        ]),
                    ));
                }
            }
            Step::Process(p) => {
                if let Some(p) = p.process {
                    m.push(("process", int(p)));
                }
            }
            Step::Realtime(r) => {
                if let Some((a, b)) = r.ops {
                    m.push(("a'", int(a.0)));
                    m.push(("b", int(b.0)));
                }
            }
        }
        map(m)
    }

    /// [`Step::to_data`] as JSON.
    pub fn to_json(&self) -> Value {
        data_to_json(&self.to_data())
    }
}

impl Anomaly {
    /// Elle-like keys (`type`, `cycle`, `steps`, `op`, `mop`, `key`, …);
    /// names (`type`) are keywords.
    pub fn to_data(&self) -> Data {
        let mut m = vec![("type", Data::Keyword(self.kind.name().to_string()))];
        match &self.evidence {
            Evidence::Cycle { cycle, steps } => {
                m.push(("cycle", ops_data(cycle)));
                m.push((
                    "steps",
                    Data::Vec(steps.iter().map(Step::to_data).collect()),
                ));
            }
            Evidence::Read {
                op,
                mop,
                key,
                element,
                writer,
            } => {
                read_site(&mut m, *op, *mop, key);
                m.push(("element", atom_data(&element.0)));
                m.push(("writer", writer.map_or(Data::Nil, |w| int(w.0))));
            }
            Evidence::CountMiss {
                op,
                mop,
                range,
                count,
                bounds,
            } => {
                m.push(("op", int(op.0)));
                m.push(("mop", int(*mop)));
                m.push((
                    "range",
                    Data::Vec(range.iter().map(|k| atom_data(&k.0)).collect()),
                ));
                m.push(("count", int(*count)));
                m.push((
                    "bounds",
                    Data::Vec(bounds.iter().map(|&b| int(b)).collect()),
                ));
            }
            Evidence::Replay {
                op,
                mop,
                key,
                expected,
            } => {
                read_site(&mut m, *op, *mop, key);
                m.push(("expected", Data::Str(expected.clone())));
            }
            Evidence::Internal {
                op,
                mop,
                key,
                expected,
            } => {
                read_site(&mut m, *op, *mop, key);
                m.push(("expected", Data::Str(render_expected(expected))));
            }
            Evidence::DuplicateElements {
                op,
                mop,
                key,
                duplicates,
            } => {
                read_site(&mut m, *op, *mop, key);
                m.push((
                    "duplicates",
                    Data::Vec(
                        duplicates
                            .iter()
                            .map(|(v, n)| Data::Vec(vec![atom_data(&v.0), int(*n)]))
                            .collect(),
                    ),
                ));
            }
            Evidence::IncompatibleOrder { key, values } => {
                m.push(("key", atom_data(&key.0)));
                m.push((
                    "values",
                    Data::Vec(vec![vals_data(&values[0]), vals_data(&values[1])]),
                ));
            }
            Evidence::DirtyUpdate { key, values, txns } => {
                m.push(("key", atom_data(&key.0)));
                m.push(("values", vals_data(values)));
                m.push(("txns", ops_data(txns)));
            }
            Evidence::LostUpdate { key, value, txns } => {
                m.push(("key", atom_data(&key.0)));
                m.push(("value", read_data(value)));
                m.push(("txns", ops_data(txns)));
            }
            Evidence::CyclicVersions { key, scc, sources } => {
                m.push(("key", atom_data(&key.0)));
                m.push(("scc", Data::Vec(scc.iter().map(opt_val_data).collect())));
                m.push((
                    "sources",
                    Data::Vec(sources.iter().map(|s| Data::Str(s.to_string())).collect()),
                ));
            }
            Evidence::CycleExists {
                subgraph,
                scc_size,
                scc,
            } => {
                m.push(("subgraph", Data::Str(subgraph.to_string())));
                m.push(("scc-size", int(*scc_size)));
                m.push(("scc", ops_data(scc)));
            }
            Evidence::EmptyGraph => {}
            Evidence::Timeout {
                scc_size,
                does_not_contain,
            } => {
                m.push(("scc-size", int(*scc_size)));
                m.push((
                    "does-not-contain",
                    Data::Vec(
                        does_not_contain
                            .iter()
                            .map(|a| Data::Str(a.name().to_string()))
                            .collect(),
                    ),
                ));
            }
        }
        map(m)
    }

    /// [`Anomaly::to_data`] as JSON.
    pub fn to_json(&self) -> Value {
        data_to_json(&self.to_data())
    }

    /// The ops this anomaly names.
    pub fn ops(&self) -> Vec<OpIndex> {
        let mut v = match &self.evidence {
            Evidence::Cycle { cycle, .. } => cycle.clone(),
            Evidence::Read { op, writer, .. } => std::iter::once(*op).chain(*writer).collect(),
            Evidence::Internal { op, .. }
            | Evidence::DuplicateElements { op, .. }
            | Evidence::CountMiss { op, .. }
            | Evidence::Replay { op, .. } => vec![*op],
            Evidence::DirtyUpdate { txns, .. } | Evidence::LostUpdate { txns, .. } => txns.clone(),
            _ => Vec::new(),
        };
        v.sort_unstable();
        v.dedup();
        v
    }
}

impl Serialize for Anomaly {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// The fields that place a read: its op, micro-op and key.
fn read_site(m: &mut Vec<(&'static str, Data)>, op: OpIndex, mop: usize, key: &Key) {
    m.push(("op", int(op.0)));
    m.push(("mop", int(mop)));
    m.push(("key", atom_data(&key.0)));
}
