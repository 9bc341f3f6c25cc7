//! `Address`: parsing and deriving weida addresses (`weida://sha256:<hex>@host:port/path`,
//! `weida+inproc://name/path`, `weida+unix:///socket//path`).

use pyo3::prelude::*;

use crate::error;
use crate::identity::parse_fingerprint;

/// A parsed weida address. ``str(address)`` is its canonical text.
#[pyclass(frozen, eq, hash, str, module = "weida._weida")]
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct Address {
    inner: weida::Address,
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

#[pymethods]
impl Address {
    /// Parses `address`; raises `InvalidAddress` naming the malformed part.
    #[new]
    fn new(py: Python<'_>, address: &str) -> PyResult<Self> {
        weida::Address::parse(address)
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    /// This address with endpoint path `path` (e.g. a listener's address plus `"/jobs"`).
    fn with_path(&self, py: Python<'_>, path: &str) -> PyResult<Self> {
        self.inner
            .with_path(path)
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    /// This address pinning `fingerprint` (`sha256:<hex>`).
    fn with_pin(&self, py: Python<'_>, fingerprint: &str) -> PyResult<Self> {
        self.inner
            .with_pin(parse_fingerprint(py, fingerprint)?)
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    /// This address without its endpoint path.
    fn without_path(&self) -> Self {
        Self {
            inner: self.inner.without_path(),
        }
    }

    /// The endpoint path, if any.
    #[getter]
    fn path(&self) -> Option<&str> {
        self.inner.path()
    }

    /// The pinned fingerprint, if any.
    #[getter]
    fn pin(&self) -> Option<String> {
        self.inner.pin().map(|f| f.to_string())
    }

    fn __repr__(&self) -> String {
        format!("Address({:?})", self.inner.to_string())
    }
}
