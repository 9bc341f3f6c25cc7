//! A connection's share of one endpoint: how many of its streams (transfers, requests) the
//! endpoint holds at once, queued or being read, bounded by `Limits::peer_share`. Dispatch
//! takes a [`Ticket`] before it queues a stream and the stream carries it until it is read
//! whole, answered or dropped; past the share, that connection's next stream waits in its
//! transport (backpressure on that peer alone), so no one peer fills an endpoint's queue or
//! its set of messages being collected (PATTERNS §1.12).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The shares of one connection, by endpoint path.
#[derive(Default)]
pub(crate) struct Shares {
    by_path: Mutex<HashMap<Arc<str>, Arc<Share>>>,
}

impl Shares {
    /// A place in `path`'s share of at most `cap` streams, waiting while it is full.
    /// Cancel-safe: a wait dropped took nothing.
    pub(crate) async fn take(&self, path: &str, cap: usize) -> Ticket {
        let share = {
            let mut m = self.by_path.lock().unwrap_or_else(|p| p.into_inner());
            match m.get(path) {
                Some(s) => s.clone(),
                None => {
                    let s = Arc::new(Share::default());
                    m.insert(path.into(), s.clone());
                    s
                }
            }
        };
        share.take(cap.max(1)).await
    }
}

#[derive(Default)]
struct Share {
    held: AtomicUsize,
    freed: Notify,
}

impl Share {
    async fn take(self: Arc<Self>, cap: usize) -> Ticket {
        loop {
            {
                let freed = self.freed.notified();
                tokio::pin!(freed);
                freed.as_mut().enable();
                if self.try_take(cap) {
                    break;
                }
                freed.await;
            }
        }
        Ticket(self)
    }

    fn try_take(&self, cap: usize) -> bool {
        let mut n = self.held.load(Ordering::Acquire);
        while n < cap {
            match self
                .held
                .compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }
}

/// A stream's place in its connection's share of an endpoint; given back when dropped.
pub(crate) struct Ticket(Arc<Share>);

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::AcqRel);
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_share_waits_until_a_ticket_is_given_back_and_paths_are_apart() {
        let shares = Shares::default();
        let a = shares.take("/a", 2).await;
        let _b = shares.take("/a", 2).await;
        // Another endpoint's share is its own.
        let _other = shares.take("/b", 2).await;
        let third = shares.take("/a", 2);
        tokio::pin!(third);
        assert!(
            futures_util::FutureExt::now_or_never(third.as_mut()).is_none(),
            "full"
        );
        drop(a);
        let _c = third.await;
    }
}
