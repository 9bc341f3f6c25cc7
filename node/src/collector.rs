//! Pub/Sub the other way round (the core's `patterns/pubsub/collector.rs`): `DialingPublisher`
//! (`runtime.publisher()`) and `BoundSubscriber` (`listener.subscriber(path)`), a collector
//! whose receive is a puller's (the TypeScript `Inbox` over `recvBatch`/`take`).

use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, Object};
use napi::Env;
use napi_derive::napi;
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::Call;

use crate::error;
use crate::events::PeerEvents;
use crate::patterns::{recv_batch, take_ready, Dropped};
use crate::runtime::{promise, Cancel};
use crate::stream::{metadata_in, BodyIn, Raw};

/// A publisher that dials collectors.
#[napi]
pub struct DialingPublisher {
    inner: OnIo<Arc<weida::DialingPublisher>>,
}

impl DialingPublisher {
    pub(crate) fn new(p: weida::DialingPublisher) -> Self {
        Self {
            inner: OnIo::new(Arc::new(p)),
        }
    }
}

#[napi]
impl DialingPublisher {
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(
        &self,
        env: &'env Env,
        address: String,
        wait: bool,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { weida_ffi::patterns::connect(p, address, wait).await }),
            |_, ()| Ok(()),
        )
    }

    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        on_io(|| self.inner.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner.peer_count().try_into().unwrap_or(u32::MAX)
    }

    #[napi]
    pub fn events(&self) -> PeerEvents {
        PeerEvents::new(self.inner.events())
    }

    /// Queues a copy for every live collector connected; returns how many. Never waits.
    #[napi]
    pub fn publish(
        &self,
        env: Env,
        topic: String,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
    ) -> napi::Result<u32> {
        let meta = metadata_in(meta)?;
        on_io(|| self.inner.publish_with(&topic, meta, body.0))
            .map(|n| n.try_into().unwrap_or(u32::MAX))
            .map_err(|e| error::throw(&env, e))
    }

    /// Copies dropped, by cause.
    #[napi]
    pub fn dropped(&self) -> Dropped {
        self.inner.dropped().into()
    }

    /// Leaves every collector.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}

/// A subscriber bound at a path that dialling publishers feed.
#[napi]
pub struct BoundSubscriber {
    inner: OnIo<Arc<weida::BoundSubscriber>>,
}

impl BoundSubscriber {
    pub(crate) fn new(s: weida::BoundSubscriber) -> Self {
        Self {
            inner: OnIo::new(Arc::new(s)),
        }
    }
}

#[napi]
impl BoundSubscriber {
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    #[napi]
    pub fn subscribe(&self, env: Env, filter: String) -> napi::Result<()> {
        self.inner
            .subscribe(&filter)
            .map_err(|e| error::throw(&env, e))
    }

    #[napi]
    pub fn unsubscribe(&self, env: Env, filter: String) -> napi::Result<bool> {
        self.inner
            .unsubscribe(&filter)
            .map_err(|e| error::throw(&env, e))
    }

    #[napi(getter)]
    pub fn filters(&self) -> Vec<String> {
        self.inner.filters()
    }

    /// Messages that arrived and that no filter selected.
    #[napi(getter)]
    pub fn discarded(&self) -> BigInt {
        BigInt::from(self.inner.discarded())
    }

    /// Up to `max` selected messages as a `Batch`, waiting for the first.
    #[napi(ts_return_type = "Promise<Batch>")]
    pub fn recv_batch<'env>(
        &self,
        env: &'env Env,
        max: f64,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        recv_batch(env, cancel, &self.inner, max)
    }

    /// What `recvBatch` would give without waiting, or null.
    #[napi(ts_return_type = "Batch | null")]
    pub fn take(&self, env: Env, max: f64) -> napi::Result<Option<Raw>> {
        take_ready(&env, &**self.inner, max)
    }

    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}
