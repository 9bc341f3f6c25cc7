//! The stream types every pattern hands out: `OutgoingTransfer` and its `Delivery`,
//! `IncomingTransfer`, `Exchange` and `PendingReply`, with the metadata that arrives with them.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::error::{Error, Limit, LossCause, Result};
use crate::runtime::Shared;
use crate::transport::{PeerIdentity, Receipt, RecvHalf, SendHalf, StreamError};
use crate::wire::{self, reply, Code, DecodeError, Header, Metadata, ReplyStatus};

/// The most bytes one read hands back.
const READ_CHUNK: usize = 64 * 1024;
/// The most of a lane frame cut across chunks that is joined to the next chunk before the
/// frame is read field by field instead (a large frame is then copied once, not per chunk).
const CARRY_MAX: usize = 8 * 1024;

/// `a` then `b`, in one new buffer.
fn joined(a: &[u8], b: &[u8]) -> Bytes {
    let mut j = BytesMut::with_capacity(a.len() + b.len());
    j.extend_from_slice(a);
    j.extend_from_slice(b);
    j.freeze()
}

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
}

impl IncomingMeta {
    pub(crate) fn from_header(mut h: Header, peer: Option<PeerIdentity>) -> IncomingMeta {
        let path = h.path.take().map(Arc::from).unwrap_or_default();
        IncomingMeta::on_path(h, peer, path)
    }

    /// What arrived with `h` at `path` (a lane's or a stream's path, shared: no allocation).
    pub(crate) fn on_path(h: Header, peer: Option<PeerIdentity>, path: Arc<str>) -> IncomingMeta {
        IncomingMeta {
            peer,
            path,
            metadata: h.meta,
            topic: h.topic,
            sequence: h.sequence,
            gap: None,
        }
    }
}

/// A received stream's bytes, with what was read ahead of the caller kept in front.
pub(crate) struct StreamReader {
    recv: RecvHalf,
    ahead: Bytes,
    /// Stream ended (FIN read, or an error returned): nothing more to stop.
    ended: bool,
    /// Counts this stream as live on its connection until dropped (for a graceful drain).
    live: Option<crate::runtime::LiveStream>,
}

impl StreamReader {
    pub(crate) fn new(recv: RecvHalf) -> StreamReader {
        StreamReader {
            recv,
            ahead: Bytes::new(),
            ended: false,
            live: None,
        }
    }

    pub(crate) fn counted(mut self, live: Option<crate::runtime::LiveStream>) -> StreamReader {
        self.live = live;
        self
    }

    pub(crate) async fn chunk(
        &mut self,
        max: usize,
    ) -> std::result::Result<Option<Bytes>, StreamError> {
        if !self.ahead.is_empty() {
            let n = self.ahead.len().min(max);
            return Ok(Some(self.ahead.split_to(n)));
        }
        if self.ended {
            return Ok(None);
        }
        let r = self.recv.read_chunk(max).await;
        if !matches!(r, Ok(Some(_))) {
            self.ended = true;
        }
        r
    }

    /// Exactly `n` bytes, or `Truncated` if the stream ends first. Without a copy when the
    /// bytes are in one chunk, which is the common case for a type byte and a header.
    async fn exact(&mut self, n: usize) -> std::result::Result<Bytes, ReadFail> {
        if self.ahead.is_empty() && n > 0 {
            match self.chunk(usize::MAX).await.map_err(ReadFail::Stream)? {
                Some(c) => self.ahead = c,
                None => return Err(ReadFail::Decode(DecodeError::Truncated)),
            }
        }
        if self.ahead.len() >= n {
            return Ok(self.ahead.split_to(n));
        }
        let mut buf = BytesMut::with_capacity(n);
        buf.extend_from_slice(&std::mem::take(&mut self.ahead));
        while buf.len() < n {
            match self.chunk(READ_CHUNK).await.map_err(ReadFail::Stream)? {
                Some(c) => {
                    let need = n - buf.len();
                    if c.len() > need {
                        buf.extend_from_slice(&c[..need]);
                        self.ahead = c.slice(need..);
                    } else {
                        buf.extend_from_slice(&c);
                    }
                }
                None => return Err(ReadFail::Decode(DecodeError::Truncated)),
            }
        }
        Ok(buf.freeze())
    }

    pub(crate) async fn byte(&mut self) -> std::result::Result<u8, ReadFail> {
        Ok(self.exact(1).await?[0])
    }

    /// A varint, byte by byte as far as needed.
    async fn varint(&mut self) -> std::result::Result<u64, ReadFail> {
        let first = self.byte().await?;
        let n = wire::varint::len_from_first_byte(first);
        let mut v = [0u8; 8];
        v[0] = first;
        if n > 1 {
            v[1..n].copy_from_slice(&self.exact(n - 1).await?);
        }
        wire::varint::get(&mut &v[..n]).map_err(ReadFail::Decode)
    }

    /// The next lane frame (PROTOCOL.md §4.1): its header and its body (or, for a body above
    /// `max_body`, its length: the body was skipped), `None` at the lane's FIN. A body is one
    /// buffer, without a copy when it arrived in one chunk.
    #[allow(clippy::type_complexity)]
    pub(crate) async fn lane_frame(
        &mut self,
        max_header: u64,
        max_body: u64,
    ) -> std::result::Result<Option<(Header, std::result::Result<Bytes, u64>)>, ReadFail> {
        if self.ahead.is_empty() {
            match self.chunk(usize::MAX).await.map_err(ReadFail::Stream)? {
                Some(c) => self.ahead = c,
                None => return Ok(None),
            }
        }
        loop {
            let mut header = None;
            let missing = match self.lane_frame_ahead(max_header, max_body, &mut header) {
                Ahead::Frame(body) => return Ok(Some((header.unwrap_or_default(), Ok(body)))),
                Ahead::Short(missing) if !self.ended && self.ahead.len() < CARRY_MAX => missing,
                Ahead::Short(_) | Ahead::General => break,
            };
            // A frame cut across chunks (a 1 KiB frame often is): what is left is joined with
            // the next chunk, so that this frame parses in place. When the frame's length is
            // known only the bytes that complete it are copied, and the rest of the chunk (up
            // to 64 KiB on loopback) stays where it is for the frames after it.
            match self.recv.read_chunk(usize::MAX).await {
                Ok(Some(c)) => {
                    let take = missing.map_or(c.len(), |n| n.min(c.len()));
                    self.ahead = joined(&self.ahead, &c[..take]);
                    if take < c.len() {
                        // The frame is whole now (exactly what completes it was taken).
                        let frame = self.lane_frame_ahead(max_header, max_body, &mut header);
                        let rest = c.slice(take..);
                        self.ahead = match self.ahead.is_empty() {
                            true => rest,
                            false => joined(&self.ahead, &rest),
                        };
                        if let Ahead::Frame(body) = frame {
                            return Ok(Some((header.unwrap_or_default(), Ok(body))));
                        }
                    }
                }
                // The general path below reports the end (a frame cut short) or the error.
                Ok(None) => {
                    self.ended = true;
                    break;
                }
                Err(e) => {
                    self.ended = true;
                    return Err(ReadFail::Stream(e));
                }
            }
        }
        let header = self.header(max_header).await?;
        if header.path.is_some() {
            return Err(ReadFail::Decode(DecodeError::malformed(
                "a lane frame carries PATH",
            )));
        }
        let len = self.varint().await?;
        if len > max_body {
            // Refused, as a stream above the bound would be, but the lane goes on: the body is
            // read past without being kept (flow control bounds what that costs).
            self.skip(len).await?;
            return Ok(Some((header, Err(len))));
        }
        Ok(Some((header, Ok(self.exact(len as usize).await?))))
    }

    /// A lane frame that lies whole in what was read ahead, parsed from the buffer with one
    /// split for its body: the common case, as a batch of frames arrives in one chunk (the
    /// byte-by-byte path costs a shared-buffer clone per field). `Short` when the buffer ends
    /// inside a well-formed frame; `General` for anything else (a bound exceeded, a malformed
    /// field), which the field-by-field path reads and reports.
    fn lane_frame_ahead(
        &mut self,
        max_header: u64,
        max_body: u64,
        header: &mut Option<Header>,
    ) -> Ahead {
        let mut cur = &self.ahead[..];
        let header_len = match wire::varint::get(&mut cur) {
            Ok(n) => n,
            Err(DecodeError::Truncated) => return Ahead::Short(None),
            Err(_) => return Ahead::General,
        };
        if header_len > max_header {
            return Ahead::General;
        }
        if (cur.len() as u64) < header_len {
            return Ahead::Short(None);
        }
        let (header_bytes, mut cur) = cur.split_at(header_len as usize);
        // Most frames carry no field: the version byte alone, and no header is built.
        let fields = match header_bytes {
            [wire::header::VERSION] => None,
            _ => match Header::decode_body(header_bytes) {
                Ok(h) if h.path.is_some() => return Ahead::General,
                Ok(h) => Some(h),
                Err(_) => return Ahead::General,
            },
        };
        let len = match wire::varint::get(&mut cur) {
            Ok(n) => n,
            Err(DecodeError::Truncated) => return Ahead::Short(None),
            Err(_) => return Ahead::General,
        };
        if len > max_body {
            return Ahead::General;
        }
        if (cur.len() as u64) < len {
            return Ahead::Short(Some((len - cur.len() as u64) as usize));
        }
        let used = self.ahead.len() - cur.len();
        bytes::Buf::advance(&mut self.ahead, used);
        if fields.is_some() {
            *header = fields;
        }
        Ahead::Frame(self.ahead.split_to(len as usize))
    }

    /// The next lane frame if it is whole in what was already read, without waiting; None
    /// otherwise (nothing read ahead, a frame cut short, or one the field-by-field path of
    /// [`StreamReader::lane_frame`] must read and report), and then nothing was consumed.
    /// A frame's header is put in `header` when it has a field, which is left as it was
    /// otherwise.
    pub(crate) fn lane_frame_ready(
        &mut self,
        max_header: u64,
        max_body: u64,
        header: &mut Option<Header>,
    ) -> Option<Bytes> {
        if self.ahead.is_empty() {
            return None;
        }
        match self.lane_frame_ahead(max_header, max_body, header) {
            Ahead::Frame(body) => Some(body),
            Ahead::Short(_) | Ahead::General => None,
        }
    }

    /// Waits until a byte is there to read: true, or false at the FIN.
    pub(crate) async fn wait_data(&mut self) -> std::result::Result<bool, ReadFail> {
        if !self.ahead.is_empty() {
            return Ok(true);
        }
        match self.chunk(usize::MAX).await.map_err(ReadFail::Stream)? {
            Some(c) => {
                self.ahead = c;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Reads past `n` bytes without keeping them.
    async fn skip(&mut self, mut n: u64) -> std::result::Result<(), ReadFail> {
        while n > 0 {
            let want = n.min(READ_CHUNK as u64) as usize;
            match self.chunk(want).await.map_err(ReadFail::Stream)? {
                Some(c) => n -= c.len() as u64,
                None => return Err(ReadFail::Decode(DecodeError::Truncated)),
            }
        }
        Ok(())
    }

    /// A length-prefixed value (`len:varint bytes`), refusing one above `max` bytes.
    pub(crate) async fn prefixed(&mut self, max: usize) -> std::result::Result<Bytes, ReadFail> {
        let len = self.varint().await?;
        if len > max as u64 {
            return Err(ReadFail::Decode(DecodeError::TooLarge {
                what: "token",
                len,
                limit: max as u64,
            }));
        }
        self.exact(len as usize).await
    }

    /// A DATA header, refusing one above `max` bytes before reading it.
    pub(crate) async fn header(&mut self, max: u64) -> std::result::Result<Header, ReadFail> {
        let len = self.varint().await?;
        if len > max {
            return Err(ReadFail::Decode(DecodeError::TooLarge {
                what: "header",
                len,
                limit: max,
            }));
        }
        let body = self.exact(len as usize).await?;
        Header::decode_body(&body).map_err(ReadFail::Decode)
    }

    /// Everything up to FIN, refusing more than `max` bytes (`TooLarge`).
    pub(crate) async fn rest(&mut self, max: usize) -> std::result::Result<Bytes, ReadFail> {
        let mut parts: Vec<Bytes> = Vec::new();
        let mut total = 0usize;
        while let Some(c) = self.chunk(READ_CHUNK).await.map_err(ReadFail::Stream)? {
            total += c.len();
            if total > max {
                return Err(ReadFail::Decode(DecodeError::TooLarge {
                    what: "frame",
                    len: total as u64,
                    limit: max as u64,
                }));
            }
            parts.push(c);
        }
        Ok(concat(parts))
    }

    pub(crate) fn stop(&mut self, code: Code) {
        if !self.ended {
            self.ended = true;
            self.recv.stop(code);
        }
    }
}

pub(crate) fn concat(mut parts: Vec<Bytes>) -> Bytes {
    match parts.len() {
        0 => Bytes::new(),
        1 => parts.pop().unwrap(),
        _ => {
            let mut b = BytesMut::with_capacity(parts.iter().map(|p| p.len()).sum());
            for p in parts {
                b.extend_from_slice(&p);
            }
            b.freeze()
        }
    }
}

/// What the read-ahead buffer holds of the next lane frame.
enum Ahead {
    /// A whole frame's body; its header went to the caller's slot, which a frame with no
    /// field (the common case) leaves as it was: no header is built or moved for it.
    Frame(Bytes),
    /// The buffer ends inside the frame: the bytes still missing, once its length was read.
    Short(Option<usize>),
    /// Something the field-by-field path must read (and may report).
    General,
}

/// Why reading a framed part of a stream failed.
#[derive(Debug)]
pub(crate) enum ReadFail {
    Stream(StreamError),
    Decode(DecodeError),
}

impl ReadFail {
    /// The code a receiver stops a stream with when its framing is bad.
    pub(crate) fn code(&self) -> Code {
        match self {
            ReadFail::Stream(_) => Code::NoError,
            ReadFail::Decode(DecodeError::TooLarge { .. }) => Code::LimitExceeded,
            ReadFail::Decode(DecodeError::Unsupported(_)) => Code::Unsupported,
            ReadFail::Decode(_) => Code::ProtocolError,
        }
    }

    pub(crate) fn into_error(self) -> Error {
        match self {
            ReadFail::Stream(e) => e.into_read_error(),
            ReadFail::Decode(DecodeError::TooLarge { what, len, limit }) => Error::limit(
                Limit::HeaderSize,
                format!("{what} of {len} bytes, limit {limit}"),
            ),
            ReadFail::Decode(DecodeError::Truncated) => {
                Error::Protocol("stream ended inside a frame".into())
            }
            ReadFail::Decode(e) => Error::Protocol(e.to_string()),
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
    send: Option<SendHalf>,
    path: Arc<str>,
    shared: Arc<Shared>,
    // Set once the FIN is queued: the request half of an exchange tells its reply reader that a
    // loss from then on is Indeterminate.
    finished: Option<Arc<std::sync::atomic::AtomicBool>>,
    // A reply keeps its exchange live on the connection until it reached the requester, so a
    // graceful drain does not close the connection under it.
    live: Option<crate::runtime::LiveStream>,
}

impl OutgoingTransfer {
    pub(crate) fn new(send: SendHalf, path: Arc<str>, shared: Arc<Shared>) -> OutgoingTransfer {
        OutgoingTransfer {
            send: Some(send),
            path,
            shared,
            finished: None,
            live: None,
        }
    }

    pub(crate) fn with_finish_flag(mut self, flag: Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.finished = Some(flag);
        self
    }

    fn half(&mut self) -> &mut SendHalf {
        self.send
            .as_mut()
            .expect("present until finish or cancel consume the transfer")
    }

    /// Writes all of `data`. Waits while the peer's window is full (backpressure). Not
    /// cancel-safe: a dropped write leaves an unknown prefix written, and the transfer should
    /// be cancelled.
    pub async fn write(&mut self, data: impl Into<Bytes>) -> Result<()> {
        let b: Bytes = data.into();
        let n = b.len() as u64;
        let path = self.path.clone();
        self.half()
            .write(b)
            .await
            .map_err(|e| e.into_write_error(&path))?;
        self.shared.stats.add_sent(n);
        Ok(())
    }

    /// Writes several buffers in order, as one write where the transport allows.
    pub async fn write_chunks(&mut self, mut data: Vec<Bytes>) -> Result<()> {
        let n: u64 = data.iter().map(|b| b.len() as u64).sum();
        let path = self.path.clone();
        self.half()
            .write_all(&mut data)
            .await
            .map_err(|e| e.into_write_error(&path))?;
        self.shared.stats.add_sent(n);
        Ok(())
    }

    /// Queues the FIN. From here the payload arrives with no local handle; the returned
    /// [`Delivery`] reports the transport receipt and may be dropped for free.
    pub async fn finish(mut self) -> Result<Delivery> {
        let send = self.send.take().expect("present until finish");
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
            shared: self.shared.clone(),
        })
    }

    /// Abandons the transfer: the reader sees Canceled, never a complete payload.
    pub fn cancel(mut self) {
        if let Some(mut s) = self.send.take() {
            s.reset(Code::Canceled);
        }
    }

    /// Resolves when the reader refuses or stops the transfer, with the error it means.
    /// Cancel-safe.
    pub async fn stopped(&mut self) -> Error {
        let path = self.path.clone();
        match self.half().stopped().await {
            Ok(code) => code.into_error(&path, ""),
            Err(e) => e.into_write_error(&path),
        }
    }
}

impl Drop for OutgoingTransfer {
    fn drop(&mut self) {
        if let Some(mut s) = self.send.take() {
            s.reset(Code::Canceled);
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
    shared: Arc<Shared>,
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
            self.shared.receipts.park(r);
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
    shared: Arc<Shared>,
    /// Set when this is a reply and its request's FIN is queued: a loss from then on is
    /// Indeterminate (the flag is read at the loss, since a streamed request may finish late).
    indeterminate_on_loss: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl IncomingTransfer {
    /// A whole message (from a lane) as a finished stream.
    pub(crate) fn ready(m: Message, shared: Arc<Shared>) -> IncomingTransfer {
        IncomingTransfer::new(
            StreamReader::new(RecvHalf::Ready(Some(m.body))),
            Arc::unwrap_or_clone(m.meta),
            shared,
        )
    }

    pub(crate) fn new(
        reader: StreamReader,
        meta: IncomingMeta,
        shared: Arc<Shared>,
    ) -> IncomingTransfer {
        IncomingTransfer {
            reader,
            meta,
            shared,
            indeterminate_on_loss: None,
        }
    }

    /// What arrived with the stream.
    pub fn meta(&self) -> &IncomingMeta {
        &self.meta
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
                self.shared.stats.add_received(b.len() as u64);
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
                    format!("body above {max} bytes"),
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
    pub(crate) fn take_live(&mut self) -> Option<crate::runtime::LiveStream> {
        self.reader.live.take()
    }
}

impl std::fmt::Debug for IncomingTransfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IncomingTransfer")
            .field("meta", &self.meta)
            .finish()
    }
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
}

impl Exchange {
    pub(crate) fn new(
        request: IncomingTransfer,
        reply: SendHalf,
        peer_max_header: u64,
    ) -> Exchange {
        Exchange {
            request,
            reply: Some(reply),
            peer_max_header,
        }
    }

    /// What arrived with the request.
    pub fn meta(&self) -> &IncomingMeta {
        self.request.meta()
    }

    /// The request's next chunk (the reply may be written before the request ends).
    pub async fn read_chunk(&mut self) -> Result<Option<Bytes>> {
        self.request.read_chunk().await
    }

    /// The whole request body, bounded by `Limits::max_collected_body`.
    pub async fn take_body(&mut self) -> Result<Bytes> {
        let max = self.request.shared.limits.max_collected_body;
        self.request.collect(max).await
    }

    /// The whole request body, bounded by `max`.
    pub async fn take_body_capped(&mut self, max: u64) -> Result<Bytes> {
        self.request.collect(max).await
    }

    fn shared(&self) -> Arc<Shared> {
        self.request.shared.clone()
    }

    /// The reply half, once: an exchange is answered by exactly one reply or error.
    fn take_reply(&mut self) -> Result<SendHalf> {
        self.reply
            .take()
            .ok_or_else(|| Error::InvalidConfig("this exchange was already answered".into()))
    }

    /// Replies with `body` and finishes the reply half.
    pub async fn reply(self, body: impl Into<Bytes>) -> Result<()> {
        self.reply_with(Metadata::new(), body).await
    }

    /// Replies with metadata and `body`.
    pub async fn reply_with(mut self, meta: Metadata, body: impl Into<Bytes>) -> Result<()> {
        let t = self.start_reply(meta, Some(body.into())).await?;
        t.finish().await?;
        Ok(())
    }

    /// Opens the reply half as a stream, for a reply written in parts. Takes `&mut self`: the
    /// request can still be read while the reply is written (a replier may answer before the
    /// request ends). The exchange is answered by this; `reply`/`fail` after it are `Closed`.
    pub async fn open_reply(&mut self, meta: Metadata) -> Result<OutgoingTransfer> {
        self.start_reply(meta, None).await
    }

    /// Writes the reply's status and header, with `body` in the same write when given.
    async fn start_reply(
        &mut self,
        meta: Metadata,
        body: Option<Bytes>,
    ) -> Result<OutgoingTransfer> {
        let shared = self.shared();
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
        let mut send = self.take_reply()?;
        let r = match body {
            Some(b) => {
                let n = b.len() as u64;
                let r = send.write_all(&mut [Bytes::from(head), b]).await;
                if r.is_ok() {
                    shared.stats.add_sent(n);
                }
                r
            }
            None => send.write(Bytes::from(head)).await,
        };
        r.map_err(|e| e.into_write_error(&path))?;
        let mut t = OutgoingTransfer::new(send, path, shared);
        t.live = self.request.take_live();
        Ok(t)
    }

    /// Answers with an ERROR frame carrying `error`'s code and text (REJECTED for
    /// `Error::Rejected(reason)`, ...). The requester's `request` fails with that error.
    pub async fn fail(mut self, error: &Error) -> Result<()> {
        let code = Code::of_error(error);
        let message = match error {
            Error::Rejected(s) | Error::Unsupported(s) => s.clone(),
            other => other.to_string(),
        };
        let send = self.take_reply()?;
        write_error_reply(send, code, &message).await;
        Ok(())
    }

    /// Answers REJECTED with a reason.
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
pub(crate) async fn write_error_reply(mut send: SendHalf, code: Code, message: &str) {
    let mut v = Vec::new();
    reply::encode_error(code, message, &mut v);
    if send.write(Bytes::from(v)).await.is_ok() {
        let _ = send.finish().await;
    }
}

/// The reply half of an exchange this side opened, not yet read.
pub struct PendingReply {
    reader: StreamReader,
    path: Arc<str>,
    shared: Arc<Shared>,
    peer: Option<PeerIdentity>,
    /// The request's writer finished: a loss from here on is Indeterminate.
    finished: Arc<std::sync::atomic::AtomicBool>,
}

impl PendingReply {
    pub(crate) fn new(
        recv: RecvHalf,
        path: Arc<str>,
        shared: Arc<Shared>,
        peer: Option<PeerIdentity>,
        finished: Arc<std::sync::atomic::AtomicBool>,
    ) -> PendingReply {
        PendingReply {
            reader: StreamReader::new(recv),
            path,
            shared,
            peer,
            finished,
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
    /// this side's error. Loss after the request's FIN is `Indeterminate`.
    pub async fn reply(mut self) -> Result<IncomingTransfer> {
        let status = match self.reader.byte().await {
            Ok(b) => b,
            Err(f) => return Err(self.fail(f)),
        };
        match ReplyStatus::from_byte(status) {
            Ok(ReplyStatus::Ok) => {
                let max = self.shared.limits.max_header_size;
                let h = match self.reader.header(max).await {
                    Ok(h) => h,
                    Err(f) => {
                        self.reader.stop(f.code());
                        return Err(self.fail(f));
                    }
                };
                let meta = IncomingMeta::on_path(h, self.peer.clone(), self.path.clone());
                let shared = self.shared.clone();
                let mut t = IncomingTransfer::new(self.reader, meta, shared);
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

    /// The whole reply body, bounded by `Limits::max_collected_body`.
    pub async fn body(self) -> Result<Message> {
        let max = self.shared.limits.max_collected_body;
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
    pub(crate) fn new(transfer: IncomingTransfer) -> Partial {
        Partial {
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
                            format!("message above {max} bytes; use accept() to stream it"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::pipe::pipe;

    /// Frames of a lane: with and without header fields, empty and larger bodies.
    fn frames() -> Vec<(Header, Bytes)> {
        let mut with_fields = Header {
            topic: Some("a.b".into()),
            sequence: Some(300),
            ..Header::default()
        };
        with_fields.meta.insert("k", "v");
        vec![
            (Header::default(), Bytes::from_static(b"one")),
            (with_fields, Bytes::from(vec![7u8; 200])),
            (Header::default(), Bytes::new()),
            (Header::default(), Bytes::from(vec![9u8; 17_000])),
        ]
    }

    fn encoded() -> Vec<u8> {
        let mut out = Vec::new();
        for (h, b) in frames() {
            wire::lane_frame::encode_frame_head(&h, b.len(), &mut out);
            out.extend_from_slice(&b);
        }
        out
    }

    async fn read_back(
        chunks: Vec<Bytes>,
        max_body: u64,
    ) -> Vec<(Header, std::result::Result<Bytes, u64>)> {
        let (mut w, r) = pipe(1 << 20, None, None, None);
        for c in chunks {
            w.write(c).await.unwrap();
        }
        w.finish().unwrap();
        let mut reader = StreamReader::new(RecvHalf::Pipe(r));
        let mut got = Vec::new();
        while let Some(f) = reader.lane_frame(1024, max_body).await.unwrap() {
            got.push(f);
        }
        got
    }

    /// The in-buffer fast path and the field-by-field path read the same frames, wherever the
    /// chunks of the lane are cut (at every byte of the first frames, and one byte at a time).
    #[tokio::test]
    async fn lane_frames_read_the_same_whatever_the_chunking() {
        let all = Bytes::from(encoded());
        let want: Vec<_> = frames().into_iter().map(|(h, b)| (h, Ok(b))).collect();
        assert_eq!(read_back(vec![all.clone()], u64::MAX).await, want);
        for cut in 1..300 {
            let chunks = vec![all.slice(..cut), all.slice(cut..)];
            assert_eq!(read_back(chunks, u64::MAX).await, want, "cut at {cut}");
        }
        let bytewise = (0..all.len()).map(|i| all.slice(i..i + 1)).collect();
        assert_eq!(read_back(bytewise, u64::MAX).await, want);
    }

    /// A malformed frame is reported as soon as it is read, not when more bytes arrive: the
    /// writer here stays open and sends nothing more.
    #[tokio::test]
    async fn a_malformed_frame_is_reported_without_waiting_for_more() {
        for bad in [
            &[0x01, 0x07][..],
            &[0x02, 0x00, 0x01, 0x41, 0x00, 0x00, 0x00],
        ] {
            let (mut w, r) = pipe(1 << 20, None, None, None);
            w.write(Bytes::copy_from_slice(bad)).await.unwrap();
            let mut reader = StreamReader::new(RecvHalf::Pipe(r));
            let got = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                reader.lane_frame(1024, u64::MAX),
            )
            .await
            .expect("the malformed frame was reported");
            assert!(matches!(got, Err(ReadFail::Decode(_))), "{bad:?}: {got:?}");
            drop(w);
        }
    }

    /// A body above the bound is reported by its length on either path, and the lane goes on.
    #[tokio::test]
    async fn a_body_above_the_bound_is_skipped_on_either_path() {
        let all = Bytes::from(encoded());
        for chunks in [vec![all.clone()], vec![all.slice(..5), all.slice(5..)]] {
            let got = read_back(chunks, 1000).await;
            assert_eq!(got.len(), 4);
            assert_eq!(got[1].1, Ok(Bytes::from(vec![7u8; 200])));
            assert_eq!(got[3].1, Err(17_000));
        }
    }
}
