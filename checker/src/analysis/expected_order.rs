//! Enne's expected-serialization-order check as an analysis:
//! when every `ok` transaction carries the commit timestamp the database
//! gave it (`commit-ts`, recorded by `--version-order db` on CockroachDB
//! and TiDB), replay them in that order ([`crate::whitebox::replay`]) and
//! report each read that disagrees as `expected-order-violation`.
//!
//! Key decision: the replay is the database's own claim (its invariant:
//! ascending timestamps are a serial order), so a mismatch is proof
//! without any version-order inference; it complements, never replaces,
//! the black-box analyses. Serializable and stronger proscribe it; a
//! history where some `ok` transaction has no timestamp is not replayed
//! (a warning says so), since a partial order is no expected order. An
//! `info` transaction has no timestamp either, yet may have committed:
//! reads of the keys such transactions wrote are not judged.

use super::{Analysis, AnalyzeOptions, Context, Found};
use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence};
use crate::txn::Status;
use crate::whitebox::{has_commit_ts, replay};
use std::collections::BTreeSet;
use store::{Key, MicroOp};

/// Replay in commit-timestamp order.
pub struct ExpectedOrder;

impl Analysis for ExpectedOrder {
    fn name(&self) -> &'static str {
        "expected-order"
    }

    /// Always: its findings count for `not` whatever was asked; it does
    /// nothing without commit timestamps (see `applies`).
    fn needed(&self, _: &AnalyzeOptions<'_>) -> bool {
        true
    }

    fn applies(&self, cx: &Context<'_, '_>) -> bool {
        (0..cx.history.len()).any(|pos| has_commit_ts(cx.history.extra(pos)))
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let unsure: BTreeSet<&Key> = cx
            .txns
            .txns
            .iter()
            .filter(|t| t.status == Status::Info)
            .flat_map(|t| cx.txns.mops_of(t))
            .filter_map(|m| match m {
                MicroOp::Append(k, _) | MicroOp::Write(k, _) => Some(k),
                _ => None,
            })
            .collect();
        let Some(mismatches) = replay(cx.history, &unsure) else {
            out.warnings.push(
                "expected-order: some ok transactions carry no commit-ts; \
                 the commit-timestamp replay did not run"
                    .to_string(),
            );
            return;
        };
        for m in mismatches {
            out.push(Anomaly {
                kind: AnomalyType::ExpectedOrderViolation,
                evidence: Evidence::Replay {
                    op: m.op,
                    mop: m.mop,
                    key: m.key,
                    expected: m.expected,
                },
            });
        }
    }
}
