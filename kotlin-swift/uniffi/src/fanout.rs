//! A message streamed to many subscribers: `Publisher.open(topic)` → `FanOut`, over
//! weida-ffi's `pubsub::FanOut` (the Python and Node bindings' own).

use std::sync::Arc;

use bytes::Bytes;
use weida_ffi::io::on_io;
use weida_ffi::pubsub as ffi;

use crate::call::{run, Cancellation};
use crate::error::Result;
use crate::patterns::Publisher;

/// A message streamed chunk by chunk to every subscriber whose filters selected its topic when
/// it was opened (one subscribing later gets the next message, never a fragment): `write` its
/// chunks, then `finish`, or `cancel` (subscribers discard what they had of it).
#[derive(uniffi::Object)]
pub struct FanOut {
    inner: Arc<ffi::FanOut>,
}

#[uniffi::export(async_runtime = "tokio")]
impl FanOut {
    /// Copies still attached (not dropped); after `finish`, those it was finished for; after
    /// a cancel, 0.
    pub fn copies(&self) -> u32 {
        self.inner.copies() as u32
    }

    /// Neither finished nor cancelled.
    pub fn is_open(&self) -> bool {
        self.inner.is_open()
    }

    /// Hands `chunk` to every attached copy, first waiting up to `fanoutWaitMs` for the copies
    /// with no room for it (those still full then are dropped, counted `byteBudget`); the
    /// copies still attached. Writes take turns. Cancelled, the message is cancelled (no
    /// subscriber gets a payload with a chunk missing).
    #[uniffi::method(default(cancel = None))]
    pub async fn write(&self, chunk: Vec<u8>, cancel: Option<Arc<Cancellation>>) -> Result<u32> {
        Ok(run(self.inner.write_call(Bytes::from(chunk)), cancel).await? as u32)
    }

    /// Hands `chunk` to every attached copy without waiting (a copy with no room is dropped
    /// whole, counted `byteBudget`); the copies still attached. `Busy` while a write waits.
    pub fn write_now(&self, chunk: Vec<u8>) -> Result<u32> {
        Ok(self.inner.write_now(Bytes::from(chunk))? as u32)
    }

    /// Ends the message for every attached copy; how many were still attached (`Canceled`
    /// once cancelled, `Closed` once finished).
    pub fn finish(&self) -> Result<u32> {
        Ok(self.inner.finish()? as u32)
    }

    /// Cancels every copy: subscribers discard what they received of it. Interrupts a pending
    /// write. Nothing once finished.
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

#[uniffi::export]
impl Publisher {
    /// Opens a streamed message (`FanOut`) to the subscribers whose filters select `topic`
    /// now. Never waits.
    pub fn open(&self, topic: String) -> Result<Arc<FanOut>> {
        let f = on_io(|| self.endpoint().open(&topic))?;
        Ok(Arc::new(FanOut {
            inner: ffi::FanOut::new(f),
        }))
    }
}
