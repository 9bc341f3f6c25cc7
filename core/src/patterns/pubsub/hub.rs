//! The publisher's side of Pub/Sub (PATTERNS §4): the filters of every subscriber, a writer per
//! subscriber with its two bounds, the reverse streams copies travel on, and drops counted by
//! cause. The public face is `patterns::pubsub`; the wire is PROTOCOL.md §3.7.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use bytes::Bytes;
use tokio::sync::{mpsc, Notify};

use super::filter::{Filter, FilterError, FilterSet};
use crate::config::Bounds;
use crate::connection::context::Context;
use crate::connection::lane::Batch;
use crate::connection::reverse::{OpenFail, Publication, Reverse, SubscriberConn};
use crate::error::{Error, Limit, Result};
use crate::transport::{SendHalf, StreamError};
use crate::wire::{lane_frame, Code, Header, HeaderRef, Metadata, StreamType};

/// Why a copy did not reach a subscriber's transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropCause {
    /// The subscriber's queue held `Limits::endpoint_queue` copies.
    QueueFull,
    /// The copy would have passed the subscriber's `Limits::subscriber_buffer_bytes`.
    ByteBudget,
    /// Over AF_UNIX: no parked reverse connection was left for the copy.
    ReversePoolEmpty,
    /// The subscriber's connection ended with the copy still queued or in flight.
    DeadSubscriber,
    /// The subscriber refused the copy (its own bound, e.g. `max_collected_body`), or would
    /// have: a copy whose header is above its `max_header_size` is dropped unwritten.
    Refused,
}

impl DropCause {
    const ALL: [Self; 5] = [
        Self::QueueFull,
        Self::ByteBudget,
        Self::ReversePoolEmpty,
        Self::DeadSubscriber,
        Self::Refused,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// The cause as bindings and the conformance suite spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QueueFull => "queue_full",
            Self::ByteBudget => "byte_budget",
            Self::ReversePoolEmpty => "reverse_pool_empty",
            Self::DeadSubscriber => "dead_subscriber",
            Self::Refused => "refused",
        }
    }
}

/// Copies a publisher dropped, by cause (`Publisher::dropped`, `Publisher::dropped_on`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Dropped at a full queue.
    pub queue_full: u64,
    /// Dropped at the byte budget.
    pub byte_budget: u64,
    /// Dropped for want of a parked reverse connection (AF_UNIX).
    pub reverse_pool_empty: u64,
    /// Lost with a subscriber whose connection ended.
    pub dead_subscriber: u64,
    /// Refused by the subscriber.
    pub refused: u64,
}

impl Dropped {
    /// Every drop, whatever its cause.
    pub fn total(&self) -> u64 {
        self.queue_full
            + self.byte_budget
            + self.reverse_pool_empty
            + self.dead_subscriber
            + self.refused
    }

    /// The count for one cause.
    pub fn of(&self, cause: DropCause) -> u64 {
        match cause {
            DropCause::QueueFull => self.queue_full,
            DropCause::ByteBudget => self.byte_budget,
            DropCause::ReversePoolEmpty => self.reverse_pool_empty,
            DropCause::DeadSubscriber => self.dead_subscriber,
            DropCause::Refused => self.refused,
        }
    }

    fn from_counts(c: [u64; 5]) -> Self {
        Self {
            queue_full: c[0],
            byte_budget: c[1],
            reverse_pool_empty: c[2],
            dead_subscriber: c[3],
            refused: c[4],
        }
    }
}

/// The most topics whose drops are kept apart; beyond it a topic's drops count in the total
/// only (a publisher with unbounded topic names must not grow without bound here).
pub(crate) const MAX_TOPICS_TRACKED: usize = 10_000;

#[derive(Default)]
struct DropBook {
    total: [AtomicU64; 5],
    per_topic: Mutex<HashMap<Arc<str>, [u64; 5]>>,
}

impl DropBook {
    fn count(&self, topic: &Arc<str>, cause: DropCause, n: u64) {
        self.total[cause.index()].fetch_add(n, Ordering::Relaxed);
        let mut m = self.per_topic.lock().unwrap();
        if let Some(c) = m.get_mut(topic) {
            c[cause.index()] += n;
        } else if m.len() < MAX_TOPICS_TRACKED {
            let mut c = [0; 5];
            c[cause.index()] = n;
            m.insert(topic.clone(), c);
        }
        tracing::debug!(%topic, cause = cause.as_str(), n, "fan-out copy dropped");
    }

    fn total(&self) -> Dropped {
        let mut c = [0; 5];
        for cause in DropCause::ALL {
            c[cause.index()] = self.total[cause.index()].load(Ordering::Relaxed);
        }
        Dropped::from_counts(c)
    }

    fn on(&self, topic: &str) -> Dropped {
        Dropped::from_counts(
            self.per_topic
                .lock()
                .unwrap()
                .get(topic)
                .copied()
                .unwrap_or_default(),
        )
    }
}

/// What a streamed copy's writer receives from its `FanOut`.
pub(crate) enum Chunk {
    Data(Bytes),
    Fin,
    Reset,
}

/// A streamed copy's backlog, shared by its `FanOut` and its writer.
#[derive(Default)]
pub(crate) struct Backlog {
    pub(crate) bytes: AtomicUsize,
    pub(crate) room: Notify,
    /// The writer failed (and counted the drop): the `FanOut` stops feeding it.
    pub(crate) failed: AtomicBool,
}

enum Job {
    Whole {
        topic: Arc<str>,
        seq: Option<u64>,
        body: Bytes,
    },
    Streamed {
        topic: Arc<str>,
        seq: Option<u64>,
        chunks: mpsc::UnboundedReceiver<Chunk>,
        backlog: Arc<Backlog>,
    },
}

impl Job {
    fn topic(&self) -> &Arc<str> {
        match self {
            Self::Whole { topic, .. } | Self::Streamed { topic, .. } => topic,
        }
    }

    /// Whether the writer sends it as a frame on the subscriber's lane: a whole copy up to
    /// `lane_max` bytes, when the connection uses lanes.
    fn on_lane(&self, lanes: bool, lane_max: usize) -> bool {
        lanes && matches!(self, Self::Whole { body, .. } if body.len() <= lane_max)
    }

    fn seq(&self) -> Option<u64> {
        match self {
            Self::Whole { seq, .. } | Self::Streamed { seq, .. } => *seq,
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Whole { body, .. } => body.len(),
            Self::Streamed { .. } => 0,
        }
    }
}

/// One subscriber's copies waiting for its writer.
#[derive(Default)]
struct CopyQueue {
    jobs: VecDeque<Job>,
    /// Payload bytes queued or being written.
    bytes: usize,
    dead: bool,
}

/// One subscriber of one publisher: its filters, its queue and its writer.
pub(crate) struct Sub {
    id: u64,
    /// Copies carry a sequence number (the connection agreed PerProducer ordering).
    number: bool,
    /// Small whole copies go as frames on a lane (both sides offered lanes).
    lanes: bool,
    /// The subscriber's MAX_HEADER_SIZE: a copy whose header is above it is never queued or
    /// written (PROTOCOL.md §5.3), but dropped and counted `Refused` as the subscriber would
    /// refuse it; a path whose header alone is above it is refused at subscribe.
    max_header: u64,
    next_seq: AtomicU64,
    queue: Mutex<CopyQueue>,
    wake: Notify,
    reverse: Reverse,
    filters: Mutex<Vec<Filter>>,
}

impl Sub {
    /// Queues a copy, or says why not.
    fn offer(&self, hub: &Hub, topic: &Arc<str>, make: impl FnOnce(Option<u64>) -> Job) -> bool {
        let limits = &hub.ctx.limits;
        let mut q = self.queue.lock().unwrap();
        // Numbered before the bounds are checked: a copy dropped here is a number the
        // subscriber never sees, which is how it learns of the drop (its gap).
        let seq = self
            .number
            .then(|| self.next_seq.fetch_add(1, Ordering::Relaxed));
        let job = make(seq);
        let cause = if q.dead {
            Some(DropCause::DeadSubscriber)
        } else if hub.above_bound(self, &job) {
            // Never written (PROTOCOL.md §5.3): the subscriber would refuse it.
            Some(DropCause::Refused)
        } else if q.jobs.len() >= hub.queue_bound {
            Some(DropCause::QueueFull)
        } else if q.bytes + job.len() > limits.subscriber_buffer_bytes {
            Some(DropCause::ByteBudget)
        } else {
            None
        };
        if let Some(cause) = cause {
            drop(q);
            hub.drops.count(topic, cause, 1);
            return false;
        }
        q.bytes += job.len();
        q.jobs.push_back(job);
        drop(q);
        self.wake.notify_one();
        true
    }

    /// The subscriber is gone: what it still had queued is dropped and counted.
    fn kill(&self, hub: &Hub) {
        let jobs = {
            let mut q = self.queue.lock().unwrap();
            q.dead = true;
            q.bytes = 0;
            std::mem::take(&mut q.jobs)
        };
        for j in jobs {
            hub.drops.count(j.topic(), DropCause::DeadSubscriber, 1);
        }
        if let Reverse::Parked(p) = &self.reverse {
            p.close();
        }
        self.wake.notify_one();
    }

    async fn next_job(&self) -> Option<Job> {
        loop {
            let n = self.wake.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            {
                let mut q = self.queue.lock().unwrap();
                if q.dead {
                    return None;
                }
                if let Some(j) = q.jobs.pop_front() {
                    return Some(j);
                }
            }
            n.await;
        }
    }

    /// More whole copies of at most `max` bytes from the front of the queue, up to `frames`
    /// and `bytes` in all: what one coalesced lane write carries.
    fn take_lane_batch(&self, max: usize, frames: usize, bytes: usize) -> Vec<Job> {
        let mut q = self.queue.lock().unwrap();
        let mut out = Vec::new();
        let mut total = 0;
        while out.len() < frames && total < bytes {
            match q.jobs.front() {
                Some(Job::Whole { body, .. }) if body.len() <= max => {
                    total += body.len();
                    out.push(q.jobs.pop_front().expect("front exists"));
                }
                _ => break,
            }
        }
        out
    }

    fn written(&self, len: usize) {
        let mut q = self.queue.lock().unwrap();
        q.bytes = q.bytes.saturating_sub(len);
    }
}

/// The subscribers a topic goes to, shared by every publish of it while the filters stay.
type Subs = Arc<[Arc<Sub>]>;

/// A topic and the subscribers its filters selected at `generation`.
struct Route {
    topic: Arc<str>,
    generation: u64,
    subs: Subs,
}

/// A bound publisher path: its subscribers and their filters.
pub(crate) struct Hub {
    pub(crate) ctx: Arc<Context>,
    pub(crate) path: String,
    /// Names this publisher in the PRODUCER key: numbering restarts with a new producer, so a
    /// restarted publisher is not read as a gap.
    producer: Bytes,
    filters: RwLock<FilterSet<u64>>,
    /// Bumped by every change of `filters`: a [`Route`] of an older one is stale.
    generation: AtomicU64,
    /// The subscribers the last topic published went to: a publisher that publishes one topic
    /// again and again asks its filters once per change, not once per message.
    route: Mutex<Option<Route>>,
    subs: RwLock<HashMap<u64, Arc<Sub>>>,
    drops: DropBook,
    next_id: AtomicU64,
    closed: AtomicBool,
    /// Wakes [`Hub::until_subscribers`]: a subscriber came, or went (its copies counted).
    changed: Notify,
    /// Copies queued per subscriber before a drop (`endpoint_queue`, the publisher's own).
    queue_bound: usize,
}

impl Hub {
    pub(crate) fn new(ctx: Arc<Context>, path: &str, bounds: Bounds) -> Arc<Self> {
        // Distinctness, not secrecy: a producer name only has to differ between publishers.
        let producer: [u8; 8] = rand::random();
        Arc::new(Self {
            ctx,
            queue_bound: bounds.endpoint_queue,
            path: path.to_string(),
            producer: Bytes::copy_from_slice(&producer),
            filters: RwLock::new(FilterSet::new()),
            generation: AtomicU64::new(0),
            route: Mutex::new(None),
            subs: RwLock::new(HashMap::new()),
            drops: DropBook::default(),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            changed: Notify::new(),
        })
    }

    /// Resolves once exactly `n` subscribers are connected, a departed one's queued copies
    /// already counted as drops (a waiter, e.g. a binding's test, has an event to await
    /// instead of polling).
    pub(crate) async fn until_subscribers(&self, n: usize) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.subscribers() == n {
                return;
            }
            changed.await;
        }
    }

    pub(crate) fn dropped(&self) -> Dropped {
        self.drops.total()
    }

    pub(crate) fn dropped_on(&self, topic: &str) -> Dropped {
        self.drops.on(topic)
    }

    pub(crate) fn subscribers(&self) -> usize {
        self.subs.read().unwrap().len()
    }

    /// Adds `filter` for the subscriber `id` (made on its first filter), answering the code to
    /// send back.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        id: &mut Option<u64>,
        conn: &SubscriberConn,
        filter: &str,
    ) -> std::result::Result<(), (Code, String)> {
        if self.closed.load(Ordering::Acquire) {
            return Err((Code::UnknownEndpoint, "the publisher closed".into()));
        }
        let f: Filter = filter
            .parse()
            .map_err(|e: FilterError| (Code::ProtocolError, e.to_string()))?;
        // Every copy's header holds the path (a lane's head is the path alone), so none could
        // be written within the subscriber's bound.
        let head = self.head_len(Some(&self.path), None, None);
        if head > conn.max_header {
            return Err((
                Code::LimitExceeded,
                format!(
                    "the path's header is {head} bytes, above the subscriber's max_header_size {}",
                    conn.max_header
                ),
            ));
        }
        let sub = match id.and_then(|i| self.subs.read().unwrap().get(&i).cloned()) {
            Some(s) => s,
            None => {
                let sid = self.next_id.fetch_add(1, Ordering::Relaxed);
                let sub = Arc::new(Sub {
                    id: sid,
                    number: conn.number,
                    lanes: conn.lanes,
                    max_header: conn.max_header,
                    next_seq: AtomicU64::new(1),
                    queue: Mutex::new(CopyQueue::default()),
                    wake: Notify::new(),
                    reverse: conn.reverse.clone(),
                    filters: Mutex::new(Vec::new()),
                });
                self.subs.write().unwrap().insert(sid, sub.clone());
                *id = Some(sid);
                tokio::spawn(writer(Arc::downgrade(self), sub.clone()));
                self.changed.notify_waiters();
                sub
            }
        };
        {
            let mut fs = sub.filters.lock().unwrap();
            if fs.len() >= self.ctx.limits.max_filters {
                return Err((
                    Code::LimitExceeded,
                    format!(
                        "a subscriber holds at most {} filters (max_filters)",
                        self.ctx.limits.max_filters
                    ),
                ));
            }
            fs.push(f.clone());
        }
        self.change_filters(|fs| fs.insert(&f, sub.id));
        Ok(())
    }

    /// Removes one `filter` entry of subscriber `id`; removing one it does not hold is done.
    pub(crate) fn unsubscribe(&self, id: Option<u64>, filter: &str) {
        let (Some(id), Ok(f)) = (id, filter.parse::<Filter>()) else {
            return;
        };
        let Some(sub) = self.subs.read().unwrap().get(&id).cloned() else {
            return;
        };
        let mut fs = sub.filters.lock().unwrap();
        if let Some(i) = fs.iter().position(|x| x == &f) {
            fs.swap_remove(i);
            self.change_filters(|fs| fs.remove(&f, id));
        }
    }

    /// The subscriber's connection ended.
    pub(crate) fn remove(&self, id: u64) {
        // Filters first: from then on no route (a cached one included) holds the subscriber
        // for a publish to offer a copy to.
        self.change_filters(|fs| fs.remove_key(id));
        let sub = self.subs.write().unwrap().remove(&id);
        if let Some(s) = sub {
            s.kill(self);
        }
        self.changed.notify_waiters();
    }

    /// Ends every subscription (the publisher was closed or dropped).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let subs: Vec<_> = self.subs.write().unwrap().drain().collect();
        self.change_filters(|fs| *fs = FilterSet::new());
        for (_, s) in subs {
            s.kill(self);
        }
        self.changed.notify_waiters();
    }

    /// Changes the filters, and with them the generation that makes a cached [`Route`] stale.
    /// The cached route goes too, so that it does not keep a departed subscriber alive.
    fn change_filters<T>(&self, change: impl FnOnce(&mut FilterSet<u64>) -> T) -> T {
        let mut fs = self.filters.write().unwrap();
        let out = change(&mut fs);
        self.generation.fetch_add(1, Ordering::Release);
        drop(fs);
        *self.route.lock().unwrap() = None;
        out
    }

    /// The topic, checked, and the subscribers its filters select: the last route when the
    /// topic is the last one's and no filter changed since. The generation is read before the
    /// filters, so a route computed across a change is stored as stale.
    fn routed(&self, topic: &str) -> Result<(Arc<str>, Subs)> {
        let generation = self.generation.load(Ordering::Acquire);
        if let Some(r) = &*self.route.lock().unwrap() {
            if r.generation == generation && *r.topic == *topic {
                return Ok((r.topic.clone(), r.subs.clone()));
            }
        }
        super::filter::validate_topic(topic)?;
        let topic: Arc<str> = topic.into();
        let mut ids = Vec::new();
        self.filters.read().unwrap().matches(&topic, &mut ids);
        ids.dedup();
        let subs: Subs = {
            let subs = self.subs.read().unwrap();
            ids.iter().filter_map(|i| subs.get(i).cloned()).collect()
        };
        *self.route.lock().unwrap() = Some(Route {
            topic: topic.clone(),
            generation,
            subs: subs.clone(),
        });
        Ok((topic, subs))
    }

    /// Whether a body of `len` bytes may be published to `topic` now, and to whom: `Closed`,
    /// then the topic, then the byte budget.
    fn check(&self, topic: &str, len: usize) -> Result<(Arc<str>, Subs)> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let routed = self.routed(topic)?;
        let budget = self.ctx.limits.subscriber_buffer_bytes;
        if len > budget {
            // Nobody could queue it: one refusal to the publisher, not a drop per subscriber.
            return Err(Error::limit(
                Limit::ByteBudget,
                format!(
                    "a body of {len} bytes, above subscriber_buffer_bytes {budget} ({})",
                    crate::error::human_bytes(budget as u64)
                ),
            ));
        }
        Ok(routed)
    }

    /// Queues `body` for every subscriber whose filters select `topic`; returns how many.
    pub(crate) fn publish(&self, topic: &str, body: Bytes) -> Result<usize> {
        let (topic, subs) = self.check(topic, body.len())?;
        let mut queued = 0;
        for s in subs.iter() {
            let ok = s.offer(self, &topic, |seq| Job::Whole {
                topic: topic.clone(),
                seq,
                body: body.clone(),
            });
            queued += ok as usize;
        }
        self.ctx
            .stats
            .copies_published
            .fetch_add(queued as u64, Ordering::Relaxed);
        Ok(queued)
    }

    /// The streamed copies of one message, for `FanOut`.
    pub(crate) fn open(&self, topic: &str) -> Result<(Arc<str>, Vec<StreamCopy>)> {
        let (topic, subs) = self.check(topic, 0)?;
        let mut copies = Vec::new();
        for s in subs.iter() {
            let (tx, rx) = mpsc::unbounded_channel();
            let backlog = Arc::new(Backlog::default());
            let (b, t) = (backlog.clone(), topic.clone());
            if s.offer(self, &topic, move |seq| Job::Streamed {
                topic: t,
                seq,
                chunks: rx,
                backlog: b,
            }) {
                copies.push(StreamCopy {
                    tx,
                    backlog,
                    attached: true,
                });
            }
        }
        self.ctx
            .stats
            .copies_published
            .fetch_add(copies.len() as u64, Ordering::Relaxed);
        Ok((topic, copies))
    }

    pub(crate) fn count(&self, topic: &Arc<str>, cause: DropCause) {
        self.drops.count(topic, cause, 1);
    }

    /// Whether `job`'s header, as the writer will encode it (a lane frame's or a transfer's),
    /// is above the subscriber's MAX_HEADER_SIZE.
    fn above_bound(&self, sub: &Sub, job: &Job) -> bool {
        // Nearly every copy is far below the bound, and this runs per copy and per subscriber:
        // the fields' bytes plus room for the version byte and each of the four fields' key,
        // length and sequence number (at most 1 + 4 × (1 + 8) + 8 bytes) decide those without
        // the exact count.
        let most = self.path.len() + job.topic().len() + self.producer.len() + 64;
        if most as u64 <= sub.max_header {
            // A transfer's header (with the path) is the larger; every test checks the bound.
            debug_assert!(
                self.head_len(Some(&self.path), Some(job.topic()), job.seq()) <= most as u64
            );
            return false;
        }
        let on_lane = job.on_lane(sub.lanes, self.ctx.config.lane_max_message);
        let path = (!on_lane).then_some(&*self.path);
        self.head_len(path, Some(job.topic()), job.seq()) > sub.max_header
    }

    /// The header length (as its prefix counts it) of a copy of `topic` numbered `seq`, as
    /// [`Hub::head`] and `write_lane` encode it: with `path`, a transfer's; without, a lane
    /// frame's; with a path and no topic, a lane's head.
    fn head_len(&self, path: Option<&str>, topic: Option<&str>, seq: Option<u64>) -> u64 {
        let no_meta = Metadata::default();
        HeaderRef {
            path,
            meta: &no_meta,
            topic,
            sequence: seq,
            producer: seq.map(|_| &self.producer[..]),
        }
        .counted_len() as u64
    }

    fn head(&self, topic: &str, seq: Option<u64>) -> Bytes {
        let header = Header {
            path: Some(self.path.clone()),
            topic: Some(topic.to_string()),
            sequence: seq,
            producer: seq.map(|_| self.producer.clone()),
            ..Header::default()
        };
        let mut head = Vec::with_capacity(32 + self.path.len() + topic.len());
        head.push(StreamType::Transfer.to_byte());
        header.encode(&mut head);
        Bytes::from(head)
    }
}

impl Publication for Hub {
    fn subscribe(
        self: Arc<Self>,
        id: &mut Option<u64>,
        conn: &SubscriberConn,
        filter: &str,
    ) -> std::result::Result<(), (Code, String)> {
        Self::subscribe(&self, id, conn, filter)
    }

    fn unsubscribe(&self, id: Option<u64>, filter: &str) {
        Self::unsubscribe(self, id, filter)
    }

    fn remove(&self, id: u64) {
        Self::remove(self, id)
    }
}

/// One subscriber's copy of a streamed message, held by its `FanOut`.
pub(crate) struct StreamCopy {
    pub(crate) tx: mpsc::UnboundedSender<Chunk>,
    pub(crate) backlog: Arc<Backlog>,
    pub(crate) attached: bool,
}

/// A subscriber's writer: takes its queue in order and writes each copy on a stream of its
/// own, so a subscriber that stops reading stalls only this task (PATTERNS §4).
async fn writer(hub: Weak<Hub>, sub: Arc<Sub>) {
    let mut lane: Option<SendHalf> = None;
    while let Some(job) = sub.next_job().await {
        let Some(h) = hub.upgrade() else { return };
        let lane_max = h.ctx.config.lane_max_message;
        if job.on_lane(sub.lanes, lane_max) {
            // One turn of the runtime first, for the copies the publisher is queueing behind
            // this one: written together, they go out in full datagrams, not one each, and
            // the subscriber is woken once for them (docs/PERFORMANCE.md, "Pub/Sub: ...").
            tokio::task::yield_now().await;
            let mut batch = vec![job];
            batch.extend(sub.take_lane_batch(lane_max, 128, 256 * 1024));
            if !write_lane(&h, &sub, &mut lane, batch).await {
                return;
            }
            continue;
        }
        let topic = job.topic().clone();
        let len = job.len();
        let send = match sub.reverse.open().await {
            Ok(s) => s,
            Err(OpenFail::PoolEmpty) => {
                sub.written(len);
                if let Job::Streamed { backlog, .. } = &job {
                    backlog.failed.store(true, Ordering::Release);
                }
                h.count(&topic, DropCause::ReversePoolEmpty);
                continue;
            }
            Err(OpenFail::Lost) => {
                h.count(&topic, DropCause::DeadSubscriber);
                h.remove(sub.id);
                return;
            }
        };
        let outcome = match job {
            Job::Whole { seq, body, .. } => write_whole(send, h.head(&topic, seq), body).await,
            Job::Streamed {
                seq,
                chunks,
                backlog,
                ..
            } => write_streamed(send, h.head(&topic, seq), chunks, &backlog).await,
        };
        sub.written(len);
        match outcome {
            Ok(()) => {}
            Err(StreamError::Stopped(_)) => h.count(&topic, DropCause::Refused),
            // A writer's error is never Idle (a reader's); as a reset, nothing to count.
            Err(StreamError::Reset(_) | StreamError::Idle(_)) => {}
            Err(StreamError::Lost(_)) => {
                h.count(&topic, DropCause::DeadSubscriber);
                h.remove(sub.id);
                return;
            }
        }
    }
}

/// Writes whole copies as frames on the subscriber's lane (opened on first use, PROTOCOL.md
/// §4.1) in one write. False when the subscriber is gone.
async fn write_lane(h: &Hub, sub: &Sub, lane: &mut Option<SendHalf>, batch: Vec<Job>) -> bool {
    let mut prefix = Vec::new();
    if lane.is_none() {
        // On QUIC and in process a stream of its own; over AF_UNIX a parked connection kept
        // for the lane, which the subscriber replaces in its pool (§3.7).
        match sub.reverse.open().await {
            Ok(s) => {
                prefix.push(StreamType::Lane.to_byte());
                Header::for_path(&h.path).encode(&mut prefix);
                *lane = Some(s);
            }
            Err(OpenFail::PoolEmpty) => {
                let total = batch.iter().map(Job::len).sum();
                for j in &batch {
                    h.count(j.topic(), DropCause::ReversePoolEmpty);
                }
                sub.written(total);
                return true;
            }
            Err(OpenFail::Lost) => {
                for j in &batch {
                    h.count(j.topic(), DropCause::DeadSubscriber);
                }
                h.remove(sub.id);
                return false;
            }
        }
    }
    // The batch's topics as runs, for the drops a failed write counts: one entry (a reference
    // count) per run, not per copy.
    let mut topics: Vec<(Arc<str>, u64)> = Vec::new();
    for j in &batch {
        match topics.last_mut() {
            Some((t, n)) if Arc::ptr_eq(t, j.topic()) => *n += 1,
            _ => topics.push((j.topic().clone(), 1)),
        }
    }
    let copies: u64 = topics.iter().map(|(_, n)| n).sum();
    let mut out = Batch::new(Bytes::from(prefix));
    let mut head = Vec::with_capacity(64);
    let no_meta = Metadata::default();
    for j in batch {
        if let Job::Whole { topic, seq, body } = j {
            let header = HeaderRef {
                path: None,
                meta: &no_meta,
                topic: Some(&topic),
                sequence: seq,
                producer: seq.map(|_| &h.producer[..]),
            };
            head.clear();
            lane_frame::encode_frame_head(header, body.len(), &mut head);
            out.push_parts(&head, body);
        }
    }
    let total = out.body_bytes as usize;
    let mut bufs = out.finish();
    let r = lane
        .as_mut()
        .expect("opened above")
        .write_all(&mut bufs)
        .await;
    sub.written(total);
    match r {
        Ok(()) => {
            h.ctx
                .stats
                .lane_messages_sent
                .fetch_add(copies, Ordering::Relaxed);
            true
        }
        Err(e) => {
            *lane = None;
            let (cause, gone) = match e {
                StreamError::Stopped(_) => (DropCause::Refused, false),
                _ => (DropCause::DeadSubscriber, true),
            };
            for (t, n) in &topics {
                h.drops.count(t, cause, *n);
            }
            if gone {
                h.remove(sub.id);
            }
            !gone
        }
    }
}

async fn write_whole(
    mut send: SendHalf,
    head: Bytes,
    body: Bytes,
) -> std::result::Result<(), StreamError> {
    send.write_all(&mut [head, body]).await?;
    // The receipt is not awaited: a copy is fire-and-forget (GUARANTEES §6).
    send.finish().await.map(drop)
}

async fn write_streamed(
    mut send: SendHalf,
    head: Bytes,
    mut chunks: mpsc::UnboundedReceiver<Chunk>,
    backlog: &Backlog,
) -> std::result::Result<(), StreamError> {
    let r = async {
        send.write(head).await?;
        loop {
            // While the publisher's application has no chunk for it, the subscriber may stop
            // the copy (at its body_idle_timeout, say): then it is dropped here and counted,
            // and the copies queued behind it go on.
            let next = tokio::select! {
                biased;
                next = chunks.recv() => next,
                stopped = send.stopped() => {
                    return Err(match stopped {
                        Ok(code) => StreamError::Stopped(code),
                        Err(e) => e,
                    })
                }
            };
            match next {
                Some(Chunk::Data(b)) => {
                    let n = b.len();
                    send.write(b).await?;
                    backlog.bytes.fetch_sub(n, Ordering::AcqRel);
                    backlog.room.notify_waiters();
                }
                Some(Chunk::Fin) => return send.finish().await.map(drop),
                // The FanOut was dropped unfinished, or dropped this copy at its budget.
                Some(Chunk::Reset) | None => {
                    send.reset(Code::Canceled);
                    return Err(StreamError::Reset(Code::Canceled));
                }
            }
        }
    }
    .await;
    if matches!(r, Err(StreamError::Stopped(_)) | Err(StreamError::Lost(_))) {
        backlog.failed.store(true, Ordering::Release);
        backlog.room.notify_waiters();
    }
    r
}
