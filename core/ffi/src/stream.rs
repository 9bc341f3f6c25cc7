//! The core's stream types as handles a binding wraps (and a UniFFI crate could export with
//! conversion only: async methods on `Arc`-shared objects, owned arguments, results as
//! `Result<T, Fail>`). The rules every language shares live here once:
//!
//! - a handle used after a call consumed it (finished, answered, awaited) is `Closed`, and
//!   after `cancel()` it is `Canceled`;
//! - cancelling a write in progress: `cancel()` interrupts a pending `write`/`finish` (it
//!   rejects with `Canceled`), and a `write` whose caller cancels cancels the transfer at once
//!   ([`OutgoingTransfer::write_call`]: a write dropped midway leaves an unknown prefix
//!   written, and one that completed as it was cancelled, an outcome its caller never saw);
//! - every core value is dropped inside the I/O runtime's context.
//!
//! The race between a write that completes and a cancel is the core's, resolved once by its
//! `Canceler` (the transfer's and the fan-out's); what is left here is the exchange's, whose
//! cancel interrupts a read of the request ([`Slot`]).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;
use weida::{Error, IncomingMeta, Message, Metadata};

use crate::call::Call;
use crate::error::Fail;
use crate::io::{on_io, OnIo};

const OPEN: u8 = 0;
const CANCELED: u8 = 2;

/// A core value a handle holds until a call consumes it or `cancel()` drops it, and the state
/// that says which: the "consumed: `Closed`; cancelled: `Canceled`" rule and the race of a
/// `cancel()` with the operation holding the value, once for the transfer and the exchange.
struct Slot<T> {
    /// Empty while an operation holds the value, and once it was consumed or cancelled.
    value: OnIo<tokio::sync::Mutex<Option<T>>>,
    state: AtomicU8,
    cancel: Notify,
}

impl<T> Slot<T> {
    fn new(v: T) -> Self {
        Self {
            value: OnIo::new(tokio::sync::Mutex::new(Some(v))),
            state: AtomicU8::new(OPEN),
            cancel: Notify::new(),
        }
    }

    /// Why the value is gone: `Canceled` after `cancel()`, `Closed` after a call consumed it.
    fn gone(&self) -> Fail {
        match self.state.load(Ordering::Acquire) {
            CANCELED => Fail::Core(Error::Canceled),
            _ => Fail::Core(Error::Closed),
        }
    }

    /// Takes the value for a call that consumes it.
    async fn take(&self) -> Result<T, Fail> {
        self.value.lock().await.take().ok_or_else(|| self.gone())
    }

    /// Resolves once `cancel()` was called.
    async fn canceled(&self) {
        loop {
            let n = self.cancel.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.state.load(Ordering::Acquire) == CANCELED {
                return;
            }
            n.await;
        }
    }

    /// Marks it cancelled (nothing once finished) and wakes the operation holding the value,
    /// which drops it; with none holding it, `drop_with` drops it now, inside the I/O
    /// runtime's context.
    fn cancel(&self, drop_with: impl FnOnce(T)) {
        if self
            .state
            .compare_exchange(OPEN, CANCELED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        self.cancel.notify_waiters();
        if let Ok(mut slot) = self.value.try_lock() {
            if let Some(v) = slot.take() {
                on_io(|| drop_with(v));
            }
        }
    }
}

/// An outgoing stream: `write` at the caller's pace, then `finish` (the payload then arrives
/// with no local handle) or `cancel` (the reader sees `Canceled`, never a short payload).
pub struct OutgoingTransfer {
    /// Writes take turns; empty once `finish` or `close` took it.
    t: OnIo<tokio::sync::Mutex<Option<weida::OutgoingTransfer>>>,
    canceler: weida::Canceler,
}

impl OutgoingTransfer {
    /// Wraps an open transfer.
    pub fn new(mut t: weida::OutgoingTransfer) -> Arc<Self> {
        let canceler = t.canceler();
        Arc::new(Self {
            t: OnIo::new(tokio::sync::Mutex::new(Some(t))),
            canceler,
        })
    }

    /// Why the transfer is gone: `Canceled` after a cancel, `Closed` after `finish`.
    fn gone(&self) -> Fail {
        if self.canceler.is_canceled() {
            Fail::Core(Error::Canceled)
        } else {
            Fail::Core(Error::Closed)
        }
    }

    /// Writes all of `body`; waits while the peer's window is full (backpressure).
    pub async fn write(self: Arc<Self>, body: Bytes) -> Result<(), Fail> {
        let mut slot = self.t.lock().await;
        let t = slot.as_mut().ok_or_else(|| self.gone())?;
        Ok(t.write(body).await?)
    }

    /// Writes several bodies in order, as one write where the transport allows.
    pub async fn write_chunks(self: Arc<Self>, chunks: Vec<Bytes>) -> Result<(), Fail> {
        let mut slot = self.t.lock().await;
        let t = slot.as_mut().ok_or_else(|| self.gone())?;
        Ok(t.write_chunks(chunks).await?)
    }

    /// A call of `write`: its caller cancelling it cancels the transfer at once, as
    /// `cancel()` does, even if the write completed meanwhile (the caller cannot know what was
    /// written).
    pub fn write_call(self: &Arc<Self>, body: Bytes) -> Call<()> {
        let c = self.canceler.clone();
        Call::new(Arc::clone(self).write(body)).cancelling(move || {
            c.cancel();
        })
    }

    /// A call of `write_chunks`, cancelled as [`OutgoingTransfer::write_call`] is.
    pub fn write_chunks_call(self: &Arc<Self>, chunks: Vec<Bytes>) -> Call<()> {
        let c = self.canceler.clone();
        Call::new(Arc::clone(self).write_chunks(chunks)).cancelling(move || {
            c.cancel();
        })
    }

    /// Queues the FIN; the [`Delivery`] reports the transport receipt.
    pub async fn finish(self: Arc<Self>) -> Result<Arc<Delivery>, Fail> {
        let t = self.t.lock().await.take().ok_or_else(|| self.gone())?;
        Ok(Delivery::new(t.finish().await?))
    }

    /// Finishes the transfer unless it was finished or cancelled (leaving a scope cleanly).
    pub async fn close(self: Arc<Self>) -> Result<(), Fail> {
        let t = self.t.lock().await.take();
        match t {
            Some(t) if !self.canceler.is_canceled() => {
                t.finish().await.map(drop).map_err(Fail::from)
            }
            _ => Ok(()),
        }
    }

    /// Abandons the transfer: the reader sees `Canceled`; a pending write or finish rejects
    /// with it. Nothing once finished.
    pub fn cancel(&self) {
        self.canceler.cancel();
    }
}

/// The transport receipt of a finished transfer; free to ignore.
pub struct Delivery(OnIo<Mutex<Option<weida::Delivery>>>);

impl Delivery {
    fn new(d: weida::Delivery) -> Arc<Self> {
        Arc::new(Self(OnIo::new(Mutex::new(Some(d)))))
    }

    /// Resolves when the peer's transport holds every byte and the FIN; a refusal that reached
    /// this side first is its error. Once: a second call is `Closed`.
    pub async fn delivered(self: Arc<Self>) -> Result<(), Fail> {
        let d = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        Ok(d.ok_or(Error::Closed)?.delivered().await?)
    }
}

/// An incoming stream (a one-way transfer, or a reply's body): read it in chunks or collect
/// it. Dropped unread, it stops the writer.
pub struct IncomingTransfer {
    t: OnIo<tokio::sync::Mutex<Option<weida::IncomingTransfer>>>,
    meta: Arc<IncomingMeta>,
}

impl IncomingTransfer {
    /// Wraps an incoming stream.
    pub fn new(t: weida::IncomingTransfer) -> Arc<Self> {
        Arc::new(Self {
            meta: Arc::new(t.meta().clone()),
            t: OnIo::new(tokio::sync::Mutex::new(Some(t))),
        })
    }

    /// What arrived with the stream.
    pub fn meta(&self) -> &Arc<IncomingMeta> {
        &self.meta
    }

    /// The next chunk, None after the writer's FIN; a cancelled stream is `Canceled`, never
    /// None. Cancel-safe.
    pub async fn read_chunk(self: Arc<Self>) -> Result<Option<Bytes>, Fail> {
        let mut slot = self.t.lock().await;
        let t = slot.as_mut().ok_or(Error::Closed)?;
        Ok(t.read_chunk().await?)
    }

    /// The whole body, refusing one above `max` bytes (`LimitExceeded`, the writer stopped).
    pub async fn collect(self: Arc<Self>, max: u64) -> Result<Bytes, Fail> {
        let mut slot = self.t.lock().await;
        let t = slot.as_mut().ok_or(Error::Closed)?;
        Ok(t.collect(max).await?)
    }

    /// Refuses the stream with `error`'s wire code (an unread stream; nothing once a read holds
    /// it or it was refused).
    pub fn refuse(&self, error: &Error) {
        if let Some(t) = self.t.try_lock().ok().and_then(|mut s| s.take()) {
            on_io(|| t.refuse(error));
        }
    }
}

/// An incoming exchange: the request, and the reply this side owes. Dropped or cancelled
/// unanswered, the requester sees `Canceled`.
pub struct Exchange {
    slot: Slot<weida::Exchange>,
    meta: Arc<IncomingMeta>,
}

impl Exchange {
    /// Wraps an incoming exchange.
    pub fn new(x: weida::Exchange) -> Arc<Self> {
        Arc::new(Self {
            meta: Arc::new(x.meta().clone()),
            slot: Slot::new(x),
        })
    }

    /// What arrived with the request.
    pub fn meta(&self) -> &Arc<IncomingMeta> {
        &self.meta
    }

    /// Ends a read that `cancel()` interrupted: the exchange goes (the requester sees
    /// `Canceled`), and so does the read.
    fn interrupted<T>(slot: &mut Option<weida::Exchange>) -> Result<T, Fail> {
        slot.take();
        Err(Fail::Core(Error::Canceled))
    }

    /// The request's next chunk, None at its end (the reply may start before). Cancel-safe;
    /// `cancel()` interrupts it.
    pub async fn read_chunk(self: Arc<Self>) -> Result<Option<Bytes>, Fail> {
        let mut slot = self.slot.value.lock().await;
        let x = slot.as_mut().ok_or_else(|| self.slot.gone())?;
        let r = tokio::select! {
            biased;
            () = self.slot.canceled() => None,
            r = x.read_chunk() => Some(r),
        };
        match r {
            Some(r) => Ok(r?),
            None => Self::interrupted(&mut slot),
        }
    }

    /// The whole request body, bounded by `max` (default `Limits::max_collected_body`);
    /// `cancel()` interrupts it.
    pub async fn take_body(self: Arc<Self>, max: Option<u64>) -> Result<Bytes, Fail> {
        let mut slot = self.slot.value.lock().await;
        let x = slot.as_mut().ok_or_else(|| self.slot.gone())?;
        let r = tokio::select! {
            biased;
            () = self.slot.canceled() => None,
            r = async {
                match max {
                    Some(m) => x.take_body_capped(m).await,
                    None => x.take_body().await,
                }
            } => Some(r),
        };
        match r {
            Some(r) => Ok(r?),
            None => Self::interrupted(&mut slot),
        }
    }

    /// Replies with `body` (and metadata) and finishes the reply.
    pub async fn reply(self: Arc<Self>, meta: Metadata, body: Bytes) -> Result<(), Fail> {
        Ok(self.slot.take().await?.reply_with(meta, body).await?)
    }

    /// Opens the reply as a stream, for a reply written in parts.
    pub async fn open_reply(
        self: Arc<Self>,
        meta: Metadata,
    ) -> Result<Arc<OutgoingTransfer>, Fail> {
        let mut x = self.slot.take().await?;
        Ok(OutgoingTransfer::new(x.open_reply(meta).await?))
    }

    /// Answers REJECTED with `reason`.
    pub async fn reject(self: Arc<Self>, reason: String) -> Result<(), Fail> {
        Ok(self.slot.take().await?.reject(&reason).await?)
    }

    /// Answers with the error `code` names and `message` ([`crate::error::answer`]).
    pub async fn fail(self: Arc<Self>, code: String, message: String) -> Result<(), Fail> {
        let e = crate::error::answer(&code, &message)?;
        Ok(self.slot.take().await?.fail(&e).await?)
    }

    /// Abandons the exchange unanswered (what dropping it does in Rust): the requester sees
    /// `Canceled`, and calls pending here reject with it.
    pub fn cancel(&self) {
        self.slot.cancel(drop);
    }
}

/// The reply half of an exchange this side opened.
pub struct PendingReply(OnIo<Mutex<Option<weida::PendingReply>>>);

impl PendingReply {
    /// Wraps a pending reply.
    pub fn new(r: weida::PendingReply) -> Arc<Self> {
        Arc::new(Self(OnIo::new(Mutex::new(Some(r)))))
    }

    fn take(&self) -> Result<weida::PendingReply, Fail> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or(Fail::Core(Error::Closed))
    }

    /// The reply's start: its metadata and a streamed body; the peer's error as this side's;
    /// a loss after the request's FIN is `Indeterminate`.
    pub async fn reply(self: Arc<Self>) -> Result<Arc<IncomingTransfer>, Fail> {
        let r = self.take()?;
        Ok(IncomingTransfer::new(r.reply().await?))
    }

    /// The whole reply, bounded by `Limits::max_collected_body`.
    pub async fn body(self: Arc<Self>) -> Result<Message, Fail> {
        let r = self.take()?;
        Ok(r.body().await?)
    }
}

/// A stream an acceptor took.
pub enum Incoming {
    /// A one-way transfer.
    Stream(Arc<IncomingTransfer>),
    /// An exchange.
    Exchange(Arc<Exchange>),
}

impl Incoming {
    /// Wraps what the core's acceptor took.
    pub fn new(i: weida::Incoming) -> Result<Self, Fail> {
        match i {
            weida::Incoming::Stream(t) => Ok(Self::Stream(IncomingTransfer::new(t))),
            weida::Incoming::Exchange(x) => Ok(Self::Exchange(Exchange::new(x))),
            #[allow(unreachable_patterns)]
            _ => Err(Fail::Core(Error::Protocol(
                "an unknown kind of stream".into(),
            ))),
        }
    }
}

/// A streamed exchange this side opened: its request body and its reply.
pub fn opened(
    (t, r): (weida::OutgoingTransfer, weida::PendingReply),
) -> (Arc<OutgoingTransfer>, Arc<PendingReply>) {
    (OutgoingTransfer::new(t), PendingReply::new(r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::io::io;
    use crate::testing::pair;

    fn code<T>(r: Result<T, Fail>) -> Option<weida::ErrorCode> {
        r.err().and_then(|f| f.code())
    }

    fn open(pusher: &weida::Pusher) -> Arc<OutgoingTransfer> {
        io().block_on(async { OutgoingTransfer::new(pusher.open(Metadata::new()).await.unwrap()) })
    }

    #[test]
    fn a_transfer_used_after_finish_is_closed_and_after_cancel_canceled() {
        let p = pair();
        let (a, b) = (open(&p.pusher), open(&p.pusher));
        let finished = io().block_on(async {
            Arc::clone(&a).finish().await.unwrap();
            Arc::clone(&a).write("late".into()).await
        });
        assert_eq!(code(finished), Some(weida::ErrorCode::Closed));
        b.cancel();
        let canceled = io().block_on(Arc::clone(&b).write("late".into()));
        assert_eq!(code(canceled), Some(weida::ErrorCode::Canceled));
    }

    #[test]
    fn cancel_interrupts_a_pending_write_and_a_caller_cancelled_write_cancels_the_transfer() {
        let p = pair();
        let t = open(&p.pusher);
        // Above the 1 MiB stream window with nobody reading: a write waits (in process the
        // first are taken whole, so write until one does).
        let big = Bytes::from(vec![7u8; 4 << 20]);
        let mut c = t.write_call(big.clone());
        for _ in 0..8 {
            match c.poll_now() {
                Some(r) => {
                    r.unwrap();
                    c = t.write_call(big.clone());
                }
                None => break,
            }
        }
        // Cancelled while it waits: it rejects Canceled, and so does the reader.
        t.cancel();
        let (tx, rx) = mpsc::channel();
        c.on_io_thread(None, move |done| tx.send(done.settle(false)).unwrap());
        let r = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(code(r), Some(weida::ErrorCode::Canceled));
        let read = io().block_on(p.puller.recv());
        assert_eq!(read.unwrap_err().code(), weida::ErrorCode::Canceled);

        // A write whose caller cancelled after it completed: the transfer is cancelled too.
        let t = open(&p.pusher);
        let c = t.write_call("small".into());
        let cancel = crate::call::Cancel::new();
        let (tx, rx) = mpsc::channel();
        c.on_io_thread(Some(cancel.clone()), move |done| {
            tx.send(done).ok().unwrap()
        });
        let done = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        cancel.cancel();
        assert!(matches!(done.settle(false), Err(Fail::Aborted)));
        let after = io().block_on(Arc::clone(&t).finish());
        assert_eq!(code(after), Some(weida::ErrorCode::Canceled));
    }
}
