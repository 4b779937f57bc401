//! dbcop's JSON history (`github.com/rnbguy/dbcop`, docs/history-format.md,
//! crates/core/src/history/raw/types.rs): sessions → transactions → events.
//!
//! Accepted shapes:
//! - the standalone file `dbcop generate` writes, `{"params": …, "info": …,
//!   "start": …, "end": …, "data": [sessions]}` (only `data` is used), or
//!   the bare array of sessions;
//! - a session is an array of transactions `{"events": […], "committed":
//!   bool}`; the older dbcop (used by AWDIT and PolySI's bincode) spells
//!   `committed` as `success`; missing, a transaction is committed (as in
//!   dbcop's text DSL);
//! - an event is `{"Read": {"variable": V, "version": V|null}}`,
//!   `{"Write": {"variable": V, "version": V}}`, the compact `["r", V, V|null]`
//!   / `["w", V, V]`, or the older `{"write": bool, "variable": V, "value": V,
//!   "success": bool}` where a failed read is dropped and a failed write
//!   becomes an aborted transaction of its own (AWDIT's aborted writes).
//!
//! Initial state: `version: null` reads it (`nil`); version `0` on a key
//! nobody writes 0 to reads it too (dbcop's tests/version_zero.rs, and the
//! older dbcop's root transaction writing 0). Session `i` (0-based position
//! in the array) becomes process `i`.

use super::txns::PTxn;
use crate::format::FormatError;
use crate::history::{Atom, Key, MicroOp, ReadValue, Val};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::path::Path;

/// The value dbcop treats as a key's initial state besides `null`.
pub(crate) const INITIAL: i64 = 0;

/// A variable or version: an integer (what dbcop writes) or a string.
struct AtomDe(Atom);

impl<'de> Deserialize<'de> for AtomDe {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = AtomDe;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AtomDe, E> {
                Ok(AtomDe(Atom::Int(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AtomDe, E> {
                i64::try_from(v)
                    .map(|v| AtomDe(Atom::Int(v)))
                    .map_err(|_| E::custom(format!("{v} is out of range (64-bit signed integers)")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AtomDe, E> {
                Ok(AtomDe(Atom::Str(v.into())))
            }
        }
        d.deserialize_any(V)
    }
}

/// `{"variable": …, "version": …}` of the tagged form.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    variable: AtomDe,
    version: Option<AtomDe>,
}

/// One event: `(is_write, variable, version, success)`.
struct Event(bool, Atom, Option<Atom>, bool);

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Event;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an event: {\"Read\": {\"variable\": …, \"version\": …}}, {\"Write\": …}, [\"r\", var, ver], or {\"write\": bool, \"variable\": …, \"value\": …, \"success\": bool}",
                )
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Event, A::Error> {
                let tag: String = s.next_element()?.ok_or_else(|| {
                    de::Error::custom(
                        "an empty event array; expected [\"r\"|\"w\", variable, version]",
                    )
                })?;
                let write = match tag.as_str() {
                    "r" => false,
                    "w" => true,
                    other => {
                        return Err(de::Error::custom(format!(
                            "unknown event tag {other:?}, expected \"r\" or \"w\""
                        )));
                    }
                };
                let var: AtomDe = s
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("an event array without its variable"))?;
                let ver: Option<AtomDe> = s
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("an event array without its version"))?;
                if s.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom(
                        "an event array with more than 3 elements",
                    ));
                }
                tagged(
                    write,
                    Body {
                        variable: var,
                        version: ver,
                    },
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Event, A::Error> {
                let Some(first) = m.next_key::<String>()? else {
                    return Err(de::Error::custom("an empty event object"));
                };
                if first == "Read" || first == "Write" {
                    let body: Body = m.next_value()?;
                    if let Some(k) = m.next_key::<String>()? {
                        return Err(de::Error::custom(format!(
                            "unexpected field {k:?} after {first:?} in an event"
                        )));
                    }
                    return tagged(first == "Write", body);
                }
                // The older dbcop: {"write", "variable", "value", "success"}.
                let (mut write, mut var, mut val, mut ok) = (None, None, None, None);
                let mut key = Some(first);
                while let Some(k) = key {
                    match k.as_str() {
                        "write" => write = Some(m.next_value::<bool>()?),
                        "variable" => var = Some(m.next_value::<AtomDe>()?.0),
                        "value" => val = Some(m.next_value::<AtomDe>()?.0),
                        "success" => ok = Some(m.next_value::<bool>()?),
                        other => {
                            return Err(de::Error::custom(format!(
                                "unknown event field {other:?}; expected \"Read\", \"Write\", or write/variable/value/success"
                            )));
                        }
                    }
                    key = m.next_key::<String>()?;
                }
                match (write, var, val) {
                    (Some(w), Some(var), Some(val)) => {
                        Ok(Event(w, var, Some(val), ok.unwrap_or(true)))
                    }
                    _ => Err(de::Error::custom(
                        "an event needs \"write\", \"variable\" and \"value\"",
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

fn tagged<E: de::Error>(write: bool, b: Body) -> Result<Event, E> {
    let version = b.version.map(|v| v.0);
    if write && version.is_none() {
        return Err(E::custom("a write event with a null version"));
    }
    Ok(Event(write, b.variable.0, version, true))
}

#[derive(Deserialize)]
struct Txn {
    events: Vec<Event>,
    committed: Option<bool>,
    success: Option<bool>,
}

#[derive(Deserialize)]
struct Wrapped {
    data: Vec<Vec<Txn>>,
}

/// Reads dbcop's JSON history.
///
/// # Errors
/// Malformed JSON or an event of no known shape (file, line, column).
pub(crate) fn read(bytes: &[u8], file: Option<&Path>) -> Result<Vec<PTxn>, FormatError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let sessions: Result<Vec<Vec<Txn>>, serde_json::Error> = if first == Some(&b'{') {
        serde_json::from_slice::<Wrapped>(bytes).map(|w| w.data)
    } else {
        serde_json::from_slice(bytes)
    };
    let sessions = sessions.map_err(|e| FormatError {
        file: file.map(Path::to_path_buf),
        line: e.line() as u64,
        column: Some(e.column() as u64),
        op: None,
        reason: format!("dbcop JSON history: {e}"),
    })?;
    let mut out = Vec::new();
    for (s, txns) in sessions.into_iter().enumerate() {
        let session = s as u64;
        for t in txns {
            let committed = t.committed.or(t.success).unwrap_or(true);
            let mut mops = Vec::with_capacity(t.events.len());
            let mut failed_writes = Vec::new();
            for Event(write, var, ver, ok) in t.events {
                let k = Key(var);
                let m = match (write, ver) {
                    (true, Some(v)) => MicroOp::Write(k, Val(v)),
                    (false, Some(v)) => MicroOp::Read(k, ReadValue::Scalar(Val(v))),
                    (_, None) => MicroOp::Read(k, ReadValue::Nil),
                };
                match (ok, write) {
                    (true, _) => mops.push(m),
                    (false, true) => failed_writes.push(m),
                    (false, false) => {}
                }
            }
            out.push(PTxn {
                session,
                committed,
                mops,
            });
            if !failed_writes.is_empty() {
                out.push(PTxn {
                    session,
                    committed: false,
                    mops: failed_writes,
                });
            }
        }
    }
    Ok(out)
}

fn uint(a: &Atom, what: &str) -> Result<u64, String> {
    match a {
        Atom::Int(i) if *i >= 0 => Ok(*i as u64),
        other => Err(format!(
            "{what} {other} is not a non-negative integer; dbcop holds u64 variables and versions"
        )),
    }
}

/// Writes the standalone dbcop JSON file (`dbcop verify` reads it): one
/// session per process in process order, the tagged event form, `null` for
/// reads of the initial state.
///
/// # Errors
/// A key or value that is not a non-negative integer, or list-append
/// micro-ops.
pub(crate) fn write(txns: &[PTxn]) -> Result<String, String> {
    let mut sessions: BTreeMap<u64, Vec<&PTxn>> = BTreeMap::new();
    let mut vars = BTreeSet::new();
    let mut n_event = 0usize;
    for t in txns {
        sessions.entry(t.session).or_default().push(t);
        n_event += t.mops.len();
        for m in &t.mops {
            vars.insert(m.key());
        }
    }
    let mut data = String::new();
    for (si, (_, ts)) in sessions.iter().enumerate() {
        data.push_str(if si == 0 { "\n  [" } else { ",\n  [" });
        for (ti, t) in ts.iter().enumerate() {
            data.push_str(if ti == 0 { "\n    " } else { ",\n    " });
            data.push_str("{\"events\": [");
            for (ei, m) in t.mops.iter().enumerate() {
                if ei > 0 {
                    data.push_str(", ");
                }
                match m {
                    MicroOp::Write(k, v) => {
                        let _ = write!(
                            data,
                            "{{\"Write\": {{\"variable\": {}, \"version\": {}}}}}",
                            uint(&k.0, "key")?,
                            uint(&v.0, "value")?
                        );
                    }
                    MicroOp::Read(k, rv) => {
                        let ver = match rv {
                            ReadValue::Nil => "null".to_string(),
                            ReadValue::Scalar(v) => uint(&v.0, "value")?.to_string(),
                            ReadValue::List(_) => {
                                return Err("list reads: dbcop holds registers only".into());
                            }
                        };
                        let _ = write!(
                            data,
                            "{{\"Read\": {{\"variable\": {}, \"version\": {ver}}}}}",
                            uint(&k.0, "key")?
                        );
                    }
                    MicroOp::Append(..) => {
                        return Err("append micro-ops: dbcop holds registers only".into());
                    }
                    MicroOp::ReadRange(_) => {
                        return Err("range reads: dbcop holds registers only".into());
                    }
                }
            }
            let _ = write!(data, "], \"committed\": {}}}", t.committed);
        }
        data.push_str("\n  ]");
    }
    Ok(format!(
        "{{\"params\": {{\"id\": 0, \"n_node\": {}, \"n_variable\": {}, \"n_transaction\": {}, \"n_event\": {n_event}}},\n \"info\": \"harness history convert\",\n \"start\": \"1970-01-01T00:00:00+00:00\",\n \"end\": \"1970-01-01T00:00:00+00:00\",\n \"data\": [{}\n ]}}\n",
        sessions.len(),
        vars.len(),
        txns.len(),
        data
    ))
}
