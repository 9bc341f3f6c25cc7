//! A raw QUIC dialler for the tests that speak the wire by hand: quinn and rustls with ALPN
//! `weida/0` and nothing of weida above them (misbehaving.rs, stateful.rs).

use std::sync::Arc;

/// Accepts any server key: the fake dialler is not testing trust.
#[derive(Debug)]
pub struct AnyKey(pub Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyKey {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// TLS 1.3 for a dialler that offers `alpn`, presents no key and accepts any server key.
pub fn client_tls(alpn: &[u8]) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyKey(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    tls
}

/// A QUIC connection to `listener` from a dialler that offers `alpn`, presents no key and has
/// `transport` as its transport parameters.
pub async fn dial_with(
    listener: &weida::Listener,
    alpn: &[u8],
    transport: quinn::TransportConfig,
) -> Result<quinn::Connection, quinn::ConnectionError> {
    dial_at(super::socket_addr(listener), alpn, transport).await
}

/// [`dial_with`] to `addr`: a listener's, or a relay's in front of it.
pub async fn dial_at(
    addr: std::net::SocketAddr,
    alpn: &[u8],
    transport: quinn::TransportConfig,
) -> Result<quinn::Connection, quinn::ConnectionError> {
    let tls = client_tls(alpn);
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut client = quinn::ClientConfig::new(Arc::new(crypto));
    client.transport_config(Arc::new(transport));
    endpoint.set_default_client_config(client);
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        endpoint.connect(addr, "weida").unwrap(),
    )
    .await
    .expect("the QUIC handshake within 30 s")
}
