//! `Bus` (the core's `patterns/bus.rs`): a member bound at a path of its runtime's listener and
//! dialling the other members; its receive is a puller's (the TypeScript `Inbox` over
//! `recvBatch`/`take`).

use std::sync::Arc;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::{Call, Fail};

use crate::error;
use crate::events::PeerEvents;
use crate::patterns::{recv_batch, take_ready, Dropped};
use crate::runtime::{promise, Cancel};
use crate::stream::{metadata_in, BodyIn, Raw};

/// A bus member.
#[napi]
pub struct Bus {
    inner: OnIo<Arc<weida::Bus>>,
}

impl Bus {
    pub(crate) fn new(b: weida::Bus) -> Self {
        Self {
            inner: OnIo::new(Arc::new(b)),
        }
    }
}

#[napi]
impl Bus {
    /// The address other members connect to.
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(
        &self,
        env: &'env Env,
        address: String,
        wait: bool,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let b = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { weida_ffi::patterns::connect(b, address, wait).await }),
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

    /// Queues a copy for every live member connected; resolves with how many.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn send<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let b = Arc::clone(&self.inner);
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok::<_, Fail>(b.send_with(meta, body.0).await?) }),
            |_, n| Ok(n as u32),
        )
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

    /// Copies dropped, by cause.
    #[napi]
    pub fn dropped(&self) -> Dropped {
        self.inner.dropped().into()
    }

    /// Unbinds the path and leaves every member.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}
