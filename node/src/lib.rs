//! The Node binding of weida: a napi-rs addon (`weida.<platform>.node`, loaded by native.cjs)
//! under the TypeScript layer in lib/. A binding only converts: behaviour lives in the core,
//! and what every binding needs besides conversion (the I/O runtime, settling a promise from a
//! core call, cancellation, the error fields, the options, the counters) in weida-ffi. One
//! file per core module it projects (docs/BINDINGS.md): runtime, patterns, stream, error,
//! config, identity, address.

#![deny(clippy::all)]
// napi-derive generates the registration code for every exported item.
#![allow(unreachable_pub)]

/// The addon's allocator. A body a `send` copies in is allocated on the JS thread and freed on
/// the I/O thread once the lane has written it; under glibc's malloc each such free takes the
/// allocating arena's lock, and on the 1 KiB Push/Pull profile the allocations and the futex
/// wake-ups that lock caused were ~20 % of the JS thread. mimalloc frees across threads
/// without a shared lock. Only this addon's Rust allocations use it: what V8 or Node allocates
/// is theirs, and every buffer handed to JS is copied into memory V8 owns.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod address;
pub mod bound_push;
pub mod bus;
pub mod collector;
pub mod config;
pub mod error;
pub mod events;
pub mod identity;
pub mod pair;
pub mod patterns;
pub mod runtime;
pub mod service;
pub mod stream;
pub mod survey;

use napi_derive::napi;

/// Operations in a row that may finish at once before one yields to the event loop (weida-ffi's
/// `READY_STREAK`; lib/index.ts counts its synchronous paths against it).
#[napi]
pub const READY_STREAK: u32 = weida_ffi::READY_STREAK;

/// Every loss cause an error's `lossCause` can be, as the core names them.
#[napi]
pub fn loss_causes() -> Vec<&'static str> {
    weida::LossCause::NAMES.to_vec()
}

/// Values that reached the JS thread after their call was aborted and went back where they
/// came from (weida-ffi's probe). Internal: tests show the race they aim at ran.
#[napi(js_name = "_orphans")]
pub fn orphans() -> f64 {
    weida_ffi::probe::orphans() as f64
}

/// Receives that finished on the I/O thread with messages (weida-ffi's probe). Internal.
#[napi(js_name = "_fetched")]
pub fn fetched() -> f64 {
    weida_ffi::probe::fetched() as f64
}

/// Blocks the JS thread until `_fetched()` reaches `n`, at most `timeoutMs`; true if it did.
/// Internal: a test holds its event loop here while the I/O thread receives.
#[napi(js_name = "_waitFetched")]
pub fn wait_fetched(n: f64, timeout_ms: f64) -> bool {
    let t = std::time::Duration::from_secs_f64(timeout_ms.max(0.0) / 1000.0);
    weida_ffi::probe::wait_fetched(n as u64, t)
}
