//! The subscriber's side of Pub/Sub (PATTERNS §4): the copies its publishers open toward it,
//! checked, collected, filtered again locally, put in order at the level it requires, and
//! queued for `recv`. The public face is `patterns::pubsub`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use tokio::sync::Notify;

use super::filter::{Filter, FilterSet};
use crate::config::Bounds;
use crate::connection::context::Context;
use crate::connection::handles::{IncomingMeta, IncomingTransfer, Message};
use crate::connection::link::Link;
use crate::error::{Error, LossCause, Result};
use crate::patterns::ordering::{Release, Reorderers};
use crate::transport::reader::{StreamReader, Watch};
use crate::transport::{Accept, Conn, PeerIdentity, RecvHalf, SendHalf};
use crate::wire::{Code, Header, Ordering, Session, StreamType};

/// Where every copy a subscriber receives ends up.
pub(crate) struct Feed {
    pub(crate) ctx: Arc<Context>,
    level: Ordering,
    state: Mutex<FeedState>,
    readable: Notify,
    /// Room in the ready queue (`Limits::endpoint_queue`), taken in arrival order: a fair
    /// semaphore keeps copies in the order they arrived while they wait for `recv`.
    room: tokio::sync::Semaphore,
    /// The subscriber's filters, checked again on arrival: after `unsubscribe` returns nothing
    /// it no longer selects is delivered, whatever was in flight.
    filters: RwLock<FilterSet<u8>>,
    /// The largest copy collected (`max_collected_body`, the subscriber's own).
    max_collected_body: u64,
}

#[derive(Default)]
struct FeedState {
    ready: VecDeque<Message>,
    /// Handed back by a binding whose caller cancelled as the message arrived.
    returned: VecDeque<Message>,
    /// Per (connection, producer): numbering restarts with a new producer; bounded per
    /// connection, and what a forgotten producer or an ended connection held is released.
    orderers: Reorderers<Message>,
    /// The error a batch receive met after its first message, for the next receive.
    deferred: Option<Error>,
    /// Messages in `ready` beyond the room taken for them (a reassembly hold released several
    /// at once): `recv` pays these back before it gives room again.
    debt: usize,
    links: usize,
    live: usize,
    /// Slots down whose redial may still bring them back: a receive waits for them.
    hopeful: usize,
    last_loss: Option<LossCause>,
    closed: bool,
}

impl Feed {
    pub(crate) fn new(ctx: Arc<Context>, bounds: Bounds) -> Arc<Self> {
        Arc::new(Self {
            level: ctx.config.guarantees.ordering,
            ctx: ctx.clone(),
            state: Mutex::new(FeedState {
                orderers: Reorderers::new(
                    ctx.config.guarantees.ordering,
                    ctx.limits.max_reorder_hold,
                ),
                ..FeedState::default()
            }),
            readable: Notify::new(),
            room: tokio::sync::Semaphore::new(bounds.endpoint_queue),
            max_collected_body: bounds.max_collected_body,
            filters: RwLock::new(FilterSet::new()),
        })
    }

    pub(crate) fn add_filter(&self, f: &Filter) {
        self.filters.write().unwrap().insert(f, 0);
    }

    pub(crate) fn remove_filter(&self, f: &Filter) -> bool {
        self.filters.write().unwrap().remove(f, 0)
    }

    pub(crate) fn link_added(&self) {
        let mut s = self.state.lock().unwrap();
        s.links += 1;
        s.live += 1;
    }

    /// A slot recorded before its first connection (`connect_later`): counted, not live.
    pub(crate) fn slot_recorded(&self) {
        self.state.lock().unwrap().links += 1;
    }

    /// A redial brought a slot back on a new connection.
    pub(crate) fn link_back(&self) {
        self.state.lock().unwrap().live += 1;
    }

    /// `delta` slots began (1) or stopped (-1) being redialled.
    pub(crate) fn hopeful(&self, delta: isize) {
        let mut s = self.state.lock().unwrap();
        s.hopeful = s.hopeful.saturating_add_signed(delta);
        drop(s);
        self.readable.notify_waiters();
    }

    /// The application disconnected slot `link_id` (its connection `live` or not, its redial
    /// `hopeful` or not).
    pub(crate) fn slot_removed(&self, link_id: u64, live: bool, hopeful: bool) {
        let mut s = self.state.lock().unwrap();
        s.links = s.links.saturating_sub(1);
        if live {
            s.live = s.live.saturating_sub(1);
        }
        if hopeful {
            s.hopeful = s.hopeful.saturating_sub(1);
        }
        Self::release_held(&mut s, link_id);
        drop(s);
        self.readable.notify_waiters();
    }

    /// Connection `link_id`'s producers go: what they held arrived, so it is delivered, each
    /// run with the gap it waited for, beyond the room (a debt `recv` pays back).
    fn release_held(s: &mut FeedState, link_id: u64) {
        let mut out = VecDeque::new();
        s.orderers.end_link(link_id, &mut out);
        s.debt += out.len();
        Self::ready(s, &mut out);
    }

    fn ready(s: &mut FeedState, out: &mut VecDeque<Release<Message>>) {
        for Release { mut item, gap } in out.drain(..) {
            if item.meta.gap != gap {
                Arc::make_mut(&mut item.meta).gap = gap;
            }
            s.ready.push_back(item);
        }
    }

    /// A connection ended (or was disconnected): its numbering goes, and a receiver waiting
    /// on a subscriber with no live connection left learns it.
    pub(crate) fn link_ended(&self, link_id: u64, cause: Option<LossCause>, removed: bool) {
        let mut s = self.state.lock().unwrap();
        s.live = s.live.saturating_sub(1);
        if removed {
            s.links = s.links.saturating_sub(1);
        }
        if cause.is_some() {
            s.last_loss = cause;
        }
        Self::release_held(&mut s, link_id);
        drop(s);
        self.readable.notify_waiters();
    }

    /// `Closed` once the subscriber was closed.
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.state.lock().unwrap().closed {
            return Err(Error::Closed);
        }
        Ok(())
    }

    pub(crate) fn close(&self) {
        self.state.lock().unwrap().closed = true;
        self.readable.notify_waiters();
        self.room.close();
    }

    /// The next message. Cancel-safe: nothing is taken until it is returned.
    pub(crate) async fn recv(&self) -> Result<Message> {
        loop {
            let n = self.readable.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if let Some(r) = self.try_recv() {
                return r;
            }
            n.await;
        }
    }

    /// A message or an error if one is there without waiting.
    pub(crate) fn try_recv(&self) -> Option<Result<Message>> {
        let mut s = self.state.lock().unwrap();
        if let Some(m) = s.returned.pop_front() {
            return Some(Ok(m));
        }
        if let Some(e) = s.deferred.take() {
            return Some(Err(e));
        }
        if let Some(m) = s.ready.pop_front() {
            if s.debt > 0 {
                s.debt -= 1;
            } else {
                self.room.add_permits(1);
            }
            return Some(Ok(m));
        }
        if s.closed {
            return Some(Err(Error::Closed));
        }
        if s.links == 0 {
            return Some(Err(Error::NotConnected));
        }
        if s.live == 0 && s.hopeful == 0 {
            return Some(Err(Error::ConnectionLost(
                s.last_loss.clone().unwrap_or(LossCause::PeerClosed),
            )));
        }
        None
    }

    /// Messages ready for `recv` now.
    pub(crate) fn queued(&self) -> usize {
        let s = self.state.lock().unwrap();
        s.ready.len() + s.returned.len()
    }

    /// Resolves once at least `n` messages are queued (every arrival wakes `readable`).
    pub(crate) async fn until_queued(&self, n: usize) {
        loop {
            let readable = self.readable.notified();
            tokio::pin!(readable);
            readable.as_mut().enable();
            if self.queued() >= n {
                return;
            }
            readable.await;
        }
    }

    pub(crate) fn defer(&self, e: Error) {
        self.state.lock().unwrap().deferred = Some(e);
    }

    pub(crate) fn give_back(&self, m: Message) {
        self.state.lock().unwrap().returned.push_back(m);
        self.readable.notify_waiters();
    }

    /// Takes whole copies for which room was taken, under one lock and with one wake-up:
    /// a lane's batch costs what one copy did. The filters are asked once per run of copies
    /// of one topic (each copy's answer is carried to the next when their topics are equal,
    /// so a copy alone allocates nothing for it).
    fn arrive(&self, link_id: u64, copies: impl IntoIterator<Item = Arrival>) {
        let filters = self.filters.read().unwrap();
        let mut copies = copies.into_iter().peekable();
        // Room given back: copies not wanted, or held for reassembly.
        let mut room = 0;
        let mut out = VecDeque::new();
        {
            let mut s = self.state.lock().unwrap();
            let mut carried = None;
            while let Some(Arrival {
                producer,
                seq,
                message,
            }) = copies.next()
            {
                let topic = message.meta.topic.as_deref();
                let wanted = carried
                    .take()
                    .unwrap_or_else(|| topic.is_some_and(|t| filters.selects(t)));
                if copies
                    .peek()
                    .is_some_and(|n| n.message.meta.topic.as_deref() == topic)
                {
                    carried = Some(wanted);
                }
                if self.level == Ordering::None {
                    // No numbering to keep: straight to the queue, or the room back.
                    match wanted {
                        true => s.ready.push_back(message),
                        false => room += 1,
                    }
                    continue;
                }
                s.orderers
                    .push(link_id, producer, seq, message, wanted, &mut out);
                match out.len() {
                    0 => room += 1,
                    n => s.debt += n - 1,
                }
                Self::ready(&mut s, &mut out);
            }
        }
        drop(filters);
        if room > 0 {
            self.room.add_permits(room);
        }
        self.readable.notify_waiters();
    }

    /// Moves messages ready now into `out`, up to `max` in all, under one lock and with the
    /// room they held given back at once; true if it moved any. It stops short of an error a
    /// receive must see (`deferred`), which [`Feed::try_recv`] then returns.
    pub(crate) fn take_ready(&self, max: usize, out: &mut Vec<Message>) -> bool {
        let before = out.len();
        let mut room = 0;
        {
            let mut s = self.state.lock().unwrap();
            while out.len() < max {
                if let Some(m) = s.returned.pop_front() {
                    out.push(m);
                    continue;
                }
                if s.deferred.is_some() {
                    break;
                }
                let Some(m) = s.ready.pop_front() else { break };
                if s.debt > 0 {
                    s.debt -= 1;
                } else {
                    room += 1;
                }
                out.push(m);
            }
        }
        if room > 0 {
            self.room.add_permits(room);
        }
        out.len() > before
    }
}

/// A whole copy on its way into the feed: who numbered it, its number, the message.
struct Arrival {
    producer: Bytes,
    seq: Option<u64>,
    message: Message,
}

/// How a stream toward this subscriber came to be.
enum Via {
    /// The publisher opened it (QUIC, in process).
    Opened,
    /// Over AF_UNIX: a connection this subscriber parked, with its own half (which carried
    /// the token) and its link.
    Parked(SendHalf, Arc<Link>),
}

/// Reads one copy a publisher opened toward this subscriber and queues it. False when the
/// stream ended before its type byte (a parked connection the publisher refused). A stream
/// the publisher opened says what it is by `Limits::header_timeout`; a parked connection waits
/// for its copy for as long as the publisher has none. `lanes`: the stream may be a lane,
/// because both HELLOs set FEATURES bit 0 (and, on a parked connection, bit 2: PROTOCOL.md
/// §3.7); any type but a transfer, or a lane where none may come, is UNSUPPORTED. A lane on a
/// parked connection is read by a task of its own, so that the caller parks the next one at
/// once.
async fn copy(
    feed: Arc<Feed>,
    link_id: u64,
    path: Arc<str>,
    recv: RecvHalf,
    peer: Option<PeerIdentity>,
    via: Via,
    lanes: bool,
) -> bool {
    let ctx = feed.ctx.clone();
    let mut reader = StreamReader::new(recv);
    let first = match via {
        Via::Opened => tokio::time::timeout(ctx.limits.header_timeout, reader.byte()).await,
        Via::Parked(..) => Ok(reader.byte().await),
    };
    let Ok(first) = first else {
        reader.stop(Code::LimitExceeded);
        return true;
    };
    // From its type byte on, a copy (or a lane frame) may not stall mid-body.
    reader.set_idle(&Watch::alone(ctx.limits.body_idle_timeout));
    match first.map(StreamType::from_byte) {
        Ok(Ok(StreamType::Transfer)) => {}
        Ok(Ok(StreamType::Lane)) if lanes => {
            let lane = read_lane(feed, link_id, path, reader, peer, ctx);
            match via {
                Via::Opened => lane.await,
                // The lane lives as long as its socket or the subscriber's link; this side's
                // half stays open with it (closing it would end the connection early).
                Via::Parked(send, link) => {
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = lane => {}
                            _ = link.conn.closed() => {}
                        }
                        drop(send);
                    });
                }
            }
            return true;
        }
        Ok(_) => {
            reader.stop(Code::Unsupported);
            return true;
        }
        Err(_) => return false,
    }
    read_copy(feed, link_id, path, reader, peer, ctx).await;
    true
}

async fn read_copy(
    feed: Arc<Feed>,
    link_id: u64,
    path: Arc<str>,
    mut reader: StreamReader,
    peer: Option<PeerIdentity>,
    ctx: Arc<Context>,
) {
    let header = match reader.header(ctx.limits.max_header_size).await {
        Ok(h) => h,
        Err(crate::transport::reader::ReadFail::Stream(_)) => return,
        Err(f) => return reader.stop(f.code()),
    };
    if header.path.as_deref() != Some(&*path) {
        return reader.stop(Code::UnknownEndpoint);
    }
    if header.topic.is_none() {
        return reader.stop(Code::ProtocolError);
    }
    let seq = header.sequence;
    let producer = header.producer.clone().unwrap_or_default();
    // Room first, in arrival order, then the body: a subscriber that stops reading holds at
    // most `endpoint_queue` collected copies, and the rest wait unread in the transport, so
    // the publisher's writer for this subscriber (and only it) stalls.
    let Ok(permit) = feed.room.acquire().await else {
        return reader.stop(Code::Canceled);
    };
    permit.forget();
    let meta = IncomingMeta::from_header(header, peer);
    let mut t = IncomingTransfer::new(reader, meta, ctx.clone());
    // A copy that does not arrive whole (cancelled, lost, above the bound) is not delivered;
    // under PerProducer ordering its number is then a gap, which is what it is.
    let Ok(body) = t.collect(feed.max_collected_body).await else {
        feed.room.add_permits(1);
        return;
    };
    let meta = Arc::new(t.meta().clone());
    drop(t);
    let message = Message { meta, body };
    feed.arrive(
        link_id,
        [Arrival {
            producer,
            seq,
            message,
        }],
    );
}

/// Reads a publisher's lane toward this subscriber: a head naming the publisher's path, then
/// one whole copy per frame, each taking room before its body is read (PROTOCOL.md §4.1).
/// The frames already whole behind the first go into the feed with it, as many as there is
/// room for, up to [`LANE_BATCH`]: one lock and one wake-up per batch.
async fn read_lane(
    feed: Arc<Feed>,
    link_id: u64,
    path: Arc<str>,
    mut reader: StreamReader,
    peer: Option<PeerIdentity>,
    ctx: Arc<Context>,
) {
    let limits = &ctx.limits;
    let (max_header, max_body) = (limits.max_header_size, feed.max_collected_body);
    match reader.header(max_header).await {
        Ok(h) if h.path.as_deref() == Some(&*path) => {}
        Ok(_) => return reader.stop(Code::UnknownEndpoint),
        Err(crate::transport::reader::ReadFail::Stream(_)) => return,
        Err(f) => return reader.stop(f.code()),
    }
    let mut metas = Metas::new(peer, path);
    let mut batch: Vec<Arrival> = Vec::with_capacity(LANE_BATCH);
    loop {
        // Room is taken once a frame starts to arrive, not before: an idle lane holds none.
        match reader.wait_data().await {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
        match feed.room.try_acquire() {
            Ok(permit) => permit.forget(),
            Err(tokio::sync::TryAcquireError::Closed) => return reader.stop(Code::Canceled),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let Ok(permit) = feed.room.acquire().await else {
                    return reader.stop(Code::Canceled);
                };
                permit.forget();
            }
        }
        let frame = reader.lane_frame(max_header, max_body).await;
        let (header, body) = match frame {
            Ok(Some((h, Ok(body)))) if h.topic.is_some() => (h, body),
            // Above max_collected_body: skipped, and a gap under PerProducer ordering.
            Ok(Some((h, Err(_)))) if h.topic.is_some() => {
                feed.room.add_permits(1);
                continue;
            }
            Ok(Some(_)) => {
                feed.room.add_permits(1);
                return reader.stop(Code::ProtocolError);
            }
            Ok(None) | Err(crate::transport::reader::ReadFail::Stream(_)) => {
                feed.room.add_permits(1);
                return;
            }
            Err(f) => {
                feed.room.add_permits(1);
                return reader.stop(f.code());
            }
        };
        batch.push(metas.arrival(header, body));
        let mut malformed = false;
        while batch.len() < LANE_BATCH {
            // Room first (no lock when there is some), then the frame: a frame not yet whole
            // gives its room back and is read by the loop above.
            let Ok(permit) = feed.room.try_acquire() else {
                break;
            };
            let mut header = None;
            let Some(body) = reader.lane_frame_ready(max_header, max_body, &mut header) else {
                break;
            };
            permit.forget();
            match header {
                Some(h) if h.topic.is_some() => batch.push(metas.arrival(h, body)),
                _ => {
                    feed.room.add_permits(1);
                    malformed = true;
                    break;
                }
            }
        }
        let n = batch.len() as u64;
        let bytes = batch.iter().map(|a| a.message.body.len() as u64).sum();
        ctx.stats.add_received(bytes);
        ctx.stats
            .lane_messages_received
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        feed.arrive(link_id, batch.drain(..));
        if malformed {
            return reader.stop(Code::ProtocolError);
        }
    }
}

/// Lane frames taken into the feed at once, at most (as a Push/Pull lane's reader takes).
const LANE_BATCH: usize = 64;

/// The metadata of a lane's copies: a copy whose header is the one before's (the same topic,
/// no number) shares its metadata instead of allocating its own.
struct Metas {
    peer: Option<PeerIdentity>,
    path: Arc<str>,
    last: Option<Arc<IncomingMeta>>,
}

impl Metas {
    fn new(peer: Option<PeerIdentity>, path: Arc<str>) -> Self {
        Self {
            peer,
            path,
            last: None,
        }
    }

    fn arrival(&mut self, header: Header, body: Bytes) -> Arrival {
        let seq = header.sequence;
        let producer = header.producer.clone().unwrap_or_default();
        let meta = match &self.last {
            Some(m)
                if seq.is_none()
                    && m.sequence.is_none()
                    && m.gap.is_none()
                    && m.topic == header.topic
                    && m.producer == header.producer
                    && m.metadata == header.meta =>
            {
                m.clone()
            }
            _ => {
                let m = Arc::new(IncomingMeta::on_path(
                    header,
                    self.peer.clone(),
                    self.path.clone(),
                ));
                // A numbered copy's metadata is its own (its gap is set in place later).
                self.last = seq.is_none().then(|| m.clone());
                m
            }
        };
        Arrival {
            producer,
            seq,
            message: Message { meta, body },
        }
    }
}

/// Runs `fut` inline until it first waits, then as a task: most copies arrive whole in one
/// read, and a task per message is measurable.
fn admit(fut: impl std::future::Future<Output = ()> + Send + 'static) {
    let mut fut = Box::pin(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if fut.as_mut().poll(&mut cx).is_pending() {
        tokio::spawn(fut);
    }
}

/// Accepts the copies of one connection until it ends.
pub(crate) async fn run_link(feed: Arc<Feed>, link: Arc<Link>, link_id: u64) {
    let path = link.path.clone();
    match &link.conn {
        Conn::Quic(_) | Conn::Inproc(_) => {
            let lanes = link.lanes;
            let accept = link.conn.accept_each(Accept::OneWay, |raw| {
                let (f, p) = (feed.clone(), path.clone());
                admit(async move {
                    copy(f, link_id, p, raw.recv, raw.peer, Via::Opened, lanes).await;
                });
            });
            accept.await;
        }
        Conn::Unix(_) => {
            let Some(session) = link.session.clone() else {
                return;
            };
            let parkers: Vec<_> = (0..session.parked)
                .map(|_| tokio::spawn(park(feed.clone(), link.clone(), session.clone(), link_id)))
                .collect();
            link.conn.closed().await;
            for p in parkers {
                p.abort();
            }
        }
    }
}

/// Keeps one reverse connection parked with a local publisher: when a copy has been read on
/// it, or it became a lane, parks the next (PROTOCOL.md §3.7).
async fn park(feed: Arc<Feed>, link: Arc<Link>, session: Session, link_id: u64) {
    let head = session.parked_head();
    while link.conn.loss().is_none() {
        let Ok((mut send, recv)) = link.conn.open_bi().await else {
            return;
        };
        if send.write(head.clone()).await.is_err() {
            // The publisher closed the connection before its head was written: refused as it
            // was accepted (its process's share of the listener's connections, PROTOCOL
            // §8.6), or ending. As a refusal read below, this slot is not parked again:
            // opening the next at once would loop against a listener that refuses each.
            return;
        }
        // A parked connection waits for its copy as long as it takes. It carries one copy, or
        // where both HELLOs agreed lanes on parked connections, a lane of small ones (§3.7).
        // Our half carried only the token; it closes with the copy, or with the lane.
        let got = copy(
            feed.clone(),
            link_id,
            link.path.clone(),
            recv,
            link.peer.clone(),
            Via::Parked(send, link.clone()),
            link.parked_lanes,
        )
        .await;
        if !got {
            // The publisher refused the connection (its pool is full, or the session ended):
            // this slot is not parked again.
            return;
        }
    }
}
