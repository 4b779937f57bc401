//! A tiny deterministic interpreter for tests: runs a generator with `threads`
//! workers, each op taking `op_ns` of logical time, and records what it emits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use store::{MicroOp, OpType};
use workloads::generator::{Ctx, Event, Generator, Invocation, Next, Thread};

/// One emitted op: thread, scheduled time, invocation.
pub type Emitted = (Thread, u64, Invocation);

/// Runs `g` until exhausted or `max_ops` ops; every op completes `ok` after
/// `op_ns` (from its `at_ns`). Returns the ops in emission order.
pub fn run(g: &mut dyn Generator, threads: usize, op_ns: u64, max_ops: usize) -> Vec<Emitted> {
    let mut now = 0u64;
    let mut busy: Vec<Option<(u64, Vec<MicroOp>)>> = vec![None; threads];
    let mut out = Vec::new();
    let mut idle_rounds = 0;
    while out.len() < max_ops {
        let ctx = Ctx {
            time_ns: now,
            free_threads: (0..threads)
                .filter(|&t| busy[t].is_none())
                .map(Thread)
                .collect(),
            thread_count: threads,
        };
        match g.next(&ctx) {
            Next::Exhausted => break,
            Next::Op {
                thread,
                at_ns,
                invocation,
            } => {
                assert!(busy[thread.0].is_none(), "op on a busy thread {thread:?}");
                assert!(at_ns >= now, "op scheduled in the past");
                busy[thread.0] = Some((at_ns + op_ns, invocation.value.clone()));
                out.push((thread, at_ns, invocation));
                idle_rounds = 0;
            }
            Next::Pending => {
                // Complete the earliest busy op, or let time pass.
                let earliest = busy
                    .iter()
                    .enumerate()
                    .filter_map(|(t, b)| b.as_ref().map(|(end, _)| (*end, t)))
                    .min();
                match earliest {
                    Some((end, t)) => {
                        now = now.max(end);
                        let value = busy[t].take().map(|(_, v)| v).unwrap_or_default();
                        let ctx = Ctx {
                            time_ns: now,
                            free_threads: (0..threads)
                                .filter(|&i| busy[i].is_none())
                                .map(Thread)
                                .collect(),
                            thread_count: threads,
                        };
                        g.update(
                            &ctx,
                            &Event {
                                thread: Thread(t),
                                op_type: OpType::Ok,
                                value,
                                time_ns: now,
                            },
                        );
                    }
                    None => {
                        now += op_ns.max(1);
                        idle_rounds += 1;
                        if idle_rounds > 10_000 {
                            panic!("generator pending forever with all threads idle");
                        }
                    }
                }
            }
        }
    }
    out
}
