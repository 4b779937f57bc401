//! The complete read committed / read atomic / causal checks (`crate::weak`:
//! saturation, Plume's patterns), at the level whose patterns the requested
//! models — and every model they imply — or anomalies prohibit
//! (`model::weak_level_needed`). When it ran to the end it records the
//! level in [`Found::weak_decided`].

use super::{Analysis, AnalyzeOptions, Context, Found};
use crate::anomaly::AnomalyType;
use crate::model::weak_level_needed;
use crate::weak::check_observed;

/// `weak`: polynomial RC / RA / causal.
pub struct Weak;

impl Analysis for Weak {
    fn name(&self) -> &'static str {
        "weak"
    }

    /// When a model asked for, or one it implies, or an anomaly asked
    /// for prohibits a weak-isolation pattern.
    fn needed(&self, opts: &AnalyzeOptions<'_>) -> bool {
        weak_level_needed(opts.models, opts.anomalies).is_some()
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let Some(level) = weak_level_needed(cx.opts.models, cx.opts.anomalies) else {
            return;
        };
        let w = check_observed(cx.history, cx.txns, cx.obs, cx.opts.workload, level);
        // Out of its limits it says so with a `cycle-search-timeout`; then
        // it decided nothing.
        if !w
            .anomalies
            .iter()
            .any(|a| a.kind == AnomalyType::CycleSearchTimeout)
        {
            out.weak_decided = Some(level);
        }
        for a in w.anomalies {
            out.push(a);
        }
        out.warnings.extend(w.warnings);
    }
}
