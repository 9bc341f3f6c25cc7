//! Pub/Sub the other way round (PATTERNS §4.4): a publisher that dials and a subscriber that
//! binds, a collector many publishers feed. The publisher sends through a fan-out (a writer per
//! subscriber it connected, bounded, drops counted), numbered as a pusher numbers; the
//! collector receives at a puller's route and keeps what its filters select.
//!
//! Filters stay with the collector: v0 has no frame by which a listener tells a dialler what
//! to send (PROTOCOL §3.1), so every copy crosses the connection and the collector discards
//! those no filter selects, counted in [`BoundSubscriber::discarded`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::filter::{validate_topic, Filter, FilterSet};
use crate::address::Address;
use crate::config::EndpointOptions;
use crate::connection::handles::Message;
use crate::connection::handshake::Flow;
use crate::error::Result;
use crate::patterns::fan::Fan;
use crate::patterns::{Dialer, Dropped, Puller};
use crate::runtime::listener::Listener;
use crate::runtime::Runtime;
use crate::wire::{check_streams, Header, Metadata};

/// A publisher that dials its subscribers: each [`BoundSubscriber`] it connected gets a copy
/// of every message, whatever the topic (the subscriber filters).
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, collector: &str) -> weida::Result<()> {
/// let publisher = rt.publisher();
/// publisher.connect(collector).await?; // a BoundSubscriber's address, with its path
/// let copies = publisher.publish("logs.web.error", "disk full")?; // never waits
/// # Ok(()) }
/// ```
pub struct DialingPublisher {
    dialer: Dialer,
    fan: Arc<Fan>,
}

impl Runtime {
    /// A [`DialingPublisher`] with the runtime's bounds.
    pub fn publisher(&self) -> DialingPublisher {
        self.publisher_with(&EndpointOptions::new())
            .expect("the runtime's own bounds are valid")
    }

    /// A [`DialingPublisher`] with bounds of its own: `endpoint_queue`, the copies it holds
    /// for each subscriber before it drops (`queue_full`); the byte budget per subscriber is
    /// `Limits::subscriber_buffer_bytes`.
    pub fn publisher_with(&self, options: &EndpointOptions) -> Result<DialingPublisher> {
        let dialer = Dialer::new(
            self.pool.clone(),
            options,
            check_streams::TRANSFER,
            Flow::Numbers,
        )?;
        let fan = Fan::new(
            self.pool.ctx.clone(),
            dialer.bounds.endpoint_queue,
            self.pool.ctx.limits.subscriber_buffer_bytes,
        );
        Ok(DialingPublisher { dialer, fan })
    }
}

crate::patterns::dialling!(
    DialingPublisher,
    "It gets the copies published after it is live."
);

impl DialingPublisher {
    /// Queues one copy of `body`, under `topic`, for every live subscriber this publisher
    /// connected, one shared `Bytes` for every copy, and returns how many were queued. Never
    /// waits: a subscriber whose writer holds `endpoint_queue` copies, or whose bytes would
    /// pass the byte budget, loses this copy, counted in [`DialingPublisher::dropped`]. A
    /// malformed topic is `InvalidFilter`; a body above the byte budget `LimitExceeded`
    /// (limit `byte_budget`), sent to nobody.
    pub fn publish(&self, topic: &str, body: impl Into<Bytes>) -> Result<usize> {
        self.publish_with(topic, Metadata::new(), body)
    }

    /// [`DialingPublisher::publish`] with metadata.
    pub fn publish_with(
        &self,
        topic: &str,
        meta: Metadata,
        body: impl Into<Bytes>,
    ) -> Result<usize> {
        validate_topic(topic)?;
        let header = Header {
            topic: Some(topic.to_string()),
            meta,
            ..Header::default()
        };
        self.fan
            .send(self.dialer.peers.live_links(), header, body.into())
    }

    /// Copies dropped, by cause: `queue_full`, `byte_budget`, and `dead_subscriber` (lost with
    /// a subscriber whose connection failed).
    pub fn dropped(&self) -> Dropped {
        self.fan.dropped()
    }

    /// Leaves every subscriber. Copies already queued are dropped with the connections.
    pub fn close(&self) {
        self.dialer.leave_all();
    }
}

impl std::fmt::Debug for DialingPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DialingPublisher")
            .field("peers", &self.peer_count())
            .finish()
    }
}

/// A subscriber bound at a path, fed by the [`DialingPublisher`]s that connect to it: a
/// collector. It delivers what its filters select; with no filter it delivers nothing, as a
/// dialling [`crate::Subscriber`] does.
///
/// ```no_run
/// # async fn f(listener: weida::Listener) -> weida::Result<()> {
/// let collector = listener.subscriber("/logs")?;
/// collector.subscribe("logs.*.error")?; // local: takes effect at once
/// let m = collector.recv().await?;      // from any publisher that connected
/// # Ok(()) }
/// ```
pub struct BoundSubscriber {
    inbox: Puller,
    filters: Mutex<Filters>,
    discarded: AtomicU64,
}

#[derive(Default)]
struct Filters {
    /// In the order given, for `filters()` and so a filter given twice needs two removes.
    held: Vec<Filter>,
    set: FilterSet<()>,
}

impl Listener {
    /// Binds a [`BoundSubscriber`] at `path`.
    pub fn subscriber(&self, path: &str) -> Result<BoundSubscriber> {
        self.subscriber_with(path, &EndpointOptions::new())
    }

    /// Binds a [`BoundSubscriber`] at `path` with bounds of its own: `endpoint_queue` and
    /// `max_collected_body`, as a puller's.
    pub fn subscriber_with(
        &self,
        path: &str,
        options: &EndpointOptions,
    ) -> Result<BoundSubscriber> {
        Ok(BoundSubscriber {
            inbox: self.puller_with(path, options)?,
            filters: Mutex::new(Filters::default()),
            discarded: AtomicU64::new(0),
        })
    }
}

impl BoundSubscriber {
    /// The address publishers dial.
    pub fn address(&self) -> &Address {
        self.inbox.address()
    }

    /// Adds `filter` (the grammar of [`crate::Subscriber::subscribe`]). The filters in force
    /// when a message is received decide whether it is kept, so one that arrived before this
    /// call and is received after it is kept if `filter` selects it. A malformed filter is
    /// `InvalidFilter`.
    pub fn subscribe(&self, filter: &str) -> Result<()> {
        let f: Filter = filter.parse()?;
        let mut fs = self.filters.lock().unwrap();
        fs.set.insert(&f, ());
        fs.held.push(f);
        Ok(())
    }

    /// Removes one entry of `filter`; false if it was not held.
    pub fn unsubscribe(&self, filter: &str) -> Result<bool> {
        let f: Filter = filter.parse()?;
        let mut fs = self.filters.lock().unwrap();
        let Some(i) = fs.held.iter().position(|x| x == &f) else {
            return Ok(false);
        };
        fs.held.remove(i);
        fs.set.remove(&f, ());
        Ok(true)
    }

    /// The filters held, in the order given.
    pub fn filters(&self) -> Vec<String> {
        let fs = self.filters.lock().unwrap();
        fs.held.iter().map(|f| f.as_str().to_string()).collect()
    }

    /// Messages that arrived and that no filter selected (or that carried no topic: a pusher's),
    /// discarded here since the subscriber was bound.
    pub fn discarded(&self) -> u64 {
        self.discarded.load(Ordering::Relaxed)
    }

    /// Whether `m` is kept; one that is not is counted.
    fn keep(&self, m: &Message) -> bool {
        let kept = m
            .meta
            .topic
            .as_deref()
            .is_some_and(|t| self.filters.lock().unwrap().set.selects(t));
        if !kept {
            self.discarded.fetch_add(1, Ordering::Relaxed);
        }
        kept
    }

    /// The next message a filter selects, with its topic, the publisher's identity and, under
    /// PerProducer ordering, its sequence and gap. Cancel-safe, as [`Puller::recv`] is.
    pub async fn recv(&self) -> Result<Message> {
        loop {
            let m = self.inbox.recv().await?;
            if self.keep(&m) {
                return Ok(m);
            }
        }
    }

    /// Up to `max` selected messages: waits for the first, then takes those that are ready.
    /// Cancel-safe, as [`Puller::recv_many`] is.
    pub async fn recv_many(&self, max: usize) -> Result<Vec<Message>> {
        loop {
            let mut got = self.inbox.recv_many(max).await?;
            got.retain(|m| self.keep(m));
            if !got.is_empty() || max == 0 {
                return Ok(got);
            }
        }
    }

    /// A selected message if one is ready now, or the error the next `recv` would return at
    /// once; None when nothing selected is ready.
    pub fn try_recv(&self) -> Option<Result<Message>> {
        loop {
            match self.inbox.try_recv()? {
                Ok(m) if !self.keep(&m) => continue,
                r => return Some(r),
            }
        }
    }

    /// Hands back a message a caller received but could not deliver: the next receive returns
    /// it first, if a filter still selects it.
    pub fn give_back(&self, message: Message) {
        self.inbox.give_back(message);
    }

    /// Unbinds the path: what is queued is still received, then `Closed`.
    pub fn close(&self) {
        self.inbox.close();
    }
}

impl std::fmt::Debug for BoundSubscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundSubscriber")
            .field("address", &self.address().to_string())
            .field("filters", &self.filters())
            .finish()
    }
}
