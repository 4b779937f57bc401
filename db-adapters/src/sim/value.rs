//! A key's value in the simulator ([`Value`]: nothing, a list or a
//! register), the writes that change it ([`Write`]), and its type alone
//! ([`Shape`]) for type checks that copy nothing. Shared by the engine and
//! the replicated cluster ([`super::cluster`]).

use super::SimError;
use super::engine::TxnId;
use store::{Key, ReadValue, Val};

/// A key's state: a list, a register, or nothing yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    Nil,
    List(Vec<Val>),
    Reg(Val),
}

impl Value {
    pub(crate) fn to_read(&self) -> ReadValue {
        match self {
            Value::Nil => ReadValue::Nil,
            Value::List(l) => ReadValue::List(l.clone().into()),
            Value::Reg(v) => ReadValue::Scalar(v.clone()),
        }
    }

    pub(crate) fn apply(&mut self, key: &Key, w: &Write) -> Result<(), SimError> {
        match (w, &mut *self) {
            (Write::Append(v), Value::Nil) => *self = Value::List(vec![v.clone()]),
            (Write::Append(v), Value::List(l)) => l.push(v.clone()),
            (Write::Put(v), Value::Nil | Value::Reg(_)) => *self = Value::Reg(v.clone()),
            (Write::Append(_), Value::Reg(_)) => {
                return Err(SimError::TypeMismatch {
                    f: "append",
                    key: key.clone(),
                    held: "register",
                });
            }
            (Write::Put(_), Value::List(_)) => {
                return Err(SimError::TypeMismatch {
                    f: "w",
                    key: key.clone(),
                    held: "list",
                });
            }
        }
        Ok(())
    }
}

/// What a key holds, for type checks without copying values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Nil,
    List,
    Reg,
}

impl Shape {
    pub(crate) fn of(v: &Value) -> Shape {
        match v {
            Value::Nil => Shape::Nil,
            Value::List(_) => Shape::List,
            Value::Reg(_) => Shape::Reg,
        }
    }

    pub(crate) fn then(self, key: &Key, w: &Write) -> Result<Shape, SimError> {
        match (w, self) {
            (Write::Append(_), Shape::Nil | Shape::List) => Ok(Shape::List),
            (Write::Put(_), Shape::Nil | Shape::Reg) => Ok(Shape::Reg),
            (Write::Append(_), Shape::Reg) => Err(SimError::TypeMismatch {
                f: "append",
                key: key.clone(),
                held: "register",
            }),
            (Write::Put(_), Shape::List) => Err(SimError::TypeMismatch {
                f: "w",
                key: key.clone(),
                held: "list",
            }),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Write {
    Append(Val),
    Put(Val),
}

/// A key in the engine: its committed versions, and its lock.
#[derive(Debug, Default)]
pub(crate) struct KeyState {
    /// Committed versions, ascending commit timestamp; pruned to what open
    /// snapshots can still see.
    pub(crate) versions: Vec<(u64, Value)>,
    /// read-uncommitted: the lock holder's in-place state.
    pub(crate) dirty: Option<Value>,
    /// The transaction holding the row lock.
    pub(crate) lock: Option<TxnId>,
}

/// The state of a key never written.
pub(crate) const NIL: Value = Value::Nil;

impl KeyState {
    pub(crate) fn latest(&self) -> (u64, &Value) {
        self.versions.last().map_or((0, &NIL), |(ts, v)| (*ts, v))
    }

    pub(crate) fn at(&self, ts: u64) -> &Value {
        self.at_without(ts, &[])
    }

    /// The newest version at `ts` that no commit in `holes` made.
    pub(crate) fn at_without(&self, ts: u64, holes: &[u64]) -> &Value {
        self.versions
            .iter()
            .rev()
            .find(|(t, _)| *t <= ts && !holes.contains(t))
            .map_or(&NIL, |(_, v)| v)
    }

    /// Keeps the newest version visible at `oldest_snapshot` and all later ones.
    pub(crate) fn prune(&mut self, oldest_snapshot: u64) {
        let visible = self
            .versions
            .iter()
            .rposition(|(t, _)| *t <= oldest_snapshot);
        if let Some(i) = visible
            && i > 0
        {
            self.versions.drain(..i);
        }
    }
}
