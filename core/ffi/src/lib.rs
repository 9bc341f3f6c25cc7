//! weida-ffi: the one binding layer every language shares. What a binding needs besides type
//! conversion is written here once, with no pyo3 or napi in it; python/src and node/src and
//! kotlin-swift/uniffi (Kotlin and Swift) convert types and nothing more
//! (docs/BINDINGS.md, docs/ARCHITECTURE.md §6).
//!
//! - [`io`]: the I/O runtime and its thread, fork-aware; the value dropped inside it.
//! - [`call`]: running a core future for a foreign caller and settling its promise: the
//!   eager first poll, the ready budget, the spawn, cancellation, the orphan hand-back.
//! - [`awaiting`]: the same for a caller that awaits a Rust future (the UniFFI bindings):
//!   dropping the future cancels the call, and so does a `Cancel` the caller fires (Swift);
//!   a received value is held until taken.
//! - [`inbox`]: receives, queued in call order behind one fetch, so a cancelled receive
//!   neither loses nor reorders.
//! - [`stream`], [`pubsub`], [`patterns`], [`runtime`]: the handles a binding wraps, with the
//!   "consumed → Closed" rule and the cancel-versus-write state machines once.
//! - [`packed`]: many bodies in one buffer, to cross as one value, and the budget of one
//!   such batch: Node's receives and `sendMany`, the Kotlin and Swift receives.
//! - [`service`]: the handler runtime's registrations, outcomes named as data, a job finished
//!   once.
//! - [`error`], [`config`], [`runtime::counters`]: the error fields, the options and the
//!   counters as data; [`events`]: an endpoint's peer events as one flat record.

pub mod awaiting;
pub mod call;
pub mod config;
pub mod error;
pub mod events;
pub mod inbox;
pub mod io;
pub mod packed;
pub mod patterns;
#[doc(hidden)]
pub mod probe;
pub mod pubsub;
pub mod runtime;
pub mod service;
pub mod spin;
pub mod stream;
#[cfg(test)]
mod testing;

pub use call::{Call, Cancel, Completion, Turn, READY_STREAK};
pub use error::Fail;
