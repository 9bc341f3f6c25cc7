//! What a registration counts.

use std::sync::atomic::{AtomicU64, Ordering};

/// A registration's counters (docs/SERVICES.md §4): a snapshot, monotonic but for the gauges.
/// Every message handed to a handler ends in exactly one of `handled`, `retried`,
/// `dead_lettered` and `dropped`, or is still `in_flight` or `delayed`; `failed` counts the
/// handler errors among them, which went on as a retry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceCounters {
    /// Processed: the handler returned normally, replied, or said `Ack`.
    pub handled: u64,
    /// Copies sent to the retry address (each a new message, one attempt on).
    pub retried: u64,
    /// Messages sent to the dead-letter address at the attempt limit.
    pub dead_lettered: u64,
    /// Messages gone: `Drop`; `Retry` with no limit declared; at the limit with no dead-letter
    /// address; a copy whose send failed or that a stop's deadline abandoned.
    pub dropped: u64,
    /// Handler errors (each also went on as `Retry`).
    pub failed: u64,
    /// Gauge: messages handed to a handler that has not finished.
    pub in_flight: u64,
    /// Gauge: copies waiting for their `RetryAfter` delay, in this process.
    pub delayed: u64,
}

#[derive(Default)]
pub(crate) struct Count {
    pub(crate) handled: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) dead_lettered: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    pub(crate) delayed: AtomicU64,
}

impl Count {
    pub(crate) fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn sub(c: &AtomicU64) {
        c.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> ServiceCounters {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ServiceCounters {
            handled: r(&self.handled),
            retried: r(&self.retried),
            dead_lettered: r(&self.dead_lettered),
            dropped: r(&self.dropped),
            failed: r(&self.failed),
            in_flight: r(&self.in_flight),
            delayed: r(&self.delayed),
        }
    }
}
