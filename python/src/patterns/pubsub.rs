//! Pub/Sub (the core's `patterns::pubsub`): `Publisher` and its streamed `FanOut`, `Subscriber`,
//! and `Dropped`, the publisher's drops by cause. Conversion only: filters, bounds, drops and
//! ordering are the core's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use weida::Error;

use super::{none, this};
use crate::aio::{self, spawn, spawn_keeping, spawn_or_cancel, Fail, Rooted};
use crate::error;
use crate::runtime::Listener;
use crate::stream::{Body, MessageOut};

/// Runs a synchronous core call with the GIL released, inside the I/O runtime's context.
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    py.detach(|| {
        let _g = aio::enter();
        f()
    })
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
    fn from(d: weida::Dropped) -> Dropped {
        Dropped {
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
    ) -> Dropped {
        Dropped {
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
    p: Rooted<weida::Publisher>,
    address: String,
    _listener: Py<Listener>,
}

impl Publisher {
    pub(crate) fn new(p: weida::Publisher, listener: Py<Listener>) -> Publisher {
        Publisher {
            address: p.address().to_string(),
            p: Rooted::new(p),
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
        detached(py, || self.p.publish(topic, body.0)).map_err(|e| error::to_py(py, e))
    }

    /// Opens a streamed message (a `FanOut`) to the subscribers whose filters select `topic`
    /// now; one subscribing later gets the next message, never a fragment. The payload has no
    /// ceiling; each chunk is bounded by `Limits.subscriber_buffer_bytes`.
    fn open(&self, py: Python<'_>, topic: &str) -> PyResult<FanOut> {
        let f = detached(py, || self.p.open(topic)).map_err(|e| error::to_py(py, e))?;
        Ok(FanOut::new(f))
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

/// Where a fan-out is: open (its core handle in the slot, or held by a pending `write`),
/// finished, or cancelled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Finished,
    Canceled,
}

struct FanSlot {
    state: State,
    /// `None` while open: a `write` holds it.
    f: Option<weida::FanOut>,
}

/// A fan-out's core handle, shared with a `write` running on the I/O thread. The state and the
/// handle change together under one (never awaited) lock, so a cancel racing a write that
/// completes cannot leave the message open.
struct Fan {
    slot: std::sync::Mutex<FanSlot>,
    /// Writes take their turn (the core's `write` takes `&mut`).
    turn: tokio::sync::Mutex<()>,
    /// The copies attached after the last operation (the core's count changes only in one).
    copies: AtomicUsize,
    cancel: tokio::sync::Notify,
}

impl Fan {
    fn lock(&self) -> std::sync::MutexGuard<'_, FanSlot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn gone(state: State) -> Error {
        match state {
            State::Canceled => Error::Canceled,
            _ => Error::Closed,
        }
    }

    /// Cancels the message: every copy is reset at its subscriber. A `write` holding the
    /// handle is interrupted and drops it.
    fn cancel(&self) {
        let f = {
            let mut s = self.lock();
            if s.state != State::Open {
                return;
            }
            s.state = State::Canceled;
            s.f.take()
        };
        self.copies.store(0, Ordering::Release);
        self.cancel.notify_waiters();
        drop(f);
    }

    /// Resolves once the message was cancelled.
    async fn canceled(&self) {
        loop {
            let n = self.cancel.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.lock().state == State::Canceled {
                return;
            }
            n.await;
        }
    }

    /// Takes the handle for a write.
    fn hold(&self) -> Result<Held<'_>, Error> {
        let mut s = self.lock();
        match (s.state, s.f.take()) {
            (State::Open, Some(f)) => Ok(Held {
                fan: self,
                f: Some(f),
            }),
            // Writes take turns, so only a cancel can have emptied an open slot.
            (state, _) => Err(Fan::gone(state)),
        }
    }
}

/// The handle a write holds. Dropped without `put_back` (the write was cancelled, or its
/// future dropped by asyncio cancellation), it cancels the message.
struct Held<'a> {
    fan: &'a Fan,
    f: Option<weida::FanOut>,
}

impl Held<'_> {
    fn put_back(mut self) {
        let f = self.f.take();
        let mut s = self.fan.lock();
        if s.state == State::Open {
            s.f = f;
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.f.take() {
            let mut s = self.fan.lock();
            s.state = State::Canceled;
            drop(s);
            self.fan.copies.store(0, Ordering::Release);
            drop(f);
        }
    }
}

/// Why a synchronous `FanOut` call could not run.
enum NowFail {
    Weida(Error),
    /// A `write` of the same fan-out holds it.
    Busy,
}

impl NowFail {
    fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            NowFail::Weida(e) => error::to_py(py, e),
            NowFail::Busy => PyRuntimeError::new_err(
                "a write of this FanOut is pending: await it before the next call",
            ),
        }
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
pub(crate) struct FanOut {
    s: Rooted<Arc<Fan>>,
}

impl FanOut {
    fn new(f: weida::FanOut) -> FanOut {
        FanOut {
            s: Rooted::new(Arc::new(Fan {
                copies: AtomicUsize::new(f.copies()),
                slot: std::sync::Mutex::new(FanSlot {
                    state: State::Open,
                    f: Some(f),
                }),
                turn: tokio::sync::Mutex::new(()),
                cancel: tokio::sync::Notify::new(),
            })),
        }
    }

    /// Runs a synchronous operation on the open fan-out, with the GIL released.
    fn now<T: Send>(
        &self,
        py: Python<'_>,
        op: impl FnOnce(&mut FanSlot) -> Result<T, Error> + Send,
    ) -> PyResult<T> {
        let s = &self.s;
        detached(py, || {
            let mut slot = s.lock();
            match (slot.state, slot.f.is_some()) {
                (State::Open, true) => op(&mut slot).map_err(NowFail::Weida),
                (State::Open, false) => Err(NowFail::Busy),
                (state, _) => Err(NowFail::Weida(Fan::gone(state))),
            }
        })
        .map_err(|e| e.into_py(py))
    }
}

#[pymethods]
impl FanOut {
    /// Copies still attached (not dropped); after `finish()`, those it was finished for.
    #[getter]
    fn copies(&self) -> usize {
        self.s.copies.load(Ordering::Acquire)
    }

    /// Hands `chunk` to every attached copy, first waiting up to `Limits.fanout_wait` for the
    /// copies whose backlog has no room for it; those still full then are dropped (counted
    /// `byte_budget`). Returns the copies still attached. Writes take turns. Cancelling it
    /// (asyncio) cancels the message, as `cancel()` does, so no subscriber can get a payload
    /// with a chunk missing; `cancel()` interrupts it (`Canceled`).
    fn write<'py>(&self, py: Python<'py>, chunk: Body) -> PyResult<Bound<'py, PyAny>> {
        let s = Arc::clone(&self.s);
        let on_cancel = Arc::clone(&self.s);
        spawn_or_cancel(
            py,
            async move {
                let _turn = s.turn.lock().await;
                let mut held = s.hold()?;
                let f = held.f.as_mut().expect("held");
                let r = tokio::select! {
                    r = f.write(chunk.0) => r,
                    // Dropping `held` below cancels every copy.
                    () = s.canceled() => return Err(Fail::Weida(Error::Canceled)),
                };
                held.put_back();
                let n = r?;
                s.copies.store(n, Ordering::Release);
                Ok(n)
            },
            Some(Box::new(move || on_cancel.cancel())),
        )
    }

    /// Hands `chunk` to every attached copy without waiting: a copy whose backlog would pass
    /// `Limits.subscriber_buffer_bytes` is dropped whole (counted `byte_budget`). Returns the
    /// copies still attached.
    fn write_now(&self, py: Python<'_>, chunk: Body) -> PyResult<usize> {
        let s = &self.s;
        self.now(py, |slot| {
            let n = slot.f.as_mut().expect("open").write_now(chunk.0)?;
            s.copies.store(n, Ordering::Release);
            Ok(n)
        })
    }

    /// Ends the message for every attached copy; returns how many were still attached.
    fn finish(&self, py: Python<'_>) -> PyResult<usize> {
        let s = &self.s;
        self.now(py, |slot| {
            let n = slot.f.take().expect("open").finish();
            slot.state = State::Finished;
            s.copies.store(n, Ordering::Release);
            Ok(n)
        })
    }

    /// Cancels every copy: subscribers discard what they received of it. Also interrupts a
    /// pending `write`. Does nothing after `finish()`.
    fn cancel(&self, py: Python<'_>) {
        detached(py, || self.s.cancel())
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
        } else if self.s.lock().state == State::Open {
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
    s: Rooted<Arc<weida::Subscriber>>,
}

impl Subscriber {
    pub(crate) fn new(s: weida::Subscriber) -> Subscriber {
        Subscriber {
            s: Rooted::new(Arc::new(s)),
        }
    }

    fn handle(&self) -> Arc<weida::Subscriber> {
        Arc::clone(&self.s)
    }
}

#[pymethods]
impl Subscriber {
    /// Dials the publisher at `address` (with its path) on a connection of its own, and
    /// installs every filter this subscriber holds there before it returns.
    fn connect<'py>(&self, py: Python<'py>, address: String) -> PyResult<Bound<'py, PyAny>> {
        let s = self.handle();
        spawn(py, async move { Ok(s.connect(&address).await?) })
    }

    /// Closes the connection to `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        detached(py, || self.s.disconnect(address)).map_err(|e| error::to_py(py, e))
    }

    /// Live connections.
    #[getter]
    fn peer_count(&self) -> usize {
        self.s.peer_count()
    }

    /// Adds `filter`: returns once every connected publisher has installed it, so a message
    /// published after it returns is selected. A malformed filter raises `InvalidFilter`; a
    /// publisher that refuses it (`UnknownEndpoint`, `LimitExceeded` at `max_filters`,
    /// `Unsupported`) fails the call and the filter is installed nowhere. Not cancel-safe: a
    /// cancelled call may leave it installed at some publishers (`unsubscribe` removes it).
    fn subscribe<'py>(&self, py: Python<'py>, filter: String) -> PyResult<Bound<'py, PyAny>> {
        let s = self.handle();
        spawn(py, async move { Ok(s.subscribe(&filter).await?) })
    }

    /// Removes one entry of `filter`; False if it was not held. Returns once every connected
    /// publisher has removed it: from then on nothing only it selected is delivered.
    fn unsubscribe<'py>(&self, py: Python<'py>, filter: String) -> PyResult<Bound<'py, PyAny>> {
        let s = self.handle();
        spawn(py, async move { Ok(s.unsubscribe(&filter).await?) })
    }

    /// The filters held, in the order given.
    #[getter]
    fn filters(&self) -> Vec<String> {
        self.s.filters()
    }

    /// The next message, with `meta.topic` and, under `Runtime(ordering=...)`,
    /// `meta.sequence` and `meta.gap`. Raises `NotConnected` before any connect,
    /// `ConnectionLost` once every connection has ended and nothing is queued, `Closed` after
    /// `close()`. Cancel-safe: a message that arrives as it is cancelled is kept for the next.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        super::recv_one(py, self.handle())
    }

    /// The next message if one is ready now, else None; raises what `recv` would at once.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<MessageOut>> {
        super::ready_message(py, self.handle().try_recv())
    }

    /// Up to `max` messages (at least one): waits for the first, then takes those queued. An
    /// error met after the first is raised by the next receive. Cancel-safe.
    fn recv_many<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyAny>> {
        super::recv_batch(py, self.handle(), max)
    }

    /// Messages received and waiting for `recv`.
    #[getter]
    fn queued(&self) -> usize {
        self.s.queued()
    }

    /// Closes every connection; receiving returns what is queued, then raises `Closed` (an
    /// `async for` ends there).
    fn close(&self, py: Python<'_>) {
        detached(py, || self.s.close())
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next message; the iteration ends after `close()`. Cancel-safe.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (s, back) = (self.handle(), self.handle());
        spawn_keeping(
            py,
            async move {
                match s.recv().await {
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

    fn __repr__(&self) -> String {
        format!("Subscriber(filters={:?})", self.s.filters())
    }
}
