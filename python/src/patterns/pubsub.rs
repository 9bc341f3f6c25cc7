//! Pub/Sub (the core's `patterns::pubsub`): `Publisher` and its streamed `FanOut`, `Subscriber`,
//! and `Dropped`, the publisher's drops by cause. Conversion only: filters, bounds, drops and
//! ordering are the core's.

use std::sync::Arc;

use pyo3::prelude::*;
use weida_ffi::inbox::Inbox;
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::pubsub as ffi;
use weida_ffi::Call;

use super::{none, ready_message, this};
use crate::aio::{call, receive, Receive, Shape};
use crate::error;
use crate::runtime::Listener;
use crate::stream::{Body, MessageOut};

/// Runs a synchronous core call with the GIL released, inside the I/O runtime's context.
pub(super) fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    py.detach(|| on_io(f))
}

/// Copies a publisher dropped, by cause: `publisher.dropped()` (every topic) or
/// `publisher.dropped_on(topic)`. A refusal raised by `publish` is not a drop.
///
/// ```python
/// d = publisher.dropped_on("prices.btc")
/// if d.total:
///     print(d.queue_full, d.byte_budget, d.dead_subscriber)
/// ```
#[pyclass(frozen, get_all, eq, module = "weida._weida")]
#[derive(PartialEq, Eq)]
pub(crate) struct Dropped {
    /// Dropped at a subscriber's full queue (`Limits.endpoint_queue`).
    queue_full: u64,
    /// Dropped at a subscriber's byte budget (`Limits.subscriber_buffer_bytes`).
    byte_budget: u64,
    /// Over AF_UNIX: no parked reverse connection was left for the copy.
    reverse_pool_empty: u64,
    /// Lost with a subscriber whose connection ended.
    dead_subscriber: u64,
    /// Refused by the subscriber (its own bound, e.g. `max_collected_body`).
    refused: u64,
}

impl From<weida::Dropped> for Dropped {
    fn from(d: weida::Dropped) -> Self {
        Self {
            queue_full: d.queue_full,
            byte_budget: d.byte_budget,
            reverse_pool_empty: d.reverse_pool_empty,
            dead_subscriber: d.dead_subscriber,
            refused: d.refused,
        }
    }
}

impl Dropped {
    fn core(&self) -> weida::Dropped {
        weida::Dropped {
            queue_full: self.queue_full,
            byte_budget: self.byte_budget,
            reverse_pool_empty: self.reverse_pool_empty,
            dead_subscriber: self.dead_subscriber,
            refused: self.refused,
        }
    }
}

#[pymethods]
impl Dropped {
    #[new]
    #[pyo3(signature = (*, queue_full=0, byte_budget=0, reverse_pool_empty=0,
        dead_subscriber=0, refused=0))]
    fn new(
        queue_full: u64,
        byte_budget: u64,
        reverse_pool_empty: u64,
        dead_subscriber: u64,
        refused: u64,
    ) -> Self {
        Self {
            queue_full,
            byte_budget,
            reverse_pool_empty,
            dead_subscriber,
            refused,
        }
    }

    /// Every drop, whatever its cause.
    #[getter]
    fn total(&self) -> u64 {
        self.core().total()
    }

    fn __repr__(&self) -> String {
        format!(
            "Dropped(queue_full={}, byte_budget={}, reverse_pool_empty={}, dead_subscriber={}, \
             refused={})",
            self.queue_full,
            self.byte_budget,
            self.reverse_pool_empty,
            self.dead_subscriber,
            self.refused
        )
    }
}

/// Publishes messages by topic to the subscribers whose filters select it. Bound with
/// `listener.publisher(path)`; `close()` (or leaving `async with`) unbinds the path and ends
/// every subscription.
///
/// ```python
/// publisher = listener.publisher("/prices")
/// subscriber = rt.subscriber()
/// await subscriber.connect(publisher.address)
/// await subscriber.subscribe("prices.*.eur")     # installed at the publisher when it returns
/// publisher.publish("prices.btc.eur", b"42000")  # never waits for a subscriber
/// msg = await subscriber.recv()                  # msg.meta.topic == "prices.btc.eur"
/// ```
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Publisher {
    p: OnIo<Arc<weida::Publisher>>,
    address: String,
    _listener: Py<Listener>,
}

impl Publisher {
    pub(crate) fn new(p: weida::Publisher, listener: Py<Listener>) -> Self {
        Self {
            address: p.address().to_string(),
            p: OnIo::new(Arc::new(p)),
            _listener: listener,
        }
    }
}

#[pymethods]
impl Publisher {
    /// The address subscribers dial.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// Queues `body` for every subscriber whose filters select `topic` and returns how many
    /// copies were queued. Never waits: a subscriber whose queue or byte budget is full loses
    /// this copy, counted in `dropped()`. A body above `Limits.subscriber_buffer_bytes` raises
    /// `LimitExceeded` (stream it with `open`), a malformed topic `InvalidFilter`, a closed
    /// publisher `Closed`.
    fn publish(&self, py: Python<'_>, topic: &str, body: Body) -> PyResult<usize> {
        detached(py, || self.p.publish(topic, body.0)).map_err(|e| error::core(py, e))
    }

    /// Opens a streamed message (a `FanOut`) to the subscribers whose filters select `topic`
    /// now; one subscribing later gets the next message, never a fragment. The payload has no
    /// ceiling; each chunk is bounded by `Limits.subscriber_buffer_bytes`.
    fn open(&self, py: Python<'_>, topic: &str) -> PyResult<FanOut> {
        let f = detached(py, || self.p.open(topic)).map_err(|e| error::core(py, e))?;
        Ok(FanOut(ffi::FanOut::new(f)))
    }

    /// Copies dropped since the publisher was bound, by cause.
    fn dropped(&self) -> Dropped {
        self.p.dropped().into()
    }

    /// Copies of `topic` dropped, by cause (the first 10 000 topics with drops are kept apart;
    /// beyond them a topic's drops count in `dropped()` only).
    fn dropped_on(&self, topic: &str) -> Dropped {
        self.p.dropped_on(topic).into()
    }

    /// Subscribers connected now (with at least one filter).
    #[getter]
    fn subscriber_count(&self) -> usize {
        self.p.subscriber_count()
    }

    /// Resolves once `subscriber_count == n`, the copies of one that went counted (a test's
    /// event to await instead of polling). Internal.
    fn _until_subscribers<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyAny>> {
        let p = Arc::clone(&self.p);
        call(
            py,
            Call::new(async move {
                p.until_subscribers(n).await;
                Ok(())
            }),
        )
    }

    /// Unbinds the path and ends every subscription; `publish` then raises `Closed`, and the
    /// drop counts stay readable.
    fn close(&self, py: Python<'_>) {
        detached(py, || self.p.close())
    }

    fn __aenter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        this(slf)
    }

    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _t: Option<Bound<'py, PyAny>>,
        _e: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.close(py);
        none(py)
    }

    fn __repr__(&self) -> String {
        format!("Publisher({})", self.address)
    }
}

/// A message streamed to every subscriber `Publisher.open` matched, chunk by chunk: `write`
/// (waits up to `Limits.fanout_wait` for a slow subscriber's room, then drops its copy) or
/// `write_now` (never waits), then `finish()`, or `cancel()` (subscribers never see half a
/// message). As an async context manager it finishes on a clean exit and cancels on an
/// exception.
///
/// ```python
/// async with publisher.open("frames.hd") as fan:
///     for chunk in chunks:
///         await fan.write(chunk)
/// print(fan.copies, "subscribers got it whole")
/// ```
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct FanOut(Arc<ffi::FanOut>);

#[pymethods]
impl FanOut {
    /// Copies still attached (not dropped); after `finish()`, those it was finished for.
    #[getter]
    fn copies(&self) -> usize {
        self.0.copies()
    }

    /// Hands `chunk` to every attached copy, first waiting up to `Limits.fanout_wait` for the
    /// copies whose backlog has no room for it; those still full then are dropped (counted
    /// `byte_budget`). Returns the copies still attached. Writes take turns. Cancelling it
    /// (asyncio) cancels the message, as `cancel()` does, so no subscriber can get a payload
    /// with a chunk missing; `cancel()` interrupts it (`Canceled`).
    fn write<'py>(&self, py: Python<'py>, chunk: Body) -> PyResult<Bound<'py, PyAny>> {
        call(py, self.0.write_call(chunk.0))
    }

    /// Hands `chunk` to every attached copy without waiting: a copy whose backlog would pass
    /// `Limits.subscriber_buffer_bytes` is dropped whole (counted `byte_budget`). Returns the
    /// copies still attached.
    fn write_now(&self, py: Python<'_>, chunk: Body) -> PyResult<usize> {
        py.detach(|| self.0.write_now(chunk.0))
            .map_err(|f| error::to_py(py, f))
    }

    /// Ends the message for every attached copy; returns how many were still attached.
    fn finish(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| self.0.finish())
            .map_err(|f| error::to_py(py, f))
    }

    /// Cancels every copy: subscribers discard what they received of it. Also interrupts a
    /// pending `write`. Does nothing after `finish()`.
    fn cancel(&self, py: Python<'_>) {
        py.detach(|| self.0.cancel())
    }

    fn __aenter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        this(slf)
    }

    /// Finishes on a clean exit (unless already finished or cancelled), cancels on an
    /// exception; never suppresses it.
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        exc_type: Option<Bound<'py, PyAny>>,
        _e: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if exc_type.is_some() {
            self.cancel(py);
        } else if self.0.is_open() {
            self.finish(py)?;
        }
        none(py)
    }

    fn __repr__(&self) -> String {
        format!("FanOut(copies={})", self.copies())
    }
}

/// Receives the messages of the publishers it connects to whose topics its filters select;
/// `async for msg in subscriber`. Filters are segments separated by `.`, with `*` for one
/// whole segment and a trailing `#` for any number (`"sensors.*.temp"`, `"alerts.#"`).
///
/// ```python
/// sub = rt.subscriber()
/// await sub.connect(publisher_address)
/// await sub.subscribe("sensors.#")
/// async for msg in sub:
///     print(msg.meta.topic, msg.meta.sequence, msg.meta.gap, msg.body)
/// ```
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Subscriber {
    inbox: Arc<Inbox<weida::Subscriber, Receive>>,
}

impl Subscriber {
    pub(crate) fn new(s: weida::Subscriber) -> Self {
        Self {
            inbox: Inbox::new(Arc::new(s)),
        }
    }

    fn handle(&self) -> Arc<weida::Subscriber> {
        Arc::clone(self.inbox.endpoint())
    }
}

#[pymethods]
impl Subscriber {
    /// What happens to this subscriber's publishers from now on: `async for event in
    /// sub.events()`. A redialled publisher gets every filter again.
    fn events(&self) -> crate::events::PeerEvents {
        crate::events::PeerEvents::new(self.handle().events())
    }

    /// Dials the publisher at `address` (with its path) on a connection of its own, and
    /// installs every filter this subscriber holds there before it returns; with `wait=False`
    /// records it at once and does that in the background (connect-before-bind).
    #[pyo3(signature = (address, *, wait = true))]
    fn connect<'py>(
        &self,
        py: Python<'py>,
        address: String,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = self.handle();
        call(
            py,
            Call::new(weida_ffi::patterns::connect(s, address, wait)),
        )
    }

    /// Closes the connection to `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        detached(py, || self.inbox.endpoint().disconnect(address)).map_err(|e| error::core(py, e))
    }

    /// Live connections.
    #[getter]
    fn peer_count(&self) -> usize {
        self.inbox.endpoint().peer_count()
    }

    /// Adds `filter`: returns once every connected publisher has installed it, so a message
    /// published after it returns is selected. A malformed filter raises `InvalidFilter`; a
    /// publisher that refuses it (`UnknownEndpoint`, `LimitExceeded` at `max_filters`,
    /// `Unsupported`) fails the call and the filter is installed nowhere. Not cancel-safe: a
    /// cancelled call may leave it installed at some publishers (`unsubscribe` removes it).
    fn subscribe<'py>(&self, py: Python<'py>, filter: String) -> PyResult<Bound<'py, PyAny>> {
        let s = self.handle();
        call(
            py,
            Call::new(async move { Ok(s.subscribe(&filter).await?) }),
        )
    }

    /// Removes one entry of `filter`; False if it was not held. Returns once every connected
    /// publisher has removed it: from then on nothing only it selected is delivered.
    fn unsubscribe<'py>(&self, py: Python<'py>, filter: String) -> PyResult<Bound<'py, PyAny>> {
        let s = self.handle();
        call(
            py,
            Call::new(async move { Ok(s.unsubscribe(&filter).await?) }),
        )
    }

    /// The filters held, in the order given.
    #[getter]
    fn filters(&self) -> Vec<String> {
        self.inbox.endpoint().filters()
    }

    /// The next message, with `meta.topic` and, under `Runtime(ordering=...)`,
    /// `meta.sequence` and `meta.gap`. Raises `NotConnected` before any connect,
    /// `ConnectionLost` once every connection has ended and nothing is queued, `Closed` after
    /// `close()`. Cancel-safe: a message that arrives as it is cancelled is the next
    /// receive's, in its place.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, 1, Shape::One)
    }

    /// The next message if one is ready now, else None; raises what `recv` would at once.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<MessageOut>> {
        ready_message(py, self.inbox.try_recv())
    }

    /// Up to `max` messages (at least one): waits for the first, then takes those queued. An
    /// error met after the first is raised by the next receive. Cancel-safe.
    fn recv_many<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, max, Shape::Many)
    }

    /// Messages received and waiting for `recv`.
    #[getter]
    fn queued(&self) -> usize {
        self.inbox.queued()
    }

    /// Resolves once `queued >= n` (a test's event to await instead of polling). Internal.
    fn _until_queued<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyAny>> {
        call(py, Call::new(Arc::clone(&self.inbox).until_queued(n)))
    }

    /// Closes every connection; receiving returns what is queued, then raises `Closed` (an
    /// `async for` ends there).
    fn close(&self, py: Python<'_>) {
        detached(py, || self.inbox.endpoint().close())
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next message; the iteration ends after `close()`. Cancel-safe.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, 1, Shape::Next)
    }

    fn __aenter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        this(slf)
    }

    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _t: Option<Bound<'py, PyAny>>,
        _e: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.close(py);
        none(py)
    }

    fn __repr__(&self) -> String {
        format!("Subscriber(filters={:?})", self.inbox.endpoint().filters())
    }
}
