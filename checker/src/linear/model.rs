//! Sequential models the linearizability search replays: the [`Model`]
//! trait (a small state machine: `init`, `step`, hashable states) and the
//! models harness uses — [`CasRegister`] (read / write / compare-and-set,
//! Knossos' `cas-register` and Porcupine's etcd model) and [`KvString`]
//! (get / put / append on one string, Porcupine's kv model, its states
//! ropes of the values put and appended: [`KvState`]).

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

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
/// Values are shared (`Arc<str>`): the states built from them point at them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvInput {
    /// Read the string.
    Get,
    /// Replace the string.
    Put(Arc<str>),
    /// Append to the string.
    Append(Arc<str>),
}

/// One string, initially empty, with get / put / append.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KvString;

/// Multiplier of the string hash `h(s) = Σ s[i]·P^(len−1−i)` (mod 2^64):
/// odd and well mixed, so `h(a ++ b) = h(a)·P^|b| + h(b)` lets an append
/// hash its result from the state's hash and the appended value alone.
const P: u64 = 0x9e37_79b9_7f4a_7c15;

fn text_hash(s: &str) -> u64 {
    s.bytes()
        .fold(0u64, |h, b| h.wrapping_mul(P).wrapping_add(u64::from(b)))
}

/// A kv state: the string as a chain of the values put and appended (a
/// rope), never copied — an append is one small node pointing at the
/// previous state and at the op's value, so a search that meets thousands
/// of states of kilobytes each keeps a few dozen bytes per state.
/// Equality is that of the strings (whatever chunks they are made of);
/// length and hash are kept to compare in O(1) when they differ.
#[derive(Clone)]
pub struct KvState(Option<Arc<KvNode>>);

/// One chunk of a [`KvState`] after the chunks of `prefix`.
struct KvNode {
    prefix: Option<Arc<KvNode>>,
    chunk: Arc<str>,
    /// Bytes of the whole string.
    len: usize,
    /// [`text_hash`] of the whole string.
    hash: u64,
}

impl Drop for KvNode {
    /// Iteratively: a chain as long as a key's appends must not recurse.
    fn drop(&mut self) {
        let mut next = self.prefix.take();
        while let Some(node) = next {
            next = Arc::into_inner(node).and_then(|mut n| n.prefix.take());
        }
    }
}

impl KvState {
    /// The empty string.
    pub fn empty() -> KvState {
        KvState(None)
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |n| n.len)
    }

    /// Whether it is the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn hash_value(&self) -> u64 {
        self.0.as_ref().map_or(0, |n| n.hash)
    }

    /// `self` followed by `chunk`.
    fn append(&self, chunk: &Arc<str>) -> KvState {
        if chunk.is_empty() {
            return self.clone();
        }
        let hash = self
            .hash_value()
            .wrapping_mul(P.wrapping_pow(chunk.len() as u32))
            .wrapping_add(text_hash(chunk));
        KvState(Some(Arc::new(KvNode {
            prefix: self.0.clone(),
            chunk: chunk.clone(),
            len: self.len() + chunk.len(),
            hash,
        })))
    }

    /// The chunks, last first.
    fn chunks_rev(&self) -> impl Iterator<Item = &KvNode> {
        std::iter::successors(self.0.as_deref(), |n| n.prefix.as_deref())
    }

    /// The bytes, last first (no allocation).
    fn bytes_rev(&self) -> impl Iterator<Item = u8> + '_ {
        self.chunks_rev().flat_map(|n| n.chunk.bytes().rev())
    }

    /// Whether the string equals `s`.
    pub fn equals(&self, s: &str) -> bool {
        self.len() == s.len() && self.bytes_rev().eq(s.bytes().rev())
    }
}

impl std::fmt::Display for KvState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let chunks: Vec<&KvNode> = self.chunks_rev().collect();
        chunks.iter().rev().try_for_each(|n| f.write_str(&n.chunk))
    }
}

impl Debug for KvState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

impl PartialEq for KvState {
    fn eq(&self, other: &KvState) -> bool {
        if self.len() != other.len() || self.hash_value() != other.hash_value() {
            return false;
        }
        // The search builds on the states it interned, so equal states
        // usually share their nodes: stop at the first shared one.
        let (mut a, mut b) = (self.0.as_deref(), other.0.as_deref());
        let (mut ia, mut ib) = (0usize, 0usize); // bytes of the current chunks consumed (from their ends)
        loop {
            match (a, b) {
                (None, None) => return true,
                (Some(x), Some(y)) if ia == ib && std::ptr::eq(x, y) => return true,
                (Some(x), Some(y)) => {
                    let (cx, cy) = (x.chunk.as_bytes(), y.chunk.as_bytes());
                    let n = (cx.len() - ia).min(cy.len() - ib);
                    if cx[cx.len() - ia - n..cx.len() - ia] != cy[cy.len() - ib - n..cy.len() - ib]
                    {
                        return false;
                    }
                    ia += n;
                    ib += n;
                    if ia == cx.len() {
                        a = x.prefix.as_deref();
                        ia = 0;
                    }
                    if ib == cy.len() {
                        b = y.prefix.as_deref();
                        ib = 0;
                    }
                }
                // Equal lengths: both run out together.
                _ => return false,
            }
        }
    }
}

impl Eq for KvState {}

impl Hash for KvState {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash_value());
    }
}

impl Model for KvString {
    type State = KvState;
    type Input = KvInput;
    /// A get's string; put and append answer nothing of interest.
    type Output = String;

    fn init(&self) -> KvState {
        KvState::empty()
    }

    fn step(&self, state: &KvState, input: &KvInput, output: Option<&String>) -> Option<KvState> {
        match input {
            KvInput::Get => match output {
                Some(out) if !state.equals(out) => None,
                _ => Some(state.clone()),
            },
            KvInput::Put(v) => Some(KvState::empty().append(v)),
            KvInput::Append(v) => Some(state.append(v)),
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

    fn describe_state(&self, state: &KvState) -> String {
        format!("{state:?}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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

    fn kv(parts: &[&str]) -> KvState {
        parts
            .iter()
            .fold(KvState::empty(), |s, p| s.append(&Arc::from(*p)))
    }

    #[test]
    fn kv_string_steps() {
        let m = KvString;
        let x = m
            .step(&m.init(), &KvInput::Append("x".into()), None)
            .unwrap();
        assert_eq!(x.to_string(), "x");
        assert_eq!(m.step(&x, &KvInput::Get, Some(&"".into())), None);
        assert_eq!(
            m.step(&x, &KvInput::Get, Some(&"x".into())),
            Some(x.clone())
        );
        assert_eq!(m.step(&x, &KvInput::Get, None), Some(x.clone()));
        let put = m.step(&x, &KvInput::Put("ab".into()), None).unwrap();
        assert_eq!(put, kv(&["ab"]));
        assert_eq!(format!("{put:?}"), "\"ab\"");
    }

    /// Equal strings are equal states (and hash alike) whatever chunks
    /// they are made of; different ones are not.
    #[test]
    fn kv_states_compare_by_content() {
        use std::hash::BuildHasher;
        let h = |s: &KvState| rustc_hash::FxBuildHasher.hash_one(s);
        let a = kv(&["ab", "c", "", "de"]);
        let b = kv(&["a", "bcd", "e"]);
        assert_eq!(a, b);
        assert_eq!(h(&a), h(&b));
        assert!(a.equals("abcde") && !a.equals("abcdf") && !a.equals("abcd"));
        assert_ne!(a, kv(&["abced"]));
        assert_ne!(a, kv(&["abcd"]));
        assert_eq!(kv(&[]), kv(&["", ""]));
        assert!(kv(&[""]).is_empty());
        // Shared prefixes: a node pointer compared, not the bytes.
        let base = kv(&["x 1 0 y"; 3]);
        let chunk: Arc<str> = "x 2 0 y".into();
        assert_eq!(base.append(&chunk), base.append(&chunk));
        assert_ne!(base.append(&chunk), base.append(&"x 2 0 z".into()));
    }

    /// A long chain of appends is dropped without recursion.
    #[test]
    fn a_long_kv_state_drops() {
        let chunk: Arc<str> = "x".into();
        let mut s = KvState::empty();
        for _ in 0..1_000_000 {
            s = s.append(&chunk);
        }
        assert_eq!(s.len(), 1_000_000);
        drop(s);
    }
}
