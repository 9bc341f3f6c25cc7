//! The stream types: `OutgoingTransfer` and its `Delivery`, `IncomingTransfer`, `Exchange`,
//! `PendingReply`, `Message` and `IncomingMeta`; and the conversions of bodies and metadata.
//!
//! Bodies in: `bytes` (kept alive, not copied, from 16 KiB up; copied below, where a copy is
//! cheaper than holding the object), `bytearray` (copied once: it may change while it is
//! sent), `memoryview` (copied once through `tobytes()`: the abi3 floor, Python 3.10, has no
//! buffer protocol in its stable ABI). Bodies out: `bytes`, one copy.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PyString, PyTuple};
use weida::Error;

use crate::aio::{self, spawn, spawn_or_cancel, Fail, Outcome, Rooted};
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

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Body> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Body(from_bytes(b.to_owned())));
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(Body(Bytes::from(b.to_vec())));
        }
        if obj.is_instance_of::<PyMemoryView>() {
            let b = obj.call_method0("tobytes")?.cast_into::<PyBytes>()?;
            return Ok(Body(from_bytes(b)));
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

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<MetaIn> {
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
        Ok(MetaIn(m))
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
    fn new(fingerprint: String) -> PeerKey {
        PeerKey { fingerprint }
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
    fn new(uid: u32, gid: u32, pid: i32) -> PeerLocal {
        PeerLocal { uid, gid, pid }
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

/// The error for a handle used after it was consumed (finished, answered, awaited): the
/// core's `Closed`, as for a closed endpoint.
fn consumed() -> Fail {
    Fail::Weida(Error::Closed)
}

const OPEN: u8 = 0;
const FINISHED: u8 = 1;
const CANCELED: u8 = 2;

/// Marks a transfer cancelled when an operation that owned it is dropped midway.
struct CancelOnDrop<'a>(&'a AtomicU8);

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self
            .0
            .compare_exchange(OPEN, CANCELED, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// An outgoing stream's state shared with the operations running on the I/O thread.
struct Writer {
    transfer: tokio::sync::Mutex<Option<weida::OutgoingTransfer>>,
    state: AtomicU8,
    cancel: tokio::sync::Notify,
}

impl Writer {
    fn gone(&self) -> Fail {
        match self.state.load(Ordering::Acquire) {
            CANCELED => Fail::Weida(Error::Canceled),
            _ => consumed(),
        }
    }

    /// Cancels the transfer: at once if no operation holds it, else through that operation.
    fn cancel(&self) {
        if self
            .state
            .compare_exchange(OPEN, CANCELED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        self.cancel.notify_waiters();
        if let Some(t) = self.transfer.try_lock().ok().and_then(|mut s| s.take()) {
            t.cancel();
        }
    }

    /// Resolves once `cancel()` was called.
    async fn canceled(&self) {
        loop {
            let n = self.cancel.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.state.load(Ordering::Acquire) == CANCELED {
                return;
            }
            n.await;
        }
    }
}

/// An outgoing stream: `write` at your own pace, then `finish()` (a commitment: the payload
/// arrives with no local handle) or `cancel()` (the reader sees `Canceled`, never a short
/// payload). Cancelling a pending `write`/`finish` (asyncio) cancels the transfer. As an
/// async context manager it finishes on a clean exit and cancels on an exception.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct OutgoingTransfer {
    w: Rooted<Arc<Writer>>,
}

impl OutgoingTransfer {
    pub(crate) fn new(t: weida::OutgoingTransfer) -> OutgoingTransfer {
        OutgoingTransfer {
            w: Rooted::new(Arc::new(Writer {
                transfer: tokio::sync::Mutex::new(Some(t)),
                state: AtomicU8::new(OPEN),
                cancel: tokio::sync::Notify::new(),
            })),
        }
    }

    /// Runs `op` on the transfer, owned for the duration: if the operation is dropped
    /// (asyncio cancellation) or `cancel()` is called meanwhile, the transfer is dropped,
    /// which resets it: the reader sees Canceled.
    fn with<'py, T, F, Fut>(&self, py: Python<'py>, op: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(weida::OutgoingTransfer) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = (Option<weida::OutgoingTransfer>, Outcome<T>)> + Send,
        T: for<'a> IntoPyObject<'a> + Send + 'static,
    {
        let w = Arc::clone(&self.w);
        let on_cancel = Arc::clone(&self.w);
        spawn_or_cancel(
            py,
            async move {
                let mut slot = w.transfer.lock().await;
                let t = slot.take().ok_or_else(|| w.gone())?;
                // Dropped before the operation ends (asyncio cancelled it): the transfer, owned by
                // the operation, is reset, and later calls say Canceled.
                let mark = CancelOnDrop(&w.state);
                let r = tokio::select! {
                    (back, r) = op(t) => {
                        *slot = back;
                        r
                    }
                    () = w.canceled() => Err(Fail::Weida(Error::Canceled)),
                };
                std::mem::forget(mark);
                r
            },
            Some(Box::new(move || on_cancel.cancel())),
        )
    }
}

#[pymethods]
impl OutgoingTransfer {
    /// Writes all of `body`; waits while the peer's window is full (backpressure).
    fn write<'py>(&self, py: Python<'py>, body: Body) -> PyResult<Bound<'py, PyAny>> {
        self.with(py, move |mut t| async move {
            let r = t.write(body.0).await;
            (Some(t), r.map_err(Fail::from))
        })
    }

    /// Writes several bodies in order, as one write where the transport allows.
    fn write_chunks<'py>(
        &self,
        py: Python<'py>,
        bodies: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let chunks = self::bodies(bodies)?;
        self.with(py, move |mut t| async move {
            let r = t.write_chunks(chunks).await;
            (Some(t), r.map_err(Fail::from))
        })
    }

    /// Queues the FIN and returns the `Delivery` (its transport receipt, free to ignore).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let w = Arc::clone(&self.w);
        self.with(py, move |t| async move {
            let r = t.finish().await;
            w.state.store(FINISHED, Ordering::Release);
            (None, r.map(Delivery::new).map_err(Fail::from))
        })
    }

    /// Abandons the transfer: the reader sees `Canceled`. Also interrupts a pending write.
    fn cancel(&self, py: Python<'_>) {
        py.detach(|| {
            let _g = aio::enter();
            self.w.cancel();
        });
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
        let w = Arc::clone(&self.w);
        spawn(py, async move {
            let mut slot = w.transfer.lock().await;
            if let Some(t) = slot.take() {
                t.finish().await?;
                w.state.store(FINISHED, Ordering::Release);
            }
            Ok(())
        })
    }
}

/// The transport receipt of a finished transfer; dropping it is free.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Delivery {
    inner: Rooted<Mutex<Option<weida::Delivery>>>,
}

impl Delivery {
    fn new(d: weida::Delivery) -> Delivery {
        Delivery {
            inner: Rooted::new(Mutex::new(Some(d))),
        }
    }
}

#[pymethods]
impl Delivery {
    /// Resolves when the peer's transport holds every byte and the FIN (not when its
    /// application read them); raises the peer's refusal if one came first.
    fn delivered<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let d = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        spawn(py, async move {
            d.ok_or_else(consumed)?.delivered().await?;
            Ok(())
        })
    }
}

type Shared<T> = Rooted<Arc<tokio::sync::Mutex<Option<T>>>>;

fn shared<T>(v: T) -> Shared<T> {
    Rooted::new(Arc::new(tokio::sync::Mutex::new(Some(v))))
}

/// An incoming stream (a one-way transfer, or a reply): read it in chunks (`async for`) or
/// `collect` it. Dropping it unread stops the writer.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct IncomingTransfer {
    t: Shared<weida::IncomingTransfer>,
    meta: Arc<weida::IncomingMeta>,
}

impl IncomingTransfer {
    pub(crate) fn new(t: weida::IncomingTransfer) -> IncomingTransfer {
        IncomingTransfer {
            meta: Arc::new(t.meta().clone()),
            t: shared(t),
        }
    }

    fn next_chunk<'py>(&self, py: Python<'py>, end: bool) -> PyResult<Bound<'py, PyAny>> {
        let t = Arc::clone(&self.t);
        spawn(py, async move {
            let mut slot = t.lock().await;
            let c = slot.as_mut().ok_or_else(consumed)?.read_chunk().await?;
            match c {
                Some(c) => Ok(Some(BytesOut(c))),
                None if end => Err(Fail::End),
                None => Ok(None),
            }
        })
    }
}

#[pymethods]
impl IncomingTransfer {
    /// What arrived with the stream.
    #[getter]
    fn meta(&self) -> IncomingMeta {
        IncomingMeta {
            inner: self.meta.clone(),
        }
    }

    /// The next chunk, `None` after the writer's FIN; a cancelled stream raises `Canceled`,
    /// never ends short. Cancel-safe.
    fn read_chunk<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.next_chunk(py, false)
    }

    /// The whole body, refusing one above `max` bytes (`LimitExceeded`, the writer stopped).
    fn collect<'py>(&self, py: Python<'py>, max: u64) -> PyResult<Bound<'py, PyAny>> {
        let t = Arc::clone(&self.t);
        spawn(py, async move {
            let mut slot = t.lock().await;
            let mut owned = slot.take().ok_or_else(consumed)?;
            let r = owned.collect(max).await;
            *slot = Some(owned);
            Ok(BytesOut(r?))
        })
    }

    /// Refuses the stream with the code `code` names (e.g. `"REJECTED"`).
    #[pyo3(signature = (code, message=""))]
    fn refuse(&self, py: Python<'_>, code: &str, message: &str) -> PyResult<()> {
        let e = error::from_code(code, message)?;
        if let Some(t) = self.t.try_lock().ok().and_then(|mut s| s.take()) {
            py.detach(|| {
                let _g = aio::enter();
                t.refuse(&e);
            });
        }
        Ok(())
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.next_chunk(py, true)
    }
}

/// An incoming exchange: the request and the reply half. An exchange dropped without an
/// answer resets its reply: the requester sees `Canceled`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Exchange {
    x: Shared<weida::Exchange>,
    meta: Arc<weida::IncomingMeta>,
}

impl Exchange {
    pub(crate) fn new(x: weida::Exchange) -> Exchange {
        Exchange {
            meta: Arc::new(x.meta().clone()),
            x: shared(x),
        }
    }

    /// Runs a consuming answer on the exchange.
    fn answer<'py, T, F, Fut>(&self, py: Python<'py>, op: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: FnOnce(weida::Exchange) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Outcome<T>> + Send,
        T: for<'a> IntoPyObject<'a> + Send + 'static,
    {
        let x = Arc::clone(&self.x);
        spawn(py, async move {
            let owned = x.lock().await.take().ok_or_else(consumed)?;
            op(owned).await
        })
    }
}

#[pymethods]
impl Exchange {
    /// What arrived with the request.
    #[getter]
    fn meta(&self) -> IncomingMeta {
        IncomingMeta {
            inner: self.meta.clone(),
        }
    }

    /// The request's next chunk, `None` at its end (the reply may start before it). Cancel-safe.
    fn read_chunk<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let x = Arc::clone(&self.x);
        spawn(py, async move {
            let mut slot = x.lock().await;
            let c = slot.as_mut().ok_or_else(consumed)?.read_chunk().await?;
            Ok(c.map(BytesOut))
        })
    }

    /// The whole request body, bounded by `max` (default `Limits.max_collected_body`).
    /// Cancelling it abandons the exchange (the requester sees `Canceled`).
    #[pyo3(signature = (max=None))]
    fn take_body<'py>(&self, py: Python<'py>, max: Option<u64>) -> PyResult<Bound<'py, PyAny>> {
        let x = Arc::clone(&self.x);
        spawn(py, async move {
            let mut slot = x.lock().await;
            let mut owned = slot.take().ok_or_else(consumed)?;
            let r = match max {
                Some(m) => owned.take_body_capped(m).await,
                None => owned.take_body().await,
            };
            *slot = Some(owned);
            Ok(BytesOut(r?))
        })
    }

    /// Replies with `body` (and metadata) and finishes the reply.
    #[pyo3(signature = (body, meta=None))]
    fn reply<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let meta = meta_or_empty(meta);
        self.answer(py, move |x| async move {
            x.reply_with(meta, body.0).await?;
            Ok(())
        })
    }

    /// Opens the reply as a stream, for a reply written in parts.
    #[pyo3(signature = (meta=None))]
    fn open_reply<'py>(
        &self,
        py: Python<'py>,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let meta = meta_or_empty(meta);
        self.answer(py, move |mut x| async move {
            Ok(OutgoingTransfer::new(x.open_reply(meta).await?))
        })
    }

    /// Answers REJECTED with `reason`: the requester's `request` raises `Rejected`.
    fn reject<'py>(&self, py: Python<'py>, reason: String) -> PyResult<Bound<'py, PyAny>> {
        self.answer(py, move |x| async move {
            x.reject(&reason).await?;
            Ok(())
        })
    }

    /// Answers with an error by its code (`"UNSUPPORTED"`, `"REJECTED"`, ...) and message.
    fn fail<'py>(&self, py: Python<'py>, code: &str, message: &str) -> PyResult<Bound<'py, PyAny>> {
        let e = error::from_code(code, message)?;
        self.answer(py, move |x| async move {
            x.fail(&e).await?;
            Ok(())
        })
    }
}

/// The reply half of an exchange this side opened.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct PendingReply {
    inner: Rooted<Mutex<Option<weida::PendingReply>>>,
}

impl PendingReply {
    pub(crate) fn new(r: weida::PendingReply) -> PendingReply {
        PendingReply {
            inner: Rooted::new(Mutex::new(Some(r))),
        }
    }

    fn take(&self) -> Option<weida::PendingReply> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

#[pymethods]
impl PendingReply {
    /// Waits for the reply's start: its metadata and a streamed body (`IncomingTransfer`).
    /// The peer's ERROR is raised as its exception; a loss after the request's FIN is
    /// `Indeterminate`.
    fn reply<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = self.take();
        spawn(py, async move {
            let t = r.ok_or_else(consumed)?.reply().await?;
            Ok(IncomingTransfer::new(t))
        })
    }

    /// The whole reply as a `Message`, bounded by `Limits.max_collected_body`.
    fn body<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = self.take();
        spawn(py, async move {
            let m = r.ok_or_else(consumed)?.body().await?;
            Ok(MessageOut(m))
        })
    }
}

/// A stream an acceptor took: a one-way transfer or an exchange.
pub(crate) enum IncomingOut {
    Stream(IncomingTransfer),
    Exchange(Exchange),
}

impl IncomingOut {
    pub(crate) fn new(i: weida::Incoming) -> IncomingOut {
        match i {
            weida::Incoming::Stream(t) => IncomingOut::Stream(IncomingTransfer::new(t)),
            weida::Incoming::Exchange(x) => IncomingOut::Exchange(Exchange::new(x)),
        }
    }
}

impl<'py> IntoPyObject<'py> for IncomingOut {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            IncomingOut::Stream(t) => Ok(Bound::new(py, t)?.into_any()),
            IncomingOut::Exchange(x) => Ok(Bound::new(py, x)?.into_any()),
        }
    }
}
