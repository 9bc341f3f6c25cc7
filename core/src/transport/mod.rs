//! Three transports behind one stream abstraction (ARCHITECTURE.md §3).
//!
//! A stream is ordered bytes with an end: FIN (complete) or RESET (abandoned), and a reader
//! may STOP a writer. QUIC has all of it; the in-process [`pipe`] and the AF_UNIX chunk
//! framing give the same four outcomes to the local transports. The enums below dispatch
//! statically: this is the hot path (one stream per message).

pub(crate) mod inproc;
pub(crate) mod pipe;
pub(crate) mod quic;
pub(crate) mod udp;
pub(crate) mod unix;

use std::future::Future;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::error::{Error, LossCause};
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
            PeerIdentity::Key(fp) => write!(f, "{fp}"),
            PeerIdentity::Local { uid, gid, pid } => {
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
}

impl StreamError {
    /// The error a reader reports: a reset is a cancellation, never a short payload.
    pub(crate) fn into_read_error(self) -> Error {
        match self {
            StreamError::Reset(Code::GoingAway) => Error::ConnectionLost(LossCause::PeerClosed),
            StreamError::Reset(_) => Error::Canceled,
            StreamError::Stopped(_) => Error::Canceled,
            StreamError::Lost(c) => Error::ConnectionLost(c),
        }
    }

    /// The error a writer reports, with the path it wrote to (for UNKNOWN_ENDPOINT).
    pub(crate) fn into_write_error(self, path: &str) -> Error {
        match self {
            StreamError::Stopped(code) => code.into_error(path, ""),
            StreamError::Reset(_) => Error::Canceled,
            StreamError::Lost(c) => Error::ConnectionLost(c),
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
    pub(crate) fn new() -> Arc<Life> {
        Arc::new(Life::default())
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
    /// A finished QUIC stream: its acknowledgement is asked of quinn only when someone waits
    /// (keeping the handle costs no allocation per message).
    Quic(quinn::SendStream),
}

impl Receipt {
    pub(crate) async fn wait(self) -> Result<(), StreamError> {
        match self {
            Receipt::Ready(r) => r,
            Receipt::Quic(s) => quic_receipt(&s).await,
        }
    }
}

/// The receipt of a finished QUIC stream.
pub(crate) fn quic_receipt(
    s: &quinn::SendStream,
) -> impl Future<Output = Result<(), StreamError>> + Send + Sync + 'static {
    let stopped = s.stopped();
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

/// The writing half of a stream on any transport. Its owner decides between finish and reset
/// (an unfinished `OutgoingTransfer` resets on drop); a half dropped without either ends as
/// the transport ends it (quinn finishes a dropped QUIC stream, a pipe resets, a local socket
/// half-closes without FIN, which its reader sees as a loss).
pub(crate) enum SendHalf {
    Quic(quinn::SendStream),
    Pipe(pipe::Writer),
    Unix(unix::Writer),
}

impl SendHalf {
    pub(crate) async fn write(&mut self, b: Bytes) -> Result<(), StreamError> {
        match self {
            SendHalf::Quic(s) => s.write_chunk(b).await.map_err(quic::write_error),
            SendHalf::Pipe(w) => w.write(b).await,
            SendHalf::Unix(w) => w.write(&mut [b]).await,
        }
    }

    /// Writes several buffers as one (a header and a body): one syscall or one packet
    /// where the transport allows.
    pub(crate) async fn write_all(&mut self, bufs: &mut [Bytes]) -> Result<(), StreamError> {
        match self {
            SendHalf::Quic(s) => s.write_all_chunks(bufs).await.map_err(quic::write_error),
            SendHalf::Pipe(w) => {
                for b in bufs.iter_mut() {
                    w.write(std::mem::take(b)).await?;
                }
                Ok(())
            }
            SendHalf::Unix(w) => w.write(bufs).await,
        }
    }

    /// Queues the FIN and returns the receipt to await (or drop).
    pub(crate) async fn finish(self) -> Result<Receipt, StreamError> {
        match self {
            SendHalf::Quic(mut s) => {
                s.finish().map_err(|_| StreamError::Reset(Code::Canceled))?;
                Ok(Receipt::Quic(s))
            }
            // Locally the FIN either lands in the peer's transport at once or is refused (a STOP
            // that arrived first): the refusal is finish's error, never a later receipt.
            SendHalf::Pipe(mut w) => w.finish().map(|()| Receipt::Ready(Ok(()))),
            SendHalf::Unix(mut w) => w.finish().await.map(|()| Receipt::Ready(Ok(()))),
        }
    }

    /// Abandons the stream with `code`.
    pub(crate) fn reset(&mut self, code: Code) {
        match self {
            SendHalf::Quic(s) => {
                let _ = s.reset(
                    quinn::VarInt::from_u64(code.to_u64()).unwrap_or(quinn::VarInt::from_u32(8)),
                );
            }
            SendHalf::Pipe(w) => w.reset(code),
            SendHalf::Unix(w) => w.reset(code),
        }
    }

    /// Resolves when the reader stops the stream, with its code.
    pub(crate) async fn stopped(&mut self) -> Result<Code, StreamError> {
        match self {
            SendHalf::Quic(s) => match s.stopped().await {
                Ok(Some(code)) => Ok(Code::from_u64(code.into_inner())),
                Ok(None) => std::future::pending().await,
                Err(quinn::StoppedError::ConnectionLost(e)) => {
                    Err(StreamError::Lost(quic::loss_cause(&e)))
                }
                Err(_) => Err(StreamError::Lost(LossCause::TransportError(
                    "0-RTT rejected".into(),
                ))),
            },
            SendHalf::Pipe(w) => w.stopped().await,
            SendHalf::Unix(w) => w.stopped().await,
        }
    }
}

/// The reading half of a stream on any transport. Dropping it before the end stops the
/// writer (QUIC STOP_SENDING(0), or its local equivalent).
pub(crate) enum RecvHalf {
    Quic(quinn::RecvStream),
    Pipe(pipe::Reader),
    Unix(unix::Reader),
    /// A body already whole (a message that arrived as a lane frame), read as a finished
    /// stream: its bytes, then FIN.
    Ready(Option<Bytes>),
}

impl RecvHalf {
    pub(crate) async fn read_chunk(&mut self, max: usize) -> Result<Option<Bytes>, StreamError> {
        match self {
            RecvHalf::Quic(r) => match r.read_chunk(max, true).await {
                Ok(Some(c)) => Ok(Some(c.bytes)),
                Ok(None) => Ok(None),
                Err(e) => Err(quic::read_error(e)),
            },
            RecvHalf::Pipe(r) => r.read_chunk(max).await,
            RecvHalf::Unix(r) => r.read_chunk(max).await,
            RecvHalf::Ready(b) => Ok(match b {
                Some(rest) if rest.len() > max => Some(rest.split_to(max)),
                other => other.take(),
            }),
        }
    }

    /// Asks the writer to stop with `code`.
    pub(crate) fn stop(&mut self, code: Code) {
        match self {
            RecvHalf::Quic(r) => {
                let _ = r.stop(
                    quinn::VarInt::from_u64(code.to_u64()).unwrap_or(quinn::VarInt::from_u32(8)),
                );
            }
            RecvHalf::Pipe(r) => r.stop(code),
            RecvHalf::Unix(r) => r.stop(code),
            RecvHalf::Ready(b) => *b = None,
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
    pub(crate) live: Option<crate::runtime::LiveStream>,
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
            Conn::Quic(c) => c
                .open_uni()
                .await
                .map(SendHalf::Quic)
                .map_err(|e| Error::ConnectionLost(quic::loss_cause(&e))),
            Conn::Inproc(c) => c.open_uni().await,
            Conn::Unix(c) => c.open(false).await.map(|(s, _)| s),
        }
    }

    /// Opens a bidirectional stream, waiting for the peer's stream budget.
    pub(crate) async fn open_bi(&self) -> Result<(SendHalf, RecvHalf), Error> {
        match self {
            Conn::Quic(c) => c
                .open_bi()
                .await
                .map(|(s, r)| (SendHalf::Quic(s), RecvHalf::Quic(r)))
                .map_err(|e| Error::ConnectionLost(quic::loss_cause(&e))),
            Conn::Inproc(c) => c.open_bi().await,
            Conn::Unix(c) => c.open(true).await,
        }
    }

    /// Closes the connection with `code`; every stream on it ends. A connection that already
    /// ended keeps its cause (quinn would otherwise overwrite it with LocallyClosed).
    pub(crate) fn close(&self, code: Code, reason: &str) {
        if self.loss().is_some() {
            return;
        }
        match self {
            Conn::Quic(c) => c.close(
                quinn::VarInt::from_u64(code.to_u64()).unwrap_or(quinn::VarInt::from_u32(0)),
                reason.as_bytes(),
            ),
            Conn::Inproc(c) => c.close(),
            Conn::Unix(c) => c.close(),
        }
    }

    /// Why the connection ended, if it has.
    pub(crate) fn loss(&self) -> Option<LossCause> {
        match self {
            Conn::Quic(c) => c.close_reason().map(|e| quic::loss_cause(&e)),
            Conn::Inproc(c) => c.loss(),
            Conn::Unix(c) => c.loss(),
        }
    }

    /// The peer as the transport proved it.
    /// Resolves when the connection ends.
    pub(crate) async fn closed(&self) -> LossCause {
        match self {
            Conn::Quic(c) => quic::loss_cause(&c.closed().await),
            Conn::Inproc(c) => c.closed().await,
            Conn::Unix(c) => c.closed().await,
        }
    }

    pub(crate) fn peer(&self) -> Option<PeerIdentity> {
        match self {
            Conn::Quic(c) => quic::peer_fingerprint(c).map(PeerIdentity::Key),
            Conn::Inproc(_) => None,
            Conn::Unix(c) => c.peer(),
        }
    }
}
