//! The complete read committed / read atomic / causal checks (`crate::weak`:
//! saturation, Plume's patterns), for the strongest of those levels the
//! requested models or anomalies name (`weak::Level::needed`).

use super::{Analysis, AnalyzeOptions, Context, Found};
use crate::weak::{Level, check_observed};

/// `weak`: polynomial RC / RA / causal.
pub struct Weak;

impl Analysis for Weak {
    fn name(&self) -> &'static str {
        "weak"
    }

    /// When a model or anomaly asked for needs a weak level.
    fn needed(&self, opts: &AnalyzeOptions<'_>) -> bool {
        Level::needed(opts.models, opts.anomalies).is_some()
    }

    fn run(&self, cx: &Context<'_, '_>, out: &mut Found) {
        let Some(level) = Level::needed(cx.opts.models, cx.opts.anomalies) else {
            return;
        };
        let w = check_observed(cx.history, cx.txns, cx.obs, cx.opts.workload, level);
        for a in w.anomalies {
            out.push(a);
        }
        out.warnings.extend(w.warnings);
    }
}
