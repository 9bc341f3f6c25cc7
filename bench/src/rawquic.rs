//! Raw quinn, set up the way weida sets up its own endpoints so the comparison is fair: weida's
//! UDP socket (`weida::udp_socket`, `weida::quinn_socket`: the same buffers, the same send
//! batches), the same transport parameters (from `weida::Limits::default()`), TLS 1.3 on rustls *ring* with a self-signed rcgen certificate
//! and a verifier that accepts it.

use std::net::UdpSocket;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::BoxResult;

const ALPN: &[u8] = b"bench/0";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The transport parameters weida derives from its default `Limits` for a loopback peer.
fn transport_config(dialling: bool) -> quinn::TransportConfig {
    weida::quinn_transport_config(&weida::Limits::default(), dialling, true).expect("defaults")
}

fn endpoint(socket: UdpSocket, server: Option<quinn::ServerConfig>) -> BoxResult<quinn::Endpoint> {
    let mut config = quinn::EndpointConfig::default();
    config.max_udp_payload_size(weida::Limits::default().max_udp_payload as u16)?;
    // weida's socket, so both run with the same send batches (core/src/transport/udp.rs).
    Ok(quinn::Endpoint::new_with_abstract_socket(
        config,
        server,
        weida::quinn_socket(socket)?,
        Arc::new(quinn::TokioRuntime),
    )?)
}

/// Accepts any server certificate, checking only the handshake signature (as weida's verifier
/// does once a key is trusted).
#[derive(Debug)]
struct AcceptAny {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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

/// Both ends of one QUIC connection over loopback, plus their endpoints (kept alive by the
/// caller for as long as the connection is used).
pub(crate) struct Pair {
    pub(crate) client: quinn::Connection,
    pub(crate) server: quinn::Connection,
    pub(crate) endpoints: [quinn::Endpoint; 2],
}

impl Pair {
    pub(crate) fn close(&self) {
        self.client.close(0u32.into(), b"done");
        for ep in &self.endpoints {
            ep.close(0u32.into(), b"done");
        }
    }
}

/// A server endpoint on 127.0.0.1 and a dual-stack client endpoint (as weida binds its dialling
/// endpoint), connected.
pub(crate) async fn pair() -> BoxResult<Pair> {
    let server_ep = server()?;
    let server_addr = server_ep.local_addr()?;
    let accept = {
        let ep = server_ep.clone();
        tokio::spawn(async move { accept(&ep).await.map_err(|e| e.to_string()) })
    };
    let (client_ep, client) = dial(server_addr).await?;
    let server = accept.await??;
    Ok(Pair {
        client,
        server,
        endpoints: [server_ep, client_ep],
    })
}

/// The server endpoint on 127.0.0.1, a port of its own, with a fresh self-signed certificate.
pub(crate) fn server() -> BoxResult<quinn::Endpoint> {
    let buffer = weida::RuntimeConfig::default().udp_buffer;
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    let cert = CertificateDer::from(certified.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
    let mut server_tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)?;
    server_tls.alpn_protocols = vec![ALPN.to_vec()];
    server_tls.send_tls13_tickets = 0;
    server_tls.max_early_data_size = 0;
    let mut sc = quinn::ServerConfig::with_crypto(Arc::new(
        quinn::crypto::rustls::QuicServerConfig::try_from(server_tls)?,
    ));
    sc.transport_config(Arc::new(transport_config(false)));
    endpoint(weida::udp_socket("127.0.0.1:0".parse()?, buffer)?, Some(sc))
}

/// The next connection the server endpoint accepts, handshake done.
pub(crate) async fn accept(ep: &quinn::Endpoint) -> BoxResult<quinn::Connection> {
    let incoming = ep.accept().await.ok_or("server endpoint closed")?;
    Ok(incoming.await?)
}

/// A dual-stack client endpoint connected to `server_addr` (any certificate accepted).
pub(crate) async fn dial(
    server_addr: std::net::SocketAddr,
) -> BoxResult<(quinn::Endpoint, quinn::Connection)> {
    let buffer = weida::RuntimeConfig::default().udp_buffer;
    let provider = provider();
    let verifier = Arc::new(AcceptAny {
        algorithms: provider.signature_verification_algorithms,
    });
    let mut client_tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    client_tls.alpn_protocols = vec![ALPN.to_vec()];
    client_tls.resumption = rustls::client::Resumption::disabled();
    client_tls.enable_early_data = false;
    let mut cc = quinn::ClientConfig::new(Arc::new(
        quinn::crypto::rustls::QuicClientConfig::try_from(client_tls)?,
    ));
    cc.transport_config(Arc::new(transport_config(true)));
    let client_socket = weida::udp_socket("[::]:0".parse()?, buffer)
        .or_else(|_| weida::udp_socket(([0, 0, 0, 0], 0).into(), buffer))?;
    let client_ep = endpoint(client_socket, None)?;
    let conn = client_ep
        .connect_with(cc, server_addr, "localhost")?
        .await?;
    Ok((client_ep, conn))
}
