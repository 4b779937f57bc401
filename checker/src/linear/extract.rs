//! A history's ops as per-key operations for the search: register ops
//! (`read` / `write` / `cas`, Jepsen's and Knossos' shapes) and Porcupine's
//! kv ops (`get` / `put` / `append` with a `key` field).
//!
//! Shapes (value of the invocation / completion):
//!
//! | f | unkeyed (one register) | keyed (Jepsen `independent`) |
//! |---|---|---|
//! | read | `nil` / `v` | `[k nil]` / `[k v]` |
//! | write | `v` | `[k v]` |
//! | cas | `[old new]` | `[k [old new]]` |
//!
//! Times: the ops' `time` when every op has one (equal times are
//! concurrent), else history positions (the log order is real-time order).

use super::model::{KvInput, RegInput, RegOutput};
use super::search::Operation;
use rustc_hash::FxHashMap;
use store::{Atom, Data, History, Key, OpType, Process};

/// What a failed cas means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FailedCas {
    /// It happened and saw a value other than `old` (Porcupine's etcd
    /// model; SQL's "0 rows updated"). The stronger reading.
    #[default]
    Observed,
    /// It did not happen (Knossos: failed ops are removed).
    Dropped,
}

impl FailedCas {
    /// `observed` or `dropped`.
    pub fn name(self) -> &'static str {
        match self {
            FailedCas::Observed => "observed",
            FailedCas::Dropped => "dropped",
        }
    }
}

/// An op that is not of the shape the model reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// The op's function or value has the wrong shape.
    #[error("op {index} ({f}): {reason}")]
    Shape {
        /// The op's index.
        index: u64,
        /// Its function.
        f: String,
        /// What is wrong.
        reason: String,
    },
}

/// The partitions of a history.
#[derive(Debug)]
pub struct Extracted<I, O> {
    /// Per key (sorted), its operations in invocation order.
    pub keys: Vec<super::search::Partition<I, O>>,
    /// What was left out and why.
    pub warnings: Vec<String>,
}

/// How an invocation ended.
#[derive(Clone, Copy)]
pub(super) enum End {
    /// Completed `ok` at this position.
    Ok(usize),
    /// Completed `fail` at this position.
    Fail(usize),
    /// `info`, or never completed.
    Open,
}

/// Every client invocation with how it ended (a completion without an
/// invocation stands for both).
pub(super) fn client_ops(history: &History) -> impl Iterator<Item = (usize, End)> + '_ {
    (0..history.len()).filter_map(move |pos| {
        if history.process(pos) == Some(Process::Nemesis) {
            return None;
        }
        match history.op_type(pos) {
            OpType::Invoke => Some((
                pos,
                match history.completion(pos) {
                    Some(c) => match history.op_type(c) {
                        OpType::Ok => End::Ok(c),
                        OpType::Fail => End::Fail(c),
                        _ => End::Open,
                    },
                    None => End::Open,
                },
            )),
            t if history.partner(pos).is_none() => Some((
                pos,
                match t {
                    OpType::Ok => End::Ok(pos),
                    OpType::Fail => End::Fail(pos),
                    _ => End::Open,
                },
            )),
            _ => None,
        }
    })
}

pub(super) fn clock(history: &History) -> impl Fn(usize) -> i64 + '_ {
    let timed = (0..history.len()).all(|p| history.time_ns(p).is_some());
    move |pos| {
        if timed {
            history.time_ns(pos).unwrap_or(pos as i64)
        } else {
            pos as i64
        }
    }
}

fn key_of(d: &Data) -> Result<Key, String> {
    match d {
        Data::Int(i) => Ok(Key(Atom::Int(*i))),
        Data::Str(s) => Ok(Key(Atom::Str(s.as_str().into()))),
        Data::Keyword(s) => Ok(Key(Atom::Keyword(s.as_str().into()))),
        other => Err(format!(
            "a key must be an integer or a string, found {other:?}"
        )),
    }
}

fn int_of(d: &Data) -> Result<Option<i64>, String> {
    match d {
        Data::Nil => Ok(None),
        Data::Int(i) => Ok(Some(*i)),
        other => Err(format!(
            "a register value must be an integer or nil, found {other:?}"
        )),
    }
}

fn some_int(d: &Data) -> Result<i64, String> {
    int_of(d)?.ok_or_else(|| "a value is nil where an integer is needed".to_string())
}

/// `[k v]` → (k, v); anything else is unkeyed.
fn split_key(d: &Data) -> Result<(Option<Key>, &Data), String> {
    match d {
        Data::Vec(v) if v.len() == 2 => Ok((Some(key_of(&v[0])?), &v[1])),
        other => Ok((None, other)),
    }
}

/// The error code a client recorded for a compare that did not match.
pub const CAS_MISMATCH: &str = "cas-mismatch";

/// Whether the failed cas completed at `pos` failed its compare: it
/// carries no error (Jepsen's and Porcupine's histories) or the error
/// `cas-mismatch` (harness' clients). A cas that failed for another reason
/// (an abort, a conflict) did not happen and says nothing about the value.
fn compare_failed(history: &History, pos: usize) -> bool {
    let code = match history.error(pos) {
        None => return true,
        Some(Data::Vec(v)) => v.first(),
        Some(d) => Some(d),
    };
    matches!(code, Some(Data::Str(s) | Data::Keyword(s)) if s == CAS_MISMATCH)
}

/// Whether `f` names a register op.
pub fn is_register_f(f: &str) -> bool {
    matches!(f, "read" | "write" | "cas")
}

/// The register ops of `history`, per key.
///
/// # Errors
/// [`ExtractError::Shape`] for a client op that is not a register op.
pub fn registers(
    history: &History,
    failed_cas: FailedCas,
) -> Result<Extracted<RegInput, RegOutput>, ExtractError> {
    let time = clock(history);
    let mut keys: FxHashMap<Option<Key>, Vec<Operation<RegInput, RegOutput>>> =
        FxHashMap::default();
    let mut dropped = [0usize; 2];
    for (inv, end) in client_ops(history) {
        let f = history.f(inv).map_or("", |f| f.as_str());
        let bad = |reason: String| ExtractError::Shape {
            index: history.index(inv).0,
            f: f.to_string(),
            reason,
        };
        let nil = Data::Nil;
        let inv_val = history.data(inv).unwrap_or(&nil);
        let (key, input, output) = match f {
            "read" => {
                // The completion's `[k v]` names the key when the
                // invocation's value is a bare nil.
                let done = match end {
                    End::Ok(c) => history.data(c),
                    _ => None,
                };
                let (key, _) = split_key(done.unwrap_or(inv_val)).map_err(bad)?;
                let key = match key {
                    Some(k) => Some(k),
                    None => split_key(inv_val).map_err(bad)?.0,
                };
                match (end, done) {
                    (End::Ok(_), Some(d)) => {
                        let v = match d {
                            Data::Vec(v) if v.len() == 2 => int_of(&v[1]),
                            other => int_of(other),
                        }
                        .map_err(bad)?;
                        (key, RegInput::Read, Some(RegOutput::Read(v)))
                    }
                    _ => {
                        // A read that failed or may not have finished
                        // constrains nothing and changes nothing.
                        dropped[0] += 1;
                        continue;
                    }
                }
            }
            "write" => {
                let (key, v) = split_key(inv_val).map_err(bad)?;
                let v = some_int(v).map_err(bad)?;
                (key, RegInput::Write(v), Some(RegOutput::Written))
            }
            "cas" => {
                let (key, pair) = match inv_val {
                    Data::Vec(v) if v.len() == 2 && matches!(v[1], Data::Vec(_)) => {
                        (Some(key_of(&v[0]).map_err(bad)?), &v[1])
                    }
                    other => (None, other),
                };
                let (old, new) = match pair {
                    Data::Vec(v) if v.len() == 2 => {
                        (some_int(&v[0]).map_err(bad)?, some_int(&v[1]).map_err(bad)?)
                    }
                    other => return Err(bad(format!("a cas value is [old new], found {other:?}"))),
                };
                (key, RegInput::Cas(old, new), Some(RegOutput::Cas(true)))
            }
            _ => {
                return Err(bad("not a register op (read, write or cas)".to_string()));
            }
        };
        let (ret, output) = match end {
            End::Ok(c) => (Some(time(c)), output),
            End::Fail(c) => match (input, failed_cas) {
                (RegInput::Cas(..), FailedCas::Observed) if compare_failed(history, c) => {
                    (Some(time(c)), Some(RegOutput::Cas(false)))
                }
                _ => {
                    dropped[1] += 1;
                    continue;
                }
            },
            End::Open => (None, None),
        };
        let process = match history.process(inv) {
            Some(Process::Client(p)) => Some(p.0),
            _ => None,
        };
        keys.entry(key).or_default().push(Operation {
            id: inv,
            process,
            call: time(inv),
            ret,
            input,
            output,
        });
    }
    let mut keys: Vec<_> = keys.into_iter().collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    let mut warnings = Vec::new();
    if dropped[0] > 0 {
        warnings.push(format!(
            "{} read(s) that failed or did not finish left out: they constrain nothing",
            dropped[0]
        ));
    }
    if dropped[1] > 0 {
        warnings.push(format!(
            "{} failed op(s) left out: they did not take effect",
            dropped[1]
        ));
    }
    Ok(Extracted { keys, warnings })
}

/// Porcupine's kv ops (`get` / `put` / `append`, key in a `key` field,
/// values strings), per key.
///
/// # Errors
/// [`ExtractError::Shape`] for a client op that is not a kv op.
pub fn kv(history: &History) -> Result<Extracted<KvInput, String>, ExtractError> {
    let time = clock(history);
    let mut keys: FxHashMap<Option<Key>, Vec<Operation<KvInput, String>>> = FxHashMap::default();
    let mut dropped = 0usize;
    for (inv, end) in client_ops(history) {
        let f = history.f(inv).map_or("", |f| f.as_str());
        let bad = |reason: String| ExtractError::Shape {
            index: history.index(inv).0,
            f: f.to_string(),
            reason,
        };
        let key = history
            .extra(inv)
            .iter()
            .find(|(k, _)| k == "key")
            .map(|(_, v)| key_of(v))
            .transpose()
            .map_err(bad)?;
        let text = |d: Option<&Data>| match d {
            Some(Data::Str(s)) => Ok(s.clone()),
            other => Err(bad(format!("a kv value is a string, found {other:?}"))),
        };
        let (input, output) = match f {
            "get" => match end {
                End::Ok(c) => (KvInput::Get, Some(text(history.data(c))?)),
                _ => {
                    dropped += 1;
                    continue;
                }
            },
            "put" => (KvInput::Put(text(history.data(inv))?.into()), None),
            "append" => (KvInput::Append(text(history.data(inv))?.into()), None),
            _ => return Err(bad("not a kv op (get, put or append)".to_string())),
        };
        let ret = match end {
            End::Ok(c) => Some(time(c)),
            End::Fail(_) => {
                dropped += 1;
                continue;
            }
            End::Open => None,
        };
        let process = match history.process(inv) {
            Some(Process::Client(p)) => Some(p.0),
            _ => None,
        };
        keys.entry(key).or_default().push(Operation {
            id: inv,
            process,
            call: time(inv),
            ret,
            input,
            output,
        });
    }
    let mut keys: Vec<_> = keys.into_iter().collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    let warnings = if dropped > 0 {
        vec![format!(
            "{dropped} op(s) that failed or gets that did not finish left out"
        )]
    } else {
        Vec::new()
    };
    Ok(Extracted { keys, warnings })
}
