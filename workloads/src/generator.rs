//! The `Generator` trait: pure, seeded producers of invocations.
//!
//! A generator never touches time, threads or IO: the runner's interpreter
//! asks it for the next op given a [`Ctx`] (the test's logical time and which
//! worker threads are free), and tells it about completions with
//! [`Generator::update`]. Same seed + same completions ⇒ same invocations.

use store::{F, MicroOp, OpType};

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
}

impl<G: Generator + ?Sized> Generator for Box<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        (**self).next(ctx)
    }
    fn update(&mut self, ctx: &Ctx, event: &Event) {
        (**self).update(ctx, event)
    }
}
