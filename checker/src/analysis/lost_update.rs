//! Lost updates, for every workload at once: committed transactions that
//! read the same version of a key (as the version order places reads) and
//! then all wrote that key.

use super::{Analysis, AnalyzeOptions, Context, Found};
use crate::anomaly::AnomalyType;
use crate::explain::{Anomaly, Evidence};
use crate::txn::Status;
use store::Key;

/// `lost-update`.
pub struct LostUpdate;

impl Analysis for LostUpdate {
    fn name(&self) -> &'static str {
        "lost-update"
    }

    /// Always: what it finds counts for `not` whatever was asked.
    fn needed(&self, _: &AnalyzeOptions<'_>) -> bool {
        true
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let (txns, history) = (cx.txns, cx.history);
        // (key, version read, txn) of each external read followed by a write.
        let mut lost: Vec<(u32, u32, u32)> = cx
            .obs
            .reads
            .iter()
            .filter(|r| {
                r.first_on_key()
                    && r.writes_later()
                    && txns.txns[r.txn as usize].status == Status::Ok
            })
            .filter_map(|r| Some((r.key(txns), cx.versions.read_version(txns, r)?, r.txn)))
            .collect();
        lost.sort_unstable();
        for group in lost.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1) {
            if group.len() < 2 {
                continue;
            }
            let (k, version, _) = group[0];
            out.push(Anomaly {
                kind: AnomalyType::LostUpdate,
                evidence: Evidence::LostUpdate {
                    key: Key(txns.keys[k as usize].clone()),
                    value: cx.versions.version_value(k, version),
                    txns: group.iter().map(|x| txns.op_index(history, x.2)).collect(),
                },
            });
        }
    }
}
