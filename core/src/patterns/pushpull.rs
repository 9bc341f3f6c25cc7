//! Push/Pull: one one-way stream per message, round-robin over connected pullers.

use bytes::Bytes;
use futures_util::future::BoxFuture;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use super::Dialer;
use crate::address::Address;
use crate::config::{EndpointOptions, OutboxFull};
use crate::connection::admission::RouteKind;
use crate::connection::context::Context;
use crate::connection::dispatch::Queued;
use crate::connection::handles::{Incoming, IncomingTransfer, Message, OutgoingTransfer, Partial};
use crate::connection::handshake::Flow;
use crate::connection::link::{LaneCache, Link};
use crate::error::{Error, Result};
use crate::patterns::ordering::Detectors;
use crate::runtime::inbox::Inbox;
use crate::runtime::listener::Listener;
use crate::runtime::outbox::{Outbox, Put};
use crate::runtime::peers::{Deal, Down};
use crate::runtime::Runtime;
use crate::wire::{check_streams, Header, Metadata, StreamType};

/// Sends messages to pullers, one stream each, round-robin per message.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, addr: &str) -> weida::Result<()> {
/// let pusher = rt.pusher();
/// pusher.connect(addr).await?;
/// pusher.send("job 1").await?; // returns once the FIN is queued; arrives with no handle
/// # Ok(()) }
/// ```
pub struct Pusher {
    dialer: Dialer,
    /// What `send` hands over while no peer is live, written out in order by a drain task.
    outbox: Arc<Outbox>,
}

impl Drop for Pusher {
    fn drop(&mut self) {
        // Its addresses go with it (the dialer's drop): nothing can take what is queued.
        self.outbox.abandon();
    }
}

impl Runtime {
    /// A [`Pusher`].
    pub fn pusher(&self) -> Pusher {
        self.pusher_with(&EndpointOptions::new())
            .expect("the runtime's own bounds are valid")
    }

    /// A [`Pusher`] with bounds of its own: its `send_timeout`, `reconnect` and outbox (the
    /// other options do not apply to a pusher). `InvalidConfig` for an option out of range.
    pub fn pusher_with(&self, options: &EndpointOptions) -> Result<Pusher> {
        let dialer = Dialer::new(
            self.pool.clone(),
            options,
            check_streams::TRANSFER,
            Flow::Numbers,
        )?;
        Ok(Pusher {
            outbox: self.pool.outbox(dialer.bounds.outbox),
            dialer,
        })
    }
}

impl Pusher {
    /// A pusher over `dialer` (a pair's, which claims what it dials), with an outbox of the
    /// dialer's bounds.
    pub(crate) fn over(dialer: Dialer, pool: &crate::runtime::pool::Pool) -> Self {
        Self {
            outbox: pool.outbox(dialer.bounds.outbox),
            dialer,
        }
    }

    /// Leaves every peer.
    pub(crate) fn leave(&self) {
        self.dialer.leave_all();
    }
}

impl Listener {
    /// Binds a [`Puller`] at `path`.
    pub fn puller(&self, path: &str) -> Result<Puller> {
        self.puller_with(path, &EndpointOptions::new())
    }

    /// Binds a [`Puller`] at `path` with bounds of its own: `max_collected_body` (what
    /// `recv` collects) and `endpoint_queue`.
    pub fn puller_with(&self, path: &str, options: &EndpointOptions) -> Result<Puller> {
        Ok(Puller::over(self.register(
            path,
            RouteKind::Puller,
            options,
        )?))
    }
}

super::dialling!(
    Pusher,
    "Until it is live, `send` fills the outbox and `open` waits (bounded by `send_timeout`)."
);

impl Pusher {
    /// Sends a whole message: fire-and-forget. Returns once the FIN is queued; the receipt is
    /// kept by the runtime for `drain`. Waits for the peer's stream budget (backpressure).
    /// With no live peer while an address is being redialled (or recorded by
    /// `connect_later`), the body is kept in the pusher's outbox instead and `send` returns:
    /// the outbox is written out in order onto the next live connection, and later sends
    /// queue behind it, so order is kept. A full outbox does what `outbox_full` says (wait
    /// for room, bounded by `send_timeout`; drop, counted; or `LimitExceeded`), and a body
    /// larger than `outbox_bytes` is refused at once. Once written, a message is never sent
    /// again: one whose connection then dies is lost, as in ZeroMQ (at most once).
    /// A body up to `RuntimeConfig::lane_max_message` goes as a frame on the connection's
    /// message lane when the peer offers lanes (returning once queued there; a lane's queue
    /// and window are its backpressure), and messages of one lane arrive in order.
    /// Cancel-safe: a `send` dropped before it returns delivers nothing. A message not yet
    /// queued or written is not sent, and one dropped during its write is reset, so the
    /// puller's receive of it fails with `Canceled`
    /// (`cancel.rs: a_send_dropped_mid_write_is_canceled_at_the_reader_quic`).
    pub fn send(&self, body: impl Into<Bytes>) -> impl Future<Output = Result<()>> + Send + '_ {
        self.send_with(Metadata::new(), body)
    }

    /// [`Pusher::send`] with metadata. Cancel-safe, as `send` is.
    pub fn send_with(
        &self,
        meta: Metadata,
        body: impl Into<Bytes>,
    ) -> impl Future<Output = Result<()>> + Send + '_ {
        // Neither this nor `send` is an `async fn`: the body is converted when called (which
        // sends nothing), so the future holds a `Bytes`, and `send`'s future is this one, not
        // one nesting it. The path that may wait is boxed. So the future is about 80 bytes,
        // not the ~1.4 KB of every state that path has: a future is moved whole into its
        // caller's, per message (profiled: a tenth of a 64-byte Push/Pull in those moves).
        let body = body.into();
        async move {
            // The common case first: a small message with no field into an open lane with
            // room, without waiting, taking a reference to the link or asking the transport
            // for its state (FAILURE_MODEL §3.3).
            let body = match meta.is_empty() {
                true => match self.try_send(body)? {
                    None => return Ok(()),
                    Some(b) => b,
                },
                false => body,
            };
            Box::pin(self.send_waiting(meta, body)).await
        }
    }

    /// A send that may wait: a lane to start or with no room, a body for a stream of its own,
    /// or no live peer (the outbox).
    async fn send_waiting(&self, meta: Metadata, mut body: Bytes) -> Result<()> {
        let ctx = &self.dialer.pool.ctx;
        ctx.check_open()?;
        let peers = &self.dialer.peers;
        let timeout = self.dialer.bounds.send_timeout;
        let deadline = timeout.map(|d| Instant::now() + d);
        let mut meta = meta;
        loop {
            // Registered before looking, so a change between the look and the wait wakes it.
            let changed = peers.changed();
            let room = self.outbox.room.notified();
            tokio::pin!(changed, room);
            changed.as_mut().enable();
            room.as_mut().enable();
            let last = match peers.pick_now() {
                Err(Down::Empty) => return Err(Error::NotConnected),
                Err(Down::Lost(c)) => return Err(Error::ConnectionLost(c)),
                Ok(link) if self.outbox.is_empty() => {
                    let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    return write_whole(ctx, &link, Header::with_meta(meta), body, left).await;
                }
                Ok(_) => None,
                Err(Down::Redialling(c)) => c,
            };
            self.outbox.admits(body.len())?;
            let limit = match self.outbox.put(meta, body) {
                Put::Queued { start } => {
                    if start {
                        self.start_drain();
                    }
                    return Ok(());
                }
                Put::Full(m, b, limit) => {
                    (meta, body) = (m, b);
                    limit
                }
            };
            match self.outbox.when_full() {
                OutboxFull::Drop => {
                    ctx.stats.outbox_dropped.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                OutboxFull::Reject => return Err(self.outbox.full_error(limit)),
                OutboxFull::Block => {}
            }
            let woken = async {
                tokio::select! {
                    _ = changed => {},
                    _ = room => {},
                }
            };
            match deadline {
                Some(at) => {
                    if tokio::time::timeout_at(at, woken).await.is_err() {
                        return Err(Error::Timeout { last_loss: last });
                    }
                }
                None => woken.await,
            }
        }
    }

    /// Starts the task that writes the outbox out, in order, to the next live peer.
    fn start_drain(&self) {
        let ctx = self.dialer.pool.ctx.clone();
        let write = move |link: Arc<Link>, meta: Metadata, body: Bytes| {
            let ctx = ctx.clone();
            Box::pin(
                async move { write_whole(&ctx, &link, Header::with_meta(meta), body, None).await },
            ) as BoxFuture<'static, Result<()>>
        };
        let peers = Arc::downgrade(&self.dialer.peers);
        tokio::spawn(self.outbox.clone().drain(peers, write));
    }

    /// Sends a whole message without waiting, when that can be done now: a body of at most
    /// `RuntimeConfig::lane_max_message` toward a peer whose lane is open (the first `send`
    /// of a small body opens it) and has room. `Ok(None)`: queued, exactly as
    /// [`Pusher::send`] would have. `Ok(Some(body))`: nothing was sent (no lane yet, the lane
    /// is full, the body is larger, or the peer takes no lanes); the body comes back for
    /// `send`, which then sends it to the same peer in the round-robin. An error is what
    /// `send` would have returned. It starts nothing, so it may be called from any thread;
    /// for a caller on another event loop (a binding) it is a send with no crossing to the
    /// runtime's thread.
    ///
    /// ```no_run
    /// # async fn f(pusher: weida::Pusher) -> weida::Result<()> {
    /// if let Some(body) = pusher.try_send("job".into())? {
    ///     pusher.send(body).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn try_send(&self, body: Bytes) -> Result<Option<Bytes>> {
        let ctx = &self.dialer.pool.ctx;
        ctx.check_open()?;
        // Behind an outbox not yet written out, a message waits its turn (`send` queues it).
        let max = ctx.config.lane_max_message;
        if body.len() > max || !self.outbox.is_empty() {
            return Ok(Some(body));
        }
        let mut body = Some(body);
        let sent = self.dialer.peers.try_pick(|link, lane| {
            match offer(link, lane, body.take().expect("offered once"), max) {
                Ok(None) => Some(Ok(())),
                Ok(Some(b)) => {
                    body = Some(b);
                    None
                }
                Err(e) => Some(Err(e)),
            }
        });
        match sent {
            Ok(Some(Ok(()))) => Ok(None),
            Ok(Some(Err(e))) | Err(e) => Err(e),
            Ok(None) => Ok(Some(body.expect("given back"))),
        }
    }

    /// Sends each body as its own message, in order, as [`Pusher::send`] does: one call for a
    /// batch of small messages (one crossing for a binding), each dealt to the next peer in
    /// turn as consecutive sends are
    /// (`patterns.rs: requests_and_messages_go_round_robin_over_two_peers`). Stops at the first error and
    /// returns it with how many bodies were sent before it. Not cancel-safe: dropped, the
    /// bodies before the one in flight are sent and the count of them is lost (the one in
    /// flight is not delivered, as with `send`).
    pub async fn send_many<I>(&self, bodies: I) -> (usize, Result<()>)
    where
        I: IntoIterator,
        I::Item: Into<Bytes>,
    {
        // The caller's iterator runs here, never under the peer set's lock: a run is taken
        // from it first (up to RUN bodies), then dealt.
        const RUN: usize = 256;
        let mut bodies = bodies.into_iter().map(Into::into).fuse();
        let mut ready = VecDeque::new();
        let mut sent = 0;
        loop {
            if ready.is_empty() {
                ready.extend(bodies.by_ref().take(RUN));
                if ready.is_empty() {
                    return (sent, Ok(()));
                }
            }
            // The run of bodies that go at once, dealt to the links in turn under one lock of
            // the peer set (a lock a body cost about as much as its sealing: PERFORMANCE.md);
            // the first that could not go waits in `send`, and the next run starts after it.
            let (n, r) = self.try_send_run(&mut ready);
            sent += n;
            if let Err(e) = r {
                return (sent, Err(e));
            }
            if let Some(b) = ready.pop_front() {
                if let Err(e) = self.send(b).await {
                    return (sent, Err(e));
                }
                sent += 1;
            }
        }
    }

    /// As [`Pusher::try_send`] for each of `ready` in turn, from the front, under one lock of
    /// the peer set: how many went, stopping at the first that cannot go at once, which stays
    /// at the front.
    fn try_send_run(&self, ready: &mut VecDeque<Bytes>) -> (usize, Result<()>) {
        let ctx = &self.dialer.pool.ctx;
        if let Err(e) = ctx.check_open() {
            return (0, Err(e));
        }
        // Behind an outbox not yet written out, a message waits its turn (`send` queues it).
        if !self.outbox.is_empty() {
            return (0, Ok(()));
        }
        let max = ctx.config.lane_max_message;
        self.dialer.peers.try_deal(|link, lane| {
            let Some(body) = ready.pop_front() else {
                return Deal::Stop;
            };
            match offer(link, lane, body, max) {
                Ok(None) => Deal::Took,
                Ok(Some(b)) => {
                    ready.push_front(b);
                    Deal::Stop
                }
                Err(e) => Deal::Failed(e),
            }
        })
    }

    /// Opens a streamed message; `finish()` returns the [`crate::Delivery`] for its receipt.
    /// Cancel-safe: an `open` dropped before it returns opens nothing the puller receives (a
    /// stream dropped during the write of its header is reset; under PerProducer ordering its
    /// number is then a gap at the puller).
    pub async fn open(&self, meta: Metadata) -> Result<OutgoingTransfer> {
        let mut header = Header {
            meta,
            ..Header::default()
        };
        self.dialer.pool.ctx.check_open()?;
        let (link, left) = self.dialer.pick().await?;
        if let Some(n) = &link.numbering {
            n.number(&mut header);
        }
        self.dialer.transfer_within(&link, header, None, left).await
    }
}

/// `body` queued at once on `link`'s lane (`Pusher::try_send`, `Pusher::try_send_run`): `None`
/// when it went, the body back when it cannot go at once (the link has no lanes or numbers its
/// messages, the body is above `max`, no lane is open yet, the lane has no room), or the lane's
/// error.
fn offer(link: &Link, lane: &mut LaneCache, body: Bytes, max: usize) -> Result<Option<Bytes>> {
    // A numbered message takes its number as it is queued (`send` does that).
    if !link.lanes || link.numbering.is_some() || body.len() > max {
        return Ok(Some(body));
    }
    link.lane_try_send(lane, body)
}

/// Writes a whole message on `link`: a frame on its lane when the body is small and the peer
/// takes lanes, else a stream of its own, finished. Returns once the lane took it or the FIN
/// is queued; an error means neither happened. Numbered when the peer requires ordering and
/// `header` has no number yet: a frame as the lane queues it, a stream as it is opened
/// (PROTOCOL.md §4); a fan-out numbers its copies as it queues them.
pub(super) async fn write_whole(
    ctx: &Arc<Context>,
    link: &Link,
    mut header: Header,
    body: Bytes,
    within: Option<Duration>,
) -> Result<()> {
    let unnumbered = header.sequence.is_none();
    if link.lanes && body.len() <= ctx.config.lane_max_message {
        return link.lane_send(header, body, unnumbered, within).await;
    }
    if let (Some(n), true) = (&link.numbering, unnumbered) {
        n.number(&mut header);
    }
    let (send, _) = link
        .open(StreamType::Transfer, header, Some(body), within)
        .await?;
    let t = OutgoingTransfer::new(send, link.path.clone(), ctx.clone());
    drop(t.finish().await?);
    Ok(())
}

/// Receives pushed messages at a bound path.
pub struct Puller {
    inbox: Inbox,
    /// The runtime requires PerProducer ordering: its connections' pushers number what they
    /// send, and each message is delivered with the gap before it (detect, PATTERNS §1.7).
    detectors: Option<std::sync::Mutex<Detectors<Bytes>>>,
}

impl Puller {
    /// A receiving side over `inbox` (a pair's, a dialling puller's): with the gap before each
    /// message when the runtime requires ordering, as a bound puller's, since its HELLO then
    /// requires that the other side number what it sends (PROTOCOL.md §3.1.6).
    pub(crate) fn over(inbox: Inbox) -> Self {
        let detect = inbox.ctx.config.guarantees.ordering >= crate::wire::Ordering::Detect;
        Self {
            inbox,
            detectors: detect.then(Default::default),
        }
    }

    /// The address to dial this puller at.
    pub fn address(&self) -> &Address {
        self.inbox.address()
    }

    /// The next whole message, bounded by `max_collected_body` (the puller's, else the
    /// runtime's `Limits`). A message its sender
    /// cancelled is `Err(Canceled)` (never a short body) and the puller stays usable.
    /// Cancel-safe: a message half collected when the future is dropped is resumed.
    pub async fn recv(&self) -> Result<Message> {
        // The common case under load, without the waiting machinery, which is boxed so this
        // future stays small (as `Pusher::send`'s).
        if let Some(r) = self.try_recv() {
            return r;
        }
        let r = Box::pin(self.recv_waiting()).await;
        r.map(|mut m| {
            self.gap(&mut m);
            m
        })
    }

    /// `m` with the gap before it, under PerProducer ordering: counted as messages are
    /// delivered, so one that completes after a later one (a large body on a stream of its own,
    /// overtaken by small ones on the lane) is first counted in that later one's gap, then
    /// arrives with gap 0. A message handed back already has its gap.
    fn gap(&self, m: &mut Message) {
        let (Some(d), Some(seq), Some(p), None) = (
            &self.detectors,
            m.meta.sequence,
            &m.meta.producer,
            m.meta.gap,
        ) else {
            return;
        };
        let gap = d.lock().unwrap().gap(p, seq);
        Arc::make_mut(&mut m.meta).gap = Some(gap);
    }

    async fn recv_waiting(&self) -> Result<Message> {
        let bounds = &self.inbox.bounds;
        let (max, bound) = (bounds.max_collected_body, bounds.endpoint_queue);
        loop {
            // A message handed back (by a binding whose caller cancelled), or an error a batch
            // receive deferred, wakes a waiting receive: it is served first.
            let handed_back = self.inbox.handed_back.notified();
            tokio::pin!(handed_back);
            handed_back.as_mut().enable();
            if let Some(m) = self.inbox.take_returned() {
                return Ok(m);
            }
            if let Some(e) = self.inbox.take_deferred() {
                return Err(e);
            }
            let mut guard = tokio::select! {
                rx = self.inbox.rx.lock() => rx,
                _ = &mut handed_back => continue,
            };
            let rx = &mut *guard;
            if rx.drained && rx.collecting.is_empty() {
                return Err(Error::Closed);
            }
            // Whichever comes first: a message being collected is whole, or the queue has
            // the next (taken while fewer than `endpoint_queue` are being collected). Each
            // stream is read as its bytes come, so one that stalls delays no other.
            let room = !rx.drained && rx.collecting.len() < bound;
            let collecting = !rx.collecting.is_empty();
            let event = {
                let (partials, next) = rx.split();
                tokio::select! {
                    biased;
                    _ = &mut handed_back => continue,
                    (i, r) = first_whole(partials, max), if collecting => Ok((i, r)),
                    q = next, if room => Err(q),
                }
            };
            match event {
                Ok((i, r)) => {
                    let p = rx.collecting.remove(i);
                    return r.map(|()| p.into_message());
                }
                // Closed and empty: what is being collected is still handed out.
                Err(None) => {}
                Err(Some(Queued::Message(m))) => return Ok(m),
                Err(Some(Queued::Refused(e))) => return Err(*e),
                Err(Some(Queued::Incoming(i))) => rx.collecting.push(Partial::new(transfer(*i)?)),
            }
        }
    }

    /// The next whole message if one is there now, without waiting: a message handed back,
    /// or one that arrived whole (on a lane); or the error the next `recv` would return at
    /// once (a refused frame, `Closed`). None when nothing is ready, or when the next message
    /// is a stream still to be read, which `recv` collects. For a caller on another event
    /// loop (a binding), a receive with no crossing to the runtime's thread.
    ///
    /// ```no_run
    /// # async fn f(puller: weida::Puller) -> weida::Result<()> {
    /// let m = match puller.try_recv() {
    ///     Some(r) => r?,
    ///     None => puller.recv().await?,
    /// };
    /// # Ok(()) }
    /// ```
    pub fn try_recv(&self) -> Option<Result<Message>> {
        let r = self.try_recv_raw()?;
        Some(r.map(|mut m| {
            self.gap(&mut m);
            m
        }))
    }

    fn try_recv_raw(&self) -> Option<Result<Message>> {
        match self.inbox.take_ready() {
            Some(Ok(Queued::Message(m))) => return Some(Ok(m)),
            Some(Ok(Queued::Refused(e))) => return Some(Err(*e)),
            Some(Err(e)) => return Some(Err(e)),
            Some(Ok(Queued::Incoming(_))) => unreachable!("take_ready leaves streams queued"),
            None => {}
        }
        if let Some(m) = self.inbox.take_returned() {
            return Some(Ok(m));
        }
        if let Some(e) = self.inbox.take_deferred() {
            return Some(Err(e));
        }
        // Held by a waiting `recv`: that receive goes first.
        let mut rx = self.inbox.rx.try_lock().ok()?;
        match rx.try_next()? {
            Ok(Queued::Message(m)) => Some(Ok(m)),
            Ok(Queued::Refused(e)) => Some(Err(*e)),
            Err(e) => Some(Err(e)),
            // Collected by the next `recv`, beside any other being collected.
            Ok(Queued::Incoming(i)) => match transfer(*i) {
                Ok(t) => {
                    rx.collecting.push(Partial::new(t));
                    None
                }
                Err(e) => Some(Err(e)),
            },
        }
    }

    /// Up to `max` whole messages: waits for the first as [`Puller::recv`] does, then takes
    /// those that are ready without waiting (one call for a batch of small messages, one
    /// crossing for a binding). An error met after the first message ends the batch and is
    /// returned by the next receive, so no message and no error is lost. Cancel-safe: once it
    /// has its first message it never waits again, so a future dropped holds nothing (tested
    /// by `a_batch_that_meets_an_error_while_another_receive_waits_finishes_at_once`).
    pub async fn recv_many(&self, max: usize) -> Result<Vec<Message>> {
        use futures_util::FutureExt;
        if max == 0 {
            return Ok(Vec::new());
        }
        let mut out = vec![self.recv().await?];
        while out.len() < max {
            // Whole messages under one lock; what is left (a stream, a refusal, an empty
            // queue, a message handed back) the receive below takes or reports.
            let from = out.len();
            self.inbox.take_ready_messages(&mut out, max);
            if self.detectors.is_some() {
                for m in &mut out[from..] {
                    self.gap(m);
                }
            }
            if out.len() >= max {
                break;
            }
            match self.recv().now_or_never() {
                Some(Ok(m)) => out.push(m),
                // Nothing ready (the partial message, if any, is kept), or the endpoint is
                // closed, which the next receive reports again.
                None | Some(Err(Error::Closed)) => break,
                Some(Err(e)) => {
                    self.inbox.defer(e);
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Whole messages ready now, up to `max` in all in `out`, taken under one lock (what
    /// `recv_many` takes after its first): none if anything else comes first (a stream, a
    /// refusal, a message handed back), which `try_recv` then takes. Never waits.
    pub(crate) fn take_ready(&self, out: &mut Vec<Message>, max: usize) {
        let from = out.len();
        self.inbox.take_ready_messages(out, max);
        if self.detectors.is_some() {
            for m in &mut out[from..] {
                self.gap(m);
            }
        }
    }

    /// Hands back a message a caller received but could not deliver (a binding whose caller
    /// cancelled the receive as the message arrived on another thread): the next `recv` returns
    /// it first, so a cancelled receive loses nothing.
    pub fn give_back(&self, message: Message) {
        self.inbox.give_back(message);
    }

    /// Unbinds the path: a stream sent here from now on is refused with UNKNOWN_ENDPOINT, and
    /// once the streams already queued are taken, receiving ends with `Closed` (a receiver
    /// waiting on an empty queue gets it at once). The path may be bound again.
    pub fn close(&self) {
        self.inbox.close();
    }

    /// The next message as a stream, for bodies read in parts; under PerProducer ordering,
    /// with the gap before it in its meta. Cancel-safe.
    pub async fn accept(&self) -> Result<IncomingTransfer> {
        let mut t = transfer(self.inbox.next().await?)?;
        let meta = t.meta();
        if let (Some(d), Some(seq), Some(p)) = (&self.detectors, meta.sequence, &meta.producer) {
            let gap = d.lock().unwrap().gap(p, seq);
            t.meta_mut().gap = Some(gap);
        }
        Ok(t)
    }
}

/// The first of `collecting` to be whole (or to fail): its index and how its read ended.
/// Cancel-safe: each keeps what it read.
async fn first_whole(collecting: &mut [Partial], max: u64) -> (usize, Result<()>) {
    let reads = collecting
        .iter_mut()
        .enumerate()
        .map(|(i, p)| Box::pin(async move { (i, p.read_all(max).await) }));
    futures_util::future::select_all(reads).await.0
}

/// A puller's route admits only transfers.
fn transfer(i: Incoming) -> Result<IncomingTransfer> {
    match i {
        Incoming::Stream(t) => Ok(t),
        Incoming::Exchange(_) => Err(Error::Protocol("an exchange reached a puller".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EndpointOptions, RuntimeConfig};
    use crate::connection::handles::IncomingMeta;
    use crate::error::Limit;
    use crate::runtime::queue;
    use futures_util::FutureExt;

    fn message(body: &'static [u8]) -> Queued {
        Queued::Message(Message {
            meta: Arc::new(IncomingMeta::default()),
            body: Bytes::from_static(body),
        })
    }

    /// The case `recv_many`'s doc names: an error met after the first message, while another
    /// receive holds the receive lock (here the test holds it). Keeping the error used to wait
    /// for that lock, so a future dropped there (a binding's timeout, a `select!`) lost the
    /// message it had already taken.
    #[tokio::test]
    async fn a_batch_that_meets_an_error_while_another_receive_waits_finishes_at_once() {
        let config = RuntimeConfig::default();
        let bounds = EndpointOptions::default().resolve(&config).unwrap();
        let (tx, rx) = queue::channel(8);
        let puller = Puller::over(Inbox::unrouted(rx, Arc::new(Context::new(config)), bounds));
        let refused = Error::LimitExceeded {
            limit: Limit::CollectedBody,
            detail: "a frame above max_collected_body".into(),
        };
        for q in [
            message(b"one"),
            Queued::Refused(Box::new(refused)),
            message(b"two"),
        ] {
            assert!(tx.try_send(q).is_ok());
        }
        let held = puller.inbox.rx.lock().await;
        let batch = puller
            .recv_many(8)
            .now_or_never()
            .expect("a batch that has its first message never waits")
            .unwrap();
        assert_eq!(batch.len(), 1);
        assert_eq!(&batch[0].body[..], b"one");
        drop(held);
        // The error comes next, then what followed it, each once.
        let e = puller.recv().await.unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::LimitExceeded);
        assert_eq!(&puller.recv().await.unwrap().body[..], b"two");
        assert!(puller.try_recv().is_none());
    }

    /// An error a batch receive defers while another receive already waits (holding the
    /// receive lock, on an empty queue) wakes that receive, which returns it: it does not wait
    /// for a next message with an error due before it.
    #[tokio::test]
    async fn an_error_deferred_while_a_receive_waits_is_that_receives() {
        let config = RuntimeConfig::default();
        let bounds = EndpointOptions::default().resolve(&config).unwrap();
        let (tx, rx) = queue::channel(8);
        let puller = Arc::new(Puller::over(Inbox::unrouted(
            rx,
            Arc::new(Context::new(config)),
            bounds,
        )));
        let waiting = tokio::spawn({
            let p = puller.clone();
            async move { p.recv().await }
        });
        // The test's runtime has one thread: the spawned receive runs to its wait here.
        tokio::task::yield_now().await;
        let refused = Error::LimitExceeded {
            limit: Limit::CollectedBody,
            detail: "a frame above max_collected_body".into(),
        };
        assert!(tx.try_send(message(b"one")).is_ok());
        assert!(tx.try_send(Queued::Refused(Box::new(refused))).is_ok());
        let batch = puller.recv_many(8).now_or_never().unwrap().unwrap();
        assert_eq!(batch.len(), 1);
        let r = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the waiting receive returns the deferred error")
            .unwrap();
        assert_eq!(r.unwrap_err().code(), crate::ErrorCode::LimitExceeded);
    }
}
