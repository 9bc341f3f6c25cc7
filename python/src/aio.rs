//! The asyncio side of weida-ffi's calls: the sink that moves a completion to the event
//! loop's thread, and the conversion of outcomes to an `asyncio.Future`. Everything else (the
//! I/O runtime, the eager first poll, the ready streak, the spawn, cancellation, the orphan
//! hand-back, receives) is weida-ffi's (docs/BINDINGS.md, "Threading").
//!
//! A call that must wait finishes on the I/O thread, which never takes the GIL: its completion
//! is queued here and the event loop is woken through a socket it watches
//! (`loop.add_reader`); the loop thread then settles every future whose call finished since
//! the last wake-up. Cancelling the asyncio future fires the call's `Cancel`.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyRuntimeError, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use weida::Message;
use weida_ffi::inbox::{Inbox, Leave, Post, Ticket, Waiter};
use weida_ffi::{Call, Cancel, Completion, Fail, Turn};

use crate::error;
use crate::stream::MessageOut;

/// A job for the loop thread.
type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// Jobs from the I/O thread for one event loop, and the socket that wakes it.
pub(crate) struct Finished {
    jobs: Mutex<Vec<Job>>,
    wake: UnixStream,
}

impl Finished {
    fn push(&self, job: Job) {
        let first = {
            let mut q = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            q.push(job);
            q.len() == 1
        };
        if first {
            // Non-blocking; a full socket already has a wake-up pending.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

impl Post for Finished {
    fn post(&self, job: Box<dyn FnOnce() + Send>) {
        self.push(Box::new(move |_| job()));
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
    /// Runs every job the I/O thread queued (called by the event loop).
    fn _resolve(&self, py: Python<'_>) {
        let mut sink = [0u8; 512];
        while let Ok(n) = (&self.read).read(&mut sink) {
            if n < sink.len() {
                break;
            }
        }
        let jobs =
            std::mem::take(&mut *self.finished.jobs.lock().unwrap_or_else(|p| p.into_inner()));
        for job in jobs {
            job(py);
        }
    }
}

/// Fires a call's `Cancel` once its asyncio future is done: a no-op when the call settled it
/// (weida-ffi's `Completion::settle` marked it so), a cancellation when its caller cancelled.
#[pyclass(frozen)]
struct CancelOnDone(Cancel);

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) {
        future.py().detach(|| self.0.cancel());
    }
}

/// Takes a receive out of its inbox's queue once its future is done (a no-op when the inbox
/// settled it).
#[pyclass(frozen)]
struct LeaveOnDone(Arc<dyn Leave>, Ticket);

#[pymethods]
impl LeaveOnDone {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        self.0.leave(self.1);
    }
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
    let lp = get.bind(py).call0().map_err(|e| {
        if e.is_instance_of::<PyRuntimeError>(py) {
            PyRuntimeError::new_err("weida operations must be awaited inside a running event loop")
        } else {
            e
        }
    })?;
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
                jobs: Mutex::new(Vec::new()),
                wake,
            }),
            read,
        },
    )?;
    lp.call_method1("add_reader", (fd, bridge.getattr("_resolve")?))?;
    bridges.set_item(&lp, &bridge)?;
    Ok((lp, bridge))
}

fn new_future<'py>(lp: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    lp.call_method0(pyo3::intern!(lp.py(), "create_future"))
}

/// Settles `future` with `r`, converted.
fn settle<T>(py: Python<'_>, future: &Bound<'_, PyAny>, r: Result<T, Fail>) -> PyResult<()>
where
    T: for<'a> IntoPyObject<'a>,
{
    let r = r
        .map_err(|f| error::to_py(py, f))
        .and_then(|v| v.into_py_any(py));
    match r {
        Ok(v) => future.call_method1(pyo3::intern!(py, "set_result"), (v,))?,
        Err(e) => future.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),))?,
    };
    Ok(())
}

/// Runs `c` and returns an `asyncio.Future` of its outcome. Must be called from a coroutine
/// (there must be a running loop). The first poll runs here with the GIL released.
pub(crate) fn call<'py, T>(py: Python<'py>, c: Call<T>) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let (lp, bridge) = running(py)?;
    let future = new_future(&lp)?;
    let later = match py.detach(|| c.poll_turn(None)) {
        Turn::Now(r) => {
            settle(py, &future, r)?;
            return Ok(future);
        }
        Turn::Later(done) => Ok(done),
        Turn::Wait(c) => Err(c),
    };
    let finished = Arc::clone(&bridge.get().finished);
    let target = future.clone().unbind();
    let deliver = move |done: Completion<T>| {
        finished.push(Box::new(move |py| {
            let f = target.bind(py);
            let gone = f
                .call_method0(pyo3::intern!(py, "done"))
                .and_then(|b| b.is_truthy())
                .unwrap_or(true);
            let r = done.settle(gone);
            if !gone {
                if let Err(e) = settle(py, f, r) {
                    e.write_unraisable(py, Some(f));
                }
            }
        }));
    };
    let cancel = match later {
        // Settled by the bridge on the loop's next turn: the wake-up is this thread's own.
        Ok(done) => {
            let cancel = done.canceller().unwrap_or_default();
            deliver(done);
            cancel
        }
        Err(c) => {
            let cancel = Cancel::new();
            c.on_io_thread(Some(cancel.clone()), deliver);
            cancel
        }
    };
    future.call_method1(
        pyo3::intern!(py, "add_done_callback"),
        (CancelOnDone(cancel),),
    )?;
    Ok(future)
}

/// How a receive's messages become its result.
#[derive(Clone, Copy)]
pub(crate) enum Shape {
    /// `recv()`: one `Message`.
    One,
    /// `recv_many(n)`: a list.
    Many,
    /// `__anext__`: one `Message`, `Closed` ending the iteration.
    Next,
}

/// A receive waiting in an inbox: its asyncio future.
pub(crate) struct Receive {
    future: Py<PyAny>,
    shape: Shape,
}

impl Waiter for Receive {
    fn is_gone(&self) -> bool {
        Python::attach(|py| {
            self.future
                .bind(py)
                .call_method0(pyo3::intern!(py, "done"))
                .and_then(|b| b.is_truthy())
                .unwrap_or(true)
        })
    }

    fn settle(self, got: Result<Vec<Message>, Fail>) {
        Python::attach(|py| {
            let f = self.future.bind(py);
            let r = match (self.shape, got) {
                (Shape::Next, Err(Fail::Core(weida::Error::Closed))) => {
                    Err(PyStopAsyncIteration::new_err(()))
                }
                (_, Err(e)) => Err(error::to_py(py, e)),
                (Shape::Many, Ok(ms)) => ms
                    .into_iter()
                    .map(MessageOut)
                    .collect::<Vec<_>>()
                    .into_py_any(py),
                (_, Ok(ms)) => match ms.into_iter().next() {
                    Some(m) => MessageOut(m).into_py_any(py),
                    None => Err(PyRuntimeError::new_err("a receive got nothing")),
                },
            };
            let r = match r {
                Ok(v) => f.call_method1(pyo3::intern!(py, "set_result"), (v,)),
                Err(e) => f.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),)),
            };
            if let Err(e) = r {
                e.write_unraisable(py, Some(f));
            }
        });
    }
}

/// A receive of up to `max` messages from `inbox`, as an `asyncio.Future` of `shape`.
pub(crate) fn receive<'py, R: weida::Receiving>(
    py: Python<'py>,
    inbox: &Arc<Inbox<R, Receive>>,
    max: usize,
    shape: Shape,
) -> PyResult<Bound<'py, PyAny>> {
    let (lp, bridge) = running(py)?;
    let future = new_future(&lp)?;
    let w = Receive {
        future: future.clone().unbind(),
        shape,
    };
    let post: Arc<dyn Post> = bridge.get().finished.clone();
    if let Some(ticket) = inbox.recv(max, w, &post) {
        let inbox: Arc<dyn Leave> = Arc::clone(inbox) as Arc<dyn Leave>;
        future.call_method1(
            pyo3::intern!(py, "add_done_callback"),
            (LeaveOnDone(inbox, ticket),),
        )?;
    }
    Ok(future)
}

/// An awaitable already resolved with `value` (for `__aexit__` of what closes synchronously).
pub(crate) fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let (lp, _) = running(py)?;
    let f = new_future(&lp)?;
    f.call_method1(pyo3::intern!(py, "set_result"), (value,))?;
    Ok(f)
}
