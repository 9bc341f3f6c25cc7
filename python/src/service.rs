//! The handler runtime (docs/SERVICES.md): `Service`, `Registration` and `Job`, over
//! weida-ffi's `service`. The decorators and the loop that calls a handler per job are Python's
//! own, in `weida/service.py`; what a job comes to after its handler is weida-ffi's
//! (`Job::conclude`).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use weida_ffi::io::OnIo;
use weida_ffi::service::{self as ffi, Kind, Settings};
use weida_ffi::{Call, Fail};

use crate::aio::call;
use crate::error;
use crate::runtime::{Listener, Runtime};
use crate::stream::MessageOut;

fn pairs<'py>(py: Python<'py>, p: &[(&'static str, u64)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (n, v) in p {
        d.set_item(n, v)?;
    }
    Ok(d)
}

/// Registrations of handlers on one runtime's endpoints.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Service {
    rt: weida::Runtime,
}

fn settings(
    concurrency: Option<u32>,
    max_attempts: Option<u32>,
    dead_letter: Option<String>,
    retry_to: Option<String>,
) -> Settings {
    Settings {
        concurrency,
        max_attempts,
        dead_letter,
        retry_to,
    }
}

impl Service {
    fn start<'py>(
        &self,
        py: Python<'py>,
        kind: Kind<'_>,
        s: Settings,
    ) -> PyResult<Bound<'py, PyAny>> {
        let b = ffi::builder(&self.rt, kind, &s).map_err(|e| error::to_py(py, e))?;
        call(
            py,
            Call::new(async move {
                Ok::<_, Fail>(Registration {
                    r: OnIo::new(ffi::start(b).await?),
                })
            }),
        )
    }
}

#[pymethods]
impl Service {
    #[new]
    fn new(runtime: &Runtime) -> Self {
        Self {
            rt: runtime.core().clone(),
        }
    }

    /// A queue: binds a Pull path on `listener`; copies go to that path. Awaits the start.
    #[pyo3(signature = (listener, path, *, concurrency = None, max_attempts = None, dead_letter = None, retry_to = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    fn queue<'py>(
        &self,
        py: Python<'py>,
        listener: &Listener,
        path: &str,
        concurrency: Option<u32>,
        max_attempts: Option<u32>,
        dead_letter: Option<String>,
        retry_to: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = settings(concurrency, max_attempts, dead_letter, retry_to);
        self.start(
            py,
            Kind::Queue {
                listener: listener.core(),
                path,
            },
            s,
        )
    }

    /// A fan-out: binds a Sub path on `listener` holding `filters`; copies come back to it.
    #[pyo3(signature = (listener, path, filters, *, concurrency = None, max_attempts = None, dead_letter = None, retry_to = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    fn fan_out<'py>(
        &self,
        py: Python<'py>,
        listener: &Listener,
        path: &str,
        filters: Vec<String>,
        concurrency: Option<u32>,
        max_attempts: Option<u32>,
        dead_letter: Option<String>,
        retry_to: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = settings(concurrency, max_attempts, dead_letter, retry_to);
        self.start(
            py,
            Kind::FanOut {
                listener: listener.core(),
                path,
                filters,
            },
            s,
        )
    }

    /// A puller dialling the bound pusher at `address`; `retry_to` is required.
    #[pyo3(signature = (address, *, retry_to = None, concurrency = None, max_attempts = None, dead_letter = None))]
    fn pulling<'py>(
        &self,
        py: Python<'py>,
        address: String,
        retry_to: Option<String>,
        concurrency: Option<u32>,
        max_attempts: Option<u32>,
        dead_letter: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = settings(concurrency, max_attempts, dead_letter, retry_to);
        self.start(py, Kind::Pulling { address }, s)
    }

    /// A subscriber dialling the bound publisher at `address`, holding `filters`; `retry_to`
    /// is required.
    #[pyo3(signature = (address, filters, *, retry_to = None, concurrency = None, max_attempts = None, dead_letter = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    fn subscribing<'py>(
        &self,
        py: Python<'py>,
        address: String,
        filters: Vec<String>,
        retry_to: Option<String>,
        concurrency: Option<u32>,
        max_attempts: Option<u32>,
        dead_letter: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = settings(concurrency, max_attempts, dead_letter, retry_to);
        self.start(py, Kind::Subscribing { address, filters }, s)
    }

    /// A Rep path on `listener`; `retry_to` is required.
    #[pyo3(signature = (listener, path, *, retry_to = None, concurrency = None, max_attempts = None, dead_letter = None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    fn replying<'py>(
        &self,
        py: Python<'py>,
        listener: &Listener,
        path: &str,
        retry_to: Option<String>,
        concurrency: Option<u32>,
        max_attempts: Option<u32>,
        dead_letter: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = settings(concurrency, max_attempts, dead_letter, retry_to);
        self.start(
            py,
            Kind::Replying {
                listener: listener.core(),
                path,
            },
            s,
        )
    }
}

/// One endpoint read for a handler.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Registration {
    r: OnIo<Arc<weida::service::Registration>>,
}

#[pymethods]
impl Registration {
    /// The next job, once fewer than `concurrency` are unfinished; raises `Closed` once
    /// stopping. Cancel-safe.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = Arc::clone(&self.r);
        call(py, ffi::next_call(r, |j| Job { j }, |job| job.j))
    }

    /// The counters now: handled, retried, dead_lettered, dropped, failed, in_flight, delayed.
    #[getter]
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        pairs(py, &ffi::counters(&self.r.counters()))
    }

    /// The bound endpoint's own address (a queue or fan-out), else None.
    #[getter]
    fn address(&self) -> Option<String> {
        self.r.address().map(|a| a.to_string())
    }

    /// The warnings logged since the last call, oldest first (the newest 256 are kept): a
    /// failure with its peer, path, attempt and reason; `Unsupported` once; a message dropped
    /// at its limit; a copy not sent. `weida.service` logs them with `logging`.
    fn take_warnings(&self) -> Vec<String> {
        self.r.take_warnings()
    }

    /// Where copies go.
    #[getter]
    fn retry_address(&self) -> String {
        self.r.retry_address().to_string()
    }

    /// Takes nothing more, waits up to `deadline` seconds for handlers in flight and copies
    /// due, then closes; `{"unfinished": n, "copies_dropped": n}`. Not cancel-safe.
    #[pyo3(signature = (deadline = 30.0))]
    fn stop<'py>(&self, py: Python<'py>, deadline: f64) -> PyResult<Bound<'py, PyAny>> {
        let r = Arc::clone(&self.r);
        call(
            py,
            Call::new(async move { Ok::<_, Fail>(Stopped(ffi::stop(r, deadline).await?)) }),
        )
    }
}

/// What a stop left, converted on the loop thread.
pub(crate) struct Stopped(weida::service::Stopped);

impl<'py> IntoPyObject<'py> for Stopped {
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        pairs(py, &ffi::stopped(&self.0))
    }
}

/// One message handed to a handler, until its outcome is given.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Job {
    j: ffi::Job,
}

#[pymethods]
impl Job {
    /// The message.
    #[getter]
    fn message(&self, py: Python<'_>) -> PyResult<Py<crate::stream::Message>> {
        Ok(MessageOut(self.j.message().clone())
            .into_pyobject(py)?
            .unbind())
    }

    /// 1 for a first delivery; n for the copy a retry made of attempt n - 1.
    #[getter]
    fn attempt(&self) -> u32 {
        self.j.attempt()
    }

    /// Raises `Unsupported`, always: a brokerless hop has nothing to acknowledge.
    fn ack(&self, py: Python<'_>) -> PyResult<()> {
        self.j.ack().map_err(|e| error::to_py(py, e))
    }

    /// Raises `Unsupported`, always: a brokerless hop has nothing to discard. (`drop` is the
    /// outcome `weida.service.drop()`.)
    fn discard(&self, py: Python<'_>) -> PyResult<()> {
        self.j.discard().map_err(|e| error::to_py(py, e))
    }

    /// Gives the outcome by name (`done`, `reply`, `ack`, `retry`, `retry_after`, `drop`);
    /// `weida.service` does this for a handler. Raises `Closed` if it was given already.
    #[pyo3(signature = (outcome, *, delay = None, body = None))]
    fn finish(
        &self,
        py: Python<'_>,
        outcome: &str,
        delay: Option<f64>,
        body: Option<Vec<u8>>,
    ) -> PyResult<()> {
        let o =
            ffi::outcome(outcome, delay, body.map(Into::into)).map_err(|e| error::to_py(py, e))?;
        self.j.finish(o).map_err(|e| error::to_py(py, e))
    }

    /// The handler failed with `reason`: logged, counted, then a retry.
    fn fail(&self, py: Python<'_>, reason: &str) -> PyResult<()> {
        self.j.fail(reason).map_err(|e| error::to_py(py, e))
    }

    /// What the handler came to, for `weida.service`'s serve loop: weida-ffi's
    /// `Job::conclude` (a refused outcome a failure, a job already finished left as it is);
    /// the registration's warnings since.
    #[pyo3(name = "_conclude", signature = (outcome, *, delay = None, body = None))]
    fn conclude(&self, outcome: &str, delay: Option<f64>, body: Option<Vec<u8>>) -> Vec<String> {
        self.j.conclude(outcome, delay, body.map(Into::into))
    }

    /// The handler failed with `reason`, for the serve loop: weida-ffi's
    /// `Job::conclude_failed`; the registration's warnings since.
    #[pyo3(name = "_conclude_failed")]
    fn conclude_failed(&self, reason: &str) -> Vec<String> {
        self.j.conclude_failed(reason)
    }
}
