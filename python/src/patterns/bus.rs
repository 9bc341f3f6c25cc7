//! `Bus` (the core's `patterns/bus.rs`): a member bound at a path of its runtime's listener
//! and dialling the other members; its receive is a puller's, through weida-ffi's `Inbox`.

use std::sync::Arc;

use pyo3::prelude::*;
use weida_ffi::inbox::Inbox;
use weida_ffi::io::on_io;
use weida_ffi::Call;

use super::pubsub::Dropped;
use super::{none, ready_message, this};
use crate::aio::{call, receive, Receive, Shape};
use crate::error;
use crate::events::PeerEvents;
use crate::runtime::Listener;
use crate::stream::{Body, MessageOut, MetaIn};

/// A bus member: `send` reaches every member it connected (one shared copy each, a slow one
/// dropped and counted); `async for msg in member` receives what the others send.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Bus {
    inbox: Arc<Inbox<weida::Bus, Receive>>,
    address: String,
    _listener: Py<Listener>,
}

impl Bus {
    pub(crate) fn new(b: weida::Bus, listener: Py<Listener>) -> Self {
        Self {
            address: b.address().to_string(),
            inbox: Inbox::new(Arc::new(b)),
            _listener: listener,
        }
    }

    fn bus(&self) -> Arc<weida::Bus> {
        Arc::clone(self.inbox.endpoint())
    }
}

#[pymethods]
impl Bus {
    /// The address other members connect to.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// Connects to another member (its address, with its path); with `wait=False` records it
    /// at once and dials in the background.
    #[pyo3(signature = (address, *, wait = true))]
    fn connect<'py>(
        &self,
        py: Python<'py>,
        address: String,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        call(
            py,
            Call::new(weida_ffi::patterns::connect(self.bus(), address, wait)),
        )
    }

    /// Leaves a member; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        on_io(|| self.bus().disconnect(address)).map_err(|e| error::core(py, e))
    }

    /// Members connected and live.
    #[getter]
    fn peer_count(&self) -> usize {
        self.bus().peer_count()
    }

    /// What happens to the addresses this member connected.
    fn events(&self) -> PeerEvents {
        PeerEvents::new(self.bus().events())
    }

    /// Queues a copy of `body` for every live member connected; returns how many. A body above
    /// `Limits.subscriber_buffer_bytes` raises `LimitExceeded`.
    #[pyo3(signature = (body, meta=None))]
    fn send<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let b = self.bus();
        let meta = meta.map(|m| m.0).unwrap_or_default();
        call(
            py,
            Call::new(async move { Ok(b.send_with(meta, body.0).await?) }),
        )
    }

    /// The next message another member sent. Cancel-safe.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, 1, Shape::One)
    }

    /// The next message if one is ready now, else None.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<MessageOut>> {
        ready_message(py, self.inbox.try_recv())
    }

    /// Up to `max` messages (at least one). Cancel-safe.
    fn recv_many<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, max, Shape::Many)
    }

    /// Copies dropped, by cause: `queue_full`, `byte_budget`, `dead_subscriber` (lost with a
    /// member whose connection failed).
    fn dropped(&self) -> Dropped {
        self.bus().dropped().into()
    }

    /// Unbinds the path and leaves every member.
    fn close(&self) {
        on_io(|| self.bus().close())
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
        self.close();
        none(py)
    }
}
