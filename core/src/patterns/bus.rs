//! BUS: every member's message reaches every other member, with no relay (PATTERNS §6.3). A
//! member is bound (a puller's route: other members' messages arrive as pushed ones) and
//! dialling (it writes each message to every member it connected). A member never dials itself,
//! so no copy is ever addressed to it: nothing has to be filtered out.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use tokio::sync::Notify;

use super::pushpull::write_whole;
use super::{Dialer, Dropped, Puller};
use crate::address::Address;
use crate::config::EndpointOptions;
use crate::connection::context::Context;
use crate::connection::handles::Message;
use crate::connection::handshake::Flow;
use crate::connection::link::Link;
use crate::error::{Error, Limit, Result};
use crate::runtime::listener::Listener;
use crate::runtime::Runtime;
use crate::wire::{check_streams, Metadata};

/// A bus member: bound at a path of a listener, and connected to the other members' paths.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, l: weida::Listener, other: &str) -> weida::Result<()> {
/// let me = rt.bus(&l, "/chat")?;
/// me.connect(other).await?; // and every other member connects to me.address()
/// me.send("hello").await?;  // one copy to each member I connected
/// let m = me.recv().await?; // what the others sent
/// # Ok(()) }
/// ```
pub struct Bus {
    inbox: Puller,
    dialer: Dialer,
    fan: Arc<Fan>,
}

/// The writers of one member, one per connected member, and what they dropped.
struct Fan {
    ctx: Arc<Context>,
    writers: Mutex<Vec<Writer>>,
    /// Copies a member's writer holds at most.
    queue: usize,
    /// Body bytes a member's writer holds at most (`Limits::subscriber_buffer_bytes`).
    budget: usize,
    queue_full: AtomicU64,
    byte_budget: AtomicU64,
    dead: AtomicU64,
}

/// The copies waiting for one member, written in order by a task of its own, so a member that
/// stops reading stalls only its own copies.
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
    queued: VecDeque<(Metadata, Bytes)>,
    bytes: usize,
    /// The writer ended (its connection failed): what is queued here is dropped.
    ended: bool,
}

impl Runtime {
    /// A [`Bus`] member bound at `path` on `listener` (one of this runtime's), dialling through
    /// this runtime: its own bounds are `endpoint_queue` (copies a member's writer holds) and
    /// `max_collected_body`; the byte budget per member is `Limits::subscriber_buffer_bytes`.
    pub fn bus(&self, listener: &Listener, path: &str) -> Result<Bus> {
        self.bus_with(listener, path, &EndpointOptions::new())
    }

    /// [`Runtime::bus`] with bounds of its own.
    pub fn bus_with(
        &self,
        listener: &Listener,
        path: &str,
        options: &EndpointOptions,
    ) -> Result<Bus> {
        if !Arc::ptr_eq(listener.context(), &self.pool.ctx) {
            return Err(Error::InvalidConfig(
                "a bus member's listener must be its runtime's".into(),
            ));
        }
        let dialer = Dialer::new(
            self.pool.clone(),
            options,
            check_streams::TRANSFER,
            Flow::Numbers,
        )?;
        let fan = Arc::new(Fan {
            ctx: self.pool.ctx.clone(),
            writers: Mutex::new(Vec::new()),
            queue: dialer.bounds.endpoint_queue,
            budget: self.pool.ctx.limits.subscriber_buffer_bytes,
            queue_full: AtomicU64::new(0),
            byte_budget: AtomicU64::new(0),
            dead: AtomicU64::new(0),
        });
        Ok(Bus {
            inbox: listener.puller_with(path, options)?,
            dialer,
            fan,
        })
    }
}

impl Bus {
    /// The address other members connect to.
    pub fn address(&self) -> &Address {
        self.inbox.address()
    }

    /// Connects to another member's address (with its path): it gets every message sent from
    /// now on. Cancel-safe.
    pub async fn connect(&self, address: &str) -> Result<()> {
        self.dialer.connect(address).await
    }

    /// Records another member's address at once and dials it in the background (redialled
    /// as any dialling endpoint is). Cancel-safe.
    pub async fn connect_later(&self, address: &str) -> Result<()> {
        self.dialer.connect_later(address)
    }

    /// Leaves a member; true if it was connected.
    pub fn disconnect(&self, address: &str) -> Result<bool> {
        self.dialer.disconnect(address)
    }

    /// Members connected and live: the copies the next `send` makes.
    pub fn peer_count(&self) -> usize {
        self.dialer.peers.live()
    }

    /// What happens to the addresses this member connected ([`crate::PeerEvent`]).
    pub fn events(&self) -> crate::PeerEvents {
        self.dialer.peers.events.subscribe()
    }

    /// Queues one copy of `body` for every live member this one connected, and returns how
    /// many were queued. One `Bytes` is shared by every copy. A member whose writer already
    /// holds `endpoint_queue` copies, or whose bytes would pass the byte budget, loses this
    /// copy, counted in [`Bus::dropped`]; no member's pace delays the send or another member.
    /// A body above the byte budget could be queued for nobody: `LimitExceeded` (limit
    /// `byte_budget`), not a drop per member. Cancel-safe (it does not wait).
    pub async fn send(&self, body: impl Into<Bytes>) -> Result<usize> {
        self.send_with(Metadata::new(), body).await
    }

    /// [`Bus::send`] with metadata. Cancel-safe.
    pub async fn send_with(&self, meta: Metadata, body: impl Into<Bytes>) -> Result<usize> {
        let ctx = &self.fan.ctx;
        ctx.check_open()?;
        let body: Bytes = body.into();
        if body.len() > self.fan.budget {
            return Err(Error::limit(
                Limit::ByteBudget,
                format!(
                    "a body of {} bytes, above subscriber_buffer_bytes {} ({})",
                    body.len(),
                    self.fan.budget,
                    crate::error::human_bytes(self.fan.budget as u64)
                ),
            ));
        }
        let links = self.dialer.peers.live_links();
        let mut writers = self.fan.writers.lock().unwrap();
        // A member whose connection was replaced or left has its writer go with it.
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
                    writers.push(self.fan.start(&link));
                    writers.len() - 1
                }
            };
            if self.fan.offer(&writers[i].state, &meta, &body) {
                queued += 1;
            }
        }
        Ok(queued)
    }

    /// The next message another member sent. Cancel-safe.
    pub async fn recv(&self) -> Result<Message> {
        self.inbox.recv().await
    }

    /// Up to `max` messages: waits for the first, then takes those that are ready.
    /// Cancel-safe, as [`Puller::recv_many`] is.
    pub async fn recv_many(&self, max: usize) -> Result<Vec<Message>> {
        self.inbox.recv_many(max).await
    }

    /// A message if one is ready now.
    pub fn try_recv(&self) -> Option<Result<Message>> {
        self.inbox.try_recv()
    }

    /// Hands back a message a caller received but could not deliver: the next `recv` returns
    /// it first.
    pub fn give_back(&self, m: Message) {
        self.inbox.give_back(m);
    }

    /// Copies this member dropped, by cause: `queue_full`, `byte_budget`, and
    /// `dead_subscriber` (lost with a member whose connection failed).
    pub fn dropped(&self) -> Dropped {
        let f = &self.fan;
        Dropped {
            queue_full: f.queue_full.load(Ordering::Relaxed),
            byte_budget: f.byte_budget.load(Ordering::Relaxed),
            reverse_pool_empty: 0,
            dead_subscriber: f.dead.load(Ordering::Relaxed),
            refused: 0,
        }
    }

    /// Unbinds the path and leaves every member.
    pub fn close(&self) {
        self.inbox.close();
        self.dialer.leave_all();
    }
}

impl Fan {
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
                    if let Some((_, b)) = &n {
                        c.bytes -= b.len();
                    }
                    n
                };
                let Some((meta, body)) = next else {
                    // Nothing queued: wait for a copy, or end with the member's connection.
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
                if write_whole(&ctx, &link, meta, body, None).await.is_err() {
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

    /// Queues a copy for one member if its bounds allow: false, counted, when they do not.
    fn offer(&self, w: &WriterState, meta: &Metadata, body: &Bytes) -> bool {
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
        c.queued.push_back((meta.clone(), body.clone()));
        let first = c.queued.len() == 1;
        drop(c);
        if first {
            w.work.notify_one();
        }
        true
    }
}

/// A writer whose member is gone: `lost` copies in flight and everything queued are dropped,
/// counted as lost with a dead member.
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
