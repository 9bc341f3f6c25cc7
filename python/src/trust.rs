//! `Trust`: whom a dialling side accepts, or (with `bind(require_client=...)`) which clients a
//! listener lets in.

use pyo3::prelude::*;

use crate::error;
use crate::identity::parse_fingerprint;

/// Whom a dialling side accepts. Default (`Trust.address()`): only the key the address pins.
#[pyclass(frozen, from_py_object, module = "weida._weida")]
#[derive(Clone)]
pub(crate) struct Trust {
    pub(crate) inner: weida::Trust,
}

#[pymethods]
impl Trust {
    /// Accept only the key the address pins (`weida://sha256:<hex>@host:port`).
    #[staticmethod]
    fn address() -> Self {
        Self {
            inner: weida::Trust::address(),
        }
    }

    /// Accept these keys (`sha256:<hex>` fingerprints) besides an address pin.
    #[staticmethod]
    fn pinned(py: Python<'_>, fingerprints: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut pins = Vec::new();
        for f in fingerprints.try_iter()? {
            pins.push(parse_fingerprint(py, &f?.extract::<String>()?)?);
        }
        Ok(Self {
            inner: weida::Trust::pinned(pins),
        })
    }

    /// Accept certificate chains that validate to one of these CA certificates (DER).
    #[staticmethod]
    fn anchors(ca_ders: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut ders = Vec::new();
        for d in ca_ders.try_iter()? {
            ders.push(d?.extract::<crate::stream::Body>()?.0.to_vec());
        }
        Ok(Self {
            inner: weida::Trust::anchors(ders),
        })
    }

    /// `anchors` from PEM (one or more CERTIFICATE sections).
    #[staticmethod]
    fn anchors_pem(py: Python<'_>, pem: &str) -> PyResult<Self> {
        weida::Trust::anchors_pem(pem)
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    /// Accept any key. For tests and trusted networks only.
    #[staticmethod]
    fn unverified() -> Self {
        Self {
            inner: weida::Trust::unverified(),
        }
    }

    /// This trust plus one pinned key.
    fn with_pin(&self, py: Python<'_>, fingerprint: &str) -> PyResult<Self> {
        Ok(Self {
            inner: self
                .inner
                .clone()
                .with_pin(parse_fingerprint(py, fingerprint)?),
        })
    }

    /// This trust plus one CA certificate (DER).
    fn with_anchor_der(&self, der: Vec<u8>) -> Self {
        Self {
            inner: self.inner.clone().with_anchor_der(der),
        }
    }

    /// The pinned fingerprints.
    #[getter]
    fn pins(&self) -> Vec<String> {
        self.inner.pins().iter().map(|f| f.to_string()).collect()
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}
