//! The stream handles every pattern hands out: `OutgoingTransfer` and its `Delivery`,
//! `IncomingTransfer`, `Exchange` and `PendingReply`, `Incoming` (what a bound endpoint
//! receives), and the metadata that arrives with them.

use std::sync::Arc;

use bytes::Bytes;

use super::cancel::{Canceler, Parked};
use super::context::Context;
use super::share::Ticket;
use crate::error::{Error, Limit, LossCause, Result};
use crate::transport::reader::{concat, ReadFail, StreamReader, READ_CHUNK};
use crate::transport::{
    LiveStream, PeerIdentity, Receipt, RecvHalf, SendHalf, StreamError, UnclaimedHalf,
};
use crate::wire::{self, reply, Code, Header, Metadata, ReplyStatus};

/// What arrived with an incoming stream.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct IncomingMeta {
    /// The peer, as the transport proved it: a key over QUIC (None for an anonymous client),
    /// the kernel's credentials over AF_UNIX, None in process. Never from a header.
    pub peer: Option<PeerIdentity>,
    /// The endpoint path the stream was addressed to: shared by every message of a path, so
    /// a small message costs no allocation for it.
    pub path: Arc<str>,
    /// Application metadata.
    pub metadata: Metadata,
    /// Pub/Sub topic, when there is one.
    pub topic: Option<String>,
    /// PerProducer sequence number: present on a Pub/Sub copy when this subscriber requires
    /// PerProducer ordering (detect or reassemble) and the publisher agreed.
    pub sequence: Option<u64>,
    /// How many numbers were missed before this one, under PerProducer ordering.
    pub gap: Option<u64>,
    /// Who numbered it (the PRODUCER field): the scope of `sequence`.
    pub(crate) producer: Option<Bytes>,
}

impl IncomingMeta {
    pub(crate) fn from_header(mut h: Header, peer: Option<PeerIdentity>) -> Self {
        let path = h.path.take().map(Arc::from).unwrap_or_default();
        Self::on_path(h, peer, path)
    }

    /// What arrived with `h` at `path` (a lane's or a stream's path, shared: no allocation).
    pub(crate) fn on_path(h: Header, peer: Option<PeerIdentity>, path: Arc<str>) -> Self {
        Self {
            peer,
            path,
            metadata: h.meta,
            topic: h.topic,
            sequence: h.sequence,
            gap: None,
            producer: h.producer,
        }
    }
}
/// An outgoing stream: write at your own pace, then `finish` (a commitment: the payload
/// arrives without any local handle) or `cancel` (the reader sees Canceled, never EOF).
/// Dropping an unfinished transfer cancels it.
///
/// ```no_run
/// # async fn f(pusher: weida::Pusher) -> weida::Result<()> {
/// let mut t = pusher.open(Default::default()).await?;
/// t.write(&b"part one, "[..]).await?;
/// t.write(&b"part two"[..]).await?;
/// t.finish().await?.delivered().await?; // the peer's transport holds every byte
/// # Ok(()) }
/// ```
pub struct OutgoingTransfer {
    /// The send half, until a canceler was taken (then it is parked in `parked` between
    /// operations) or `finish`/`cancel` consumed it.
    send: Option<SendHalf>,
    parked: Option<Arc<Parked<SendHalf>>>,
    path: Arc<str>,
    ctx: Arc<Context>,
    // Set once the FIN is queued: the request half of an exchange tells its reply reader that a
    // loss from then on is Indeterminate.
    finished: Option<Arc<std::sync::atomic::AtomicBool>>,
    // A reply keeps its exchange live on the connection until it reached the requester, so a
    // graceful drain does not close the connection under it.
    live: Option<LiveStream>,
}

impl OutgoingTransfer {
    pub(crate) fn new(send: SendHalf, path: Arc<str>, ctx: Arc<Context>) -> Self {
        Self {
            send: Some(send),
            parked: None,
            path,
            ctx,
            finished: None,
            live: None,
        }
    }

    pub(crate) fn with_finish_flag(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.finished = Some(flag);
        self
    }

    /// A handle that cancels this transfer from anywhere: a pending `write` or `stopped`
    /// fails `Canceled` at once, a later one too, the reader sees `Canceled`, and an idle
    /// transfer is reset at once; after `finish` it does nothing (see [`Canceler`]). Free
    /// until called; from then on the send half is shared with the handle.
    pub fn canceler(&mut self) -> Canceler {
        if let Some(p) = &self.parked {
            return p.canceler();
        }
        let p = match self.send.take() {
            Some(send) => Parked::new(send, reset_canceled),
            // Only `finish` and `cancel` take it, and both consume the transfer.
            None => unreachable!("present until finish or cancel consume the transfer"),
        };
        let c = p.canceler();
        self.parked = Some(p);
        c
    }

    /// Runs `op` on the send half: directly, or, once a canceler was taken, interrupted by it.
    async fn with_half<R>(
        &mut self,
        op: impl AsyncFnOnce(&mut SendHalf) -> Result<R>,
    ) -> Result<R> {
        match (&mut self.send, &self.parked) {
            (Some(send), _) => op(send).await,
            (None, Some(p)) => p.run(op).await,
            (None, None) => unreachable!("present until finish or cancel consume the transfer"),
        }
    }

    /// Writes all of `data`. Waits while the peer's window is full (backpressure). Not
    /// cancel-safe: a dropped write leaves an unknown prefix written, and the transfer should
    /// be cancelled. `Canceled` once a [`Canceler`] cancelled it, even if the bytes were
    /// written as it did.
    pub async fn write(&mut self, data: impl Into<Bytes>) -> Result<()> {
        let b: Bytes = data.into();
        let n = b.len() as u64;
        let path = self.path.clone();
        self.with_half(async |h| h.write(b).await.map_err(|e| e.into_write_error(&path)))
            .await?;
        self.ctx.stats.add_sent(n);
        Ok(())
    }

    /// Writes several buffers in order, as one write where the transport allows. Not
    /// cancel-safe, as `write` is not: cancel the transfer after a dropped write.
    pub async fn write_chunks(&mut self, mut data: Vec<Bytes>) -> Result<()> {
        let n: u64 = data.iter().map(|b| b.len() as u64).sum();
        let path = self.path.clone();
        self.with_half(async |h| {
            h.write_all(&mut data)
                .await
                .map_err(|e| e.into_write_error(&path))
        })
        .await?;
        self.ctx.stats.add_sent(n);
        Ok(())
    }

    /// Queues the FIN. From here the payload arrives with no local handle; the returned
    /// [`Delivery`] reports the transport receipt and may be dropped for free. Not
    /// cancel-safe: it consumes the transfer. It waits only over AF_UNIX, to write the FIN,
    /// and a `finish` dropped there ends the stream without one, which the reader sees as a
    /// loss, never as a complete payload. `Canceled` if a [`Canceler`] cancelled it first; a
    /// cancel once the finish began does nothing.
    pub async fn finish(mut self) -> Result<Delivery> {
        let send = match (self.send.take(), &self.parked) {
            (Some(send), _) => send,
            (None, Some(p)) => p.finish()?,
            (None, None) => unreachable!("present until finish"),
        };
        let receipt = send
            .finish()
            .await
            .map_err(|e| e.into_write_error(&self.path))?;
        if let Some(f) = &self.finished {
            f.store(true, std::sync::atomic::Ordering::Release);
        }
        if let Some(live) = self.live.take() {
            live.release_after(&receipt);
        }
        Ok(Delivery {
            receipt: Some(receipt),
            path: self.path.clone(),
            ctx: self.ctx.clone(),
        })
    }

    /// Abandons the transfer: the reader sees Canceled, never a complete payload.
    pub fn cancel(self) {
        // Dropping it does: see Drop.
    }

    /// Resolves when the reader refuses or stops the transfer, with the error it means
    /// (`Canceled` once a [`Canceler`] cancelled it). Cancel-safe.
    pub async fn stopped(&mut self) -> Error {
        let path = self.path.clone();
        let r = self
            .with_half(async |h| {
                Ok(match h.stopped().await {
                    Ok(code) => code.into_error(&path, ""),
                    Err(e) => e.into_write_error(&path),
                })
            })
            .await;
        r.unwrap_or_else(|e| e)
    }
}

fn reset_canceled(mut send: SendHalf) {
    send.reset(Code::Canceled);
}

impl Drop for OutgoingTransfer {
    fn drop(&mut self) {
        if let Some(s) = self.send.take() {
            reset_canceled(s);
        } else if let Some(p) = &self.parked {
            // Unfinished: cancelled (after finish, nothing).
            p.canceler().cancel();
        }
    }
}

impl std::fmt::Debug for OutgoingTransfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutgoingTransfer")
            .field("path", &self.path)
            .finish()
    }
}

/// The transport receipt of a finished transfer. Dropping it is free and observes nothing;
/// the runtime keeps the receipt so `Runtime::drain` can count it.
pub struct Delivery {
    receipt: Option<Receipt>,
    path: Arc<str>,
    ctx: Arc<Context>,
}

impl Delivery {
    /// Resolves when the peer's transport holds every byte and the FIN — not when an
    /// application read it (GUARANTEES §3). A refusal that reached this side first is its
    /// error. Not cancel-safe: a receipt whose wait is dropped is not counted by `drain`.
    pub async fn delivered(mut self) -> Result<()> {
        let r = self
            .receipt
            .take()
            .expect("present until awaited")
            .wait()
            .await;
        r.map_err(|e| e.into_write_error(&self.path))
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if let Some(r) = self.receipt.take() {
            self.ctx.receipts.park(r);
        }
    }
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("path", &self.path)
            .finish()
    }
}

/// An incoming one-way stream (or the body of a request, or of a reply). Read it in chunks or
/// collect it; dropping it unread stops the writer.
pub struct IncomingTransfer {
    reader: StreamReader,
    meta: IncomingMeta,
    ctx: Arc<Context>,
    /// Set when this is a reply and its request's FIN is queued: a loss from then on is
    /// Indeterminate (the flag is read at the loss, since a streamed request may finish late).
    indeterminate_on_loss: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Its place in its connection's share of the endpoint, given back when it is dropped.
    _ticket: Option<Ticket>,
}

impl IncomingTransfer {
    /// A whole message (from a lane) as a finished stream.
    pub(crate) fn ready(m: Message, ctx: Arc<Context>) -> Self {
        Self::new(
            StreamReader::new(RecvHalf::Ready(Some(m.body))),
            Arc::unwrap_or_clone(m.meta),
            ctx,
        )
    }

    pub(crate) fn new(reader: StreamReader, meta: IncomingMeta, ctx: Arc<Context>) -> Self {
        Self {
            reader,
            meta,
            ctx,
            indeterminate_on_loss: None,
            _ticket: None,
        }
    }

    /// Holds `ticket` until this transfer is dropped (read whole, answered, or refused).
    pub(crate) fn holding(mut self, ticket: Option<Ticket>) -> Self {
        self._ticket = ticket;
        self
    }

    /// What arrived with the stream.
    pub fn meta(&self) -> &IncomingMeta {
        &self.meta
    }

    pub(crate) fn meta_mut(&mut self) -> &mut IncomingMeta {
        &mut self.meta
    }

    fn map(&self, e: StreamError) -> Error {
        match e {
            StreamError::Lost(c)
                if self
                    .indeterminate_on_loss
                    .as_ref()
                    .is_some_and(|f| f.load(std::sync::atomic::Ordering::Acquire)) =>
            {
                Error::Indeterminate(c)
            }
            other => other.into_read_error(),
        }
    }

    /// The next chunk, `None` after the writer's FIN. A cancelled or abandoned stream is an
    /// error (Canceled, or ConnectionLost), never `None`. Cancel-safe.
    pub async fn read_chunk(&mut self) -> Result<Option<Bytes>> {
        self.read_up_to(READ_CHUNK).await
    }

    /// The next chunk of at most `max` bytes (a collector passes what it still accepts, so a
    /// body handed over whole in process stays one buffer).
    pub(crate) async fn read_up_to(&mut self, max: usize) -> Result<Option<Bytes>> {
        match self.reader.chunk(max.max(1)).await {
            Ok(Some(b)) => {
                self.ctx.stats.add_received(b.len() as u64);
                Ok(Some(b))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(self.map(e)),
        }
    }

    /// Reads the whole body, refusing one above `max` bytes: the writer is stopped with
    /// LIMIT_EXCEEDED and this returns `LimitExceeded`. Not cancel-safe (use `read_chunk`).
    pub async fn collect(&mut self, max: u64) -> Result<Bytes> {
        let mut parts = Vec::new();
        let mut total = 0u64;
        while let Some(c) = self
            .read_up_to(
                (max - total.min(max))
                    .saturating_add(1)
                    .min(usize::MAX as u64) as usize,
            )
            .await?
        {
            total += c.len() as u64;
            if total > max {
                self.reader.stop(Code::LimitExceeded);
                return Err(Error::limit(
                    Limit::CollectedBody,
                    format!(
                        "a body above max_collected_body {max} ({})",
                        crate::error::human_bytes(max)
                    ),
                ));
            }
            parts.push(c);
        }
        Ok(concat(parts))
    }

    /// Refuses the stream with the code `error` maps to (REJECTED for `Error::Rejected`, ...).
    pub fn refuse(mut self, error: &Error) {
        self.reader.stop(Code::of_error(error));
    }

    pub(crate) fn set_indeterminate_on_loss(
        &mut self,
        finished: Arc<std::sync::atomic::AtomicBool>,
    ) {
        self.indeterminate_on_loss = Some(finished);
    }

    pub(crate) fn stop_reader(&mut self, code: Code) {
        self.reader.stop(code);
    }

    /// Hands the stream's place among its connection's live streams to whoever answers it.
    pub(crate) fn take_live(&mut self) -> Option<LiveStream> {
        self.reader.take_live()
    }
}

impl std::fmt::Debug for IncomingTransfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IncomingTransfer")
            .field("meta", &self.meta)
            .finish()
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

/// A whole message: its metadata and its body.
#[derive(Debug, Clone)]
pub struct Message {
    /// What arrived with it. Shared: the messages of one lane that carry no header field of
    /// their own share one, so a small message is moved and queued at a pointer's size, not
    /// at the metadata's (about 130 bytes; profiled at a fifth of a 64-byte Push/Pull).
    pub meta: Arc<IncomingMeta>,
    /// The body.
    pub body: Bytes,
}

/// An incoming exchange: the request (a stream) and the reply half the caller answers on. An
/// exchange dropped without an answer resets its reply: the requester sees Canceled.
pub struct Exchange {
    request: IncomingTransfer,
    reply: Option<SendHalf>,
    /// The largest reply header the requester accepts (its HELLO's MAX_HEADER_SIZE).
    peer_max_header: u64,
    /// What `take_body` collects: the endpoint's `max_collected_body`.
    max_body: u64,
}

impl Exchange {
    pub(crate) fn new(
        request: IncomingTransfer,
        reply: SendHalf,
        peer_max_header: u64,
        max_body: u64,
    ) -> Self {
        Self {
            request,
            reply: Some(reply),
            peer_max_header,
            max_body,
        }
    }

    /// What arrived with the request.
    pub fn meta(&self) -> &IncomingMeta {
        self.request.meta()
    }

    /// The request's next chunk (the reply may be written before the request ends).
    /// Cancel-safe, as [`IncomingTransfer::read_chunk`] is.
    pub async fn read_chunk(&mut self) -> Result<Option<Bytes>> {
        self.request.read_chunk().await
    }

    /// The whole request body, bounded by `max_collected_body` (the replier's or acceptor's,
    /// else the runtime's `Limits`). Not cancel-safe: the part read before a drop is lost
    /// (read with `read_chunk` to resume).
    pub async fn take_body(&mut self) -> Result<Bytes> {
        self.request.collect(self.max_body).await
    }

    /// The whole request body, bounded by `max`. Not cancel-safe, as `take_body` is not.
    pub async fn take_body_capped(&mut self, max: u64) -> Result<Bytes> {
        self.request.collect(max).await
    }

    fn ctx(&self) -> Arc<Context> {
        self.request.ctx.clone()
    }

    /// The reply half, once: an exchange is answered by exactly one reply or error.
    fn take_reply(&mut self) -> Result<SendHalf> {
        self.reply
            .take()
            .ok_or_else(|| Error::InvalidConfig("this exchange was already answered".into()))
    }

    /// Replies with `body` and finishes the reply half. Not cancel-safe: it consumes the
    /// exchange, and a reply dropped before it returns never reaches the requester whole: its
    /// `request` fails `Canceled`
    /// (`cancel.rs: a_reply_dropped_mid_write_is_canceled_at_the_requester_quic`; over AF_UNIX,
    /// a reply dropped while its FIN is written is a loss).
    pub async fn reply(self, body: impl Into<Bytes>) -> Result<()> {
        self.reply_with(Metadata::new(), body).await
    }

    /// Replies with metadata and `body`. Not cancel-safe, as `reply` is not.
    pub async fn reply_with(mut self, meta: Metadata, body: impl Into<Bytes>) -> Result<()> {
        let t = self.start_reply(meta, Some(body.into())).await?;
        t.finish().await?;
        Ok(())
    }

    /// Opens the reply half as a stream, for a reply written in parts. Takes `&mut self`: the
    /// request can still be read while the reply is written (a replier may answer before the
    /// request ends). The exchange is answered by this: `reply` and `fail` after it fail with
    /// `InvalidConfig` (already answered). Not cancel-safe: dropped during the write of the
    /// reply's head, the reply half is reset (the requester reads `Canceled`) and the exchange
    /// still counts as answered.
    pub async fn open_reply(&mut self, meta: Metadata) -> Result<OutgoingTransfer> {
        self.start_reply(meta, None).await
    }

    /// Writes the reply's status and header, with `body` in the same write when given.
    async fn start_reply(
        &mut self,
        meta: Metadata,
        body: Option<Bytes>,
    ) -> Result<OutgoingTransfer> {
        let shared = self.ctx();
        let path: Arc<str> = self.request.meta.path.clone();
        let mut head = vec![ReplyStatus::Ok.to_byte()];
        Header {
            meta,
            ..Header::default()
        }
        .encode(&mut head);
        // Checked before the reply half is taken: a replier refused here can still answer
        // with less metadata, or fail.
        let counted = head.len() - 1 - wire::varint::len_from_first_byte(head[1]);
        if counted as u64 > self.peer_max_header {
            return Err(Error::limit(
                Limit::HeaderSize,
                format!(
                    "reply header of {counted} bytes, the requester accepts {}",
                    self.peer_max_header
                ),
            ));
        }
        // Reset, not finished short, if this future is dropped during the write.
        let mut send = UnclaimedHalf::new(self.take_reply()?);
        let r = match body {
            Some(b) => {
                let n = b.len() as u64;
                let r = send.half().write_all(&mut [Bytes::from(head), b]).await;
                if r.is_ok() {
                    shared.stats.add_sent(n);
                }
                r
            }
            None => send.half().write(Bytes::from(head)).await,
        };
        let send = send.claim();
        r.map_err(|e| e.into_write_error(&path))?;
        let mut t = OutgoingTransfer::new(send, path, shared);
        t.live = self.request.take_live();
        Ok(t)
    }

    /// Answers with an ERROR frame carrying `error`'s code and text (REJECTED for
    /// `Error::Rejected(reason)`, ...). The requester's `request` fails with that error. Not
    /// cancel-safe: it consumes the exchange, and dropped before it returns the requester may
    /// read `Canceled` instead of the error.
    pub async fn fail(mut self, error: &Error) -> Result<()> {
        let code = Code::of_error(error);
        let message = match error {
            Error::Rejected(s) | Error::Unsupported(s) => s.clone(),
            other => other.to_string(),
        };
        let send = self.take_reply()?;
        let live = self.request.take_live();
        write_error_reply(send, code, &message, live).await;
        Ok(())
    }

    /// Answers REJECTED with a reason. Not cancel-safe, as `fail` is not.
    pub async fn reject(self, reason: &str) -> Result<()> {
        self.fail(&Error::Rejected(reason.to_string())).await
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if let Some(mut s) = self.reply.take() {
            s.reset(Code::Canceled);
        }
    }
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("meta", self.meta())
            .finish()
    }
}

/// Writes an ERROR reply and finishes; failures are moot (the requester is gone).
/// Dropped during the write, the reply is reset (CANCELED), not finished short. `live`, the
/// exchange's place on its connection, is held until the ERROR reached the requester when the
/// requester is draining, as a reply's is ([`OutgoingTransfer::finish`]): a listener that closed
/// the connection at once would lose it.
pub(crate) async fn write_error_reply(
    send: SendHalf,
    code: Code,
    message: &str,
    live: Option<LiveStream>,
) {
    let mut v = Vec::new();
    reply::encode_error(code, message, &mut v);
    let mut send = UnclaimedHalf::new(send);
    if send.half().write(Bytes::from(v)).await.is_ok() {
        if let (Ok(receipt), Some(live)) = (send.claim().finish().await, live) {
            live.release_after(&receipt);
        }
    } else {
        // The stream already failed: dropped as before, not reset over its failure.
        drop(send.claim());
    }
}

/// The reply half of an exchange this side opened, not yet read.
pub struct PendingReply {
    reader: StreamReader,
    path: Arc<str>,
    ctx: Arc<Context>,
    peer: Option<PeerIdentity>,
    /// The request's writer finished: a loss from here on is Indeterminate.
    finished: Arc<std::sync::atomic::AtomicBool>,
    /// What `body` collects: the requester's `max_collected_body`.
    max_body: u64,
}

impl PendingReply {
    pub(crate) fn new(
        recv: RecvHalf,
        path: Arc<str>,
        ctx: Arc<Context>,
        peer: Option<PeerIdentity>,
        finished: Arc<std::sync::atomic::AtomicBool>,
        max_body: u64,
    ) -> Self {
        Self {
            reader: StreamReader::new(recv),
            path,
            ctx,
            peer,
            finished,
            max_body,
        }
    }

    fn lost(&self, c: LossCause) -> Error {
        if self.finished.load(std::sync::atomic::Ordering::Acquire) {
            Error::Indeterminate(c)
        } else {
            Error::ConnectionLost(c)
        }
    }

    fn fail(&self, f: ReadFail) -> Error {
        match f {
            ReadFail::Stream(StreamError::Lost(c)) => self.lost(c),
            other => other.into_error(),
        }
    }

    /// Waits for the reply's start: its metadata and a streamed body, or the peer's ERROR as
    /// this side's error. Loss after the request's FIN is `Indeterminate`. Not cancel-safe: it
    /// consumes the pending reply, and dropped before it returns the reply is refused (the
    /// replier's `reply` fails `Canceled`).
    pub async fn reply(mut self) -> Result<IncomingTransfer> {
        let status = match self.reader.byte().await {
            Ok(b) => b,
            Err(f) => return Err(self.fail(f)),
        };
        match ReplyStatus::from_byte(status) {
            Ok(ReplyStatus::Ok) => {
                let max = self.ctx.limits.max_header_size;
                let h = match self.reader.header(max).await {
                    Ok(h) => h,
                    Err(f) => {
                        self.reader.stop(f.code());
                        return Err(self.fail(f));
                    }
                };
                let meta = IncomingMeta::on_path(h, self.peer.clone(), self.path.clone());
                let ctx = self.ctx.clone();
                let mut t = IncomingTransfer::new(self.reader, meta, ctx);
                t.set_indeterminate_on_loss(self.finished.clone());
                Ok(t)
            }
            Ok(ReplyStatus::Error) => {
                // An ERROR is a code, a length and at most MAX_ERROR_MESSAGE bytes: a replier
                // cannot make the requester buffer more than that.
                let body = match self.reader.rest(16 + reply::MAX_ERROR_MESSAGE).await {
                    Ok(b) => b,
                    Err(ReadFail::Decode(_)) => {
                        self.reader.stop(Code::ProtocolError);
                        return Err(Error::Protocol("an ERROR frame above its bound".into()));
                    }
                    Err(f) => return Err(self.fail(f)),
                };
                match reply::decode_error(&body) {
                    Ok((code, message)) => Err(code.into_error(&self.path, &message)),
                    Err(e) => Err(Error::Protocol(format!("bad ERROR frame: {e}"))),
                }
            }
            Err(e) => {
                self.reader.stop(Code::ProtocolError);
                Err(Error::Protocol(e.to_string()))
            }
        }
    }

    /// The whole reply body, bounded by `max_collected_body` (the requester's, else the
    /// runtime's `Limits`). Not cancel-safe, as `reply` is not.
    pub async fn body(self) -> Result<Message> {
        let max = self.max_body;
        let mut t = self.reply().await?;
        let body = t.collect(max).await?;
        Ok(Message {
            meta: Arc::new(t.meta().clone()),
            body,
        })
    }
}

impl std::fmt::Debug for PendingReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingReply")
            .field("path", &self.path)
            .finish()
    }
}

/// A message being collected whole; its progress survives a cancelled collector, so the next
/// one resumes it (this is what makes `Puller::recv` cancel-safe).
pub(crate) struct Partial {
    transfer: IncomingTransfer,
    parts: Vec<Bytes>,
    total: u64,
}

impl Partial {
    pub(crate) fn new(transfer: IncomingTransfer) -> Self {
        Self {
            transfer,
            parts: Vec::new(),
            total: 0,
        }
    }

    /// Reads on until FIN, refusing a body above `max` (the writer is stopped with
    /// LIMIT_EXCEEDED). Cancel-safe.
    pub(crate) async fn read_all(&mut self, max: u64) -> Result<()> {
        loop {
            let room = (max - self.total.min(max))
                .saturating_add(1)
                .min(usize::MAX as u64) as usize;
            match self.transfer.read_up_to(room).await? {
                Some(c) => {
                    self.total += c.len() as u64;
                    if self.total > max {
                        self.transfer.stop_reader(Code::LimitExceeded);
                        return Err(Error::limit(
                            Limit::CollectedBody,
                            format!(
                                "a message above max_collected_body {max} ({})",
                                crate::error::human_bytes(max)
                            ),
                        ));
                    }
                    self.parts.push(c);
                }
                None => return Ok(()),
            }
        }
    }

    pub(crate) fn into_message(self) -> Message {
        Message {
            meta: Arc::new(self.transfer.meta),
            body: concat(self.parts),
        }
    }
}
