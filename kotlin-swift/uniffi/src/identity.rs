//! `Identity` (the key a runtime presents) and `Trust` (whom it accepts). Fingerprints are the
//! core's `sha256:…` text.

use std::sync::Arc;

use crate::error::Result;

/// The key a runtime presents.
#[derive(uniffi::Object)]
pub struct Identity {
    pub(crate) inner: weida::Identity,
}

#[uniffi::export]
impl Identity {
    /// A new key, kept in memory only.
    #[uniffi::constructor]
    pub fn ephemeral() -> Arc<Self> {
        Arc::new(Self {
            inner: weida::Identity::ephemeral(),
        })
    }

    /// The key saved in `dir`, made and saved there first if there is none.
    #[uniffi::constructor]
    pub fn load_or_create(dir: String) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            inner: weida::Identity::load_or_create(dir)?,
        }))
    }

    /// A key from a PEM certificate chain (leaf first) and the leaf's PEM private key (what
    /// `save` writes as `cert.pem` and `key.pem`); malformed PEM is `InvalidConfig`.
    #[uniffi::constructor]
    pub fn from_pem(cert_chain_pem: String, key_pem: String) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            inner: weida::Identity::from_pem(&cert_chain_pem, &key_pem)?,
        }))
    }

    /// The key saved in `dir`.
    #[uniffi::constructor]
    pub fn load(dir: String) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            inner: weida::Identity::load(dir)?,
        }))
    }

    /// Saves the key in `dir`.
    pub fn save(&self, dir: String) -> Result<()> {
        Ok(self.inner.save(dir)?)
    }

    /// The `sha256:…` fingerprint of the key.
    pub fn fingerprint(&self) -> String {
        self.inner.fingerprint().to_string()
    }
}

/// Whom a runtime accepts.
#[derive(uniffi::Object)]
pub struct Trust {
    pub(crate) inner: weida::Trust,
}

fn parse(fps: Vec<String>) -> Result<Vec<weida::Fingerprint>> {
    Ok(fps
        .iter()
        .map(|s| s.parse())
        .collect::<weida::Result<Vec<_>>>()?)
}

#[uniffi::export]
impl Trust {
    /// Only the key the address pins (the default).
    #[uniffi::constructor]
    pub fn address() -> Arc<Self> {
        Arc::new(Self {
            inner: weida::Trust::address(),
        })
    }

    /// These keys, whatever the address pins.
    #[uniffi::constructor]
    pub fn pinned(fingerprints: Vec<String>) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            inner: weida::Trust::pinned(parse(fingerprints)?),
        }))
    }

    /// Certificate chains that validate to one of these CA certificates (DER).
    #[uniffi::constructor]
    pub fn anchors(ca_ders: Vec<Vec<u8>>) -> Arc<Self> {
        Arc::new(Self {
            inner: weida::Trust::anchors(ca_ders),
        })
    }

    /// Certificates signed by these anchors, from PEM (one or more CERTIFICATE sections);
    /// PEM with none is `InvalidConfig`.
    #[uniffi::constructor]
    pub fn anchors_pem(pem: String) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            inner: weida::Trust::anchors_pem(&pem)?,
        }))
    }

    /// Any key (trust on first use for redials).
    #[uniffi::constructor]
    pub fn unverified() -> Arc<Self> {
        Arc::new(Self {
            inner: weida::Trust::unverified(),
        })
    }

    /// This trust plus the key `fingerprint` (`sha256:…`).
    pub fn with_pin(&self, fingerprint: String) -> Result<Arc<Self>> {
        let fp: weida::Fingerprint = fingerprint.parse()?;
        Ok(Arc::new(Self {
            inner: self.inner.clone().with_pin(fp),
        }))
    }

    /// This trust plus one CA certificate (DER).
    pub fn with_anchor_der(&self, der: Vec<u8>) -> Arc<Self> {
        Arc::new(Self {
            inner: self.inner.clone().with_anchor_der(der),
        })
    }

    /// The keys it pins.
    pub fn pins(&self) -> Vec<String> {
        self.inner.pins().iter().map(ToString::to_string).collect()
    }
}
