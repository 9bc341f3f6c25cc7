//! `ReconnectPolicy` and a dialling endpoint's `PeerEvents` (`async for event in
//! pusher.events()`), converted from weida-ffi's option table and its flat event record.

use std::sync::Arc;

use pyo3::exceptions::{PyAttributeError, PyStopAsyncIteration};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use weida_ffi::config;
use weida_ffi::events::{Event, Events};
use weida_ffi::Call;

use crate::aio::call;
use crate::config::{pairs, value, PY};
use crate::error;

/// How a dialling endpoint redials an address whose connection was lost: keyword arguments
/// `initial` and `max` (seconds, default 0.1 and 30), `jitter` (True), `stop_refused`,
/// `stop_handshake_failed`, `stop_peer_closed` (False), and at most one of
/// `give_up_after_attempts` and `give_up_after` (seconds; neither: never give up).
/// `ReconnectPolicy.never()` does not redial.
#[pyclass(frozen, from_py_object, module = "weida._weida")]
#[derive(Clone)]
pub(crate) struct ReconnectPolicy {
    pub(crate) inner: weida::ReconnectPolicy,
}

#[pymethods]
impl ReconnectPolicy {
    #[new]
    #[pyo3(
        signature = (**options),
        text_signature = "(*, initial=0.1, max=30.0, jitter=True, stop_refused=False, \
            stop_handshake_failed=False, stop_peer_closed=False, give_up_after_attempts=None, \
            give_up_after=None)"
    )]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        config::reconnect(PY, pairs(options)?)
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    /// No redial: a lost connection's address is given up, and the next operation fails
    /// with the loss.
    #[staticmethod]
    fn never() -> Self {
        Self {
            inner: weida::ReconnectPolicy::never(),
        }
    }

    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        match config::get(&config::RECONNECT, &self.inner, PY, name) {
            Some(v) => value(py, v),
            None => Err(PyAttributeError::new_err(name.to_string())),
        }
    }

    fn __dir__(&self) -> Vec<&'static str> {
        config::RECONNECT.iter().map(|o| o.name).collect()
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Self>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }
}

/// One transition of one address of a dialling endpoint. `kind` is `"connected"`
/// (`fingerprint`), `"lost"` or `"gave_up"` (`cause`, a loss cause's name, and `reason`),
/// `"retrying"` (`attempt`, `delay` in seconds) or `"missed"` (`missed`: events this reader
/// fell behind by).
#[pyclass(frozen, get_all, module = "weida._weida")]
pub(crate) struct PeerEvent {
    kind: &'static str,
    url: String,
    fingerprint: Option<String>,
    cause: Option<&'static str>,
    reason: Option<String>,
    attempt: Option<u32>,
    delay: Option<f64>,
    missed: Option<u64>,
}

impl From<Event> for PeerEvent {
    fn from(e: Event) -> Self {
        Self {
            kind: e.kind,
            url: e.url,
            fingerprint: e.fingerprint,
            cause: e.cause,
            reason: e.reason,
            attempt: e.attempt,
            delay: e.delay.map(|d| d.as_secs_f64()),
            missed: e.missed,
        }
    }
}

#[pymethods]
impl PeerEvent {
    fn __repr__(&self) -> String {
        let detail = match self.kind {
            "connected" => format!(" fingerprint={:?}", self.fingerprint),
            "lost" | "gave_up" => format!(" cause={:?}", self.cause.unwrap_or("")),
            "retrying" => format!(
                " attempt={} delay={}",
                self.attempt.unwrap_or(0),
                self.delay.unwrap_or(0.0)
            ),
            _ => format!(" missed={}", self.missed.unwrap_or(0)),
        };
        format!("PeerEvent({} url={:?}{detail})", self.kind, self.url)
    }
}

/// The events of a dialling endpoint from the moment `events()` was called: `async for event
/// in pusher.events()`, or `await events.next()`. The iteration ends when the endpoint is
/// gone. Reading them is optional.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct PeerEvents {
    events: Arc<Events>,
}

impl PeerEvents {
    pub(crate) fn new(e: weida::PeerEvents) -> Self {
        Self {
            events: Arc::new(Events::new(e)),
        }
    }
}

/// The next event, or the end of the iteration.
struct NextEvent(Option<Event>);

impl<'py> IntoPyObject<'py> for NextEvent {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.0 {
            Some(e) => Ok(Bound::new(py, PeerEvent::from(e))?.into_any()),
            None => Err(PyStopAsyncIteration::new_err(())),
        }
    }
}

#[pymethods]
impl PeerEvents {
    /// The next event (StopAsyncIteration once the endpoint is gone). Cancel-safe.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let events = Arc::clone(&self.events);
        call(
            py,
            Call::new(async move { Ok(NextEvent(events.next().await)) }),
        )
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.next(py)
    }
}
