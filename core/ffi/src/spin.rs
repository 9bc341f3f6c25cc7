//! The I/O thread's bounded poll after a hand-off (docs/BINDINGS.md, "Threading"; measured in
//! docs/PERFORMANCE.md, "A later turn instead of the I/O thread, and polling after a
//! hand-off").
//!
//! Every outcome a foreign caller waits for reaches it from the I/O thread, which then usually
//! has nothing to do and sleeps in epoll. The caller's answer (the next request, the reply, the
//! next receive) then wakes it again, and on a small machine each such wake-up costs more than
//! the work it brings. So the I/O thread instead keeps polling its sockets and
//! its queue of tasks for that long after each hand-off: a task that yields at once, so every
//! turn polls the I/O driver without blocking and runs whatever another thread scheduled, and
//! gives its core away between turns (`sched_yield`), because the thread it just woke is often
//! placed on the same core and would otherwise wait for the budget to run out.
//!
//! Only a hand-off the caller waited for starts it: not a call that finished at once, nor one
//! that went through the I/O thread only because the ready streak was spent. The budget is CPU
//! spent whether or not an answer comes, so it is short: [`DEFAULT`], measured against none
//! and longer ones in the same section. `WEIDA_IO_SPIN_US` (microseconds, read once per
//! process; 0 turns it off) changes it.

use std::cell::Cell;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The budget unless the environment says otherwise.
pub const DEFAULT: Duration = Duration::from_micros(20);

/// The environment variable that sets the budget, in microseconds.
pub const ENV: &str = "WEIDA_IO_SPIN_US";

/// The most a budget may be: a longer one would be a busy core, not a poll.
pub const MAX: Duration = Duration::from_millis(10);

/// The budget: `WEIDA_IO_SPIN_US`'s, read on the first hand-off, else [`DEFAULT`].
static BUDGET: LazyLock<Duration> = LazyLock::new(|| {
    std::env::var(ENV)
        .ok()
        .as_deref()
        .and_then(parse)
        .unwrap_or(DEFAULT)
});

thread_local! {
    /// On the I/O thread: when the poll started by the last hand-off ends.
    static UNTIL: Cell<Option<Instant>> = const { Cell::new(None) };
    /// On the I/O thread: whether the polling task runs.
    static POLLING: Cell<bool> = const { Cell::new(false) };
}

/// `WEIDA_IO_SPIN_US`'s text as a budget, at most [`MAX`]; None (the variable is ignored)
/// unless it is a whole number of microseconds.
fn parse(v: &str) -> Option<Duration> {
    v.trim()
        .parse::<u64>()
        .ok()
        .map(|us| Duration::from_micros(us).min(MAX))
}

/// Called on the I/O thread when it hands an outcome to a foreign thread that waited for it:
/// the thread keeps polling for the budget from now (a poll already running is extended).
pub(crate) fn handed_off() {
    #[cfg(test)]
    HANDED.with(|h| h.set(true));
    poll_for(*BUDGET);
}

#[cfg(test)]
thread_local! {
    /// Set by every hand-off on this thread, for a test to see whether one happened.
    pub(crate) static HANDED: Cell<bool> = const { Cell::new(false) };
}

/// Keeps this thread's runtime polling for `budget` from now: a task that yields until then.
fn poll_for(budget: Duration) {
    if budget.is_zero() {
        return;
    }
    UNTIL.with(|u| u.set(Some(Instant::now() + budget)));
    if POLLING.with(|p| p.replace(true)) {
        return;
    }
    tokio::spawn(async {
        loop {
            // Deferred: the runtime polls its I/O driver without blocking and runs what is
            // ready, then this task again.
            tokio::task::yield_now().await;
            std::thread::yield_now();
            if UNTIL.with(Cell::get).is_none_or(|u| Instant::now() >= u) {
                break;
            }
        }
        POLLING.with(|p| p.set(false));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's CPU time.
    fn thread_cpu() -> Duration {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: writes one timespec it is given.
        assert_eq!(
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) },
            0
        );
        Duration::new(
            u64::try_from(t.tv_sec).unwrap_or(0),
            u32::try_from(t.tv_nsec).unwrap_or(0),
        )
    }

    /// On a current-thread runtime of this test's own (not the shared I/O thread): polls for
    /// `budget`, then sleeps on a timer until well after it. Returns the thread's CPU time over
    /// both, and how long after the poll began a task spawned behind it ran.
    fn poll_then_sleep(budget: Duration) -> (Duration, Duration) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let start = thread_cpu();
            let began = Instant::now();
            poll_for(budget);
            let other = tokio::spawn(async move { began.elapsed() });
            // A timer: with nothing polling, the runtime parks until it fires.
            tokio::time::sleep(budget + Duration::from_millis(20)).await;
            let ran_after = other.await.expect("the other task ran");
            assert!(!POLLING.with(Cell::get), "the poll ended");
            (thread_cpu().saturating_sub(start), ran_after)
        })
    }

    #[test]
    fn the_io_thread_polls_for_its_budget_after_a_hand_off_and_not_without_one() {
        let (with, other_ran_after) = poll_then_sleep(Duration::from_millis(10));
        let (without, _) = poll_then_sleep(Duration::ZERO);
        // Polling, the thread stays on CPU where it would have slept; it gives its core away
        // between polls, so on a busy machine not all of the 10 ms is its own, but a tenth is.
        assert!(with >= Duration::from_millis(1), "polled {with:?}");
        assert!(
            without < Duration::from_micros(500),
            "slept, yet {without:?}"
        );
        // Other tasks run during the poll, not after it.
        assert!(
            other_ran_after < Duration::from_millis(10),
            "a task spawned behind the poll ran {other_ran_after:?} after it began"
        );
    }

    #[test]
    fn the_environments_budget_is_whole_microseconds_capped() {
        let us = Duration::from_micros;
        assert_eq!(DEFAULT, us(20));
        assert_eq!(parse("100"), Some(us(100)));
        assert_eq!(parse(" 0\n"), Some(Duration::ZERO));
        assert_eq!(parse("99999999"), Some(MAX));
        assert_eq!(parse("-5"), None);
        assert_eq!(parse("50us"), None);
        assert_eq!(parse(""), None);
    }
}
