//! A dialling `weida` ends its connections before it exits: its peer learns at once, from the
//! CONNECTION_CLOSE, not at its idle timeout (PROTOCOL.md §3.4). The peer here is a bare QUIC
//! listener that speaks weida's handshake and nothing more, so the test sees exactly what the
//! process sent before it went.

mod common;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::PATIENCE;

/// The HELLO of a v0 listener with the default header bound, no features and core sets
/// (PROTOCOL.md §3.1.1).
const HELLO: &[u8] = &[0x01, 0x07, 0x00, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00];

/// Far below the idle timeout (30 s on both sides) and far above a close on loopback: a peer
/// that learns of the end within it learned it from the close.
const PROMPTLY: Duration = Duration::from_secs(5);

async fn guarded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {PATIENCE:?}"))
}

/// A QUIC listener with TLS 1.3 and ALPN `weida/0` (PROTOCOL.md §2.4), idle timeout 30 s.
struct Peer {
    endpoint: quinn::Endpoint,
    /// `weida://<its pin>@<its socket>/rpc`.
    address: String,
}

impl Peer {
    fn start() -> Self {
        let key = rcgen::generate_simple_self_signed(vec!["weida".to_string()]).unwrap();
        let cert = key.cert.der().clone();
        let private = rustls::pki_types::PrivatePkcs8KeyDer::from(key.key_pair.serialize_der());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], private.into())
            .unwrap();
        tls.alpn_protocols = vec![b"weida/0".to_vec()];
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport.max_idle_timeout(Some(Duration::from_secs(30).try_into().unwrap()));
        server.transport_config(Arc::new(transport));
        let endpoint = quinn::Endpoint::server(server, "127.0.0.1:0".parse().unwrap()).unwrap();
        let pin = weida::fingerprint_of_certificate(&cert).unwrap();
        let address = format!("weida://{pin}@{}/rpc", endpoint.local_addr().unwrap());
        Self { endpoint, address }
    }

    /// The next connection, once the dialler's HELLO has arrived and ours is written, and the
    /// first request on it has arrived (its first bytes); with the streams, to hold open (a
    /// reply half dropped would end, which the requester would read as a broken reply).
    async fn accept_a_request(&self) -> (quinn::Connection, Streams) {
        let conn = guarded("a connection", async {
            self.endpoint.accept().await.unwrap().await.unwrap()
        })
        .await;
        let (mut control, mut recv) = guarded("the control stream", conn.accept_bi())
            .await
            .unwrap();
        // `00`, then HELLO: type 01 and a one-byte length (a weida HELLO is below 64 bytes).
        let mut got = Vec::new();
        while got.len() < 3 || got.len() < 3 + usize::from(got[2]) {
            let chunk = guarded("the HELLO", recv.read_chunk(1 << 16, true)).await;
            got.extend_from_slice(&chunk.unwrap().expect("the dialler's HELLO").bytes);
        }
        assert_eq!(&got[..2], [0x00, 0x01], "a control stream and a HELLO");
        control.write_all(HELLO).await.unwrap();
        let (reply, mut request) = guarded("the request", conn.accept_bi()).await.unwrap();
        guarded("the request's bytes", request.read_chunk(1 << 16, true))
            .await
            .unwrap()
            .expect("the request's bytes");
        (conn, vec![(control, recv), (reply, request)])
    }
}

/// Streams a test holds open.
type Streams = Vec<(quinn::SendStream, quinn::RecvStream)>;

/// `weida req` against a peer that never answers, ended by `--timeout` (status 6) and by
/// Ctrl-C (status 130): either way the peer's connection ends with the CLI's close
/// (GOING_AWAY), well before its idle timeout.
#[tokio::test]
async fn a_dialler_that_exits_closes_its_connection_first() {
    for interrupted in [false, true] {
        let peer = Peer::start();
        let mut args = vec!["req", &peer.address, "question"];
        if !interrupted {
            args.extend(["--timeout", "0.5"]);
        }
        let mut req = tokio::process::Command::new(assert_cmd::cargo::cargo_bin("weida"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Kept until the end: the peer's streams stay open, as a replier's would.
        let (conn, _streams) = peer.accept_a_request().await;
        if interrupted {
            let pid = req.id().unwrap().to_string();
            let kill = std::process::Command::new("kill")
                .args(["-INT", &pid])
                .status();
            assert!(kill.unwrap().success());
        }
        let status = guarded("the CLI's exit", req.wait()).await.unwrap();
        let want = if interrupted { 130 } else { 6 };
        assert_eq!(status.code(), Some(want), "interrupted: {interrupted}");
        let end = tokio::time::timeout(PROMPTLY, conn.closed())
            .await
            .unwrap_or_else(|_| {
                panic!("interrupted {interrupted}: the peer learned nothing within {PROMPTLY:?}")
            });
        match end {
            quinn::ConnectionError::ApplicationClosed(c) => {
                // GOING_AWAY (PROTOCOL.md §7), as a runtime's shutdown closes.
                assert_eq!(c.error_code.into_inner(), 0x09, "{c:?}")
            }
            other => panic!("interrupted {interrupted}: {other:?}"),
        }
    }
}
