//! The `Generator` trait: pure, seeded producers of invocations.
//!
//! A generator never touches time, threads or IO: the runner's interpreter
//! asks it for the next op given a [`Ctx`] (the test's logical time and which
//! worker threads are free), and tells it about completions with
//! [`Generator::update`]. Same seed + same completions ⇒ same invocations.
//!
//! Contract with the interpreter: a returned [`Next::Op`] is a commitment.
//! The interpreter runs it on that thread (waiting until `at_ns` if that is
//! in the future) and does not list the thread in [`Ctx::free_threads`] again
//! until the completion has been passed to [`Generator::update`]. `Pending`
//! means "ask again after the next completion or after a short wait".
//!
//! Combinators (Jepsen's names): [`mix`], [`stagger`] / [`rate`], [`delay`],
//! [`limit`], [`time_limit`], [`synchronize`], [`phases`] (a barrier between
//! phases), [`each_thread`], [`once`] / [`Sequence`], and final reads
//! ([`final_reads`], [`then_final_reads`]). Randomness comes only from seeds.

use store::{F, Key, MicroOp, OpType};

mod combinators;
mod timing;

pub use combinators::{
    EachThread, FinalReads, Limit, Mix, Phases, Sequence, Synchronize, each_thread, final_reads,
    limit, mix, once, phases, synchronize, then_final_reads,
};
pub use timing::{
    Delay, FixedGap, RandomGap, Spaced, Spacing, Stagger, TimeLimit, delay, rate, stagger,
    time_limit,
};

/// A worker thread slot (0..concurrency). The runner maps it to a process id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Thread(pub usize);

/// What a worker is asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    /// The function (`txn` for transactions).
    pub f: F,
    /// The micro-ops; reads carry `ReadValue::Nil` until completed.
    pub value: Vec<MicroOp>,
}

/// What the interpreter knows when it asks for an op.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// Nanoseconds since the test started (logical time, supplied by the runner).
    pub time_ns: u64,
    /// Worker threads currently idle, ascending.
    pub free_threads: Vec<Thread>,
    /// Total number of worker threads.
    pub thread_count: usize,
}

/// A generator's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Run `invocation` on `thread` (which must be free), not before `at_ns`.
    Op {
        /// The worker thread to run it.
        thread: Thread,
        /// Earliest logical time to invoke it (for rate limiting / stagger).
        at_ns: u64,
        /// What to run.
        invocation: Invocation,
    },
    /// Nothing now; ask again after a completion or a short wait.
    Pending,
    /// This generator will never produce another op.
    Exhausted,
}

/// A completion event fed back to generators.
#[derive(Clone, Debug)]
pub struct Event {
    /// The thread that completed.
    pub thread: Thread,
    /// `Ok`, `Fail` or `Info`.
    pub op_type: OpType,
    /// The completed value (reads filled in when `Ok`).
    pub value: Vec<MicroOp>,
    /// Logical time of the completion.
    pub time_ns: u64,
}

/// A pure, deterministic source of invocations.
pub trait Generator: Send {
    /// The next op to run, or why there is none.
    fn next(&mut self, ctx: &Ctx) -> Next;

    /// Learns about a completion. Most generators ignore it.
    fn update(&mut self, _ctx: &Ctx, _event: &Event) {}

    /// Every key this generator (and those it wraps) has put into an
    /// invocation so far, ascending and without duplicates. The final-read
    /// phase reads each of them once ([`final_reads`], [`then_final_reads`]).
    fn touched_keys(&self) -> Vec<Key> {
        Vec::new()
    }

    /// The workload's own final phase (Jepsen's workloads: e.g. bank's
    /// one last read), run instead of the item reads of
    /// [`Generator::touched_keys`]; `None` (the default) for those.
    fn final_generator(&self) -> Option<Box<dyn Generator>> {
        None
    }
}

impl<G: Generator + ?Sized> Generator for Box<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        (**self).next(ctx)
    }
    fn update(&mut self, ctx: &Ctx, event: &Event) {
        (**self).update(ctx, event)
    }
    fn touched_keys(&self) -> Vec<Key> {
        (**self).touched_keys()
    }
    fn final_generator(&self) -> Option<Box<dyn Generator>> {
        (**self).final_generator()
    }
}

impl Ctx {
    /// A context at `time_ns` with threads `0..thread_count` all free (the
    /// start of a test; convenient for drivers and tests).
    pub fn all_free(time_ns: u64, thread_count: usize) -> Ctx {
        Ctx {
            time_ns,
            free_threads: (0..thread_count).map(Thread).collect(),
            thread_count,
        }
    }

    /// The lowest free thread, if any.
    pub fn first_free(&self) -> Option<Thread> {
        self.free_threads.first().copied()
    }

    /// Whether every worker thread is idle (the barrier of [`Phases`]).
    pub fn all_idle(&self) -> bool {
        self.free_threads.len() >= self.thread_count
    }
}

/// Merges sorted key lists into one sorted, deduplicated list.
pub(crate) fn merge_keys(lists: impl IntoIterator<Item = Vec<Key>>) -> Vec<Key> {
    let mut all: Vec<Key> = lists.into_iter().flatten().collect();
    all.sort_unstable();
    all.dedup();
    all
}
