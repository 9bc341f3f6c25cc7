//! The patterns' endpoints: `Pusher`/`Puller`, `Requester`/`Replier`, `Peer`/`Acceptor`, and
//! `Publisher`/`Subscriber` in `pubsub` (the core's `patterns/pubsub.rs`). Every endpoint is an
//! async context manager (`close()` on exit); the receiving ones are async iterators that end
//! when their listener (a subscriber: itself) closes. Receives go through weida-ffi's `Inbox`.

use std::sync::Arc;

use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use weida::Error;
use weida_ffi::inbox::Inbox;
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::patterns::{send_many, Endpoint};
use weida_ffi::{Call, Fail};

pub(crate) mod bound_push;
pub(crate) mod bus;
pub(crate) mod collector;
pub(crate) mod pair;
pub(crate) mod pubsub;
pub(crate) mod survey;

use crate::aio::{self, call, receive, Receive, Shape};
use crate::error;
use crate::events::PeerEvents;
use crate::runtime::Listener;
use crate::stream::{
    meta_or_empty, opened, Body, BytesOut, Exchange, IncomingOut, IncomingTransfer, MessageOut,
    MetaIn, OutgoingTransfer,
};

fn this<'py, S: pyo3::PyClass>(slf: Bound<'py, S>) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    aio::ready(py, slf.into_any())
}

fn none(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    aio::ready(py, py.None().into_bound(py))
}

/// The endpoint, or `Closed` after `close()`.
fn get<T>(py: Python<'_>, e: &Endpoint<T>) -> PyResult<Arc<T>> {
    e.get().map_err(|f| error::to_py(py, f))
}

/// The next item of an `async for`, or its end (`Closed`: the endpoint closed).
pub(crate) enum Next<T> {
    Item(T),
    End,
}

impl<T> Next<T> {
    fn of(r: weida::Result<T>) -> Result<Self, Fail> {
        match r {
            Ok(v) => Ok(Self::Item(v)),
            Err(Error::Closed) => Ok(Self::End),
            Err(e) => Err(e.into()),
        }
    }
}

impl<'py, T: IntoPyObject<'py>> IntoPyObject<'py> for Next<T>
where
    T::Error: Into<PyErr>,
{
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Self::Item(v) => v.into_bound_py_any(py),
            Self::End => Err(PyStopAsyncIteration::new_err(())),
        }
    }
}

/// What a `try_recv` found: the message, None, or the error raised.
pub(crate) fn ready_message(
    py: Python<'_>,
    r: Option<Result<weida::Message, Fail>>,
) -> PyResult<Option<MessageOut>> {
    match r {
        None => Ok(None),
        Some(Ok(m)) => Ok(Some(MessageOut(m))),
        Some(Err(e)) => Err(error::to_py(py, e)),
    }
}

/// Sends messages to pullers, one stream each, round-robin per message.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Pusher {
    p: Endpoint<weida::Pusher>,
}

impl Pusher {
    pub(crate) fn new(p: weida::Pusher) -> Self {
        Self {
            p: Endpoint::new(p),
        }
    }
}

#[pymethods]
impl Pusher {
    /// Dials `address` (with its path) and adds it to the round-robin; with `wait=False`
    /// records it at once and dials in the background (connect-before-bind: the listener may
    /// come later; `events()` tells how it goes).
    #[pyo3(signature = (address, *, wait = true))]
    fn connect<'py>(
        &self,
        py: Python<'py>,
        address: String,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = get(py, &self.p)?;
        call(
            py,
            Call::new(weida_ffi::patterns::connect(p, address, wait)),
        )
    }

    /// What happens to this endpoint's addresses from now on: `async for event in
    /// endpoint.events()` (`PeerEvent`: connected, lost, retrying, gave_up, missed).
    fn events(&self, py: Python<'_>) -> PyResult<PeerEvents> {
        Ok(PeerEvents::new(get(py, &self.p)?.events()))
    }

    /// Removes `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        on_io(|| {
            get(py, &self.p)?
                .disconnect(address)
                .map_err(|e| error::core(py, e))
        })
    }

    /// Live connections.
    #[getter]
    fn peer_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(get(py, &self.p)?.peer_count())
    }

    /// Sends a whole message, fire-and-forget: returns once its FIN is queued. Waits for the
    /// peer's stream budget (backpressure).
    #[pyo3(signature = (body, meta=None))]
    fn send<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = get(py, &self.p)?;
        call(
            py,
            Call::new(async move {
                match meta {
                    None => p.send(body.0).await?,
                    Some(m) => p.send_with(m.0, body.0).await?,
                }
                Ok(())
            }),
        )
    }

    /// Sends a whole message only if that can be done now (a small body on an open lane with room):
    /// True, sent as `send` would have; False, nothing was sent (`send` sends it, to the same
    /// peer in the round-robin). Raises what `send` would.
    fn try_send(&self, py: Python<'_>, body: Body) -> PyResult<bool> {
        // It starts nothing and waits for nothing: no runtime context, and the GIL may stay.
        get(py, &self.p)?
            .try_send(body.0)
            .map(|back| back.is_none())
            .map_err(|e| error::core(py, e))
    }

    /// Sends each body as its own message, in one crossing. On failure the exception's
    /// `sent` attribute says how many bodies were sent before it.
    fn send_many<'py>(
        &self,
        py: Python<'py>,
        bodies: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = get(py, &self.p)?;
        let bodies = crate::stream::bodies(bodies)?;
        call(py, Call::new(send_many(p, bodies)))
    }

    /// Opens a streamed message (an `OutgoingTransfer`).
    #[pyo3(signature = (meta=None))]
    fn open<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let p = get(py, &self.p)?;
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

    /// Forgets this endpoint's connections; later calls raise `Closed`.
    fn close(&self) {
        self.p.close()
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

/// Receives pushed messages at a bound path; `async for msg in puller`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Puller {
    inbox: Arc<Inbox<weida::Puller, Receive>>,
    address: String,
    _listener: Py<Listener>,
}

impl Puller {
    pub(crate) fn new(p: weida::Puller, listener: Py<Listener>) -> Self {
        Self {
            address: p.address().to_string(),
            inbox: Inbox::new(Arc::new(p)),
            _listener: listener,
        }
    }
}

#[pymethods]
impl Puller {
    /// The address to dial this puller at.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// The next whole message (bounded by `Limits.max_collected_body`). A message its sender
    /// cancelled raises `Canceled` and the puller goes on. Cancel-safe: a message that
    /// arrives as it is cancelled is the next receive's, in its place.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, 1, Shape::One)
    }

    /// The next whole message if one is ready now, else None; raises what `recv` would at
    /// once (`Closed` after `close()`).
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<MessageOut>> {
        ready_message(py, self.inbox.try_recv())
    }

    /// Up to `max` messages (at least one): waits for the first, then takes those ready. An
    /// error met after the first is raised by the next receive. Cancel-safe.
    fn recv_many<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyAny>> {
        receive(py, &self.inbox, max, Shape::Many)
    }

    /// The next message as a stream (`IncomingTransfer`), for bodies read in parts: the next
    /// one no receive has taken.
    fn accept<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let p = Arc::clone(self.inbox.endpoint());
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

    /// Unbinds the path: messages already received are still handed out, then receiving
    /// raises `Closed`.
    fn close(&self) {
        on_io(|| self.inbox.endpoint().close())
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next message; the iteration ends when the puller or its listener closes.
    /// Cancel-safe.
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

/// Sends requests and awaits replies, round-robin over connected repliers.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Requester {
    r: Endpoint<weida::Requester>,
}

impl Requester {
    pub(crate) fn new(r: weida::Requester) -> Self {
        Self {
            r: Endpoint::new(r),
        }
    }
}

#[pymethods]
impl Requester {
    /// Dials `address` (with its path) and adds it to the round-robin; with `wait=False`
    /// records it at once and dials in the background (connect-before-bind: the listener may
    /// come later; `events()` tells how it goes).
    #[pyo3(signature = (address, *, wait = true))]
    fn connect<'py>(
        &self,
        py: Python<'py>,
        address: String,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let r = get(py, &self.r)?;
        call(
            py,
            Call::new(weida_ffi::patterns::connect(r, address, wait)),
        )
    }

    /// What happens to this endpoint's addresses from now on: `async for event in
    /// endpoint.events()` (`PeerEvent`: connected, lost, retrying, gave_up, missed).
    fn events(&self, py: Python<'_>) -> PyResult<PeerEvents> {
        Ok(PeerEvents::new(get(py, &self.r)?.events()))
    }

    /// Removes `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        on_io(|| {
            get(py, &self.r)?
                .disconnect(address)
                .map_err(|e| error::core(py, e))
        })
    }

    /// Live connections.
    #[getter]
    fn peer_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(get(py, &self.r)?.peer_count())
    }

    /// Sends `body` and returns the reply body. The replier's error is raised here; a reply
    /// lost after the request was sent whole raises `Indeterminate`. Cancelling it cancels
    /// the exchange (the replier sees `Canceled`).
    #[pyo3(signature = (body, meta=None))]
    fn request<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let r = get(py, &self.r)?;
        call(
            py,
            Call::new(async move {
                Ok(BytesOut(match meta {
                    None => r.request(body.0).await?,
                    Some(m) => r.request_with(m.0, body.0).await?.body,
                }))
            }),
        )
    }

    /// `request` with metadata both ways: returns the reply as a `Message`.
    fn request_with<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: MetaIn,
    ) -> PyResult<Bound<'py, PyAny>> {
        let r = get(py, &self.r)?;
        call(
            py,
            Call::new(async move { Ok(MessageOut(r.request_with(meta.0, body.0).await?)) }),
        )
    }

    /// Opens a streamed request: `(OutgoingTransfer, PendingReply)`.
    #[pyo3(signature = (meta=None))]
    fn open<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let r = get(py, &self.r)?;
        let meta = meta_or_empty(meta);
        call(
            py,
            Call::new(async move { Ok(opened(r.open(meta).await?)) }),
        )
    }

    /// Forgets this endpoint's connections; later calls raise `Closed`.
    fn close(&self) {
        self.r.close()
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

/// Answers requests at a bound path; `async for exchange in replier`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Replier {
    r: OnIo<Arc<weida::Replier>>,
    address: String,
    _listener: Py<Listener>,
}

impl Replier {
    pub(crate) fn new(r: weida::Replier, listener: Py<Listener>) -> Self {
        Self {
            address: r.address().to_string(),
            r: OnIo::new(Arc::new(r)),
            _listener: listener,
        }
    }
}

fn exchange(x: weida::Exchange) -> Exchange {
    Exchange::new(weida_ffi::stream::Exchange::new(x))
}

#[pymethods]
impl Replier {
    /// The address to dial this replier at.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// The next `Exchange`. Cancel-safe.
    fn accept<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = Arc::clone(&self.r);
        call(
            py,
            Call::new(async move { Ok(exchange(r.accept().await?)) }),
        )
    }

    /// Unbinds the path: exchanges already received are still handed out, then `Closed`.
    fn close(&self) {
        on_io(|| self.r.close())
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next exchange; the iteration ends when the replier or its listener closes.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = Arc::clone(&self.r);
        call(
            py,
            Call::new(async move { Next::of(r.accept().await.map(exchange)) }),
        )
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

/// Opens raw streams to acceptors: one-way transfers and exchanges.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Peer {
    p: Endpoint<weida::Peer>,
}

impl Peer {
    pub(crate) fn new(p: weida::Peer) -> Self {
        Self {
            p: Endpoint::new(p),
        }
    }
}

#[pymethods]
impl Peer {
    /// Dials `address` (with its path) and adds it to the round-robin; with `wait=False`
    /// records it at once and dials in the background (connect-before-bind: the listener may
    /// come later; `events()` tells how it goes).
    #[pyo3(signature = (address, *, wait = true))]
    fn connect<'py>(
        &self,
        py: Python<'py>,
        address: String,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = get(py, &self.p)?;
        call(
            py,
            Call::new(weida_ffi::patterns::connect(p, address, wait)),
        )
    }

    /// What happens to this endpoint's addresses from now on: `async for event in
    /// endpoint.events()` (`PeerEvent`: connected, lost, retrying, gave_up, missed).
    fn events(&self, py: Python<'_>) -> PyResult<PeerEvents> {
        Ok(PeerEvents::new(get(py, &self.p)?.events()))
    }

    /// Removes `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        on_io(|| {
            get(py, &self.p)?
                .disconnect(address)
                .map_err(|e| error::core(py, e))
        })
    }

    /// Live connections.
    #[getter]
    fn peer_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(get(py, &self.p)?.peer_count())
    }

    /// Opens a one-way stream (an `OutgoingTransfer`).
    #[pyo3(signature = (meta=None))]
    fn open<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let p = get(py, &self.p)?;
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

    /// Opens an exchange: `(OutgoingTransfer, PendingReply)`.
    #[pyo3(signature = (meta=None))]
    fn exchange<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let p = get(py, &self.p)?;
        let meta = meta_or_empty(meta);
        call(
            py,
            Call::new(async move { Ok(opened(p.exchange(meta).await?)) }),
        )
    }

    /// Forgets this endpoint's connections; later calls raise `Closed`.
    fn close(&self) {
        self.p.close()
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

/// Receives both stream kinds at a bound path: `IncomingTransfer` or `Exchange`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Acceptor {
    a: OnIo<Arc<weida::Acceptor>>,
    address: String,
    _listener: Py<Listener>,
}

impl Acceptor {
    pub(crate) fn new(a: weida::Acceptor, listener: Py<Listener>) -> Self {
        Self {
            address: a.address().to_string(),
            a: OnIo::new(Arc::new(a)),
            _listener: listener,
        }
    }
}

#[pymethods]
impl Acceptor {
    /// The address to dial this acceptor at.
    #[getter]
    fn address(&self) -> &str {
        &self.address
    }

    /// The next stream: an `IncomingTransfer` or an `Exchange`. Cancel-safe.
    fn accept<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = Arc::clone(&self.a);
        call(
            py,
            Call::new(async move { IncomingOut::new(a.accept().await?) }),
        )
    }

    /// Unbinds the path: streams already received are still handed out, then `Closed`.
    fn close(&self) {
        on_io(|| self.a.close())
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next stream; the iteration ends when the acceptor or its listener closes.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = Arc::clone(&self.a);
        call(
            py,
            Call::new(async move {
                match Next::of(a.accept().await)? {
                    Next::Item(i) => Ok(Next::Item(IncomingOut::new(i)?)),
                    Next::End => Ok(Next::End),
                }
            }),
        )
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
