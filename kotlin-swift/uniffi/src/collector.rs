//! Pub/Sub the other way round (the core's `patterns/pubsub/collector.rs`): `DialingPublisher`
//! (`Runtime.publisher`) and `BoundSubscriber` (`Listener.subscriber`), a collector whose
//! receive is a puller's.

use std::collections::HashMap;
use std::sync::Arc;

use weida_ffi::io::{on_io, OnIo};
use weida_ffi::patterns::connect;
use weida_ffi::{Call, Fail};

use crate::blob::Blob;
use crate::call::{run, Cancellation};
use crate::error::Result;
use crate::events::PeerEvents;
use crate::packed::{take_ready, Packed};
use crate::patterns::{meta_in, receive, try_receive, Dropped, Message, Received};

/// A publisher that dials collectors: each one connected gets a copy of every message, whatever
/// the topic (the collector filters); a slow one's copies are dropped and counted.
#[derive(uniffi::Object)]
pub struct DialingPublisher {
    inner: OnIo<Arc<weida::DialingPublisher>>,
}

impl DialingPublisher {
    pub(crate) fn new(p: weida::DialingPublisher) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(p)),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl DialingPublisher {
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

    /// Collectors connected and live.
    pub fn peer_count(&self) -> u32 {
        self.inner.peer_count() as u32
    }

    pub fn events(&self) -> Arc<PeerEvents> {
        PeerEvents::new(on_io(|| self.inner.events()))
    }

    /// Queues a copy for every live collector connected; how many. Never waits.
    pub fn publish(
        &self,
        topic: String,
        body: Blob,
        meta: Option<HashMap<String, Vec<u8>>>,
    ) -> Result<u32> {
        let meta = meta_in(meta);
        Ok(on_io(|| self.inner.publish_with(&topic, meta, body))? as u32)
    }

    /// Copies dropped, by cause.
    pub fn dropped(&self) -> Dropped {
        self.inner.dropped().into()
    }

    /// Leaves every collector.
    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}

/// A subscriber bound at a path that dialling publishers feed (a collector): it keeps what its
/// filters select, when it receives it, and counts the rest.
#[derive(uniffi::Object)]
pub struct BoundSubscriber {
    pub(crate) inner: OnIo<Arc<weida::BoundSubscriber>>,
}

impl BoundSubscriber {
    pub(crate) fn new(s: weida::BoundSubscriber) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(s)),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl BoundSubscriber {
    /// The address publishers dial.
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// Adds `filter` here, at once.
    pub fn subscribe(&self, filter: String) -> Result<()> {
        Ok(self.inner.subscribe(&filter).map_err(Fail::from)?)
    }

    /// Removes one entry of `filter`; false if it was not held.
    pub fn unsubscribe(&self, filter: String) -> Result<bool> {
        Ok(self.inner.unsubscribe(&filter).map_err(Fail::from)?)
    }

    pub fn filters(&self) -> Vec<String> {
        self.inner.filters()
    }

    /// Messages that arrived and that no filter selected.
    pub fn discarded(&self) -> u64 {
        self.inner.discarded()
    }

    /// Where the next receive puts what it takes.
    pub fn received(&self) -> Arc<Received> {
        Received::of(Arc::clone(&self.inner))
    }

    /// Receives up to `max` selected messages (at least one) into `into`. Cancel-safe.
    #[uniffi::method(default(cancel = None))]
    pub async fn recv_into(
        &self,
        max: u32,
        into: Arc<Received>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        receive(Arc::clone(&self.inner), max, into, cancel).await
    }

    /// A selected message if one is ready, without waiting.
    pub fn try_recv(&self) -> Result<Option<Message>> {
        try_receive(&**self.inner)
    }

    /// Up to `max` messages ready now, packed, in one call with no future. None: nothing is
    /// ready, take the waiting receive; an empty batch: this thread's ready streak is spent,
    /// yield to the dispatcher first, then take the waiting receive.
    pub fn take_ready(&self, max: u32) -> Result<Option<Packed>> {
        take_ready(&**self.inner, max)
    }

    /// Unbinds the path: what is queued is still received, then `Closed`.
    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}
