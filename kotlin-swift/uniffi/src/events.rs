//! A dialling endpoint's peer events: weida-ffi's flat record, one type with a `kind`.

use std::sync::Arc;

use crate::call::{run, Cancellation};

/// One event of a dialling endpoint's addresses.
#[derive(Debug, Clone, uniffi::Record)]
pub struct PeerEvent {
    /// `connected`, `lost`, `retrying`, `gave_up` or `missed`.
    pub kind: String,
    /// The address it is about (empty for `missed`).
    pub url: String,
    /// `connected`: the key the peer proved (null over a local transport).
    pub fingerprint: Option<String>,
    /// `lost`, `gave_up`: the loss cause's name.
    pub cause: Option<String>,
    /// `lost`, `gave_up`: the cause as a sentence.
    pub reason: Option<String>,
    /// `retrying`: which attempt since the loss, from 1.
    pub attempt: Option<u32>,
    /// `retrying`: how long it waits first, in milliseconds.
    pub delay_ms: Option<f64>,
    /// `missed`: how many events this reader fell behind by.
    pub missed: Option<u64>,
}

impl From<weida_ffi::events::Event> for PeerEvent {
    fn from(e: weida_ffi::events::Event) -> Self {
        Self {
            kind: e.kind.to_string(),
            url: e.url,
            fingerprint: e.fingerprint,
            cause: e.cause.map(str::to_string),
            reason: e.reason,
            attempt: e.attempt,
            delay_ms: e.delay.map(|d| d.as_secs_f64() * 1000.0),
            missed: e.missed,
        }
    }
}

/// A reader of an endpoint's events, from when it was made.
#[derive(uniffi::Object)]
pub struct PeerEvents {
    inner: Arc<weida_ffi::events::Events>,
}

impl PeerEvents {
    pub(crate) fn new(e: weida::PeerEvents) -> Arc<Self> {
        Arc::new(Self {
            inner: Arc::new(weida_ffi::events::Events::new(e)),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl PeerEvents {
    /// The next event; null once the endpoint is gone. Cancel-safe.
    #[uniffi::method(default(cancel = None))]
    pub async fn next(&self, cancel: Option<Arc<Cancellation>>) -> Option<PeerEvent> {
        let e = Arc::clone(&self.inner);
        let c = weida_ffi::Call::new(async move { Ok(e.next().await) });
        run(c, cancel).await.ok().flatten().map(Into::into)
    }
}
