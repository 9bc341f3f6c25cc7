//! The one mapping from a failure to the Python exceptions of `weida/_errors.py`
//! (docs/BINDINGS.md, "Errors"): the class by the code, built with the message, then every
//! field the failure carries (weida-ffi's `Fail::fields`) set as an attribute of the same
//! name. No match on the error's variant here.

use pyo3::exceptions::{asyncio::CancelledError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use weida::FieldValue;
use weida_ffi::Fail;

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

/// A field's value in Python.
pub(crate) fn field(py: Python<'_>, v: FieldValue) -> PyResult<Py<PyAny>> {
    match v {
        FieldValue::Text(t) => t.into_py_any(py),
        FieldValue::Int(n) => n.into_py_any(py),
        _ => Ok(py.None()),
    }
}

/// The Python exception for a failure. The one place failures are mapped.
pub(crate) fn to_py(py: Python<'_>, f: Fail) -> PyErr {
    match build(py, f) {
        Ok(err) => err,
        Err(broken) => broken,
    }
}

/// [`to_py`] of a core error.
pub(crate) fn core(py: Python<'_>, e: weida::Error) -> PyErr {
    to_py(py, Fail::Core(e))
}

fn build(py: Python<'_>, f: Fail) -> PyResult<PyErr> {
    let Some(code) = f.code() else {
        return Ok(match f {
            Fail::Aborted => CancelledError::new_err(f.message()),
            _ => PyRuntimeError::new_err(f.message()),
        });
    };
    let class = classes(py)?
        .get_item(code.as_str())?
        .ok_or_else(|| PyRuntimeError::new_err(format!("weida._errors has no class for {code}")))?;
    let exc = class.call1((f.message(),))?;
    for (name, value) in f.fields() {
        exc.setattr(name, field(py, value)?)?;
    }
    if let Some(weida::Error::Io(io)) = f.into_core() {
        // The OS error is the Rust source: it becomes __cause__ (an OSError subclass by kind).
        exc.setattr("__cause__", PyErr::from(io).into_value(py))?;
    }
    Ok(PyErr::from_value(exc))
}
