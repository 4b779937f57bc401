//! The cycle search's limit. The checker reads no clock itself: its caller
//! hands in a step count or an "expired?" probe (e.g. a deadline check).

use std::sync::atomic::{AtomicU64, Ordering};

/// How much work the cycle search may do before it gives up with
/// `cycle-search-timeout` (verdict `unknown`, never `valid`).
pub struct Budget {
    limit: Option<u64>,
    used: AtomicU64,
    probe: Option<Box<dyn Fn() -> bool + Send + Sync>>,
}

impl Budget {
    /// No limit.
    pub fn unlimited() -> Budget {
        Budget {
            limit: None,
            used: AtomicU64::new(0),
            probe: None,
        }
    }

    /// At most `n` search steps (a step is one edge examined).
    pub fn steps(n: u64) -> Budget {
        Budget {
            limit: Some(n),
            ..Budget::unlimited()
        }
    }

    /// Until `expired()` returns true (polled every few thousand steps).
    pub fn until(expired: Box<dyn Fn() -> bool + Send + Sync>) -> Budget {
        Budget {
            probe: Some(expired),
            ..Budget::unlimited()
        }
    }

    /// Records `n` steps of work; returns whether the budget is now exhausted.
    pub fn charge(&self, n: u64) -> bool {
        let before = self.used.fetch_add(n, Ordering::Relaxed);
        let after = before.saturating_add(n);
        if let Some(limit) = self.limit
            && after > limit
        {
            return true;
        }
        // Poll the probe only when crossing a 4096-step boundary: it may read a clock.
        if self.probe.is_some() && (before >> 12 != after >> 12 || n == 0) {
            return self.exhausted();
        }
        false
    }

    /// Whether the budget is used up.
    pub fn exhausted(&self) -> bool {
        if let Some(limit) = self.limit
            && self.used.load(Ordering::Relaxed) > limit
        {
            return true;
        }
        self.probe.as_ref().is_some_and(|p| p())
    }

    /// Steps recorded so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::unlimited()
    }
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("limit", &self.limit)
            .field("used", &self.used())
            .field("probe", &self.probe.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn step_budget_runs_out() {
        let b = Budget::steps(10);
        assert!(!b.charge(10));
        assert!(!b.exhausted());
        assert!(b.charge(1));
        assert!(b.exhausted());
    }

    #[test]
    fn probe_budget() {
        let flag = Arc::new(AtomicBool::new(false));
        let f2 = flag.clone();
        let b = Budget::until(Box::new(move || f2.load(Ordering::Relaxed)));
        assert!(!b.charge(5000));
        flag.store(true, Ordering::Relaxed);
        assert!(b.charge(5000));
        assert!(!Budget::unlimited().charge(u64::MAX / 2));
    }
}
