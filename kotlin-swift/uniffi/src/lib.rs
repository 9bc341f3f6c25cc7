//! weida for Kotlin and Swift through UniFFI: proc-macro exports over weida-ffi, the
//! binding layer Python and Node share. A file here converts types and nothing more; what a
//! binding needs besides conversion (the I/O runtime, running a call for an awaiting caller,
//! cancellation, the error fields, the options, the counters) is weida-ffi's. One file per
//! core module it projects (docs/BINDINGS.md): runtime, patterns, service, error, config,
//! identity, events, and call (weida-ffi's `Cancel` as `Cancellation`, for Swift).
//!
//! Every async export carries `async_runtime = "tokio"` by one convention (the `export!`
//! note in kotlin-swift/README.md): UniFFI then polls it inside a tokio context; the core's
//! work itself runs on weida-ffi's I/O thread (`weida_ffi::awaiting::run_or_cancel`), and each
//! takes a last `cancel: Option<Arc<Cancellation>>`, None by default (`call.rs`).

// UniFFI's derives generate items the workspace lints cannot see through.
#![allow(unreachable_pub, unnameable_types)]

uniffi::setup_scaffolding!();

pub mod address;
pub mod blob;
pub mod bound_push;
pub mod bus;
pub mod call;
pub mod collector;
pub mod config;
pub mod error;
pub mod events;
pub mod fanout;
pub mod fast;
pub mod fast_wait;
pub mod identity;
pub mod packed;
pub mod pair;
pub mod patterns;
pub mod raw;
pub mod runtime;
pub mod service;
pub mod stream;
pub mod survey;

/// Every loss cause an error's `lossCause` field can be, as the core names them.
#[uniffi::export]
pub fn loss_causes() -> Vec<String> {
    weida::LossCause::NAMES
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Every error code's name, as the core names them (`CONNECTION_LOST`, …).
#[uniffi::export]
pub fn error_codes() -> Vec<String> {
    weida::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect()
}

/// Values that reached the caller's side after it cancelled and went back where they came
/// from (weida-ffi's probe). Internal: tests show the race they aim at ran.
#[uniffi::export]
pub fn orphans() -> u64 {
    weida_ffi::probe::orphans()
}

/// Fetches that finished on the I/O thread with messages or a job (weida-ffi's probe).
/// Internal: a test that holds its thread while a pending `next` waits reads it.
#[uniffi::export]
pub fn fetched() -> u64 {
    weida_ffi::probe::fetched()
}

/// Blocks the calling thread until `fetched()` reaches `n`, at most `timeout_ms`; true if it
/// did. Internal: a test holds its event loop here while the I/O thread takes a job.
#[uniffi::export]
pub fn wait_fetched(n: u64, timeout_ms: u64) -> bool {
    weida_ffi::probe::wait_fetched(n, std::time::Duration::from_millis(timeout_ms))
}
