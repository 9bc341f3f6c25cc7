//! `Identity`: the key a runtime presents, and fingerprints.

use pyo3::prelude::*;

use crate::error;

/// The key a runtime presents; peers name it by its fingerprint (`sha256:<hex>`).
#[pyclass(frozen, from_py_object, module = "weida._weida")]
#[derive(Clone)]
pub(crate) struct Identity {
    pub(crate) inner: weida::Identity,
}

#[pymethods]
impl Identity {
    /// A fresh P-256 key in a self-signed certificate; nothing is written anywhere.
    #[staticmethod]
    fn ephemeral(py: Python<'_>) -> Self {
        Self {
            inner: py.detach(weida::Identity::ephemeral),
        }
    }

    /// The identity kept in directory `dir`, created there (mode 0700, key 0600) on first use.
    #[staticmethod]
    fn load_or_create(py: Python<'_>, dir: std::path::PathBuf) -> PyResult<Self> {
        py.detach(|| weida::Identity::load_or_create(&dir))
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    /// The identity kept in directory `dir` (`key.pem` and `cert.pem`).
    #[staticmethod]
    fn load(py: Python<'_>, dir: std::path::PathBuf) -> PyResult<Self> {
        py.detach(|| weida::Identity::load(&dir))
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    /// An identity from a PEM certificate chain (leaf first) and the leaf's PEM private key.
    #[staticmethod]
    fn from_pem(py: Python<'_>, cert_chain_pem: &str, key_pem: &str) -> PyResult<Self> {
        weida::Identity::from_pem(cert_chain_pem, key_pem)
            .map(|inner| Self { inner })
            .map_err(|e| error::core(py, e))
    }

    /// Writes this identity into directory `dir`, replacing what is there.
    fn save(&self, py: Python<'_>, dir: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| self.inner.save(&dir))
            .map_err(|e| error::core(py, e))
    }

    /// The fingerprint of this identity's public key, `sha256:<64 hex>`: what a peer pins.
    #[getter]
    fn fingerprint(&self) -> String {
        self.inner.fingerprint().to_string()
    }

    fn __repr__(&self) -> String {
        format!("Identity({})", self.inner.fingerprint())
    }
}

/// The fingerprint (`sha256:<hex>`) of the key in a DER certificate.
#[pyfunction]
pub(crate) fn fingerprint_of_certificate(py: Python<'_>, der: &[u8]) -> PyResult<String> {
    weida::fingerprint_of_certificate(der)
        .map(|f| f.to_string())
        .map_err(|e| error::core(py, e))
}

/// A fingerprint from its `sha256:<hex>` text.
pub(crate) fn parse_fingerprint(py: Python<'_>, s: &str) -> PyResult<weida::Fingerprint> {
    s.parse().map_err(|e| error::core(py, e))
}
