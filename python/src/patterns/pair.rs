//! `Pair` (the core's `patterns/pair.rs`): one end of a PAIR, dialling (`Runtime.pair()`) or
//! bound (`Listener.pair(path)`), with the same calls; its receive goes through weida-ffi's
//! `Inbox`. Conversion only: the claim, the reverse streams and the bounds are the core's.

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

/// One end of a PAIR: `send` reaches the other end, `async for msg in pair` receives what it
/// sends. A bound pair takes one peer at a time (a second is refused with `LimitExceeded`).
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Pair {
    inbox: Arc<Inbox<weida::Pair, Receive>>,
    address: Option<String>,
    _listener: Option<Py<Listener>>,
}

impl Pair {
    pub(crate) fn new(p: weida::Pair, listener: Option<Py<Listener>>) -> Self {
        Self {
            address: p.address().map(|a| a.to_string()),
            inbox: Inbox::new(Arc::new(p)),
            _listener: listener,
        }
    }

    fn pair(&self) -> Arc<weida::Pair> {
        Arc::clone(self.inbox.endpoint())
    }
}

#[pymethods]
impl Pair {
    /// The address a dialling pair connects to (a bound pair's); None for a dialling pair.
    #[getter]
    fn address(&self) -> Option<&str> {
        self.address.as_deref()
    }

    /// Connects a dialling pair to the bound pair at `address` and claims it; with
    /// `wait=False` records it at once and dials in the background.
    #[pyo3(signature = (address, *, wait = true))]
    fn connect<'py>(
        &self,
        py: Python<'py>,
        address: String,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        call(
            py,
            Call::new(weida_ffi::patterns::connect(self.pair(), address, wait)),
        )
    }

    /// Leaves the bound pair; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        detached(py, || self.pair().disconnect(address)).map_err(|e| error::core(py, e))
    }

    /// 1 while the other end is there, else 0.
    #[getter]
    fn peer_count(&self) -> usize {
        self.pair().peer_count()
    }

    /// What happens to a dialling pair's address (a bound pair's connections are its
    /// listener's events).
    fn events(&self, py: Python<'_>) -> PyResult<PeerEvents> {
        let e = self.pair().events().map_err(|e| error::core(py, e))?;
        Ok(PeerEvents::new(e))
    }

    /// Sends a whole message to the other end. A bound pair waits for a peer, bounded by
    /// `send_timeout`.
    #[pyo3(signature = (body, meta=None))]
    fn send<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = self.pair();
        let meta = meta_or_empty(meta);
        call(
            py,
            Call::new(async move { Ok(p.send_with(meta, body.0).await?) }),
        )
    }

    /// Opens a streamed message (an `OutgoingTransfer`) to the other end.
    #[pyo3(signature = (meta=None))]
    fn open<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.pair();
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

    /// The next message from the other end. Cancel-safe.
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
        let p = self.pair();
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

    /// Closes this end: a bound pair unbinds its path, a dialling pair leaves its peer.
    fn close(&self, py: Python<'_>) {
        detached(py, || self.pair().close())
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
