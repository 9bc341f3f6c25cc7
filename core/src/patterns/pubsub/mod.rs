//! Pub/Sub (PATTERNS §4): a publisher binds a path, subscribers dial it and say what they
//! want with segmented filters; each copy is a stream of its own, written by a writer per
//! subscriber, so a subscriber that stops reading costs only its own copies, which are
//! dropped and counted by cause.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::address::Address;
use crate::config::Bounds;
use crate::config::EndpointOptions;
use crate::connection::admission::RouteKind;
use crate::connection::cancel::{Canceler, Parked};
use crate::connection::context::Context;
use crate::connection::handles::Message;
use crate::connection::link::Link;
use crate::error::{Error, Limit, Result};
use crate::runtime::events::{EventSender, PeerEvent};
use crate::runtime::listener::Listener;
use crate::runtime::pool::Pool;
use crate::runtime::redial::{self, Owner};
use crate::runtime::routes::RouteGuard;
use crate::runtime::Runtime;
use feed::{run_link, Feed};
use filter::Filter;
use futures_util::future::BoxFuture;
use hub::{Chunk, Hub, StreamCopy};

mod collector;
pub(crate) mod feed;
pub mod filter;
pub(crate) mod hub;

pub use collector::{BoundSubscriber, DialingPublisher};
pub use hub::{DropCause, Dropped};

/// Publishes messages by topic to the subscribers whose filters select it.
///
/// ```no_run
/// # async fn f() -> weida::Result<()> {
/// let rt = weida::Runtime::new(Default::default())?;
/// let listener = rt.bind("weida://127.0.0.1:0").await?;
/// let publisher = listener.publisher("/prices")?;
/// let subscriber = rt.subscriber();
/// subscriber.connect(&publisher.address().to_string()).await?;
/// subscriber.subscribe("prices.*.eur").await?; // installed at the publisher when it returns
/// publisher.publish("prices.btc.eur", "42000")?; // never waits for a subscriber
/// let m = subscriber.recv().await?;
/// assert_eq!(m.meta.topic.as_deref(), Some("prices.btc.eur"));
/// # Ok(()) }
/// ```
pub struct Publisher {
    hub: Arc<Hub>,
    address: Address,
    _route: RouteGuard,
}

impl Listener {
    /// Binds a [`Publisher`] at `path`: subscribers dial it and install filters.
    pub fn publisher(&self, path: &str) -> Result<Publisher> {
        self.publisher_with(path, &EndpointOptions::new())
    }

    /// Binds a [`Publisher`] at `path` with bounds of its own: `endpoint_queue`, the copies
    /// it queues for each subscriber before it drops (`QueueFull`).
    pub fn publisher_with(&self, path: &str, options: &EndpointOptions) -> Result<Publisher> {
        let address = self.address().with_path(path)?;
        let bounds = options.resolve(&self.context().config)?;
        let hub = Hub::new(self.context().clone(), path, bounds);
        let route = self.route(path, RouteKind::Publisher, None, Some(hub.clone()), bounds)?;
        Ok(Publisher {
            hub,
            address,
            _route: route,
        })
    }
}

impl Runtime {
    /// A [`Subscriber`]: connect it to publishers, then subscribe.
    pub fn subscriber(&self) -> Subscriber {
        self.subscriber_with(&EndpointOptions::new())
            .expect("the runtime's own bounds are valid")
    }

    /// A [`Subscriber`] with bounds of its own: `max_collected_body` (a larger copy is not
    /// delivered, and under PerProducer ordering is a gap) and `endpoint_queue` (the copies
    /// it holds for `recv`).
    pub fn subscriber_with(&self, options: &EndpointOptions) -> Result<Subscriber> {
        let pool = self.pool.clone();
        let bounds = options.resolve(&pool.ctx.config)?;
        Ok(Subscriber {
            inner: Arc::new(SubInner {
                feed: Feed::new(pool.ctx.clone(), bounds),
                pool,
                links: Mutex::new(Vec::new()),
                filters: Mutex::new(Vec::new()),
                op: tokio::sync::Mutex::new(()),
                events: EventSender::default(),
            }),
            bounds,
        })
    }
}

impl Publisher {
    /// The address subscribers dial.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Queues `body` for every subscriber whose filters select `topic`, one shared `Bytes`
    /// for every copy, and returns how many copies were queued. Never waits: a subscriber
    /// whose queue is full (`Limits::endpoint_queue`) or whose byte budget
    /// (`Limits::subscriber_buffer_bytes`) would pass loses this copy, counted in
    /// [`Publisher::dropped`]. A body above the byte budget is refused here with
    /// `LimitExceeded` (nobody could queue it); a malformed topic with `InvalidFilter`.
    pub fn publish(&self, topic: &str, body: impl Into<Bytes>) -> Result<usize> {
        self.hub.publish(topic, body.into())
    }

    /// Opens a streamed message to the subscribers whose filters select `topic` now (the set
    /// is fixed here: one arriving later gets the next message, never a fragment). Chunks are
    /// shared by every copy; the payload has no ceiling, and each chunk is bounded by the byte
    /// budget (PATTERNS §4.1).
    pub fn open(&self, topic: &str) -> Result<FanOut> {
        let (topic, copies) = self.hub.open(topic)?;
        Ok(FanOut::new(self.hub.clone(), topic, copies))
    }

    /// Copies dropped since the publisher was bound, by cause.
    pub fn dropped(&self) -> Dropped {
        self.hub.dropped()
    }

    /// Copies of `topic` dropped, by cause (the first 10 000 topics with drops are kept apart).
    pub fn dropped_on(&self, topic: &str) -> Dropped {
        self.hub.dropped_on(topic)
    }

    /// Subscribers connected now (with at least one filter).
    pub fn subscriber_count(&self) -> usize {
        self.hub.subscribers()
    }

    /// Resolves once [`Publisher::subscriber_count`] is `n`, the queued copies of any
    /// subscriber that went already counted in [`Publisher::dropped`]: an event for a test to
    /// await where it would otherwise poll.
    ///
    /// Cancel-safe: it only waits; dropping it changes nothing.
    #[doc(hidden)]
    pub async fn until_subscribers(&self, n: usize) {
        self.hub.until_subscribers(n).await
    }

    /// Unbinds the path and ends every subscription: subscribers' filters go with it.
    pub fn close(&self) {
        self.hub.close();
        self._route.close();
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.hub.close();
    }
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("address", &self.address)
            .finish()
    }
}

/// A message streamed to every subscriber matched at `Publisher::open`, chunk by chunk.
/// Dropped unfinished, every copy is cancelled (subscribers never see half a message).
pub struct FanOut {
    hub: Arc<Hub>,
    topic: Arc<str>,
    copies: Vec<StreamCopy>,
    finished: bool,
    /// Once a canceler was taken: the copies' senders it resets, and whether it did.
    parked: Option<Arc<Parked<Vec<mpsc::UnboundedSender<Chunk>>>>>,
}

/// Ends every copy a canceled fan-out's senders reach: subscribers discard what they received.
fn reset_copies(copies: Vec<mpsc::UnboundedSender<Chunk>>) {
    for tx in copies {
        let _ = tx.send(Chunk::Reset);
    }
}

impl FanOut {
    pub(crate) fn new(hub: Arc<Hub>, topic: Arc<str>, copies: Vec<StreamCopy>) -> Self {
        Self {
            hub,
            topic,
            copies,
            finished: false,
            parked: None,
        }
    }

    /// Copies still attached (not dropped); 0 once cancelled.
    pub fn copies(&self) -> usize {
        if self.canceled() {
            return 0;
        }
        self.copies.iter().filter(|c| c.attached).count()
    }

    fn canceled(&self) -> bool {
        self.parked.as_ref().is_some_and(|p| p.is_canceled())
    }

    fn check_open(&self) -> Result<()> {
        if self.canceled() {
            return Err(Error::Canceled);
        }
        Ok(())
    }

    /// A handle that cancels this message from anywhere: every copy is cancelled at once, a
    /// pending `write` fails `Canceled`, a later one too; after `finish` it does nothing (see
    /// [`Canceler`]). Free until called.
    pub fn canceler(&mut self) -> Canceler {
        if let Some(p) = &self.parked {
            return p.canceler();
        }
        let senders = self
            .copies
            .iter()
            .filter(|c| c.attached)
            .map(|c| c.tx.clone());
        let p = Parked::new(senders.collect(), reset_copies);
        let c = p.canceler();
        self.parked = Some(p);
        c
    }

    fn budget(&self, len: usize) -> Result<()> {
        let budget = self.hub.ctx.limits.subscriber_buffer_bytes;
        if len > budget {
            return Err(Error::limit(
                Limit::ByteBudget,
                format!(
                    "a chunk of {len} bytes, above subscriber_buffer_bytes {budget} ({})",
                    crate::error::human_bytes(budget as u64)
                ),
            ));
        }
        Ok(())
    }

    /// Hands `chunk` to every attached copy without waiting: a copy whose backlog would pass
    /// the byte budget is dropped whole (cancelled at the subscriber) and counted. Returns the
    /// copies still attached.
    pub fn write_now(&mut self, chunk: impl Into<Bytes>) -> Result<usize> {
        self.check_open()?;
        let chunk = chunk.into();
        self.budget(chunk.len())?;
        let budget = self.hub.ctx.limits.subscriber_buffer_bytes;
        for c in self.copies.iter_mut().filter(|c| c.attached) {
            if c.backlog.failed.load(Ordering::Acquire) {
                // Its writer failed and counted the drop already.
                c.attached = false;
                continue;
            }
            let pending = c.backlog.bytes.load(Ordering::Acquire);
            if pending + chunk.len() > budget {
                c.attached = false;
                let _ = c.tx.send(Chunk::Reset);
                self.hub.count(&self.topic, DropCause::ByteBudget);
                continue;
            }
            c.backlog.bytes.fetch_add(chunk.len(), Ordering::AcqRel);
            if c.tx.send(Chunk::Data(chunk.clone())).is_err() {
                c.attached = false;
            }
        }
        // A cancel that came as the chunk was handed out wins: the copies were reset.
        self.check_open()?;
        Ok(self.copies())
    }

    /// Hands `chunk` to every attached copy, first waiting up to `Limits::fanout_wait` for the
    /// copies whose backlog has no room for it; those still full then are dropped as in
    /// [`FanOut::write_now`]. Cancel-safe (nothing is written until the wait ends). A
    /// [`Canceler`] interrupts the wait: `Canceled`.
    pub async fn write(&mut self, chunk: impl Into<Bytes>) -> Result<usize> {
        self.check_open()?;
        let chunk = chunk.into();
        self.budget(chunk.len())?;
        let budget = self.hub.ctx.limits.subscriber_buffer_bytes;
        let wait = self.hub.ctx.limits.fanout_wait;
        let len = chunk.len();
        let room = async {
            for c in self.copies.iter().filter(|c| c.attached) {
                loop {
                    let n = c.backlog.room.notified();
                    tokio::pin!(n);
                    n.as_mut().enable();
                    if c.backlog.failed.load(Ordering::Acquire)
                        || c.backlog.bytes.load(Ordering::Acquire) + len <= budget
                    {
                        break;
                    }
                    n.await;
                }
            }
        };
        let canceled = async {
            match &self.parked {
                Some(p) => p.canceled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = canceled => return Err(Error::Canceled),
            _ = tokio::time::timeout(wait, room) => {}
        }
        self.write_now(chunk)
    }

    /// Ends the message for every attached copy; returns how many were still attached (0
    /// when a [`Canceler`] cancelled it first; a cancel once the finish began does nothing).
    pub fn finish(mut self) -> usize {
        if let Some(p) = &self.parked {
            if p.finish().is_err() {
                // Cancelled: the copies were reset, and Drop need not again.
                self.finished = true;
                return 0;
            }
        }
        self.finished = true;
        let mut n = 0;
        for c in self.copies.iter().filter(|c| c.attached) {
            if !c.backlog.failed.load(Ordering::Acquire) && c.tx.send(Chunk::Fin).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Cancels every copy: subscribers discard what they received of it.
    pub fn cancel(self) {}
}

impl Drop for FanOut {
    fn drop(&mut self) {
        if let Some(p) = &self.parked {
            // Unfinished: cancelled, for anyone holding a canceler (after finish, nothing).
            p.canceler().cancel();
        }
        if !self.finished {
            for c in self.copies.iter().filter(|c| c.attached) {
                let _ = c.tx.send(Chunk::Reset);
            }
        }
    }
}

impl std::fmt::Debug for FanOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOut")
            .field("topic", &self.topic)
            .field("copies", &self.copies())
            .finish()
    }
}

/// One publisher slot of a subscriber: its current connection (live, or lost while a redial
/// works), the task that reads it, and the redial task.
struct SubLink {
    address: Address,
    /// None before a slot recorded by `connect_later` first goes live.
    link: Option<Arc<Link>>,
    id: u64,
    task: Option<tokio::task::JoinHandle<()>>,
    redial: Option<tokio::task::AbortHandle>,
    /// Its redial may still bring it back: a receive waits for it.
    hopeful: bool,
}

impl Drop for SubLink {
    fn drop(&mut self) {
        if let Some(t) = &self.task {
            t.abort();
        }
        if let Some(t) = &self.redial {
            t.abort();
        }
        if let Some(l) = &self.link {
            l.conn
                .close(crate::wire::Code::NoError, "subscriber closed");
        }
    }
}

impl SubLink {
    /// Its connection, when it has one that is up.
    fn live(&self) -> Option<&Arc<Link>> {
        self.link.as_ref().filter(|l| l.conn.loss().is_none())
    }
}

impl SubInner {
    /// A slot for `address` on its new `link`: the feed counts it, and a task reads it.
    fn start(&self, address: Address, link: Arc<Link>) -> SubLink {
        let id = NEXT_LINK.fetch_add(1, Ordering::Relaxed);
        self.feed.link_added();
        SubLink {
            address,
            task: Some(self.read(link.clone(), id)),
            link: Some(link),
            id,
            redial: None,
            hopeful: false,
        }
    }

    /// The task that reads `link`'s copies into the feed until it ends.
    fn read(&self, link: Arc<Link>, id: u64) -> tokio::task::JoinHandle<()> {
        let feed = self.feed.clone();
        tokio::spawn(async move {
            run_link(feed.clone(), link.clone(), id).await;
            feed.link_ended(id, Some(link.conn.closed().await), false);
        })
    }

    fn redialled_by(&self, address: &Address, task: tokio::task::AbortHandle, hopeful: bool) {
        let mut links = self.links.lock().unwrap();
        match links.iter_mut().find(|l| &l.address == address) {
            Some(l) => {
                l.redial = Some(task);
                l.hopeful = hopeful;
                if hopeful {
                    self.feed.hopeful(1);
                }
            }
            None => task.abort(),
        }
    }
}

impl Owner for SubInner {
    fn dial<'a>(&'a self, address: &'a Address) -> BoxFuture<'a, Result<Arc<Link>>> {
        Box::pin(self.pool.dial_subscriber(address))
    }

    /// What `connect` does on the new connection: read it, and install every filter held
    /// (one implementation for both: `connect` and this share `start` and the filters' loop).
    fn attach<'a>(&'a self, url: &'a Address, link: Arc<Link>) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let _op = self.op.lock().await;
            if !self.links.lock().unwrap().iter().any(|l| &l.address == url) {
                return Ok(false);
            }
            let filters = self.filters.lock().unwrap().clone();
            let id = NEXT_LINK.fetch_add(1, Ordering::Relaxed);
            self.feed.link_back();
            let task = self.read(link.clone(), id);
            for f in &filters {
                if let Err(e) = link.ask(true, f.as_str()).await {
                    task.abort();
                    self.feed.link_ended(id, None, false);
                    link.conn
                        .close(crate::wire::Code::NoError, "subscribe refused");
                    return Err(e);
                }
            }
            let mut links = self.links.lock().unwrap();
            let Some(slot) = links.iter_mut().find(|l| &l.address == url) else {
                task.abort();
                return Ok(false);
            };
            // The old connection's reader is done; its drop would close the new one.
            if let Some(old) = slot.task.replace(task) {
                old.abort();
            }
            slot.link = Some(link);
            slot.id = id;
            Ok(true)
        })
    }

    fn gave_up(&self, url: &Address, _cause: &crate::error::LossCause) {
        let mut links = self.links.lock().unwrap();
        if let Some(l) = links.iter_mut().find(|l| &l.address == url) {
            if std::mem::take(&mut l.hopeful) {
                self.feed.hopeful(-1);
            }
        }
    }

    fn events(&self) -> &EventSender {
        &self.events
    }

    fn ctx(&self) -> &Context {
        &self.pool.ctx
    }
}

/// Receives the messages of the publishers it connects to whose topics its filters select.
/// Each connection is its own (never pooled): a subscriber is what its publisher counts,
/// bounds and drops for.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, addr: &str) -> weida::Result<()> {
/// let sub = rt.subscriber();
/// sub.connect(addr).await?;
/// sub.subscribe("sensors.#").await?;
/// while let Ok(m) = sub.recv().await {
///     println!("{:?} gap={:?}", m.meta.topic, m.meta.gap);
/// }
/// # Ok(()) }
/// ```
pub struct Subscriber {
    inner: Arc<SubInner>,
    /// The subscriber's own bounds (its reconnect policy).
    bounds: Bounds,
}

/// What a subscriber and its slots' redial tasks share.
struct SubInner {
    pool: Arc<Pool>,
    feed: Arc<Feed>,
    links: Mutex<Vec<SubLink>>,
    /// The filters held, in the order given (a filter given twice is held twice).
    filters: Mutex<Vec<Filter>>,
    /// Subscribe, unsubscribe, connect and a redial's re-subscription run one at a time, so a
    /// filter is never half installed across publishers.
    op: tokio::sync::Mutex<()>,
    events: EventSender,
}

static NEXT_LINK: AtomicU64 = AtomicU64::new(1);

impl Subscriber {
    /// Dials the publisher at `address` (with its path) on a connection of its own, and
    /// installs every filter this subscriber holds there before returning. Not cancel-safe:
    /// dropped while the publisher installs the filters, the connection is closed but this
    /// subscriber still counts it as connected, so `recv` waits instead of failing
    /// `ConnectionLost` (untested); close the subscriber and make a new one.
    pub async fn connect(&self, address: &str) -> Result<()> {
        self.inner.feed.check_open()?;
        let a = Address::parse(address)?;
        a.endpoint_path()?;
        let _op = self.inner.op.lock().await;
        let link = self.inner.pool.dial_subscriber(&a).await?;
        let sl = self.inner.start(a.clone(), link.clone());
        let filters = self.inner.filters.lock().unwrap().clone();
        for f in &filters {
            if let Err(e) = link.ask(true, f.as_str()).await {
                self.inner.feed.link_ended(sl.id, None, true);
                return Err(e);
            }
        }
        self.inner.links.lock().unwrap().push(sl);
        let owner: std::sync::Weak<dyn Owner> = Arc::downgrade(&self.inner) as _;
        let task = tokio::spawn(redial::run(owner, a.clone(), &link, self.bounds.reconnect));
        let hopeful = redial::redials(&self.bounds.reconnect);
        self.inner.redialled_by(&a, task.abort_handle(), hopeful);
        self.inner.events.send(PeerEvent::Connected {
            url: a.to_string(),
            fingerprint: redial::fingerprint(&link),
        });
        Ok(())
    }

    /// Records the publisher at `address` at once and dials it in the background (ZeroMQ's
    /// connect-before-bind; see [`crate::Pusher::connect_later`]): once it is up, every filter
    /// held is installed there before the slot counts as live, as `connect` does. Until then a
    /// `recv` waits for it. Connecting an address already connected changes nothing.
    /// Cancel-safe (it returns without waiting).
    pub async fn connect_later(&self, address: &str) -> Result<()> {
        self.inner.feed.check_open()?;
        self.inner.pool.ctx.check_open()?;
        let a = Address::parse(address)?;
        a.endpoint_path()?;
        let _op = self.inner.op.lock().await;
        if self
            .inner
            .links
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.address == a)
        {
            return Ok(());
        }
        self.inner.feed.slot_recorded();
        self.inner.links.lock().unwrap().push(SubLink {
            address: a.clone(),
            link: None,
            id: 0,
            task: None,
            redial: None,
            hopeful: false,
        });
        let owner: std::sync::Weak<dyn Owner> = Arc::downgrade(&self.inner) as _;
        let task = tokio::spawn(redial::later(owner, a.clone(), self.bounds.reconnect));
        self.inner.redialled_by(&a, task.abort_handle(), true);
        Ok(())
    }

    /// What happens to this subscriber's publishers from now on ([`crate::PeerEvent`]); see
    /// [`crate::Pusher::events`]. A redialled publisher gets every filter held again: its
    /// copies resume with a gap, never a replay.
    pub fn events(&self) -> crate::PeerEvents {
        self.inner.events.subscribe()
    }

    /// Closes the connection to `address`; true if it was connected.
    pub fn disconnect(&self, address: &str) -> Result<bool> {
        let a = Address::parse(address)?;
        let mut links = self.inner.links.lock().unwrap();
        let Some(i) = links.iter().position(|l| l.address == a) else {
            return Ok(false);
        };
        let l = links.swap_remove(i);
        drop(links);
        let live = l.live().is_some();
        self.inner.feed.slot_removed(l.id, live, l.hopeful);
        Ok(true)
    }

    /// Live connections.
    pub fn peer_count(&self) -> usize {
        self.inner
            .links
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.live().is_some())
            .count()
    }

    /// Adds `filter` (segments separated by `.`, `*` for one whole segment, a trailing `#`
    /// for any number): returns once every connected publisher has installed it, so a message
    /// published after this returns is selected. A malformed filter is `InvalidFilter`, never
    /// widened; a publisher that refuses it (unknown path, too many filters) fails the call
    /// and the filter is installed nowhere. Not cancel-safe: a call dropped while publishers
    /// install the filter leaves it in force here and at those that installed it, but not
    /// listed by `filters()`, so `unsubscribe` does not remove it (untested); close the
    /// subscriber to be rid of it.
    pub async fn subscribe(&self, filter: &str) -> Result<()> {
        self.inner.feed.check_open()?;
        let f: Filter = filter.parse()?;
        let _op = self.inner.op.lock().await;
        let links: Vec<Arc<Link>> = self.live_links();
        // Locally first: a copy the publisher sends right after its answer must be kept.
        self.inner.feed.add_filter(&f);
        for (i, l) in links.iter().enumerate() {
            if let Err(e) = l.ask(true, f.as_str()).await {
                for done in &links[..i] {
                    let _ = done.ask(false, f.as_str()).await;
                }
                self.inner.feed.remove_filter(&f);
                return Err(e);
            }
        }
        self.inner.filters.lock().unwrap().push(f);
        Ok(())
    }

    /// Removes one entry of `filter`; false if it was not held. Returns once every connected
    /// publisher has removed it; from then on nothing only it selected is delivered. Not
    /// cancel-safe: a call dropped before it returns has removed the filter here (nothing only
    /// it selects is delivered from then on) but perhaps not at every publisher, which may go
    /// on sending copies this subscriber discards.
    pub async fn unsubscribe(&self, filter: &str) -> Result<bool> {
        let f: Filter = filter.parse()?;
        let _op = self.inner.op.lock().await;
        {
            let mut fs = self.inner.filters.lock().unwrap();
            let Some(i) = fs.iter().position(|x| x == &f) else {
                return Ok(false);
            };
            fs.remove(i);
        }
        self.inner.feed.remove_filter(&f);
        let mut first_err = None;
        for l in self.live_links() {
            if let Err(e) = l.ask(false, f.as_str()).await {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    /// The filters held, in the order given.
    pub fn filters(&self) -> Vec<String> {
        self.inner
            .filters
            .lock()
            .unwrap()
            .iter()
            .map(|f| f.as_str().to_string())
            .collect()
    }

    fn live_links(&self) -> Vec<Arc<Link>> {
        self.inner
            .links
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| l.live().cloned())
            .collect()
    }

    /// The next message, with its topic, the publisher's identity and, under PerProducer
    /// ordering, its sequence and gap. `NotConnected` before any connect; `ConnectionLost`
    /// when every connection has ended and nothing is left to read; `Closed` after `close`.
    /// Cancel-safe.
    pub async fn recv(&self) -> Result<Message> {
        self.inner.feed.recv().await
    }

    /// The next message if one is there now, without waiting, or the error the next `recv`
    /// would return at once; None when nothing is ready. For a caller on another event loop
    /// (a binding), a receive with no crossing to the runtime's thread.
    pub fn try_recv(&self) -> Option<Result<Message>> {
        self.inner.feed.try_recv()
    }

    /// Up to `max` messages: waits for the first, then takes those already queued. An error
    /// met after the first is returned by the next receive. Cancel-safe.
    pub async fn recv_many(&self, max: usize) -> Result<Vec<Message>> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let feed = &self.inner.feed;
        let mut out = vec![feed.recv().await?];
        while out.len() < max {
            // What is ready goes in one lock; an error, or a message that came meanwhile, in
            // the call below.
            if feed.take_ready(max, &mut out) {
                continue;
            }
            match feed.try_recv() {
                Some(Ok(m)) => out.push(m),
                None | Some(Err(Error::Closed)) => break,
                Some(Err(e)) => {
                    feed.defer(e);
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Messages received and waiting for `recv` (at most `Limits::endpoint_queue`, plus what a
    /// reassembly hold released at once).
    pub fn queued(&self) -> usize {
        self.inner.feed.queued()
    }

    /// Resolves once [`Subscriber::queued`] is at least `n`: an event for a test to await where
    /// it would otherwise poll.
    ///
    /// Cancel-safe: it only waits; dropping it changes nothing.
    #[doc(hidden)]
    pub async fn until_queued(&self, n: usize) {
        self.inner.feed.until_queued(n).await
    }

    /// Hands back a message a binding received but could not deliver; the next receive
    /// returns it first.
    pub fn give_back(&self, message: Message) {
        self.inner.feed.give_back(message);
    }

    /// Closes every connection; receiving returns what is queued, then `Closed`, and
    /// `connect`/`subscribe` fail `Closed`.
    pub fn close(&self) {
        let links = std::mem::take(&mut *self.inner.links.lock().unwrap());
        drop(links);
        self.inner.feed.close();
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.inner.feed.close();
    }
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("filters", &self.filters())
            .finish()
    }
}
