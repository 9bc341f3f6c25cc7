//! Peers that break the protocol (FAILURE_MODEL §3.2, §3.5; PROTOCOL §3.2, §6, §7): a fake QUIC
//! listener built on quinn and rustls, presenting a key weida pins, that answers a weida
//! dialler's handshake or request with bytes no weida runtime would send, or does not answer
//! at all. Each test checks what the weida side reports, and what it tells the fake.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use weida::{Error, Limit, Limits, LossCause, Runtime, RuntimeConfig};

/// Application close codes of PROTOCOL §7.
const NO_ERROR: u32 = 0x00;
const UNSUPPORTED: u32 = 0x03;
const LIMIT_EXCEEDED: u32 = 0x05;
const PROTOCOL_ERROR: u32 = 0x06;
const NEGOTIATION_FAILED: u32 = 0x07;
const GOING_AWAY: u32 = 0x09;

/// The HELLO a v0 listener with the default header bound and core sets answers with
/// (PROTOCOL §3.1.1): no FEATURES, so the dialler opens no lane.
const HELLO: &[u8] = &[0x01, 0x07, 0x00, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00];

/// A hang guard: every operation here ends in well under a second on a healthy machine.
const GUARD: Duration = Duration::from_secs(30);

async fn guarded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, f)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {GUARD:?}"))
}

/// A QUIC listener that speaks TLS and ALPN `weida/0` as PROTOCOL §2.4 asks, and nothing of
/// weida above it: each test scripts its side of the control and data streams by hand.
struct Fake {
    endpoint: quinn::Endpoint,
    /// `weida://<its pin>@<its socket>/rpc`.
    address: String,
}

impl Fake {
    fn start() -> Fake {
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
        let server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let endpoint = quinn::Endpoint::server(server, "127.0.0.1:0".parse().unwrap()).unwrap();
        let pin = weida::fingerprint_of_certificate(&cert).unwrap();
        let address = format!("weida://{pin}@{}/rpc", endpoint.local_addr().unwrap());
        Fake { endpoint, address }
    }

    /// The next connection, once its control stream has brought the dialler's type byte and
    /// HELLO: what a weida listener has read before it answers (PROTOCOL §3.2 steps 2 and 3).
    async fn accept(&self) -> (quinn::Connection, quinn::SendStream, quinn::RecvStream) {
        let conn = self.endpoint.accept().await.unwrap().await.unwrap();
        let (send, mut recv) = conn.accept_bi().await.unwrap();
        let mut buf = Vec::new();
        loop {
            if buf.len() > 1 {
                assert_eq!(buf[0], 0x00, "the first stream is the control stream");
                if let Some((frame, _)) = weida::wire::ControlFrame::decode(&buf[1..]).unwrap() {
                    assert!(
                        matches!(frame, weida::wire::ControlFrame::Hello(_)),
                        "{frame:?}"
                    );
                    return (conn, send, recv);
                }
            }
            let chunk = recv.read_chunk(1 << 16, true).await.unwrap();
            buf.extend_from_slice(&chunk.expect("the dialler's HELLO").bytes);
        }
    }

    /// A connection whose handshake completed: the dialler's HELLO read, ours written.
    async fn accept_hello(&self) -> (quinn::Connection, quinn::SendStream, quinn::RecvStream) {
        let (conn, mut send, recv) = self.accept().await;
        send.write_all(HELLO).await.unwrap();
        (conn, send, recv)
    }
}

/// The application code and reason the dialler closed `conn` with.
async fn closed_with(conn: &quinn::Connection) -> (u32, String) {
    match guarded("the dialler's close", conn.closed()).await {
        quinn::ConnectionError::ApplicationClosed(a) => (
            a.error_code.into_inner() as u32,
            String::from_utf8_lossy(&a.reason).into_owned(),
        ),
        other => panic!("the dialler did not close with an application code: {other:?}"),
    }
}

fn runtime() -> Runtime {
    Runtime::new(common::config(Limits::default())).unwrap()
}

/// Dials the fake with a requester while `fake_side` plays the listener; returns what
/// `connect` reported and what the fake's side returned.
async fn connect_against<T>(
    fake: &Fake,
    fake_side: impl std::future::Future<Output = T>,
) -> (weida::Result<()>, T) {
    let rt = runtime();
    let requester = rt.requester();
    guarded("connect", async {
        tokio::join!(requester.connect(&fake.address), fake_side)
    })
    .await
}

#[tokio::test]
async fn a_handshake_nobody_answers_is_timeout() {
    // Something is bound at the port and reads nothing: no ICMP error, just silence.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let rt = Runtime::new(RuntimeConfig {
        limits: Limits {
            idle_timeout: Duration::from_secs(1),
            keep_alive: None,
            ..Limits::default()
        },
        ..common::config(Limits::default())
    })
    .unwrap();
    let pin = weida::Identity::ephemeral().fingerprint();
    let address = format!("weida://{pin}@{}/rpc", silent.local_addr().unwrap());
    let e = guarded("connect", rt.requester().connect(&address))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout), "{e:?}");
}

#[tokio::test]
async fn a_first_control_frame_that_is_not_hello_is_protocol_and_closed_as_such() {
    let fake = Fake::start();
    // A well-formed GOAWAY where the HELLO belongs.
    let (r, (code, reason)) = connect_against(&fake, async {
        let (conn, mut send, _recv) = fake.accept().await;
        send.write_all(&[0x04, 0x01, 0x00]).await.unwrap();
        closed_with(&conn).await
    })
    .await;
    assert!(matches!(r, Err(Error::Protocol(_))), "{r:?}");
    assert_eq!((code, reason.as_str()), (PROTOCOL_ERROR, "expected HELLO"));

    // The end of the listener's half before any frame.
    let (r, (code, reason)) = connect_against(&fake, async {
        let (conn, mut send, _recv) = fake.accept().await;
        send.finish().unwrap();
        closed_with(&conn).await
    })
    .await;
    assert!(matches!(r, Err(Error::Protocol(_))), "{r:?}");
    assert_eq!((code, reason.as_str()), (PROTOCOL_ERROR, "expected HELLO"));
}

#[tokio::test]
async fn a_malformed_hello_is_protocol_and_another_version_is_negotiation_failed() {
    let fake = Fake::start();
    // MAX_HEADER_SIZE 63, below the minimum of 64 (PROTOCOL §3.1.1).
    let (r, (code, _)) = connect_against(&fake, async {
        let (conn, mut send, _recv) = fake.accept().await;
        send.write_all(&[0x01, 0x04, 0x00, 0x01, 0x01, 0x3f])
            .await
            .unwrap();
        closed_with(&conn).await
    })
    .await;
    assert!(matches!(r, Err(Error::Protocol(_))), "{r:?}");
    assert_eq!(code, PROTOCOL_ERROR);

    // A HELLO of version 1.
    let (r, (code, _)) = connect_against(&fake, async {
        let (conn, mut send, _recv) = fake.accept().await;
        send.write_all(&[0x01, 0x07, 0x01, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00])
            .await
            .unwrap();
        closed_with(&conn).await
    })
    .await;
    assert!(matches!(r, Err(Error::NegotiationFailed(_))), "{r:?}");
    assert_eq!(code, NEGOTIATION_FAILED);
}

#[tokio::test]
async fn a_close_frame_is_reported_with_its_code_and_reason() {
    let fake = Fake::start();
    // CLOSE with UNSUPPORTED and the reason "nope".
    let (r, (code, _)) = connect_against(&fake, async {
        let (conn, mut send, _recv) = fake.accept().await;
        let frame = [0x05, 0x05, UNSUPPORTED as u8, b'n', b'o', b'p', b'e'];
        send.write_all(&frame).await.unwrap();
        closed_with(&conn).await
    })
    .await;
    match r {
        Err(Error::Unsupported(reason)) => assert_eq!(reason, "nope"),
        other => panic!("{other:?}"),
    }
    assert_eq!(code, NO_ERROR);
}

#[tokio::test]
async fn a_listener_that_closes_during_the_handshake_is_protocol_or_connection_lost() {
    let fake = Fake::start();
    // PROTOCOL_ERROR, with its reason phrase.
    let (r, ()) = connect_against(&fake, async {
        let (conn, _send, _recv) = fake.accept().await;
        conn.close(PROTOCOL_ERROR.into(), b"not today");
    })
    .await;
    match r {
        Err(Error::Protocol(reason)) => assert_eq!(reason, "not today"),
        other => panic!("{other:?}"),
    }
    // Any other code: the connection was lost, and the peer closed it.
    let (r, ()) = connect_against(&fake, async {
        let (conn, _send, _recv) = fake.accept().await;
        conn.close(GOING_AWAY.into(), b"bye");
    })
    .await;
    assert!(
        matches!(r, Err(Error::ConnectionLost(LossCause::PeerClosed))),
        "{r:?}"
    );
}

/// A requester connected to the fake sends a request; the fake reads it whole, answers its
/// reply half with `reply` (finished when `finish`), and returns the code the requester
/// stopped the reply half with (None when it was finished and not stopped).
async fn request_against(reply: &[u8], finish: bool) -> (weida::Result<Bytes>, Option<u32>) {
    let fake = Fake::start();
    let rt = runtime();
    let requester = rt.requester();
    let fake_side = async {
        let (conn, _control_send, _control_recv) = fake.accept_hello().await;
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        let request = recv.read_to_end(1 << 16).await.unwrap();
        assert_eq!(request[0], 0x02, "an exchange");
        assert!(request.ends_with(b"ping"), "{request:?}");
        send.write_all(reply).await.unwrap();
        if finish {
            send.finish().unwrap();
            // Hold the connection until the requester is done with it.
            let _ = conn.closed().await;
            return None;
        }
        let stopped = send.stopped().await.unwrap();
        stopped.map(|c| c.into_inner() as u32)
    };
    let requester_side = async {
        requester.connect(&fake.address).await.unwrap();
        let r = requester.request("ping").await;
        if finish {
            rt.shutdown();
        }
        r
    };
    guarded("the request", async {
        tokio::join!(requester_side, fake_side)
    })
    .await
}

#[tokio::test]
async fn a_reply_header_above_max_header_size_is_limit_exceeded_and_the_reply_is_stopped() {
    // Status OK, then a header length of 20 000, above the default bound of 16 384.
    let (r, stopped) = request_against(&[0x00, 0x80, 0x00, 0x4e, 0x20], false).await;
    assert!(
        matches!(
            r,
            Err(Error::LimitExceeded {
                limit: Limit::HeaderSize,
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(stopped, Some(LIMIT_EXCEEDED));
}

#[tokio::test]
async fn a_reply_that_breaks_the_protocol_is_protocol_and_the_reply_is_stopped() {
    // A status byte that is neither OK nor ERROR.
    let (r, stopped) = request_against(&[0x07], false).await;
    assert!(matches!(r, Err(Error::Protocol(_))), "status 07: {r:?}");
    assert_eq!(stopped, Some(PROTOCOL_ERROR), "status 07");
    // Status OK and a malformed header: version 0, then a key with no length.
    let (r, stopped) = request_against(&[0x00, 0x02, 0x00, 0x01], false).await;
    assert!(matches!(r, Err(Error::Protocol(_))), "header: {r:?}");
    assert_eq!(stopped, Some(PROTOCOL_ERROR), "header");
    // An ERROR that runs past its bound of about 1 KiB, never finished.
    let mut long = vec![0x01, 0x04, 0x44, 0x00];
    long.extend_from_slice(&[b'x'; 2000]);
    let (r, stopped) = request_against(&long, false).await;
    assert!(matches!(r, Err(Error::Protocol(_))), "long ERROR: {r:?}");
    assert_eq!(stopped, Some(PROTOCOL_ERROR), "long ERROR");
    // A finished ERROR cut short: REJECTED, a message of 5 bytes, 2 of them sent.
    let (r, _) = request_against(&[0x01, 0x04, 0x05, b'a', b'b'], true).await;
    assert!(matches!(r, Err(Error::Protocol(_))), "short ERROR: {r:?}");
}

#[tokio::test]
async fn an_error_with_an_unknown_code_is_rejected_with_its_message() {
    // ERROR, code 0x30 (not assigned in v0), message "odd".
    let (r, _) = request_against(&[0x01, 0x30, 0x03, b'o', b'd', b'd'], true).await;
    match r {
        Err(Error::Rejected(message)) => assert_eq!(message, "odd"),
        other => panic!("{other:?}"),
    }
}
