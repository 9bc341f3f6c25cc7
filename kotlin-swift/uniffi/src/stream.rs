//! Streamed transfers: an `OutgoingTransfer` written in parts and finished (its `Delivery`),
//! opened by `Pusher.open`, `Requester.open` and `Exchange.openReply`; an `IncomingTransfer`
//! read in chunks, taken by `Puller.accept` or `PendingReply.reply`; an exchange's request
//! read in chunks (`Exchange.readChunk`); and a request's `PendingReply`. All over weida-ffi's
//! `stream` (the Python and Node bindings' own).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use weida_ffi::stream as ffi;
use weida_ffi::{Call, Fail};

use crate::blob::Blob;
use crate::bound_push::{BoundPusher, DialingPuller};
use crate::call::{run, Cancellation};
use crate::error::Result;
use crate::pair::Pair;
use crate::patterns::{
    entries, message, meta_in, peer, Exchange, Message, MetaEntry, Peer, Puller, Pusher, Requester,
};

/// An outgoing stream: `write` at your own pace, then `finish` (the payload then arrives with
/// no local handle) or `cancel` (the reader sees Canceled, never a short payload).
#[derive(uniffi::Object)]
pub struct OutgoingTransfer {
    inner: Arc<ffi::OutgoingTransfer>,
}

#[uniffi::export(async_runtime = "tokio")]
impl OutgoingTransfer {
    /// Writes all of `body`; waits while the peer's window is full. Cancelled, the transfer
    /// is cancelled (the caller cannot know what was written).
    #[uniffi::method(default(cancel = None))]
    pub async fn write(&self, body: Blob, cancel: Option<Arc<Cancellation>>) -> Result<()> {
        Ok(run(self.inner.write_call(Bytes::from(body)), cancel).await?)
    }

    /// Writes each chunk in order, as one `write` each. Cancelled, the transfer is cancelled.
    #[uniffi::method(default(cancel = None))]
    pub async fn write_chunks(
        &self,
        chunks: Vec<Vec<u8>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let chunks = chunks.into_iter().map(Bytes::from).collect();
        Ok(run(self.inner.write_chunks_call(chunks), cancel).await?)
    }

    /// Queues the FIN: the payload now arrives with no local handle; the `Delivery` tells when
    /// the peer's transport holds it.
    #[uniffi::method(default(cancel = None))]
    pub async fn finish(&self, cancel: Option<Arc<Cancellation>>) -> Result<Arc<Delivery>> {
        let t = Arc::clone(&self.inner);
        let d = run(Call::new(t.finish()), cancel).await?;
        Ok(Arc::new(Delivery { inner: d }))
    }

    /// Abandons the transfer: the reader sees Canceled. Nothing once finished.
    pub fn cancel_transfer(&self) {
        self.inner.cancel();
    }
}

/// The transport receipt of a finished transfer; free to ignore.
#[derive(uniffi::Object)]
pub struct Delivery {
    inner: Arc<ffi::Delivery>,
}

#[uniffi::export(async_runtime = "tokio")]
impl Delivery {
    /// Returns when the peer's transport holds every byte and the FIN; a refusal that reached
    /// this side first is its error. Once: a second call is `Closed`.
    #[uniffi::method(default(cancel = None))]
    pub async fn delivered(&self, cancel: Option<Arc<Cancellation>>) -> Result<()> {
        Ok(run(Call::new(Arc::clone(&self.inner).delivered()), cancel).await?)
    }
}

/// The reply half of a request opened with `Requester.open`.
#[derive(uniffi::Object)]
pub struct PendingReply {
    inner: Arc<ffi::PendingReply>,
}

#[uniffi::export(async_runtime = "tokio")]
impl PendingReply {
    /// Waits for the reply's start: what came with it and its body as a stream
    /// (`IncomingTransfer`). The replier's error as this side's; a loss after the request's FIN
    /// is `Indeterminate`. Once (or `body`).
    #[uniffi::method(default(cancel = None))]
    pub async fn reply(&self, cancel: Option<Arc<Cancellation>>) -> Result<Arc<IncomingTransfer>> {
        let r = Arc::clone(&self.inner);
        Ok(IncomingTransfer::of(
            run(Call::new(r.reply()), cancel).await?,
        ))
    }

    /// The whole reply, bounded by the requester's `maxCollectedBody`; the replier's error as
    /// this side's; a loss after the request's FIN is `Indeterminate`. Once.
    #[uniffi::method(default(cancel = None))]
    pub async fn body(&self, cancel: Option<Arc<Cancellation>>) -> Result<Message> {
        let r = Arc::clone(&self.inner);
        Ok(message(run(Call::new(r.body()), cancel).await?))
    }
}

/// A streamed request: the request's transfer, and its reply (read it while writing a large
/// request: a replier may answer before the request ends).
#[derive(uniffi::Record)]
pub struct OpenedRequest {
    pub transfer: Arc<OutgoingTransfer>,
    pub reply: Arc<PendingReply>,
}

impl OutgoingTransfer {
    pub(crate) fn of(t: Arc<ffi::OutgoingTransfer>) -> Arc<Self> {
        Arc::new(Self { inner: t })
    }
}

/// A streamed exchange the core opened, as an `OpenedRequest` (weida-ffi's `stream::opened`).
pub(crate) fn opened_request(o: (weida::OutgoingTransfer, weida::PendingReply)) -> OpenedRequest {
    let (t, r) = ffi::opened(o);
    OpenedRequest {
        transfer: OutgoingTransfer::of(t),
        reply: Arc::new(PendingReply { inner: r }),
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Pusher {
    /// Opens a streamed message: `write` it in parts, then `finish`.
    #[uniffi::method(default(cancel = None))]
    pub async fn open(
        &self,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<OutgoingTransfer>> {
        let p = self.endpoint()?;
        let meta = meta_in(meta);
        let t = run(
            Call::new(async move { Ok::<_, Fail>(p.open(meta).await?) }),
            cancel,
        )
        .await?;
        Ok(Arc::new(OutgoingTransfer {
            inner: ffi::OutgoingTransfer::new(t),
        }))
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Pair {
    /// Opens a streamed message to the other end: `write` it in parts, then `finish`.
    #[uniffi::method(default(cancel = None))]
    pub async fn open(
        &self,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<OutgoingTransfer>> {
        let p = Arc::clone(&self.inner);
        let meta = meta_in(meta);
        let t = run(
            Call::new(async move { Ok::<_, Fail>(p.open(meta).await?) }),
            cancel,
        )
        .await?;
        Ok(Arc::new(OutgoingTransfer {
            inner: ffi::OutgoingTransfer::new(t),
        }))
    }

    /// The next message as a stream (`IncomingTransfer`), for a body read in parts.
    #[uniffi::method(default(cancel = None))]
    pub async fn accept(&self, cancel: Option<Arc<Cancellation>>) -> Result<Arc<IncomingTransfer>> {
        let p = Arc::clone(&self.inner);
        let t = run(
            Call::new(async move { Ok::<_, Fail>(p.accept().await?) }),
            cancel,
        )
        .await?;
        Ok(IncomingTransfer::of(ffi::IncomingTransfer::new(t)))
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl BoundPusher {
    /// Opens a streamed message to the next puller: `write` it in parts, then `finish`.
    #[uniffi::method(default(cancel = None))]
    pub async fn open(
        &self,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<OutgoingTransfer>> {
        let p = Arc::clone(&self.inner);
        let meta = meta_in(meta);
        let t = run(
            Call::new(async move { Ok::<_, Fail>(p.open(meta).await?) }),
            cancel,
        )
        .await?;
        Ok(Arc::new(OutgoingTransfer {
            inner: ffi::OutgoingTransfer::new(t),
        }))
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl DialingPuller {
    /// The next message as a stream (`IncomingTransfer`), for a body read in parts.
    #[uniffi::method(default(cancel = None))]
    pub async fn accept(&self, cancel: Option<Arc<Cancellation>>) -> Result<Arc<IncomingTransfer>> {
        let p = Arc::clone(&self.inner);
        let t = run(
            Call::new(async move { Ok::<_, Fail>(p.accept().await?) }),
            cancel,
        )
        .await?;
        Ok(IncomingTransfer::of(ffi::IncomingTransfer::new(t)))
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Requester {
    /// Opens a streamed request: its transfer, and its reply.
    #[uniffi::method(default(cancel = None))]
    pub async fn open(
        &self,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<OpenedRequest> {
        let r = self.endpoint()?;
        let meta = meta_in(meta);
        let (t, reply) = run(
            Call::new(async move { Ok::<_, Fail>(r.open(meta).await?) }),
            cancel,
        )
        .await?;
        Ok(OpenedRequest {
            transfer: Arc::new(OutgoingTransfer {
                inner: ffi::OutgoingTransfer::new(t),
            }),
            reply: Arc::new(PendingReply {
                inner: ffi::PendingReply::new(reply),
            }),
        })
    }
}

/// An incoming stream (a one-way transfer, or a reply's body): read it in chunks (`readChunk`,
/// null at its end) or `collect` it; what came with it is `path`, `peer`, `metadata`, `topic`,
/// `sequence` and `gap`, as a `Message`'s. Dropped unread, it stops the writer.
#[derive(uniffi::Object)]
pub struct IncomingTransfer {
    inner: Arc<ffi::IncomingTransfer>,
}

impl IncomingTransfer {
    pub(crate) fn of(t: Arc<ffi::IncomingTransfer>) -> Arc<Self> {
        Arc::new(Self { inner: t })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl IncomingTransfer {
    /// The endpoint path the stream was addressed to.
    pub fn path(&self) -> String {
        self.inner.meta().path.to_string()
    }

    /// The peer (null in process, or for an anonymous QUIC client).
    pub fn peer(&self) -> Option<Peer> {
        peer(self.inner.meta().peer.as_ref())
    }

    /// Application metadata, in order.
    pub fn metadata(&self) -> Vec<MetaEntry> {
        entries(&self.inner.meta().metadata)
    }

    /// Pub/Sub: the topic.
    pub fn topic(&self) -> Option<String> {
        self.inner.meta().topic.clone()
    }

    /// Under PerProducer ordering: the sequence number.
    pub fn sequence(&self) -> Option<u64> {
        self.inner.meta().sequence
    }

    /// Under PerProducer ordering: how many numbers were missed before this one.
    pub fn gap(&self) -> Option<u64> {
        self.inner.meta().gap
    }

    /// The next chunk, null after the writer's FIN; a cancelled stream is `Canceled`, never
    /// ends short. Cancel-safe.
    #[uniffi::method(default(cancel = None))]
    pub async fn read_chunk(&self, cancel: Option<Arc<Cancellation>>) -> Result<Option<Vec<u8>>> {
        let t = Arc::clone(&self.inner);
        Ok(run(Call::new(t.read_chunk()), cancel)
            .await?
            .map(|b| b.to_vec()))
    }

    /// The whole body, refusing one above `max` bytes (`LimitExceeded`, the writer stopped).
    #[uniffi::method(default(cancel = None))]
    pub async fn collect(&self, max: u64, cancel: Option<Arc<Cancellation>>) -> Result<Vec<u8>> {
        let t = Arc::clone(&self.inner);
        Ok(run(Call::new(t.collect(max)), cancel).await?.to_vec())
    }

    /// Refuses the stream with the code `code` names (`REJECTED`, …) and `message` (an unread
    /// stream; nothing once a read holds it); a name that is no code is `InvalidConfig`.
    pub fn refuse(&self, code: String, message: String) -> Result<()> {
        let e = weida_ffi::error::answer(&code, &message)?;
        self.inner.refuse(&e);
        Ok(())
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Puller {
    /// The next message as a stream (`IncomingTransfer`), for a body read in parts: the next
    /// one no receive has taken.
    #[uniffi::method(default(cancel = None))]
    pub async fn accept(&self, cancel: Option<Arc<Cancellation>>) -> Result<Arc<IncomingTransfer>> {
        let p = self.endpoint();
        let t = run(
            Call::new(async move { Ok::<_, Fail>(p.accept().await?) }),
            cancel,
        )
        .await?;
        Ok(IncomingTransfer::of(ffi::IncomingTransfer::new(t)))
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Exchange {
    /// The request's next chunk, null at its end (the reply may start before). Cancel-safe;
    /// `cancel()` interrupts it.
    #[uniffi::method(default(cancel = None))]
    pub async fn read_chunk(&self, cancel: Option<Arc<Cancellation>>) -> Result<Option<Vec<u8>>> {
        let x = Arc::clone(&self.inner);
        Ok(run(Call::new(x.read_chunk()), cancel)
            .await?
            .map(|b| b.to_vec()))
    }

    /// Opens the reply as a stream (with `meta`), for a reply written in parts: `write`, then
    /// `finish`. It answers the exchange: read the request first.
    #[uniffi::method(default(meta = None, cancel = None))]
    pub async fn open_reply(
        &self,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<OutgoingTransfer>> {
        let x = Arc::clone(&self.inner);
        let t = run(Call::new(x.open_reply(meta_in(meta))), cancel).await?;
        Ok(Arc::new(OutgoingTransfer { inner: t }))
    }
}
