//! Arbitrary histories for tests that must hold on any input.

use super::register_gen::Rng;
use store::{History, Key, MicroOp, Op, OpType, ReadValue, Val};

/// Arbitrary (mostly nonsensical) histories: random statuses, reads of
/// values nobody wrote, lists in registers and scalars in lists, repeated
/// values, string keys. The analysis must not panic, for either workload.
pub fn arbitrary_history(seed: u64, n: usize) -> Option<History> {
    let mut rng = Rng(seed);
    let atom = |rng: &mut Rng| -> store::Atom {
        match rng.below_u64(4) {
            0 => store::Atom::Str(format!("k{}", rng.below_u64(3)).into()),
            1 => store::Atom::Keyword(format!("x{}", rng.below_u64(2)).into()),
            _ => store::Atom::Int(rng.below_u64(4) as i64),
        }
    };
    let mut ops = Vec::new();
    for i in 0..n {
        let mut mops = Vec::new();
        for _ in 0..rng.below_u64(4) {
            let k = Key(atom(&mut rng));
            mops.push(match rng.below_u64(5) {
                0 => MicroOp::Append(k, Val(atom(&mut rng))),
                1 => MicroOp::Write(k, Val(atom(&mut rng))),
                2 => MicroOp::Read(k, ReadValue::Nil),
                3 => MicroOp::Read(k, ReadValue::Scalar(Val(atom(&mut rng)))),
                _ => {
                    let len = rng.below_u64(5);
                    MicroOp::Read(
                        k,
                        ReadValue::List((0..len).map(|_| Val(atom(&mut rng))).collect()),
                    )
                }
            });
        }
        let t = match rng.below_u64(5) {
            0 => OpType::Fail,
            1 => OpType::Info,
            _ => OpType::Ok,
        };
        // Completion-only ops (each is its own invocation), random processes.
        ops.push(Op::txn(i as u64, t, rng.below_u64(4), mops));
    }
    History::new(ops).ok()
}
