//! Time-based combinators: scheduling ops with `at_ns` (stagger, delay,
//! rate) and cutting a generator off after a duration (time limit).
//!
//! Time is only ever `Ctx::time_ns` and the `at_ns` of ops: these never read
//! a clock.

use super::{Ctx, Event, Generator, Next};
use crate::WorkloadError;
use crate::rng::{SeededRng, seeded};
use rand::RngExt;
use store::Key;

/// How far after one op the next may start.
pub trait Spacing: Send {
    /// The gap after an op, in nanoseconds.
    fn gap_ns(&mut self) -> u64;
}

/// A uniformly random gap in `[0, 2·dt_ns)` (Jepsen's `stagger`).
pub struct RandomGap {
    dt_ns: u64,
    rng: SeededRng,
}

impl Spacing for RandomGap {
    fn gap_ns(&mut self) -> u64 {
        let spread = self.dt_ns.saturating_mul(2);
        if spread == 0 {
            0
        } else {
            self.rng.random_range(0..spread)
        }
    }
}

/// Exactly `dt_ns` (Jepsen's `delay`).
pub struct FixedGap(u64);

impl Spacing for FixedGap {
    fn gap_ns(&mut self) -> u64 {
        self.0
    }
}

/// Spaces ops globally across threads: each op starts no earlier than the
/// previous op's start plus the spacing's gap.
pub struct Spaced<G, S> {
    spacing: S,
    next_at: Option<u64>,
    inner: G,
}

/// Spaces ops by a uniformly random delay in `[0, 2·dt)`, globally across
/// threads (Jepsen's `stagger`): on average one op every `dt_ns`.
pub type Stagger<G> = Spaced<G, RandomGap>;

/// Spaces ops exactly `dt_ns` apart, globally (Jepsen's `delay`).
pub type Delay<G> = Spaced<G, FixedGap>;

/// `inner` with ops spaced by a uniform random delay in `[0, 2·dt_ns)`.
pub fn stagger<G: Generator>(dt_ns: u64, seed: u64, inner: G) -> Stagger<G> {
    let spacing = RandomGap {
        dt_ns,
        rng: seeded(seed),
    };
    Spaced {
        spacing,
        next_at: None,
        inner,
    }
}

/// `inner` at about `ops_per_s` ops per second: `stagger(1/rate)`, as
/// Jepsen's test assemblies do.
///
/// # Errors
/// [`WorkloadError::Invalid`] when `ops_per_s` is not a positive finite number.
pub fn rate<G: Generator>(
    ops_per_s: f64,
    seed: u64,
    inner: G,
) -> Result<Stagger<G>, WorkloadError> {
    if !(ops_per_s.is_finite() && ops_per_s > 0.0) {
        return Err(WorkloadError::Invalid {
            field: "rate",
            reason: format!("must be a positive number of ops per second, got {ops_per_s}"),
        });
    }
    let dt_ns = (1e9 / ops_per_s).round().max(1.0) as u64;
    Ok(stagger(dt_ns, seed, inner))
}

/// `inner` with ops at least `dt_ns` apart.
pub fn delay<G: Generator>(dt_ns: u64, inner: G) -> Delay<G> {
    Spaced {
        spacing: FixedGap(dt_ns),
        next_at: None,
        inner,
    }
}

impl<G: Generator, S: Spacing> Generator for Spaced<G, S> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        match self.inner.next(ctx) {
            Next::Op {
                thread,
                at_ns,
                invocation,
            } => {
                let at_ns = at_ns.max(self.next_at.unwrap_or(ctx.time_ns));
                self.next_at = Some(at_ns.saturating_add(self.spacing.gap_ns()));
                Next::Op {
                    thread,
                    at_ns,
                    invocation,
                }
            }
            other => other,
        }
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

/// Stops the inner generator `limit_ns` after it was first asked for an op
/// (Jepsen's `time-limit`); an op scheduled at or after the deadline is
/// dropped and ends the generator.
pub struct TimeLimit<G> {
    limit_ns: u64,
    deadline_ns: Option<u64>,
    done: bool,
    inner: G,
}

/// `inner`, cut off `limit_ns` after its first use.
pub fn time_limit<G: Generator>(limit_ns: u64, inner: G) -> TimeLimit<G> {
    TimeLimit {
        limit_ns,
        deadline_ns: None,
        done: false,
        inner,
    }
}

impl<G: Generator> Generator for TimeLimit<G> {
    fn next(&mut self, ctx: &Ctx) -> Next {
        if self.done {
            return Next::Exhausted;
        }
        let deadline = *self
            .deadline_ns
            .get_or_insert(ctx.time_ns.saturating_add(self.limit_ns));
        if ctx.time_ns >= deadline {
            self.done = true;
            return Next::Exhausted;
        }
        match self.inner.next(ctx) {
            Next::Op { at_ns, .. } if at_ns >= deadline => {
                self.done = true;
                Next::Exhausted
            }
            Next::Exhausted => {
                self.done = true;
                Next::Exhausted
            }
            other => other,
        }
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
