//! Pub/Sub the other way round (the core's `patterns/pubsub/collector.rs`): `DialingPublisher`
//! (`Runtime.publisher()`) and `BoundSubscriber` (`Listener.subscriber(path)`), a collector.
//! Conversion only: the fan-out, its drops, filters and ordering are the core's.

use std::sync::Arc;

use pyo3::prelude::*;
use weida_ffi::inbox::Inbox;
use weida_ffi::Call;

use super::pubsub::{detached, Dropped};
use super::{none, ready_message, this};
use crate::aio::{call, receive, Receive, Shape};
use crate::error;
use crate::events::PeerEvents;
use crate::runtime::Listener;
use crate::stream::{Body, MessageOut, MetaIn};

/// A publisher that dials its subscribers (collectors): each one it connected gets a copy of
/// every message, whatever the topic; the collector filters.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct DialingPublisher {
    p: Arc<weida::DialingPublisher>,
}

impl DialingPublisher {
    pub(crate) fn new(p: weida::DialingPublisher) -> Self {
        Self { p: Arc::new(p) }
    }
}

#[pymethods]
impl DialingPublisher {
    /// Connects to a collector's address (with its path); with `wait=False` records it at
    /// once and dials in the background.
    #[pyo3(signature = (address, *, wait = true))]
    fn connect<'py>(
        &self,
        py: Python<'py>,
        address: String,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        call(
            py,
            Call::new(weida_ffi::patterns::connect(self.p.clone(), address, wait)),
        )
    }

    /// Leaves a collector; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        detached(py, || self.p.disconnect(address)).map_err(|e| error::core(py, e))
    }

    /// Collectors connected and live: the copies the next `publish` makes.
    #[getter]
    fn peer_count(&self) -> usize {
        self.p.peer_count()
    }

    /// What happens to the addresses this publisher connected.
    fn events(&self) -> PeerEvents {
        PeerEvents::new(self.p.events())
    }

    /// Queues a copy of `body` under `topic` for every live collector connected and returns
    /// how many. Never waits: a collector whose writer is full loses this copy, counted in
    /// `dropped()`. A body above `Limits.subscriber_buffer_bytes` raises `LimitExceeded`, a
    /// malformed topic `InvalidFilter`.
    #[pyo3(signature = (topic, body, meta=None))]
    fn publish(
        &self,
        py: Python<'_>,
        topic: &str,
        body: Body,
        meta: Option<MetaIn>,
    ) -> PyResult<usize> {
        let meta = meta.map(|m| m.0).unwrap_or_default();
        detached(py, || self.p.publish_with(topic, meta, body.0)).map_err(|e| error::core(py, e))
    }

    /// Copies dropped, by cause: `queue_full`, `byte_budget`, `dead_subscriber`.
    fn dropped(&self) -> Dropped {
        self.p.dropped().into()
    }

    /// Leaves every collector.
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
}

/// A subscriber bound at a path that dialling publishers feed (a collector): it keeps what its
/// filters select, and counts the rest in `discarded`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct BoundSubscriber {
    inbox: Arc<Inbox<weida::BoundSubscriber, Receive>>,
    address: String,
    _listener: Py<Listener>,
}

impl BoundSubscriber {
    pub(crate) fn new(s: weida::BoundSubscriber, listener: Py<Listener>) -> Self {
        Self {
            address: s.address().to_string(),
            inbox: Inbox::new(Arc::new(s)),
            _listener: listener,
        }
    }

    fn s(&self) -> &weida::BoundSubscriber {
        self.inbox.endpoint()
    }
}

#[pymethods]
impl BoundSubscriber {
    /// The address publishers dial.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// Adds `filter`, here and at once (there is nobody to ask). Raises `InvalidFilter`.
    fn subscribe(&self, py: Python<'_>, filter: &str) -> PyResult<()> {
        self.s().subscribe(filter).map_err(|e| error::core(py, e))
    }

    /// Removes one entry of `filter`; False if it was not held.
    fn unsubscribe(&self, py: Python<'_>, filter: &str) -> PyResult<bool> {
        self.s().unsubscribe(filter).map_err(|e| error::core(py, e))
    }

    /// The filters held, in the order given.
    #[getter]
    fn filters(&self) -> Vec<String> {
        self.s().filters()
    }

    /// Messages that arrived and that no filter selected.
    #[getter]
    fn discarded(&self) -> u64 {
        self.s().discarded()
    }

    /// The next message a filter selects. Cancel-safe.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, 1, Shape::One)
    }

    /// The next selected message if one is ready now, else None.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<MessageOut>> {
        ready_message(py, self.inbox.try_recv())
    }

    /// Up to `max` selected messages (at least one). Cancel-safe.
    fn recv_many<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, max, Shape::Many)
    }

    /// Unbinds the path: what is queued is still received, then `Closed`.
    fn close(&self, py: Python<'_>) {
        detached(py, || self.s().close())
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

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
}
