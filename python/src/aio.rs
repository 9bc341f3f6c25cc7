//! The binding's one tokio runtime and its one path to asyncio.
//!
//! The runtime is current-thread, on a dedicated I/O thread started on first use
//! (docs/BINDINGS.md, "Threading"). [`spawn`] runs a core future there and returns an
//! `asyncio.Future`: the I/O thread never takes the GIL and never runs Python. A finished
//! operation is queued with its result and the event loop is woken through a socket it watches
//! (`loop.add_reader`); the loop thread then converts the results and resolves the futures,
//! as many as finished since the last wake-up. Cancelling the asyncio future aborts the tokio
//! task, which drops the core future: the operation is cancelled (a transfer being written is
//! reset, and the peer sees Canceled).

use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyRuntimeError, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use tokio::runtime::Handle;

use crate::error;

static IO: Mutex<Option<&'static Handle>> = Mutex::new(None);

/// The I/O runtime's handle, starting it on first use (and again in a forked child). Leaked
/// once per start, so guards and tasks can borrow it for the life of the process.
pub(crate) fn io() -> &'static Handle {
    let mut io = IO.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(h) = *io {
        return h;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("weida-io")
        .build()
        .expect("the I/O runtime starts");
    let handle: &'static Handle = Box::leak(Box::new(rt.handle().clone()));
    std::thread::Builder::new()
        .name("weida-io".into())
        .spawn(move || rt.block_on(std::future::pending::<()>()))
        .expect("the I/O thread starts");
    *io = Some(handle);
    handle
}

/// Forgets the parent's I/O runtime in a forked child (its thread was not forked); the child
/// starts its own on first use. Registered with `os.register_at_fork` by `weida/__init__.py`.
#[pyfunction]
pub(crate) fn after_fork() {
    IO.lock().unwrap_or_else(|p| p.into_inner()).take();
}

/// Enters the I/O runtime's context, for synchronous calls into the core that may spawn a
/// task (a local socket's drop flushes in one).
pub(crate) fn enter() -> Option<tokio::runtime::EnterGuard<'static>> {
    if Handle::try_current().is_ok() {
        None
    } else {
        Some(io().enter())
    }
}

/// A core value dropped inside the I/O runtime's context, whichever thread drops it.
pub(crate) struct Rooted<T>(Option<T>);

impl<T> Rooted<T> {
    pub(crate) fn new(v: T) -> Rooted<T> {
        Rooted(Some(v))
    }
}

impl<T> std::ops::Deref for Rooted<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("present until dropped")
    }
}

impl<T> Drop for Rooted<T> {
    fn drop(&mut self) {
        if let Some(v) = self.0.take() {
            let _g = enter();
            drop(v);
        }
    }
}

/// How an operation failed: a core error (mapped by `error::to_py`), or the end of an
/// `async for`.
pub(crate) enum Fail {
    Weida(weida::Error),
    /// A batch send that stopped at `error` after `sent` bodies (the exception's `sent`).
    Batch {
        sent: usize,
        error: weida::Error,
    },
    End,
}

impl From<weida::Error> for Fail {
    fn from(e: weida::Error) -> Fail {
        Fail::Weida(e)
    }
}

/// What a spawned operation returns.
pub(crate) type Outcome<T> = Result<T, Fail>;

/// Converts a finished operation's outcome; `None` when its future was already cancelled, in
/// which case an undeliverable value goes to the operation's orphan action (if it has one).
type Convert = Box<dyn FnOnce(Python<'_>, bool) -> Option<PyResult<Py<PyAny>>> + Send>;

/// What to do with a value whose asyncio future was cancelled as it arrived (a received
/// message goes back to its puller, so a cancelled receive loses nothing).
pub(crate) type Orphan<T> = Box<dyn FnOnce(T) + Send>;

/// A finished operation waiting for the loop thread.
struct Done {
    future: Py<PyAny>,
    result: Convert,
}

/// Operations finished on the I/O thread for one event loop, and the socket that wakes it.
struct Finished {
    done: Mutex<Vec<Done>>,
    wake: UnixStream,
}

impl Finished {
    fn push(&self, d: Done) {
        let first = {
            let mut q = self.done.lock().unwrap_or_else(|p| p.into_inner());
            q.push(d);
            q.len() == 1
        };
        if first {
            // Non-blocking; a full socket already has a wake-up pending.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// The per-event-loop end of the bridge: registered with `loop.add_reader` on first use in
/// that loop. Internal.
#[pyclass(frozen, name = "_Bridge", module = "weida._weida")]
pub(crate) struct Bridge {
    finished: Arc<Finished>,
    read: UnixStream,
}

#[pymethods]
impl Bridge {
    /// Resolves every future whose operation finished (called by the event loop).
    fn _resolve(&self, py: Python<'_>) {
        let mut sink = [0u8; 512];
        while let Ok(n) = (&self.read).read(&mut sink) {
            if n < sink.len() {
                break;
            }
        }
        let done =
            std::mem::take(&mut *self.finished.done.lock().unwrap_or_else(|p| p.into_inner()));
        for d in done {
            let f = d.future.bind(py);
            // Cancelled meanwhile: the result is not deliverable (its orphan action runs).
            let gone = f
                .call_method0(pyo3::intern!(py, "done"))
                .and_then(|b| b.is_truthy())
                .unwrap_or(true);
            let Some(r) = (d.result)(py, gone) else {
                continue;
            };
            let r = match r {
                Ok(v) => f.call_method1(pyo3::intern!(py, "set_result"), (v,)),
                Err(e) => f.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),)),
            };
            if let Err(e) = r {
                e.write_unraisable(py, Some(f));
            }
        }
    }
}

/// What to do when an operation's asyncio future is cancelled, besides dropping its future.
pub(crate) type OnCancel = Box<dyn FnOnce() + Send>;

/// Aborts the operation's task when its asyncio future is done (a no-op unless cancelled: a
/// finished task ignores an abort), and runs its cancel action if it was cancelled: the
/// operation may have finished on the I/O thread meanwhile, and a cancelled write must still
/// cancel its transfer.
#[pyclass(frozen)]
struct AbortOnDone {
    task: tokio::task::AbortHandle,
    on_cancel: Mutex<Option<OnCancel>>,
}

#[pymethods]
impl AbortOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) {
        self.task.abort();
        let action = self
            .on_cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(action) = action {
            if future
                .call_method0("cancelled")
                .and_then(|b| b.is_truthy())
                .unwrap_or(false)
            {
                let _g = enter();
                action();
            }
        }
    }
}

/// Operations in a row that may complete without yielding to the event loop.
const MAX_READY_STREAK: u32 = 16;

thread_local! {
    static READY_STREAK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static BRIDGES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The running loop and its bridge, making the bridge on first use in that loop.
fn running(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Bound<'_, Bridge>)> {
    let get = GET_RUNNING_LOOP.get_or_try_init(py, || {
        py.import("asyncio")?
            .getattr("get_running_loop")
            .map(Bound::unbind)
    })?;
    let lp = get.bind(py).call0()?;
    let bridges = BRIDGES
        .get_or_init(py, || PyDict::new(py).unbind())
        .bind(py);
    if let Some(b) = bridges.get_item(&lp)? {
        return Ok((lp, b.cast_into::<Bridge>()?));
    }
    // Forget closed loops (their bridges' sockets close with them).
    let closed: Vec<Bound<'_, PyAny>> = bridges
        .keys()
        .iter()
        .filter(|k| {
            k.call_method0("is_closed")
                .and_then(|b| b.is_truthy())
                .unwrap_or(true)
        })
        .collect();
    for k in closed {
        bridges.del_item(k)?;
    }
    let (read, wake) = UnixStream::pair()?;
    read.set_nonblocking(true)?;
    wake.set_nonblocking(true)?;
    let fd = read.as_raw_fd();
    let bridge = Bound::new(
        py,
        Bridge {
            finished: Arc::new(Finished {
                done: Mutex::new(Vec::new()),
                wake,
            }),
            read,
        },
    )?;
    lp.call_method1("add_reader", (fd, bridge.getattr("_resolve")?))?;
    bridges.set_item(&lp, &bridge)?;
    Ok((lp, bridge))
}

/// Runs `fut` and returns an `asyncio.Future` of its result. Must be called from a coroutine
/// (there must be a running loop).
///
/// The future is polled once on the calling thread first, with the GIL released and inside the
/// I/O runtime's context: an operation that can complete at once (a send within the peer's
/// budget, a receive with a message already queued) then resolves without crossing threads.
/// Otherwise the same future, pinned on the heap, moves to the I/O thread and continues there.
pub(crate) fn spawn<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Outcome<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    spawn_full(py, fut, None, None)
}

/// [`spawn`], handing a value that arrives after its future was cancelled to `orphan`.
pub(crate) fn spawn_keeping<'py, F, T>(
    py: Python<'py>,
    fut: F,
    orphan: Orphan<T>,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Outcome<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    spawn_full(py, fut, None, Some(orphan))
}

/// [`spawn`], running `on_cancel` (on the loop thread) if the asyncio future is cancelled.
pub(crate) fn spawn_or_cancel<'py, F, T>(
    py: Python<'py>,
    fut: F,
    on_cancel: Option<OnCancel>,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Outcome<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    spawn_full(py, fut, on_cancel, None)
}

fn spawn_full<'py, F, T>(
    py: Python<'py>,
    fut: F,
    on_cancel: Option<OnCancel>,
    orphan: Option<Orphan<T>>,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Outcome<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let (lp, bridge) = running(py).map_err(|e| {
        if e.is_instance_of::<PyRuntimeError>(py) {
            PyRuntimeError::new_err("weida operations must be awaited inside a running event loop")
        } else {
            e
        }
    })?;
    let future = lp.call_method0(pyo3::intern!(py, "create_future"))?;
    let mut fut = Box::pin(fut);
    // Awaiting a resolved future does not yield to the event loop: after a streak of
    // operations that completed at once, the next one takes the I/O thread's path, which does,
    // so a stream of ready messages cannot starve other tasks (or cancellation callbacks).
    let eager = READY_STREAK.with(|n| {
        let streak = n.get();
        n.set(if streak >= MAX_READY_STREAK {
            0
        } else {
            streak + 1
        });
        streak < MAX_READY_STREAK
    });
    let first = if eager {
        py.detach(|| {
            let _g = enter();
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            fut.as_mut().poll(&mut cx)
        })
    } else {
        std::task::Poll::Pending
    };
    if first.is_pending() {
        READY_STREAK.with(|n| n.set(0));
    }
    if let std::task::Poll::Ready(r) = first {
        match convert(py, r) {
            Ok(v) => future.call_method1(pyo3::intern!(py, "set_result"), (v,))?,
            Err(e) => {
                future.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),))?
            }
        };
        return Ok(future);
    }
    let finished = bridge.get().finished.clone();
    let target = future.clone().unbind();
    let task = io().spawn(async move {
        let r = fut.await;
        finished.push(Done {
            future: target,
            result: Box::new(move |py, gone| {
                if !gone {
                    return Some(convert(py, r));
                }
                if let (Ok(v), Some(keep)) = (r, orphan) {
                    keep(v);
                }
                None
            }),
        });
    });
    future.call_method1(
        pyo3::intern!(py, "add_done_callback"),
        (AbortOnDone {
            task: task.abort_handle(),
            on_cancel: Mutex::new(on_cancel),
        },),
    )?;
    Ok(future)
}

fn convert<T>(py: Python<'_>, r: Outcome<T>) -> PyResult<Py<PyAny>>
where
    T: for<'a> IntoPyObject<'a>,
{
    match r {
        Ok(v) => v.into_py_any(py),
        Err(Fail::Weida(e)) => Err(error::to_py(py, e)),
        Err(Fail::Batch { sent, error }) => {
            let e = error::to_py(py, error);
            e.value(py).setattr("sent", sent)?;
            Err(e)
        }
        Err(Fail::End) => Err(PyStopAsyncIteration::new_err(())),
    }
}

/// An awaitable already resolved with `value` (for `__aexit__` of what closes synchronously).
pub(crate) fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let (lp, _) = running(py)?;
    let f = lp.call_method0(pyo3::intern!(py, "create_future"))?;
    f.call_method1(pyo3::intern!(py, "set_result"), (value,))?;
    Ok(f)
}
