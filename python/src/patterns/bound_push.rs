//! Push/Pull the other way round (the core's `patterns/bound_push.rs`): `BoundPusher`
//! (`Listener.pusher(path)`) and `DialingPuller` (`Runtime.puller()`). Conversion only: the
//! claims, the round-robin and the bounds are the core's.

use std::sync::Arc;

use pyo3::prelude::*;
use weida_ffi::inbox::Inbox;
use weida_ffi::Call;

use super::pubsub::detached;
use super::{none, ready_message, this};
use crate::aio::{call, receive, Receive, Shape};
use crate::error;
use crate::events::PeerEvents;
use crate::runtime::Listener;
use crate::stream::{meta_or_empty, Body, IncomingTransfer, MessageOut, MetaIn, OutgoingTransfer};

/// A pusher bound at a path: the pullers that connect to it share its messages, round-robin.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct BoundPusher {
    p: Arc<weida::BoundPusher>,
    _listener: Py<Listener>,
}

impl BoundPusher {
    pub(crate) fn new(p: weida::BoundPusher, listener: Py<Listener>) -> Self {
        Self {
            p: Arc::new(p),
            _listener: listener,
        }
    }
}

#[pymethods]
impl BoundPusher {
    /// The address pullers connect to.
    #[getter]
    fn address(&self) -> String {
        self.p.address().to_string()
    }

    /// Pullers connected now.
    #[getter]
    fn peer_count(&self) -> usize {
        self.p.peer_count()
    }

    /// Sends a whole message to the next puller; waits for one, bounded by `send_timeout`.
    #[pyo3(signature = (body, meta=None))]
    fn send<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = Arc::clone(&self.p);
        let meta = meta_or_empty(meta);
        call(
            py,
            Call::new(async move { Ok(p.send_with(meta, body.0).await?) }),
        )
    }

    /// Opens a streamed message (an `OutgoingTransfer`) to the next puller.
    #[pyo3(signature = (meta=None))]
    fn open<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let p = Arc::clone(&self.p);
        let meta = meta_or_empty(meta);
        call(
            py,
            Call::new(async move {
                let t = p.open(meta).await?;
                Ok(OutgoingTransfer::new(
                    weida_ffi::stream::OutgoingTransfer::new(t),
                ))
            }),
        )
    }

    /// Unbinds the path; later sends raise `Closed`.
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

/// A puller that dials bound pushers and receives its share of their messages.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct DialingPuller {
    inbox: Arc<Inbox<weida::DialingPuller, Receive>>,
}

impl DialingPuller {
    pub(crate) fn new(p: weida::DialingPuller) -> Self {
        Self {
            inbox: Inbox::new(Arc::new(p)),
        }
    }

    fn puller(&self) -> Arc<weida::DialingPuller> {
        Arc::clone(self.inbox.endpoint())
    }
}

#[pymethods]
impl DialingPuller {
    /// Connects to a bound pusher's address and claims a share; with `wait=False` records it
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
            Call::new(weida_ffi::patterns::connect(self.puller(), address, wait)),
        )
    }

    /// Leaves a bound pusher; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        detached(py, || self.puller().disconnect(address)).map_err(|e| error::core(py, e))
    }

    /// Bound pushers connected and live.
    #[getter]
    fn peer_count(&self) -> usize {
        self.puller().peer_count()
    }

    /// What happens to the addresses this puller connected.
    fn events(&self) -> PeerEvents {
        PeerEvents::new(self.puller().events())
    }

    /// The next message. Cancel-safe.
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

    /// The next message as an `IncomingTransfer`, for a body read in parts.
    fn accept<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.puller();
        call(
            py,
            Call::new(async move {
                let t = p.accept().await?;
                Ok(IncomingTransfer::new(
                    weida_ffi::stream::IncomingTransfer::new(t),
                ))
            }),
        )
    }

    /// Leaves every bound pusher; what was received is still handed out, then `Closed`.
    fn close(&self, py: Python<'_>) {
        detached(py, || self.puller().close())
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
