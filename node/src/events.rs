//! A dialling endpoint's peer events (`for await (const e of pusher.events())`), converted
//! from weida-ffi's flat event record.

use std::sync::Arc;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use weida_ffi::events::{Event, Events};
use weida_ffi::Call;

use crate::runtime::{promise, Cancel};

/// One transition of one address of a dialling endpoint (lib/index.ts types it as a union on
/// `kind`).
#[napi(object)]
pub struct PeerEvent {
    /// `connected`, `lost`, `retrying`, `gave_up`, or `missed` (this reader fell behind).
    pub kind: String,
    /// The address as the endpoint connected it (empty for `missed`).
    pub url: String,
    /// `connected`: the key the peer proved (absent over a local transport).
    pub fingerprint: Option<String>,
    /// `lost`, `gave_up`: the loss cause's name.
    pub cause: Option<String>,
    /// `lost`, `gave_up`: the cause as a sentence.
    pub reason: Option<String>,
    /// `retrying`: which attempt since the loss, from 1.
    pub attempt: Option<u32>,
    /// `retrying`: milliseconds it waits first (0 in process: it waits for the name).
    pub delay_ms: Option<f64>,
    /// `missed`: how many events this reader fell behind by.
    pub missed: Option<f64>,
}

impl From<Event> for PeerEvent {
    fn from(e: Event) -> Self {
        Self {
            kind: e.kind.to_string(),
            url: e.url,
            fingerprint: e.fingerprint,
            cause: e.cause.map(str::to_string),
            reason: e.reason,
            attempt: e.attempt,
            delay_ms: e.delay.map(|d| d.as_secs_f64() * 1000.0),
            missed: e.missed.map(|n| n as f64),
        }
    }
}

/// The events of a dialling endpoint from the moment `events()` was called.
#[napi]
pub struct PeerEvents {
    inner: Arc<Events>,
}

impl PeerEvents {
    pub(crate) fn new(e: weida::PeerEvents) -> Self {
        Self {
            inner: Arc::new(Events::new(e)),
        }
    }
}

#[napi]
impl PeerEvents {
    /// The next event, or null once the endpoint is gone.
    #[napi(ts_return_type = "Promise<PeerEvent | null>")]
    pub fn next<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let events = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { Ok(events.next().await) }),
            |_, e| Ok(e.map(PeerEvent::from)),
        )
    }
}
