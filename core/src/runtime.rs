//! `Runtime` (dials) and `Listener` (binds): connections, the HELLO handshake, the per-path
//! dispatch of incoming streams, receipts kept for `drain`, and the counters.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use tracing::Instrument;

use crate::address::{Address, Target};
use crate::config::{Limits, RuntimeConfig};
use crate::error::{Error, LossCause, Result};
use crate::security::trust::{ClientTls, ServerTls};
use crate::stream::{write_error_reply, Exchange, IncomingMeta, IncomingTransfer};
use crate::transport::reader::StreamReader;
use crate::transport::{
    inproc, quic, unix, Accept, Conn, IncomingRaw, Life, LiveStream, PeerIdentity, PendingReceipt,
    Receipt, RecvHalf, SendHalf, StreamCount, StreamError,
};
use crate::wire::{Code, ControlFrame, GuaranteeSet, Header, Hello, Session, StreamType};

/// Counters a user can read without a metrics stack. Monotonic since the runtime started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counters {
    /// Streams this runtime opened (transfers and exchanges).
    pub streams_opened: u64,
    /// Streams it accepted and dispatched to an endpoint.
    pub streams_accepted: u64,
    /// Streams it refused (unknown path, unsupported, bad header, ...).
    pub streams_refused: u64,
    /// Body bytes written.
    pub bytes_sent: u64,
    /// Body bytes read.
    pub bytes_received: u64,
    /// Connections dialled.
    pub connections_dialled: u64,
    /// Connections accepted.
    pub connections_accepted: u64,
    /// Receipts of finished transfers nobody awaited that resolved: delivered.
    pub receipts_delivered: u64,
    /// ... that resolved with a refusal or a loss.
    pub receipts_failed: u64,
    /// Pub/Sub copies queued for subscribers by this runtime's publishers.
    pub copies_published: u64,
    /// Messages written as frames on message lanes (each also counts in `bytes_sent`).
    pub lane_messages_sent: u64,
    /// Messages read from message lanes and handed to an endpoint.
    pub lane_messages_received: u64,
    /// Messages queued on a lane that ended before writing them (a refusal or a loss).
    pub lane_messages_lost: u64,
}

#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) streams_opened: AtomicU64,
    streams_accepted: AtomicU64,
    streams_refused: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    connections_dialled: AtomicU64,
    connections_accepted: AtomicU64,
    pub(crate) copies_published: AtomicU64,
    pub(crate) lane_messages_sent: AtomicU64,
    pub(crate) lane_messages_received: AtomicU64,
    pub(crate) lane_messages_lost: AtomicU64,
}

impl Stats {
    pub(crate) fn add_sent(&self, n: u64) {
        self.bytes_sent.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn add_received(&self, n: u64) {
        self.bytes_received.fetch_add(n, Ordering::Relaxed);
    }
}

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

    fn count(&self, r: std::result::Result<(), StreamError>, n: u64) {
        match r {
            Ok(()) => self.delivered.fetch_add(n, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(n, Ordering::Relaxed),
        };
    }

    /// Waits for every parked receipt until `deadline`; returns how many are still pending.
    async fn settle(&self, deadline: Duration) -> u64 {
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
}

/// The streams a peer opened on an accepted connection that are still in use here, and the
/// count its GOAWAY announced: when every announced stream was taken and finished, the
/// connection closes (a graceful drain, PROTOCOL.md §3.4).
#[derive(Default)]
struct Tracker {
    accepted: AtomicU64,
    live: AtomicU64,
    goaway: AtomicU64,
    changed: tokio::sync::Notify,
}

impl StreamCount for Tracker {
    fn released(&self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    fn hold_until_received(&self) -> bool {
        // Until the peer said GOAWAY nothing waits for the connection's streams to end.
        self.goaway.load(Ordering::Acquire) != u64::MAX
    }
}

impl Tracker {
    fn new() -> Arc<Tracker> {
        let t = Tracker::default();
        t.goaway.store(u64::MAX, Ordering::Relaxed);
        Arc::new(t)
    }

    fn admit(self: &Arc<Self>) -> LiveStream {
        self.live.fetch_add(1, Ordering::AcqRel);
        self.accepted.fetch_add(1, Ordering::AcqRel);
        LiveStream::new(self.clone())
    }

    fn go_away(&self, opened: u64) {
        self.goaway.store(opened, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// Resolves once the peer said GOAWAY and every stream it opened was taken and dropped.
    async fn drained(&self) {
        loop {
            let n = self.changed.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            let goaway = self.goaway.load(Ordering::Acquire);
            if goaway != u64::MAX
                && self.accepted.load(Ordering::Acquire) >= goaway
                && self.live.load(Ordering::Acquire) == 0
            {
                return;
            }
            n.await;
        }
    }
}

/// What a drain achieved: counts, not a promise (PATTERNS §1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Finished transfers whose receipt nobody awaited and whose peer's transport
    /// acknowledged them, over the runtime's life up to the end of the drain.
    pub delivered: u64,
    /// Finished transfers still unacknowledged at the deadline, cut short by the close.
    pub outstanding: u64,
}

const OPEN: u8 = 0;
const DRAINING: u8 = 1;
const CLOSED: u8 = 2;

/// State shared by a runtime, its listeners, endpoints and streams.
pub(crate) struct Shared {
    pub(crate) config: RuntimeConfig,
    pub(crate) limits: Limits,
    pub(crate) client_tls: ClientTls,
    pub(crate) stats: Stats,
    pub(crate) receipts: Receipts,
    quic_client: tokio::sync::OnceCell<quic::Client>,
    // Strong: a finished transfer needs no local handle, only its connection, and the pool is
    // what keeps it (PATTERNS §1.1). Connections end with drain/shutdown or the peer.
    pool: Mutex<HashMap<String, Arc<Link>>>,
    conns: Mutex<Vec<Conn>>,
    state: AtomicU8,
    /// Killed at shutdown: accept loops and control readers end.
    pub(crate) life: Arc<Life>,
    /// The runtime the connections run on, for work started from a drop.
    runtime: std::sync::OnceLock<tokio::runtime::Handle>,
    /// Every listener's life and routes: at shutdown the lives are killed (local socket streams
    /// watch theirs) and the routes dropped (which ends every endpoint's queue).
    listeners: Mutex<Vec<(std::sync::Weak<Life>, std::sync::Weak<Routes>)>>,
}

impl Shared {
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.state.load(Ordering::Acquire) == OPEN {
            Ok(())
        } else {
            Err(Error::Closed)
        }
    }

    /// This runtime's HELLO: it offers every level it implements and requires its
    /// configuration's (PROTOCOL.md §3.3).
    fn hello(&self, session: Option<&Session>) -> Hello {
        Hello {
            max_header_size: self.limits.max_header_size,
            features: if self.config.lane_max_message > 0 {
                crate::wire::lane_frame::FEATURE_LANES
            } else {
                0
            },
            offered: GuaranteeSet {
                ordering: crate::wire::Ordering::Reassemble,
                other: Vec::new(),
            },
            required: self.config.guarantees.clone(),
            session: session.map(Session::encode),
        }
    }

    fn track(&self, conn: &Conn) {
        let mut c = self.conns.lock().unwrap();
        if c.len() % 32 == 31 {
            c.retain(|c| c.loss().is_none());
        }
        c.push(conn.clone());
    }

    /// An endpoint let go of `link`. When no other endpoint holds it, it leaves the pool and
    /// goes away gracefully: GOAWAY, and the listener closes once it has taken every stream,
    /// so what was finished on it still arrives (PATTERNS §1.1).
    pub(crate) fn release(&self, address: &Address, link: Arc<Link>) {
        let mut pool = self.pool.lock().unwrap();
        let key = address.to_string();
        // Held by the pool and by `link` only: nobody else sends on it.
        if Arc::strong_count(&link) == 2 && pool.get(&key).is_some_and(|l| Arc::ptr_eq(l, &link)) {
            pool.remove(&key);
            drop(pool);
            if let Some(rt) = self.runtime.get() {
                let wait = self.limits.idle_timeout;
                rt.spawn(async move {
                    link.close_lane().await;
                    link.go_away().await;
                    // Keep the connection (and its control stream) until the listener closes
                    // it: dropping the last handle would close it under unread streams.
                    let _ = tokio::time::timeout(wait, link.conn.closed()).await;
                });
            }
        }
    }

    /// Bounds a wait for a stream slot by `send_timeout`.
    pub(crate) async fn within<T>(&self, f: impl Future<Output = Result<T>>) -> Result<T> {
        match self.config.send_timeout {
            Some(d) => tokio::time::timeout(d, f)
                .await
                .map_err(|_| Error::Timeout)?,
            None => f.await,
        }
    }

    async fn quic_client(&self) -> Result<&quic::Client> {
        self.quic_client
            .get_or_try_init(|| async {
                quic::client_endpoint(self.config.udp_buffer, &self.limits)
            })
            .await
    }

    /// The live connection for `address` (one per dialled path), dialling it if needed.
    pub(crate) async fn link(self: &Arc<Self>, address: &Address) -> Result<Arc<Link>> {
        self.check_open()?;
        let _ = self.runtime.set(tokio::runtime::Handle::current());
        let path: Arc<str> = address.endpoint_path()?.into();
        let key = address.to_string();
        if let Some(l) = self.pool.lock().unwrap().get(&key).cloned() {
            if l.conn.loss().is_none() {
                return Ok(l);
            }
        }
        let span = tracing::debug_span!("dial", %address);
        let link = self.dial(address, path, None).instrument(span).await?;
        self.pool.lock().unwrap().insert(key, link.clone());
        Ok(link)
    }

    /// A connection of its own for a subscriber (never pooled: a subscriber is what its
    /// publisher counts and bounds). Over AF_UNIX it announces the reverse connections it
    /// parks (PROTOCOL.md §3.7).
    pub(crate) async fn dial_subscriber(self: &Arc<Self>, address: &Address) -> Result<Arc<Link>> {
        self.check_open()?;
        let _ = self.runtime.set(tokio::runtime::Handle::current());
        let path: Arc<str> = address.endpoint_path()?.into();
        let session = match address.target() {
            Target::Unix(_) if self.limits.max_parked_reverse > 0 => Some(Session {
                // Parked connections are streams: leave one for the rest.
                parked: (self.limits.max_parked_reverse as u64)
                    .min(self.limits.max_local_streams.saturating_sub(1))
                    .max(1),
                token: Bytes::copy_from_slice(&rand::random::<[u8; 16]>()),
            }),
            _ => None,
        };
        let span = tracing::debug_span!("dial", %address, subscriber = true);
        self.dial(address, path, session).instrument(span).await
    }

    async fn dial(
        self: &Arc<Self>,
        address: &Address,
        path: Arc<str>,
        session: Option<Session>,
    ) -> Result<Arc<Link>> {
        let (conn, mut send, recv) = match address.target() {
            Target::Quic { host, port } => {
                let to = quic::resolve(host, *port).await?;
                let ep = self.quic_client().await?;
                let name = crate::security::tls::server_name(
                    &host.to_string(),
                    &self.client_tls,
                    address.pin().copied(),
                );
                let conn = ep
                    .connect(
                        to,
                        &name,
                        address.pin().copied(),
                        &self.client_tls,
                        &self.limits,
                    )
                    .await?;
                let (s, r) = conn.open_bi().await?;
                (conn, s, r)
            }
            Target::Inproc(name) => {
                let conn = Conn::Inproc(inproc::connect(name, &self.limits)?);
                let (s, r) = conn.open_bi().await?;
                (conn, s, r)
            }
            Target::Unix(t) => {
                let (c, s, r) = unix::connect(t, &self.limits, self.life.clone()).await?;
                (Conn::Unix(c), s, r)
            }
            Target::Pipe(_) => return Err(pipe_unsupported()),
            #[allow(unreachable_patterns)]
            _ => return Err(Error::Unsupported(format!("transport of {address}"))),
        };
        self.stats
            .connections_dialled
            .fetch_add(1, Ordering::Relaxed);
        self.track(&conn);
        // HELLO: ours first, then the peer's (PROTOCOL.md §3.2).
        let mut out = vec![StreamType::Control.to_byte()];
        let mine = self.hello(session.as_ref());
        ControlFrame::Hello(mine.clone()).encode(&mut out);
        if let Err(e) = send.write(Bytes::from(out)).await {
            return Err(closed_error(&conn, e.into_write_error("")));
        }
        let mut ctl = ControlReader::new(recv);
        let theirs = match ctl.next().await {
            Ok(Some(ControlFrame::Hello(h))) => h,
            Ok(Some(ControlFrame::Close { code, reason })) => {
                conn.close(Code::NoError, "");
                return Err(code.into_error("", &reason));
            }
            Ok(_) => {
                conn.close(Code::ProtocolError, "expected HELLO");
                return Err(Error::Protocol(
                    "the peer's first control frame is not HELLO".into(),
                ));
            }
            Err(e) => {
                // Whatever the listener sent (a malformed frame, a version we do not speak),
                // this connection cannot be used: close it with the reason.
                let e = closed_error(&conn, e);
                let code = match &e {
                    Error::NegotiationFailed(_) => Code::NegotiationFailed,
                    Error::Protocol(_) => Code::ProtocolError,
                    _ => Code::NoError,
                };
                conn.close(code, "handshake failed");
                return Err(e);
            }
        };
        let agreed = match mine.negotiate(&theirs) {
            Ok(a) => a,
            Err(why) => {
                conn.close(Code::NegotiationFailed, &why);
                return Err(Error::NegotiationFailed(why));
            }
        };
        let peer = conn.peer();
        tracing::debug!(?peer, ?agreed, "connected");
        let link = Arc::new(Link {
            conn: conn.clone(),
            path,
            peer,
            peer_max_header: theirs.max_header_size,
            control: tokio::sync::Mutex::new(send),
            opened: Arc::new(AtomicU64::new(0)),
            plain_heads: Default::default(),
            lanes: mine.features & theirs.features & crate::wire::lane_frame::FEATURE_LANES != 0,
            lane: Mutex::new(None),
            lane_gen: AtomicU64::new(0),
            session,
            answers: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            ended: AtomicBool::new(false),
        });
        // The control stream ends with the connection; over a local socket it is how the loss
        // is learned. Weak: the pool's count of a link's users must not include this task.
        let life = self.life.clone();
        let weak = Arc::downgrade(&link);
        tokio::spawn(async move {
            let answers = async {
                loop {
                    match ctl.next().await {
                        Ok(Some(ControlFrame::Answer {
                            request,
                            code,
                            reason,
                        })) => {
                            if let Some(l) = weak.upgrade() {
                                let tx = l.answers.lock().unwrap().remove(&request);
                                if let Some(tx) = tx {
                                    let _ = tx.send((code, reason));
                                }
                            }
                        }
                        Ok(Some(ControlFrame::Close { .. })) | Ok(None) => return Code::NoError,
                        Ok(Some(_)) => {}
                        Err(Error::Protocol(_)) => return Code::ProtocolError,
                        Err(_) => return Code::NoError,
                    }
                }
            };
            tokio::select! {
                _ = conn.closed() => {}
                code = answers => {
                    // The listener's half of the control stream ended: so does the connection,
                    // and the peer ended it.
                    conn.ended_by_peer(code);
                }
                _ = life.dead() => {}
            }
            if let Some(l) = weak.upgrade() {
                l.ended.store(true, Ordering::Release);
            }
        });
        Ok(link)
    }

    /// Closes every connection and stops every accept loop.
    fn close_all(&self) {
        self.state.store(CLOSED, Ordering::Release);
        // Connections first: a task woken by the runtime's end must find its connection
        // already closed, so its peer learns GOING_AWAY, not a half-closed control stream.
        for c in self.conns.lock().unwrap().drain(..) {
            c.close(Code::GoingAway, "shutdown");
        }
        self.life.kill(LossCause::LocallyClosed);
        for (l, r) in self.listeners.lock().unwrap().drain(..) {
            if let Some(l) = l.upgrade() {
                l.kill(LossCause::LocallyClosed);
            }
            if let Some(r) = r.upgrade() {
                r.write().unwrap().clear();
            }
        }
        self.pool.lock().unwrap().clear();
        if let Some(ep) = self.quic_client.get() {
            ep.close(Code::GoingAway, b"shutdown");
        }
    }
}

fn pipe_unsupported() -> Error {
    Error::Unsupported(
        "named pipes (weida+pipe://) exist only on Windows; use weida+unix:// here".into(),
    )
}

/// The error a failed handshake read means: the peer's close reason when it closed.
fn closed_error(conn: &Conn, fallback: Error) -> Error {
    if let Some((code, text)) = conn.peer_close() {
        if code == Code::NegotiationFailed || code == Code::ProtocolError {
            return code.into_error("", &text);
        }
    }
    fallback
}

/// A dialled connection to one path of one peer.
pub(crate) struct Link {
    pub(crate) conn: Conn,
    pub(crate) path: Arc<str>,
    pub(crate) peer: Option<PeerIdentity>,
    /// The largest header the peer accepts.
    pub(crate) peer_max_header: u64,
    // Kept open for the connection's life: closing it would read as going away; GOAWAY (and
    // later SUBSCRIBE) frames ride it.
    control: tokio::sync::Mutex<SendHalf>,
    /// Streams opened on this connection, announced in GOAWAY (a lane's writer counts its own).
    opened: Arc<AtomicU64>,
    /// Both HELLOs offered message lanes.
    pub(crate) lanes: bool,
    /// The lane toward this link's path, once a small message opened it.
    lane: Mutex<Option<crate::lane::Lane>>,
    /// Changes, under `lane`'s lock, whenever `lane` does: a sender's cached handle
    /// ([`LaneCache`]) is the current lane while its generation matches.
    lane_gen: AtomicU64,
    /// The encoded head of a transfer and of an exchange that carry only the path.
    plain_heads: [std::sync::OnceLock<Bytes>; 2],
    /// A local-socket subscriber's reverse-connection session.
    pub(crate) session: Option<Session>,
    /// SUBSCRIBE/UNSUBSCRIBE requests waiting for their ANSWER.
    answers: Mutex<HashMap<u64, tokio::sync::oneshot::Sender<(Code, String)>>>,
    next_request: AtomicU64,
    /// Set by the link's task once it saw the connection end ([`Link::ended`]).
    ended: AtomicBool,
}

impl Link {
    /// Why the connection ended, once this link's task saw it end; None before. A flag, read
    /// without the lock quinn takes for `close_reason`: a sender on another thread (a
    /// binding's) contends with the I/O thread for that lock, and on the Node sender's profile
    /// the wait was ~10 % of each small send. It lags the transport by one wakeup of the I/O
    /// thread: a `try_send` in that window goes to the lane of a connection already lost, and
    /// is lost with what the lane had not delivered, as at-most-once allows (PATTERNS §1.11).
    /// The waiting paths ([`PeerSet::pick`]) and the count of live links ask the transport
    /// itself ([`Link::loss`]).
    pub(crate) fn ended(&self) -> Option<LossCause> {
        if !self.ended.load(Ordering::Acquire) {
            return None;
        }
        Some(self.conn.loss().unwrap_or(LossCause::PeerClosed))
    }

    /// Why the connection ended, asking the transport; a loss found here sets the flag
    /// [`Link::ended`] reads, so what a caller was told (a send's ConnectionLost) every later
    /// check agrees with.
    pub(crate) fn loss(&self) -> Option<LossCause> {
        let loss = self.conn.loss();
        if loss.is_some() {
            self.ended.store(true, Ordering::Release);
        }
        loss
    }

    /// The type byte and DATA header of a new stream. A header naming only the path is the
    /// same bytes every time, so it is encoded once per link and shared.
    fn head(&self, ty: StreamType, mut header: Header) -> Result<Bytes> {
        // The path is this link's, set below whatever the caller put there.
        header.path = None;
        let plain = header.is_empty();
        let slot = match ty {
            StreamType::Transfer => Some(&self.plain_heads[0]),
            StreamType::Exchange => Some(&self.plain_heads[1]),
            _ => None,
        };
        if let (true, Some(slot)) = (plain, slot) {
            if let Some(b) = slot.get() {
                return Ok(b.clone());
            }
        }
        header.path = Some(self.path.to_string());
        let mut head = Vec::with_capacity(32 + self.path.len());
        head.push(ty.to_byte());
        header.encode(&mut head);
        // The bound counts what the length prefix counts (PROTOCOL.md §5.3), as the peer does.
        let counted = head.len() - 1 - crate::wire::varint::len_from_first_byte(head[1]);
        if counted as u64 > self.peer_max_header {
            return Err(Error::limit(
                crate::error::Limit::HeaderSize,
                format!(
                    "header of {counted} bytes, the peer accepts {}",
                    self.peer_max_header
                ),
            ));
        }
        let head = Bytes::from(head);
        if let (true, Some(slot)) = (plain, slot) {
            let _ = slot.set(head.clone());
        }
        Ok(head)
    }

    /// Sends a whole message as a frame on this link's lane (started on first use). A lane that
    /// ended early reports why to one sender, then is replaced. Waits while the lane's queue is
    /// full. Cancel-safe.
    pub(crate) async fn lane_send(
        &self,
        shared: &Arc<Shared>,
        header: Header,
        body: Bytes,
    ) -> Result<()> {
        shared.check_open()?;
        let head = if header.is_empty() {
            crate::lane::FrameHead::plain(body.len())
        } else {
            let mut head = Vec::with_capacity(16);
            crate::wire::lane_frame::encode_frame_head(&header, body.len(), &mut head);
            crate::lane::FrameHead::Encoded(head)
        };
        let counted = match &head {
            // One version byte: within any bound a HELLO may announce.
            crate::lane::FrameHead::Inline(..) => 1,
            crate::lane::FrameHead::Encoded(h) => {
                h.len()
                    - crate::wire::varint::len(body.len() as u64)
                    - crate::wire::varint::len_from_first_byte(h[0])
            }
        };
        if counted as u64 > self.peer_max_header {
            return Err(Error::limit(
                crate::error::Limit::HeaderSize,
                format!(
                    "header of {counted} bytes, the peer accepts {}",
                    self.peer_max_header
                ),
            ));
        }
        let lane = {
            let mut slot = self.lane.lock().unwrap();
            if let Some(l) = slot.as_ref() {
                if let Some(e) = l.take_failure() {
                    self.set_lane(&mut slot, None);
                    return Err(e);
                }
            }
            if slot.is_none() {
                let new = self.start_lane(shared);
                self.set_lane(&mut slot, Some(new));
            }
            let lane = slot.as_ref().expect("set above");
            match lane.try_send(head, body) {
                Ok(()) => return Ok(()),
                Err(crate::lane::TrySend::Ended(e)) => {
                    self.set_lane(&mut slot, None);
                    return Err(e);
                }
                Err(crate::lane::TrySend::Full(head, body)) => (lane.clone(), head, body),
            }
        };
        let (lane, head, body) = lane;
        // Bounded like a wait for a stream slot (`send_timeout`).
        let r = shared.within(lane.send(head, body)).await;
        if r.is_err() {
            self.forget_lane(&lane);
        }
        r
    }

    /// Replaces the lane (under its lock), so every cached handle is stale.
    fn set_lane(&self, slot: &mut Option<crate::lane::Lane>, lane: Option<crate::lane::Lane>) {
        *slot = lane;
        self.lane_gen.fetch_add(1, Ordering::AcqRel);
    }

    /// Drops `lane` from the link if it is still the current one: the next send starts anew.
    fn forget_lane(&self, lane: &crate::lane::Lane) {
        let mut slot = self.lane.lock().unwrap();
        if slot.as_ref().is_some_and(|l| l.same(lane)) {
            self.set_lane(&mut slot, None);
        }
    }

    /// Queues a whole message with no header field on this link's lane if that can be done
    /// now: `Ok(None)` queued, `Ok(Some(body))` not (no lane is open, its queue is full, or
    /// it failed: [`Link::lane_send`] reports that and starts a new one), or the error of a
    /// lane that ended under this send. Never starts a lane: that spawns its writer, which a
    /// synchronous caller outside the runtime could not do. The caller checked `lanes` and the
    /// size. `cache` is the caller's handle to the lane, kept beside its pick of this link: a
    /// send that finds it current takes no lock of the link's (on a 64-byte Push/Pull the
    /// link's lock was a tenth of the sender's time).
    pub(crate) fn lane_try_send(
        &self,
        cache: &mut LaneCache,
        body: Bytes,
    ) -> Result<Option<Bytes>> {
        let current = cache.as_ref().is_some_and(|(l, generation)| {
            *generation == self.lane_gen.load(Ordering::Acquire) && !l.failing()
        });
        if !current {
            let slot = self.lane.lock().unwrap();
            *cache = slot
                .as_ref()
                .filter(|l| !l.failing())
                .map(|l| (l.clone(), self.lane_gen.load(Ordering::Acquire)));
        }
        let Some((lane, _)) = cache.as_ref() else {
            return Ok(Some(body));
        };
        match lane.try_send(crate::lane::FrameHead::plain(body.len()), body) {
            Ok(()) => Ok(None),
            Err(crate::lane::TrySend::Full(_, body)) => Ok(Some(body)),
            Err(crate::lane::TrySend::Ended(e)) => {
                let (lane, _) = cache.take().expect("matched above");
                self.forget_lane(&lane);
                Err(e)
            }
        }
    }

    fn start_lane(&self, shared: &Arc<Shared>) -> crate::lane::Lane {
        let mut h = vec![StreamType::Lane.to_byte()];
        Header::for_path(&self.path).encode(&mut h);
        crate::lane::Lane::start(
            shared.clone(),
            self.conn.clone(),
            self.path.clone(),
            Bytes::from(h),
            self.opened.clone(),
        )
    }

    /// Finishes the lane, if any, once what it queued is written (drain, release).
    pub(crate) async fn close_lane(&self) {
        let lane = {
            let mut slot = self.lane.lock().unwrap();
            let lane = slot.take();
            self.set_lane(&mut slot, None);
            lane
        };
        if let Some(l) = lane {
            l.close().await;
        }
    }

    /// Sends SUBSCRIBE (or UNSUBSCRIBE) for `filter` on this link's path and waits for the
    /// publisher's ANSWER, or the end of the connection.
    pub(crate) async fn ask(&self, subscribe: bool, filter: &str) -> Result<()> {
        let request = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.answers.lock().unwrap().insert(request, tx);
        let s = crate::wire::Subscription {
            request,
            path: self.path.to_string(),
            filter: filter.to_string(),
        };
        let mut out = Vec::new();
        if subscribe {
            ControlFrame::Subscribe(s).encode(&mut out);
        } else {
            ControlFrame::Unsubscribe(s).encode(&mut out);
        }
        let lost = || Error::ConnectionLost(self.conn.loss().unwrap_or(LossCause::PeerClosed));
        let written = self.control.lock().await.write(Bytes::from(out)).await;
        if written.is_err() {
            self.answers.lock().unwrap().remove(&request);
            return Err(lost());
        }
        let answer = tokio::select! {
            a = rx => a.ok(),
            c = self.conn.closed() => return Err(Error::ConnectionLost(c)),
        };
        match answer {
            Some((Code::NoError, _)) => Ok(()),
            // The one bound a publisher answers LIMIT_EXCEEDED for.
            Some((Code::LimitExceeded, reason)) if subscribe => {
                Err(Error::limit(crate::error::Limit::Filters, reason))
            }
            Some((code, reason)) => Err(code.into_error(&self.path, &reason)),
            None => Err(lost()),
        }
    }

    /// Announces that no more streams come, and how many did.
    async fn go_away(&self) {
        let mut out = Vec::new();
        ControlFrame::GoAway {
            opened: self.opened.load(Ordering::Acquire),
        }
        .encode(&mut out);
        let _ = self.control.lock().await.write(Bytes::from(out)).await;
    }

    /// Opens a stream of `ty` and writes its type byte and header, with `body` in the same
    /// write when given. Waits for the peer's stream budget, bounded by `send_timeout`.
    pub(crate) async fn open(
        &self,
        shared: &Shared,
        ty: StreamType,
        header: Header,
        body: Option<Bytes>,
    ) -> Result<(SendHalf, Option<RecvHalf>)> {
        shared.check_open()?;
        let head = self.head(ty, header)?;
        let (mut send, recv) = match ty {
            StreamType::Exchange => {
                let (s, r) = shared.within(self.conn.open_bi()).await?;
                (s, Some(r))
            }
            _ => (shared.within(self.conn.open_uni()).await?, None),
        };
        shared.stats.streams_opened.fetch_add(1, Ordering::Relaxed);
        self.opened.fetch_add(1, Ordering::AcqRel);
        let r = match body {
            Some(b) => {
                let n = b.len() as u64;
                let r = send.write_all(&mut [head, b]).await;
                if r.is_ok() {
                    shared.stats.add_sent(n);
                }
                r
            }
            None => send.write(head).await,
        };
        if let Err(e) = r {
            return Err(e.into_write_error(&self.path));
        }
        Ok((send, recv))
    }
}

/// The links a dialling endpoint sends to, picked round-robin per message.
#[derive(Default)]
pub(crate) struct PeerSet {
    links: Mutex<Links>,
}

/// The links and whose turn is next: one lock for both, so a pick is one lock and no other
/// atomic operation.
#[derive(Default)]
struct Links {
    all: Vec<Entry>,
    next: usize,
}

struct Entry {
    address: Address,
    link: Arc<Link>,
    /// This endpoint's handle to the link's lane ([`Link::lane_try_send`]).
    lane: LaneCache,
}

/// A sender's handle to a link's lane and the generation it was current at.
pub(crate) type LaneCache = Option<(crate::lane::Lane, u64)>;

impl PeerSet {
    pub(crate) fn add(&self, address: Address, link: Arc<Link>) {
        let l = &mut self.links.lock().unwrap().all;
        l.retain(|e| e.address != address);
        l.push(Entry {
            address,
            link,
            lane: None,
        });
    }

    pub(crate) fn remove(&self, address: &Address) -> Option<Arc<Link>> {
        let l = &mut self.links.lock().unwrap().all;
        let i = l.iter().position(|e| &e.address == address)?;
        Some(l.swap_remove(i).link)
    }

    pub(crate) fn take_all(&self) -> Vec<(Address, Arc<Link>)> {
        let all = std::mem::take(&mut self.links.lock().unwrap().all);
        all.into_iter().map(|e| (e.address, e.link)).collect()
    }

    /// Live connections.
    pub(crate) fn live(&self) -> usize {
        self.links
            .lock()
            .unwrap()
            .all
            .iter()
            .filter(|e| e.link.loss().is_none())
            .count()
    }

    /// Offers the next live link, with this set's handle to its lane, round-robin, to `f`;
    /// the turn passes on only if `f` took it (returned Some), so a caller that then falls
    /// back to [`PeerSet::pick`] picks the same link. Errors as `pick` does.
    pub(crate) fn try_pick<R>(
        &self,
        f: impl FnOnce(&Arc<Link>, &mut LaneCache) -> Option<R>,
    ) -> Result<Option<R>> {
        let mut guard = self.links.lock().unwrap();
        let Links { all: l, next } = &mut *guard;
        if l.is_empty() {
            return Err(Error::NotConnected);
        }
        let start = *next;
        let mut last = None;
        let n = l.len();
        for i in 0..n {
            let e = &mut l[(start + i) % n];
            match e.link.ended() {
                None => {
                    let r = f(&e.link, &mut e.lane);
                    if r.is_some() {
                        *next = start.wrapping_add(i + 1);
                    }
                    return Ok(r);
                }
                Some(c) => last = Some(c),
            }
        }
        Err(Error::ConnectionLost(last.unwrap_or(LossCause::PeerClosed)))
    }

    /// The next live link, round-robin. `NotConnected` when nothing was ever connected; the
    /// last loss when every connection is gone.
    pub(crate) fn pick(&self) -> Result<Arc<Link>> {
        let mut guard = self.links.lock().unwrap();
        let Links { all: l, next } = &mut *guard;
        if l.is_empty() {
            return Err(Error::NotConnected);
        }
        let start = *next;
        *next = start.wrapping_add(1);
        let mut last = None;
        for i in 0..l.len() {
            let link = &l[(start + i) % l.len()].link;
            match link.loss() {
                None => return Ok(link.clone()),
                Some(c) => last = Some(c),
            }
        }
        Err(Error::ConnectionLost(last.unwrap_or(LossCause::PeerClosed)))
    }
}

/// Reads control frames from a control stream.
struct ControlReader {
    reader: StreamReader,
    buf: Vec<u8>,
}

impl ControlReader {
    fn new(recv: RecvHalf) -> ControlReader {
        ControlReader {
            reader: StreamReader::new(recv),
            buf: Vec::new(),
        }
    }

    fn with_reader(reader: StreamReader) -> ControlReader {
        ControlReader {
            reader,
            buf: Vec::new(),
        }
    }

    async fn next(&mut self) -> Result<Option<ControlFrame>> {
        loop {
            match ControlFrame::decode(&self.buf) {
                Ok(Some((f, used))) => {
                    self.buf.drain(..used);
                    return Ok(Some(f));
                }
                Ok(None) => {}
                // A version this side does not speak is a failed negotiation, not a bad frame.
                Err(crate::wire::DecodeError::Unsupported(what)) => {
                    return Err(Error::NegotiationFailed(format!("unsupported {what}")))
                }
                Err(e) => return Err(Error::Protocol(format!("control stream: {e}"))),
            }
            match self.reader.chunk(64 * 1024).await {
                Ok(Some(b)) => self.buf.extend_from_slice(&b),
                Ok(None) => return Ok(None),
                Err(e) => return Err(e.into_read_error()),
            }
        }
    }
}

/// What a path is bound to, and which streams it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteKind {
    /// Raw streams: both kinds.
    Acceptor,
    /// Req/Rep: exchanges only.
    Replier,
    /// Push/Pull: one-way transfers only.
    Puller,
    /// Pub/Sub: takes no stream; subscribers reach it with SUBSCRIBE.
    Publisher,
}

impl RouteKind {
    fn takes(self, ty: StreamType) -> bool {
        matches!(
            (self, ty),
            (
                RouteKind::Acceptor,
                StreamType::Transfer | StreamType::Exchange
            ) | (RouteKind::Replier, StreamType::Exchange)
                | (RouteKind::Puller, StreamType::Transfer)
                | (RouteKind::Acceptor | RouteKind::Puller, StreamType::Lane)
        )
    }

    fn name(self) -> &'static str {
        match self {
            RouteKind::Acceptor => "an acceptor",
            RouteKind::Replier => "a replier",
            RouteKind::Puller => "a puller",
            RouteKind::Publisher => "a publisher",
        }
    }
}

/// A stream dispatched to a bound endpoint.
#[derive(Debug)]
pub enum Incoming {
    /// A one-way transfer.
    Stream(IncomingTransfer),
    /// An exchange: a request and its reply half.
    Exchange(Exchange),
}

/// What an endpoint's queue holds: a stream, or a whole message that arrived on a lane.
pub(crate) enum Queued {
    /// Boxed: a stream's handles are larger than a whole message, and every item of the queue
    /// is moved at the size of the largest (lane messages are the many).
    Incoming(Box<Incoming>),
    Message(crate::stream::Message),
    /// A lane frame the endpoint refused (above `max_collected_body`): the receive it reaches
    /// fails, as it would have for a stream of its own, and the endpoint goes on.
    Refused(Box<Error>),
}

/// Lane frames a reader hands to its endpoint's queue at once, at most.
const LANE_BATCH: usize = 64;

/// The endpoints of one listener, by path.
type Routes = RwLock<HashMap<String, Route>>;

struct Route {
    kind: RouteKind,
    /// The endpoint's queue (every kind but a publisher).
    tx: Option<crate::queue::Sender<Queued>>,
    /// A publisher's subscribers.
    hub: Option<Arc<crate::hub::Hub>>,
    id: u64,
}

/// A bound path: the route goes when its endpoint drops (or closes).
pub(crate) struct RouteGuard {
    routes: Arc<RwLock<HashMap<String, Route>>>,
    path: String,
    id: u64,
    // An endpoint keeps its listener bound: dropping the `Listener` handle while endpoints
    // live does not silently end them (`Listener::close` does, explicitly).
    _listener: Arc<ListenerInner>,
}

impl RouteGuard {
    /// Unbinds the path, if it is still this endpoint's (it may have been bound again).
    pub(crate) fn close(&self) {
        let mut routes = self.routes.write().unwrap();
        if routes.get(&self.path).is_some_and(|r| r.id == self.id) {
            routes.remove(&self.path);
        }
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.close();
    }
}

/// The receiving side of a bound endpoint: its queue, and its route that goes when it drops.
pub(crate) struct Inbox {
    pub(crate) rx: tokio::sync::Mutex<InboxRx>,
    route: RouteGuard,
    pub(crate) shared: Arc<Shared>,
    pub(crate) address: Address,
    /// Messages handed back undelivered (a binding whose caller cancelled as the message
    /// arrived), served before anything else.
    returned: Mutex<std::collections::VecDeque<crate::stream::Message>>,
    /// Wakes a receive waiting while a message is handed back.
    pub(crate) handed_back: tokio::sync::Notify,
    /// Takes a whole message off the queue without the `rx` lock: a tokio lock's release
    /// takes its waiter list's lock too, and on a Push/Pull of small messages the `rx` lock
    /// per receive was about 7 % of the whole pipeline's time.
    ready: crate::queue::Taker<Queued>,
    /// `rx` holds what comes before the queue (a partly read message, a deferred error): set
    /// under its lock by [`Inbox::settle`].
    rx_first: AtomicBool,
    /// `returned` is not empty: set under its lock.
    returned_first: AtomicBool,
}

/// An endpoint's queue, a message a cancelled `recv` was collecting (resumed by the next), and
/// the error of a message `recv_many` met after its first (returned by the next receive).
pub(crate) struct InboxRx {
    rx: crate::queue::Receiver<Queued>,
    pub(crate) partial: Option<crate::stream::Partial>,
    pub(crate) deferred: Option<Error>,
}

impl InboxRx {
    /// The next stream; `Closed` once the listener or runtime is gone (they drop the routes,
    /// which closes the queue). Cancel-safe.
    pub(crate) async fn next(&mut self) -> Result<Queued> {
        self.rx.recv().await.ok_or(Error::Closed)
    }

    /// The next item if one is queued now.
    pub(crate) fn try_next(&mut self) -> Option<Result<Queued>> {
        match self.rx.try_recv() {
            Ok(q) => Some(Ok(q)),
            Err(crate::queue::TryRecvError::Empty) => None,
            Err(crate::queue::TryRecvError::Disconnected) => Some(Err(Error::Closed)),
        }
    }
}

impl Inbox {
    /// The next stream. Cancel-safe.
    pub(crate) async fn next(&self) -> Result<Incoming> {
        Ok(match self.rx.lock().await.next().await? {
            Queued::Incoming(i) => *i,
            // A lane's message, to an endpoint that takes streams: a finished stream of it.
            Queued::Message(m) => Incoming::Stream(IncomingTransfer::ready(m, self.shared.clone())),
            Queued::Refused(e) => return Err(*e),
        })
    }

    /// A whole message (or a lane frame's refusal) at the front of the queue, taken without
    /// the `rx` lock when that keeps the order: nothing was handed back and `rx` holds nothing
    /// that comes first. None: nothing such is ready, and the caller looks the slow way (which
    /// is also how a stream at the front is taken).
    pub(crate) fn take_ready(&self) -> Option<Result<Queued>> {
        if self.something_first() {
            return None;
        }
        match self
            .ready
            .try_recv_if(|q| !matches!(q, Queued::Incoming(_)))
        {
            Ok(q) => Some(Ok(q)),
            Err(crate::queue::TryRecvError::Empty) => None,
            Err(crate::queue::TryRecvError::Disconnected) => Some(Err(Error::Closed)),
        }
    }

    /// Whole messages from the front of the queue, up to `max` in all in `out`, under one lock,
    /// when [`Inbox::take_ready`] could take them; stops before anything else.
    pub(crate) fn take_ready_messages(&self, out: &mut Vec<crate::stream::Message>, max: usize) {
        if out.len() >= max || self.something_first() {
            return;
        }
        self.ready.recv_while(
            max - out.len(),
            |q| matches!(q, Queued::Message(_)),
            |q| {
                if let Queued::Message(m) = q {
                    out.push(m);
                }
            },
        );
    }

    /// A half-collected message, a deferred error or a message handed back comes before what
    /// the queue holds: taking from the queue directly would overtake it.
    fn something_first(&self) -> bool {
        self.rx_first.load(Ordering::Acquire) || self.returned_first.load(Ordering::Acquire)
    }

    /// Records whether `rx` now holds something that comes before the queue; called under its
    /// lock after `partial` or `deferred` changed, before any await.
    pub(crate) fn settle(&self, rx: &InboxRx) {
        let first = rx.partial.is_some() || rx.deferred.is_some();
        self.rx_first.store(first, Ordering::Release);
    }

    /// Hands a message back, to be served before anything else.
    pub(crate) fn give_back(&self, message: crate::stream::Message) {
        let mut r = self.returned.lock().unwrap();
        r.push_back(message);
        self.returned_first.store(true, Ordering::Release);
        drop(r);
        self.handed_back.notify_waiters();
    }

    /// The first message handed back, if any.
    pub(crate) fn take_returned(&self) -> Option<crate::stream::Message> {
        if !self.returned_first.load(Ordering::Acquire) {
            return None;
        }
        let mut r = self.returned.lock().unwrap();
        let m = r.pop_front();
        self.returned_first.store(!r.is_empty(), Ordering::Release);
        m
    }

    /// Unbinds the path: nothing more is dispatched here (a new stream is refused with
    /// UNKNOWN_ENDPOINT), streams already queued are still handed out, then `Closed`.
    pub(crate) fn close(&self) {
        self.route.close();
    }
}

/// A bound address: endpoints are registered on it by path.
///
/// ```no_run
/// # async fn f() -> weida::Result<()> {
/// let rt = weida::Runtime::new(Default::default())?;
/// let listener = rt.bind("weida://127.0.0.1:0").await?;
/// let replier = listener.replier("/echo")?;
/// println!("dial {}", replier.address()); // weida://sha256:…@127.0.0.1:port/echo
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Listener {
    inner: Arc<ListenerInner>,
}

struct ListenerInner {
    shared: Arc<Shared>,
    address: Address,
    routes: Arc<RwLock<HashMap<String, Route>>>,
    life: Arc<Life>,
    quic: Option<quic::Server>,
}

impl Drop for ListenerInner {
    fn drop(&mut self) {
        self.life.kill(LossCause::LocallyClosed);
        if let Some(ep) = &self.quic {
            ep.close(Code::GoingAway, b"listener dropped");
        }
    }
}

/// Everything a dispatch task needs.
#[derive(Clone)]
struct Dispatch {
    shared: Arc<Shared>,
    routes: Arc<RwLock<HashMap<String, Route>>>,
    /// The listener's own life: a closed listener ends its local sessions too.
    life: Arc<Life>,
    /// Local-socket subscriber sessions by token: where their parked connections go.
    sessions: Arc<Mutex<HashMap<Bytes, Arc<crate::hub::ParkedPool>>>>,
    /// The dialler's MAX_HEADER_SIZE, for reply headers (per connection; unknown, so
    /// unbounded, for an AF_UNIX data connection, which carries no session: Open point 3).
    peer_max_header: u64,
}

/// The subscriptions of one accepted connection (or local session), by publisher path.
struct ConnSubs {
    reverse: Option<crate::hub::Reverse>,
    /// The connection agreed PerProducer ordering: copies are numbered.
    number: bool,
    /// Both HELLOs offered message lanes: small copies go as lane frames.
    lanes: bool,
    subs: HashMap<String, (Arc<crate::hub::Hub>, Option<u64>)>,
}

impl Drop for ConnSubs {
    fn drop(&mut self) {
        for (hub, id) in self.subs.values() {
            if let Some(id) = id {
                hub.remove(*id);
            }
        }
    }
}

impl Listener {
    /// The bound address, with the real port and, over QUIC, the pin of the key it presents.
    pub fn address(&self) -> &Address {
        &self.inner.address
    }

    fn route(
        &self,
        path: &str,
        kind: RouteKind,
        tx: Option<crate::queue::Sender<Queued>>,
        hub: Option<Arc<crate::hub::Hub>>,
    ) -> Result<RouteGuard> {
        crate::address::validate_path(path)?;
        let mut routes = self.inner.routes.write().unwrap();
        if routes.contains_key(path) {
            return Err(Error::InvalidConfig(format!(
                "path {path:?} is already bound on {}",
                self.inner.address
            )));
        }
        static NEXT_ROUTE: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ROUTE.fetch_add(1, Ordering::Relaxed);
        routes.insert(path.to_string(), Route { kind, tx, hub, id });
        Ok(RouteGuard {
            routes: self.inner.routes.clone(),
            path: path.to_string(),
            id,
            _listener: self.inner.clone(),
        })
    }

    fn register(&self, path: &str, kind: RouteKind) -> Result<Inbox> {
        let address = self.inner.address.with_path(path)?;
        let (tx, rx) = crate::queue::channel(self.inner.shared.limits.endpoint_queue);
        let route = self.route(path, kind, Some(tx), None)?;
        Ok(Inbox {
            ready: rx.taker(),
            rx_first: AtomicBool::new(false),
            returned_first: AtomicBool::new(false),
            rx: tokio::sync::Mutex::new(InboxRx {
                rx,
                partial: None,
                deferred: None,
            }),
            route,
            shared: self.inner.shared.clone(),
            address,
            returned: Mutex::new(std::collections::VecDeque::new()),
            handed_back: tokio::sync::Notify::new(),
        })
    }

    /// Binds a [`crate::Publisher`] at `path`: subscribers dial it and install filters.
    pub fn publisher(&self, path: &str) -> Result<crate::Publisher> {
        let address = self.inner.address.with_path(path)?;
        let hub = crate::hub::Hub::new(self.inner.shared.clone(), path);
        let route = self.route(path, RouteKind::Publisher, None, Some(hub.clone()))?;
        Ok(crate::Publisher::new(hub, address, route))
    }

    /// Binds a raw [`crate::Acceptor`] at `path`.
    pub fn acceptor(&self, path: &str) -> Result<crate::Acceptor> {
        Ok(crate::Acceptor::new(
            self.register(path, RouteKind::Acceptor)?,
        ))
    }

    /// Binds a [`crate::Replier`] at `path`.
    pub fn replier(&self, path: &str) -> Result<crate::Replier> {
        Ok(crate::Replier::new(
            self.register(path, RouteKind::Replier)?,
        ))
    }

    /// Binds a [`crate::Puller`] at `path`.
    pub fn puller(&self, path: &str) -> Result<crate::Puller> {
        Ok(crate::Puller::new(self.register(path, RouteKind::Puller)?))
    }

    /// Stops accepting connections, closes the ones it accepted, and ends its endpoints.
    pub fn close(&self) {
        self.inner.life.kill(LossCause::LocallyClosed);
        self.inner.routes.write().unwrap().clear();
        if let Some(ep) = &self.inner.quic {
            ep.close(Code::GoingAway, b"listener closed");
        }
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("address", &self.inner.address)
            .finish()
    }
}

impl Dispatch {
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
    async fn stream(self, raw: IncomingRaw) {
        let IncomingRaw {
            recv,
            mut send,
            peer,
            live,
        } = raw;
        let mut reader = StreamReader::new(recv).counted(live);
        let first = reader.byte();
        let ty = if matches!(send, Some(SendHalf::Unix(_))) {
            // An AF_UNIX connection is accepted before it says anything: one that stays silent
            // is not waited for forever, as a silent QUIC opening is not (PROTOCOL §3.2 step 2).
            match tokio::time::timeout(self.shared.limits.idle_timeout, first).await {
                Ok(Ok(b)) => b,
                _ => return,
            }
        } else {
            match first.await {
                Ok(b) => b,
                Err(_) => return,
            }
        };
        let ty = match StreamType::from_byte(ty) {
            Ok(StreamType::Control) if matches!(send, Some(SendHalf::Unix(_))) => {
                // Over a local socket each control connection arrives like a stream.
                let ctl = ControlReader::with_reader(reader);
                self.session(ctl, send.take().unwrap()).await;
                return;
            }
            Ok(t @ (StreamType::Transfer | StreamType::Exchange)) => t,
            Ok(StreamType::Parked) if matches!(send, Some(SendHalf::Unix(_))) => {
                self.park(reader, send.take().unwrap()).await;
                return;
            }
            Ok(StreamType::Lane)
                if self.shared.config.lane_max_message > 0
                    && !matches!(send, Some(SendHalf::Quic(_)) | Some(SendHalf::Channel(_))) =>
            {
                // A lane is one-way; over a local socket the reverse direction carries STOPs.
                self.lane(reader, send, peer).await;
                return;
            }
            Ok(StreamType::Control) => {
                // One control stream per connection, and it is the first (PROTOCOL.md §3.2).
                self.refuse(reader, send, Code::ProtocolError, "a second control stream")
                    .await;
                return;
            }
            Ok(_) | Err(_) => {
                self.refuse(reader, send, Code::Unsupported, "unsupported stream type")
                    .await;
                return;
            }
        };
        if (ty == StreamType::Exchange) != send.is_some() {
            // A transfer on a bidirectional QUIC stream or an exchange on a one-way one. A local
            // socket is always bidirectional, so only the exchange keeps its reply half.
            if ty != StreamType::Transfer || matches!(send, Some(SendHalf::Quic(_))) {
                self.refuse(
                    reader,
                    send,
                    Code::ProtocolError,
                    "stream type does not match its direction",
                )
                .await;
                return;
            }
        }
        let send = if ty == StreamType::Exchange {
            send
        } else {
            None
        };
        let header = match reader.header(self.shared.limits.max_header_size).await {
            Ok(h) => h,
            // Reset or lost before its header was whole: there is nobody to tell.
            Err(crate::transport::reader::ReadFail::Stream(_)) => return,
            Err(f) => {
                let code = f.code();
                let msg = match f.into_error() {
                    Error::LimitExceeded { detail, .. } => detail,
                    e => e.to_string(),
                };
                self.refuse(reader, send, code, &msg).await;
                return;
            }
        };
        let Some(path) = header.path.clone() else {
            self.refuse(reader, send, Code::ProtocolError, "a stream without a path")
                .await;
            return;
        };
        let route = self
            .routes
            .read()
            .unwrap()
            .get(&path)
            .map(|r| (r.kind, r.tx.clone()));
        let Some((kind, tx)) = route.filter(|(_, tx)| tx.as_ref().is_none_or(|t| !t.is_closed()))
        else {
            self.refuse(
                reader,
                send,
                Code::UnknownEndpoint,
                &format!("nothing is bound at {path:?}"),
            )
            .await;
            return;
        };
        let (false, Some(tx)) = (!kind.takes(ty), tx) else {
            let what = if ty == StreamType::Exchange {
                "a request"
            } else {
                "a one-way transfer"
            };
            self.refuse(
                reader,
                send,
                Code::Unsupported,
                &format!("{path:?} is {}, which does not take {what}", kind.name()),
            )
            .await;
            return;
        };
        let meta = IncomingMeta::from_header(header, peer);
        let transfer = IncomingTransfer::new(reader, meta, self.shared.clone());
        let incoming = match send {
            Some(s) => Incoming::Exchange(Exchange::new(transfer, s, self.peer_max_header)),
            None => Incoming::Stream(transfer),
        };
        self.shared
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
        send: Option<SendHalf>,
        peer: Option<PeerIdentity>,
    ) {
        let limits = &self.shared.limits;
        let head = match reader.header(limits.max_header_size).await {
            Ok(h) => h,
            Err(crate::transport::reader::ReadFail::Stream(_)) => return,
            Err(f) => {
                let code = f.code();
                return self.refuse(reader, send, code, "bad lane head").await;
            }
        };
        let Some(path) = head.path else {
            return self
                .refuse(reader, send, Code::ProtocolError, "a lane without a path")
                .await;
        };
        let route = self
            .routes
            .read()
            .unwrap()
            .get(&path)
            .map(|r| (r.kind, r.tx.clone()));
        let tx = match route {
            Some((kind, Some(tx))) if kind.takes(StreamType::Lane) && !tx.is_closed() => tx,
            Some((kind, _)) if !kind.takes(StreamType::Lane) => {
                let msg = format!(
                    "{path:?} is {}, which does not take one-way messages",
                    kind.name()
                );
                return self.refuse(reader, send, Code::Unsupported, &msg).await;
            }
            _ => {
                let msg = format!("nothing is bound at {path:?}");
                return self.refuse(reader, send, Code::UnknownEndpoint, &msg).await;
            }
        };
        // Weak between frames: a lane must not keep a closed endpoint's queue open (its
        // receive ends with `Closed` once the queue is taken), and a frame after the close is
        // refused as a stream would be.
        let weak = tx.downgrade();
        drop(tx);
        let tx = weak;
        self.shared
            .stats
            .streams_accepted
            .fetch_add(1, Ordering::Relaxed);
        let path: Arc<str> = path.into();
        let (max_header, max_body) = (limits.max_header_size, limits.max_collected_body);
        let mut batch = std::collections::VecDeque::with_capacity(LANE_BATCH);
        // What a frame with no header field arrives with: the same for each, so shared.
        let plain = Arc::new(IncomingMeta::on_path(
            crate::wire::Header::default(),
            peer.clone(),
            path.clone(),
        ));
        loop {
            // The first frame waits for bytes; the frames already whole behind it are taken
            // without waiting and go to the endpoint's queue under one lock (a lock, a
            // reference to the queue and the counters per batch, not per message).
            let (mut messages, mut bytes) = (0u64, 0u64);
            let mut message = |header: &mut Option<crate::wire::Header>, body: Bytes| {
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
                Queued::Message(crate::stream::Message { meta, body })
            };
            let first = match reader.lane_frame(max_header, max_body).await {
                Ok(Some((_, Err(len)))) => Queued::Refused(Box::new(Error::limit(
                    crate::error::Limit::CollectedBody,
                    format!("message of {len} bytes above {max_body}"),
                ))),
                Ok(Some((header, Ok(body)))) => message(&mut Some(header), body),
                Ok(None) | Err(crate::transport::reader::ReadFail::Stream(_)) => return,
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
            let stats = &self.shared.stats;
            stats.add_received(bytes);
            stats
                .lane_messages_received
                .fetch_add(messages, Ordering::Relaxed);
            // A full queue waits here, so the lane's window holds the sender; an endpoint gone
            // since the last batch refuses the lane.
            let Some(tx) = tx.upgrade() else {
                return reader.stop(Code::UnknownEndpoint);
            };
            if tx.send_many(&mut batch).await.is_err() {
                return reader.stop(Code::UnknownEndpoint);
            }
        }
    }

    async fn refuse(
        &self,
        mut reader: StreamReader,
        send: Option<SendHalf>,
        code: Code,
        message: &str,
    ) {
        self.shared
            .stats
            .streams_refused
            .fetch_add(1, Ordering::Relaxed);
        tracing::debug!(code = code.name(), message, "refusing a stream");
        reader.stop(code);
        if let Some(s) = send {
            write_error_reply(s, code, message).await;
        }
    }

    /// The bound side of a handshake: the peer's HELLO, then ours, or CLOSE when they do not
    /// meet. Returns the peer's HELLO and the agreed set, or None when the connection is
    /// refused.
    async fn handshake(
        &self,
        ctl: &mut ControlReader,
        send: &mut SendHalf,
        conn: Option<&Conn>,
    ) -> Option<(Hello, GuaranteeSet)> {
        // A dialler that never says HELLO is not waited for longer than an idle connection.
        let first = tokio::time::timeout(self.shared.limits.idle_timeout, ctl.next()).await;
        let mine = self.shared.hello(None);
        let (negotiated, theirs) = match first {
            Ok(Ok(Some(ControlFrame::Hello(theirs)))) => (mine.negotiate(&theirs), Some(theirs)),
            Ok(Err(Error::NegotiationFailed(why))) => (Err(why), None),
            _ => {
                tracing::debug!("a peer opened no HELLO");
                if let Some(c) = conn {
                    c.close(Code::ProtocolError, "expected HELLO");
                }
                return None;
            }
        };
        match negotiated {
            Ok(agreed) => {
                let mut out = Vec::new();
                ControlFrame::Hello(mine).encode(&mut out);
                send.write(Bytes::from(out)).await.ok()?;
                Some((theirs.expect("negotiated with a HELLO"), agreed))
            }
            Err(why) => {
                tracing::debug!(%why, "negotiation failed");
                let mut out = Vec::new();
                ControlFrame::Close {
                    code: Code::NegotiationFailed,
                    reason: why.clone(),
                }
                .encode(&mut out);
                let _ = send.write(Bytes::from(out)).await;
                if let Some(c) = conn {
                    c.close(Code::NegotiationFailed, &why);
                }
                None
            }
        }
    }

    /// Reads the dialler's control frames until its half ends: GOAWAY, and the Pub/Sub
    /// SUBSCRIBE/UNSUBSCRIBE requests, each answered in order. Returns the code the connection
    /// closes with (NO_ERROR after a FIN or CLOSE, PROTOCOL_ERROR after a malformed frame).
    async fn control(
        &self,
        ctl: &mut ControlReader,
        send: &mut SendHalf,
        tracker: &Tracker,
        subs: &mut ConnSubs,
    ) -> Code {
        loop {
            match ctl.next().await {
                Ok(Some(ControlFrame::GoAway { opened })) => tracker.go_away(opened),
                Ok(Some(ControlFrame::Close { .. })) | Ok(None) => return Code::NoError,
                Ok(Some(ControlFrame::Subscribe(s))) => {
                    let (code, reason) = match self.subscribe(subs, &s).await {
                        Ok(()) => (Code::NoError, String::new()),
                        Err(e) => e,
                    };
                    let mut out = Vec::new();
                    ControlFrame::Answer {
                        request: s.request,
                        code,
                        reason,
                    }
                    .encode(&mut out);
                    if send.write(Bytes::from(out)).await.is_err() {
                        return Code::NoError;
                    }
                }
                Ok(Some(ControlFrame::Unsubscribe(s))) => {
                    if let Some((hub, id)) = subs.subs.get(&s.path) {
                        hub.unsubscribe(*id, &s.filter);
                    }
                    let mut out = Vec::new();
                    ControlFrame::Answer {
                        request: s.request,
                        code: Code::NoError,
                        reason: String::new(),
                    }
                    .encode(&mut out);
                    if send.write(Bytes::from(out)).await.is_err() {
                        return Code::NoError;
                    }
                }
                Ok(Some(f)) => tracing::trace!(?f, "control frame"),
                Err(Error::Protocol(_)) => return Code::ProtocolError,
                Err(_) => return Code::NoError,
            }
        }
    }

    /// Installs one filter for this connection at the publisher on `s.path`.
    async fn subscribe(
        &self,
        subs: &mut ConnSubs,
        s: &crate::wire::Subscription,
    ) -> std::result::Result<(), (Code, String)> {
        let route = self
            .routes
            .read()
            .unwrap()
            .get(&s.path)
            .map(|r| (r.kind, r.hub.clone()));
        let hub = match route {
            Some((_, Some(hub))) => hub,
            Some((kind, None)) => {
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
        if let crate::hub::Reverse::Parked(pool) = &reverse {
            // Answer once its parked connections are here, so the first copy finds one.
            if !pool.ready(self.shared.limits.idle_timeout).await {
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
        let conn = crate::hub::SubscriberConn {
            reverse,
            number: subs.number,
            lanes: subs.lanes,
        };
        hub.subscribe(&mut entry.1, &conn, &s.filter)
    }

    /// A parked connection of a local-socket subscriber: `04 token`, then it waits in its
    /// session's pool for a copy.
    async fn park(&self, mut reader: StreamReader, send: SendHalf) {
        let token = match reader
            .prefixed(crate::wire::control::MAX_SESSION_TOKEN)
            .await
        {
            Ok(t) => t,
            Err(f) => {
                let code = f.code();
                return self
                    .refuse(reader, None, code, "bad parked connection")
                    .await;
            }
        };
        let pool = self.sessions.lock().unwrap().get(&token).cloned();
        let Some(pool) = pool else {
            return self
                .refuse(reader, None, Code::UnknownEndpoint, "no such session")
                .await;
        };
        let bound = self.shared.limits.max_parked_reverse;
        // `park` hands the connection over, or returns it when the pool is full.
        if let Err((send, reader)) = pool.park(send, reader, bound) {
            drop(send);
            self.refuse(reader, None, Code::LimitExceeded, "parked pool full")
                .await;
        }
    }

    /// A local socket session: its control connection, alive until the peer goes.
    async fn session(&self, mut ctl: ControlReader, mut send: SendHalf) {
        let Some((theirs, agreed)) = self.handshake(&mut ctl, &mut send, None).await else {
            return;
        };
        self.shared
            .stats
            .connections_accepted
            .fetch_add(1, Ordering::Relaxed);
        // A subscriber's session: where its parked connections are pooled.
        let session = theirs
            .session
            .as_deref()
            .and_then(|v| Session::decode(v).ok())
            .filter(|s| s.parked > 0);
        let pool = session.map(|s| {
            let pool = crate::hub::ParkedPool::new(s.parked);
            self.sessions
                .lock()
                .unwrap()
                .insert(s.token.clone(), pool.clone());
            (s.token, pool)
        });
        let mut subs = ConnSubs {
            reverse: pool
                .as_ref()
                .map(|(_, p)| crate::hub::Reverse::Parked(p.clone())),
            // Numbered only for a subscriber that asked for ordering: the others would carry
            // sequence bytes for nothing.
            number: agreed.ordering >= crate::wire::Ordering::Detect
                && theirs.required.ordering >= crate::wire::Ordering::Detect,
            // Copies over AF_UNIX travel on parked connections, one each: no lanes.
            lanes: false,
            subs: HashMap::new(),
        };
        // A local session's streams are OS connections of their own that outlive it, and
        // the kernel already holds what they carried: GOAWAY ends the session at once.
        let tracker = Tracker::new();
        tracker.accepted.store(u64::MAX - 1, Ordering::Release);
        tokio::select! {
            _ = self.control(&mut ctl, &mut send, &tracker, &mut subs) => {}
            _ = tracker.drained() => {}
            _ = self.life.dead() => {}
            _ = self.shared.life.dead() => {}
        }
        if let Some((token, pool)) = pool {
            self.sessions.lock().unwrap().remove(&token);
            pool.close();
        }
        drop(subs);
    }

    /// An accepted QUIC or in-process connection: handshake, then its streams.
    async fn connection(self, conn: Conn, life: Arc<Life>) {
        self.shared.track(&conn);
        // The whole opening (first stream, its type byte, HELLO) is bounded like an idle
        // connection: a dialler that opens nothing is not waited for forever.
        let deadline = tokio::time::Instant::now() + self.shared.limits.idle_timeout;
        let opening = async {
            let (send, recv) = conn.accept_bi().await?;
            let mut reader = StreamReader::new(recv);
            let ty = reader.byte().await.ok().map(StreamType::from_byte);
            Some((send, reader, ty))
        };
        let Ok(Some((mut send, reader, ty))) = tokio::time::timeout_at(deadline, opening).await
        else {
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
        let Some((theirs, agreed)) = self.handshake(&mut ctl, &mut send, Some(&conn)).await else {
            return;
        };
        self.shared
            .stats
            .connections_accepted
            .fetch_add(1, Ordering::Relaxed);
        let peer = conn.peer();
        tracing::debug!(?peer, "accepted");
        let this = Dispatch {
            peer_max_header: theirs.max_header_size,
            ..self.clone()
        };
        let tracker = Tracker::new();
        let mut subs = ConnSubs {
            reverse: Some(crate::hub::Reverse::Conn(conn.clone())),
            number: agreed.ordering >= crate::wire::Ordering::Detect
                && theirs.required.ordering >= crate::wire::Ordering::Detect,
            lanes: self.shared.hello(None).features
                & theirs.features
                & crate::wire::lane_frame::FEATURE_LANES
                != 0,
            subs: HashMap::new(),
        };
        let accept = conn.accept_each(Accept::All, |mut raw| {
            raw.live = Some(tracker.admit());
            this.admit(raw);
        });
        tokio::select! {
            _ = accept => {}
            // The dialler's half of the control stream ended (or broke): so does the connection.
            code = self.control(&mut ctl, &mut send, &tracker, &mut subs) => {
                conn.close(code, "control stream ended")
            }
            _ = tracker.drained() => conn.close(Code::NoError, "drained"),
            _ = life.dead() => conn.close(Code::GoingAway, "listener closed"),
            _ = self.shared.life.dead() => {}
        }
        // The subscriptions end with the connection; keep the control stream's send half
        // until then.
        drop(subs);
        drop(send);
    }
}

/// The process-wide entry point: dials addresses, binds listeners, owns every connection.
///
/// ```no_run
/// # async fn f() -> weida::Result<()> {
/// use weida::{Runtime, RuntimeConfig};
/// let rt = Runtime::new(RuntimeConfig::default())?;
/// let listener = rt.bind("weida://127.0.0.1:0").await?;
/// let replier = listener.replier("/echo")?;
/// let address = replier.address().to_string();
/// tokio::spawn(async move {
///     while let Ok(mut ex) = replier.accept().await {
///         let body = ex.take_body().await.unwrap();
///         ex.reply(body).await.unwrap();
///     }
/// });
/// let requester = rt.requester();
/// requester.connect(&address).await?;
/// assert_eq!(&requester.request("hi").await?[..], b"hi");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runtime {
    pub(crate) shared: Arc<Shared>,
}

impl Runtime {
    /// A runtime with `config`. Refuses a configuration it cannot honour (GUARANTEES §4).
    /// Its tasks run on the tokio runtime of the caller of each async method.
    pub fn new(config: RuntimeConfig) -> Result<Runtime> {
        config.limits.validate()?;
        if !config.guarantees.other.is_empty() {
            return Err(Error::InvalidConfig(format!(
                "only the ordering dimension has non-core levels here; cannot honour {:?}",
                config.guarantees.other
            )));
        }
        let client_tls = if config.present_identity {
            ClientTls::new(config.identity.clone(), config.trust.clone())
        } else {
            ClientTls::anonymous(config.trust.clone())
        };
        Ok(Runtime {
            shared: Arc::new(Shared {
                limits: config.limits.clone(),
                config,
                client_tls,
                stats: Stats::default(),
                receipts: Receipts::default(),
                quic_client: tokio::sync::OnceCell::new(),
                pool: Mutex::new(HashMap::new()),
                conns: Mutex::new(Vec::new()),
                state: AtomicU8::new(OPEN),
                life: Life::new(),
                listeners: Mutex::new(Vec::new()),
                runtime: std::sync::OnceLock::new(),
            }),
        })
    }

    /// The identity this runtime presents (for `bind_with`, e.g. with `require_client`).
    pub fn identity(&self) -> crate::Identity {
        self.shared.config.identity.clone()
    }

    /// The fingerprint of the key this runtime presents.
    pub fn fingerprint(&self) -> crate::Fingerprint {
        self.shared.config.identity.fingerprint()
    }

    /// Binds `address` (no path), presenting this runtime's identity.
    pub async fn bind(&self, address: &str) -> Result<Listener> {
        self.bind_with(address, ServerTls::new(self.shared.config.identity.clone()))
            .await
    }

    /// Binds `address` with explicit server TLS terms (e.g. `require_client`).
    pub async fn bind_with(&self, address: &str, tls: ServerTls) -> Result<Listener> {
        self.shared.check_open()?;
        let addr = Address::parse(address)?;
        if addr.path().is_some() {
            return Err(Error::InvalidAddress {
                part: crate::error::AddressPart::Path,
                reason: format!(
                    "bind {:?} without a path; endpoints are bound by path on the listener",
                    address
                ),
            });
        }
        let life = Life::new();
        let routes: Arc<RwLock<HashMap<String, Route>>> = Arc::default();
        self.shared
            .listeners
            .lock()
            .unwrap()
            .push((Arc::downgrade(&life), Arc::downgrade(&routes)));
        let dispatch = Dispatch {
            shared: self.shared.clone(),
            routes: routes.clone(),
            life: life.clone(),
            sessions: Arc::default(),
            peer_max_header: u64::MAX,
        };
        let limits = self.shared.limits.clone();
        let (bound_address, quic_ep) = match addr.target() {
            Target::Quic { host, port } => {
                let at = quic::resolve(host, *port).await?;
                let server =
                    quic::server_endpoint(at, &tls, &limits, self.shared.config.udp_buffer)?;
                let local = server.local_addr()?;
                let bound = Address::parse(&format!(
                    "weida://{}@{}",
                    tls.identity().fingerprint(),
                    match local {
                        std::net::SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
                        v4 => v4.to_string(),
                    }
                ))?;
                let ep = server.clone();
                let (life2, d) = (life.clone(), dispatch.clone());
                tokio::spawn(async move {
                    loop {
                        let incoming = tokio::select! {
                            i = server.next() => i,
                            _ = life2.dead() => break,
                            _ = d.shared.life.dead() => break,
                        };
                        let Some(incoming) = incoming else { break };
                        let (d, life, server) = (d.clone(), life2.clone(), server.clone());
                        tokio::spawn(async move {
                            match server.accept(incoming).await {
                                Ok((c, remote)) => {
                                    let span = tracing::debug_span!("connection", %remote);
                                    d.connection(c, life).instrument(span).await
                                }
                                Err(e) => tracing::debug!(error = %e, "handshake failed"),
                            }
                        });
                    }
                });
                (bound, Some(ep))
            }
            Target::Inproc(name) => {
                let lives = [life.clone(), self.shared.life.clone()];
                let mut bound = inproc::bind(name, &limits, lives)?;
                let (life2, d) = (life.clone(), dispatch.clone());
                tokio::spawn(async move {
                    loop {
                        let c = tokio::select! {
                            c = bound.accept() => c,
                            _ = life2.dead() => break,
                            _ = d.shared.life.dead() => break,
                        };
                        let Some(c) = c else { break };
                        let span = tracing::debug_span!("connection", transport = "inproc");
                        tokio::spawn(
                            d.clone()
                                .connection(Conn::Inproc(c), life2.clone())
                                .instrument(span),
                        );
                    }
                });
                (addr.clone(), None)
            }
            Target::Unix(t) => {
                let lives = [life.clone(), self.shared.life.clone()];
                let bound = unix::bind(t, &limits, lives)?;
                let (life2, d) = (life.clone(), dispatch.clone());
                tokio::spawn(async move {
                    loop {
                        let raw = tokio::select! {
                            r = bound.accept(life2.clone()) => r,
                            _ = life2.dead() => break,
                            _ = d.shared.life.dead() => break,
                        };
                        match raw {
                            Ok(raw) => {
                                tokio::spawn(d.clone().stream(raw));
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "local socket accept failed");
                                tokio::time::sleep(Duration::from_millis(10)).await;
                            }
                        }
                    }
                });
                (addr.clone(), None)
            }
            Target::Pipe(_) => return Err(pipe_unsupported()),
            #[allow(unreachable_patterns)]
            _ => return Err(Error::Unsupported(format!("transport of {addr}"))),
        };
        tracing::debug!(address = %bound_address, "bound");
        Ok(Listener {
            inner: Arc::new(ListenerInner {
                shared: self.shared.clone(),
                address: bound_address,
                routes,
                life,
                quic: quic_ep,
            }),
        })
    }

    /// A [`crate::Subscriber`]: connect it to publishers, then subscribe.
    pub fn subscriber(&self) -> crate::Subscriber {
        crate::Subscriber::new(self.shared.clone())
    }

    /// A raw [`crate::Peer`].
    pub fn peer(&self) -> crate::Peer {
        crate::Peer::new(self.shared.clone())
    }

    /// A [`crate::Requester`].
    pub fn requester(&self) -> crate::Requester {
        crate::Requester::new(self.shared.clone())
    }

    /// A [`crate::Pusher`].
    pub fn pusher(&self) -> crate::Pusher {
        crate::Pusher::new(self.shared.clone())
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        let s = &self.shared.stats;
        let r = &self.shared.receipts;
        Counters {
            streams_opened: s.streams_opened.load(Ordering::Relaxed),
            streams_accepted: s.streams_accepted.load(Ordering::Relaxed),
            streams_refused: s.streams_refused.load(Ordering::Relaxed),
            bytes_sent: s.bytes_sent.load(Ordering::Relaxed),
            bytes_received: s.bytes_received.load(Ordering::Relaxed),
            connections_dialled: s.connections_dialled.load(Ordering::Relaxed),
            connections_accepted: s.connections_accepted.load(Ordering::Relaxed),
            receipts_delivered: r.delivered.load(Ordering::Relaxed),
            receipts_failed: r.failed.load(Ordering::Relaxed),
            copies_published: s.copies_published.load(Ordering::Relaxed),
            lane_messages_sent: s.lane_messages_sent.load(Ordering::Relaxed),
            lane_messages_received: s.lane_messages_received.load(Ordering::Relaxed),
            lane_messages_lost: s.lane_messages_lost.load(Ordering::Relaxed),
        }
    }

    /// Stops admitting work, gives finished transfers until `deadline` to reach the peer's
    /// transport, then closes everything. The deadline is mandatory and finite.
    /// An expired drain with transfers outstanding is not an error.
    pub async fn drain(&self, deadline: Duration) -> Drained {
        let now = tokio::time::Instant::now();
        // A deadline too far to represent is as good as a very long one.
        let until = now
            .checked_add(deadline)
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        let _ =
            self.shared
                .state
                .compare_exchange(OPEN, DRAINING, Ordering::AcqRel, Ordering::Acquire);
        // Lanes first: each writes what it queued and finishes, and its receipt joins the rest.
        let links: Vec<Arc<Link>> = self.shared.pool.lock().unwrap().values().cloned().collect();
        let _ = tokio::time::timeout_at(
            until,
            futures_util::future::join_all(links.iter().map(|l| l.close_lane())),
        )
        .await;
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        let outstanding = self.shared.receipts.settle(left).await;
        // Then GOAWAY on every dialled connection, and give each peer until the deadline to
        // take what arrived and close (a close from here would discard streams the peer's
        // transport holds but its application has not taken yet).
        for l in &links {
            l.go_away().await;
        }
        let _ = tokio::time::timeout_at(
            until,
            futures_util::future::join_all(links.iter().map(|l| l.conn.closed())),
        )
        .await;
        self.shared.close_all();
        Drained {
            delivered: self.shared.receipts.delivered.load(Ordering::Relaxed),
            outstanding,
        }
    }

    /// Closes every connection now: finished transfers still in flight are cut short.
    pub fn shutdown(&self) {
        self.shared.close_all();
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("fingerprint", &self.fingerprint())
            .finish()
    }
}
