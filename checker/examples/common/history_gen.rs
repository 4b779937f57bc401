//! Deterministic history generator for benchmarks (shared by
//! `examples/gen_history.rs` and the root package's `tests/perf_guard`):
//! simulates clients of an in-memory database executing list-append or
//! rw-register transactions under serializable (each transaction applied
//! atomically at its completion: strict-serializable) or snapshot isolation
//! (snapshot at invocation, first-committer-wins at completion), with
//! crashes (`info`, applied or not at random) and, under SI, conflict
//! aborts (`fail`). Writes JSON Lines (harness's native format).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use store::format::to_json_line;
use store::{Key, MicroOp, Op, OpType, ReadValue, Val};

/// SplitMix64 (the same stream as the checker tests' `register_gen::Rng`).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`0` for `n = 0`).
    pub fn below_u64(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// True with probability `p`.
    pub fn chance_f64(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// The shape of a generated history.
#[derive(Clone, Debug)]
pub struct Shape {
    /// list-append (else rw-register).
    pub list: bool,
    /// Transactions.
    pub txns: u64,
    /// Snapshot isolation (else serializable).
    pub si: bool,
    /// Client slots.
    pub concurrency: u64,
    /// Active keys.
    pub keys: u64,
    /// A key is retired after this many writes.
    pub max_writes_per_key: u64,
    /// Probability that a transaction crashes (`info`).
    pub crash_rate: f64,
    /// The random seed.
    pub seed: u64,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            list: true,
            txns: 10_000,
            si: false,
            concurrency: 10,
            keys: 10,
            max_writes_per_key: 32,
            crash_rate: 0.005,
            seed: 1,
        }
    }
}

/// Per key: committed versions as (commit timestamp, value); lists are the
/// sequence of appended elements, registers the sequence of written values.
#[derive(Default, Clone)]
struct KeyState {
    ts: Vec<u64>,
    vals: Vec<i64>,
}

struct Slot {
    process: u64,
    busy: bool,
    start_ts: u64,
    mops: Vec<MicroOp>,
}

/// Writes a history of `shape` to `w`, one JSON line per op; returns the
/// number of ops written.
pub fn generate(shape: &Shape, w: &mut impl Write) -> std::io::Result<u64> {
    let Shape {
        list,
        txns: n,
        si,
        concurrency: conc,
        keys: key_count,
        max_writes_per_key: max_writes,
        crash_rate: crash,
        seed,
    } = *shape;
    let mut rng = Rng(seed);
    let mut keys: Vec<KeyState> = Vec::new();
    let mut writes_per_key: Vec<u64> = Vec::new();
    let mut active: Vec<usize> = Vec::new();
    for _ in 0..key_count {
        active.push(keys.len());
        keys.push(KeyState::default());
        writes_per_key.push(0);
    }
    let mut next_val: Vec<i64> = vec![1; keys.len()];
    let mut slots: Vec<Slot> = (0..conc)
        .map(|p| Slot {
            process: p,
            busy: false,
            start_ts: 0,
            mops: Vec::new(),
        })
        .collect();
    let mut index = 0u64;
    let mut clock = 0u64; // commit timestamps
    let mut invoked = 0u64;
    let mut completed = 0u64;
    let mut time_ns = 0i64;
    let mut emit =
        |index: &mut u64, t: OpType, p: u64, m: Vec<MicroOp>, time: i64| -> std::io::Result<()> {
            let mut op = Op::txn(*index, t, p, m);
            op.time_ns = Some(time);
            *index += 1;
            writeln!(w, "{}", to_json_line(&op))
        };
    while completed < n {
        let s = rng.below_u64(conc) as usize;
        time_ns += 1 + rng.below_u64(20_000) as i64;
        if !slots[s].busy {
            if invoked >= n {
                continue;
            }
            // A new transaction of 1-4 micro-ops; half reads, half writes.
            let len = 1 + rng.below_u64(4);
            let mut mops = Vec::new();
            for _ in 0..len {
                // Skewed key choice: the last active key is the hottest.
                let mut slot = active.len() - 1;
                while slot > 0 && rng.chance_f64(0.5) {
                    slot -= 1;
                }
                let k = active[slot];
                if rng.chance_f64(0.5) {
                    mops.push(MicroOp::Read(Key::int(k as i64), ReadValue::Nil));
                } else {
                    let v = next_val[k];
                    next_val[k] += 1;
                    writes_per_key[k] += 1;
                    if writes_per_key[k] >= max_writes {
                        active[slot] = keys.len();
                        keys.push(KeyState::default());
                        writes_per_key.push(0);
                        next_val.push(1);
                    }
                    mops.push(if list {
                        MicroOp::Append(Key::int(k as i64), Val::int(v))
                    } else {
                        MicroOp::Write(Key::int(k as i64), Val::int(v))
                    });
                }
            }
            let sl = &mut slots[s];
            sl.busy = true;
            sl.start_ts = clock;
            sl.mops = mops.clone();
            emit(&mut index, OpType::Invoke, sl.process, mops, time_ns)?;
            invoked += 1;
            continue;
        }
        // Complete the slot's transaction.
        let snapshot = if si { slots[s].start_ts } else { clock };
        let mops = std::mem::take(&mut slots[s].mops);
        let crashed = rng.chance_f64(crash);
        // SI: first committer wins on written keys.
        let conflict = si
            && mops.iter().any(|m| match m {
                MicroOp::Append(k, _) | MicroOp::Write(k, _) => {
                    let Key(store::Atom::Int(k)) = k else {
                        return false;
                    };
                    keys[*k as usize].ts.last().is_some_and(|&t| t > snapshot)
                }
                _ => false,
            });
        let mut local: Vec<(usize, Vec<i64>)> = Vec::new();
        let mut done = Vec::with_capacity(mops.len());
        for m in &mops {
            match m {
                MicroOp::Read(Key(store::Atom::Int(k)), _) => {
                    let k = *k as usize;
                    let ks = &keys[k];
                    let visible = ks.ts.partition_point(|&t| t <= snapshot);
                    let mut seen: Vec<i64> = ks.vals[..visible].to_vec();
                    if let Some((_, mine)) = local.iter().find(|x| x.0 == k) {
                        seen.extend(mine);
                    }
                    let rv = if list {
                        ReadValue::List(seen.into_iter().map(Val::int).collect())
                    } else {
                        match seen.last() {
                            Some(&v) => ReadValue::Scalar(Val::int(v)),
                            None => ReadValue::Nil,
                        }
                    };
                    done.push(MicroOp::Read(Key::int(k as i64), rv));
                }
                MicroOp::Append(Key(store::Atom::Int(k)), Val(store::Atom::Int(v)))
                | MicroOp::Write(Key(store::Atom::Int(k)), Val(store::Atom::Int(v))) => {
                    let k = *k as usize;
                    match local.iter_mut().find(|x| x.0 == k) {
                        Some(x) => x.1.push(*v),
                        None => local.push((k, vec![*v])),
                    }
                    done.push(m.clone());
                }
                other => done.push(other.clone()),
            }
        }
        let applies = !conflict && (!crashed || rng.chance_f64(0.5));
        if applies {
            clock += 1;
            for (k, vs) in local {
                let ks = &mut keys[k];
                if list {
                    for v in vs {
                        ks.ts.push(clock);
                        ks.vals.push(v);
                    }
                } else if let Some(&v) = vs.last() {
                    ks.ts.push(clock);
                    ks.vals.push(v);
                }
            }
        }
        let p = slots[s].process;
        if crashed {
            emit(&mut index, OpType::Info, p, mops, time_ns)?;
            slots[s].process += conc;
        } else if conflict {
            emit(&mut index, OpType::Fail, p, mops, time_ns)?;
        } else {
            emit(&mut index, OpType::Ok, p, done, time_ns)?;
        }
        slots[s].busy = false;
        completed += 1;
    }
    Ok(index)
}
