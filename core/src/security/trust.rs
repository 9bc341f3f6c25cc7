//! Whom each side accepts: [`Trust`] for the peer's key, [`ServerTls`] for a binding side and
//! [`ClientTls`] for a dialling side.

use std::fmt;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::error::Error;
use crate::security::fingerprint::Fingerprint;
use crate::security::identity::Identity;

/// Whom a dialling side accepts. Default: only what the address names (its `sha256:` pin).
///
/// When the address names a pin, that pin alone decides: the server must present exactly that
/// key, and nothing configured here can widen it. When the address names none, the server is
/// accepted if its key is one of the [pins](Trust::pinned), or its certificate chain validates
/// to one of the [anchors](Trust::anchors) for the host dialled, or the trust is
/// [`Trust::unverified`]. A refused server is reported as [`Error::Untrusted`] with the
/// fingerprint it presented.
///
/// On a binding side ([`ServerTls::require_client`]) the same pins and anchors say which
/// client keys are let in; there is no address there, so [`Trust::address`] means "any key".
///
/// ```
/// use weida::{Identity, Trust};
///
/// let server = Identity::ephemeral();
/// let trust = Trust::pinned([server.fingerprint()]);
/// assert_eq!(trust.pins(), &[server.fingerprint()]);
/// ```
#[derive(Clone, Default)]
pub struct Trust {
    pins: Vec<Fingerprint>,
    anchors: Vec<CertificateDer<'static>>,
    any_key: bool,
}

impl fmt::Debug for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trust")
            .field("pins", &self.pins)
            .field("anchors", &self.anchors.len())
            .field("any_key", &self.any_key)
            .finish()
    }
}

impl Trust {
    /// Accept only the key the address pins (`weida://sha256:<hex>@host:port`); an address
    /// without a pin is then refused whatever answers.
    pub fn address() -> Self {
        Self::default()
    }

    /// Accept these keys (besides an address pin, which still decides alone when present).
    pub fn pinned(pins: impl IntoIterator<Item = Fingerprint>) -> Self {
        Self {
            pins: pins.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Accept a certificate chain that validates to one of these CA certificates (DER) for the
    /// host dialled: the usual web PKI rules (validity period, name, key usage).
    ///
    /// The certificates are checked when a connection is configured; one that cannot serve as
    /// a trust anchor then fails with [`Error::InvalidConfig`]. [`Trust::anchors_pem`] checks
    /// them at once.
    pub fn anchors(ca_ders: impl IntoIterator<Item = Vec<u8>>) -> Self {
        Self {
            anchors: ca_ders.into_iter().map(CertificateDer::from).collect(),
            ..Self::default()
        }
    }

    /// [`Trust::anchors`] from PEM (one or more `CERTIFICATE` sections).
    ///
    /// [`Error::InvalidConfig`] for malformed PEM, no certificate, or a certificate that cannot
    /// serve as a trust anchor.
    pub fn anchors_pem(pem: &str) -> Result<Self, Error> {
        let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::InvalidConfig(format!("malformed CA certificate PEM: {e}")))?;
        if certs.is_empty() {
            return Err(Error::InvalidConfig(
                "the CA PEM holds no CERTIFICATE section".to_string(),
            ));
        }
        root_store(&certs)?;
        Ok(Self {
            anchors: certs,
            ..Self::default()
        })
    }

    /// This trust, also accepting `fp`.
    pub fn with_pin(mut self, fp: Fingerprint) -> Self {
        self.pins.push(fp);
        self
    }

    /// This trust, also accepting chains to the CA certificate `der`.
    pub fn with_anchor_der(mut self, der: Vec<u8>) -> Self {
        self.anchors.push(CertificateDer::from(der));
        self
    }

    /// Accept any key (the connection still reports the fingerprint that answered).
    ///
    /// For tests and first contact only: it authenticates nobody, so a dialling side using it
    /// should check the reported fingerprint before trusting what it says. An address pin
    /// still decides alone when present.
    pub fn unverified() -> Self {
        Self {
            any_key: true,
            ..Self::default()
        }
    }

    /// The keys accepted by pin (not counting an address pin).
    pub fn pins(&self) -> &[Fingerprint] {
        &self.pins
    }

    /// The CA certificates accepted as anchors.
    pub(crate) fn anchor_certs(&self) -> &[CertificateDer<'static>] {
        &self.anchors
    }

    /// True for [`Trust::unverified`].
    pub(crate) fn accepts_any_key(&self) -> bool {
        self.any_key
    }
}

/// A rustls root store of `anchors`; [`Error::InvalidConfig`] if one cannot be an anchor.
pub(crate) fn root_store(
    anchors: &[CertificateDer<'static>],
) -> Result<rustls::RootCertStore, Error> {
    let mut store = rustls::RootCertStore::empty();
    for (i, der) in anchors.iter().enumerate() {
        store.add(der.clone()).map_err(|e| {
            Error::InvalidConfig(format!(
                "CA certificate #{} is not a usable trust anchor: {e}",
                i + 1
            ))
        })?;
    }
    Ok(store)
}

/// How a binding side presents itself and whom it lets in.
///
/// By default a client certificate is asked for but optional: a client that presents one is
/// identified by its key (any key is let in, its signature checked), one that presents none is
/// anonymous. [`ServerTls::require_client`] makes it mandatory and restricts the keys.
///
/// ```
/// use weida::{Identity, ServerTls, Trust};
///
/// let client = Identity::ephemeral();
/// let tls = ServerTls::new(Identity::ephemeral()).require_client(Trust::pinned([client.fingerprint()]));
/// # let _ = tls;
/// ```
#[derive(Clone, Debug)]
pub struct ServerTls {
    identity: Identity,
    require_client: bool,
    client_trust: Option<Trust>,
}

impl ServerTls {
    /// Present `identity`; let in anonymous clients and clients presenting any key.
    pub fn new(identity: Identity) -> Self {
        Self {
            identity,
            require_client: false,
            client_trust: None,
        }
    }

    /// A client must present a key `trust` accepts: one of its pins, or a chain to one of its
    /// anchors (no name is checked: a client has no host name). [`Trust::unverified`] and
    /// [`Trust::address`] (a client has no address to pin) accept any key, but one must be
    /// presented. A client refused here fails its handshake.
    pub fn require_client(mut self, trust: Trust) -> Self {
        self.require_client = true;
        self.client_trust = Some(trust);
        self
    }

    /// The identity this side presents.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// True after [`ServerTls::require_client`].
    pub(crate) fn client_required(&self) -> bool {
        self.require_client
    }

    /// The trust a client key must meet, if restricted.
    pub(crate) fn client_trust(&self) -> Option<&Trust> {
        self.client_trust.as_ref()
    }
}

/// How a dialling side presents itself and whom it accepts.
///
/// ```
/// use weida::{ClientTls, Identity, Trust};
///
/// // Present a key, accept only what the address pins.
/// let tls = ClientTls::new(Identity::ephemeral(), Trust::address());
/// assert!(tls.identity().is_some());
/// // Present nothing.
/// assert!(ClientTls::anonymous(Trust::address()).identity().is_none());
/// ```
#[derive(Clone, Debug)]
pub struct ClientTls {
    identity: Option<Identity>,
    trust: Trust,
}

impl ClientTls {
    /// Present `identity` when the server asks, and accept servers `trust` accepts.
    pub fn new(identity: Identity, trust: Trust) -> Self {
        Self {
            identity: Some(identity),
            trust,
        }
    }

    /// Present no key (the server sees an anonymous client), and accept servers `trust`
    /// accepts.
    pub fn anonymous(trust: Trust) -> Self {
        Self {
            identity: None,
            trust,
        }
    }

    /// The identity presented, if any.
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_ref()
    }

    /// Whom this side accepts.
    pub fn trust(&self) -> &Trust {
        &self.trust
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_address_only() {
        let t = Trust::default();
        assert!(t.pins().is_empty() && t.anchor_certs().is_empty() && !t.accepts_any_key());
    }

    #[test]
    fn builders_accumulate_pins_and_anchors() {
        let a = Fingerprint::of_public_key(b"a");
        let b = Fingerprint::of_public_key(b"b");
        let t = Trust::pinned([a])
            .with_pin(b)
            .with_anchor_der(vec![1, 2, 3]);
        assert_eq!(t.pins(), &[a, b]);
        assert_eq!(t.anchor_certs().len(), 1);
        assert!(Trust::unverified().accepts_any_key());
        assert!(format!("{t:?}").contains("anchors: 1"));
    }

    #[test]
    fn anchors_pem_parses_certificates_and_refuses_garbage() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key).unwrap();
        let t = Trust::anchors_pem(&ca.pem()).unwrap();
        assert_eq!(t.anchor_certs(), &[ca.der().clone()]);
        for bad in [
            "",
            "hello",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        ] {
            assert!(
                matches!(Trust::anchors_pem(bad), Err(Error::InvalidConfig(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn server_tls_requires_client_only_when_asked() {
        let tls = ServerTls::new(Identity::ephemeral());
        assert!(!tls.client_required() && tls.client_trust().is_none());
        let tls = tls.require_client(Trust::unverified());
        assert!(tls.client_required() && tls.client_trust().is_some());
    }
}
