//! A pusher's outbox (decision 0031 §4.2): what `send` hands over while no peer is live, kept
//! in order and written onto the next live connection by one drain task.
//!
//! The runtime's part of a message ends when it is written (§4.3): a body written to a
//! connection that then dies is gone, as in ZeroMQ; one whose write failed before its end left
//! (the FIN never queued, the lane never took the frame) was delivered nowhere, so the drain
//! puts it back at the front and writes it to the next live connection.
//!
//! Bounded in messages and bytes by the endpoint's options; what a full outbox does is the
//! caller's (`OutboxFull`, in the pattern's `send`). No remote input grows it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use tokio::sync::Notify;

use super::peers::PeerSet;
use crate::config;
use crate::connection::context::Context;
use crate::connection::link::Link;
use crate::error::{human_bytes, Error, Limit, Result};
use crate::wire::Metadata;

/// One endpoint's outbox.
pub(crate) struct Outbox {
    bounds: config::Outbox,
    state: Mutex<State>,
    /// Messages queued or in the drain's hands. `send`'s fast path is taken only at zero, so a
    /// message never overtakes one sent before it (one atomic load per send).
    pending: AtomicUsize,
    /// Wakes a `send` waiting for room (`OutboxFull::Block`).
    pub(crate) room: Notify,
    /// Wakes `Runtime::drain` waiting for the outbox to be empty.
    emptied: Notify,
    ctx: Arc<Context>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<(Metadata, Bytes)>,
    /// Body bytes queued and in the drain's hands.
    bytes: usize,
    /// A drain task runs (it ends when it finds the queue empty).
    draining: bool,
}

/// What [`Outbox::put`] did.
pub(crate) enum Put {
    /// Queued; `start` says the caller must start the drain task (none runs).
    Queued { start: bool },
    /// No room: the message comes back, with the bound it would pass.
    Full(Metadata, Bytes, Limit),
}

impl Outbox {
    pub(crate) fn new(bounds: config::Outbox, ctx: Arc<Context>) -> Self {
        Self {
            bounds,
            state: Mutex::default(),
            pending: AtomicUsize::new(0),
            room: Notify::new(),
            emptied: Notify::new(),
            ctx,
        }
    }

    /// What a full outbox does.
    pub(crate) fn when_full(&self) -> config::OutboxFull {
        self.bounds.full
    }

    /// Nothing queued and nothing being written from here: a send may go straight out.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }

    /// `LimitExceeded` (`outbox_bytes`) for a body the whole outbox could never hold: refused
    /// at the call, by name, rather than left to block forever.
    pub(crate) fn admits(&self, len: usize) -> Result<()> {
        match len > self.bounds.bytes {
            true => Err(Error::limit(
                Limit::OutboxBytes,
                format!(
                    "a body of {} is larger than the whole outbox, {}",
                    human_bytes(len as u64),
                    human_bytes(self.bounds.bytes as u64)
                ),
            )),
            false => Ok(()),
        }
    }

    /// The error a full outbox gives under `OutboxFull::Reject`.
    pub(crate) fn full_error(&self, limit: Limit) -> Error {
        let detail = match limit {
            Limit::OutboxMessages => format!("{} messages wait", self.bounds.messages),
            _ => format!(
                "{} of bodies wait (at most {})",
                human_bytes(self.state.lock().unwrap().bytes as u64),
                human_bytes(self.bounds.bytes as u64)
            ),
        };
        Error::limit(limit, detail)
    }

    /// Queues a message behind the others, if there is room.
    pub(crate) fn put(&self, meta: Metadata, body: Bytes) -> Put {
        let mut s = self.state.lock().unwrap();
        if self.pending.load(Ordering::Acquire) >= self.bounds.messages {
            return Put::Full(meta, body, Limit::OutboxMessages);
        }
        if s.bytes + body.len() > self.bounds.bytes {
            return Put::Full(meta, body, Limit::OutboxBytes);
        }
        s.bytes += body.len();
        s.queue.push_back((meta, body));
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.ctx.stats.outbox_queued.fetch_add(1, Ordering::Relaxed);
        let start = !std::mem::replace(&mut s.draining, true);
        Put::Queued { start }
    }

    /// Up to `n` messages to write, in order, still counted as pending; none ends the drain
    /// task. One lock for the batch.
    fn take(&self, n: usize) -> Vec<(Metadata, Bytes)> {
        let mut s = self.state.lock().unwrap();
        let k = n.min(s.queue.len());
        let batch: Vec<_> = s.queue.drain(..k).collect();
        if batch.is_empty() {
            s.draining = false;
        }
        batch
    }

    /// Nothing queued: the drain task ends (a later `put` starts another).
    fn idle(&self) -> bool {
        let mut s = self.state.lock().unwrap();
        if s.queue.is_empty() {
            s.draining = false;
        }
        !s.draining
    }

    /// Messages taken and not written anywhere: first again, in their order.
    fn put_back(&self, rest: impl DoubleEndedIterator<Item = (Metadata, Bytes)>) {
        let mut s = self.state.lock().unwrap();
        for m in rest.rev() {
            s.queue.push_front(m);
        }
    }

    /// `n` messages taken, of `bytes` in all, are done with: written, or abandoned.
    fn done(&self, n: usize, bytes: usize, written: bool) {
        if n == 0 {
            return;
        }
        self.state.lock().unwrap().bytes -= bytes;
        let counter = match written {
            true => &self.ctx.stats.outbox_written,
            false => &self.ctx.stats.outbox_abandoned,
        };
        counter.fetch_add(n as u64, Ordering::Relaxed);
        self.released(n);
    }

    fn released(&self, n: usize) {
        if self.pending.fetch_sub(n, Ordering::AcqRel) == n {
            self.emptied.notify_waiters();
        }
        self.room.notify_waiters();
    }

    /// Abandons every message queued (not the one being written): how many.
    pub(crate) fn abandon(&self) -> u64 {
        let mut s = self.state.lock().unwrap();
        let gone: Vec<_> = s.queue.drain(..).collect();
        s.bytes -= gone.iter().map(|(_, b)| b.len()).sum::<usize>();
        drop(s);
        let n = gone.len();
        if n > 0 {
            self.ctx
                .stats
                .outbox_abandoned
                .fetch_add(n as u64, Ordering::Relaxed);
            self.released(n);
        }
        n as u64
    }

    /// Returns once the outbox is empty (everything in it written or abandoned). Cancel-safe.
    pub(crate) async fn until_empty(&self) {
        loop {
            let emptied = self.emptied.notified();
            tokio::pin!(emptied);
            emptied.as_mut().enable();
            if self.is_empty() {
                return;
            }
            emptied.await;
        }
    }

    /// The drain task: writes each message, in order, with `write` to the next live peer of
    /// `peers`, waiting for one as long as some slot may come back. When none can (every
    /// address given up, or the endpoint gone), what is left is abandoned and counted. Messages
    /// go in batches of up to [`BATCH`] to one peer: one pick, one lock to take them and one
    /// to release them per batch, not per message (the drain ran at 0.43 of the live rate per
    /// message, bench/results/2026-12-02-redial).
    pub(crate) async fn drain<W>(self: Arc<Self>, peers: Weak<PeerSet>, write: W)
    where
        W: Fn(Arc<Link>, Metadata, Bytes) -> BoxFuture<'static, Result<()>>,
    {
        loop {
            // A peer first, then the messages: while this waits, what is queued stays in the
            // queue, where a drain's deadline finds it to count as unsent.
            let picked = match peers.upgrade() {
                Some(p) => p.pick(None).await,
                None => Err(Error::NotConnected),
            };
            let Ok(link) = picked else {
                // No slot, or every one given up: nothing will take what is queued.
                self.abandon();
                if self.idle() {
                    return;
                }
                continue;
            };
            let batch = self.take(BATCH);
            if batch.is_empty() {
                return;
            }
            let (mut written, mut bytes) = (0, 0);
            let mut rest = batch.into_iter();
            while let Some((meta, body)) = rest.next() {
                let len = body.len();
                match write(link.clone(), meta.clone(), body.clone()).await {
                    Ok(()) => {
                        written += 1;
                        bytes += len;
                    }
                    // Its end never left: delivered nowhere, so the next live peer gets it and
                    // the rest of the batch, in order.
                    Err(Error::ConnectionLost(_)) => {
                        self.put_back(std::iter::once((meta, body)).chain(rest));
                        break;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "a message from the outbox could not be written");
                        self.done(1, len, false);
                    }
                }
            }
            self.done(written, bytes, true);
        }
    }
}

/// Messages the drain writes to one peer before it picks again.
const BATCH: usize = 64;
