//! Receipts of finished transfers nobody awaits, kept so `drain` can count and wait for them
//! (GUARANTEES §3).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::transport::{PendingReceipt, Receipt, StreamError};

/// Receipts of finished transfers whose `Delivery` was dropped: kept so `drain` has something
/// to wait on (GUARANTEES §3), pruned as they resolve.
#[derive(Default)]
pub(crate) struct Receipts {
    /// Each with the number of messages it stands for (a lane carries many).
    pending: Mutex<Vec<(PendingReceipt, u64)>>,
    delivered: AtomicU64,
    failed: AtomicU64,
    // Prune when the list reaches this length, then set it to twice what survived: every
    // receipt is polled O(1) times amortized, however slow the acknowledgements are.
    prune_at: AtomicUsize,
}

impl Receipts {
    pub(crate) fn park(&self, r: Receipt) {
        self.park_many(r, 1)
    }

    /// Parks the receipt of a stream that carried `n` messages (a lane): they are delivered,
    /// or not, together.
    pub(crate) fn park_many(&self, r: Receipt, n: u64) {
        match r {
            Receipt::Ready(Ok(())) => {
                self.delivered.fetch_add(n, Ordering::Relaxed);
            }
            Receipt::Ready(Err(_)) => {
                self.failed.fetch_add(n, Ordering::Relaxed);
            }
            Receipt::Pending(s) => {
                let mut p = self.pending.lock().unwrap();
                p.push((s, n));
                // Amortized pruning so resolved receipts do not accumulate; a resolved quinn
                // receipt answers without waiting.
                if p.len() >= self.prune_at.load(Ordering::Relaxed).max(256) {
                    self.prune(&mut p);
                    self.prune_at.store(p.len() * 2, Ordering::Relaxed);
                }
            }
        }
    }

    fn prune(&self, p: &mut Vec<(PendingReceipt, u64)>) {
        p.retain(|(s, n)| match s.now() {
            Some(r) => {
                self.count(r, *n);
                false
            }
            None => true,
        });
    }

    fn count(&self, r: Result<(), StreamError>, n: u64) {
        match r {
            Ok(()) => self.delivered.fetch_add(n, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(n, Ordering::Relaxed),
        };
    }

    /// Waits for every parked receipt until `deadline`; returns how many are still pending.
    pub(crate) async fn settle(&self, deadline: Duration) -> u64 {
        let all: Vec<(PendingReceipt, u64)> = std::mem::take(&mut *self.pending.lock().unwrap());
        let mut set: futures_util::stream::FuturesUnordered<_> = all
            .iter()
            .map(|(s, n)| {
                let f = s.wait();
                let n = *n;
                async move { (f.await, n) }
            })
            .collect();
        let total: u64 = all.iter().map(|(_, n)| n).sum();
        let mut done = 0u64;
        let _ = tokio::time::timeout(deadline, async {
            use futures_util::StreamExt;
            while let Some((r, n)) = set.next().await {
                self.count(r, n);
                done += n;
            }
        })
        .await;
        total - done
    }

    /// Messages whose receipt resolved delivered, over the runtime's life.
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Messages whose receipt resolved with a refusal or a loss, over the runtime's life.
    pub(crate) fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
}
