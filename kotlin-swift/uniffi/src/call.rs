//! [`Cancellation`]: weida-ffi's `Cancel` for a caller whose cancellation does not drop the
//! Rust future. A cancelled Kotlin coroutine drops it (UniFFI's Kotlin code cancels and frees
//! it), which cancels the call; UniFFI's Swift code awaits the future to its end whatever
//! happens to the task, so the Swift layer makes a `Cancellation`, passes it to the call and
//! fires it from `withTaskCancellationHandler` (kotlin-swift/swift/Sources/Weida/Weida.swift).

use std::sync::Arc;

use weida_ffi::awaiting::{run_or_cancel, Awaiting};
use weida_ffi::{Call, Cancel};

/// A caller's cancellation of one call: `cancel()` ends the call as a dropped one would (a
/// send being written is reset, a receive loses nothing), and the call fails `Aborted`, or
/// returns what it had already finished with.
#[derive(uniffi::Object, Default)]
pub struct Cancellation {
    inner: Cancel,
}

#[uniffi::export]
impl Cancellation {
    /// Not yet fired.
    #[uniffi::constructor]
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Fires it (again: nothing).
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

/// `c` awaited, cancelled by `cancel` when it fires (weida-ffi's `awaiting::run_or_cancel`).
pub(crate) fn run<T: Send + 'static>(c: Call<T>, cancel: Option<Arc<Cancellation>>) -> Awaiting<T> {
    run_or_cancel(c, cancel.map(|c| c.inner.clone()))
}
