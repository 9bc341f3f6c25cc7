//! TLS plumbing: rustls configurations whose verifiers implement [`Trust`], [`ServerTls`] and
//! [`ClientTls`]. transport/quic.rs wraps them for quinn; nothing here knows QUIC.
//!
//! TLS 1.3 only, the *ring* provider, ALPN `weida/0` on both sides, no session resumption (every
//! handshake shows a certificate, so a verifier always sees the key it judges) and no 0-RTT.
//!
//! The server name a dialling side passes to quinn only matters when [`Trust`] anchors decide:
//! pins (the address's or the trust's) and [`Trust::unverified`] ignore it. The caller passes the
//! host of the address, or `weida` when the host is an IP address and no anchors are in play;
//! `server_name` makes that choice.

use std::sync::{Arc, Mutex, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::error::Error;
use crate::security::fingerprint::Fingerprint;
use crate::security::identity::fingerprint_of_certificate;
use crate::security::trust::{root_store, ClientTls, ServerTls, Trust};

/// The ALPN protocol id of this version of the weida protocol.
pub(crate) const ALPN: &[u8] = b"weida/0";

/// The name a self-signed weida certificate carries; what a dial to an IP address presents as
/// server name when no anchors check it.
const DEFAULT_SERVER_NAME: &str = "weida";

/// Per dial: the key that answered, so a refused handshake can be reported as
/// [`Error::Untrusted`] with the fingerprint. quinn turns a verifier error into a string, so
/// the verifier records the fingerprint here (whether it accepts it or not).
#[derive(Clone, Default, Debug)]
pub(crate) struct Presented(Arc<Mutex<Option<Fingerprint>>>, Arc<Mutex<bool>>);

impl Presented {
    /// The fingerprint the verifier refused on this dial, if it refused one: a handshake that
    /// failed for another reason (ALPN, a network error) is not reported as Untrusted.
    pub(crate) fn rejected(&self) -> Option<Fingerprint> {
        let refused = *self.1.lock().unwrap_or_else(|p| p.into_inner());
        if refused {
            self.get()
        } else {
            None
        }
    }

    fn refuse(&self) {
        *self.1.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }

    /// The fingerprint of the last certificate the server presented on this dial, if any.
    pub(crate) fn get(&self) -> Option<Fingerprint> {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn set(&self, fp: Fingerprint) {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(fp);
    }
}

/// The one crypto provider: *ring*.
fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

fn config_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::InvalidConfig(format!("{what}: {e}"))
}

/// The server name to give quinn for a dial to `host`: the host itself when anchors will check
/// it (the address names no pin and `tls` has anchors) or when it is a DNS name, `weida` for
/// an IP address otherwise. Brackets around an IPv6 literal are removed.
pub(crate) fn server_name(host: &str, tls: &ClientTls, pin: Option<Fingerprint>) -> String {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let anchors_decide = pin.is_none() && !tls.trust().anchor_certs().is_empty();
    match ServerName::try_from(host) {
        Ok(ServerName::DnsName(_)) => host.to_string(),
        Ok(_) if anchors_decide => host.to_string(),
        _ => DEFAULT_SERVER_NAME.to_string(),
    }
}

/// The rustls configuration of one dial.
///
/// `pin` is the fingerprint the address names: when present it alone decides. Otherwise the
/// server is accepted by `tls.trust()` (pins, anchors for the server name, or any key). The
/// fingerprint that answered is recorded in `presented` either way. Invalid anchors or an
/// identity rustls cannot use are [`Error::InvalidConfig`].
pub(crate) fn client_config(
    tls: &ClientTls,
    pin: Option<Fingerprint>,
    presented: Presented,
) -> Result<rustls::ClientConfig, Error> {
    let provider = provider();
    let verifier = Arc::new(ServerVerifier::new(tls.trust(), pin, presented, &provider)?);
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| config_error("TLS 1.3 is unavailable", e))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match tls.identity() {
        Some(identity) => builder
            .with_client_auth_cert(identity.cert_chain(), identity.private_key())
            .map_err(|e| config_error("the client identity cannot be used", e))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![ALPN.to_vec()];
    config.resumption = rustls::client::Resumption::disabled();
    config.enable_early_data = false;
    Ok(config)
}

/// The rustls configuration of a binding side: presents `tls.identity()`, always asks for a
/// client certificate, requires one only after [`ServerTls::require_client`].
pub(crate) fn server_config(tls: &ServerTls) -> Result<rustls::ServerConfig, Error> {
    let provider = provider();
    let verifier = Arc::new(ClientVerifier::new(tls, &provider)?);
    let identity = tls.identity();
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| config_error("TLS 1.3 is unavailable", e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(identity.cert_chain(), identity.private_key())
        .map_err(|e| config_error("the server identity cannot be used", e))?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    // No tickets: no resumption, so every client shows its certificate to the verifier.
    config.send_tls13_tickets = 0;
    config.max_early_data_size = 0;
    Ok(config)
}

fn refused() -> rustls::Error {
    rustls::Error::InvalidCertificate(CertificateError::ApplicationVerificationFailure)
}

fn bad_encoding() -> rustls::Error {
    rustls::Error::InvalidCertificate(CertificateError::BadEncoding)
}

/// Judges the server's certificate on the dialling side.
#[derive(Debug)]
struct ServerVerifier {
    /// The address pin: decides alone when present.
    pin: Option<Fingerprint>,
    pins: Vec<Fingerprint>,
    any_key: bool,
    anchors: Option<Arc<WebPkiServerVerifier>>,
    algorithms: WebPkiSupportedAlgorithms,
    presented: Presented,
}

impl ServerVerifier {
    fn new(
        trust: &Trust,
        pin: Option<Fingerprint>,
        presented: Presented,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Self, Error> {
        let anchors = match trust.anchor_certs() {
            [] => None,
            certs => Some(
                WebPkiServerVerifier::builder_with_provider(
                    Arc::new(root_store(certs)?),
                    provider.clone(),
                )
                .build()
                .map_err(|e| config_error("the trust anchors cannot be used", e))?,
            ),
        };
        Ok(Self {
            pin,
            pins: trust.pins().to_vec(),
            any_key: trust.accepts_any_key(),
            anchors,
            algorithms: provider.signature_verification_algorithms,
            presented,
        })
    }
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let fp = fingerprint_of_certificate(end_entity).map_err(|_| bad_encoding())?;
        self.presented.set(fp);
        let accepted = match self.pin {
            Some(pin) => fp == pin,
            None => {
                self.pins.contains(&fp)
                    || self.any_key
                    || self.anchors.as_ref().is_some_and(|anchors| {
                        match anchors.verify_server_cert(
                            end_entity,
                            intermediates,
                            server_name,
                            ocsp_response,
                            now,
                        ) {
                            Ok(_) => true,
                            Err(e) => {
                                tracing::debug!(%fp, error = %e, "server chain does not validate to the anchors");
                                false
                            }
                        }
                    })
            }
        };
        if accepted {
            Ok(ServerCertVerified::assertion())
        } else {
            tracing::debug!(%fp, expected = ?self.pin, "refusing the server's key");
            self.presented.refuse();
            Err(refused())
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::PeerIncompatible::Tls13RequiredForQuic.into())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Judges a client's certificate on the binding side.
#[derive(Debug)]
struct ClientVerifier {
    mandatory: bool,
    /// Any presented key is let in.
    open: bool,
    pins: Vec<Fingerprint>,
    anchors: Option<Arc<dyn ClientCertVerifier>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientVerifier {
    fn new(tls: &ServerTls, provider: &Arc<CryptoProvider>) -> Result<Self, Error> {
        let (open, pins, anchors) = match tls.client_trust() {
            None => (true, Vec::new(), None),
            Some(trust) => {
                let anchors = match trust.anchor_certs() {
                    [] => None,
                    certs => Some(
                        WebPkiClientVerifier::builder_with_provider(
                            Arc::new(root_store(certs)?),
                            provider.clone(),
                        )
                        .build()
                        .map_err(|e| config_error("the client trust anchors cannot be used", e))?,
                    ),
                };
                let open =
                    trust.accepts_any_key() || (trust.pins().is_empty() && anchors.is_none());
                (open, trust.pins().to_vec(), anchors)
            }
        };
        Ok(Self {
            mandatory: tls.client_required(),
            open,
            pins,
            anchors,
            algorithms: provider.signature_verification_algorithms,
        })
    }
}

impl ClientCertVerifier for ClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let fp = fingerprint_of_certificate(end_entity).map_err(|_| bad_encoding())?;
        let accepted = self.open
            || self.pins.contains(&fp)
            || self.anchors.as_ref().is_some_and(|anchors| {
                match anchors.verify_client_cert(end_entity, intermediates, now) {
                    Ok(_) => true,
                    Err(e) => {
                        tracing::debug!(%fp, error = %e, "client chain does not validate to the anchors");
                        false
                    }
                }
            });
        if accepted {
            Ok(ClientCertVerified::assertion())
        } else {
            tracing::debug!(%fp, "refusing the client's key");
            Err(refused())
        }
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(rustls::PeerIncompatible::Tls13RequiredForQuic.into())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use super::*;
    use crate::security::identity::Identity;
    // Test only: the verifiers are judged over a real QUIC handshake, through the transport's
    // wrapping of these configurations.
    use crate::transport::quic::{
        client_config as quic_client_config, peer_fingerprint, server_config as quic_server_config,
    };

    const DEADLINE: Duration = Duration::from_secs(10);

    /// Both ends of one handshake, with the endpoints kept alive.
    struct Outcome {
        client: Result<quinn::Connection, String>,
        server: Result<quinn::Connection, String>,
        presented: Presented,
        _endpoints: (quinn::Endpoint, quinn::Endpoint),
    }

    impl Outcome {
        fn connected(&self) -> (&quinn::Connection, &quinn::Connection) {
            match (&self.client, &self.server) {
                (Ok(c), Ok(s)) => (c, s),
                (c, s) => panic!("expected a connection, got client {c:?}, server {s:?}"),
            }
        }

        /// The server refused the client: its side failed, and the client's connection (which
        /// may have completed its half of the handshake first) ends with an error.
        async fn assert_client_refused(&self) {
            assert!(self.server.is_err(), "the server accepted the client");
            if let Ok(conn) = &self.client {
                let reason = tokio::time::timeout(DEADLINE, conn.closed())
                    .await
                    .expect("the refused client's connection ends");
                assert!(
                    matches!(
                        reason,
                        quinn::ConnectionError::TransportError(_)
                            | quinn::ConnectionError::ConnectionClosed(_)
                    ),
                    "{reason:?}"
                );
            }
        }
    }

    async fn handshake(
        server: &ServerTls,
        client: &ClientTls,
        pin: Option<Fingerprint>,
        name: &str,
    ) -> Outcome {
        let localhost: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let server_ep =
            quinn::Endpoint::server(quic_server_config(server).unwrap(), localhost).unwrap();
        let addr = server_ep.local_addr().unwrap();
        let accepting = tokio::spawn({
            let ep = server_ep.clone();
            async move {
                let incoming = ep.accept().await.expect("the endpoint is open");
                incoming.await.map_err(|e| e.to_string())
            }
        });
        let client_ep = quinn::Endpoint::client(localhost).unwrap();
        let presented = Presented::default();
        let config = quic_client_config(client, pin, presented.clone()).unwrap();
        let connecting = client_ep.connect_with(config, addr, name).unwrap();
        let client = tokio::time::timeout(DEADLINE, connecting)
            .await
            .expect("the client's handshake ends")
            .map_err(|e| e.to_string());
        let server = tokio::time::timeout(DEADLINE, accepting)
            .await
            .expect("the server's handshake ends")
            .unwrap();
        Outcome {
            client,
            server,
            presented,
            _endpoints: (server_ep, client_ep),
        }
    }

    struct Ca {
        key: rcgen::KeyPair,
        cert: rcgen::Certificate,
    }

    impl Ca {
        fn new() -> Self {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, "weida test CA");
            let cert = params.self_signed(&key).unwrap();
            Self { key, cert }
        }

        fn trust(&self) -> Trust {
            Trust::anchors([self.cert.der().to_vec()])
        }

        fn leaf(&self, name: &str) -> Identity {
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = rcgen::CertificateParams::new(vec![name.to_string()])
                .unwrap()
                .signed_by(&key, &self.cert, &self.key)
                .unwrap();
            Identity::from_pem(&cert.pem(), &key.serialize_pem()).unwrap()
        }
    }

    #[tokio::test]
    async fn pin_match_connects_and_both_sides_report_the_other_key() {
        let server_id = Identity::ephemeral();
        let client_id = Identity::ephemeral();
        let out = handshake(
            &ServerTls::new(server_id.clone()),
            &ClientTls::new(client_id.clone(), Trust::address()),
            Some(server_id.fingerprint()),
            "weida",
        )
        .await;
        let (client, server) = out.connected();
        assert_eq!(peer_fingerprint(client), Some(server_id.fingerprint()));
        assert_eq!(peer_fingerprint(server), Some(client_id.fingerprint()));
        assert_eq!(out.presented.get(), Some(server_id.fingerprint()));
        for conn in [client, server] {
            let data = conn
                .handshake_data()
                .unwrap()
                .downcast::<quinn::crypto::rustls::HandshakeData>()
                .unwrap();
            assert_eq!(data.protocol.as_deref(), Some(ALPN));
        }
    }

    #[tokio::test]
    async fn pin_mismatch_fails_and_presented_holds_the_server_key() {
        let server_id = Identity::ephemeral();
        let other = Identity::ephemeral();
        let out = handshake(
            &ServerTls::new(server_id.clone()),
            &ClientTls::anonymous(Trust::address()),
            Some(other.fingerprint()),
            "weida",
        )
        .await;
        assert!(out.client.is_err(), "a mismatched pin connected");
        assert!(out.server.is_err());
        assert_eq!(out.presented.get(), Some(server_id.fingerprint()));
    }

    #[tokio::test]
    async fn address_pin_decides_alone_even_against_trust_that_would_accept() {
        let server_id = Identity::ephemeral();
        let other = Identity::ephemeral();
        for trust in [
            Trust::pinned([server_id.fingerprint()]),
            Trust::unverified(),
        ] {
            let out = handshake(
                &ServerTls::new(server_id.clone()),
                &ClientTls::anonymous(trust),
                Some(other.fingerprint()),
                "weida",
            )
            .await;
            assert!(out.client.is_err(), "the address pin was widened");
            assert_eq!(out.presented.get(), Some(server_id.fingerprint()));
        }
    }

    #[tokio::test]
    async fn trust_pinned_works_without_an_address_pin() {
        let server_id = Identity::ephemeral();
        let stranger = Identity::ephemeral();
        let out = handshake(
            &ServerTls::new(server_id.clone()),
            &ClientTls::anonymous(
                Trust::pinned([stranger.fingerprint()]).with_pin(server_id.fingerprint()),
            ),
            None,
            "weida",
        )
        .await;
        let (client, _) = out.connected();
        assert_eq!(peer_fingerprint(client), Some(server_id.fingerprint()));

        let out = handshake(
            &ServerTls::new(server_id.clone()),
            &ClientTls::anonymous(Trust::pinned([stranger.fingerprint()])),
            None,
            "weida",
        )
        .await;
        assert!(out.client.is_err(), "an unpinned key connected");
        assert_eq!(out.presented.get(), Some(server_id.fingerprint()));
    }

    #[tokio::test]
    async fn address_trust_without_an_address_pin_refuses_everyone() {
        let server_id = Identity::ephemeral();
        let out = handshake(
            &ServerTls::new(server_id.clone()),
            &ClientTls::anonymous(Trust::address()),
            None,
            "weida",
        )
        .await;
        assert!(out.client.is_err());
        assert_eq!(out.presented.get(), Some(server_id.fingerprint()));
    }

    #[tokio::test]
    async fn unverified_trust_accepts_any_key_and_reports_it() {
        let server_id = Identity::ephemeral();
        let out = handshake(
            &ServerTls::new(server_id.clone()),
            &ClientTls::anonymous(Trust::unverified()),
            None,
            "weida",
        )
        .await;
        let (client, _) = out.connected();
        assert_eq!(peer_fingerprint(client), Some(server_id.fingerprint()));
        assert_eq!(out.presented.get(), Some(server_id.fingerprint()));
    }

    #[tokio::test]
    async fn anchors_accept_a_ca_signed_leaf_for_its_name_and_refuse_a_self_signed_one() {
        let ca = Ca::new();
        let leaf = ca.leaf("localhost");
        let out = handshake(
            &ServerTls::new(leaf.clone()),
            &ClientTls::anonymous(ca.trust()),
            None,
            "localhost",
        )
        .await;
        let (client, _) = out.connected();
        assert_eq!(peer_fingerprint(client), Some(leaf.fingerprint()));

        // The same leaf for another name is refused.
        let out = handshake(
            &ServerTls::new(leaf.clone()),
            &ClientTls::anonymous(ca.trust()),
            None,
            "elsewhere.example",
        )
        .await;
        assert!(
            out.client.is_err(),
            "a leaf connected under a name it does not carry"
        );

        // A self-signed certificate, even for the right name, is refused and reported.
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let self_signed = Identity::from_pem(&cert.pem(), &key.serialize_pem()).unwrap();
        let out = handshake(
            &ServerTls::new(self_signed.clone()),
            &ClientTls::anonymous(ca.trust()),
            None,
            "localhost",
        )
        .await;
        assert!(
            out.client.is_err(),
            "a self-signed certificate passed the anchors"
        );
        assert_eq!(out.presented.get(), Some(self_signed.fingerprint()));
    }

    #[tokio::test]
    async fn require_client_refuses_anonymous_and_unpinned_and_accepts_pinned() {
        let server_id = Identity::ephemeral();
        let known = Identity::ephemeral();
        let unknown = Identity::ephemeral();
        let server =
            ServerTls::new(server_id.clone()).require_client(Trust::pinned([known.fingerprint()]));
        let pin = Some(server_id.fingerprint());

        let out = handshake(
            &server,
            &ClientTls::anonymous(Trust::address()),
            pin,
            "weida",
        )
        .await;
        out.assert_client_refused().await;

        let out = handshake(
            &server,
            &ClientTls::new(unknown, Trust::address()),
            pin,
            "weida",
        )
        .await;
        out.assert_client_refused().await;

        let out = handshake(
            &server,
            &ClientTls::new(known.clone(), Trust::address()),
            pin,
            "weida",
        )
        .await;
        let (_, server_side) = out.connected();
        assert_eq!(peer_fingerprint(server_side), Some(known.fingerprint()));
    }

    #[tokio::test]
    async fn require_client_with_address_trust_accepts_any_presented_key_but_not_none() {
        let server_id = Identity::ephemeral();
        let pin = Some(server_id.fingerprint());
        for trust in [Trust::address(), Trust::unverified()] {
            let server = ServerTls::new(server_id.clone()).require_client(trust);
            let out = handshake(
                &server,
                &ClientTls::anonymous(Trust::address()),
                pin,
                "weida",
            )
            .await;
            out.assert_client_refused().await;

            let client_id = Identity::ephemeral();
            let out = handshake(
                &server,
                &ClientTls::new(client_id.clone(), Trust::address()),
                pin,
                "weida",
            )
            .await;
            let (_, server_side) = out.connected();
            assert_eq!(peer_fingerprint(server_side), Some(client_id.fingerprint()));
        }
    }

    #[tokio::test]
    async fn require_client_with_anchors_accepts_a_ca_signed_client() {
        let ca = Ca::new();
        let server_id = Identity::ephemeral();
        let server = ServerTls::new(server_id.clone()).require_client(ca.trust());
        let pin = Some(server_id.fingerprint());

        let client_id = ca.leaf("client.example");
        let out = handshake(
            &server,
            &ClientTls::new(client_id.clone(), Trust::address()),
            pin,
            "weida",
        )
        .await;
        let (_, server_side) = out.connected();
        assert_eq!(peer_fingerprint(server_side), Some(client_id.fingerprint()));

        let out = handshake(
            &server,
            &ClientTls::new(Identity::ephemeral(), Trust::address()),
            pin,
            "weida",
        )
        .await;
        out.assert_client_refused().await;
    }

    #[tokio::test]
    async fn without_require_client_an_anonymous_client_connects_unidentified() {
        let server_id = Identity::ephemeral();
        let out = handshake(
            &ServerTls::new(server_id.clone()),
            &ClientTls::anonymous(Trust::address()),
            Some(server_id.fingerprint()),
            "weida",
        )
        .await;
        let (client, server) = out.connected();
        assert_eq!(peer_fingerprint(server), None);
        assert_eq!(peer_fingerprint(client), Some(server_id.fingerprint()));
    }

    #[test]
    fn invalid_anchors_are_invalid_config() {
        let tls = ClientTls::anonymous(Trust::anchors([b"not a certificate".to_vec()]));
        assert!(matches!(
            client_config(&tls, None, Presented::default()),
            Err(Error::InvalidConfig(_))
        ));
        let server = ServerTls::new(Identity::ephemeral())
            .require_client(Trust::anchors([b"not a certificate".to_vec()]));
        assert!(matches!(
            server_config(&server),
            Err(Error::InvalidConfig(_))
        ));
    }

    #[test]
    fn server_name_uses_the_host_unless_it_is_an_unchecked_ip() {
        let pinned = ClientTls::anonymous(Trust::address());
        let anchored = ClientTls::anonymous(Trust::anchors([vec![0]]));
        let pin = Some(Fingerprint::of_public_key(b"k"));
        assert_eq!(server_name("example.com", &pinned, pin), "example.com");
        assert_eq!(server_name("127.0.0.1", &pinned, pin), "weida");
        assert_eq!(server_name("[::1]", &pinned, None), "weida");
        assert_eq!(server_name("127.0.0.1", &anchored, None), "127.0.0.1");
        assert_eq!(server_name("[::1]", &anchored, None), "::1");
        assert_eq!(server_name("127.0.0.1", &anchored, pin), "weida");
    }
}
