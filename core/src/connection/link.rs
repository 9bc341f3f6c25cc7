//! A dialled connection to one path of one peer: opening streams on it (the type byte and
//! DATA header, a plain header encoded once), its message lane, the requests of the control
//! stream (SUBSCRIBE, CHECK) and their ANSWER, and GOAWAY.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::context::Context;
use super::handshake::Agreed;
use super::lane::{FrameHead, Lane, TrySend};
use super::numbering::Numbering;
use crate::error::{Error, Limit, LossCause, Result};
use crate::transport::{Conn, PeerIdentity, RecvHalf, SendHalf, StreamError, UnclaimedHalf};
use crate::wire::{lane_frame, varint, Code, ControlFrame, Header, HeaderRef, Session, StreamType};

/// A dialled connection to one path of one peer.
pub(crate) struct Link {
    /// The runtime's side of the connection (its open state, counters and receipts).
    pub(crate) ctx: Arc<Context>,
    pub(crate) conn: Conn,
    pub(crate) path: Arc<str>,
    pub(crate) peer: Option<PeerIdentity>,
    /// The largest header the peer accepts.
    pub(crate) peer_max_header: u64,
    // Kept open for the connection's life: closing it would read as going away; GOAWAY (and
    // later SUBSCRIBE) frames ride it. Taken (and so finished) when the connection ends.
    control: tokio::sync::Mutex<Option<SendHalf>>,
    /// Streams opened on this connection, announced in GOAWAY (a lane's writer counts its own).
    opened: Arc<AtomicU64>,
    /// Both HELLOs offered message lanes.
    pub(crate) lanes: bool,
    /// Both HELLOs set the path check: the listener answers CHECK (PROTOCOL.md §3.1.5).
    path_check: bool,
    /// Both HELLOs set claims: the listener answers CLAIM (PROTOCOL.md §3.1.6).
    claims: bool,
    /// The lane toward this link's path, once a small message opened it.
    lane: Mutex<Option<Lane>>,
    /// Changes, under `lane`'s lock, whenever `lane` does: a sender's cached handle
    /// ([`LaneCache`]) is the current lane while its generation matches.
    lane_gen: AtomicU64,
    /// The encoded head of a transfer and of an exchange that carry only the path.
    plain_heads: [std::sync::OnceLock<Bytes>; 2],
    /// A local-socket subscriber's reverse-connection session.
    pub(crate) session: Option<Session>,
    /// Both HELLOs set lanes and lanes on parked connections: a parked connection may carry
    /// a lane of copies (PROTOCOL.md §3.7).
    pub(crate) parked_lanes: bool,
    /// The peer requires PerProducer ordering and this side's HELLO offered it (a pusher's):
    /// what a pusher sends here is numbered (PROTOCOL.md §3.3).
    pub(crate) numbering: Option<Arc<Numbering>>,
    /// SUBSCRIBE/UNSUBSCRIBE/CHECK requests waiting for their ANSWER.
    answers: Mutex<HashMap<u64, tokio::sync::oneshot::Sender<(Code, String)>>>,
    next_request: AtomicU64,
    /// Set by the link's task once it saw the connection end ([`Link::ended`]).
    ended: AtomicBool,
}

impl Link {
    /// A link over `conn`, on the terms its handshake agreed; `control` is this side's half of
    /// its control stream.
    pub(crate) fn new(
        ctx: Arc<Context>,
        conn: Conn,
        path: Arc<str>,
        control: SendHalf,
        agreed: &Agreed,
        session: Option<Session>,
    ) -> Self {
        Self {
            ctx,
            peer: conn.peer(),
            conn,
            path,
            peer_max_header: agreed.peer_max_header,
            control: tokio::sync::Mutex::new(Some(control)),
            opened: Arc::new(AtomicU64::new(0)),
            plain_heads: Default::default(),
            lanes: agreed.lanes,
            path_check: agreed.path_check,
            claims: agreed.claims,
            parked_lanes: agreed.parked_lanes,
            lane: Mutex::new(None),
            lane_gen: AtomicU64::new(0),
            session,
            numbering: agreed.numbered.then(|| Arc::new(Numbering::new())),
            answers: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            ended: AtomicBool::new(false),
        }
    }

    /// The listener's ANSWER to request `request` arrived (read by the link's control task).
    pub(crate) fn answered(&self, request: u64, code: Code, reason: String) {
        let tx = self.answers.lock().unwrap().remove(&request);
        if let Some(tx) = tx {
            let _ = tx.send((code, reason));
        }
    }

    /// The link's control task saw the connection end: [`Link::ended`] says so from now on.
    pub(crate) fn mark_ended(&self) {
        self.ended.store(true, Ordering::Release);
    }

    /// Lets go of this side's half of the control stream once the connection ended. Over a
    /// local socket the control stream is the connection, so this is how the listener learns
    /// that a closed runtime's dialler went (its socket's write side shut down) while the
    /// endpoint that holds this link lives on; a QUIC close says so by itself.
    pub(crate) async fn release_control(&self) {
        drop(self.control.lock().await.take());
    }

    /// Why the connection ended, once this link's task saw it end; None before. A flag, read
    /// without the lock quinn takes for `close_reason`: a sender on another thread (a
    /// binding's) contends with the I/O thread for that lock, and on the Node sender's profile
    /// the wait was ~10 % of each small send. It lags the transport by one wakeup of the I/O
    /// thread: a `try_send` in that window goes to the lane of a connection already lost, and
    /// is lost with what the lane had not delivered, as at-most-once allows (PATTERNS §1.11).
    /// The waiting paths (`PeerSet::pick`, runtime/peers.rs) and the count of live links ask
    /// the transport itself ([`Link::loss`]).
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
        let counted = head.len() - 1 - varint::len_from_first_byte(head[1]);
        self.within_peer_header(counted)?;
        let head = Bytes::from(head);
        if let (true, Some(slot)) = (plain, slot) {
            let _ = slot.set(head.clone());
        }
        Ok(head)
    }

    /// A header of `counted` bytes (what the length prefix counts) is within the peer's
    /// MAX_HEADER_SIZE, or `LimitExceeded` before anything is sent.
    fn within_peer_header(&self, counted: usize) -> Result<()> {
        if counted as u64 > self.peer_max_header {
            return Err(Error::limit(
                Limit::HeaderSize,
                format!(
                    "header of {counted} bytes, the peer accepts {}",
                    self.peer_max_header
                ),
            ));
        }
        Ok(())
    }

    /// Sends a whole message as a frame on this link's lane (started on first use). A lane that
    /// ended early reports why to one sender, then is replaced. Waits while the lane's queue is
    /// full. `numbered`: the frame takes the link's next number as it is queued (a pusher's,
    /// when the peer requires ordering). Cancel-safe.
    pub(crate) async fn lane_send(
        &self,
        header: Header,
        body: Bytes,
        numbered: bool,
        send_timeout: Option<std::time::Duration>,
    ) -> Result<()> {
        self.ctx.check_running()?;
        let encoded = |header: &Header| {
            let mut head = Vec::with_capacity(16);
            lane_frame::encode_frame_head(header, body.len(), &mut head);
            head
        };
        let counted =
            |h: &[u8]| h.len() - varint::len(body.len() as u64) - varint::len_from_first_byte(h[0]);
        let head = match &self.numbering {
            Some(n) if numbered => {
                // The bound is checked at the largest number: nothing is taken before.
                self.within_peer_header(counted(&encoded(&n.largest(&header))))?;
                FrameHead::Numbered(Box::new(header), body.len(), n.clone())
            }
            _ if header.is_empty() => FrameHead::plain(body.len()),
            _ => {
                let head = encoded(&header);
                self.within_peer_header(counted(&head))?;
                FrameHead::Encoded(head)
            }
        };
        let lane = {
            let mut slot = self.lane.lock().unwrap();
            if let Some(l) = slot.as_ref() {
                if let Some(e) = l.take_failure() {
                    self.set_lane(&mut slot, None);
                    return Err(e);
                }
            }
            if slot.is_none() {
                let new = self.start_lane()?;
                self.set_lane(&mut slot, Some(new));
            }
            let lane = slot.as_ref().expect("set above");
            match lane.try_send(head, body) {
                Ok(()) => return Ok(()),
                Err(TrySend::Ended(e)) => {
                    self.set_lane(&mut slot, None);
                    return Err(e);
                }
                Err(TrySend::Full(head, body)) => (lane.clone(), head, body),
            }
        };
        let (lane, head, body) = lane;
        // Bounded like a wait for a stream slot (`send_timeout`).
        let r = Context::within(send_timeout, lane.send(head, body)).await;
        if r.is_err() {
            self.forget_lane(&lane);
        }
        r
    }

    /// Replaces the lane (under its lock), so every cached handle is stale.
    fn set_lane(&self, slot: &mut Option<Lane>, lane: Option<Lane>) {
        *slot = lane;
        self.lane_gen.fetch_add(1, Ordering::AcqRel);
    }

    /// Drops `lane` from the link if it is still the current one: the next send starts anew.
    fn forget_lane(&self, lane: &Lane) {
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
        match lane.try_send(FrameHead::plain(body.len()), body) {
            Ok(()) => Ok(None),
            Err(TrySend::Full(_, body)) => Ok(Some(body)),
            Err(TrySend::Ended(e)) => {
                let (lane, _) = cache.take().expect("matched above");
                self.forget_lane(&lane);
                Err(e)
            }
        }
    }

    /// A new lane, or `LimitExceeded` with nothing opened when its head, a header too
    /// (PROTOCOL.md §4.1), is above the peer's MAX_HEADER_SIZE (a path that long).
    fn start_lane(&self) -> Result<Lane> {
        let head = Header::for_path(&self.path);
        self.within_peer_header(HeaderRef::from(&head).counted_len())?;
        let mut h = vec![StreamType::Lane.to_byte()];
        head.encode(&mut h);
        Ok(Lane::start(
            self.ctx.clone(),
            self.conn.clone(),
            self.path.clone(),
            Bytes::from(h),
            self.opened.clone(),
        ))
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
        let answer = self
            .request(None, |request| {
                let s = crate::wire::Subscription {
                    request,
                    path: self.path.to_string(),
                    filter: filter.to_string(),
                };
                match subscribe {
                    true => ControlFrame::Subscribe(s),
                    false => ControlFrame::Unsubscribe(s),
                }
            })
            .await?;
        match answer {
            (Code::NoError, _) => Ok(()),
            // The one bound a publisher answers LIMIT_EXCEEDED for.
            (Code::LimitExceeded, reason) if subscribe => Err(Error::limit(Limit::Filters, reason)),
            (code, reason) => Err(code.into_error(&self.path, &reason)),
        }
    }

    /// Asks the listener whether the endpoint bound at this link's path takes one of `streams`
    /// ([`crate::wire::check_streams`]), so a `connect` to a mistyped path, or to a path of
    /// another pattern, fails at once instead of losing its first messages (PROTOCOL.md
    /// §3.1.5). `UnknownEndpoint` when nothing is bound there, `Unsupported` when what is bound
    /// takes none of them. A listener whose HELLO did not set the path check is not asked:
    /// the path is then learned at the first refusal, as before the check existed. The wait
    /// for the ANSWER is bounded by `connect_timeout` (then `Protocol`: the listener said it
    /// answers CHECK). Cancel-safe: an answer that comes after is dropped.
    pub(crate) async fn check(&self, streams: u64) -> Result<()> {
        if !self.path_check {
            return Ok(());
        }
        let within = self.ctx.limits.connect_timeout;
        let answer = self
            .request(Some(within), |request| {
                ControlFrame::Check(crate::wire::PathCheck {
                    request,
                    streams,
                    path: self.path.to_string(),
                })
            })
            .await?;
        match answer {
            (Code::NoError, _) => Ok(()),
            (code, reason) => Err(code.into_error(&self.path, &reason)),
        }
    }

    /// Claims the endpoint at this link's path in `role` (PROTOCOL.md §3.1.6): from the
    /// listener's NO_ERROR on, it takes this connection's streams and opens its own toward
    /// it. `Unsupported` when the listener takes no claims (its HELLO did not set FEATURES
    /// bit 3) or the path's endpoint takes none in this role, `UnknownEndpoint` when nothing
    /// is bound there, `LimitExceeded` when another peer holds it. The wait for the ANSWER is
    /// bounded by `connect_timeout`. Cancel-safe: an answer that comes after is dropped, and
    /// the connection (which the caller then lets go) releases the claim with it.
    pub(crate) async fn claim(&self, role: u64) -> Result<()> {
        if !self.claims {
            return Err(Error::Unsupported(format!(
                "the listener of {:?} takes no claims: its HELLO does not set FEATURES bit 3",
                &*self.path
            )));
        }
        let within = self.ctx.limits.connect_timeout;
        let answer = self
            .request(Some(within), |request| {
                ControlFrame::Claim(crate::wire::PathClaim {
                    request,
                    role,
                    path: self.path.to_string(),
                })
            })
            .await?;
        match answer {
            (Code::NoError, _) => Ok(()),
            // Only a pair's claim is refused for being held (PROTOCOL.md §3.1.6).
            (Code::LimitExceeded, reason) => Err(Error::limit(Limit::Peers, reason)),
            (code, reason) => Err(code.into_error(&self.path, &reason)),
        }
    }

    /// Sends the control frame `frame(request)` makes with the next request number and waits
    /// for its ANSWER (at most `within`), or the end of the connection.
    async fn request(
        &self,
        within: Option<std::time::Duration>,
        frame: impl FnOnce(u64) -> ControlFrame,
    ) -> Result<(Code, String)> {
        let request = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.answers.lock().unwrap().insert(request, tx);
        // Forgets the request however this ends (answered, lost, timed out, dropped).
        struct Forget<'a>(&'a Link, u64);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0.answers.lock().unwrap().remove(&self.1);
            }
        }
        let _forget = Forget(self, request);
        let mut out = Vec::new();
        frame(request).encode(&mut out);
        let lost = || Error::ConnectionLost(self.conn.loss().unwrap_or(LossCause::PeerClosed));
        let written = match self.control.lock().await.as_mut() {
            Some(c) => c.write(Bytes::from(out)).await.is_ok(),
            None => false,
        };
        if !written {
            return Err(lost());
        }
        let answer = async {
            tokio::select! {
                a = rx => a.map_err(|_| lost()),
                c = self.conn.closed() => Err(Error::ConnectionLost(c)),
            }
        };
        match within {
            None => answer.await,
            Some(d) => match tokio::time::timeout(d, answer).await {
                Ok(a) => a,
                // It set the path check in its HELLO and does not keep its word: a protocol
                // failure, not a network's.
                Err(_) => Err(Error::Protocol(format!(
                    "no ANSWER to request {request} within {d:?}"
                ))),
            },
        }
    }

    /// Announces that no more streams come, and how many did.
    pub(crate) async fn go_away(&self) {
        let mut out = Vec::new();
        ControlFrame::GoAway {
            opened: self.opened.load(Ordering::Acquire),
        }
        .encode(&mut out);
        if let Some(c) = self.control.lock().await.as_mut() {
            let _ = c.write(Bytes::from(out)).await;
        }
    }

    /// Opens a stream of `ty` and writes its type byte and header, with `body` in the same
    /// write when given. Waits for the peer's stream budget, bounded by `send_timeout`.
    pub(crate) async fn open(
        &self,
        ty: StreamType,
        header: Header,
        body: Option<Bytes>,
        send_timeout: Option<std::time::Duration>,
    ) -> Result<(SendHalf, Option<RecvHalf>)> {
        let shared = &*self.ctx;
        shared.check_running()?;
        let head = self.head(ty, header)?;
        let (send, recv) = match ty {
            StreamType::Exchange => {
                let (s, r) = Context::within(send_timeout, self.conn.open_exchange()).await?;
                (s, Some(r))
            }
            _ => (
                Context::within(send_timeout, self.conn.open_uni()).await?,
                None,
            ),
        };
        shared.stats.streams_opened.fetch_add(1, Ordering::Relaxed);
        self.opened.fetch_add(1, Ordering::AcqRel);
        // Reset, not finished short, if this future is dropped during the write.
        let mut send = UnclaimedHalf::new(send);
        let r = match body {
            Some(b) => {
                let n = b.len() as u64;
                let r = send.half().write_all(&mut [head, b]).await;
                if r.is_ok() {
                    shared.stats.add_sent(n);
                }
                r
            }
            None => send.half().write(head).await,
        };
        let send = send.claim();
        match r {
            Ok(()) => Ok((send, recv)),
            // The peer stopped an exchange's request before it was written whole: it answered
            // or refused without reading it all (the refusal race, PATTERNS §1.6). Its reply
            // says why, so the caller gets the stream to read it (its `finish` then fails);
            // seen from several threads at once, a small request written as two chunks meets
            // this with the replier acting between them.
            Err(StreamError::Stopped(_)) if recv.is_some() => Ok((send, recv)),
            Err(e) => Err(e.into_write_error(&self.path)),
        }
    }
}

/// A sender's handle to a link's lane and the generation it was current at.
pub(crate) type LaneCache = Option<(Lane, u64)>;
