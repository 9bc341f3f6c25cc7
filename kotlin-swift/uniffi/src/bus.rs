//! `Bus` (the core's `patterns/bus.rs`): a member bound at a path of its runtime's listener and
//! dialling the other members; its receive is a puller's.

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
use crate::patterns::{meta_in, receive, try_receive, Dropped, Message, Received};

/// A bus member: `send` reaches every member it connected (one shared copy each, a slow one
/// dropped and counted); receives take what the others send.
#[derive(uniffi::Object)]
pub struct Bus {
    pub(crate) inner: OnIo<Arc<weida::Bus>>,
}

impl Bus {
    pub(crate) fn new(b: weida::Bus) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(b)),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Bus {
    /// The address other members connect to.
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    #[uniffi::method(default(cancel = None))]
    pub async fn connect(
        &self,
        address: String,
        wait: bool,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let b = Arc::clone(&self.inner);
        Ok(run(Call::new(connect(b, address, wait)), cancel).await?)
    }

    pub fn disconnect(&self, address: String) -> Result<bool> {
        Ok(on_io(|| {
            self.inner.disconnect(&address).map_err(Fail::from)
        })?)
    }

    /// Members connected and live.
    pub fn peer_count(&self) -> u32 {
        self.inner.peer_count() as u32
    }

    pub fn events(&self) -> Arc<PeerEvents> {
        PeerEvents::new(on_io(|| self.inner.events()))
    }

    /// Queues a copy for every live member connected; returns how many.
    #[uniffi::method(default(cancel = None))]
    pub async fn send(
        &self,
        body: Blob,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<u32> {
        let b = Arc::clone(&self.inner);
        let meta = meta_in(meta);
        let c =
            Call::new(async move { Ok::<_, Fail>(b.send_with(meta, Bytes::from(body)).await?) });
        Ok(run(c, cancel).await? as u32)
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

    /// Copies dropped, by cause.
    pub fn dropped(&self) -> Dropped {
        self.inner.dropped().into()
    }

    /// Unbinds the path and leaves every member.
    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}
