//! Counters a binding's tests read to show that the path they aim at ran (a race test that
//! does not provoke its race must fail, not pass by luck). Not an API: doc-hidden in every
//! binding.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

static ORPHANS: AtomicU64 = AtomicU64::new(0);
static FETCHED: AtomicU64 = AtomicU64::new(0);
/// Threads waiting in [`wait_fetched`]: only then does a fetch take the lock to wake them.
static WAITING: AtomicUsize = AtomicUsize::new(0);
static WAKE: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// Values that reached the foreign thread after their caller cancelled, and went back where
/// they came from ([`crate::call::Call::keeping`], and what a receive queue kept).
pub fn orphans() -> u64 {
    ORPHANS.load(Ordering::Acquire)
}

/// One more value went back where it came from: weida-ffi's own hand-backs, and a binding's
/// that holds a finished call's value outside a [`crate::Completion`] (the Kotlin fast lane's).
pub fn orphaned() {
    ORPHANS.fetch_add(1, Ordering::AcqRel);
}

/// Fetches from an endpoint that finished with messages ([`crate::inbox::fetch`], and a
/// registration's jobs, [`crate::service::next_call`]): a test
/// that holds its event loop while a pending receive waits on the I/O thread waits for this to
/// move.
pub fn fetched() -> u64 {
    FETCHED.load(Ordering::Acquire)
}

pub(crate) fn fetched_one() {
    FETCHED.fetch_add(1, Ordering::AcqRel);
    if WAITING.load(Ordering::Acquire) > 0 {
        let _g = WAKE.0.lock().unwrap_or_else(|p| p.into_inner());
        WAKE.1.notify_all();
    }
}

/// Blocks the calling thread until [`fetched`] reaches `n` (true), or `timeout` passes: a
/// test holds its event loop here while the I/O thread receives, so the receive it then
/// cancels has surely taken its message.
pub fn wait_fetched(n: u64, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut g = WAKE.0.lock().unwrap_or_else(|p| p.into_inner());
    WAITING.fetch_add(1, Ordering::AcqRel);
    let reached = loop {
        if fetched() >= n {
            break true;
        }
        let now = Instant::now();
        if now >= deadline {
            break false;
        }
        g = WAKE
            .1
            .wait_timeout(g, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    };
    WAITING.fetch_sub(1, Ordering::AcqRel);
    reached
}
