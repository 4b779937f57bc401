//! A waker for the futures the interpreter waits on beside its jobs (its
//! deadline and the stop signal), which remembers that it fired.
//!
//! Key decision: a job's every statement response wakes the interpreter's
//! task, and polling the deadline's `Sleep` and the stop signal's receiver
//! again at each of those wakes cost ~400 instructions each, ~5,000 per
//! PostgreSQL transaction (callgrind, BENCHMARKS.md). Polled with
//! this waker instead, they are polled again only after they woke the task
//! themselves.

use futures_util::task::AtomicWaker;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// Wakes the task that last polled, and sets a flag.
pub struct SideWake {
    fired: AtomicBool,
    task: AtomicWaker,
}

impl SideWake {
    /// A new side waker, fired (so that the side futures get their first
    /// poll, which registers them).
    pub fn new() -> Arc<SideWake> {
        Arc::new(SideWake {
            fired: AtomicBool::new(true),
            task: AtomicWaker::new(),
        })
    }

    /// Remembers the task in `cx` to wake; then polls `side` with this
    /// waker if it fired since the last time, and is `Pending` otherwise.
    pub fn poll_side<T>(
        self: &Arc<Self>,
        cx: &Context<'_>,
        side: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        // Registered before the flag is read: a side future that fires
        // after the read wakes the task registered here.
        self.task.register(cx.waker());
        if !self.fired.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        let waker = Waker::from(Arc::clone(self));
        side(&mut Context::from_waker(&waker))
    }
}

impl Wake for SideWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.task.wake();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::SideWake;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_side_is_polled_first_and_then_only_after_it_woke_the_task() {
        let task = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&task));
        let cx = Context::from_waker(&waker);
        let side = SideWake::new();
        let polls = AtomicUsize::new(0);
        let saved: std::sync::Mutex<Option<Waker>> = std::sync::Mutex::new(None);
        let poll = || {
            side.poll_side(&cx, |scx| {
                polls.fetch_add(1, Ordering::SeqCst);
                *saved.lock().unwrap() = Some(scx.waker().clone());
                Poll::<()>::Pending
            })
        };
        assert!(poll().is_pending());
        assert!(poll().is_pending());
        assert_eq!(
            polls.load(Ordering::SeqCst),
            1,
            "not polled again before it fired"
        );
        // The side future's waker fires: the task is woken, the side polled.
        let fired = saved.lock().unwrap().take().unwrap();
        fired.wake();
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
        assert!(poll().is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }
}
