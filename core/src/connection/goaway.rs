//! GOAWAY on an accepted connection (PROTOCOL.md §3.5): the streams the peer opened that are
//! still in use here, against the count its GOAWAY announced.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::transport::{LiveStream, StreamCount};

/// The streams a peer opened on an accepted connection that are still in use here, and the
/// count its GOAWAY announced: when every announced stream was taken and finished, the
/// connection closes (a graceful drain, PROTOCOL.md §3.4).
#[derive(Default)]
pub(crate) struct Tracker {
    accepted: AtomicU64,
    live: AtomicU64,
    goaway: AtomicU64,
    changed: tokio::sync::Notify,
}

impl StreamCount for Tracker {
    fn released(&self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    fn hold_until_received(&self) -> bool {
        // Until the peer said GOAWAY nothing waits for the connection's streams to end.
        self.goaway.load(Ordering::Acquire) != u64::MAX
    }
}

impl Tracker {
    pub(crate) fn new() -> Arc<Self> {
        let t = Self::default();
        t.goaway.store(u64::MAX, Ordering::Relaxed);
        Arc::new(t)
    }

    /// The tracker of a local socket session: its streams are OS connections of their own that
    /// outlive it, and the kernel already holds what they carried, so its GOAWAY ends the
    /// session at once (no stream is waited for).
    pub(crate) fn for_local_session() -> Arc<Self> {
        let t = Self::new();
        t.accepted.store(u64::MAX - 1, Ordering::Release);
        t
    }

    pub(crate) fn admit(self: &Arc<Self>) -> LiveStream {
        self.live.fetch_add(1, Ordering::AcqRel);
        self.accepted.fetch_add(1, Ordering::AcqRel);
        LiveStream::new(self.clone())
    }

    pub(crate) fn go_away(&self, opened: u64) {
        self.goaway.store(opened, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// Resolves once the peer said GOAWAY and every stream it opened was taken and dropped.
    pub(crate) async fn drained(&self) {
        loop {
            let n = self.changed.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            let goaway = self.goaway.load(Ordering::Acquire);
            if goaway != u64::MAX
                && self.accepted.load(Ordering::Acquire) >= goaway
                && self.live.load(Ordering::Acquire) == 0
            {
                return;
            }
            n.await;
        }
    }
}
