//! The transport layer: three transports behind one stream abstraction (ARCHITECTURE.md §1).
//!
//! A stream is ordered bytes with an end: FIN (complete) or RESET (abandoned), and a reader
//! may STOP a writer. QUIC has all of it; the in-process [`byte_channel`] and the AF_UNIX chunk
//! framing give the same four outcomes to the local transports. The enums below dispatch
//! statically: this is the hot path (one stream per message).
//!
//! Owns: connections and streams on QUIC (quinn and its UDP socket), in process and AF_UNIX,
//! their budgets, receipts and deaths, the peer's identity as the transport proved it, and the
//! [`reader::StreamReader`] that frames a stream's bytes. quinn is named here and nowhere else.
//! Must not: know what a path, an endpoint, a handshake or a drain is: a stream's place on its
//! connection is counted through the [`StreamCount`] trait the connection layer implements.
//! It imports only `security`, `wire` and the foundation modules (checked by
//! `core/layers.py`).

pub(crate) mod byte_channel;
pub(crate) mod inproc;
pub(crate) mod quic;
pub(crate) mod reader;
pub(crate) mod recycle;
pub(crate) mod udp;
pub(crate) mod unix;

use std::future::Future;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::error::{Error, Limit, LossCause};
use crate::wire::Code;

/// Who is on the other side of a stream, as the transport proved it. Never from a header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PeerIdentity {
    /// A QUIC peer that presented this key.
    Key(crate::Fingerprint),
    /// An AF_UNIX peer, as the kernel reported it (SO_PEERCRED). The pid is an observation,
    /// not something to authorize on: it can be reused.
    Local {
        /// User id.
        uid: u32,
        /// Group id.
        gid: u32,
        /// Process id at connect time.
        pid: i32,
    },
}

impl std::fmt::Display for PeerIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Key(fp) => write!(f, "{fp}"),
            Self::Local { uid, gid, pid } => {
                write!(f, "local uid={uid} gid={gid} pid={pid}")
            }
        }
    }
}

/// How a stream ended other than by FIN, or why it could not be written.
#[derive(Debug, Clone)]
pub(crate) enum StreamError {
    /// The writer reset it.
    Reset(Code),
    /// The reader stopped it.
    Stopped(Code),
    /// The connection died.
    Lost(LossCause),
    /// This side gave up waiting for the writer (`Limits::body_idle_timeout` or the header
    /// deadline) and stopped the stream with LIMIT_EXCEEDED.
    Idle(Limit),
}

impl StreamError {
    /// The error a reader reports: a reset is a cancellation, never a short payload.
    pub(crate) fn into_read_error(self) -> Error {
        match self {
            Self::Reset(Code::GoingAway) => Error::ConnectionLost(LossCause::PeerClosed),
            // A writer that refuses a stream it never read (an AF_UNIX listener past a
            // process's share, PROTOCOL §8.6) says why; any other reset is a cancel.
            Self::Reset(Code::LimitExceeded) => Code::LimitExceeded.into_error("", ""),
            Self::Reset(_) => Error::Canceled,
            Self::Stopped(_) => Error::Canceled,
            Self::Lost(c) => Error::ConnectionLost(c),
            Self::Idle(limit) => Error::limit(limit, "no bytes from the peer in time"),
        }
    }

    /// The error a writer reports, with the path it wrote to (for UNKNOWN_ENDPOINT).
    pub(crate) fn into_write_error(self, path: &str) -> Error {
        match self {
            Self::Stopped(code) => code.into_error(path, ""),
            Self::Reset(_) | Self::Idle(_) => Error::Canceled,
            Self::Lost(c) => Error::ConnectionLost(c),
        }
    }
}

/// A connection's death, observable by every stream on it.
#[derive(Default)]
pub(crate) struct Life {
    cause: OnceLock<LossCause>,
    notify: Notify,
}

impl Life {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub(crate) fn cause(&self) -> Option<LossCause> {
        self.cause.get().cloned()
    }

    /// Records the death (the first cause wins) and wakes everyone waiting on it.
    pub(crate) fn kill(&self, cause: LossCause) {
        let _ = self.cause.set(cause);
        self.notify.notify_waiters();
    }

    /// Resolves once the connection is dead.
    pub(crate) async fn dead(&self) -> LossCause {
        loop {
            let n = self.notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if let Some(c) = self.cause() {
                return c;
            }
            n.await;
        }
    }
}

/// The transport receipt of a finished stream: resolves when the peer's transport holds every
/// byte and the FIN (GUARANTEES §3).
pub(crate) enum Receipt {
    Ready(Result<(), StreamError>),
    /// A finished QUIC stream whose acknowledgement may still be on its way.
    Pending(PendingReceipt),
}

impl Receipt {
    pub(crate) async fn wait(self) -> Result<(), StreamError> {
        match self {
            Self::Ready(r) => r,
            Self::Pending(p) => p.wait().await,
        }
    }
}

/// A finished QUIC stream: its acknowledgement is asked of quinn only when someone waits
/// (keeping the handle costs no allocation per message).
pub(crate) struct PendingReceipt(quinn::SendStream);

impl PendingReceipt {
    /// Resolves once the peer's transport acknowledged every byte and the FIN, or the stream
    /// failed. Owns what it needs: the receipt may be dropped while it waits.
    pub(crate) fn wait(
        &self,
    ) -> impl Future<Output = Result<(), StreamError>> + Send + Sync + 'static {
        let stopped = self.0.stopped();
        async move {
            match stopped.await {
                Ok(None) => Ok(()),
                Ok(Some(code)) => Err(StreamError::Stopped(Code::from_u64(code.into_inner()))),
                Err(quinn::StoppedError::ConnectionLost(e)) => {
                    Err(StreamError::Lost(quic::loss_cause(&e)))
                }
                Err(quinn::StoppedError::ZeroRttRejected) => Err(StreamError::Lost(
                    LossCause::TransportError("0-RTT rejected".into()),
                )),
            }
        }
    }

    /// The outcome if the receipt has resolved already, without waiting (a resolved quinn
    /// receipt answers at once).
    pub(crate) fn now(&self) -> Option<Result<(), StreamError>> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::pin::pin!(self.wait()).poll(&mut cx) {
            std::task::Poll::Ready(r) => Some(r),
            std::task::Poll::Pending => None,
        }
    }
}

/// What counts the streams in use on an accepted connection (the connection layer's GOAWAY
/// tracker). A trait so that a stream's reader can hold its place on the connection without
/// the transport knowing what a drain is.
pub(crate) trait StreamCount: Send + Sync {
    /// A stream held by a [`LiveStream`] is no longer in use.
    fn released(&self);
    /// Whether a finished reply holds its place until its receipt resolves (the peer announced
    /// a drain, and must not see the connection closed under a reply still in flight).
    fn hold_until_received(&self) -> bool;
}

/// One live stream on an accepted connection: its place is released when this drops.
pub(crate) struct LiveStream(Arc<dyn StreamCount>);

impl LiveStream {
    /// Holds a place counted by `count` (an `Arc` of the tracker itself: no allocation).
    pub(crate) fn new(count: Arc<dyn StreamCount>) -> Self {
        Self(count)
    }

    /// Releases the stream once `receipt` resolves when its counter asks for that (see
    /// [`StreamCount::hold_until_received`]); at once otherwise, which costs nothing on the
    /// common path.
    pub(crate) fn release_after(self, receipt: &Receipt) {
        if !self.0.hold_until_received() {
            return;
        }
        if let Receipt::Pending(p) = receipt {
            let wait = p.wait();
            tokio::spawn(async move {
                let _ = wait.await;
                drop(self);
            });
        }
    }
}

impl Drop for LiveStream {
    fn drop(&mut self) {
        self.0.released();
    }
}

/// The writing half of a stream on any transport. Its owner decides between finish and reset
/// (an unfinished `OutgoingTransfer` resets on drop); a half dropped without either ends as
/// the transport ends it (quinn finishes a dropped QUIC stream, a byte channel resets, a local
/// socket half-closes without FIN, which its reader sees as a loss).
pub(crate) enum SendHalf {
    Quic(quinn::SendStream),
    Channel(byte_channel::Writer),
    Unix(unix::Writer),
}

impl SendHalf {
    pub(crate) async fn write(&mut self, b: Bytes) -> Result<(), StreamError> {
        match self {
            Self::Quic(s) => s.write_chunk(b).await.map_err(quic::write_error),
            Self::Channel(w) => w.write(b).await,
            Self::Unix(w) => w.write(&mut [b]).await,
        }
    }

    /// Writes several buffers as one (a header and a body): one syscall or one packet
    /// where the transport allows.
    pub(crate) async fn write_all(&mut self, bufs: &mut [Bytes]) -> Result<(), StreamError> {
        match self {
            Self::Quic(s) => s.write_all_chunks(bufs).await.map_err(quic::write_error),
            Self::Channel(w) => {
                for b in bufs.iter_mut() {
                    w.write(std::mem::take(b)).await?;
                }
                Ok(())
            }
            Self::Unix(w) => w.write(bufs).await,
        }
    }

    /// Queues the FIN and returns the receipt to await (or drop).
    pub(crate) async fn finish(self) -> Result<Receipt, StreamError> {
        match self {
            Self::Quic(mut s) => {
                s.finish().map_err(|_| StreamError::Reset(Code::Canceled))?;
                Ok(Receipt::Pending(PendingReceipt(s)))
            }
            // Locally the FIN either lands in the peer's transport at once or is refused (a STOP
            // that arrived first): the refusal is finish's error, never a later receipt.
            Self::Channel(mut w) => w.finish().map(|()| Receipt::Ready(Ok(()))),
            Self::Unix(mut w) => w.finish().await.map(|()| Receipt::Ready(Ok(()))),
        }
    }

    /// Abandons the stream with `code`.
    pub(crate) fn reset(&mut self, code: Code) {
        match self {
            Self::Quic(s) => {
                let _ = s.reset(
                    quinn::VarInt::from_u64(code.to_u64()).unwrap_or(quinn::VarInt::from_u32(8)),
                );
            }
            Self::Channel(w) => w.reset(code),
            Self::Unix(w) => w.reset(code),
        }
    }

    /// Resolves when the reader stops the stream, with its code.
    pub(crate) async fn stopped(&mut self) -> Result<Code, StreamError> {
        match self {
            Self::Quic(s) => match s.stopped().await {
                Ok(Some(code)) => Ok(Code::from_u64(code.into_inner())),
                Ok(None) => std::future::pending().await,
                Err(quinn::StoppedError::ConnectionLost(e)) => {
                    Err(StreamError::Lost(quic::loss_cause(&e)))
                }
                Err(_) => Err(StreamError::Lost(LossCause::TransportError(
                    "0-RTT rejected".into(),
                ))),
            },
            Self::Channel(w) => w.stopped().await,
            Self::Unix(w) => w.stopped().await,
        }
    }
}

/// A send half being written before an owner that decides between finish and reset takes it
/// (the head of a new stream, the start of a reply): dropped there, it resets the stream with
/// CANCELED. A write whose future is dropped mid-payload must not end as a short stream read as
/// complete, which is what the transport would make of a dropped half (quinn finishes it; a
/// local socket reads as lost).
pub(crate) struct UnclaimedHalf(Option<SendHalf>);

impl UnclaimedHalf {
    pub(crate) fn new(send: SendHalf) -> Self {
        Self(Some(send))
    }

    pub(crate) fn half(&mut self) -> &mut SendHalf {
        self.0.as_mut().expect("present until claimed")
    }

    /// Hands the half on: from here its new owner decides how it ends.
    pub(crate) fn claim(mut self) -> SendHalf {
        self.0.take().expect("present until claimed")
    }
}

impl Drop for UnclaimedHalf {
    fn drop(&mut self) {
        if let Some(mut s) = self.0.take() {
            s.reset(Code::Canceled);
        }
    }
}

/// The reading half of a stream on any transport. Dropping it before the end stops the
/// writer (QUIC STOP_SENDING(0), or its local equivalent).
pub(crate) enum RecvHalf {
    Quic(quinn::RecvStream),
    Channel(byte_channel::Reader),
    Unix(unix::Reader),
    /// A body already whole (a message that arrived as a lane frame), read as a finished
    /// stream: its bytes, then FIN.
    Ready(Option<Bytes>),
}

impl RecvHalf {
    pub(crate) async fn read_chunk(&mut self, max: usize) -> Result<Option<Bytes>, StreamError> {
        match self {
            Self::Quic(r) => match r.read_chunk(max, true).await {
                Ok(Some(c)) => Ok(Some(c.bytes)),
                Ok(None) => Ok(None),
                Err(e) => Err(quic::read_error(e)),
            },
            Self::Channel(r) => r.read_chunk(max).await,
            Self::Unix(r) => r.read_chunk(max).await,
            Self::Ready(b) => Ok(match b {
                Some(rest) if rest.len() > max => Some(rest.split_to(max)),
                other => other.take(),
            }),
        }
    }

    /// Asks the writer to stop with `code`.
    pub(crate) fn stop(&mut self, code: Code) {
        match self {
            Self::Quic(r) => {
                let _ = r.stop(
                    quinn::VarInt::from_u64(code.to_u64()).unwrap_or(quinn::VarInt::from_u32(8)),
                );
            }
            Self::Channel(r) => r.stop(code),
            Self::Unix(r) => r.stop(code),
            Self::Ready(b) => *b = None,
        }
    }
}

/// A stream as it arrives, before its type byte is read.
pub(crate) struct IncomingRaw {
    pub(crate) recv: RecvHalf,
    /// The other half of a bidirectional stream.
    pub(crate) send: Option<SendHalf>,
    pub(crate) peer: Option<PeerIdentity>,
    /// Holds the stream as live on its connection (accepted QUIC and in-process streams).
    pub(crate) live: Option<LiveStream>,
}

/// Which streams [`Conn::accept_each`] takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accept {
    /// One-way and bidirectional streams.
    All,
    /// One-way streams only (over QUIC; an in-process stream is taken whichever it is).
    OneWay,
}

/// A connection on any transport. Cheap to clone.
#[derive(Clone)]
pub(crate) enum Conn {
    Quic(quinn::Connection),
    Inproc(inproc::Conn),
    Unix(unix::Conn),
}

impl Conn {
    /// Opens a one-way stream, waiting for the peer's stream budget (never failing on it).
    pub(crate) async fn open_uni(&self) -> Result<SendHalf, Error> {
        match self {
            Self::Quic(c) => c
                .open_uni()
                .await
                .map(SendHalf::Quic)
                .map_err(|e| Error::ConnectionLost(quic::loss_cause(&e))),
            Self::Inproc(c) => c.open_uni().await,
            Self::Unix(c) => c.open(false).await.map(|(s, _)| s),
        }
    }

    /// Opens a bidirectional stream, waiting for the peer's stream budget.
    pub(crate) async fn open_bi(&self) -> Result<(SendHalf, RecvHalf), Error> {
        match self {
            Self::Quic(c) => c
                .open_bi()
                .await
                .map(|(s, r)| (SendHalf::Quic(s), RecvHalf::Quic(r)))
                .map_err(|e| Error::ConnectionLost(quic::loss_cause(&e))),
            Self::Inproc(c) => c.open_bi().await,
            Self::Unix(c) => c.open(true).await,
        }
    }

    /// A bidirectional stream for an exchange: as [`Conn::open_bi`], except that over AF_UNIX
    /// it may be a kept socket's next exchange (PROTOCOL.md §8.7).
    pub(crate) async fn open_exchange(&self) -> Result<(SendHalf, RecvHalf), Error> {
        match self {
            Self::Unix(c) => c.open_exchange().await,
            _ => self.open_bi().await,
        }
    }

    /// The first bidirectional stream the peer opens (its control stream, PROTOCOL.md §3.2);
    /// None when the connection ends first. A local socket's control connection arrives
    /// through its listener instead: None at once.
    pub(crate) async fn accept_bi(&self) -> Option<(SendHalf, RecvHalf)> {
        match self {
            Self::Quic(c) => c
                .accept_bi()
                .await
                .ok()
                .map(|(s, r)| (SendHalf::Quic(s), RecvHalf::Quic(r))),
            Self::Inproc(c) => c
                .accept()
                .await
                .and_then(|raw| raw.send.map(|s| (s, raw.recv))),
            Self::Unix(_) => None,
        }
    }

    /// Hands every stream the peer opens to `admit`, as it arrives, until the connection ends.
    /// Over QUIC one-way and bidirectional streams are accepted side by side. A local socket's
    /// streams arrive through its listener instead: this returns at once.
    pub(crate) async fn accept_each(&self, which: Accept, admit: impl Fn(IncomingRaw)) {
        match self {
            Self::Quic(c) => {
                let peer = self.peer();
                let uni = async {
                    while let Ok(r) = c.accept_uni().await {
                        admit(IncomingRaw {
                            recv: RecvHalf::Quic(r),
                            send: None,
                            peer: peer.clone(),
                            live: None,
                        });
                    }
                };
                let bi = async {
                    while let Ok((s, r)) = c.accept_bi().await {
                        admit(IncomingRaw {
                            recv: RecvHalf::Quic(r),
                            send: Some(SendHalf::Quic(s)),
                            peer: peer.clone(),
                            live: None,
                        });
                    }
                };
                match which {
                    Accept::All => {
                        tokio::join!(uni, bi);
                    }
                    Accept::OneWay => uni.await,
                }
            }
            Self::Inproc(c) => {
                while let Some(raw) = c.accept().await {
                    admit(raw);
                }
            }
            Self::Unix(_) => {}
        }
    }

    /// The peer ended its half of the control stream: the connection ends, as the peer's doing
    /// (a QUIC connection is closed with `code`; a local one is marked lost, closed by the peer).
    pub(crate) fn ended_by_peer(&self, code: Code) {
        // A control reader also ends when this side closed the connection, and may see that
        // before its closer has marked the peer's side: a connection that already ended keeps
        // its cause, or a local close would reach the peer as the peer's own.
        if self.loss().is_some() {
            return;
        }
        match self {
            Self::Unix(u) => u.lost(LossCause::PeerClosed),
            Self::Inproc(i) => i.lost(),
            Self::Quic(_) => self.close(code, "control stream ended"),
        }
    }

    /// The code and reason the peer's application closed the connection with, if it did (a
    /// local connection carries none).
    pub(crate) fn peer_close(&self) -> Option<(Code, String)> {
        match self {
            Self::Quic(c) => quic::app_close(&c.close_reason()?),
            Self::Inproc(_) | Self::Unix(_) => None,
        }
    }

    /// Closes the connection with `code`; every stream on it ends. A connection that already
    /// ended keeps its cause (quinn would otherwise overwrite it with LocallyClosed).
    pub(crate) fn close(&self, code: Code, reason: &str) {
        if self.loss().is_some() {
            return;
        }
        match self {
            Self::Quic(c) => c.close(
                quinn::VarInt::from_u64(code.to_u64()).unwrap_or(quinn::VarInt::from_u32(0)),
                reason.as_bytes(),
            ),
            Self::Inproc(c) => c.close(),
            Self::Unix(c) => c.close(),
        }
    }

    /// Why the connection ended, if it has.
    pub(crate) fn loss(&self) -> Option<LossCause> {
        match self {
            Self::Quic(c) => c.close_reason().map(|e| quic::loss_cause(&e)),
            Self::Inproc(c) => c.loss(),
            Self::Unix(c) => c.loss(),
        }
    }

    /// The peer as the transport proved it.
    /// Resolves when the connection ends.
    pub(crate) async fn closed(&self) -> LossCause {
        match self {
            Self::Quic(c) => quic::loss_cause(&c.closed().await),
            Self::Inproc(c) => c.closed().await,
            Self::Unix(c) => c.closed().await,
        }
    }

    /// Where the connection comes from, for a listener's events: a QUIC peer's UDP address,
    /// `inproc` or `unix`.
    pub(crate) fn from(&self) -> String {
        match self {
            Self::Quic(c) => c.remote_address().to_string(),
            Self::Inproc(_) => "inproc".into(),
            Self::Unix(_) => "unix".into(),
        }
    }

    pub(crate) fn peer(&self) -> Option<PeerIdentity> {
        match self {
            Self::Quic(c) => quic::peer_fingerprint(c).map(PeerIdentity::Key),
            Self::Inproc(_) => None,
            Self::Unix(c) => c.peer(),
        }
    }
}
