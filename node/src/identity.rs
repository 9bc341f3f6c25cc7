//! `Identity` (the key a runtime presents) and `Trust` (whom it accepts). Fingerprints are the
//! strings `sha256:<64 hex>`.

use napi::Env;
use napi_derive::napi;

use crate::error;

/// A key and its certificate; peers pin its fingerprint.
#[napi]
pub struct Identity {
    pub(crate) inner: weida::Identity,
}

#[napi]
impl Identity {
    /// A fresh key, kept nowhere.
    #[napi(factory)]
    pub fn ephemeral() -> Self {
        Self {
            inner: weida::Identity::ephemeral(),
        }
    }

    /// The identity kept in `dir`, created (mode 0700 / 0600) on first use, so the fingerprint
    /// survives a restart. Synchronous: a few small files.
    #[napi(factory)]
    pub fn load_or_create(env: Env, dir: String) -> napi::Result<Self> {
        weida::Identity::load_or_create(dir)
            .map(|inner| Self { inner })
            .map_err(|e| error::throw(&env, e))
    }

    /// The identity kept in `dir` (`key.pem`, `cert.pem`).
    #[napi(factory)]
    pub fn load(env: Env, dir: String) -> napi::Result<Self> {
        weida::Identity::load(dir)
            .map(|inner| Self { inner })
            .map_err(|e| error::throw(&env, e))
    }

    /// An identity from a PEM certificate chain (leaf first) and the leaf's PEM key.
    #[napi(factory)]
    pub fn from_pem(env: Env, cert_chain_pem: String, key_pem: String) -> napi::Result<Self> {
        weida::Identity::from_pem(&cert_chain_pem, &key_pem)
            .map(|inner| Self { inner })
            .map_err(|e| error::throw(&env, e))
    }

    /// Writes this identity into `dir`.
    #[napi]
    pub fn save(&self, env: Env, dir: String) -> napi::Result<()> {
        self.inner.save(dir).map_err(|e| error::throw(&env, e))
    }

    /// `sha256:<hex>` of the public key.
    #[napi(getter)]
    pub fn fingerprint(&self) -> String {
        self.inner.fingerprint().to_string()
    }
}

/// Whom a dialling side accepts (and, with `bind(address, {requireClient})`, which client keys
/// a listener lets in).
#[napi]
pub struct Trust {
    pub(crate) inner: weida::Trust,
}

fn parse_fingerprints(env: &Env, fps: Vec<String>) -> napi::Result<Vec<weida::Fingerprint>> {
    fps.iter()
        .map(|s| s.parse().map_err(|e| error::throw(env, e)))
        .collect()
}

#[napi]
impl Trust {
    /// Only the key the address pins (the default).
    #[napi(factory)]
    pub fn address() -> Self {
        Self {
            inner: weida::Trust::address(),
        }
    }

    /// These keys (`sha256:…`), besides an address pin, which still decides alone.
    #[napi(factory)]
    pub fn pinned(env: Env, fingerprints: Vec<String>) -> napi::Result<Self> {
        Ok(Self {
            inner: weida::Trust::pinned(parse_fingerprints(&env, fingerprints)?),
        })
    }

    /// Any key: for tests and first contact only.
    #[napi(factory)]
    pub fn unverified() -> Self {
        Self {
            inner: weida::Trust::unverified(),
        }
    }

    /// Certificate chains to these CA certificates (PEM), for the host dialled.
    #[napi(factory)]
    pub fn anchors_pem(env: Env, pem: String) -> napi::Result<Self> {
        weida::Trust::anchors_pem(&pem)
            .map(|inner| Self { inner })
            .map_err(|e| error::throw(&env, e))
    }

    /// This trust, also accepting `fingerprint`.
    #[napi]
    pub fn with_pin(&self, env: Env, fingerprint: String) -> napi::Result<Self> {
        let fp = fingerprint.parse().map_err(|e| error::throw(&env, e))?;
        Ok(Self {
            inner: self.inner.clone().with_pin(fp),
        })
    }

    /// The keys accepted by pin (not counting an address pin).
    #[napi(getter)]
    pub fn pins(&self) -> Vec<String> {
        self.inner.pins().iter().map(|f| f.to_string()).collect()
    }
}
