//! Knossos' other models, as Jepsen tests use them (`knossos.model`):
//! [`Kind::MultiRegister`] (transactions of reads and writes over named
//! registers, applied atomically; a read of nil constrains nothing),
//! [`Kind::Mutex`] (acquire / release of one lock: acquiring a held lock
//! or releasing a free one is inconsistent), [`Kind::FifoQueue`] (enqueue
//! / dequeue in order; dequeuing from an empty queue is inconsistent),
//! [`Kind::UnorderedQueue`] (a multiset: a dequeue takes any element
//! present) and [`Kind::Set`] (add, and reads that return the whole set).
//!
//! Semantics of completions are Knossos': a `fail` op did not happen and
//! is left out; an `info` op may happen at any point after its invocation
//! or never. An info dequeue or read only restricts (it may be placed
//! "never"), so it is left out; an info acquire, release or transaction is
//! kept, its writes applied where it is placed. Values are compared as
//! their EDN text, so keywords, strings and integers all work.

use super::extract::{End, ExtractError, Extracted, client_ops, clock};
use super::model::Model;
use super::search::Operation;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use store::{Data, History, MicroOp, Process, ReadValue};

/// Which Knossos model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `multi-register`.
    MultiRegister,
    /// `mutex`.
    Mutex,
    /// `fifo-queue`.
    FifoQueue,
    /// `unordered-queue`.
    UnorderedQueue,
    /// `set`.
    Set,
}

/// A value, as its EDN text.
pub type V = Arc<str>;

/// What an op asks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum In {
    /// A multi-register transaction: per micro-op the register, and the
    /// value written (`Some`) or a read (`None`).
    Txn(Vec<(V, Option<V>)>),
    /// Take the lock.
    Acquire,
    /// Give the lock back.
    Release,
    /// Put a value in the queue.
    Enqueue(V),
    /// Take a value out of the queue.
    Dequeue,
    /// Add a value to the set.
    Add(V),
    /// Read the whole set.
    Read,
}

/// What an op answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Out {
    /// Per micro-op of a transaction, the value a read saw (`None`: nil,
    /// which constrains nothing, as in Knossos).
    Txn(Vec<Option<V>>),
    /// Done (acquire, release, enqueue, add).
    Done,
    /// The value dequeued.
    Dequeued(V),
    /// The set read.
    Read(BTreeSet<V>),
}

/// A model state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Registers by name.
    Registers(BTreeMap<V, V>),
    /// Whether the lock is held.
    Lock(bool),
    /// The queue, head first.
    Queue(Vec<V>),
    /// The multiset: value → count.
    Bag(BTreeMap<V, u32>),
    /// The set.
    Set(BTreeSet<V>),
}

/// A Knossos model as a [`Model`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Knossos(pub Kind);

impl Model for Knossos {
    type State = State;
    type Input = In;
    type Output = Out;

    fn init(&self) -> State {
        match self.0 {
            Kind::MultiRegister => State::Registers(BTreeMap::new()),
            Kind::Mutex => State::Lock(false),
            Kind::FifoQueue => State::Queue(Vec::new()),
            Kind::UnorderedQueue => State::Bag(BTreeMap::new()),
            Kind::Set => State::Set(BTreeSet::new()),
        }
    }

    fn step(&self, state: &State, input: &In, output: Option<&Out>) -> Option<State> {
        match (state, input, output) {
            (State::Registers(regs), In::Txn(mops), out) => {
                let seen = match out {
                    Some(Out::Txn(seen)) => Some(seen),
                    None => None,
                    Some(_) => return None,
                };
                let mut regs = regs.clone();
                for (i, (reg, write)) in mops.iter().enumerate() {
                    match write {
                        Some(v) => {
                            regs.insert(reg.clone(), v.clone());
                        }
                        None => {
                            let saw = seen.and_then(|s| s.get(i)).and_then(Option::as_ref);
                            if let Some(saw) = saw
                                && regs.get(reg) != Some(saw)
                            {
                                return None;
                            }
                        }
                    }
                }
                Some(State::Registers(regs))
            }
            (State::Lock(held), In::Acquire, _) => (!held).then_some(State::Lock(true)),
            (State::Lock(held), In::Release, _) => held.then_some(State::Lock(false)),
            (State::Queue(q), In::Enqueue(v), _) => {
                let mut q = q.clone();
                q.push(v.clone());
                Some(State::Queue(q))
            }
            (State::Queue(q), In::Dequeue, Some(Out::Dequeued(v))) => {
                (q.first() == Some(v)).then(|| State::Queue(q[1..].to_vec()))
            }
            (State::Bag(b), In::Enqueue(v), _) => {
                let mut b = b.clone();
                *b.entry(v.clone()).or_insert(0) += 1;
                Some(State::Bag(b))
            }
            (State::Bag(b), In::Dequeue, Some(Out::Dequeued(v))) => {
                let mut b = b.clone();
                let n = b.get_mut(v)?;
                *n -= 1;
                if *n == 0 {
                    b.remove(v);
                }
                Some(State::Bag(b))
            }
            (State::Set(s), In::Add(v), _) => {
                let mut s = s.clone();
                s.insert(v.clone());
                Some(State::Set(s))
            }
            (State::Set(s), In::Read, Some(Out::Read(r))) => {
                (s == r).then(|| State::Set(s.clone()))
            }
            _ => None,
        }
    }

    fn describe_op(&self, input: &In, output: Option<&Out>) -> String {
        let maybe = if output.is_none() {
            " (may have happened)"
        } else {
            ""
        };
        match (input, output) {
            (In::Txn(mops), out) => {
                let seen = match out {
                    Some(Out::Txn(s)) => Some(s),
                    _ => None,
                };
                let parts: Vec<String> = mops
                    .iter()
                    .enumerate()
                    .map(|(i, (reg, w))| match w {
                        Some(v) => format!("w {reg} {v}"),
                        None => {
                            let saw = seen.and_then(|s| s.get(i)).and_then(Option::as_ref);
                            format!("r {reg} {}", saw.map_or("nil", |v| v))
                        }
                    })
                    .collect();
                format!("txn [{}]{maybe}", parts.join(", "))
            }
            (In::Acquire, _) => format!("acquire{maybe}"),
            (In::Release, _) => format!("release{maybe}"),
            (In::Enqueue(v), _) => format!("enqueue {v}{maybe}"),
            (In::Dequeue, Some(Out::Dequeued(v))) => format!("dequeue → {v}"),
            (In::Dequeue, _) => "dequeue ?".to_string(),
            (In::Add(v), _) => format!("add {v}{maybe}"),
            (In::Read, Some(Out::Read(s))) => format!("read {}", set_text(s)),
            (In::Read, _) => "read ?".to_string(),
        }
    }

    fn describe_state(&self, state: &State) -> String {
        match state {
            State::Registers(r) => {
                let parts: Vec<String> = r.iter().map(|(k, v)| format!("{k} {v}")).collect();
                format!("{{{}}}", parts.join(", "))
            }
            State::Lock(true) => "held".to_string(),
            State::Lock(false) => "free".to_string(),
            State::Queue(q) => format!(
                "queue [{}]",
                q.iter().map(|v| &**v).collect::<Vec<_>>().join(" ")
            ),
            State::Bag(b) => {
                let parts: Vec<String> = b
                    .iter()
                    .flat_map(|(v, n)| std::iter::repeat_n(v.to_string(), *n as usize))
                    .collect();
                format!("bag {{{}}}", parts.join(" "))
            }
            State::Set(s) => set_text(s),
        }
    }
}

fn set_text(s: &BTreeSet<V>) -> String {
    format!(
        "#{{{}}}",
        s.iter().map(|v| &**v).collect::<Vec<_>>().join(" ")
    )
}

fn text(d: &Data) -> V {
    store::format::data_to_edn(d).into()
}

fn atom_text(a: &impl std::fmt::Display) -> V {
    a.to_string().into()
}

/// The ops of `history` as `kind`'s inputs and outputs, one partition.
///
/// # Errors
/// [`ExtractError::Shape`] for a client op the model does not have.
pub fn extract(history: &History, kind: Kind) -> Result<Extracted<In, Out>, ExtractError> {
    let time = clock(history);
    let mut ops = Vec::new();
    let (mut failed, mut open_reads) = (0usize, 0usize);
    for (inv, end) in client_ops(history) {
        let f = history.f(inv).map_or("", |f| f.as_str());
        let bad = |reason: String| ExtractError::Shape {
            index: history.index(inv).0,
            f: f.to_string(),
            reason,
        };
        let done = match end {
            End::Ok(c) => Some(c),
            End::Fail(_) => {
                failed += 1;
                continue;
            }
            End::Open => None,
        };
        let (input, output) = match (kind, f) {
            (Kind::MultiRegister, "txn") => {
                // An ok transaction's micro-ops are its completion's (the
                // store may elide the invocation's); an open one's are its
                // invocation's, reads unknown.
                let mops = done
                    .and_then(|c| history.stored_txn(c))
                    .or_else(|| history.stored_txn(inv))
                    .unwrap_or(&[]);
                let mut input = Vec::with_capacity(mops.len());
                let mut seen = Vec::with_capacity(mops.len());
                for m in mops {
                    match m {
                        MicroOp::Write(k, v) => {
                            input.push((atom_text(k), Some(atom_text(v))));
                            seen.push(None);
                        }
                        MicroOp::Read(k, r) => {
                            input.push((atom_text(k), None));
                            seen.push(match r {
                                ReadValue::Scalar(v) if done.is_some() => Some(atom_text(v)),
                                _ => None,
                            });
                        }
                        other => {
                            return Err(bad(format!(
                                "a multi-register transaction reads and writes, found {other:?}"
                            )));
                        }
                    }
                }
                (In::Txn(input), done.map(|_| Out::Txn(seen)))
            }
            (Kind::Mutex, "acquire") => (In::Acquire, done.map(|_| Out::Done)),
            (Kind::Mutex, "release") => (In::Release, done.map(|_| Out::Done)),
            (Kind::FifoQueue | Kind::UnorderedQueue, "enqueue") => {
                let v = history
                    .data(inv)
                    .ok_or_else(|| bad("enqueue without a value".into()))?;
                (In::Enqueue(text(v)), done.map(|_| Out::Done))
            }
            (Kind::FifoQueue | Kind::UnorderedQueue, "dequeue") => {
                match done
                    .and_then(|c| history.data(c))
                    .filter(|d| **d != Data::Nil)
                {
                    Some(v) => (In::Dequeue, Some(Out::Dequeued(text(v)))),
                    // Only restricts, may be placed never: left out.
                    None => {
                        open_reads += 1;
                        continue;
                    }
                }
            }
            (Kind::Set, "add") => {
                let v = history
                    .data(inv)
                    .ok_or_else(|| bad("add without a value".into()))?;
                (In::Add(text(v)), done.map(|_| Out::Done))
            }
            (Kind::Set, "read") => match done.and_then(|c| history.data(c)) {
                Some(Data::Vec(items) | Data::Set(items)) => {
                    (In::Read, Some(Out::Read(items.iter().map(text).collect())))
                }
                Some(other) => {
                    return Err(bad(format!(
                        "a set read returns a collection, found {other:?}"
                    )));
                }
                None => {
                    open_reads += 1;
                    continue;
                }
            },
            _ => {
                return Err(bad(format!(
                    "not an op of Knossos' {} model ({})",
                    kind.name(),
                    kind.ops()
                )));
            }
        };
        let process = match history.process(inv) {
            Some(Process::Client(p)) => Some(p.0),
            _ => None,
        };
        ops.push(Operation {
            id: inv,
            process,
            call: time(inv),
            ret: done.map(&time),
            input,
            output,
        });
    }
    let mut warnings = Vec::new();
    if failed > 0 {
        warnings.push(format!(
            "{failed} failed op(s) left out: they did not take effect (Knossos)"
        ));
    }
    if open_reads > 0 {
        warnings.push(format!(
            "{open_reads} dequeue(s) or read(s) without a known result left out: they constrain nothing"
        ));
    }
    Ok(Extracted {
        keys: vec![(None, ops)],
        warnings,
    })
}

impl Kind {
    /// Every model.
    pub const ALL: [Kind; 5] = [
        Kind::MultiRegister,
        Kind::Mutex,
        Kind::FifoQueue,
        Kind::UnorderedQueue,
        Kind::Set,
    ];

    /// Knossos' name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::MultiRegister => "multi-register",
            Kind::Mutex => "mutex",
            Kind::FifoQueue => "fifo-queue",
            Kind::UnorderedQueue => "unordered-queue",
            Kind::Set => "set",
        }
    }

    /// The ops it has.
    pub fn ops(self) -> &'static str {
        match self {
            Kind::MultiRegister => "txn of :r and :w",
            Kind::Mutex => "acquire, release",
            Kind::FifoQueue | Kind::UnorderedQueue => "enqueue, dequeue",
            Kind::Set => "add, read",
        }
    }
}
