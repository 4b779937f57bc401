//! Structural combinators: choice, counts, barriers, per-thread copies and
//! fixed sequences (including the final reads of every touched key).

use super::{Ctx, Event, Generator, Invocation, Next, Thread, merge_keys};
use crate::rng::{SeededRng, seeded};
use rand::RngExt;
use std::collections::VecDeque;
use store::{F, Key, MicroOp, ReadValue};

/// Random choice among generators, per op (Jepsen's `mix`).
///
/// A generator that is exhausted is dropped from the choice; the mix is
/// exhausted when all are. While the chosen generator is `Pending` the choice
/// stands, so a pending branch is not starved by a busy one.
pub struct Mix<G> {
    gens: Vec<G>,
    rng: SeededRng,
    current: Option<usize>,
}

/// Random choice among `gens`, seeded by `seed`.
pub fn mix<G: Generator>(gens: Vec<G>, seed: u64) -> Mix<G> {
    Mix {
        gens,
        rng: seeded(seed),
        current: None,
    }
}

impl<G: Generator> Generator for Mix<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        loop {
            if self.gens.is_empty() {
                return Next::Exhausted;
            }
            let i = match self.current {
                Some(i) if i < self.gens.len() => i,
                _ => {
                    let i = self.rng.random_range(0..self.gens.len());
                    self.current = Some(i);
                    i
                }
            };
            match self.gens[i].next(ctx) {
                Next::Exhausted => {
                    self.gens.remove(i);
                    self.current = None;
                }
                Next::Pending => return Next::Pending,
                op @ Next::Op { .. } => {
                    self.current = None;
                    return op;
                }
            }
        }
    }

    fn update(&mut self, ctx: &Ctx, event: &Event) {
        for g in &mut self.gens {
            g.update(ctx, event);
        }
    }

    fn touched_keys(&self) -> Vec<Key> {
        merge_keys(self.gens.iter().map(|g| g.touched_keys()))
    }
}

/// At most `n` ops from the inner generator (Jepsen's `limit`).
pub struct Limit<G> {
    remaining: u64,
    inner: G,
}

/// At most `n` ops from `inner`.
pub fn limit<G: Generator>(n: u64, inner: G) -> Limit<G> {
    Limit {
        remaining: n,
        inner,
    }
}

impl<G: Generator> Generator for Limit<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if self.remaining == 0 {
            return Next::Exhausted;
        }
        let next = self.inner.next(ctx);
        if matches!(next, Next::Op { .. }) {
            self.remaining -= 1;
        }
        next
    }

    fn update(&mut self, ctx: &Ctx, event: &Event) {
        self.inner.update(ctx, event);
    }

    fn touched_keys(&self) -> Vec<Key> {
        self.inner.touched_keys()
    }
    fn final_generator(&self) -> Option<Box<dyn Generator>> {
        self.inner.final_generator()
    }
}

/// Waits until every worker thread is idle before the inner generator's
/// first op (Jepsen's `synchronize`, the barrier of [`phases`]).
pub struct Synchronize<G> {
    started: bool,
    inner: G,
}

/// `inner`, started only once all threads are idle.
pub fn synchronize<G: Generator>(inner: G) -> Synchronize<G> {
    Synchronize {
        started: false,
        inner,
    }
}

impl<G: Generator> Generator for Synchronize<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if !self.started {
            if !ctx.all_idle() {
                return Next::Pending;
            }
            self.started = true;
        }
        self.inner.next(ctx)
    }

    fn update(&mut self, ctx: &Ctx, event: &Event) {
        self.inner.update(ctx, event);
    }

    fn touched_keys(&self) -> Vec<Key> {
        self.inner.touched_keys()
    }
    fn final_generator(&self) -> Option<Box<dyn Generator>> {
        self.inner.final_generator()
    }
}

/// Generators run one after another; each phase starts only when every
/// thread of the previous one is idle (Jepsen's `phases`).
pub struct Phases<G> {
    phases: Vec<Synchronize<G>>,
    current: usize,
}

/// `gens` in order, with a barrier before each.
pub fn phases<G: Generator>(gens: Vec<G>) -> Phases<G> {
    Phases {
        phases: gens.into_iter().map(synchronize).collect(),
        current: 0,
    }
}

impl<G: Generator> Generator for Phases<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        while let Some(phase) = self.phases.get_mut(self.current) {
            match phase.next(ctx) {
                Next::Exhausted => self.current += 1,
                other => return other,
            }
        }
        Next::Exhausted
    }

    fn update(&mut self, ctx: &Ctx, event: &Event) {
        // Completions of the previous phase can arrive while the next one
        // waits at its barrier: tell both.
        let from = self.current.saturating_sub(1);
        let to = (self.current + 1).min(self.phases.len());
        for phase in &mut self.phases[from..to] {
            phase.update(ctx, event);
        }
    }

    fn touched_keys(&self) -> Vec<Key> {
        merge_keys(self.phases.iter().map(|g| g.touched_keys()))
    }
}

/// An independent copy of a generator for every worker thread (Jepsen's
/// `each-thread`); each copy only ever sees its own thread as free.
pub struct EachThread<G> {
    make: Box<dyn FnMut(Thread) -> G + Send>,
    copies: Vec<Option<G>>,
    exhausted: Vec<bool>,
}

/// A copy made by `make(thread)` for each thread, created when that thread
/// is first free.
pub fn each_thread<G: Generator>(make: impl FnMut(Thread) -> G + Send + 'static) -> EachThread<G> {
    EachThread {
        make: Box::new(make),
        copies: Vec::new(),
        exhausted: Vec::new(),
    }
}

impl<G: Generator> Generator for EachThread<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        while self.copies.len() < ctx.thread_count {
            self.copies.push(None);
            self.exhausted.push(false);
        }
        for &t in &ctx.free_threads {
            if self.exhausted.get(t.0).copied().unwrap_or(true) {
                continue;
            }
            let copy = match &mut self.copies[t.0] {
                Some(c) => c,
                slot @ None => slot.insert((self.make)(t)),
            };
            let own = Ctx {
                time_ns: ctx.time_ns,
                free_threads: vec![t],
                thread_count: ctx.thread_count,
            };
            match copy.next(&own) {
                Next::Exhausted => self.exhausted[t.0] = true,
                Next::Pending => {}
                Next::Op {
                    at_ns, invocation, ..
                } => {
                    return Next::Op {
                        thread: t,
                        at_ns,
                        invocation,
                    };
                }
            }
        }
        if self.exhausted.iter().all(|&e| e) {
            Next::Exhausted
        } else {
            Next::Pending
        }
    }

    fn update(&mut self, ctx: &Ctx, event: &Event) {
        if let Some(Some(copy)) = self.copies.get_mut(event.thread.0) {
            copy.update(ctx, event);
        }
    }

    fn touched_keys(&self) -> Vec<Key> {
        merge_keys(self.copies.iter().flatten().map(|g| g.touched_keys()))
    }
}

/// A fixed list of invocations, each given to the lowest free thread.
pub struct Sequence {
    items: VecDeque<Invocation>,
    keys: Vec<Key>,
}

impl Sequence {
    /// The invocations in order.
    pub fn new(items: impl IntoIterator<Item = Invocation>) -> Sequence {
        let items: VecDeque<Invocation> = items.into_iter().collect();
        let keys = merge_keys(
            items
                .iter()
                .map(|inv| inv.value.iter().map(|m| m.key().clone()).collect()),
        );
        Sequence { items, keys }
    }

    /// How many invocations are left.
    pub fn remaining(&self) -> usize {
        self.items.len()
    }
}

/// One invocation, once.
pub fn once(invocation: Invocation) -> Sequence {
    Sequence::new([invocation])
}

impl Generator for Sequence {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if self.items.is_empty() {
            return Next::Exhausted;
        }
        let Some(thread) = ctx.first_free() else {
            return Next::Pending;
        };
        match self.items.pop_front() {
            Some(invocation) => Next::Op {
                thread,
                at_ns: ctx.time_ns,
                invocation,
            },
            None => Next::Exhausted,
        }
    }

    fn touched_keys(&self) -> Vec<Key> {
        self.keys.clone()
    }
}

/// One read of every key in `keys`, `batch` keys per transaction (Jepsen
/// reads final keys in batches of 8), spread over the free threads.
pub fn final_reads(keys: &[Key], batch: usize) -> Sequence {
    let batch = batch.max(1);
    Sequence::new(keys.chunks(batch).map(|chunk| {
        Invocation {
            f: F::Txn,
            value: chunk
                .iter()
                .map(|k| MicroOp::Read(k.clone(), ReadValue::Nil))
                .collect(),
        }
    }))
}

/// The main generator, then (after a barrier) one read of every key it
/// touched: the `final reads` phase, built when the main phase ends.
pub struct FinalReads<G> {
    main: G,
    batch: usize,
    reads: Option<Synchronize<Sequence>>,
}

/// `main`, then a barrier, then [`final_reads`] of `main.touched_keys()`.
pub fn then_final_reads<G: Generator>(main: G, batch: usize) -> FinalReads<G> {
    FinalReads {
        main,
        batch,
        reads: None,
    }
}

impl<G: Generator> Generator for FinalReads<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if self.reads.is_none() {
            match self.main.next(ctx) {
                Next::Exhausted => {
                    let keys = self.main.touched_keys();
                    self.reads = Some(synchronize(final_reads(&keys, self.batch)));
                }
                other => return other,
            }
        }
        match &mut self.reads {
            Some(reads) => reads.next(ctx),
            None => Next::Exhausted,
        }
    }

    fn update(&mut self, ctx: &Ctx, event: &Event) {
        self.main.update(ctx, event);
    }

    fn touched_keys(&self) -> Vec<Key> {
        self.main.touched_keys()
    }
}
