//! `Pair` (the core's `patterns/pair.rs`): one end of a PAIR, dialling (`Runtime.pair`) or
//! bound (`Listener.pair`), with the same calls; its receive is a puller's. Streamed sends and
//! receives (`open`, `accept`) are in `stream.rs`, beside the other endpoints'.

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

/// One end of a PAIR: `send` reaches the other end, receives take what it sends. A bound pair
/// takes one peer at a time: a second is refused with `LimitExceeded`.
#[derive(uniffi::Object)]
pub struct Pair {
    pub(crate) inner: OnIo<Arc<weida::Pair>>,
}

impl Pair {
    pub(crate) fn new(p: weida::Pair) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(p)),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Pair {
    /// A bound pair's address; null for a dialling pair.
    pub fn address(&self) -> Option<String> {
        self.inner.address().map(|a| a.to_string())
    }

    /// Connects a dialling pair to the bound pair at `address` and claims it.
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

    /// 1 while the other end is there, else 0.
    pub fn peer_count(&self) -> u32 {
        self.inner.peer_count() as u32
    }

    /// What happens to a dialling pair's address (`InvalidConfig` for a bound pair).
    pub fn events(&self) -> Result<Arc<PeerEvents>> {
        let e = on_io(|| self.inner.events().map_err(Fail::from))?;
        Ok(PeerEvents::new(e))
    }

    /// Sends a whole message to the other end; a bound pair waits for a peer, bounded by
    /// `sendTimeoutMs`.
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

    /// A bound pair unbinds its path; a dialling pair leaves its peer.
    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}
