//! The patterns' endpoints: `Pusher`/`Puller`, `Requester`/`Replier`, `Peer`/`Acceptor`, and
//! `Publisher`/`Subscriber` in `pubsub` (the core's `patterns/pubsub.rs`). Every endpoint is an
//! async context manager (`close()` on exit); the receiving ones are async iterators that end
//! when their listener (a subscriber: itself) closes.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use weida::{Error, Receiving};

pub(crate) mod pubsub;

use crate::aio::{self, spawn, spawn_keeping, Fail, Rooted};
use crate::error;
use crate::runtime::Listener;
use crate::stream::{
    meta_or_empty, Body, BytesOut, Exchange, IncomingOut, IncomingTransfer, MessageOut, MetaIn,
    OutgoingTransfer, PendingReply,
};

/// An endpoint's core handle until `close()`.
struct Slot<T>(Rooted<Mutex<Option<Arc<T>>>>);

impl<T: Send + Sync> Slot<T> {
    fn new(v: T) -> Slot<T> {
        Slot(Rooted::new(Mutex::new(Some(Arc::new(v)))))
    }

    fn get(&self, py: Python<'_>) -> PyResult<Arc<T>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| error::to_py(py, Error::Closed))
    }

    /// Drops this handle's reference: a bound endpoint's path is released once no operation
    /// of it is pending.
    fn close(&self, py: Python<'_>) {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        py.detach(|| {
            let _g = aio::enter();
            drop(v);
        });
    }
}

fn this<'py, S: pyo3::PyClass>(slf: Bound<'py, S>) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    aio::ready(py, slf.into_any())
}

fn none(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    aio::ready(py, py.None().into_bound(py))
}

fn to_tuple(
    (t, r): (weida::OutgoingTransfer, weida::PendingReply),
) -> (OutgoingTransfer, PendingReply) {
    (OutgoingTransfer::new(t), PendingReply::new(r))
}

/// `recv` for Python: a cancelled receive hands its message back.
pub(crate) fn recv_one<R: Receiving>(py: Python<'_>, r: Arc<R>) -> PyResult<Bound<'_, PyAny>> {
    let back = r.clone();
    spawn_keeping(
        py,
        async move { Ok(MessageOut(r.recv().await?)) },
        Box::new(move |MessageOut(m)| back.give_back(m)),
    )
}

/// `recv_many` for Python: a cancelled receive hands its messages back.
pub(crate) fn recv_batch<R: Receiving>(
    py: Python<'_>,
    r: Arc<R>,
    max: usize,
) -> PyResult<Bound<'_, PyAny>> {
    let back = r.clone();
    spawn_keeping(
        py,
        async move {
            let batch = r.recv_many(max).await?;
            Ok(batch.into_iter().map(MessageOut).collect::<Vec<_>>())
        },
        Box::new(move |batch: Vec<MessageOut>| {
            for MessageOut(m) in batch {
                back.give_back(m);
            }
        }),
    )
}

/// What a core `try_recv` found, for Python: the message, None, or the error raised.
pub(crate) fn ready_message(
    py: Python<'_>,
    r: Option<Result<weida::Message, Error>>,
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
    p: Slot<weida::Pusher>,
}

impl Pusher {
    pub(crate) fn new(p: weida::Pusher) -> Pusher {
        Pusher { p: Slot::new(p) }
    }
}

#[pymethods]
impl Pusher {
    /// Dials `address` (with its path) and adds it to the round-robin.
    fn connect<'py>(&self, py: Python<'py>, address: String) -> PyResult<Bound<'py, PyAny>> {
        let p = self.p.get(py)?;
        spawn(py, async move { Ok(p.connect(&address).await?) })
    }

    /// Removes `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        self.p
            .get(py)?
            .disconnect(address)
            .map_err(|e| error::to_py(py, e))
    }

    /// Live connections.
    #[getter]
    fn peer_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.p.get(py)?.peer_count())
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
        let p = self.p.get(py)?;
        spawn(py, async move {
            match meta {
                None => p.send(body.0).await?,
                Some(m) => p.send_with(m.0, body.0).await?,
            }
            Ok(())
        })
    }

    /// Sends a whole message only if that can be done now (a small body on an open lane with room):
    /// True, sent as `send` would have; False, nothing was sent (`send` sends it, to the same
    /// peer in the round-robin). Raises what `send` would.
    fn try_send(&self, py: Python<'_>, body: Body) -> PyResult<bool> {
        // It starts nothing and waits for nothing: no runtime context, and the GIL may stay.
        self.p
            .get(py)?
            .try_send(body.0)
            .map(|back| back.is_none())
            .map_err(|e| error::to_py(py, e))
    }

    /// Sends each body as its own message, in one crossing. On failure the exception's
    /// `sent` attribute says how many bodies were sent before it.
    fn send_many<'py>(
        &self,
        py: Python<'py>,
        bodies: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = self.p.get(py)?;
        let bodies = crate::stream::bodies(bodies)?;
        spawn(py, async move {
            match p.send_many(bodies).await {
                (_, Ok(())) => Ok(()),
                (sent, Err(error)) => Err(Fail::Batch { sent, error }),
            }
        })
    }

    /// Opens a streamed message (an `OutgoingTransfer`).
    #[pyo3(signature = (meta=None))]
    fn open<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.p.get(py)?;
        let meta = meta_or_empty(meta);
        spawn(
            py,
            async move { Ok(OutgoingTransfer::new(p.open(meta).await?)) },
        )
    }

    /// Forgets this endpoint's connections; later calls raise `Closed`.
    fn close(&self, py: Python<'_>) {
        self.p.close(py)
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

/// Receives pushed messages at a bound path; `async for msg in puller`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Puller {
    p: Slot<weida::Puller>,
    address: String,
    _listener: Py<Listener>,
}

impl Puller {
    pub(crate) fn new(p: weida::Puller, listener: Py<Listener>) -> Puller {
        Puller {
            address: p.address().to_string(),
            p: Slot::new(p),
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
    /// cancelled raises `Canceled` and the puller goes on. Cancel-safe.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        recv_one(py, self.p.get(py)?)
    }

    /// The next whole message if one is ready now, else None; raises what `recv` would at
    /// once (`Closed` after `close()`).
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<MessageOut>> {
        ready_message(py, self.p.get(py)?.try_recv())
    }

    /// Up to `max` messages (at least one): waits for the first, then takes those ready. An
    /// error met after the first is raised by the next receive. Cancel-safe.
    fn recv_many<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyAny>> {
        recv_batch(py, self.p.get(py)?, max)
    }

    /// The next message as a stream (`IncomingTransfer`), for bodies read in parts.
    fn accept<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.p.get(py)?;
        spawn(
            py,
            async move { Ok(IncomingTransfer::new(p.accept().await?)) },
        )
    }

    /// Releases the path (once no receive is pending); later calls raise `Closed`.
    fn close(&self, py: Python<'_>) {
        self.p.close(py)
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next message; the iteration ends when the listener closes. Cancel-safe.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.p.get(py)?;
        let back = p.clone();
        spawn_keeping(
            py,
            async move {
                match p.recv().await {
                    Ok(m) => Ok(MessageOut(m)),
                    Err(Error::Closed) => Err(Fail::End),
                    Err(e) => Err(e.into()),
                }
            },
            Box::new(move |MessageOut(m)| back.give_back(m)),
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
        self.close(py);
        none(py)
    }
}

/// Sends requests and awaits replies, round-robin over connected repliers.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Requester {
    r: Slot<weida::Requester>,
}

impl Requester {
    pub(crate) fn new(r: weida::Requester) -> Requester {
        Requester { r: Slot::new(r) }
    }
}

#[pymethods]
impl Requester {
    /// Dials `address` (with its path) and adds it to the round-robin.
    fn connect<'py>(&self, py: Python<'py>, address: String) -> PyResult<Bound<'py, PyAny>> {
        let r = self.r.get(py)?;
        spawn(py, async move { Ok(r.connect(&address).await?) })
    }

    /// Removes `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        self.r
            .get(py)?
            .disconnect(address)
            .map_err(|e| error::to_py(py, e))
    }

    /// Live connections.
    #[getter]
    fn peer_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.r.get(py)?.peer_count())
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
        let r = self.r.get(py)?;
        spawn(py, async move {
            Ok(BytesOut(match meta {
                None => r.request(body.0).await?,
                Some(m) => r.request_with(m.0, body.0).await?.body,
            }))
        })
    }

    /// `request` with metadata both ways: returns the reply as a `Message`.
    fn request_with<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: MetaIn,
    ) -> PyResult<Bound<'py, PyAny>> {
        let r = self.r.get(py)?;
        spawn(py, async move {
            Ok(MessageOut(r.request_with(meta.0, body.0).await?))
        })
    }

    /// Opens a streamed request: `(OutgoingTransfer, PendingReply)`.
    #[pyo3(signature = (meta=None))]
    fn open<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let r = self.r.get(py)?;
        let meta = meta_or_empty(meta);
        spawn(py, async move { Ok(to_tuple(r.open(meta).await?)) })
    }

    /// Forgets this endpoint's connections; later calls raise `Closed`.
    fn close(&self, py: Python<'_>) {
        self.r.close(py)
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

/// Answers requests at a bound path; `async for exchange in replier`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Replier {
    r: Slot<weida::Replier>,
    address: String,
    _listener: Py<Listener>,
}

impl Replier {
    pub(crate) fn new(r: weida::Replier, listener: Py<Listener>) -> Replier {
        Replier {
            address: r.address().to_string(),
            r: Slot::new(r),
            _listener: listener,
        }
    }
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
        let r = self.r.get(py)?;
        spawn(py, async move { Ok(Exchange::new(r.accept().await?)) })
    }

    /// Releases the path (once no accept is pending); later calls raise `Closed`.
    fn close(&self, py: Python<'_>) {
        self.r.close(py)
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next exchange; the iteration ends when the listener closes.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = self.r.get(py)?;
        spawn(py, async move {
            match r.accept().await {
                Ok(x) => Ok(Exchange::new(x)),
                Err(Error::Closed) => Err(Fail::End),
                Err(e) => Err(e.into()),
            }
        })
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

/// Opens raw streams to acceptors: one-way transfers and exchanges.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Peer {
    p: Slot<weida::Peer>,
}

impl Peer {
    pub(crate) fn new(p: weida::Peer) -> Peer {
        Peer { p: Slot::new(p) }
    }
}

#[pymethods]
impl Peer {
    /// Dials `address` (with its path).
    fn connect<'py>(&self, py: Python<'py>, address: String) -> PyResult<Bound<'py, PyAny>> {
        let p = self.p.get(py)?;
        spawn(py, async move { Ok(p.connect(&address).await?) })
    }

    /// Removes `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        self.p
            .get(py)?
            .disconnect(address)
            .map_err(|e| error::to_py(py, e))
    }

    /// Live connections.
    #[getter]
    fn peer_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.p.get(py)?.peer_count())
    }

    /// Opens a one-way stream (an `OutgoingTransfer`).
    #[pyo3(signature = (meta=None))]
    fn open<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.p.get(py)?;
        let meta = meta_or_empty(meta);
        spawn(
            py,
            async move { Ok(OutgoingTransfer::new(p.open(meta).await?)) },
        )
    }

    /// Opens an exchange: `(OutgoingTransfer, PendingReply)`.
    #[pyo3(signature = (meta=None))]
    fn exchange<'py>(&self, py: Python<'py>, meta: Option<MetaIn>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.p.get(py)?;
        let meta = meta_or_empty(meta);
        spawn(py, async move { Ok(to_tuple(p.exchange(meta).await?)) })
    }

    /// Forgets this endpoint's connections; later calls raise `Closed`.
    fn close(&self, py: Python<'_>) {
        self.p.close(py)
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

/// Receives both stream kinds at a bound path: `IncomingTransfer` or `Exchange`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Acceptor {
    a: Slot<weida::Acceptor>,
    address: String,
    _listener: Py<Listener>,
}

impl Acceptor {
    pub(crate) fn new(a: weida::Acceptor, listener: Py<Listener>) -> Acceptor {
        Acceptor {
            address: a.address().to_string(),
            a: Slot::new(a),
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
        let a = self.a.get(py)?;
        spawn(py, async move { Ok(IncomingOut::new(a.accept().await?)) })
    }

    /// Releases the path (once no accept is pending); later calls raise `Closed`.
    fn close(&self, py: Python<'_>) {
        self.a.close(py)
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next stream; the iteration ends when the listener closes.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = self.a.get(py)?;
        spawn(py, async move {
            match a.accept().await {
                Ok(i) => Ok(IncomingOut::new(i)),
                Err(Error::Closed) => Err(Fail::End),
                Err(e) => Err(e.into()),
            }
        })
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
