//! The search of one partition: Wing & Gong's backtracking over a linked
//! list of call/return entries with Lowe's cache of configurations
//! (linearized set, model state) — the algorithm of Knossos' `wgl` and
//! Porcupine's `checkSingle`, iterative (an explicit stack; the history's
//! size never reaches the call stack).
//!
//! Layout (why it is fast): entries are two `u32` arrays (`prev`, `next`),
//! so lifting an op and undoing it are four stores each; states are
//! interned to `u32` ids; the linearized set is a bitset whose hash is kept
//! incrementally (xor of one random word per op), so a cache probe costs a
//! hash lookup plus one bitset comparison on a hit, never a rehash of the
//! bitset; the cache stores each configuration once, in a compact form
//! (the window of the bitset past its all-ones prefix, [`super::cache`])
//! in fixed-size chunks (it grows without a doubling copy), found through
//! an open-addressing table of 4-byte record ids;
//! model states are stored once each, found by hash (a kv state is a small
//! rope node, [`super::model::KvState`]). The longest linearizable prefix
//! is kept up to date in time linear in the pushes (a low-water mark of
//! the stack since the last copy), so reporting it costs nothing extra.

use super::cache::{Cache, Inserted, LinSet};
use super::model::Model;
use crate::budget::Budget;
use rustc_hash::FxHashMap;
use std::hash::BuildHasher as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One operation of a partition, in the order the caller numbers them.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation<I, O> {
    /// The caller's reference (harness: the history position of the invocation).
    pub id: usize,
    /// Who performed it, if known (for pictures).
    pub process: Option<u64>,
    /// When it was invoked.
    pub call: i64,
    /// When it returned; `None` for an op that never returned (`info`, or
    /// no completion): open until after every other event.
    pub ret: Option<i64>,
    /// What it asked.
    pub input: I,
    /// What it answered; `None` = unknown (accept any).
    pub output: Option<O>,
}

/// One partition: its key (`None`: the unkeyed register) and its ops.
pub type Partition<I, O> = (Option<store::Key>, Vec<Operation<I, O>>);

/// The verdict of one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Some order of the ops respects real time and the model.
    Linearizable,
    /// None does.
    Illegal,
    /// The budget or the cache limit ran out first.
    Unknown,
}

/// What [`search`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct Searched {
    /// The verdict.
    pub verdict: Verdict,
    /// Linearizable: a linearization (indices into the ops, first to
    /// last). Otherwise the longest linearizable prefix the search reached.
    pub order: Vec<u32>,
    /// Loop iterations (the work done).
    pub steps: u64,
    /// Configurations cached.
    pub cache_entries: usize,
    /// Distinct model states met.
    pub states: usize,
    /// Why the verdict is unknown: what ran out (`None` when decided).
    pub exhausted: Option<Exhausted>,
}

/// What a search ran out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exhausted {
    /// The check's time budget.
    Time,
    /// The memory the searches may take together ([`Memory`]).
    Memory,
    /// The configurations one key may cache (`max_cache`).
    Configurations,
    /// Another key was proven not linearizable first; this one was stopped.
    Stopped,
}

impl Exhausted {
    /// In words.
    pub fn name(self) -> &'static str {
        match self {
            Exhausted::Time => "time limit",
            Exhausted::Memory => "memory limit",
            Exhausted::Configurations => "configuration limit",
            Exhausted::Stopped => "stopped after another key failed",
        }
    }
}

/// The memory the searches of one check may take together (their caches
/// of configurations, the bulk of what a search holds): charged before
/// each allocation, so running out is an `unknown` verdict, never an
/// allocation failure.
#[derive(Debug)]
pub struct Memory {
    limit: usize,
    used: AtomicUsize,
}

impl Memory {
    /// At most `limit` bytes.
    pub fn new(limit: usize) -> Memory {
        Memory {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// No limit.
    pub fn unlimited() -> Memory {
        Memory::new(usize::MAX)
    }

    /// The limit, bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `bytes` if they fit under the limit.
    pub(super) fn take(&self, bytes: usize) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let Some(after) = used.checked_add(bytes).filter(|&a| a <= self.limit) else {
                return false;
            };
            match self
                .used
                .compare_exchange_weak(used, after, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    pub(super) fn give(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

const NIL: u32 = u32::MAX;
/// Budget charged once per this many iterations (a charge is an atomic add).
const CHARGE_EVERY: u64 = 1024;

fn mix(mut x: u64) -> u64 {
    // splitmix64's finaliser: a cheap, well-spread word per op / state.
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The model states met, each stored once, found by hash.
struct States<S> {
    states: Vec<S>,
    /// State hash → first state of its chain.
    heads: FxHashMap<u64, u32>,
    /// The next state with the same hash, per state.
    next: Vec<u32>,
}

impl<S: Eq + std::hash::Hash> States<S> {
    fn new(init: S) -> States<S> {
        let mut t = States {
            states: Vec::new(),
            heads: FxHashMap::default(),
            next: Vec::new(),
        };
        t.intern(init);
        t
    }

    /// The id of `s`, added if new (moved in, never cloned).
    fn intern(&mut self, s: S) -> u32 {
        let h = rustc_hash::FxBuildHasher.hash_one(&s);
        let head = self.heads.entry(h).or_insert(NIL);
        let mut id = *head;
        while id != NIL {
            if self.states[id as usize] == s {
                return id;
            }
            id = self.next[id as usize];
        }
        let new = self.states.len() as u32;
        self.next.push(*head);
        *head = new;
        self.states.push(s);
        new
    }
}

/// Decides whether `ops` are linearizable with respect to `model`.
/// `max_cache` bounds the configurations kept; running out of it or of
/// `budget` gives [`Verdict::Unknown`], never a guess.
pub fn search<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: &Budget,
    max_cache: usize,
) -> Searched {
    search_until(
        model,
        ops,
        budget,
        max_cache,
        &AtomicBool::new(false),
        &Memory::unlimited(),
    )
}

/// As [`search`], and gives up ([`Verdict::Unknown`]) soon after `stop` is
/// set — polled with the budget, every 1024 steps: how the
/// other keys stop once one key is proven not linearizable.
///
/// `memory` is shared by the searches of one check: running out of it is
/// [`Verdict::Unknown`] ([`Exhausted::Memory`]) with the longest prefix
/// found so far.
pub fn search_until<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    budget: &Budget,
    max_cache: usize,
    stop: &AtomicBool,
    memory: &Memory,
) -> Searched {
    let n = ops.len();
    if n == 0 {
        return Searched {
            verdict: Verdict::Linearizable,
            order: Vec::new(),
            steps: 0,
            cache_entries: 0,
            states: 0,
            exhausted: None,
        };
    }
    // Entries: a call and a return per op, by time; at equal times calls
    // come first (touching intervals are concurrent); open ops return last.
    let mut events: Vec<(i64, u8, u32)> = Vec::with_capacity(2 * n);
    for (i, op) in ops.iter().enumerate() {
        events.push((op.call, 0, i as u32));
        events.push((op.ret.unwrap_or(i64::MAX), 1, i as u32));
    }
    events.sort_unstable();
    let head = 2 * n;
    let mut next = vec![NIL; 2 * n + 1];
    let mut prev = vec![NIL; 2 * n + 1];
    let mut op_of = vec![0u32; 2 * n];
    let mut is_call = vec![false; 2 * n];
    let mut ret_of_op = vec![0u32; n];
    // Bit positions in the linearized set: returning ops by call, then
    // the open ones (see `cache`).
    let open = ops.iter().filter(|op| op.ret.is_none()).count();
    let mut bit = vec![0u32; n];
    let (mut next_main, mut next_open) = (0u32, 0u32);
    let mut last = head as u32;
    for (e, &(_, kind, i)) in events.iter().enumerate() {
        op_of[e] = i;
        is_call[e] = kind == 0;
        if kind == 1 {
            ret_of_op[i as usize] = e as u32;
        } else if ops[i as usize].ret.is_some() {
            bit[i as usize] = next_main;
            next_main += 1;
        } else {
            bit[i as usize] = next_open;
            next_open += 1;
        }
        next[last as usize] = e as u32;
        prev[e] = last;
        last = e as u32;
    }
    drop(events);

    let main_words = (n - open).div_ceil(64) as u32;
    for (b, op) in bit.iter_mut().zip(ops) {
        if op.ret.is_none() {
            *b += 64 * main_words;
        }
    }
    let zobrist: Vec<u64> = (0..n as u64).map(mix).collect();
    let mut set = LinSet::new(n - open, open);
    let mut set_hash = 0u64;
    let mut cache = Cache::new(memory, &set);
    let mut states = States::new(model.init());
    let mut cur: u32 = 0;
    // (call entry, state id before it)
    let mut stack: Vec<(u32, u32)> = Vec::new();
    let mut best: Vec<u32> = Vec::new();
    let mut low = 0usize;
    let mut steps = 0u64;

    let finish = |verdict, order, steps, cache: &Cache, states: &States<M::State>| Searched {
        verdict,
        order,
        steps,
        cache_entries: cache.len(),
        states: states.states.len(),
        exhausted: None,
    };
    let give_up = |why, order, steps, cache: &Cache, states: &States<M::State>| Searched {
        exhausted: Some(why),
        ..finish(Verdict::Unknown, order, steps, cache, states)
    };

    let mut entry = next[head];
    while next[head] != NIL {
        steps += 1;
        if steps.is_multiple_of(CHARGE_EVERY) {
            if budget.charge(CHARGE_EVERY) {
                return give_up(Exhausted::Time, best, steps, &cache, &states);
            }
            if stop.load(Ordering::Relaxed) {
                return give_up(Exhausted::Stopped, best, steps, &cache, &states);
            }
        }
        let e = entry as usize;
        if is_call[e] {
            let i = op_of[e] as usize;
            let op = &ops[i];
            let stepped = model.step(&states.states[cur as usize], &op.input, op.output.as_ref());
            match stepped {
                Some(s) => {
                    let sid = states.intern(s);
                    set.insert(bit[i]);
                    set_hash ^= zobrist[i];
                    let key = set_hash ^ mix(u64::from(sid) ^ 0x5bd1_e995);
                    let inserted = cache.insert(key, &set, sid);
                    if inserted == Inserted::Full {
                        return give_up(Exhausted::Memory, best, steps, &cache, &states);
                    }
                    if inserted == Inserted::New {
                        if cache.len() > max_cache {
                            return give_up(
                                Exhausted::Configurations,
                                best,
                                steps,
                                &cache,
                                &states,
                            );
                        }
                        stack.push((entry, cur));
                        cur = sid;
                        // lift: unlink the call and its return
                        let r = ret_of_op[i] as usize;
                        next[prev[e] as usize] = next[e];
                        prev[next[e] as usize] = prev[e];
                        next[prev[r] as usize] = next[r];
                        if next[r] != NIL {
                            prev[next[r] as usize] = prev[r];
                        }
                        if stack.len() > best.len() {
                            best.truncate(low);
                            best.extend(stack[low..].iter().map(|&(c, _)| op_of[c as usize]));
                            low = stack.len();
                        }
                        entry = next[head];
                    } else {
                        set.remove(bit[i]);
                        set_hash ^= zobrist[i];
                        entry = next[e];
                    }
                }
                None => entry = next[e],
            }
        } else {
            // A return whose call is not linearized: the prefix is a dead end.
            let Some((c, s)) = stack.pop() else {
                return finish(Verdict::Illegal, best, steps, &cache, &states);
            };
            low = low.min(stack.len());
            cur = s;
            let c = c as usize;
            let i = op_of[c] as usize;
            set.remove(bit[i]);
            set_hash ^= zobrist[i];
            // unlift: relink the return, then the call
            let r = ret_of_op[i] as usize;
            next[prev[r] as usize] = r as u32;
            if next[r] != NIL {
                prev[next[r] as usize] = r as u32;
            }
            next[prev[c] as usize] = c as u32;
            prev[next[c] as usize] = c as u32;
            entry = next[c];
        }
    }
    let order = stack.iter().map(|&(c, _)| op_of[c as usize]).collect();
    budget.charge(steps % CHARGE_EVERY);
    finish(Verdict::Linearizable, order, steps, &cache, &states)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::model::{CasRegister, RegInput, RegOutput};

    fn op(
        call: i64,
        ret: Option<i64>,
        input: RegInput,
        output: Option<RegOutput>,
    ) -> Operation<RegInput, RegOutput> {
        Operation {
            id: 0,
            process: None,
            call,
            ret,
            input,
            output,
        }
    }

    #[test]
    fn concurrent_write_explains_read() {
        let m = CasRegister::default();
        let ops = vec![
            op(0, Some(10), RegInput::Write(1), Some(RegOutput::Written)),
            op(1, Some(2), RegInput::Read, Some(RegOutput::Read(Some(1)))),
            op(3, Some(4), RegInput::Read, Some(RegOutput::Read(Some(1)))),
        ];
        let s = search(&m, &ops, &Budget::unlimited(), usize::MAX);
        assert_eq!(s.verdict, Verdict::Linearizable);
        assert_eq!(s.order, vec![0, 1, 2]);
    }

    #[test]
    fn stale_read_is_illegal_and_prefix_kept() {
        let m = CasRegister::default();
        let ops = vec![
            op(0, Some(1), RegInput::Write(1), Some(RegOutput::Written)),
            op(2, Some(3), RegInput::Write(2), Some(RegOutput::Written)),
            op(4, Some(5), RegInput::Read, Some(RegOutput::Read(Some(1)))),
        ];
        let s = search(&m, &ops, &Budget::unlimited(), usize::MAX);
        assert_eq!(s.verdict, Verdict::Illegal);
        assert_eq!(s.order, vec![0, 1]);
    }

    #[test]
    fn budget_gives_unknown() {
        let m = CasRegister::default();
        // Many concurrent writes and an impossible read: lots of search.
        let mut ops: Vec<_> = (0..16)
            .map(|v| op(0, Some(100), RegInput::Write(v), Some(RegOutput::Written)))
            .collect();
        ops.push(op(
            200,
            Some(201),
            RegInput::Read,
            Some(RegOutput::Read(Some(99))),
        ));
        let s = search(&m, &ops, &Budget::steps(10), usize::MAX);
        assert_eq!(s.verdict, Verdict::Unknown);
        let s = search(&m, &ops, &Budget::unlimited(), 100);
        assert_eq!(s.verdict, Verdict::Unknown);
    }
}
