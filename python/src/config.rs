//! `Limits` and the options of `Runtime(...)` as keyword arguments, parsed and checked by
//! weida-ffi's option table (names as the core's, durations in seconds): a bad one raises
//! `InvalidConfig` naming it.

use pyo3::exceptions::PyAttributeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use pyo3::IntoPyObjectExt;
use weida_ffi::config::{self, Given, Spelling, Value};

use crate::error;

/// How Python spells options: as the core does, durations in seconds.
pub(crate) const PY: Spelling = Spelling::SnakeSeconds;

/// A keyword argument's value for the option table.
pub(crate) fn given(v: &Bound<'_, PyAny>) -> Given {
    if v.is_none() {
        Given::Null
    } else if let Ok(b) = v.cast::<PyBool>() {
        Given::Bool(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        v.extract::<i128>()
            .map_or(Given::Other("int".into()), Given::Int)
    } else if let Ok(f) = v.cast::<PyFloat>() {
        Given::Float(f.value())
    } else if let Ok(s) = v.cast::<PyString>() {
        Given::Text(s.to_string())
    } else {
        Given::Other(
            v.get_type()
                .name()
                .map_or_else(|_| "?".into(), |n| n.to_string()),
        )
    }
}

/// Keyword arguments as `(name, value)` pairs.
pub(crate) fn pairs(options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Given)>> {
    let mut out = Vec::new();
    if let Some(d) = options {
        for (k, v) in d.iter() {
            out.push((k.extract::<String>()?, given(&v)));
        }
    }
    Ok(out)
}

/// An option's value in Python.
pub(crate) fn value(py: Python<'_>, v: Value) -> PyResult<Py<PyAny>> {
    match v {
        Value::Whole(n) => n.into_py_any(py),
        Value::Time(d) => config::duration_out(d, PY).into_py_any(py),
        Value::Off => Ok(py.None()),
        Value::Name(n) => n.into_py_any(py),
        Value::Flag(f) => f.into_py_any(py),
    }
}

/// Per-connection bounds (the core's `Limits`): keyword arguments with the core's names, each
/// absent one the core's default; read back as attributes of the same names.
#[pyclass(frozen, from_py_object, module = "weida._weida")]
#[derive(Clone)]
pub(crate) struct Limits {
    pub(crate) inner: weida::Limits,
}

#[pymethods]
impl Limits {
    // The text signature shows the real defaults (help(), IDEs); the options are parsed from
    // the table, so test_lifecycle.py `limits_signature_shows_the_core_defaults` keeps the two
    // (and the .pyi) equal.
    #[new]
    #[pyo3(
        signature = (**options),
        text_signature = "(*, stream_receive_window=1048576, connection_receive_window=8388608, \
            send_window=8388608, max_concurrent_uni_streams=256, max_concurrent_bidi_streams=256, \
            max_local_streams=255, endpoint_queue=256, peer_share=64, max_header_size=16384, \
            max_collected_body=16777216, idle_timeout=30.0, keep_alive=10.0, connect_timeout=5.0, \
            header_timeout=10.0, body_idle_timeout=30.0, subscriber_buffer_bytes=1048576, \
            max_reorder_hold=256, max_parked_reverse=8, max_filters=1024, fanout_wait=1.0, \
            max_udp_payload=65527, max_connections=1024, max_local_peer_connections=1024)"
    )]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        config::limits(PY, pairs(options)?)
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        match config::get(&config::LIMITS, &self.inner, PY, name) {
            Some(v) => value(py, v),
            None => Err(PyAttributeError::new_err(name.to_string())),
        }
    }

    /// The option names, from the table (what `__getattr__` reads).
    fn __dir__(&self) -> Vec<&'static str> {
        config::LIMITS.iter().map(|o| o.name).collect()
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

/// An endpoint's keyword options (`max_collected_body`, `endpoint_queue`, `send_timeout`),
/// checked by weida-ffi's table: a bad one raises `InvalidConfig` naming it.
pub(crate) fn endpoint_options(
    py: Python<'_>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<weida::EndpointOptions> {
    let mut rest = Vec::new();
    let mut reconnect = None;
    for (k, v) in options.into_iter().flat_map(|d| d.iter()) {
        let k: String = k.extract()?;
        match k.as_str() {
            "reconnect" if !v.is_none() => {
                reconnect = Some(v.extract::<crate::events::ReconnectPolicy>()?.inner)
            }
            "reconnect" => {}
            _ => rest.push((k, given(&v))),
        }
    }
    config::endpoint(PY, rest, reconnect).map_err(|e| error::core(py, e))
}
