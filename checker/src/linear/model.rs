//! Sequential models the linearizability search replays: the [`Model`]
//! trait (a small state machine: `init`, `step`, hashable states) and the
//! models harness uses — [`CasRegister`] (read / write / compare-and-set,
//! Knossos' `cas-register` and Porcupine's etcd model) and [`KvString`]
//! (get / put / append on one string, Porcupine's kv model).

use std::fmt::Debug;
use std::hash::Hash;

/// A sequential specification. `step` returns the state after `input`
/// produced `output` in `state`, or `None` when the model cannot produce
/// that output there; an unknown output (`None`: an `info` op) is
/// accepted, but its effect still applies where it is linearized.
pub trait Model {
    /// A model state; equal states must have equal futures.
    type State: Clone + Eq + Hash + Debug;
    /// What an operation asks.
    type Input: Clone + Debug;
    /// What an operation answered.
    type Output: Clone + Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// One transition (see the trait doc).
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// A short description of an operation, for explanations.
    fn describe_op(&self, input: &Self::Input, output: Option<&Self::Output>) -> String;

    /// A short description of a state, for explanations.
    fn describe_state(&self, state: &Self::State) -> String;
}

/// A register operation's request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegInput {
    /// Read the value.
    Read,
    /// Set the value.
    Write(i64),
    /// Set `new` if the value is `old`.
    Cas(i64, i64),
}

/// A register operation's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegOutput {
    /// A read's value (`None`: the register was never written).
    Read(Option<i64>),
    /// A write finished.
    Written,
    /// A compare-and-set: whether the compare matched.
    Cas(bool),
}

/// A compare-and-set register holding an integer or nothing (nil).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CasRegister {
    /// The value before any write (`None` = nil, Jepsen's default).
    pub initial: Option<i64>,
}

impl Model for CasRegister {
    type State = Option<i64>;
    type Input = RegInput;
    type Output = RegOutput;

    fn init(&self) -> Option<i64> {
        self.initial
    }

    fn step(
        &self,
        state: &Option<i64>,
        input: &RegInput,
        output: Option<&RegOutput>,
    ) -> Option<Option<i64>> {
        match (input, output) {
            (RegInput::Read, None) => Some(*state),
            (RegInput::Read, Some(RegOutput::Read(v))) => (v == state).then_some(*state),
            (RegInput::Write(v), None | Some(RegOutput::Written)) => Some(Some(*v)),
            (RegInput::Cas(old, new), None) => Some(if *state == Some(*old) {
                Some(*new)
            } else {
                *state
            }),
            (RegInput::Cas(old, new), Some(RegOutput::Cas(true))) => {
                (*state == Some(*old)).then_some(Some(*new))
            }
            (RegInput::Cas(old, _), Some(RegOutput::Cas(false))) => {
                (*state != Some(*old)).then_some(*state)
            }
            // An output of the wrong kind never fits.
            _ => None,
        }
    }

    fn describe_op(&self, input: &RegInput, output: Option<&RegOutput>) -> String {
        let v = |v: &Option<i64>| v.map_or("nil".to_string(), |v| v.to_string());
        match (input, output) {
            (RegInput::Read, Some(RegOutput::Read(x))) => format!("read {}", v(x)),
            (RegInput::Read, _) => "read ?".to_string(),
            (RegInput::Write(x), None) => format!("write {x} (may have happened)"),
            (RegInput::Write(x), _) => format!("write {x}"),
            (RegInput::Cas(a, b), Some(RegOutput::Cas(true))) => format!("cas {a}→{b}"),
            (RegInput::Cas(a, b), Some(RegOutput::Cas(false))) => {
                format!("cas {a}→{b} (failed: value was not {a})")
            }
            (RegInput::Cas(a, b), _) => format!("cas {a}→{b} (may have happened)"),
        }
    }

    fn describe_state(&self, state: &Option<i64>) -> String {
        state.map_or("nil".to_string(), |v| v.to_string())
    }
}

/// A key-value string operation's request (Porcupine's kv model, one key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvInput {
    /// Read the string.
    Get,
    /// Replace the string.
    Put(String),
    /// Append to the string.
    Append(String),
}

/// One string, initially empty, with get / put / append.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KvString;

impl Model for KvString {
    type State = String;
    type Input = KvInput;
    /// A get's string; put and append answer nothing of interest.
    type Output = String;

    fn init(&self) -> String {
        String::new()
    }

    fn step(&self, state: &String, input: &KvInput, output: Option<&String>) -> Option<String> {
        match input {
            KvInput::Get => match output {
                Some(out) if out != state => None,
                _ => Some(state.clone()),
            },
            KvInput::Put(v) => Some(v.clone()),
            KvInput::Append(v) => Some(format!("{state}{v}")),
        }
    }

    fn describe_op(&self, input: &KvInput, output: Option<&String>) -> String {
        match (input, output) {
            (KvInput::Get, Some(o)) => format!("get {o:?}"),
            (KvInput::Get, None) => "get ?".to_string(),
            (KvInput::Put(v), _) => format!("put {v:?}"),
            (KvInput::Append(v), _) => format!("append {v:?}"),
        }
    }

    fn describe_state(&self, state: &String) -> String {
        format!("{state:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cas_register_steps() {
        let m = CasRegister::default();
        let r = |v| Some(RegOutput::Read(v));
        assert_eq!(m.step(&None, &RegInput::Read, r(None).as_ref()), Some(None));
        assert_eq!(m.step(&Some(1), &RegInput::Read, r(None).as_ref()), None);
        assert_eq!(m.step(&Some(1), &RegInput::Read, None), Some(Some(1)));
        let ok = Some(RegOutput::Cas(true));
        let failed = Some(RegOutput::Cas(false));
        assert_eq!(
            m.step(&Some(1), &RegInput::Cas(1, 2), ok.as_ref()),
            Some(Some(2))
        );
        assert_eq!(m.step(&Some(3), &RegInput::Cas(1, 2), ok.as_ref()), None);
        assert_eq!(
            m.step(&Some(3), &RegInput::Cas(1, 2), failed.as_ref()),
            Some(Some(3))
        );
        assert_eq!(
            m.step(&Some(1), &RegInput::Cas(1, 2), failed.as_ref()),
            None
        );
        assert_eq!(m.step(&Some(1), &RegInput::Cas(1, 2), None), Some(Some(2)));
        assert_eq!(m.step(&None, &RegInput::Cas(1, 2), None), Some(None));
        assert_eq!(m.step(&None, &RegInput::Write(4), r(None).as_ref()), None);
    }

    #[test]
    fn kv_string_steps() {
        let m = KvString;
        let s = m.step(&m.init(), &KvInput::Append("x".into()), None);
        assert_eq!(s.as_deref(), Some("x"));
        assert_eq!(m.step(&"x".into(), &KvInput::Get, Some(&"".into())), None);
        assert_eq!(
            m.step(&"x".into(), &KvInput::Get, None).as_deref(),
            Some("x")
        );
    }
}
