//! The one mapping from `weida::Error` to the Python exceptions of `weida/_errors.py`
//! (docs/BINDINGS.md, "Errors"): the class is chosen by `ErrorCode`, and the fields the core
//! keeps (loss cause, fingerprints, path, limit, address part, filter, OS error) become
//! attributes.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use weida::{Error, ErrorCode, Limit, LossCause};

static CLASSES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The exception classes by code, from `weida._errors.BY_CODE`.
fn classes(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    CLASSES
        .get_or_try_init(py, || {
            py.import("weida._errors")?
                .getattr("BY_CODE")?
                .cast_into::<PyDict>()
                .map(Bound::unbind)
                .map_err(Into::into)
        })
        .map(|d| d.bind(py))
}

/// The `cause` attribute of `ConnectionLost` and `Indeterminate`.
pub(crate) fn cause_name(c: &LossCause) -> &'static str {
    match c {
        LossCause::IdleTimeout => "idle_timeout",
        LossCause::PeerClosed => "peer_closed",
        LossCause::LocallyClosed => "locally_closed",
        LossCause::Reset => "reset",
        LossCause::TransportError(_) => "transport_error",
        _ => "other",
    }
}

fn limit_name(l: &Limit) -> &'static str {
    match l {
        Limit::HeaderSize => "max_header_size",
        Limit::CollectedBody => "max_collected_body",
        Limit::Remote => "remote",
        Limit::ByteBudget => "byte_budget",
        Limit::Queue => "queue",
        Limit::Filters => "max_filters",
        _ => "other",
    }
}

/// The Python exception for a core error. The one place errors are mapped.
pub(crate) fn to_py(py: Python<'_>, e: Error) -> PyErr {
    match build(py, e) {
        Ok(err) => err,
        Err(broken) => broken,
    }
}

fn build(py: Python<'_>, e: Error) -> PyResult<PyErr> {
    let code = e.code().as_str();
    let kwargs = PyDict::new(py);
    match &e {
        Error::ConnectionLost(c) | Error::Indeterminate(c) => {
            kwargs.set_item("cause", cause_name(c))?;
        }
        Error::Untrusted {
            fingerprint,
            expected,
        } => {
            kwargs.set_item("fingerprint", fingerprint.to_string())?;
            kwargs.set_item("expected", expected.map(|f| f.to_string()))?;
        }
        Error::UnknownEndpoint { path } => kwargs.set_item("path", path)?,
        Error::LimitExceeded { limit, detail } => {
            kwargs.set_item("limit", limit_name(limit))?;
            kwargs.set_item("detail", detail)?;
        }
        Error::InvalidAddress { part, reason } => {
            kwargs.set_item("part", part.to_string())?;
            kwargs.set_item("reason", reason)?;
        }
        Error::InvalidFilter(f) => {
            kwargs.set_item("what", f.what)?;
            kwargs.set_item("text", &f.text)?;
            kwargs.set_item("reason", &f.reason)?;
        }
        Error::Rejected(r) | Error::Unsupported(r) => kwargs.set_item("reason", r)?,
        Error::Io(io) => kwargs.set_item("errno", io.raw_os_error())?,
        _ => {}
    }
    let message = e.to_string();
    let class = classes(py)?
        .get_item(code)?
        .ok_or_else(|| PyRuntimeError::new_err(format!("weida._errors has no class for {code}")))?;
    let exc = class.call((message,), Some(&kwargs))?;
    if let Error::Io(io) = e {
        // The OS error is the Rust source: it becomes __cause__ (an OSError subclass by kind).
        exc.setattr("__cause__", PyErr::from(io).into_value(py))?;
    }
    Ok(PyErr::from_value(exc))
}

/// The core error a Python caller names by code and message, for `Exchange.fail`: the peer
/// sees the code the core sends for it (`Code::of_error`).
pub(crate) fn from_code(code: &str, message: &str) -> PyResult<Error> {
    let m = message.to_string();
    let known = ErrorCode::ALL
        .iter()
        .find(|c| c.as_str() == code)
        .ok_or_else(|| PyValueError::new_err(format!("{code:?} is not a weida error code")))?;
    Ok(match known {
        ErrorCode::Canceled => Error::Canceled,
        ErrorCode::UnknownEndpoint => Error::UnknownEndpoint { path: m },
        ErrorCode::Unsupported => Error::Unsupported(m),
        ErrorCode::Rejected => Error::Rejected(m),
        ErrorCode::LimitExceeded => Error::LimitExceeded {
            limit: Limit::Remote,
            detail: m,
        },
        ErrorCode::Protocol => Error::Protocol(m),
        ErrorCode::NegotiationFailed => Error::NegotiationFailed(m),
        ErrorCode::Closed => Error::Closed,
        // Anything else reaches the peer as an internal error (REJECTED with the text).
        _ => Error::Rejected(m),
    })
}
