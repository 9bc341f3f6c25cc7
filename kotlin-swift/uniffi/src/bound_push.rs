//! Push/Pull the other way round (the core's `patterns/bound_push.rs`): `BoundPusher`
//! (`Listener.pusher`) and `DialingPuller` (`Runtime.puller`), whose receive is a puller's.
//! Streamed sends and receives (`open`, `accept`) are in `stream.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::patterns::connect;
use weida_ffi::{Call, Fail};

use crate::blob::Blob;
use crate::call::{run, Cancellation};
use crate::error::Result;
use crate::events::PeerEvents;
use crate::packed::{take_ready, Packed};
use crate::patterns::{meta_in, receive, try_receive, Message, Received};

/// A pusher bound at a path: the pullers that connect to it share its messages, round-robin.
#[derive(uniffi::Object)]
pub struct BoundPusher {
    pub(crate) inner: OnIo<Arc<weida::BoundPusher>>,
}

impl BoundPusher {
    pub(crate) fn new(p: weida::BoundPusher) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(p)),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl BoundPusher {
    /// The address pullers connect to.
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// Pullers connected now.
    pub fn peer_count(&self) -> u32 {
        self.inner.peer_count() as u32
    }

    /// Sends a whole message to the next puller; waits for one, bounded by `sendTimeoutMs`.
    #[uniffi::method(default(cancel = None))]
    pub async fn send(
        &self,
        body: Blob,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let p = Arc::clone(&self.inner);
        let meta = meta_in(meta);
        let c =
            Call::new(async move { Ok::<_, Fail>(p.send_with(meta, Bytes::from(body)).await?) });
        Ok(run(c, cancel).await?)
    }

    /// Unbinds the path; later sends are `Closed`.
    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}

/// A puller that dials bound pushers and receives its share of their messages.
#[derive(uniffi::Object)]
pub struct DialingPuller {
    pub(crate) inner: OnIo<Arc<weida::DialingPuller>>,
}

impl DialingPuller {
    pub(crate) fn new(p: weida::DialingPuller) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(p)),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl DialingPuller {
    /// Connects to a bound pusher's address and claims a share of its messages.
    #[uniffi::method(default(cancel = None))]
    pub async fn connect(
        &self,
        address: String,
        wait: bool,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let p = Arc::clone(&self.inner);
        Ok(run(Call::new(connect(p, address, wait)), cancel).await?)
    }

    pub fn disconnect(&self, address: String) -> Result<bool> {
        Ok(on_io(|| {
            self.inner.disconnect(&address).map_err(Fail::from)
        })?)
    }

    /// Bound pushers connected and live.
    pub fn peer_count(&self) -> u32 {
        self.inner.peer_count() as u32
    }

    pub fn events(&self) -> Arc<PeerEvents> {
        PeerEvents::new(on_io(|| self.inner.events()))
    }

    /// Where the next receive puts what it takes.
    pub fn received(&self) -> Arc<Received> {
        Received::of(Arc::clone(&self.inner))
    }

    /// Receives up to `max` messages (at least one) into `into`. Cancel-safe.
    #[uniffi::method(default(cancel = None))]
    pub async fn recv_into(
        &self,
        max: u32,
        into: Arc<Received>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        receive(Arc::clone(&self.inner), max, into, cancel).await
    }

    /// A message if one is ready, without waiting.
    pub fn try_recv(&self) -> Result<Option<Message>> {
        try_receive(&**self.inner)
    }

    /// Up to `max` messages ready now, packed, in one call with no future. None: nothing is
    /// ready, take the waiting receive; an empty batch: this thread's ready streak is spent,
    /// yield to the dispatcher first, then take the waiting receive.
    pub fn take_ready(&self, max: u32) -> Result<Option<Packed>> {
        take_ready(&**self.inner, max)
    }

    /// Leaves every bound pusher; what was received is still handed out, then `Closed`.
    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}
