//! Dispatch of what a listener accepts (PROTOCOL.md §9): a connection's handshake and its
//! control stream (GOAWAY, and the SUBSCRIBE/UNSUBSCRIBE requests of Pub/Sub), then each stream
//! it opens: read its type byte and header, find the endpoint bound at its path, and hand it
//! over, or refuse it with the code that says why. The endpoints themselves (the routes and
//! their queues) are the runtime's, reached through the [`Endpoints`] trait.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::admission::{
    by_check, by_claim, by_endpoint, by_header, by_type, Arrival, ByType, Found, RouteKind, Step,
    StreamRefusal,
};
use super::context::Context;
use super::control::ControlReader;
use super::goaway::Tracker;
use super::handles::{
    write_error_reply, Exchange, Incoming, IncomingMeta, IncomingTransfer, Message,
};
use super::handshake::{conclude, our_hello, Agreed, Flow, Side};
use super::numbering::Numbering;
use super::reverse::{Claimable, ParkedPool, Publication, Reverse, SubscriberConn, Way};
use super::share::Shares;
use crate::error::{Error, Limit, LossCause};
use crate::transport::reader::{ReadFail, StreamReader, Watch};
use crate::transport::{Accept, Conn, IncomingRaw, Life, PeerIdentity, SendHalf};
use crate::wire::{control, Code, ControlFrame, Header, PathClaim, StreamType, Subscription};

/// The `from` of a local-socket session's arrival: an AF_UNIX peer has no address of its own
/// (what the kernel proved of it is its `PeerIdentity`).
const LOCAL_SESSION: &str = "unix";

/// The bound endpoints of one listener, as dispatch sees them. The routes table and the
/// endpoints' queues live in the runtime (`runtime/routes.rs` implements this): dispatch only
/// looks a path up and hands over what it admitted.
pub(crate) trait Endpoints: Send + Sync + 'static {
    /// An endpoint's queue.
    type Queue: EndpointQueue;

    /// What is bound at `path`: its kind, its queue (None for a publisher, which takes no
    /// stream) and the largest body it collects whole (its `max_collected_body`); None when
    /// nothing is.
    fn find(&self, path: &str) -> Option<(RouteKind, Option<Self::Queue>, u64)>;

    /// The publisher bound at `path`, for a SUBSCRIBE: `Err(kind)` when an endpoint of another
    /// kind is bound there; None when nothing is.
    fn publication(&self, path: &str) -> Option<Result<Arc<dyn Publication>, RouteKind>>;

    /// The endpoint a dialler may claim at `path` (a pair), for a CLAIM and for the streams
    /// it admits; None when nothing claimable is bound there.
    fn claimable(&self, path: &str) -> Option<Arc<dyn Claimable>>;
}

/// An endpoint's bounded queue, as dispatch hands it streams and lane messages.
pub(crate) trait EndpointQueue: Sized + Send + Sync + 'static {
    /// A handle that does not keep the queue open.
    type Weak: Send + Sync + 'static;

    /// The endpoint is gone (its receiver dropped): nothing more is taken.
    fn is_closed(&self) -> bool;
    /// Queues `item`, waiting for room; gives it back when the endpoint is gone.
    fn send(&self, item: Queued) -> impl Future<Output = Result<(), Queued>> + Send;
    /// Queues every item of `items` in order, waiting for room; `Err(())` when the endpoint is
    /// gone (what was not queued stays in `items`).
    fn send_many(
        &self,
        items: &mut VecDeque<Queued>,
    ) -> impl Future<Output = Result<(), ()>> + Send;
    fn downgrade(&self) -> Self::Weak;
    fn upgrade(weak: &Self::Weak) -> Option<Self>;
}

/// What an endpoint's queue holds: a stream, or a whole message that arrived on a lane.
pub(crate) enum Queued {
    /// Boxed: a stream's handles are larger than a whole message, and every item of the queue
    /// is moved at the size of the largest (lane messages are the many).
    Incoming(Box<Incoming>),
    Message(Message),
    /// A lane frame the endpoint refused (above `max_collected_body`): the receive it reaches
    /// fails, as it would have for a stream of its own, and the endpoint goes on.
    Refused(Box<Error>),
}

/// Lane frames a reader hands to its endpoint's queue at once, at most.
const LANE_BATCH: usize = 64;

/// How long a listener that refuses a HELLO waits, at most, for the dialler's transport to
/// acknowledge its CLOSE frame before it closes the connection (PROTOCOL.md §3.2 step 4).
const CLOSE_FRAME_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Everything a dispatch task needs.
/// What a listener's application hears of its connections: each one whose handshake
/// completed, and how it ended. The runtime turns these into the listener's `PeerEvent`s, so
/// this layer knows no event stream.
pub(crate) trait Arrivals: Send + Sync {
    /// A connection from `from` (its transport address) completed its handshake; `peer` is
    /// what the transport proved of it.
    fn connected(&self, from: &str, peer: Option<&PeerIdentity>);
    /// That connection ended, for `cause`.
    fn ended(&self, from: &str, cause: LossCause);
}

/// What every connection of one listener shares.
struct Shared {
    /// Local-socket subscriber sessions by token: where their parked connections go.
    sessions: Mutex<HashMap<Bytes, Arc<ParkedPool>>>,
    /// Told of each connection's handshake and end.
    arrivals: Arc<dyn Arrivals>,
}

pub(crate) struct Dispatch<E> {
    ctx: Arc<Context>,
    endpoints: Arc<E>,
    /// What the listener's connections share: its local sessions and whom to tell of each
    /// connection. One reference, as `Dispatch` is cloned for every stream.
    shared: Arc<Shared>,
    /// The listener's own life: a closed listener ends its local sessions too.
    life: Arc<Life>,
    /// The dialler's MAX_HEADER_SIZE, for reply headers (per connection; unknown, so
    /// unbounded, for an AF_UNIX data connection, which carries no session: Open point 3).
    peer_max_header: u64,
    /// This connection's share of each endpoint (per QUIC or in-process connection; None for
    /// AF_UNIX, where every stream is a socket of its own and no peer has a connection to
    /// count against).
    shares: Option<Arc<Shares>>,
    /// Message lanes are in use: both HELLOs set FEATURES bit 0 (per connection, PROTOCOL.md
    /// §3.1.1). For an AF_UNIX data connection, which carries no session, the dialler's HELLO
    /// is not known: whether this side offers them (Open point 3).
    lanes: bool,
    /// The body deadline of this connection's streams, and its traffic (per QUIC or
    /// in-process connection; None for AF_UNIX, whose streams each get their own).
    watch: Option<Arc<Watch>>,
    /// This connection's id, unique in the runtime, which a claim names (per QUIC or
    /// in-process connection; None for an AF_UNIX data connection, which names none).
    conn_id: Option<u64>,
}

/// The ids of accepted connections, for claims.
static NEXT_CONN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The subscriptions of one accepted connection (or local session), by publisher path.
struct ConnSubs {
    reverse: Option<Reverse>,
    /// The connection agreed PerProducer ordering: copies are numbered.
    number: bool,
    /// Both HELLOs offered message lanes: small copies go as lane frames.
    lanes: bool,
    subs: HashMap<String, (Arc<dyn Publication>, Option<u64>)>,
    /// The connection's id, and the endpoints it claimed (released when it ends).
    conn_id: u64,
    claims: Vec<Arc<dyn Claimable>>,
    /// How a claimed endpoint reaches the dialler: the connection (QUIC, in process), or
    /// over AF_UNIX the connections its session parks; None for a local session that parks
    /// none.
    claim_reverse: Option<Reverse>,
    /// Both HELLOs set claims (FEATURES bit 3).
    claims_agreed: bool,
    /// The dialler's MAX_HEADER_SIZE, for what a claimed endpoint sends it.
    peer_max_header: u64,
}

impl Drop for ConnSubs {
    fn drop(&mut self) {
        for (hub, id) in self.subs.values() {
            if let Some(id) = id {
                hub.remove(*id);
            }
        }
        for c in &self.claims {
            c.release(self.conn_id);
        }
    }
}

/// The header deadline of one incoming stream, set the first time a read of its type byte or
/// header must wait: what has already arrived (the common case) costs neither a clock read
/// nor a timer. The deadline is counted from that first wait, which is at most the time the
/// first poll takes after the stream was accepted.
struct Deadline {
    within: std::time::Duration,
    at: Option<tokio::time::Instant>,
    /// The connection's traffic when the wait began: at the deadline, a connection that
    /// carried nothing meanwhile is closed ([`Watch::expired`]).
    watch: Option<(Arc<Watch>, u64)>,
}

impl Deadline {
    fn within(within: std::time::Duration, watch: Option<&Arc<Watch>>) -> Self {
        Self {
            within,
            at: None,
            watch: watch.map(|w| (w.clone(), 0)),
        }
    }

    /// `read`'s output, or `Err(())` once the deadline passed.
    async fn bound<F: Future>(&mut self, read: F) -> Result<F::Output, ()> {
        let mut read = std::pin::pin!(read);
        if let Some(out) = futures_util::FutureExt::now_or_never(read.as_mut()) {
            return Ok(out);
        }
        if self.at.is_none() {
            self.at = Some(tokio::time::Instant::now() + self.within);
            if let Some((w, seen)) = &mut self.watch {
                *seen = w.seen();
            }
        }
        let at = self.at.expect("set above");
        let r = tokio::time::timeout_at(at, read).await.map_err(drop);
        if let (Err(()), Some((w, seen))) = (&r, &self.watch) {
            w.expired(*seen, "header_timeout");
        }
        r
    }
}

/// How a stream arrived, from the other half it came with.
fn arrival(send: &Option<SendHalf>) -> Arrival {
    match send {
        None => Arrival::OneWay,
        Some(SendHalf::Quic(_)) => Arrival::QuicBidi,
        Some(SendHalf::Channel(_)) => Arrival::InprocBidi,
        Some(SendHalf::Unix(_)) => Arrival::LocalSocket,
    }
}

/// What is bound at a path, as admission decides on it.
fn found<Q: EndpointQueue>(route: &Option<(RouteKind, Option<Q>, u64)>) -> Found {
    match route {
        None => Found::Nothing,
        Some((kind, tx, _)) => Found::Endpoint {
            kind: *kind,
            open: tx.as_ref().is_none_or(|t| !t.is_closed()),
        },
    }
}

impl<E> Clone for Dispatch<E> {
    fn clone(&self) -> Self {
        Self {
            ctx: self.ctx.clone(),
            endpoints: self.endpoints.clone(),
            shared: self.shared.clone(),
            life: self.life.clone(),
            peer_max_header: self.peer_max_header,
            shares: self.shares.clone(),
            watch: self.watch.clone(),
            lanes: self.lanes,
            conn_id: self.conn_id,
        }
    }
}

impl<E: Endpoints> Dispatch<E> {
    /// The dispatch of a listener whose endpoints are `endpoints` and whose life is `life`.
    pub(crate) fn new(
        ctx: Arc<Context>,
        endpoints: Arc<E>,
        arrivals: Arc<dyn Arrivals>,
        life: Arc<Life>,
    ) -> Self {
        Self {
            lanes: ctx.config.lane_max_message > 0,
            ctx,
            endpoints,
            shared: Arc::new(Shared {
                sessions: Mutex::default(),
                arrivals,
            }),
            life,
            peer_max_header: u64::MAX,
            shares: None,
            watch: None,
            conn_id: None,
        }
    }

    /// Serves the streams a listener opens toward this dialler on `link`, a connection that
    /// claimed a bound pair (PROTOCOL.md §3.1.6): each is read and admitted as a listener
    /// admits a dialler's (§9), with the same bounds and refusals, to the endpoint `self`
    /// holds. Returns when the connection ends.
    pub(crate) async fn reverse(self, link: &super::link::Link) {
        let conn = link.conn.clone();
        let this = Self {
            peer_max_header: link.peer_max_header,
            shares: Some(Arc::default()),
            lanes: link.lanes,
            watch: Some(Watch::of(conn.clone(), self.ctx.limits.body_idle_timeout)),
            ..self
        };
        conn.accept_each(Accept::OneWay, |raw| this.admit(raw))
            .await;
    }

    /// Over AF_UNIX, the same on one connection this dialler parked with its listener
    /// (PROTOCOL.md §3.7): it waits for the stream's type byte for as long as the listener has
    /// nothing to send, then reads it as [`Dispatch::reverse`] reads a stream. False when the
    /// connection ended before its type byte (the listener refused it, or the session ended):
    /// it is not parked again. `link` is the session's: a lane may come on a parked connection
    /// only where both HELLOs agreed to it (FEATURES bits 0 and 2).
    pub(crate) async fn parked(self, link: &super::link::Link, raw: IncomingRaw) -> bool {
        let IncomingRaw {
            recv,
            send,
            peer,
            live,
        } = raw;
        let mut reader = StreamReader::new(recv).counted(live);
        let Ok(ty) = reader.byte().await else {
            return false;
        };
        let deadline = Deadline::within(self.ctx.limits.header_timeout, None);
        let this = Self {
            lanes: link.parked_lanes,
            ..self
        };
        this.typed(reader, send, peer, ty, Arrival::Parked, deadline)
            .await;
        true
    }

    /// Dispatches inline when the stream's header has already arrived (the common case) and
    /// spawns a task only when it must wait: a task per message is measurable on the hot path.
    fn admit(&self, raw: IncomingRaw) {
        let mut fut = Box::pin(self.clone().stream(raw));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if fut.as_mut().poll(&mut cx).is_pending() {
            tokio::spawn(fut);
        }
    }

    /// Reads a stream's type byte and header and hands it to the endpoint at its path, or
    /// refuses it with the code that says why (PATTERNS §1.6).
    pub(crate) async fn stream(self, raw: IncomingRaw) {
        let IncomingRaw {
            recv,
            send,
            peer,
            live,
        } = raw;
        let limits = &self.ctx.limits;
        let mut reader = StreamReader::new(recv).counted(live);
        // The type byte and the header (or a lane's head) must come by one deadline: a stream
        // that never says what it is holds its budget slot and this task no longer. An AF_UNIX
        // connection is accepted before it says anything, so it is also a connection opening,
        // bounded by the idle timeout as a silent QUIC opening is (PROTOCOL §3.2 step 2).
        let mut within = limits.header_timeout;
        if matches!(send, Some(SendHalf::Unix(_))) {
            within = within.min(limits.idle_timeout);
        }
        // The body deadline (and the connection's traffic count) starts once the header is
        // read; until then the header deadline alone bounds the stream.
        let mut deadline = Deadline::within(within, self.watch.as_ref());
        let ty = match deadline.bound(reader.byte()).await {
            Ok(Ok(b)) => b,
            Ok(Err(_)) => return,
            // Of a stream that never said what it is, nothing is answered: it is stopped.
            Err(_) => return self.too_slow(reader, None).await,
        };
        let arrival = arrival(&send);
        self.typed(reader, send, peer, ty, arrival, deadline).await;
    }

    /// A stream that came as `arrival`, whose type byte `ty` was read: the rest of §9.1, its
    /// header bounded by `deadline`.
    async fn typed(
        self,
        mut reader: StreamReader,
        mut send: Option<SendHalf>,
        peer: Option<PeerIdentity>,
        ty: u8,
        arrival: Arrival,
        mut deadline: Deadline,
    ) {
        let limits = &self.ctx.limits;
        let (ty, reply) = match by_type(ty, arrival, self.lanes) {
            ByType::Stream { ty, reply } => (ty, reply),
            ByType::LocalSession => {
                let ctl = ControlReader::with_reader(reader);
                let send = send.take().expect("a local socket has its back direction");
                return self.session(ctl, send, peer).await;
            }
            ByType::Parked => {
                let send = send.take().expect("a local socket has its back direction");
                return self.park(reader, send).await;
            }
            // A lane's reverse direction (over a local socket) carries only its STOP chunks,
            // as a transfer's does: a refused lane gets no ERROR (PROTOCOL.md §4, §9.2).
            ByType::Lane => return self.lane(reader, peer, deadline).await,
            // A parked connection's back direction carries STOP chunks alone (§3.7, §4): no
            // ERROR, whatever the listener wrote.
            ByType::Refused(r) if arrival == Arrival::Parked => {
                return self.refuse(reader, None, r).await
            }
            ByType::Refused(r) => return self.refuse(reader, send, r).await,
        };
        // Only an exchange keeps its other half: as its reply half.
        let send = if reply { send } else { None };
        let header = reader.header(limits.max_header_size);
        let Ok(header) = deadline.bound(header).await else {
            return self.too_slow(reader, send).await;
        };
        // A message (a transfer, a request) may not stall mid-body.
        reader.set_idle(&self.stream_watch());
        let path = match by_header(ty, &header) {
            Step::Next(path) => path.to_owned(),
            Step::Refuse(r) => return self.refuse(reader, send, r).await,
            Step::Drop => return,
        };
        let header = header.expect("by_header found its path");
        let route = self.endpoints.find(&path);
        if let Err(r) = by_endpoint(ty, &path, found(&route)) {
            return self.refuse(reader, send, r).await;
        }
        if let Some(r) = self.unclaimed(&path, &route) {
            return self.refuse(reader, send, r).await;
        }
        let Some((_, Some(tx), max_body)) = route else {
            unreachable!("an endpoint that takes a stream has a queue")
        };
        // This connection's place at the endpoint: past its share, this stream waits here, in
        // its transport, and only this peer's streams are held back.
        let ticket = match &self.shares {
            Some(s) => Some(s.take(&path, self.ctx.limits.peer_share).await),
            None => None,
        };
        let meta = IncomingMeta::from_header(header, peer);
        let transfer = IncomingTransfer::new(reader, meta, self.ctx.clone()).holding(ticket);
        let incoming = match send {
            Some(s) => {
                Incoming::Exchange(Exchange::new(transfer, s, self.peer_max_header, max_body))
            }
            None => Incoming::Stream(transfer),
        };
        self.ctx
            .stats
            .streams_accepted
            .fetch_add(1, Ordering::Relaxed);
        // A full queue waits here, holding the stream and so its budget slot: backpressure
        // reaches the opener's `open` (PATTERNS §1.4).
        if let Err(Queued::Incoming(i)) = tx.send(Queued::Incoming(Box::new(incoming))).await {
            // The endpoint went away while the stream waited.
            match *i {
                Incoming::Stream(mut t) => t.stop_reader(Code::UnknownEndpoint),
                Incoming::Exchange(x) => {
                    let _ = x.fail(&Error::UnknownEndpoint { path }).await;
                }
            }
        }
    }

    /// A message lane: its head names the path once, then every frame is a whole message
    /// handed to the endpoint's queue in order (PROTOCOL.md §4.1). A frame cut short by the
    /// lane's end is dropped, as an unfinished stream would be.
    async fn lane(
        &self,
        mut reader: StreamReader,
        peer: Option<PeerIdentity>,
        mut deadline: Deadline,
    ) {
        let limits = &self.ctx.limits;
        let head = reader.header(limits.max_header_size);
        let Ok(head) = deadline.bound(head).await else {
            return self.too_slow(reader, None).await;
        };
        // From its head on, a lane may not stall mid-frame (between frames it may idle).
        reader.set_idle(&self.stream_watch());
        let path = match by_header(StreamType::Lane, &head) {
            Step::Next(path) => path,
            Step::Refuse(r) => return self.refuse(reader, None, r).await,
            Step::Drop => return,
        };
        let route = self.endpoints.find(path);
        if let Err(r) = by_endpoint(StreamType::Lane, path, found(&route)) {
            return self.refuse(reader, None, r).await;
        }
        if let Some(r) = self.unclaimed(path, &route) {
            return self.refuse(reader, None, r).await;
        }
        let Some((_, Some(tx), max_body)) = route else {
            unreachable!("an endpoint that takes a lane has a queue")
        };
        let path: Arc<str> = path.into();
        // Weak between frames: a lane must not keep a closed endpoint's queue open (its
        // receive ends with `Closed` once the queue is taken), and a frame after the close is
        // refused as a stream would be.
        let weak = tx.downgrade();
        drop(tx);
        let tx = weak;
        self.ctx
            .stats
            .streams_accepted
            .fetch_add(1, Ordering::Relaxed);
        let max_header = limits.max_header_size;
        let mut batch = VecDeque::with_capacity(LANE_BATCH);
        // What a frame with no header field arrives with: the same for each, so shared.
        let plain = Arc::new(IncomingMeta::on_path(
            Header::default(),
            peer.clone(),
            path.clone(),
        ));
        loop {
            // The first frame waits for bytes; the frames already whole behind it are taken
            // without waiting and go to the endpoint's queue under one lock (a lock, a
            // reference to the queue and the counters per batch, not per message).
            let (mut messages, mut bytes) = (0u64, 0u64);
            let mut message = |header: &mut Option<Header>, body: Bytes| {
                messages += 1;
                bytes += body.len() as u64;
                // Taken only when there is one: a move of an empty slot is a move of its size.
                let meta = match header.is_some() {
                    true => match header.take() {
                        Some(h) if !h.is_empty() => {
                            Arc::new(IncomingMeta::on_path(h, peer.clone(), path.clone()))
                        }
                        _ => plain.clone(),
                    },
                    false => plain.clone(),
                };
                Queued::Message(Message { meta, body })
            };
            let first = match reader.lane_frame(max_header, max_body).await {
                Ok(Some((_, Err(len)))) => Queued::Refused(Box::new(Error::limit(
                    Limit::CollectedBody,
                    format!(
                        "a message of {len} bytes, above max_collected_body {max_body} ({})",
                        crate::error::human_bytes(max_body)
                    ),
                ))),
                Ok(Some((header, Ok(body)))) => message(&mut Some(header), body),
                Ok(None) | Err(ReadFail::Stream(_)) => return,
                Err(f) => return reader.stop(f.code()),
            };
            batch.push_back(first);
            let mut header = None;
            while batch.len() < LANE_BATCH {
                match reader.lane_frame_ready(max_header, max_body, &mut header) {
                    Some(body) => batch.push_back(message(&mut header, body)),
                    None => break,
                }
            }
            let stats = &self.ctx.stats;
            stats.add_received(bytes);
            stats
                .lane_messages_received
                .fetch_add(messages, Ordering::Relaxed);
            // A full queue waits here, so the lane's window holds the sender; an endpoint gone
            // since the last batch refuses the lane.
            let Some(tx) = E::Queue::upgrade(&tx) else {
                return reader.stop(Code::UnknownEndpoint);
            };
            if tx.send_many(&mut batch).await.is_err() {
                return reader.stop(Code::UnknownEndpoint);
            }
        }
    }

    /// A pair's path takes streams only from the connection that claimed it (PROTOCOL.md
    /// §3.1.6): the refusal of a stream from any other, or None.
    fn unclaimed(
        &self,
        path: &str,
        route: &Option<(RouteKind, Option<E::Queue>, u64)>,
    ) -> Option<StreamRefusal> {
        if !matches!(route, Some((RouteKind::Pair, ..))) {
            return None;
        }
        let admitted = self
            .endpoints
            .claimable(path)
            .is_some_and(|c| c.admits(self.conn_id));
        (!admitted).then(|| {
            StreamRefusal::new(
                Code::Unsupported,
                format!(
                    "{path:?} is a pair, which takes streams only from the peer that claimed it"
                ),
            )
        })
    }

    /// The body deadline for a stream of this connection (AF_UNIX: one of its own).
    fn stream_watch(&self) -> Arc<Watch> {
        match &self.watch {
            Some(w) => w.clone(),
            None => Watch::alone(self.ctx.limits.body_idle_timeout),
        }
    }

    /// Refuses a stream whose type byte or header did not come by `Limits::header_timeout`:
    /// LIMIT_EXCEEDED, counted as a refusal.
    async fn too_slow(&self, reader: StreamReader, send: Option<SendHalf>) {
        let r = StreamRefusal::new(Code::LimitExceeded, "header_timeout: no header in time");
        self.refuse(reader, send, r).await;
    }

    /// Stops the stream with the refusal's code and, for an exchange, answers its ERROR.
    async fn refuse(&self, mut reader: StreamReader, send: Option<SendHalf>, r: StreamRefusal) {
        let (code, message) = (r.code, r.message.as_str());
        self.ctx
            .stats
            .streams_refused
            .fetch_add(1, Ordering::Relaxed);
        tracing::debug!(code = code.name(), message, "refusing a stream");
        reader.stop(code);
        if let Some(s) = send {
            write_error_reply(s, code, message, reader.take_live()).await;
        }
    }

    /// The bound side of a handshake: the peer's HELLO, then ours, or CLOSE when they do not
    /// meet (decided by [`conclude`]). Returns what was agreed and this side's half of the
    /// control stream, or None when the connection is refused.
    async fn handshake(
        &self,
        ctl: &mut ControlReader,
        mut send: SendHalf,
        conn: Option<&Conn>,
    ) -> Option<(Agreed, SendHalf)> {
        // A dialler that never says HELLO is not waited for longer than an idle connection.
        let first = tokio::time::timeout(self.ctx.limits.idle_timeout, ctl.next())
            .await
            .unwrap_or(Ok(None));
        let mine = our_hello(&self.ctx.config, None, Flow::Listens);
        match conclude(Side::Bound, &mine, first) {
            Ok(agreed) => {
                let mut out = Vec::new();
                ControlFrame::Hello(mine).encode(&mut out);
                send.write(Bytes::from(out)).await.ok()?;
                Some((agreed, send))
            }
            Err(refused) => {
                tracing::debug!(
                    code = refused.code.name(),
                    reason = refused.reason,
                    "refusing a connection"
                );
                if refused.close_frame {
                    let mut out = Vec::new();
                    ControlFrame::Close {
                        code: refused.code,
                        reason: refused.reason.clone(),
                    }
                    .encode(&mut out);
                    let written = send.write(Bytes::from(out)).await.is_ok();
                    if let (true, None) = (written, conn) {
                        // A local socket closed with bytes it has not read is a reset at the
                        // dialler (Linux), which then loses the frame queued for it: the
                        // dialler's end is read to its close first, bounded.
                        let _ = send.finish().await;
                        let wait = CLOSE_FRAME_WAIT.min(self.ctx.limits.idle_timeout);
                        let _ = tokio::time::timeout(wait, async {
                            while let Ok(Some(_)) = ctl.next().await {}
                        })
                        .await;
                    } else if let (true, Some(_)) = (written, conn) {
                        // A QUIC close discards the stream data it has not sent: the frame, and
                        // a FIN after it, go first, until the dialler's transport acknowledges
                        // them, or the dialler would learn only the close (§3.2 step 4).
                        // Bounded, as a dialler that acknowledges nothing is not waited for.
                        if let Ok(receipt) = send.finish().await {
                            let wait = CLOSE_FRAME_WAIT.min(self.ctx.limits.idle_timeout);
                            let _ = tokio::time::timeout(wait, receipt.wait()).await;
                        }
                    }
                }
                if let Some(c) = conn {
                    c.close(refused.code, &refused.reason);
                }
                None
            }
        }
    }

    /// Reads the dialler's control frames until its half ends: GOAWAY, the Pub/Sub
    /// SUBSCRIBE/UNSUBSCRIBE requests and CHECK, each request answered in order. Returns the code the connection
    /// closes with (NO_ERROR after a FIN or CLOSE, PROTOCOL_ERROR after a malformed frame).
    async fn control(
        &self,
        ctl: &mut ControlReader,
        send: &mut SendHalf,
        tracker: &Tracker,
        subs: &mut ConnSubs,
    ) -> Result<Code, LossCause> {
        loop {
            match ctl.next().await {
                Ok(Some(ControlFrame::GoAway { opened })) => tracker.go_away(opened),
                Ok(Some(ControlFrame::Close { .. })) | Ok(None) => return Ok(Code::NoError),
                Ok(Some(
                    f @ (ControlFrame::Subscribe(_)
                    | ControlFrame::Unsubscribe(_)
                    | ControlFrame::Check(_)
                    | ControlFrame::Claim(_)),
                )) => {
                    let (request, answer) = self.request(subs, f).await;
                    let (code, reason) = answer.err().unwrap_or((Code::NoError, String::new()));
                    let mut out = Vec::new();
                    ControlFrame::Answer {
                        request,
                        code,
                        reason,
                    }
                    .encode(&mut out);
                    if send.write(Bytes::from(out)).await.is_err() {
                        return Ok(Code::NoError);
                    }
                }
                Ok(Some(f)) => tracing::trace!(?f, "control frame"),
                Err(Error::Protocol(_)) => return Ok(Code::ProtocolError),
                Err(Error::ConnectionLost(cause)) => return Err(cause),
                Err(_) => return Ok(Code::NoError),
            }
        }
    }

    /// A request frame (SUBSCRIBE, UNSUBSCRIBE, CHECK, CLAIM) carried out: its number, and
    /// done or the code and reason of its refusal. Each is answered once, in order.
    async fn request(
        &self,
        subs: &mut ConnSubs,
        f: ControlFrame,
    ) -> (u64, Result<(), (Code, String)>) {
        match f {
            ControlFrame::Subscribe(s) => (s.request, self.subscribe(subs, &s).await),
            ControlFrame::Unsubscribe(s) => {
                if let Some((hub, id)) = subs.subs.get(&s.path) {
                    hub.unsubscribe(*id, &s.filter);
                }
                (s.request, Ok(()))
            }
            // Answered from the route table as it is now: a path bound after this answer is
            // found by the streams that follow, one unbound after it refuses them
            // (PROTOCOL.md §3.1.5, §9.1).
            ControlFrame::Check(c) => {
                let route = self.endpoints.find(&c.path);
                let r =
                    by_check(c.streams, &c.path, found(&route)).map_err(|r| (r.code, r.message));
                (c.request, r)
            }
            ControlFrame::Claim(c) => (c.request, self.claim(subs, &c).await),
            _ => unreachable!("the control loop passes only requests"),
        }
    }

    /// This connection claims the endpoint at `c.path` in `c.role` (PROTOCOL.md §3.1.6).
    async fn claim(&self, subs: &mut ConnSubs, c: &PathClaim) -> Result<(), (Code, String)> {
        let route = self.endpoints.find(&c.path);
        if !subs.claims_agreed {
            return Err((
                Code::Unsupported,
                "claims are not in use on this connection (FEATURES bit 3)".into(),
            ));
        }
        by_claim(c.role, &c.path, found(&route)).map_err(|r| (r.code, r.message))?;
        let Some(reverse) = subs.claim_reverse.clone() else {
            return Err((
                Code::Unsupported,
                "a claim over a local socket needs parked reverse connections \
                 (the dialler announced none in its HELLO)"
                    .into(),
            ));
        };
        if let Reverse::Parked(pool) = &reverse {
            // Answer once its parked connections are here, so the first send finds one.
            if !pool.ready(self.ctx.limits.idle_timeout).await {
                return Err((
                    Code::Unsupported,
                    "no parked reverse connection arrived".into(),
                ));
            }
        }
        let Some(endpoint) = self.endpoints.claimable(&c.path) else {
            return Err((
                Code::UnknownEndpoint,
                format!("nothing is bound at {:?}", c.path),
            ));
        };
        if subs.claims.iter().any(|x| Arc::ptr_eq(x, &endpoint)) {
            return Err((
                Code::LimitExceeded,
                format!("this connection claimed {:?} already", c.path),
            ));
        }
        let way = Way {
            reverse,
            peer_max_header: subs.peer_max_header,
            // A claim is a producer of its own: its numbers start at 1 whoever held the
            // endpoint before.
            numbering: subs.number.then(|| Arc::new(Numbering::new())),
        };
        endpoint.claim(subs.conn_id, way)?;
        subs.claims.push(endpoint);
        Ok(())
    }

    /// Installs one filter for this connection at the publisher on `s.path`.
    async fn subscribe(&self, subs: &mut ConnSubs, s: &Subscription) -> Result<(), (Code, String)> {
        let hub = match self.endpoints.publication(&s.path) {
            Some(Ok(hub)) => hub,
            Some(Err(kind)) => {
                return Err((
                    Code::Unsupported,
                    format!("{:?} is {}, not a publisher", s.path, kind.name()),
                ))
            }
            None => {
                return Err((
                    Code::UnknownEndpoint,
                    format!("nothing is bound at {:?}", s.path),
                ))
            }
        };
        let Some(reverse) = subs.reverse.clone() else {
            return Err((
                Code::Unsupported,
                "a subscriber over a local socket must park reverse connections \
                 (it announced none in its HELLO)"
                    .into(),
            ));
        };
        if let Reverse::Parked(pool) = &reverse {
            // Answer once its parked connections are here, so the first copy finds one.
            if !pool.ready(self.ctx.limits.idle_timeout).await {
                return Err((
                    Code::Unsupported,
                    "no parked reverse connection arrived".into(),
                ));
            }
        }
        let entry = subs
            .subs
            .entry(s.path.clone())
            .or_insert_with(|| (hub.clone(), None));
        if !Arc::ptr_eq(&entry.0, &hub) {
            // The path was bound again by another publisher since: start over there.
            if let Some(id) = entry.1 {
                entry.0.remove(id);
            }
            *entry = (hub.clone(), None);
        }
        let conn = SubscriberConn {
            reverse,
            number: subs.number,
            lanes: subs.lanes,
            max_header: subs.peer_max_header,
        };
        hub.subscribe(&mut entry.1, &conn, &s.filter)
    }

    /// A parked connection of a local-socket subscriber: `04 token`, then it waits in its
    /// session's pool for a copy.
    async fn park(&self, mut reader: StreamReader, send: SendHalf) {
        let token = match reader.prefixed(control::MAX_SESSION_TOKEN).await {
            Ok(t) => t,
            Err(f) => {
                let code = f.code();
                return self
                    .refuse(
                        reader,
                        None,
                        StreamRefusal::new(code, "bad parked connection"),
                    )
                    .await;
            }
        };
        let pool = self.shared.sessions.lock().unwrap().get(&token).cloned();
        let Some(pool) = pool else {
            return self
                .refuse(
                    reader,
                    None,
                    StreamRefusal::new(Code::UnknownEndpoint, "no such session"),
                )
                .await;
        };
        let bound = self.ctx.limits.max_parked_reverse;
        // `park` hands the connection over, or returns it when the pool is full.
        if let Err(reader) = pool.park(send, reader, bound) {
            let full = StreamRefusal::new(Code::LimitExceeded, "parked pool full");
            self.refuse(reader, None, full).await;
        }
    }

    /// A local socket session: its control connection, alive until the peer goes.
    async fn session(&self, mut ctl: ControlReader, send: SendHalf, peer: Option<PeerIdentity>) {
        let Some((agreed, mut send)) = self.handshake(&mut ctl, send, None).await else {
            return;
        };
        self.ctx
            .stats
            .connections_accepted
            .fetch_add(1, Ordering::Relaxed);
        self.shared.arrivals.connected(LOCAL_SESSION, peer.as_ref());
        // A subscriber's session: where its parked connections are pooled.
        let pool = agreed.session.map(|s| {
            let pool = ParkedPool::new(s.parked);
            self.shared
                .sessions
                .lock()
                .unwrap()
                .insert(s.token.clone(), pool.clone());
            (s.token, pool)
        });
        let mut subs = ConnSubs {
            reverse: pool.as_ref().map(|(_, p)| Reverse::Parked(p.clone())),
            number: agreed.numbered,
            // Copies over AF_UNIX travel on parked connections: one each, or small ones as
            // frames of a lane on one of them, where both HELLOs set the bit for it (§3.7).
            lanes: agreed.parked_lanes,
            subs: HashMap::new(),
            conn_id: NEXT_CONN.fetch_add(1, Ordering::Relaxed),
            claims: Vec::new(),
            claim_reverse: pool.as_ref().map(|(_, p)| Reverse::Parked(p.clone())),
            claims_agreed: agreed.claims,
            peer_max_header: agreed.peer_max_header,
        };
        // A local session's streams are OS connections of their own that outlive it, and
        // the kernel already holds what they carried: GOAWAY ends the session at once.
        let tracker = Tracker::for_local_session();
        // The session ends as its peer leaves (its control connection ends, or GOAWAY), or as
        // this side closes.
        // Biased, this side's close first: once the listener closes, the dialler's answer (its
        // control connection ending) may be ready by the same poll, and a fair pick would then
        // report the close as the peer's (conformance `listener_events`, seen 1 cell in ~1800).
        let cause = tokio::select! {
            biased;
            _ = self.life.dead() => LossCause::LocallyClosed,
            _ = self.ctx.life.dead() => LossCause::LocallyClosed,
            _ = self.control(&mut ctl, &mut send, &tracker, &mut subs) => LossCause::PeerClosed,
            _ = tracker.drained() => LossCause::PeerClosed,
        };
        drop(subs);
        if let Some((token, pool)) = pool {
            self.shared.sessions.lock().unwrap().remove(&token);
            pool.close();
        }
        self.shared.arrivals.ended(LOCAL_SESSION, cause);
    }

    /// An accepted QUIC or in-process connection: handshake, then its streams.
    pub(crate) async fn connection(self, conn: Conn, life: Arc<Life>) {
        self.ctx.track(&conn);
        // The whole opening (first stream, its type byte, HELLO) is bounded like an idle
        // connection: a dialler that opens nothing is not waited for forever.
        let deadline = tokio::time::Instant::now() + self.ctx.limits.idle_timeout;
        let opening = async {
            let (send, recv) = conn.accept_bi().await?;
            let mut reader = StreamReader::new(recv);
            let ty = reader.byte().await.ok().map(StreamType::from_byte);
            Some((send, reader, ty))
        };
        let Ok(Some((send, reader, ty))) = tokio::time::timeout_at(deadline, opening).await else {
            conn.close(Code::ProtocolError, "no control stream");
            return;
        };
        if !matches!(ty, Some(Ok(StreamType::Control))) {
            conn.close(
                Code::ProtocolError,
                "the first stream is not the control stream",
            );
            return;
        }
        let mut ctl = ControlReader::with_reader(reader);
        let Some((agreed, mut send)) = self.handshake(&mut ctl, send, Some(&conn)).await else {
            return;
        };
        self.ctx
            .stats
            .connections_accepted
            .fetch_add(1, Ordering::Relaxed);
        let peer = conn.peer();
        let from = conn.from();
        tracing::debug!(?peer, from, "accepted");
        self.shared.arrivals.connected(&from, peer.as_ref());
        let conn_id = NEXT_CONN.fetch_add(1, Ordering::Relaxed);
        let this = Self {
            peer_max_header: agreed.peer_max_header,
            shares: Some(Arc::default()),
            lanes: agreed.lanes,
            watch: Some(Watch::of(conn.clone(), self.ctx.limits.body_idle_timeout)),
            conn_id: Some(conn_id),
            ..self.clone()
        };
        let tracker = Tracker::new();
        let mut subs = ConnSubs {
            reverse: Some(Reverse::Conn(conn.clone())),
            number: agreed.numbered,
            lanes: agreed.lanes,
            subs: HashMap::new(),
            conn_id,
            claims: Vec::new(),
            claim_reverse: Some(Reverse::Conn(conn.clone())),
            claims_agreed: agreed.claims,
            peer_max_header: agreed.peer_max_header,
        };
        let accept = conn.accept_each(Accept::All, |mut raw| {
            raw.live = Some(tracker.admit());
            this.admit(raw);
        });
        // How it ended: what the transport saw, unless this side closed it (then why).
        // Biased, lives first: closing a listener kills its life and then closes its QUIC
        // endpoint, which also ends the control stream and the accept loop; whichever of them
        // this task sees first, a close of this side is reported as one.
        let closed = tokio::select! {
            biased;
            _ = life.dead() => {
                conn.close(Code::GoingAway, "listener closed");
                Some(LossCause::LocallyClosed)
            }
            _ = self.ctx.life.dead() => Some(LossCause::LocallyClosed),
            _ = accept => None,
            // The dialler's half of the control stream ended (or broke): so does the connection.
            end = self.control(&mut ctl, &mut send, &tracker, &mut subs) => match end {
                Ok(code) => {
                    conn.close(code, "control stream ended");
                    Some(LossCause::PeerClosed)
                }
                // The connection under it ended (the transport says how), or the stream alone
                // was reset: either way the connection ends with it.
                Err(cause) => {
                    conn.close(Code::NoError, "control stream ended");
                    Some(cause)
                }
            },
            // The dialler said GOAWAY and everything it sent was taken.
            _ = tracker.drained() => {
                conn.close(Code::NoError, "drained");
                Some(LossCause::PeerClosed)
            }
        };
        let cause = match closed {
            Some(c) => c,
            None => conn.closed().await,
        };
        // A transport error (this side's QUIC stack refusing what the peer sent, or the peer's
        // refusing ours) ends the connection for every endpoint it served: the listener's
        // events say so, and so does its log (RELIABILITY §3: a stalled lane and quinn's
        // reassembly).
        if let LossCause::TransportError(why) = &cause {
            tracing::warn!(?peer, %why, "an accepted connection ended with a transport error");
        }
        // The subscriptions and claims end with the connection, before the listener's
        // application hears of it (a pair is claimable again by the time its `lost` event is
        // read); keep the control stream's send half until then.
        drop(subs);
        self.shared.arrivals.ended(&from, cause);
        drop(send);
    }
}
