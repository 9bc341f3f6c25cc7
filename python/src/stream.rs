//! The stream types: `OutgoingTransfer` and its `Delivery`, `IncomingTransfer`, `Exchange`,
//! `PendingReply`, `Message` and `IncomingMeta`; and the conversions of bodies and metadata.
//!
//! Bodies in: `bytes` (kept alive, not copied, from 16 KiB up; copied below, where a copy is
//! cheaper than holding the object), `bytearray` (copied once: it may change while it is
//! sent), `memoryview` (copied once through `tobytes()`: the abi3 floor, Python 3.10, has no
//! buffer protocol in its stable ABI). Bodies out: `bytes`, one copy.

use std::sync::Arc;

use bytes::Bytes;
use pyo3::exceptions::{PyStopAsyncIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PyString, PyTuple};
use weida_ffi::{stream as ffi, Call, Fail};

use crate::aio::{self, call};
use crate::error;

/// From this size up a `bytes` body is kept alive and sent without a copy.
const ZERO_COPY_FROM: usize = 16 * 1024;

/// A body from `bytes`, `bytearray` or `memoryview`.
pub(crate) struct Body(pub(crate) Bytes);

fn from_bytes(b: Bound<'_, PyBytes>) -> Bytes {
    let s = b.as_bytes();
    if s.len() < ZERO_COPY_FROM {
        Bytes::copy_from_slice(s)
    } else {
        Bytes::from_owner(PyBackedBytes::from(b))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Body {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Self(from_bytes(b.to_owned())));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(Self(Bytes::from(b.to_vec())));
        }
        if obj.is_instance_of::<PyMemoryView>() {
            let b = obj.call_method0("tobytes")?.cast_into::<PyBytes>()?;
            return Ok(Self(from_bytes(b)));
        }
        Err(PyTypeError::new_err(format!(
            "a body is bytes, bytearray or memoryview, not {}",
            obj.get_type().name()?
        )))
    }
}

/// Bodies from any iterable of bytes-like objects.
pub(crate) fn bodies(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Bytes>> {
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for b in obj.try_iter()? {
        out.push(b?.extract::<Body>()?.0);
    }
    Ok(out)
}

/// A metadata value: bytes-like, or `str` (sent as UTF-8).
fn meta_value(v: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Bytes::copy_from_slice(s.to_cow()?.as_bytes()));
    }
    Ok(v.extract::<Body>()?.0)
}

/// Metadata in: a mapping `{name: value}` or an iterable of `(name, value)` pairs (kept in
/// order, names may repeat); values are bytes-like or `str`.
pub(crate) struct MetaIn(pub(crate) weida::Metadata);

impl<'a, 'py> FromPyObject<'a, 'py> for MetaIn {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let mut m = weida::Metadata::new();
        if let Ok(d) = obj.cast::<PyDict>() {
            for (k, v) in d.iter() {
                m.insert(k.extract::<String>()?, meta_value(&v)?);
            }
        } else {
            for pair in obj.try_iter()? {
                let (k, v): (String, Bound<'_, PyAny>) = pair?.extract()?;
                m.insert(k, meta_value(&v)?);
            }
        }
        Ok(Self(m))
    }
}

pub(crate) fn meta_or_empty(m: Option<MetaIn>) -> weida::Metadata {
    m.map(|m| m.0).unwrap_or_default()
}

/// `bytes` out.
pub(crate) struct BytesOut(pub(crate) Bytes);

impl<'py> IntoPyObject<'py> for BytesOut {
    type Target = PyBytes;
    type Output = Bound<'py, PyBytes>;
    type Error = std::convert::Infallible;

    fn into_pyobject(self, py: Python<'py>) -> Result<Bound<'py, PyBytes>, Self::Error> {
        Ok(PyBytes::new(py, &self.0))
    }
}

/// The peer as a QUIC key proved it.
#[pyclass(frozen, eq, hash, module = "weida._weida")]
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct PeerKey {
    /// The peer's fingerprint, `sha256:<hex>`.
    #[pyo3(get)]
    fingerprint: String,
}

#[pymethods]
impl PeerKey {
    #[new]
    fn new(fingerprint: String) -> Self {
        Self { fingerprint }
    }

    fn __repr__(&self) -> String {
        format!("PeerKey({:?})", self.fingerprint)
    }
}

/// The peer of an AF_UNIX connection as the kernel reported it (SO_PEERCRED).
#[pyclass(frozen, eq, hash, module = "weida._weida")]
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct PeerLocal {
    /// User id.
    #[pyo3(get)]
    uid: u32,
    /// Group id.
    #[pyo3(get)]
    gid: u32,
    /// Process id at connect time (an observation: pids are reused).
    #[pyo3(get)]
    pid: i32,
}

#[pymethods]
impl PeerLocal {
    #[new]
    fn new(uid: u32, gid: u32, pid: i32) -> Self {
        Self { uid, gid, pid }
    }

    fn __repr__(&self) -> String {
        format!(
            "PeerLocal(uid={}, gid={}, pid={})",
            self.uid, self.gid, self.pid
        )
    }
}

/// What arrived with an incoming stream.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct IncomingMeta {
    inner: Arc<weida::IncomingMeta>,
}

#[pymethods]
impl IncomingMeta {
    /// The peer as the transport proved it: `PeerKey` over QUIC, `PeerLocal` over AF_UNIX,
    /// `None` in process or for an anonymous QUIC client.
    #[getter]
    fn peer(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match &self.inner.peer {
            None => py.None(),
            Some(weida::PeerIdentity::Key(fp)) => Py::new(
                py,
                PeerKey {
                    fingerprint: fp.to_string(),
                },
            )?
            .into_any(),
            Some(weida::PeerIdentity::Local { uid, gid, pid }) => Py::new(
                py,
                PeerLocal {
                    uid: *uid,
                    gid: *gid,
                    pid: *pid,
                },
            )?
            .into_any(),
            Some(_) => py.None(),
        })
    }

    /// The endpoint path the stream was addressed to.
    #[getter]
    fn path(&self) -> &str {
        &self.inner.path
    }

    /// Application metadata, in the order it was sent: `[(name, value), ...]`.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .inner
            .metadata
            .iter()
            .map(|(k, v)| {
                PyTuple::new(
                    py,
                    [
                        PyString::new(py, k).into_any(),
                        PyBytes::new(py, v).into_any(),
                    ],
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The first value of metadata `name`, or `None`.
    fn get<'py>(&self, py: Python<'py>, name: &str) -> Option<Bound<'py, PyBytes>> {
        self.inner.metadata.get(name).map(|v| PyBytes::new(py, v))
    }

    /// The Pub/Sub topic, when there is one.
    #[getter]
    fn topic(&self) -> Option<&str> {
        self.inner.topic.as_deref()
    }

    /// The PerProducer sequence number, when negotiated.
    #[getter]
    fn sequence(&self) -> Option<u64> {
        self.inner.sequence
    }

    /// How many numbers were missed before this one, under PerProducer ordering.
    #[getter]
    fn gap(&self) -> Option<u64> {
        self.inner.gap
    }

    fn __repr__(&self) -> String {
        format!(
            "IncomingMeta(path={:?}, peer={:?}, metadata={} items)",
            self.inner.path,
            self.inner.peer,
            self.inner.metadata.len()
        )
    }
}

/// A whole message: its metadata and its body.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Message {
    meta: Arc<weida::IncomingMeta>,
    body: Py<PyBytes>,
}

#[pymethods]
impl Message {
    /// What arrived with it.
    #[getter]
    fn meta(&self) -> IncomingMeta {
        IncomingMeta {
            inner: self.meta.clone(),
        }
    }

    /// The body.
    #[getter]
    fn body(&self, py: Python<'_>) -> Py<PyBytes> {
        self.body.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Message(path={:?}, {} bytes)",
            self.meta.path,
            self.body.bind(py).as_bytes().len()
        )
    }
}

/// A core message, converted on the loop thread.
pub(crate) struct MessageOut(pub(crate) weida::Message);

impl<'py> IntoPyObject<'py> for MessageOut {
    type Target = Message;
    type Output = Bound<'py, Message>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, Message>> {
        Bound::new(
            py,
            Message {
                body: PyBytes::new(py, &self.0.body).unbind(),
                meta: self.0.meta,
            },
        )
    }
}

/// The end of an `async for` over chunks (`None`), or the next chunk.
pub(crate) struct NextChunk(Option<Bytes>);

impl<'py> IntoPyObject<'py> for NextChunk {
    type Target = PyBytes;
    type Output = Bound<'py, PyBytes>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match self.0 {
            Some(c) => Ok(PyBytes::new(py, &c)),
            None => Err(PyStopAsyncIteration::new_err(())),
        }
    }
}

fn chunk(c: Option<Bytes>) -> Option<BytesOut> {
    c.map(BytesOut)
}

/// An outgoing stream: `write` at your own pace, then `finish()` (a commitment: the payload
/// arrives with no local handle) or `cancel()` (the reader sees `Canceled`, never a short
/// payload). Cancelling a pending `write` (asyncio) cancels the transfer. As an async context
/// manager it finishes on a clean exit and cancels on an exception.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct OutgoingTransfer {
    t: Arc<ffi::OutgoingTransfer>,
}

impl OutgoingTransfer {
    pub(crate) fn new(t: Arc<ffi::OutgoingTransfer>) -> Self {
        Self { t }
    }
}

#[pymethods]
impl OutgoingTransfer {
    /// Writes all of `body`; waits while the peer's window is full (backpressure).
    fn write<'py>(&self, py: Python<'py>, body: Body) -> PyResult<Bound<'py, PyAny>> {
        call(py, self.t.write_call(body.0))
    }

    /// Writes several bodies in order, as one write where the transport allows.
    fn write_chunks<'py>(
        &self,
        py: Python<'py>,
        bodies: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let chunks = self::bodies(bodies)?;
        call(py, self.t.write_chunks_call(chunks))
    }

    /// Queues the FIN and returns the `Delivery` (its transport receipt, free to ignore).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let t = Arc::clone(&self.t);
        call(
            py,
            Call::new(async move { Ok(Delivery(t.finish().await?)) }),
        )
    }

    /// Abandons the transfer: the reader sees `Canceled`. Also interrupts a pending write.
    fn cancel(&self, py: Python<'_>) {
        py.detach(|| self.t.cancel());
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        aio::ready(py, slf.into_any())
    }

    /// Finishes on a clean exit, cancels on an exception; never suppresses it.
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        exc_type: Option<Bound<'py, PyAny>>,
        _exc: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if exc_type.is_some() {
            self.cancel(py);
            return aio::ready(py, py.None().into_bound(py));
        }
        call(py, Call::new(Arc::clone(&self.t).close()))
    }
}

/// The transport receipt of a finished transfer; dropping it is free.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Delivery(Arc<ffi::Delivery>);

#[pymethods]
impl Delivery {
    /// Resolves when the peer's transport holds every byte and the FIN (not when its
    /// application read them); raises the peer's refusal if one came first.
    fn delivered<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        call(py, Call::new(Arc::clone(&self.0).delivered()))
    }
}

/// An incoming stream (a one-way transfer, or a reply): read it in chunks (`async for`) or
/// `collect` it. Dropping it unread stops the writer.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct IncomingTransfer {
    t: Arc<ffi::IncomingTransfer>,
}

impl IncomingTransfer {
    pub(crate) fn new(t: Arc<ffi::IncomingTransfer>) -> Self {
        Self { t }
    }
}

#[pymethods]
impl IncomingTransfer {
    /// What arrived with the stream.
    #[getter]
    fn meta(&self) -> IncomingMeta {
        IncomingMeta {
            inner: Arc::clone(self.t.meta()),
        }
    }

    /// The next chunk, `None` after the writer's FIN; a cancelled stream raises `Canceled`,
    /// never ends short. Cancel-safe.
    fn read_chunk<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let t = Arc::clone(&self.t);
        call(
            py,
            Call::new(async move { Ok(chunk(t.read_chunk().await?)) }),
        )
    }

    /// The whole body, refusing one above `max` bytes (`LimitExceeded`, the writer stopped).
    fn collect<'py>(&self, py: Python<'py>, max: u64) -> PyResult<Bound<'py, PyAny>> {
        let t = Arc::clone(&self.t);
        call(
            py,
            Call::new(async move { Ok(BytesOut(t.collect(max).await?)) }),
        )
    }

    /// Refuses the stream with the code `code` names (e.g. `"REJECTED"`).
    #[pyo3(signature = (code, message=""))]
    fn refuse(&self, py: Python<'_>, code: &str, message: &str) -> PyResult<()> {
        let e = weida_ffi::error::answer(code, message).map_err(|e| error::core(py, e))?;
        py.detach(|| self.t.refuse(&e));
        Ok(())
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let t = Arc::clone(&self.t);
        call(
            py,
            Call::new(async move { Ok(NextChunk(t.read_chunk().await?)) }),
        )
    }
}

/// An incoming exchange: the request and the reply half. An exchange dropped (or cancelled)
/// without an answer resets its reply: the requester sees `Canceled`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Exchange {
    x: Arc<ffi::Exchange>,
}

impl Exchange {
    pub(crate) fn new(x: Arc<ffi::Exchange>) -> Self {
        Self { x }
    }

    fn answer<'py>(
        &self,
        py: Python<'py>,
        op: impl std::future::Future<Output = Result<(), Fail>> + Send + 'static,
    ) -> PyResult<Bound<'py, PyAny>> {
        call(py, Call::new(op))
    }
}

#[pymethods]
impl Exchange {
    /// What arrived with the request.
    #[getter]
    fn meta(&self) -> IncomingMeta {
        IncomingMeta {
            inner: Arc::clone(self.x.meta()),
        }
    }

    /// The request's next chunk, `None` at its end (the reply may start before it). Cancel-safe.
    fn read_chunk<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let x = Arc::clone(&self.x);
        call(
            py,
            Call::new(async move { Ok(chunk(x.read_chunk().await?)) }),
        )
    }

    /// The whole request body, bounded by `max` (default `Limits.max_collected_body`).
    #[pyo3(signature = (max=None))]
    fn take_body<'py>(&self, py: Python<'py>, max: Option<u64>) -> PyResult<Bound<'py, PyAny>> {
        let x = Arc::clone(&self.x);
        call(
            py,
            Call::new(async move { Ok(BytesOut(x.take_body(max).await?)) }),
        )
    }

    /// Replies with `body` (and metadata) and finishes the reply.
    #[pyo3(signature = (body, meta=None))]
    fn reply<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.answer(py, Arc::clone(&self.x).reply(meta_or_empty(meta), body.0))
    }

    /// Opens the reply as a stream, for a reply written in parts.
    #[pyo3(signature = (meta=None))]
    fn open_reply<'py>(
        &self,
        py: Python<'py>,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let x = Arc::clone(&self.x);
        let meta = meta_or_empty(meta);
        call(
            py,
            Call::new(async move { Ok(OutgoingTransfer::new(x.open_reply(meta).await?)) }),
        )
    }

    /// Answers REJECTED with `reason`: the requester's `request` raises `Rejected`.
    fn reject<'py>(&self, py: Python<'py>, reason: String) -> PyResult<Bound<'py, PyAny>> {
        self.answer(py, Arc::clone(&self.x).reject(reason))
    }

    /// Answers with an error by its code (`"UNSUPPORTED"`, `"REJECTED"`, ...) and message: the
    /// code's own wire code (`"CLOSED"`: GOING_AWAY), any other as REJECTED; a name that is no
    /// code raises `InvalidConfig`.
    fn fail<'py>(
        &self,
        py: Python<'py>,
        code: String,
        message: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.answer(py, Arc::clone(&self.x).fail(code, message))
    }

    /// Abandons the exchange unanswered: the requester sees `Canceled`, and calls pending here
    /// raise it.
    fn cancel(&self, py: Python<'_>) {
        py.detach(|| self.x.cancel());
    }
}

/// The reply half of an exchange this side opened.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct PendingReply(Arc<ffi::PendingReply>);

impl PendingReply {
    pub(crate) fn new(r: Arc<ffi::PendingReply>) -> Self {
        Self(r)
    }
}

#[pymethods]
impl PendingReply {
    /// Waits for the reply's start: its metadata and a streamed body (`IncomingTransfer`).
    /// The peer's ERROR is raised as its exception; a loss after the request's FIN is
    /// `Indeterminate`.
    fn reply<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = Arc::clone(&self.0);
        call(
            py,
            Call::new(async move { Ok(IncomingTransfer::new(r.reply().await?)) }),
        )
    }

    /// The whole reply as a `Message`, bounded by `Limits.max_collected_body`.
    fn body<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = Arc::clone(&self.0);
        call(
            py,
            Call::new(async move { Ok(MessageOut(r.body().await?)) }),
        )
    }
}

/// A streamed exchange this side opened: `(OutgoingTransfer, PendingReply)`.
pub(crate) fn opened(
    o: (weida::OutgoingTransfer, weida::PendingReply),
) -> (OutgoingTransfer, PendingReply) {
    let (t, r) = ffi::opened(o);
    (OutgoingTransfer::new(t), PendingReply::new(r))
}

/// A stream an acceptor took: a one-way transfer or an exchange.
pub(crate) struct IncomingOut(ffi::Incoming);

impl IncomingOut {
    pub(crate) fn new(i: weida::Incoming) -> Result<Self, Fail> {
        ffi::Incoming::new(i).map(IncomingOut)
    }
}

impl<'py> IntoPyObject<'py> for IncomingOut {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.0 {
            ffi::Incoming::Stream(t) => Ok(Bound::new(py, IncomingTransfer::new(t))?.into_any()),
            ffi::Incoming::Exchange(x) => Ok(Bound::new(py, Exchange::new(x))?.into_any()),
        }
    }
}
