//! `weida._weida`: the native half of the Python binding. It only converts: every behaviour is
//! in the `weida` crate, and what every binding needs besides conversion (the I/O runtime,
//! settling a future from a core call, cancellation, receives, the error fields, the options,
//! the counters) in `weida-ffi`. The hand-written `weida` package beside it adds the
//! exceptions and re-exports (docs/BINDINGS.md).
//!
//! One file per core module it projects (`runtime`, `patterns`, `stream`, `error`, `config`,
//! `identity`, `trust`, `address`), plus `aio`, the asyncio end of weida-ffi's calls.

use pyo3::prelude::*;

/// The extension's allocator. A body copied in on a Python thread is freed on the I/O thread
/// once it is written, and a received message allocated on the I/O thread is freed on the
/// Python thread; under glibc's malloc each such free takes the allocating arena's lock
/// (profiled in the Node binding at ~20 % of its JS thread). mimalloc frees across threads
/// without a shared lock. Only this extension's Rust allocations use it: every object handed
/// to Python is allocated by Python.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod address;
mod aio;
mod config;
mod error;
mod events;
mod identity;
mod patterns;
mod runtime;
mod service;
mod stream;
mod trust;

/// Values that reached the event loop after their call was cancelled and went back where they
/// came from (weida-ffi's probe). Internal: tests show the race they aim at ran.
#[pyfunction]
fn _orphans() -> u64 {
    weida_ffi::probe::orphans()
}

/// Receives that finished on the I/O thread with messages (weida-ffi's probe). Internal.
#[pyfunction]
fn _fetched() -> u64 {
    weida_ffi::probe::fetched()
}

/// Blocks this thread (the event loop with it) until `_fetched()` reaches `n`, at most
/// `timeout` seconds; True if it did. Internal: a test holds its loop here while the I/O thread
/// receives.
#[pyfunction]
fn _wait_fetched(py: Python<'_>, n: u64, timeout: f64) -> bool {
    let t = std::time::Duration::from_secs_f64(timeout.max(0.0));
    py.detach(|| weida_ffi::probe::wait_fetched(n, t))
}

/// The module `weida._weida`.
#[pymodule]
fn _weida(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<aio::Bridge>()?;
    m.add_class::<address::Address>()?;
    m.add_function(wrap_pyfunction!(_orphans, m)?)?;
    m.add_function(wrap_pyfunction!(_fetched, m)?)?;
    m.add_function(wrap_pyfunction!(_wait_fetched, m)?)?;
    m.add(
        "LOSS_CAUSES",
        pyo3::types::PyTuple::new(m.py(), weida::LossCause::NAMES)?,
    )?;
    m.add_class::<config::Limits>()?;
    m.add_class::<events::ReconnectPolicy>()?;
    m.add_class::<events::PeerEvent>()?;
    m.add_class::<events::PeerEvents>()?;
    m.add_class::<identity::Identity>()?;
    m.add_function(wrap_pyfunction!(identity::fingerprint_of_certificate, m)?)?;
    m.add_class::<trust::Trust>()?;
    m.add_class::<runtime::Runtime>()?;
    m.add_class::<runtime::Listener>()?;
    m.add_class::<runtime::Counters>()?;
    m.add_class::<runtime::Drained>()?;
    m.add_class::<patterns::Pusher>()?;
    m.add_class::<patterns::Puller>()?;
    m.add_class::<patterns::Requester>()?;
    m.add_class::<patterns::Replier>()?;
    m.add_class::<patterns::survey::Surveyor>()?;
    m.add_class::<patterns::bus::Bus>()?;
    m.add_class::<patterns::collector::DialingPublisher>()?;
    m.add_class::<patterns::collector::BoundSubscriber>()?;
    m.add_class::<patterns::pair::Pair>()?;
    m.add_class::<patterns::bound_push::BoundPusher>()?;
    m.add_class::<patterns::bound_push::DialingPuller>()?;
    m.add_class::<patterns::survey::SurveyRun>()?;
    m.add_class::<patterns::Peer>()?;
    m.add_class::<patterns::Acceptor>()?;
    m.add_class::<patterns::pubsub::Publisher>()?;
    m.add_class::<patterns::pubsub::FanOut>()?;
    m.add_class::<patterns::pubsub::Subscriber>()?;
    m.add_class::<patterns::pubsub::Dropped>()?;
    m.add_class::<service::Service>()?;
    m.add_class::<service::Registration>()?;
    m.add_class::<service::Job>()?;
    m.add_class::<stream::Message>()?;
    m.add_class::<stream::IncomingMeta>()?;
    m.add_class::<stream::PeerKey>()?;
    m.add_class::<stream::PeerLocal>()?;
    m.add_class::<stream::OutgoingTransfer>()?;
    m.add_class::<stream::Delivery>()?;
    m.add_class::<stream::IncomingTransfer>()?;
    m.add_class::<stream::Exchange>()?;
    m.add_class::<stream::PendingReply>()?;
    Ok(())
}
