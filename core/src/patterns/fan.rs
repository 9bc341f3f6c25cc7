//! A dialling endpoint's fan-out: one writer per connected peer, each with its own bounded
//! queue and task, so a peer that stops reading stalls only its own copies, and what a writer
//! cannot take is dropped and counted. A BUS member sends through one (PATTERNS §6.3), and so
//! does a dialling publisher (PATTERNS §4.4).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use tokio::sync::Notify;

use super::pushpull::write_whole;
use super::Dropped;
use crate::connection::context::Context;
use crate::connection::link::Link;
use crate::error::{Error, Limit, Result};
use crate::wire::Header;

/// The writers of one endpoint, one per connected peer, and what they dropped.
pub(crate) struct Fan {
    ctx: Arc<Context>,
    writers: Mutex<Vec<Writer>>,
    /// Copies a peer's writer holds at most.
    queue: usize,
    /// Body bytes a peer's writer holds at most (`Limits::subscriber_buffer_bytes`).
    budget: usize,
    queue_full: AtomicU64,
    byte_budget: AtomicU64,
    dead: AtomicU64,
}

/// The copies waiting for one peer, written in order by a task of its own.
struct Writer {
    link: Weak<Link>,
    state: Arc<WriterState>,
}

#[derive(Default)]
struct WriterState {
    copies: Mutex<Copies>,
    work: Notify,
}

#[derive(Default)]
struct Copies {
    /// Each copy's header is shared by every peer's queue: one allocation per message; with
    /// its number toward this peer, when the peer requires ordering.
    queued: VecDeque<(Arc<Header>, Bytes, Option<u64>)>,
    bytes: usize,
    /// The writer ended (its connection failed): what is queued here is dropped.
    ended: bool,
}

impl Fan {
    /// A fan-out whose writers hold at most `queue` copies and `budget` body bytes each.
    pub(crate) fn new(ctx: Arc<Context>, queue: usize, budget: usize) -> Arc<Self> {
        Arc::new(Self {
            ctx,
            writers: Mutex::new(Vec::new()),
            queue,
            budget,
            queue_full: AtomicU64::new(0),
            byte_budget: AtomicU64::new(0),
            dead: AtomicU64::new(0),
        })
    }

    /// Queues one copy of `body` for each of `links` (the endpoint's live peers) whose bounds
    /// allow it, and returns how many were queued. A body above the byte budget could be queued
    /// for nobody: `LimitExceeded` (limit `byte_budget`), not a drop per peer. It never waits.
    pub(crate) fn send(
        self: &Arc<Self>,
        links: Vec<Arc<Link>>,
        header: Header,
        body: Bytes,
    ) -> Result<usize> {
        self.ctx.check_open()?;
        if body.len() > self.budget {
            return Err(Error::limit(
                Limit::ByteBudget,
                format!(
                    "a body of {} bytes, above subscriber_buffer_bytes {} ({})",
                    body.len(),
                    self.budget,
                    crate::error::human_bytes(self.budget as u64)
                ),
            ));
        }
        let header = Arc::new(header);
        let mut writers = self.writers.lock().unwrap();
        // A peer whose connection was replaced or left has its writer go with it.
        writers.retain(|w| {
            w.link
                .upgrade()
                .is_some_and(|l| links.iter().any(|x| Arc::ptr_eq(x, &l)))
        });
        let mut queued = 0;
        for link in links {
            let i = match writers
                .iter()
                .position(|w| w.link.upgrade().is_some_and(|l| Arc::ptr_eq(&l, &link)))
            {
                Some(i) => i,
                None => {
                    writers.push(self.start(&link));
                    writers.len() - 1
                }
            };
            // A copy is numbered as it is offered, so one dropped here is a gap at the peer
            // (PROTOCOL.md §4), as a Pub/Sub copy dropped at its subscriber's queue is.
            let seq = link.numbering.as_ref().map(|n| n.take());
            if self.offer(&writers[i].state, &header, &body, seq) {
                queued += 1;
            }
        }
        Ok(queued)
    }

    /// Copies dropped, by cause: `queue_full`, `byte_budget`, and `dead_subscriber` (lost with
    /// a peer whose connection failed).
    pub(crate) fn dropped(&self) -> Dropped {
        Dropped {
            queue_full: self.queue_full.load(Ordering::Relaxed),
            byte_budget: self.byte_budget.load(Ordering::Relaxed),
            reverse_pool_empty: 0,
            dead_subscriber: self.dead.load(Ordering::Relaxed),
            refused: 0,
        }
    }

    /// A writer for `link`, with its task.
    fn start(self: &Arc<Self>, link: &Arc<Link>) -> Writer {
        let state = Arc::new(WriterState::default());
        let (fan, s, l) = (Arc::downgrade(self), state.clone(), Arc::downgrade(link));
        let ctx = self.ctx.clone();
        tokio::spawn(async move {
            loop {
                let work = s.work.notified();
                tokio::pin!(work);
                work.as_mut().enable();
                let next = {
                    let mut c = s.copies.lock().unwrap();
                    let n = c.queued.pop_front();
                    if let Some((_, b, _)) = &n {
                        c.bytes -= b.len();
                    }
                    n
                };
                let Some((header, body, seq)) = next else {
                    // Nothing queued: wait for a copy, or end with the peer's connection.
                    let Some(link) = l.upgrade() else { return };
                    tokio::select! {
                        _ = work => continue,
                        _ = link.conn.closed() => {}
                    }
                    end(&s, &fan, 0);
                    return;
                };
                let Some(link) = l.upgrade() else {
                    end(&s, &fan, 1);
                    return;
                };
                let mut header = Arc::unwrap_or_clone(header);
                if let (Some(seq), Some(n)) = (seq, &link.numbering) {
                    n.stamp(&mut header, seq);
                }
                if write_whole(&ctx, &link, header, body, None).await.is_err() {
                    end(&s, &fan, 1);
                    return;
                }
            }
        });
        Writer {
            link: Arc::downgrade(link),
            state,
        }
    }

    /// Queues a copy for one peer if its bounds allow: false, counted, when they do not.
    fn offer(&self, w: &WriterState, header: &Arc<Header>, body: &Bytes, seq: Option<u64>) -> bool {
        let mut c = w.copies.lock().unwrap();
        if c.ended {
            self.dead.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if c.queued.len() >= self.queue {
            self.queue_full.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if c.bytes + body.len() > self.budget {
            self.byte_budget.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        c.bytes += body.len();
        c.queued.push_back((header.clone(), body.clone(), seq));
        let first = c.queued.len() == 1;
        drop(c);
        if first {
            w.work.notify_one();
        }
        true
    }
}

/// A writer whose peer is gone: `lost` copies in flight and everything queued are dropped,
/// counted as lost with a dead peer.
fn end(s: &WriterState, fan: &Weak<Fan>, lost: u64) {
    let mut c = s.copies.lock().unwrap();
    c.ended = true;
    let n = c.queued.len() as u64 + lost;
    c.queued.clear();
    c.bytes = 0;
    drop(c);
    if let Some(f) = fan.upgrade() {
        f.dead.fetch_add(n, Ordering::Relaxed);
    }
}
