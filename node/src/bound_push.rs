//! Push/Pull the other way round (the core's `patterns/bound_push.rs`): `BoundPusher`
//! (`listener.pusher(path)`) and `DialingPuller` (`runtime.puller()`), whose receive is a
//! puller's (the TypeScript `Inbox` over `recvBatch`/`take`).

use std::sync::Arc;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::Call;

use crate::error;
use crate::events::PeerEvents;
use crate::patterns::{recv_batch, take_ready};
use crate::runtime::{promise, Cancel};
use crate::stream::{metadata_in, BodyIn, IncomingTransfer, OutgoingTransfer, Raw};

/// A pusher bound at a path.
#[napi]
pub struct BoundPusher {
    inner: OnIo<Arc<weida::BoundPusher>>,
}

impl BoundPusher {
    pub(crate) fn new(p: weida::BoundPusher) -> Self {
        Self {
            inner: OnIo::new(Arc::new(p)),
        }
    }
}

#[napi]
impl BoundPusher {
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner.peer_count().try_into().unwrap_or(u32::MAX)
    }

    /// Sends a whole message to the next puller.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn send<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = Arc::clone(&self.inner);
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(p.send_with(meta, body.0).await?) }),
            |_, ()| Ok(()),
        )
    }

    /// Opens a streamed message to the next puller.
    #[napi(ts_return_type = "Promise<OutgoingTransfer>")]
    pub fn open<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = Arc::clone(&self.inner);
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(p.open(meta).await?) }),
            |_, t| {
                Ok(OutgoingTransfer::new(
                    weida_ffi::stream::OutgoingTransfer::new(t),
                ))
            },
        )
    }

    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}

/// A puller that dials bound pushers.
#[napi]
pub struct DialingPuller {
    inner: OnIo<Arc<weida::DialingPuller>>,
}

impl DialingPuller {
    pub(crate) fn new(p: weida::DialingPuller) -> Self {
        Self {
            inner: OnIo::new(Arc::new(p)),
        }
    }
}

#[napi]
impl DialingPuller {
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
        PeerEvents::new(on_io(|| self.inner.events()))
    }

    /// Up to `max` whole messages as a `Batch`, waiting for the first.
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

    /// The next message as a stream, for a body read in parts.
    #[napi(ts_return_type = "Promise<IncomingTransfer>")]
    pub fn accept<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { Ok(p.accept().await?) }),
            |_, t| {
                Ok(IncomingTransfer::new(
                    weida_ffi::stream::IncomingTransfer::new(t),
                ))
            },
        )
    }

    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}
