//! Streamed transfers: an `OutgoingTransfer` written in parts and finished (its `Delivery`),
//! and a request's `PendingReply`, over weida-ffi's `stream` (the Python and Node bindings'
//! own), opened by `Pusher.open` and `Requester.open`.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use weida_ffi::stream as ffi;
use weida_ffi::{Call, Fail};

use crate::call::{run, Cancellation};
use crate::error::Result;
use crate::patterns::{message, meta_in, Message, Pusher, Requester};

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
    pub async fn write(&self, body: Vec<u8>, cancel: Option<Arc<Cancellation>>) -> Result<()> {
        Ok(run(self.inner.write_call(Bytes::from(body)), cancel).await?)
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
