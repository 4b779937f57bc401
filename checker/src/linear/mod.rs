//! Linearizability checking: registers (read / write / cas) and
//! any model given as a small state machine ([`model::Model`]).
//!
//! Pipeline: the history's ops → per-key partitions ([`extract`]: by
//! Jepsen's independent `[k v]` tuples; linearizability is local, so a
//! history is linearizable iff every key's sub-history is — Horn &
//! Kroening's P-compositionality) → one Wing–Gong–Lowe search per key
//! ([`search`]), keys spread over threads, biggest first → per key a
//! verdict, a linearization or the longest linearizable prefix, and for a
//! failure the op that cannot be placed ([`Failure`]) → text and an
//! HTML/SVG timeline ([`report`]). The checker's [`Budget`] bounds the
//! search's time, `max_memory` the bytes the keys' caches take together
//! and `max_cache` the configurations one key keeps: running out of any
//! is `unknown` with what ran out and the longest prefix, never `valid`
//! and never an allocation failure. By default the first key proven not
//! linearizable stops the others (as Porcupine does): the history's
//! verdict is decided, and the keys still searching or not yet started
//! are left `unknown` and counted in [`LinearResult::skipped`];
//! [`LinearOptions::all_keys`] searches every key to the end (every
//! anomaly, at the cost of the slowest key).
//!
//! Semantics of completions (Herlihy & Wing 1990, as Knossos and Porcupine
//! treat crashed operations):
//! - `ok`: happened between invocation and completion, output known.
//! - `info`, or no completion: *open* until after every other event, with
//!   an unknown output — as Porcupine does it. It must still be placed
//!   somewhere after its invocation, but placing it after everything is
//!   the same as "never happened", so the verdicts equal Knossos', which
//!   lets an info op linearize "at any point after its invocation or
//!   never". (Knossos additionally reorders info ops to the end of its
//!   search list; Porcupine and we keep them in time order.) An info read
//!   constrains nothing and changes nothing, so it is left out before the
//!   search — Porcupine keeps it, and pays for it in the cache.
//! - `fail`: a failed write or read is left out (definitely no effect).
//!   A failed cas is, by default ([`FailedCas::Observed`]), an op that
//!   *happened and saw a value other than `old`* — Porcupine's etcd model
//!   and the meaning of SQL's "0 rows updated" — when its completion
//!   carries no error or `cas-mismatch`; a cas that failed with another
//!   error (an abort) is left out. [`FailedCas::Dropped`] is
//!   Knossos', which removes failed ops ("can't influence state").

mod cache;
pub mod extract;
pub mod knossos;
pub mod model;
pub mod report;
pub mod search;

use crate::budget::Budget;
use crate::result::Valid;
use model::Model;
use search::{Operation, Searched, Verdict};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use store::Key;

pub use extract::{ExtractError, FailedCas};

/// What to check a register history with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearOptions {
    /// What a failed cas means.
    pub failed_cas: FailedCas,
    /// Every register's value before any write (`None`: nil).
    pub initial: Option<i64>,
    /// Configurations one key's search may cache before it gives up
    /// (`unknown`): a memory limit. Each takes `8 × (3 + w)` bytes plus
    /// 13–19 of index (an 8-byte start, 4-byte slots at most 3/4 full),
    /// where `w` is the words of its linearized set after the run of ops
    /// linearized in call order (one or two on most histories; at most
    /// `⌈ops / 64⌉`): default 20 million, 0.9 GB for keys of up to 64 ops.
    pub max_cache: usize,
    /// Threads the keys are spread over (0: the machine's parallelism).
    pub threads: usize,
    /// Search every key to the end even after one is proven not
    /// linearizable (default: stop the others at the first failure).
    pub all_keys: bool,
    /// Bytes the searches' caches may take together (the caller derives
    /// it from the machine: the checker reads nothing); running out is
    /// `unknown` with the longest prefix, never an allocation failure.
    pub max_memory: usize,
}

impl Default for LinearOptions {
    fn default() -> LinearOptions {
        LinearOptions {
            failed_cas: FailedCas::Observed,
            initial: None,
            max_cache: 20_000_000,
            threads: 0,
            all_keys: false,
            max_memory: usize::MAX,
        }
    }
}

/// Why a key is not linearizable: after the longest linearizable prefix,
/// the op that has to take effect next and cannot.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure<S> {
    /// The model state after the longest prefix.
    pub state: S,
    /// The op (index into the key's ops) that returned first among those
    /// not in the prefix: it must be linearized before anything invoked
    /// after its return, and cannot be.
    pub blocking: u32,
    /// Every op that could go next (invoked before `blocking` returned):
    /// its index and the state it would lead to (`None`: illegal here).
    pub candidates: Vec<(u32, Option<S>)>,
}

/// One key's result.
#[derive(Clone, Debug)]
pub struct KeyResult<M: Model> {
    /// The key (`None`: the history's one unkeyed register).
    pub key: Option<Key>,
    /// Its ops, as searched.
    pub ops: Vec<Operation<M::Input, M::Output>>,
    /// The search's verdict, linearization or longest prefix, work done.
    pub searched: Searched,
    /// Why it failed (illegal keys only).
    pub failure: Option<Failure<M::State>>,
}

/// The result of a linearizability check.
#[derive(Clone, Debug)]
pub struct LinearResult<M: Model> {
    /// Invalid if any key is illegal, else unknown if any key is, else valid.
    pub valid: Valid,
    /// Per key, in key order.
    pub keys: Vec<KeyResult<M>>,
    /// Things worth knowing that do not change the verdict.
    pub warnings: Vec<String>,
    /// Keys left `unknown` because another key had already failed (never
    /// with [`LinearOptions::all_keys`]).
    pub skipped: usize,
}

impl<M: Model> LinearResult<M> {
    /// The keys that are not linearizable.
    pub fn failures(&self) -> impl Iterator<Item = &KeyResult<M>> {
        self.keys
            .iter()
            .filter(|k| k.searched.verdict == Verdict::Illegal)
    }

    /// Ops searched over all keys.
    pub fn op_count(&self) -> usize {
        self.keys.iter().map(|k| k.ops.len()).sum()
    }
}

/// Checks a register history (read / write / cas ops, keyed by Jepsen's
/// independent tuples or one unkeyed register).
///
/// # Errors
/// [`ExtractError`] when an op is not a register op of a known shape.
pub fn check_register(
    history: &store::History,
    opts: &LinearOptions,
    budget: &Budget,
) -> Result<LinearResult<model::CasRegister>, ExtractError> {
    let extracted = extract::registers(history, opts.failed_cas)?;
    let model = model::CasRegister {
        initial: opts.initial,
    };
    let mut result = check_partitions(&model, extracted.keys, budget, opts);
    result.warnings.extend(extracted.warnings);
    Ok(result)
}

/// Checks a Porcupine kv history (get / put / append on string keys).
///
/// # Errors
/// [`ExtractError`] when an op is not a kv op.
pub fn check_kv(
    history: &store::History,
    opts: &LinearOptions,
    budget: &Budget,
) -> Result<LinearResult<model::KvString>, ExtractError> {
    let extracted = extract::kv(history)?;
    let mut result = check_partitions(&model::KvString, extracted.keys, budget, opts);
    result.warnings.extend(extracted.warnings);
    Ok(result)
}

/// Checks a history of one of Knossos' other models (multi-register,
/// mutex, FIFO or unordered queue, set): failed ops did not happen.
///
/// # Errors
/// [`ExtractError`] when an op is not one of the model's.
pub fn check_knossos(
    history: &store::History,
    kind: knossos::Kind,
    opts: &LinearOptions,
    budget: &Budget,
) -> Result<LinearResult<knossos::Knossos>, ExtractError> {
    let extracted = knossos::extract(history, kind)?;
    let model = knossos::Knossos(kind);
    let mut result = check_partitions(&model, extracted.keys, budget, opts);
    result.warnings.extend(extracted.warnings);
    Ok(result)
}

/// Checks independent partitions of any model, spread over threads
/// (largest first), results in the order given.
pub fn check_partitions<M>(
    model: &M,
    parts: Vec<search::Partition<M::Input, M::Output>>,
    budget: &Budget,
    opts: &LinearOptions,
) -> LinearResult<M>
where
    M: Model + Sync,
    M::Input: Send + Sync,
    M::Output: Send + Sync,
    M::State: Send,
{
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(parts[i].1.len()));
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(parts.len())
    .max(1);
    type Slot<S> = Mutex<Option<(Searched, Option<Failure<S>>)>>;
    let slots: Vec<Slot<M::State>> = parts.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    // Set by the first illegal key unless every key is wanted.
    let stop = AtomicBool::new(false);
    let skipped = AtomicUsize::new(0);
    let memory = search::Memory::new(opts.max_memory);
    let work = || {
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = order.get(k) else { break };
            if stop.load(Ordering::Relaxed) {
                skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let ops = &parts[i].1;
            let searched = search::search_until(model, ops, budget, opts.max_cache, &stop, &memory);
            let failure = (searched.verdict == Verdict::Illegal)
                .then(|| explain(model, ops, &searched.order));
            if failure.is_some() && !opts.all_keys {
                stop.store(true, Ordering::Relaxed);
            } else if searched.verdict == Verdict::Unknown && stop.load(Ordering::Relaxed) {
                skipped.fetch_add(1, Ordering::Relaxed);
            }
            if let Ok(mut slot) = slots[i].lock() {
                *slot = Some((searched, failure));
            }
        }
    };
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    let mut valid = Valid::True;
    let mut keys = Vec::with_capacity(parts.len());
    for ((key, ops), slot) in parts.into_iter().zip(slots) {
        let (searched, failure) = slot
            .into_inner()
            .ok()
            .flatten()
            .unwrap_or_else(|| (unknown_search(), None));
        valid = valid.combine(match searched.verdict {
            Verdict::Linearizable => Valid::True,
            Verdict::Illegal => Valid::False,
            Verdict::Unknown => Valid::Unknown,
        });
        keys.push(KeyResult {
            key,
            ops,
            searched,
            failure,
        });
    }
    LinearResult {
        valid,
        keys,
        warnings: Vec::new(),
        skipped: skipped.into_inner(),
    }
}

fn unknown_search() -> Searched {
    Searched {
        verdict: Verdict::Unknown,
        order: Vec::new(),
        steps: 0,
        cache_entries: 0,
        states: 0,
        exhausted: None,
    }
}

/// Replays the longest prefix and names the op that cannot go next.
fn explain<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    prefix: &[u32],
) -> Failure<M::State> {
    let mut state = model.init();
    let mut placed = vec![false; ops.len()];
    for &i in prefix {
        placed[i as usize] = true;
        // The prefix was replayed by the search, so every step is legal;
        // keep the state if not (defensive, never expected).
        if let Some(s) = model.step(
            &state,
            &ops[i as usize].input,
            ops[i as usize].output.as_ref(),
        ) {
            state = s;
        }
    }
    let rest = || (0..ops.len()).filter(|&i| !placed[i]);
    let blocking = rest()
        .min_by_key(|&i| (ops[i].ret.unwrap_or(i64::MAX), i))
        .unwrap_or(0);
    let deadline = ops.get(blocking).and_then(|o| o.ret).unwrap_or(i64::MAX);
    let candidates = rest()
        .filter(|&i| ops[i].call <= deadline)
        .map(|i| {
            (
                i as u32,
                model.step(&state, &ops[i].input, ops[i].output.as_ref()),
            )
        })
        .collect();
    Failure {
        state,
        blocking: blocking as u32,
        candidates,
    }
}
