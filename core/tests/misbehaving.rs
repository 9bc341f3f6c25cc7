//! Peers that break the protocol, or invite weida to (FAILURE_MODEL §2, §3.2, §3.5, §3.8;
//! PROTOCOL §2.4, §3.2, §3.7, §4, §6, §7, §9, §10.3), built on quinn and rustls.
//!
//! A fake QUIC listener, presenting a key weida pins, answers a weida dialler's handshake,
//! request or SUBSCRIBE with bytes no weida runtime would send, or not at all, or issues session
//! tickets, or opens copies and lanes toward a weida subscriber; a second one with the first's
//! reset key resets its connection, as a restarted server would. A fake dialler offers a weida
//! listener another ALPN id, a broken or refused handshake, streams a v0 runtime never opens
//! (a lane it did not negotiate included), requests to refuse, or a store for tickets. Each
//! test checks what the weida side reports, and what it tells the fake or sends it unasked
//! (tickets, keep-alives).

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::raw::{client_tls, dial_with};
use weida::{Error, Limit, Limits, LossCause, Runtime, RuntimeConfig};

/// Application close codes of PROTOCOL §7.
const NO_ERROR: u32 = 0x00;
const UNKNOWN_ENDPOINT: u32 = 0x02;
const REJECTED: u32 = 0x04;
const UNSUPPORTED: u32 = 0x03;
const LIMIT_EXCEEDED: u32 = 0x05;
const PROTOCOL_ERROR: u32 = 0x06;
const NEGOTIATION_FAILED: u32 = 0x07;
const GOING_AWAY: u32 = 0x09;

/// The HELLO a v0 listener with the default header bound and core sets answers with
/// (PROTOCOL §3.1.1): no FEATURES, so the dialler opens no lane.
const HELLO: &[u8] = &[0x01, 0x07, 0x00, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00];

/// [`HELLO`] with FEATURES bit 0: a peer that offers message lanes (PROTOCOL §3.1.1, §4.1).
const HELLO_WITH_LANES: &[u8] = &[
    0x01, 0x0a, 0x00, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00, 0x02, 0x01, 0x01,
];

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
    fn start() -> Self {
        Self::build(
            None,
            quinn::TransportConfig::default(),
            quinn::EndpointConfig::default(),
        )
    }

    /// The fake issues TLS session tickets (rustls's default of two per handshake), and keeps
    /// them in `sessions` if given. Its connections run with `transport`.
    fn build(
        sessions: Option<Arc<CountingServerStore>>,
        transport: quinn::TransportConfig,
        endpoint: quinn::EndpointConfig,
    ) -> Self {
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
        if let Some(sessions) = sessions {
            tls.session_storage = sessions;
        }
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        server.transport_config(Arc::new(transport));
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let runtime = Arc::new(quinn::TokioRuntime);
        let endpoint = quinn::Endpoint::new(endpoint, Some(server), socket, runtime).unwrap();
        let pin = weida::fingerprint_of_certificate(&cert).unwrap();
        let address = format!("weida://{pin}@{}/rpc", endpoint.local_addr().unwrap());
        Self { endpoint, address }
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

/// The application code and reason the weida side closed `conn` with.
async fn closed_with(conn: &quinn::Connection) -> (u32, String) {
    match guarded("the weida side's close", conn.closed()).await {
        quinn::ConnectionError::ApplicationClosed(a) => (
            a.error_code.into_inner() as u32,
            String::from_utf8_lossy(&a.reason).into_owned(),
        ),
        other => panic!("not closed with an application code: {other:?}"),
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

/// A port where something is bound and reads nothing (no ICMP error, just silence) is
/// `Unreachable` (`no_answer`) at the shorter of `connect_timeout` and the idle timeout (quinn
/// gives up a handshake at the latter), naming the address.
#[tokio::test]
async fn a_handshake_nobody_answers_is_unreachable_at_the_shorter_timeout() {
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
    let at = silent.local_addr().unwrap().to_string();
    let address = format!("weida://{pin}@{at}/rpc");
    let e = guarded("connect", rt.requester().connect(&address))
        .await
        .unwrap_err();
    match &e {
        Error::Unreachable { address, why } => {
            assert_eq!((address.as_str(), why.name()), (at.as_str(), "no_answer"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string().contains(&format!("at {at} within 1 s")),
        "{e}"
    );
}

/// A listener that completes the QUIC handshake and never sends its HELLO is `Unreachable`
/// (`no_answer`) at `connect_timeout`, and the dialler closes the connection with GOING_AWAY.
#[tokio::test]
async fn a_listener_that_never_sends_its_hello_is_unreachable_at_connect_timeout() {
    let fake = Fake::start();
    let rt = Runtime::new(common::config(Limits {
        connect_timeout: Duration::from_millis(400),
        ..Limits::default()
    }))
    .unwrap();
    let requester = rt.requester();
    let (r, (code, reason)) = guarded("connect", async {
        tokio::join!(requester.connect(&fake.address), async {
            let (conn, _send, _recv) = fake.accept().await;
            closed_with(&conn).await
        })
    })
    .await;
    match r {
        Err(Error::Unreachable { why, .. }) => assert_eq!(why.name(), "no_answer"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        (code, reason.as_str()),
        (GOING_AWAY, "no HELLO within connect_timeout")
    );
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

/// A QUIC connection to `listener` from a dialler that offers `alpn` and presents no key.
async fn dial(
    listener: &weida::Listener,
    alpn: &[u8],
) -> Result<quinn::Connection, quinn::ConnectionError> {
    dial_with(listener, alpn, quinn::TransportConfig::default()).await
}

/// A weida listener, with a replier at `/rpc`.
async fn listener() -> (Runtime, weida::Listener, weida::Replier) {
    let rt = runtime();
    let listener = rt.bind("weida://127.0.0.1:0").await.unwrap();
    let replier = listener.replier("/rpc").unwrap();
    (rt, listener, replier)
}

#[tokio::test]
async fn a_listener_refuses_another_alpn_id() {
    let (_rt, listener, _replier) = listener().await;
    match dial(&listener, b"weida/1").await {
        Err(quinn::ConnectionError::ConnectionClosed(c)) => {
            // no_application_protocol (alert 120), as a QUIC crypto error.
            assert_eq!(u64::from(c.error_code), 0x178, "{c:?}")
        }
        other => panic!("{other:?}"),
    }
    dial(&listener, b"weida/0").await.unwrap();
}

#[tokio::test]
async fn a_listener_closes_a_connection_whose_handshake_breaks_the_protocol() {
    let (_rt, listener, _replier) = listener().await;
    // Each first stream, and how the listener closes the connection (PROTOCOL §3.2 steps 2-4).
    let cases: [(&[u8], bool, u32, &str); 4] = [
        // A first stream whose type byte is not 00.
        (
            &[0x01],
            false,
            PROTOCOL_ERROR,
            "the first stream is not the control stream",
        ),
        // A GOAWAY where the HELLO belongs.
        (
            &[0x00, 0x04, 0x01, 0x00],
            false,
            PROTOCOL_ERROR,
            "expected HELLO",
        ),
        // A FIN inside the HELLO.
        (
            &[0x00, 0x01, 0x07, 0x00],
            true,
            PROTOCOL_ERROR,
            "expected HELLO",
        ),
        // A HELLO of version 1.
        (
            &[0x00, 0x01, 0x07, 0x01, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00],
            false,
            NEGOTIATION_FAILED,
            "unsupported HELLO version 1",
        ),
    ];
    for (first, finish, code, reason) in cases {
        let conn = dial(&listener, b"weida/0").await.unwrap();
        let (mut send, _recv) = conn.open_bi().await.unwrap();
        send.write_all(first).await.unwrap();
        if finish {
            send.finish().unwrap();
        }
        let (c, r) = closed_with(&conn).await;
        assert_eq!((c, r.as_str()), (code, reason), "{first:02x?}");
    }
}

/// A listener that refuses a dialler's HELLO tells it why twice, and the CLOSE frame arrives
/// first (PROTOCOL §3.2 step 4): CLOSE with NEGOTIATION_FAILED and the reason on the control
/// stream, then FIN, and only once the dialler's transport has acknowledged them the
/// CONNECTION_CLOSE with the same code and reason. A QUIC close discards stream data not yet
/// sent, so a listener that closed at once would leave the dialler only the CONNECTION_CLOSE.
#[tokio::test]
async fn a_refused_dialler_reads_the_close_frame_before_the_connection_close() {
    let (_rt, listener, _replier) = listener().await;
    let hellos: [(&[u8], &str); 2] = [
        // Offers and requires level 1 of dimension 05, which nobody reaches (§3.3).
        (
            &[
                0x01, 0x0d, 0x00, 0x01, 0x02, 0x40, 0x40, 0x03, 0x02, 0x05, 0x01, 0x04, 0x02, 0x05,
                0x01,
            ],
            "the peer requires",
        ),
        // A HELLO of version 1.
        (
            &[0x01, 0x07, 0x01, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00],
            "unsupported HELLO version 1",
        ),
    ];
    for (hello, why) in hellos {
        let conn = dial(&listener, b"weida/0").await.unwrap();
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(&[&[0x00][..], hello].concat())
            .await
            .unwrap();
        // The listener's half: the CLOSE frame, then its end.
        let half = guarded("the listener's half", recv.read_to_end(1 << 16))
            .await
            .unwrap_or_else(|e| panic!("{why}: the CLOSE frame did not arrive: {e:?}"));
        let (frame, used) = weida::wire::ControlFrame::decode(&half).unwrap().unwrap();
        assert_eq!(used, half.len(), "{why}: only the CLOSE frame");
        let weida::wire::ControlFrame::Close { code, reason } = frame else {
            panic!("{why}: {frame:?}")
        };
        assert_eq!(code.to_u64() as u32, NEGOTIATION_FAILED, "{why}");
        assert!(reason.starts_with(why), "{reason:?}");
        // What a weida dialler reports from it (§3.2 step 5).
        match code.into_error("", &reason) {
            Error::NegotiationFailed(r) => assert_eq!(r, reason),
            other => panic!("{why}: {other:?}"),
        }
        // And the connection's close says the same.
        let (c, r) = closed_with(&conn).await;
        assert_eq!((c, r.as_str()), (NEGOTIATION_FAILED, reason.as_str()));
    }
}

/// A connection to `listener` whose handshake completed: our HELLO sent (no FEATURES), the
/// listener's read. The control stream is returned to be held open.
async fn handshaken(
    listener: &weida::Listener,
) -> (quinn::Connection, quinn::SendStream, quinn::RecvStream) {
    handshaken_with(listener, quinn::TransportConfig::default()).await
}

/// [`handshaken`] with the dialler's transport parameters.
async fn handshaken_with(
    listener: &weida::Listener,
    transport: quinn::TransportConfig,
) -> (quinn::Connection, quinn::SendStream, quinn::RecvStream) {
    let conn = dial_with(listener, b"weida/0", transport).await.unwrap();
    said_hello(conn, HELLO).await
}

/// [`handshaken`], the dialler's HELLO being `hello`.
async fn handshaken_saying(
    listener: &weida::Listener,
    hello: &[u8],
) -> (quinn::Connection, quinn::SendStream, quinn::RecvStream) {
    let conn = dial(listener, b"weida/0").await.unwrap();
    said_hello(conn, hello).await
}

/// Opens the control stream of `conn` with `hello`, and reads the listener's HELLO.
async fn said_hello(
    conn: quinn::Connection,
    hello: &[u8],
) -> (quinn::Connection, quinn::SendStream, quinn::RecvStream) {
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&[&[0x00][..], hello].concat())
        .await
        .unwrap();
    let mut buf = Vec::new();
    loop {
        if let Some((frame, _)) = weida::wire::ControlFrame::decode(&buf).unwrap() {
            assert!(
                matches!(frame, weida::wire::ControlFrame::Hello(_)),
                "{frame:?}"
            );
            return (conn, send, recv);
        }
        let chunk = guarded("the listener's HELLO", recv.read_chunk(1 << 16, true)).await;
        buf.extend_from_slice(&chunk.unwrap().expect("the listener's HELLO").bytes);
    }
}

/// Opens a bidirectional stream carrying `bytes`, unfinished; returns the code the listener
/// stopped it with and the code and message of the ERROR on its reply half.
async fn refused_bi(conn: &quinn::Connection, bytes: &[u8]) -> (Option<u32>, (u32, String)) {
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(bytes).await.unwrap();
    let stopped = guarded("the STOP", send.stopped()).await.unwrap();
    let reply = guarded("the ERROR", recv.read_to_end(4096)).await.unwrap();
    assert_eq!(reply.first(), Some(&0x01), "an ERROR: {reply:02x?}");
    let (code, message) = weida::wire::reply::decode_error(&reply[1..]).unwrap();
    (
        stopped.map(|c| c.into_inner() as u32),
        (code.to_u64() as u32, message),
    )
}

/// Opens a unidirectional stream carrying `bytes`, unfinished; returns the code the listener
/// stopped it with.
async fn refused_uni(conn: &quinn::Connection, bytes: &[u8]) -> Option<u32> {
    let mut send = conn.open_uni().await.unwrap();
    send.write_all(bytes).await.unwrap();
    let stopped = guarded("the STOP", send.stopped()).await.unwrap();
    stopped.map(|c| c.into_inner() as u32)
}

/// A listener with `limits`, a replier at `/rpc` and a puller at `/jobs`.
async fn listener_with(
    limits: Limits,
) -> (Runtime, weida::Listener, weida::Replier, weida::Puller) {
    let rt = Runtime::new(common::config(limits)).unwrap();
    let listener = rt.bind("weida://127.0.0.1:0").await.unwrap();
    let replier = listener.replier("/rpc").unwrap();
    let puller = listener.puller("/jobs").unwrap();
    (rt, listener, replier, puller)
}

/// `bytes` on a new unidirectional stream, unfinished.
async fn opened_uni(conn: &quinn::Connection, bytes: &[u8]) -> quinn::SendStream {
    let mut send = conn.open_uni().await.unwrap();
    send.write_all(bytes).await.unwrap();
    send
}

/// A whole transfer to `/jobs` on `conn`, and the puller's receipt of it.
async fn transfer_arrives(conn: &quinn::Connection, puller: &weida::Puller, body: &[u8]) {
    let mut bytes = vec![0x01];
    weida::wire::Header::for_path("/jobs").encode(&mut bytes);
    bytes.extend_from_slice(body);
    let mut send = opened_uni(conn, &bytes).await;
    send.finish().unwrap();
    let m = guarded("a whole transfer", puller.recv()).await.unwrap();
    assert_eq!(&m.body[..], body);
}

/// A raw peer's streams that do not say what they are by `header_timeout` are stopped with
/// LIMIT_EXCEEDED, a request's with an ERROR of that code too (PROTOCOL §9.5). Its connection
/// carried other traffic meanwhile, so it goes on.
#[tokio::test]
async fn a_stream_that_never_sends_its_header_is_stopped_at_header_timeout() {
    // Long enough that the whole transfer below certainly comes within it.
    let limits = Limits {
        header_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let (_rt, listener, _replier, puller) = listener_with(limits).await;
    let (conn, _control_send, _control_recv) = handshaken(&listener).await;
    // A type byte and no header; a header cut short (it says 10 bytes, gives 1); a request
    // header cut short.
    let mut alone = opened_uni(&conn, &[0x01]).await;
    let mut short = opened_uni(&conn, &[0x01, 0x0a, 0x01]).await;
    let (mut request, mut reply) = conn.open_bi().await.unwrap();
    request.write_all(&[0x02, 0x0a]).await.unwrap();
    // Traffic on the connection while they wait: it is not only stalled streams.
    transfer_arrives(&conn, &puller, b"meanwhile").await;
    for send in [&mut alone, &mut short, &mut request] {
        let stopped = guarded("the STOP", send.stopped()).await.unwrap();
        assert_eq!(stopped.map(|c| c.into_inner() as u32), Some(LIMIT_EXCEEDED));
    }
    let answer = guarded("the ERROR", reply.read_to_end(4096)).await.unwrap();
    let (code, message) = weida::wire::reply::decode_error(&answer[1..]).unwrap();
    assert_eq!(code.to_u64() as u32, LIMIT_EXCEEDED, "{message}");
    assert!(message.contains("header_timeout"), "{message}");
    // The connection goes on.
    transfer_arrives(&conn, &puller, b"after").await;
}

/// A raw peer's DATA header whose length prefix is above the listener's `max_header_size`
/// (16 KiB), one byte over or at the varint's largest value, is refused at its length prefix,
/// before any of it is read or buffered: the transfer is stopped with LIMIT_EXCEEDED, the
/// request too and answered with an ERROR of that code naming the bound (PROTOCOL §5, §9.5).
/// The connection goes on, and a well-formed transfer on it arrives.
#[tokio::test]
async fn headers_just_over_and_far_over_max_header_size_are_refused_at_their_length() {
    let (_rt, listener, _replier, puller) = listener_with(Limits::default()).await;
    let (conn, _control_send, _control_recv) = handshaken(&listener).await;
    let max = Limits::default().max_header_size;
    for len in [max + 1, weida::wire::varint::MAX] {
        let mut prefix = Vec::new();
        weida::wire::varint::put(&mut prefix, len);
        // The header's first bytes follow, as a peer would send them.
        let head = [&prefix[..], &[0x00; 64]].concat();
        let transfer = [&[0x01][..], &head].concat();
        assert_eq!(
            refused_uni(&conn, &transfer).await,
            Some(LIMIT_EXCEEDED),
            "{len}"
        );
        let request = [&[0x02][..], &head].concat();
        let (stopped, (code, message)) = refused_bi(&conn, &request).await;
        assert_eq!(stopped, Some(LIMIT_EXCEEDED), "{len}");
        assert_eq!(code, LIMIT_EXCEEDED, "{message}");
        assert!(message.contains("header"), "{message}");
        transfer_arrives(&conn, &puller, format!("after {len}").as_bytes()).await;
    }
}

/// A connection that carries nothing but keep-alives and streams stalled past a deadline is
/// closed with LIMIT_EXCEEDED, not only its streams: at `header_timeout` for a stream that
/// never said what it is, at `body_idle_timeout` for one stalled mid-body (PROTOCOL §9.5).
#[tokio::test]
async fn a_connection_with_only_stalled_streams_is_closed_at_the_deadline() {
    let limits = Limits {
        header_timeout: Duration::from_millis(300),
        body_idle_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let (_rt, listener, _replier, puller) = listener_with(limits).await;
    let pinging = || {
        let mut t = quinn::TransportConfig::default();
        t.keep_alive_interval(Some(Duration::from_millis(50)));
        t
    };
    // A type byte and nothing more.
    let (conn, _cs, _cr) = handshaken_with(&listener, pinging()).await;
    let _held = opened_uni(&conn, &[0x01]).await;
    let (code, reason) = closed_with(&conn).await;
    assert_eq!(code, LIMIT_EXCEEDED, "{reason}");
    assert!(reason.starts_with("header_timeout"), "{reason}");
    // A header and half a body.
    let (conn, _cs, _cr) = handshaken_with(&listener, pinging()).await;
    let mut bytes = vec![0x01];
    weida::wire::Header::for_path("/jobs").encode(&mut bytes);
    bytes.extend_from_slice(b"half a body");
    let _held = opened_uni(&conn, &bytes).await;
    let e = guarded("the stalled receive", puller.recv())
        .await
        .unwrap_err();
    assert_eq!(e.code(), weida::ErrorCode::LimitExceeded, "{e:?}");
    let (code, reason) = closed_with(&conn).await;
    assert_eq!(code, LIMIT_EXCEEDED, "{reason}");
    assert!(reason.starts_with("body_idle_timeout"), "{reason}");
}

/// A raw peer that opens a transfer to a puller, sends its header and half a body, and stops
/// (keeping its connection alive) delays nothing another peer sends to that puller
/// (PATTERNS §1.12); its own message arrives once it sends the rest.
#[tokio::test]
async fn a_raw_peers_stalled_transfer_does_not_delay_another_peers_messages() {
    let (_rt, listener, _replier, puller) = listener_with_puller().await;
    let (conn, _control_send, _control_recv) = handshaken(&listener).await;
    let mut held = conn.open_uni().await.unwrap();
    let mut bytes = vec![0x01];
    weida::wire::Header::for_path("/jobs").encode(&mut bytes);
    bytes.extend_from_slice(b"held, ");
    held.write_all(&bytes).await.unwrap();
    let other = runtime();
    let pusher = other.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    for i in 0..5u8 {
        pusher
            .send(vec![i; 100_000 * usize::from(i % 2) + 1])
            .await
            .unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..5 {
        got.push(
            guarded("another peer's message", puller.recv())
                .await
                .unwrap()
                .body[0],
        );
    }
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3, 4]);
    held.write_all(b"then done").await.unwrap();
    held.finish().unwrap();
    let m = guarded("the held message", puller.recv()).await.unwrap();
    assert_eq!(&m.body[..], b"held, then done");
}

/// [`listener`] with a puller at `/jobs` too, and the default deadlines.
async fn listener_with_puller() -> (Runtime, weida::Listener, weida::Replier, weida::Puller) {
    let (rt, listener, replier) = listener().await;
    let puller = listener.puller("/jobs").unwrap();
    (rt, listener, replier, puller)
}

/// Exchanges whose header a listener refuses (PROTOCOL §9.1 steps 3 to 5), with the code.
const REFUSED_HEADERS: [(&[u8], u32); 4] = [
    // A header length of 20 000, above the default bound of 16 384.
    (&[0x02, 0x80, 0x00, 0x4e, 0x20], LIMIT_EXCEEDED),
    // Header version 1.
    (&[0x02, 0x01, 0x01], UNSUPPORTED),
    // Version 0, then a key with no length.
    (&[0x02, 0x02, 0x00, 0x01], PROTOCOL_ERROR),
    // No PATH.
    (&[0x02, 0x01, 0x00], PROTOCOL_ERROR),
];

#[tokio::test]
async fn a_listener_refuses_the_streams_a_v0_dialler_never_opens_and_the_connection_goes_on() {
    let (_rt, listener, _replier) = listener().await;
    let (conn, _control_send, _control_recv) = handshaken(&listener).await;
    // Stream types (PROTOCOL §4): an unassigned type is refused with UNSUPPORTED, and a
    // second control stream with PROTOCOL_ERROR, with an ERROR on a bidirectional stream.
    let cases = [
        (0x09, UNSUPPORTED, "unsupported stream type"),
        (0x00, PROTOCOL_ERROR, "a second control stream"),
    ];
    for (ty, code, message) in cases {
        let (stopped, error) = refused_bi(&conn, &[ty]).await;
        assert_eq!(stopped, Some(code), "bidirectional {ty:02x}");
        assert_eq!(error, (code, message.to_string()), "bidirectional {ty:02x}");
    }
    // A control stream, an unassigned type and an exchange on a unidirectional stream.
    assert_eq!(refused_uni(&conn, &[0x00]).await, Some(PROTOCOL_ERROR));
    assert_eq!(refused_uni(&conn, &[0x09]).await, Some(UNSUPPORTED));
    assert_eq!(refused_uni(&conn, &[0x02]).await, Some(PROTOCOL_ERROR));
    // A transfer on a bidirectional stream (PROTOCOL §9.1 step 2).
    let (stopped, (code, _)) = refused_bi(&conn, &[0x01]).await;
    assert_eq!((stopped, code), (Some(PROTOCOL_ERROR), PROTOCOL_ERROR));
    // Exchanges whose header is refused (PROTOCOL §9.1 steps 3 to 5).
    for (bytes, want) in REFUSED_HEADERS {
        let (stopped, (code, message)) = refused_bi(&conn, bytes).await;
        assert_eq!(
            (stopped, code),
            (Some(want), want),
            "{bytes:02x?}: {message}"
        );
    }
    // A refusal refuses the stream, never the connection.
    assert!(conn.close_reason().is_none(), "{:?}", conn.close_reason());
}

/// A lane (stream type 03) is a feature: in use only when both HELLOs set FEATURES bit 0
/// (PROTOCOL §3.1.1, §4, §9.1 step 1). A dialler whose HELLO did not offer lanes has its lane
/// refused as an unassigned type is, with UNSUPPORTED, and nothing on it is delivered; the
/// connection goes on. The same lane from a dialler that offered lanes is delivered. On QUIC
/// only: no fake dialler exists in process, and an AF_UNIX data connection is not tied to its
/// session's HELLO (PROTOCOL Open point 3).
#[tokio::test]
async fn a_lane_not_negotiated_is_refused() {
    let rt = Runtime::new(RuntimeConfig {
        lane_max_message: 16 * 1024,
        ..common::config(Limits::default())
    })
    .unwrap();
    let listener = rt.bind("weida://127.0.0.1:0").await.unwrap();
    let puller = listener.puller("/jobs").unwrap();
    let path = b"/jobs";
    // 03, a head naming /jobs, then one frame: a header with no field and the body "hello".
    let lane = [
        &[0x03, 0x08, 0x00, 0x01, 0x05][..],
        path,
        &[0x01, 0x00, 0x05],
        b"hello",
    ]
    .concat();

    // The fake's HELLO sets no FEATURES.
    let (conn, _control_send, _control_recv) = handshaken(&listener).await;
    assert_eq!(refused_uni(&conn, &lane).await, Some(UNSUPPORTED));
    // A transfer on the same connection after it is delivered, and is all that is.
    let mut t = conn.open_uni().await.unwrap();
    let transfer = [&[0x01, 0x08, 0x00, 0x01, 0x05][..], path, b"after"].concat();
    t.write_all(&transfer).await.unwrap();
    t.finish().unwrap();
    let m = guarded("the transfer", puller.recv()).await.unwrap();
    assert_eq!(&m.body[..], b"after");
    assert!(puller.try_recv().is_none(), "the refused lane delivered");
    assert!(conn.close_reason().is_none(), "{:?}", conn.close_reason());

    // A HELLO with FEATURES bit 0 (`02 01 01`): the same bytes are a lane.
    let (conn, _control_send, _control_recv) = handshaken_saying(&listener, HELLO_WITH_LANES).await;
    let mut s = conn.open_uni().await.unwrap();
    s.write_all(&lane).await.unwrap();
    s.finish().unwrap();
    let m = guarded("the lane's message", puller.recv()).await.unwrap();
    assert_eq!(&m.body[..], b"hello");
}

#[tokio::test]
async fn a_subscribe_whose_connection_ends_before_the_answer_is_connection_lost() {
    let fake = Fake::start();
    let rt = runtime();
    let subscriber = rt.subscriber();
    let fake_side = async {
        let (conn, _send, mut recv) = fake.accept_hello().await;
        // The SUBSCRIBE arrives, and the publisher goes away instead of answering.
        let mut buf = Vec::new();
        let frame = loop {
            if let Some((frame, _)) = weida::wire::ControlFrame::decode(&buf).unwrap() {
                break frame;
            }
            let chunk = recv.read_chunk(1 << 16, true).await.unwrap();
            buf.extend_from_slice(&chunk.expect("a SUBSCRIBE").bytes);
        };
        match frame {
            weida::wire::ControlFrame::Subscribe(s) => assert_eq!(s.filter, "prices.#"),
            other => panic!("{other:?}"),
        }
        conn.close(GOING_AWAY.into(), b"bye");
    };
    let subscriber_side = async {
        subscriber.connect(&fake.address).await.unwrap();
        subscriber.subscribe("prices.#").await
    };
    let (r, ()) = guarded("the subscribe", async {
        tokio::join!(subscriber_side, fake_side)
    })
    .await;
    assert!(
        matches!(r, Err(Error::ConnectionLost(LossCause::PeerClosed))),
        "{r:?}"
    );
}

/// The next control frame on `recv`, `buf` keeping what came after it.
async fn next_frame(recv: &mut quinn::RecvStream, buf: &mut Vec<u8>) -> weida::wire::ControlFrame {
    loop {
        if let Some((frame, used)) = weida::wire::ControlFrame::decode(buf).unwrap() {
            buf.drain(..used);
            return frame;
        }
        let chunk = guarded("a control frame", recv.read_chunk(1 << 16, true)).await;
        buf.extend_from_slice(&chunk.unwrap().expect("a control frame").bytes);
    }
}

/// A DATA header (PROTOCOL §5) with `path` and `topic`, each if given.
fn header(path: Option<&str>, topic: Option<&str>) -> Vec<u8> {
    weida::wire::Header {
        path: path.map(Into::into),
        topic: topic.map(Into::into),
        ..Default::default()
    }
    .to_bytes()
}

/// A lane (PROTOCOL §4.1): `03`, a head naming `path`, then one frame with `topic` and `body`.
fn lane(path: Option<&str>, topic: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut out = vec![0x03];
    out.extend_from_slice(&header(path, None));
    let frame = weida::wire::Header {
        topic: topic.map(Into::into),
        ..Default::default()
    };
    weida::wire::lane_frame::encode_frame_head(&frame, body.len(), &mut out);
    out.extend_from_slice(body);
    out
}

/// What a subscriber does with each stream a publisher opens toward it (PROTOCOL §3.7): a
/// copy (`01`) whose PATH is absent or not its publisher's is stopped with UNKNOWN_ENDPOINT, one
/// without TOPIC with PROTOCOL_ERROR; a lane (`03`) is taken only when both HELLOs set FEATURES
/// bit 0, and then its head must name the publisher's path (UNKNOWN_ENDPOINT) and each frame
/// carry TOPIC (PROTOCOL_ERROR); any other type, a lane where lanes are not in use included, is
/// stopped with UNSUPPORTED. Nothing refused is delivered; what is well-formed is. QUIC, a fake
/// publisher (its path is `/rpc`).
#[tokio::test]
async fn a_subscriber_takes_only_the_copies_and_lanes_its_connection_allows() {
    let copy = |path: Option<&str>, topic: Option<&str>, body: &[u8]| {
        [&[0x01][..], &header(path, topic), body].concat()
    };
    for lanes in [false, true] {
        let fake = Fake::start();
        let rt = Runtime::new(RuntimeConfig {
            lane_max_message: 16 * 1024,
            ..common::config(Limits::default())
        })
        .unwrap();
        let subscriber = rt.subscriber();
        let fake_side = async {
            let (conn, mut send, mut recv) = fake.accept().await;
            let hello = if lanes { HELLO_WITH_LANES } else { HELLO };
            send.write_all(hello).await.unwrap();
            let request = match next_frame(&mut recv, &mut Vec::new()).await {
                weida::wire::ControlFrame::Subscribe(s) => s.request,
                other => panic!("{other:?}"),
            };
            let mut answer = Vec::new();
            weida::wire::ControlFrame::Answer {
                request,
                code: weida::wire::Code::NoError,
                reason: String::new(),
            }
            .encode(&mut answer);
            send.write_all(&answer).await.unwrap();
            (conn, send, recv)
        };
        let subscriber_side = async {
            subscriber.connect(&fake.address).await?;
            subscriber.subscribe("t").await
        };
        let (subscribed, (conn, _send, _recv)) = guarded("the subscribe", async {
            tokio::join!(subscriber_side, fake_side)
        })
        .await;
        subscribed.unwrap();
        let mut refused: Vec<(Vec<u8>, u32)> = vec![
            (vec![0x02], UNSUPPORTED),
            (vec![0x09], UNSUPPORTED),
            (copy(Some("/other"), Some("t"), b"x"), UNKNOWN_ENDPOINT),
            (copy(None, Some("t"), b"x"), UNKNOWN_ENDPOINT),
            (copy(Some("/rpc"), None, b"x"), PROTOCOL_ERROR),
        ];
        if lanes {
            refused.push((lane(Some("/other"), Some("t"), b"x"), UNKNOWN_ENDPOINT));
            refused.push((lane(Some("/rpc"), None, b"x"), PROTOCOL_ERROR));
        } else {
            refused.push((lane(Some("/rpc"), Some("t"), b"x"), UNSUPPORTED));
        }
        for (bytes, code) in refused {
            assert_eq!(
                refused_uni(&conn, &bytes).await,
                Some(code),
                "lanes {lanes}: {bytes:02x?}"
            );
        }
        // What is well-formed is delivered, and it is all that is.
        let (good, body): (Vec<u8>, &[u8]) = match lanes {
            true => (lane(Some("/rpc"), Some("t"), b"on a lane"), b"on a lane"),
            false => (copy(Some("/rpc"), Some("t"), b"a copy"), b"a copy"),
        };
        let mut s = conn.open_uni().await.unwrap();
        s.write_all(&good).await.unwrap();
        s.finish().unwrap();
        let m = guarded("the copy", subscriber.recv()).await.unwrap();
        assert_eq!(&m.body[..], body, "lanes {lanes}");
        assert!(
            subscriber.try_recv().is_none(),
            "lanes {lanes}: a refused copy arrived"
        );
    }
}

/// A replier that refuses an exchange sends the ERROR on the reply half; on the request half it
/// sends a STOP only while that half has not ended at its side (PROTOCOL §9.2, §9.3): none once
/// it has read the request's FIN (the fake's stream ends acknowledged, never stopped), and
/// STOP with NO_ERROR, not the ERROR's code, when it refuses before the end (it drops the
/// unread request, §6.4). QUIC, a fake dialler.
#[tokio::test]
async fn a_replier_that_refuses_after_the_request_fin_sends_the_error_alone() {
    let (_rt, listener, replier) = listener().await;
    let (conn, _control_send, _control_recv) = handshaken(&listener).await;
    let request = [&[0x02][..], &header(Some("/rpc"), None), b"question"].concat();
    for read_to_fin in [true, false] {
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(&request).await.unwrap();
        if read_to_fin {
            send.finish().unwrap();
        }
        let mut exchange = guarded("the exchange", replier.accept()).await.unwrap();
        if read_to_fin {
            let body = guarded("the request", exchange.take_body()).await.unwrap();
            assert_eq!(&body[..], b"question");
        }
        exchange.reject("no").await.unwrap();
        // ERROR, REJECTED, "no", then FIN.
        let reply = guarded("the ERROR", recv.read_to_end(4096)).await.unwrap();
        assert_eq!(
            reply,
            [0x01, 0x04, 0x02, b'n', b'o'],
            "read to FIN: {read_to_fin}"
        );
        let stopped = guarded("the request half's end", send.stopped())
            .await
            .unwrap();
        let want = if read_to_fin { None } else { Some(NO_ERROR) };
        assert_eq!(
            stopped.map(|c| c.into_inner() as u32),
            want,
            "read to FIN: {read_to_fin}"
        );
    }
}

/// A client session store that counts the TLS 1.3 tickets it is given.
#[derive(Debug)]
struct CountingClientStore {
    inner: rustls::client::ClientSessionMemoryCache,
    tickets: std::sync::atomic::AtomicUsize,
}

impl rustls::client::ClientSessionStore for CountingClientStore {
    fn set_kx_hint(&self, name: rustls::pki_types::ServerName<'static>, group: rustls::NamedGroup) {
        self.inner.set_kx_hint(name, group)
    }

    fn kx_hint(&self, name: &rustls::pki_types::ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.inner.kx_hint(name)
    }

    fn set_tls12_session(
        &self,
        name: rustls::pki_types::ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.inner.set_tls12_session(name, value)
    }

    fn tls12_session(
        &self,
        name: &rustls::pki_types::ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.inner.tls12_session(name)
    }

    fn remove_tls12_session(&self, name: &rustls::pki_types::ServerName<'static>) {
        self.inner.remove_tls12_session(name)
    }

    fn insert_tls13_ticket(
        &self,
        name: rustls::pki_types::ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.tickets
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.insert_tls13_ticket(name, value)
    }

    fn take_tls13_ticket(
        &self,
        name: &rustls::pki_types::ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        self.inner.take_tls13_ticket(name)
    }
}

#[tokio::test]
async fn a_listener_issues_no_session_ticket() {
    let (_rt, listener, _replier) = listener().await;
    let store = Arc::new(CountingClientStore {
        inner: rustls::client::ClientSessionMemoryCache::new(16),
        tickets: Default::default(),
    });
    let mut tls = client_tls(b"weida/0");
    tls.resumption = rustls::client::Resumption::store(store.clone());
    tls.enable_early_data = true;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let addr = common::socket_addr(&listener);
    for _ in 0..2 {
        let connecting = endpoint.connect(addr, "weida").unwrap();
        // No ticket, so no early data to offer.
        let Err(connecting) = connecting.into_0rtt() else {
            panic!("a 0-RTT connection was possible")
        };
        let conn = guarded("the QUIC handshake", connecting).await.unwrap();
        // A whole HELLO exchange: what the listener sent after its handshake has arrived.
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        let mut hello = vec![0x00];
        hello.extend_from_slice(HELLO);
        send.write_all(&hello).await.unwrap();
        let mut buf = Vec::new();
        while weida::wire::ControlFrame::decode(&buf).unwrap().is_none() {
            let chunk = guarded("the listener's HELLO", recv.read_chunk(1 << 16, true)).await;
            buf.extend_from_slice(&chunk.unwrap().expect("the listener's HELLO").bytes);
        }
    }
    assert_eq!(
        store.tickets.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "tickets issued"
    );
}

/// A server session store that counts the sessions stored (tickets issued) and looked up (a
/// client offering one to resume).
#[derive(Debug)]
struct CountingServerStore {
    inner: Arc<rustls::server::ServerSessionMemoryCache>,
    stored: std::sync::atomic::AtomicUsize,
    looked_up: std::sync::atomic::AtomicUsize,
}

impl rustls::server::StoresServerSessions for CountingServerStore {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.stored
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.put(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.looked_up
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.get(key)
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.looked_up
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.take(key)
    }

    fn can_cache(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn a_dialler_never_resumes_a_session() {
    let sessions = Arc::new(CountingServerStore {
        inner: rustls::server::ServerSessionMemoryCache::new(16),
        stored: Default::default(),
        looked_up: Default::default(),
    });
    let fake = Fake::build(
        Some(sessions.clone()),
        quinn::TransportConfig::default(),
        quinn::EndpointConfig::default(),
    );
    let rt = runtime();
    // Two addresses on the one listener: two connections, each with its own handshake.
    for path in ["/rpc", "/rpc2"] {
        let address = fake.address.replace("/rpc", path);
        let requester = rt.requester();
        let (r, _conn) = guarded("connect", async {
            tokio::join!(requester.connect(&address), fake.accept_hello())
        })
        .await;
        r.unwrap();
    }
    use std::sync::atomic::Ordering::Relaxed;
    assert!(sessions.stored.load(Relaxed) > 0, "the fake issued tickets");
    assert_eq!(sessions.looked_up.load(Relaxed), 0, "a session was offered");
}

/// Keep-alives every 100 ms, and the default idle timeout of 30 s.
fn keeping_alive() -> RuntimeConfig {
    RuntimeConfig {
        limits: Limits {
            keep_alive: Some(Duration::from_millis(100)),
            ..Limits::default()
        },
        ..common::config(Limits::default())
    }
}

/// Transport parameters that send no keep-alive and give up after 1 s of silence.
fn silent_after_a_second() -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(Duration::from_secs(1).try_into().unwrap()));
    t.keep_alive_interval(None);
    t
}

#[tokio::test]
async fn only_the_dialler_sends_keep_alives() {
    // A weida dialler keeps a connection to a quiet listener alive with PINGs.
    let fake = Fake::build(
        None,
        silent_after_a_second(),
        quinn::EndpointConfig::default(),
    );
    let rt = Runtime::new(keeping_alive()).unwrap();
    let requester = rt.requester();
    let (r, (conn, _send, _recv)) = guarded("connect", async {
        tokio::join!(requester.connect(&fake.address), fake.accept_hello())
    })
    .await;
    r.unwrap();
    guarded("three PINGs", async {
        while conn.stats().frame_rx.ping < 3 {
            if let Some(e) = conn.close_reason() {
                panic!("the connection ended before three PINGs: {e:?}");
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(conn.close_reason().is_none(), "{:?}", conn.close_reason());

    // A weida listener sends none, whatever its own keep_alive says: a dialler that sends none
    // either sees its connection idle out, with no PING received.
    let rt = Runtime::new(keeping_alive()).unwrap();
    let listener = rt.bind("weida://127.0.0.1:0").await.unwrap();
    let _replier = listener.replier("/rpc").unwrap();
    let (conn, _send, _recv) = handshaken_with(&listener, silent_after_a_second()).await;
    let e = guarded("the idle timeout", conn.closed()).await;
    assert!(matches!(e, quinn::ConnectionError::TimedOut), "{e:?}");
    assert_eq!(conn.stats().frame_rx.ping, 0);
}

/// A stateless-reset key shared by two fake endpoints: either can reset the other's
/// connections. A keyed SHA-256, enough for a test.
struct SharedResetKey([u8; 32]);

impl quinn::crypto::HmacKey for SharedResetKey {
    fn sign(&self, data: &[u8], out: &mut [u8]) {
        use sha2::Digest;
        let digest = sha2::Sha256::new()
            .chain_update(self.0)
            .chain_update(data)
            .finalize();
        out.copy_from_slice(&digest[..out.len()]);
    }

    fn signature_len(&self) -> usize {
        32
    }

    fn verify(&self, data: &[u8], signature: &[u8]) -> Result<(), quinn::crypto::CryptoError> {
        let mut expected = [0u8; 32];
        self.sign(data, &mut expected);
        match expected[..] == *signature {
            true => Ok(()),
            false => Err(quinn::crypto::CryptoError),
        }
    }
}

/// Random 8-byte connection ids that any endpoint accepts as its own (quinn's default ids
/// carry a keyed hash, and an endpoint drops a packet whose id another key made).
struct PlainCids;

impl quinn::ConnectionIdGenerator for PlainCids {
    fn generate_cid(&mut self) -> quinn::ConnectionId {
        let bytes: [u8; 8] = std::array::from_fn(|_| rand::random());
        quinn::ConnectionId::new(&bytes)
    }

    fn cid_len(&self) -> usize {
        8
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// A UDP relay whose server side can be switched to another address.
struct SwitchRelay {
    addr: std::net::SocketAddr,
    server: Arc<std::sync::Mutex<std::net::SocketAddr>>,
    task: tokio::task::JoinHandle<()>,
}

impl SwitchRelay {
    async fn start(server: std::net::SocketAddr) -> Self {
        let front = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let back = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = front.local_addr().unwrap();
        let server = Arc::new(std::sync::Mutex::new(server));
        let to = server.clone();
        let task = tokio::spawn(async move {
            let mut client = None;
            let (mut a, mut b) = (vec![0u8; 65536], vec![0u8; 65536]);
            loop {
                tokio::select! {
                    r = front.recv_from(&mut a) => {
                        let Ok((n, from)) = r else { break };
                        client = Some(from);
                        let target = *to.lock().unwrap();
                        let _ = back.send_to(&a[..n], target).await;
                    }
                    r = back.recv_from(&mut b) => {
                        let Ok((n, _)) = r else { break };
                        if let Some(c) = client {
                            let _ = front.send_to(&b[..n], c).await;
                        }
                    }
                }
            }
        });
        Self { addr, server, task }
    }

    fn switch_to(&self, server: std::net::SocketAddr) {
        *self.server.lock().unwrap() = server;
    }
}

impl Drop for SwitchRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn a_stateless_reset_is_connection_lost_with_cause_reset() {
    // Two fake listeners that share a reset key, as one server that restarted would: the
    // second knows nothing of the first's connections, and resets them.
    let key: Arc<dyn quinn::crypto::HmacKey> = Arc::new(SharedResetKey([7; 32]));
    let endpoint = || {
        let mut c = quinn::EndpointConfig::new(key.clone());
        c.cid_generator(|| Box::new(PlainCids));
        c
    };
    let first = Fake::build(None, quinn::TransportConfig::default(), endpoint());
    let second = Fake::build(None, quinn::TransportConfig::default(), endpoint());
    let relay = SwitchRelay::start(first.endpoint.local_addr().unwrap()).await;
    let at = first.endpoint.local_addr().unwrap().to_string();
    let address = first.address.replace(&at, &relay.addr.to_string());
    let rt = runtime();
    let requester = rt.requester();
    let (r, _first_side) = guarded("connect", async {
        tokio::join!(requester.connect(&address), first.accept_hello())
    })
    .await;
    r.unwrap();
    relay.switch_to(second.endpoint.local_addr().unwrap());
    // A request not finished: the loss is ConnectionLost, with the reset as its cause.
    let (mut request, _reply) = requester.open(weida::Metadata::new()).await.unwrap();
    request.write(vec![0u8; 1000]).await.unwrap();
    let e = guarded("the reset", request.stopped()).await;
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::Reset)),
        "{e:?}"
    );
}

use common::local_listener;

/// A local process that connects to a weida listener's AF_UNIX socket and says nothing is
/// hung up on once the listener's idle timeout has passed, as a silent QUIC opening is
/// (PROTOCOL §3.2 step 2). Connections that speak at once are every other AF_UNIX test.
#[tokio::test]
async fn a_silent_local_connection_is_closed_at_the_idle_timeout() {
    use tokio::io::AsyncReadExt;
    let limits = Limits {
        idle_timeout: Duration::from_millis(300),
        keep_alive: None,
        ..Limits::default()
    };
    let (_server, listener, path) = local_listener(limits).await;
    let _puller = listener.puller("/jobs").unwrap();
    let mut silent = tokio::net::UnixStream::connect(&path).await.unwrap();
    // The listener stops the stream it never understood (a STOP chunk) and hangs up: EOF.
    let mut got = Vec::new();
    guarded("the hang-up", silent.read_to_end(&mut got))
        .await
        .unwrap();
    assert!(got.len() < 16, "nothing but a STOP chunk: {got:?}");
}

/// A QUIC dialler that completes the handshake and opens nothing, keeping the connection alive
/// with PINGs, is closed with PROTOCOL_ERROR `no control stream` once the listener's idle
/// timeout has passed since it accepted the connection (PROTOCOL §3.2 step 2).
#[tokio::test]
async fn a_quic_dialler_that_opens_nothing_is_closed_at_the_idle_timeout() {
    let limits = Limits {
        idle_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let rt = Runtime::new(common::config(limits)).unwrap();
    let listener = rt.bind("weida://127.0.0.1:0").await.unwrap();
    let _replier = listener.replier("/rpc").unwrap();
    // Keep-alives well inside the idle timeout: QUIC's own idle timer never fires, so only the
    // listener's bound on the opening can end the connection.
    let mut transport = quinn::TransportConfig::default();
    transport.keep_alive_interval(Some(Duration::from_millis(100)));
    let conn = dial_with(&listener, b"weida/0", transport).await.unwrap();
    assert_eq!(
        closed_with(&conn).await,
        (PROTOCOL_ERROR, "no control stream".to_string())
    );
}

/// [`HELLO`] with FEATURES bit 1: a listener that says it answers CHECK (PROTOCOL §3.1.5).
const HELLO_WITH_PATH_CHECK: &[u8] = &[
    0x01, 0x0a, 0x00, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00, 0x02, 0x01, 0x02,
];

/// A listener whose HELLO does not set the path check (one that predates it, or another
/// implementation) is not asked: `connect` returns at once, without waiting for an ANSWER that
/// will never come, and the path is learned at the first refusal as before (PROTOCOL §3.1.5).
#[tokio::test]
async fn a_listener_without_the_path_check_is_not_asked() {
    let fake = Fake::start();
    // Were it asked, the wait for the answer would be this long.
    let rt = Runtime::new(RuntimeConfig {
        limits: Limits {
            connect_timeout: Duration::from_secs(60),
            ..Limits::default()
        },
        ..common::config(Limits::default())
    })
    .unwrap();
    let requester = rt.requester();
    let (r, (_conn, _send, mut recv)) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(requester.connect(&fake.address), fake.accept_hello())
    })
    .await
    .expect("connect returns without waiting for a CHECK's answer");
    r.unwrap();
    assert_eq!(requester.peer_count(), 1);
    // Nothing followed the HELLO on the control stream: the dialler opens its first data
    // stream now, and its control stream still has nothing to read.
    let nothing = tokio::time::timeout(Duration::from_millis(200), recv.read_chunk(64, true)).await;
    assert!(nothing.is_err(), "the dialler sent {nothing:?}");
}

/// A listener that sets the path check is asked CHECK for the dialled path with the stream
/// kinds of the dialling endpoint (a requester: exchanges, bit 2); one that then never answers
/// fails the connect as `Protocol` at `connect_timeout`, not after a hang (PROTOCOL §3.1.5).
#[tokio::test]
async fn a_listener_that_sets_the_path_check_and_never_answers_fails_the_connect() {
    let fake = Fake::start();
    let rt = Runtime::new(RuntimeConfig {
        limits: Limits {
            connect_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        ..common::config(Limits::default())
    })
    .unwrap();
    let requester = rt.requester();
    let (r, check) = guarded("connect", async {
        tokio::join!(requester.connect(&fake.address), async {
            let (conn, mut send, mut recv) = fake.accept().await;
            send.write_all(HELLO_WITH_PATH_CHECK).await.unwrap();
            let mut buf = Vec::new();
            loop {
                // The connection and its control stream are kept: a FIN would end the dialler's
                // wait as a loss, not as the silence this test is about.
                if let Some((f, _)) = weida::wire::ControlFrame::decode(&buf).unwrap() {
                    break (conn, send, f);
                }
                let chunk = recv.read_chunk(1 << 16, true).await.unwrap();
                buf.extend_from_slice(&chunk.expect("a CHECK").bytes);
            }
        })
    })
    .await;
    match check.2 {
        weida::wire::ControlFrame::Check(c) => {
            assert_eq!(c.path, "/rpc");
            assert_eq!(c.streams, weida::wire::check_streams::EXCHANGE);
        }
        other => panic!("{other:?}"),
    }
    let e = r.unwrap_err();
    assert_eq!(e.code(), weida::ErrorCode::Protocol, "{e:?}");
    assert_eq!(requester.peer_count(), 0);
}

/// Limits for the silent-HELLO tests: a short idle timeout, and no keep-alive of the listener's
/// own, so only its bound on the HELLO can end a control stream that stays silent.
fn hello_bounded() -> Limits {
    Limits {
        idle_timeout: Duration::from_secs(3),
        keep_alive: None,
        ..Limits::default()
    }
}

/// A weida dialler on `address`, whose push reaches `puller`: the peer that a silent one must
/// not delay.
async fn served_meanwhile(address: &str, puller: &weida::Puller) {
    let rt = Runtime::new(common::config(Limits::default())).unwrap();
    let pusher = rt.pusher();
    guarded("the other dialler's connect", pusher.connect(address))
        .await
        .unwrap();
    guarded("the other dialler's send", pusher.send("served"))
        .await
        .unwrap();
    let m = guarded("the other dialler's message", puller.recv())
        .await
        .unwrap();
    assert_eq!(&m.body[..], b"served");
}

/// A QUIC dialler that writes the control stream's type byte and the start of a HELLO, then
/// nothing more (keeping the connection alive with PINGs), is closed with PROTOCOL_ERROR
/// `expected HELLO` once the listener's idle timeout has passed (PROTOCOL §3.2 step 3); while
/// it waits, another dialler connects and is served.
#[tokio::test]
async fn a_hello_that_never_comes_is_closed_at_the_idle_timeout_and_delays_no_one_quic() {
    let rt = Runtime::new(common::config(hello_bounded())).unwrap();
    let listener = rt.bind("weida://127.0.0.1:0").await.unwrap();
    let puller = listener.puller("/jobs").unwrap();
    let mut transport = quinn::TransportConfig::default();
    transport.keep_alive_interval(Some(Duration::from_millis(100)));
    let conn = dial_with(&listener, b"weida/0", transport).await.unwrap();
    let (mut send, _recv) = conn.open_bi().await.unwrap();
    // The type byte, then three bytes of a HELLO whose length says seven.
    send.write_all(&[0x00, 0x01, 0x07, 0x00]).await.unwrap();
    served_meanwhile(&puller.address().to_string(), &puller).await;
    assert!(
        conn.close_reason().is_none(),
        "the silent dialler was closed before the other one was served"
    );
    assert_eq!(
        closed_with(&conn).await,
        (PROTOCOL_ERROR, "expected HELLO".to_string())
    );
}

/// The same over AF_UNIX: a local process that sends the control connection's type byte and
/// the start of a HELLO, then nothing, is hung up on once the listener's idle timeout has
/// passed, without a frame (there is no CONNECTION_CLOSE: PROTOCOL §3.2 step 3, §3.6); while
/// it waits, another dialler connects and is served.
#[tokio::test]
async fn a_hello_that_never_comes_is_closed_at_the_idle_timeout_and_delays_no_one_unix() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_server, listener, path) = local_listener(hello_bounded()).await;
    let puller = listener.puller("/jobs").unwrap();
    let mut silent = tokio::net::UnixStream::connect(&path).await.unwrap();
    // One DATA chunk (PROTOCOL §8.1): the type byte and three bytes of a seven-byte HELLO.
    silent
        .write_all(&[0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x01, 0x07, 0x00])
        .await
        .unwrap();
    served_meanwhile(&puller.address().to_string(), &puller).await;
    let mut probe = [0u8; 1];
    assert!(
        matches!(silent.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the silent dialler was answered or hung up on before the other one was served"
    );
    // The listener stops what it never understood (at most a STOP chunk) and hangs up: EOF.
    let mut got = Vec::new();
    guarded("the hang-up", silent.read_to_end(&mut got))
        .await
        .unwrap();
    assert!(
        got.is_empty() || got[0] == 0x03,
        "no frame, at most a STOP chunk: {got:02x?}"
    );
}

/// What the listener wrote back on one AF_UNIX data connection, read to its end of file
/// (PROTOCOL §8): the STOP code for the dialler's half, the reply half's bytes, and whether
/// the reply half ended with FIN.
#[derive(Debug, Default)]
struct LocalAnswer {
    stop: Option<u32>,
    reply: Vec<u8>,
    fin: bool,
}

impl LocalAnswer {
    /// The code and message of the ERROR the reply half is (§6.2), after a FIN.
    fn error(&self) -> (u32, String) {
        assert!(self.fin, "the reply half ends with FIN: {self:02x?}");
        assert_eq!(self.reply.first(), Some(&0x01), "an ERROR: {self:02x?}");
        let (code, message) = weida::wire::reply::decode_error(&self.reply[1..]).unwrap();
        (code.to_u64() as u32, message)
    }
}

/// Connects to the AF_UNIX socket at `path`, writes `bytes` as one DATA chunk (then a FIN
/// chunk if `finish`), and reads what comes back until the listener hangs up.
async fn local_stream(path: &std::path::Path, bytes: &[u8], finish: bool) -> LocalAnswer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use weida::wire::chunk::{self, ChunkType};
    let mut s = tokio::net::UnixStream::connect(path).await.unwrap();
    let mut out = chunk::prefix(ChunkType::Data, bytes.len() as u32).to_vec();
    out.extend_from_slice(bytes);
    if finish {
        out.extend_from_slice(&chunk::prefix(ChunkType::Fin, 0));
    }
    s.write_all(&out).await.unwrap();
    let mut got = Vec::new();
    guarded("the listener's answer and hang-up", s.read_to_end(&mut got))
        .await
        .unwrap();
    let mut answer = LocalAnswer::default();
    let mut at = &got[..];
    while !at.is_empty() {
        let (ty, len) = chunk::decode_prefix(at[..chunk::PREFIX].try_into().unwrap(), 1 << 24)
            .unwrap_or_else(|e| panic!("{e:?} in {got:02x?}"));
        let payload = &at[chunk::PREFIX..chunk::PREFIX + len as usize];
        match ty {
            ChunkType::Data => answer.reply.extend_from_slice(payload),
            ChunkType::Fin => answer.fin = true,
            ChunkType::Stop => {
                let code = chunk::decode_code(payload).unwrap();
                assert!(answer.stop.is_none(), "one STOP at most: {got:02x?}");
                answer.stop = Some(code.to_u64() as u32);
            }
            ChunkType::Reset => panic!("the listener reset its reply half: {got:02x?}"),
            ChunkType::Keep => panic!("KEEP from a listener: {got:02x?}"),
        }
        at = &at[chunk::PREFIX + len as usize..];
    }
    answer
}

/// The refusals of PROTOCOL §9.1 steps 1, 3, 4 and 5 over AF_UNIX (step 2, the direction, has no
/// AF_UNIX case: every connection has both), from a local process that writes
/// streams no v0 runtime sends, straight to the listener's socket (a data connection needs no
/// session there: Open point 3). Each is refused as §9.2 says: a STOP chunk with the code on
/// the dialler's half while the listener has not read its end, and an ERROR reply with the
/// same code on any connection with a reverse direction (an exchange, an unknown type); a FIN
/// inside a request header is refused with the ERROR alone; a transfer and a lane are refused
/// by their STOP alone. A refusal refuses the stream, never the listener: a well-formed
/// transfer is delivered afterwards.
#[tokio::test]
async fn a_listener_refuses_the_local_streams_a_v0_dialler_never_opens_and_goes_on() {
    let (_server, listener, path) = local_listener(Limits::default()).await;
    let _replier = listener.replier("/rpc").unwrap();
    let puller = listener.puller("/jobs").unwrap();
    // Step 1: an unassigned stream type (an AF_UNIX connection has a reverse direction).
    let a = local_stream(&path, &[0x09], false).await;
    assert_eq!(a.stop, Some(UNSUPPORTED), "{a:02x?}");
    assert_eq!(
        a.error(),
        (UNSUPPORTED, "unsupported stream type".to_string())
    );
    // Steps 3 to 5, on exchanges: each with its STOP and its ERROR.
    for (bytes, want) in REFUSED_HEADERS {
        let a = local_stream(&path, bytes, false).await;
        assert_eq!(a.stop, Some(want), "{bytes:02x?}: {a:02x?}");
        assert_eq!(a.error().0, want, "{bytes:02x?}: {a:02x?}");
    }
    // Step 4, a FIN inside a request header: the listener read the end, so nothing is left to
    // stop; the ERROR alone refuses it.
    let a = local_stream(&path, &[0x02, 0x07, 0x00], true).await;
    assert_eq!(a.stop, None, "{a:02x?}");
    assert_eq!(a.error().0, PROTOCOL_ERROR, "{a:02x?}");
    // Step 3 on a transfer: the STOP, and nothing else back (there is no reply half, §8.4).
    let a = local_stream(&path, &[0x01, 0x80, 0x00, 0x4e, 0x20], false).await;
    assert_eq!(
        (a.stop, a.reply.is_empty(), a.fin),
        (Some(LIMIT_EXCEEDED), true, false)
    );
    // A lane refused at its head (nothing bound at its path; a replier's path): the STOP, and
    // nothing else back, as for a transfer (its reverse direction carries only STOP chunks, §4).
    // With lanes off (`WEIDA_TEST_LANE_MAX=0`) a `03` is a stream type not in use, refused as
    // any other at step 1, with its ERROR (§9.2).
    for (at, want) in [("/nowhere", UNKNOWN_ENDPOINT), ("/rpc", UNSUPPORTED)] {
        let mut bytes = vec![0x03];
        weida::wire::Header::for_path(at).encode(&mut bytes);
        let a = local_stream(&path, &bytes, false).await;
        if common::lanes_on() {
            assert_eq!(
                (a.stop, a.reply.is_empty(), a.fin),
                (Some(want), true, false),
                "{at}: {a:02x?}"
            );
        } else {
            assert_eq!(a.stop, Some(UNSUPPORTED), "{at}: {a:02x?}");
            assert_eq!(
                a.error(),
                (UNSUPPORTED, "unsupported stream type".to_string())
            );
        }
    }
    // The listener goes on: a whole transfer to /jobs is delivered.
    let mut bytes = vec![0x01];
    weida::wire::Header::for_path("/jobs").encode(&mut bytes);
    bytes.extend_from_slice(b"whole");
    // The listener holds the connection until the puller has read it (§8.5).
    let sent = tokio::spawn(async move { local_stream(&path, &bytes, true).await });
    let m = guarded("a whole transfer", puller.recv()).await.unwrap();
    assert_eq!(&m.body[..], b"whole");
    let a = sent.await.unwrap();
    assert_eq!((a.stop, a.reply.is_empty()), (None, true), "{a:02x?}");
}

/// Whether the peer of `s` has shut both directions down (or closed it) within `GUARD`:
/// POLLHUP, which AF_UNIX reports only then (its half-close alone is POLLRDHUP).
fn hung_up(s: &std::os::unix::net::UnixStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut fds = libc::pollfd {
        fd: s.as_raw_fd(),
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut fds, 1, GUARD.as_millis() as libc::c_int) };
    n == 1 && fds.revents & libc::POLLHUP != 0
}

/// A local dialler that keeps open a connection the listener is done with (here one whose
/// stream it refused: STOP and ERROR written, its half ended) is hung up on once the
/// listener's idle timeout has passed since (PROTOCOL §8.5): it cannot hold the listener's
/// socket, its descriptor and its reading task for ever, one connection after another.
#[tokio::test]
async fn a_local_connection_the_listener_is_done_with_is_closed_at_the_idle_timeout() {
    use std::io::{Read, Write};
    let limits = Limits {
        idle_timeout: Duration::from_millis(300),
        keep_alive: None,
        ..Limits::default()
    };
    let (_server, listener, path) = local_listener(limits).await;
    let _replier = listener.replier("/rpc").unwrap();
    let held = tokio::task::spawn_blocking(move || {
        let mut s = std::os::unix::net::UnixStream::connect(&path).unwrap();
        // An unassigned stream type, and this side's half left open.
        s.write_all(&[0x00, 0x00, 0x00, 0x00, 0x01, 0x09]).unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap();
        assert!(!answer.is_empty(), "the refusal (a STOP and an ERROR)");
        hung_up(&s)
    });
    assert!(
        guarded("the hang-up", held).await.unwrap(),
        "the listener still holds a connection it finished with"
    );
}

/// A reader that drops a stream before its end stops its writer with NO_ERROR, as QUIC's
/// STOP_SENDING(0) does (PROTOCOL §8.4): a local process writes part of a transfer, the puller
/// accepts it as a stream and drops it unread, and the process reads one STOP chunk with code
/// 0, then the listener's end of file.
#[tokio::test]
async fn a_local_transfer_dropped_unread_is_stopped_with_no_error() {
    let (_server, listener, path) = local_listener(Limits::default()).await;
    let puller = listener.puller("/jobs").unwrap();
    let mut bytes = vec![0x01];
    weida::wire::Header::for_path("/jobs").encode(&mut bytes);
    bytes.extend_from_slice(b"the first part");
    let sent = tokio::spawn(async move { local_stream(&path, &bytes, false).await });
    let t = guarded("the transfer", puller.accept()).await.unwrap();
    drop(t);
    let a = guarded("the listener's answer", sent).await.unwrap();
    assert_eq!(
        (a.stop, a.reply.is_empty(), a.fin),
        (Some(NO_ERROR), true, false),
        "{a:02x?}"
    );
}

/// One chunk read from a local socket: its type and payload; None at the end of file.
async fn local_chunk(
    s: &mut tokio::net::UnixStream,
) -> Option<(weida::wire::chunk::ChunkType, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    use weida::wire::chunk;
    let mut p = [0u8; chunk::PREFIX];
    s.read_exact(&mut p).await.ok()?;
    let (ty, len) = chunk::decode_prefix(p, 1 << 24).unwrap();
    let mut payload = vec![0; len as usize];
    s.read_exact(&mut payload).await.unwrap();
    Some((ty, payload))
}

/// Writes `bytes` to a local socket as one DATA chunk.
async fn local_data(s: &mut tokio::net::UnixStream, bytes: &[u8]) {
    use tokio::io::AsyncWriteExt;
    use weida::wire::chunk::{self, ChunkType};
    let mut out = chunk::prefix(ChunkType::Data, bytes.len() as u32).to_vec();
    out.extend_from_slice(bytes);
    s.write_all(&out).await.unwrap();
}

/// The next control frame a local control connection carries, `buf` holding what was read of
/// it past the last frame.
async fn local_frame(
    s: &mut tokio::net::UnixStream,
    buf: &mut Vec<u8>,
) -> weida::wire::ControlFrame {
    loop {
        if let Some((f, used)) = weida::wire::ControlFrame::decode(buf).unwrap() {
            buf.drain(..used);
            return f;
        }
        match local_chunk(s).await {
            Some((weida::wire::chunk::ChunkType::Data, p)) => buf.extend_from_slice(&p),
            other => panic!("the control connection carried {other:02x?}"),
        }
    }
}

/// What the dialler answers on a connection it parked (PROTOCOL §3.7) when the listener writes
/// a stream type other than a transfer or a lane there: its STOP chunk with UNSUPPORTED alone,
/// no ERROR and nothing else, and the connection ends (§4: that direction carries STOP chunks
/// only; §3.1.6: the claimant reads the listener's streams as the table of §3.7 says). A
/// hostile listener here writes a session's `00` (with a HELLO), an exchange's `02` and a
/// parked connection's `04`, none of which may make the dialler serve it as a listener would, a
/// lane's `03` where lanes on parked connections are not in use (this listener offered none) and
/// an unassigned type; then a transfer on a connection still parked reaches the pair. Before 2026-12-06 the
/// claimant answered `02` with an ERROR and served `00` as a session of its own.
#[tokio::test]
async fn a_claimants_parked_connection_answers_any_type_but_a_transfer_with_its_stop_alone() {
    use weida::wire::chunk::ChunkType;
    use weida::wire::{control, Code, ControlFrame, Hello};
    let dir = std::env::temp_dir().join("weida-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("claimant-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let socket = tokio::net::UnixListener::bind(&path).unwrap();
    let client = runtime();
    let pair = client.pair();
    let address = format!("weida+unix://{}//chat", path.display());
    let dialled = tokio::spawn(async move { pair.connect(&address).await.map(|()| pair) });

    // The session: the dialler's `00` and HELLO (with its SESSION), this side's HELLO offering
    // claims, then its CLAIM.
    let (mut ctl, _) = guarded("the control connection", socket.accept())
        .await
        .unwrap();
    let (ty, first) = guarded("the dialler's HELLO", local_chunk(&mut ctl))
        .await
        .unwrap();
    assert_eq!((ty, first[0]), (ChunkType::Data, 0x00), "{first:02x?}");
    let mut buf = first[1..].to_vec();
    let ControlFrame::Hello(theirs) = local_frame(&mut ctl, &mut buf).await else {
        panic!("no HELLO first")
    };
    let session = control::Session::decode(&theirs.session.expect("a SESSION")).unwrap();
    let mut hello = Vec::new();
    ControlFrame::Hello(Hello {
        features: control::FEATURE_CLAIM,
        ..Hello::default()
    })
    .encode(&mut hello);
    local_data(&mut ctl, &hello).await;
    let ControlFrame::Claim(claim) = guarded("the CLAIM", local_frame(&mut ctl, &mut buf)).await
    else {
        panic!("no CLAIM")
    };
    assert_eq!(claim.path, "/chat");

    // Its parked connections, each opening with `04` and the session's token; the CLAIM is
    // answered once they are all here.
    let mut parked = Vec::new();
    for _ in 0..session.parked {
        let (mut s, _) = guarded("a parked connection", socket.accept())
            .await
            .unwrap();
        let (_, head) = guarded("its head", local_chunk(&mut s)).await.unwrap();
        assert_eq!(head, session.parked_head().to_vec());
        parked.push(s);
    }
    let mut answer = Vec::new();
    ControlFrame::Answer {
        request: claim.request,
        code: Code::NoError,
        reason: String::new(),
    }
    .encode(&mut answer);
    local_data(&mut ctl, &answer).await;
    let pair = guarded("connect", dialled).await.unwrap().unwrap();

    let mut not_a_transfer = vec![vec![0x00]];
    not_a_transfer[0].extend_from_slice(&hello);
    let mut exchange = vec![0x02];
    weida::wire::Header::for_path("/chat").encode(&mut exchange);
    not_a_transfer.push(exchange);
    not_a_transfer.push(session.parked_head().to_vec());
    // A lane, where this listener's HELLO offered none; an unassigned type.
    let mut lane = vec![0x03];
    weida::wire::Header::for_path("/chat").encode(&mut lane);
    not_a_transfer.push(lane);
    not_a_transfer.push(vec![0x05]);
    assert!(
        parked.len() > not_a_transfer.len(),
        "{} parked",
        parked.len()
    );
    for (mut s, bytes) in parked.drain(..not_a_transfer.len()).zip(&not_a_transfer) {
        local_data(&mut s, bytes).await;
        let mut got = Vec::new();
        while let Some(c) = guarded("the dialler's answer", local_chunk(&mut s)).await {
            got.push(c);
        }
        assert_eq!(
            got,
            vec![(ChunkType::Stop, vec![UNSUPPORTED as u8])],
            "{:02x}",
            bytes[0]
        );
    }

    // A transfer on a connection still parked reaches the pair.
    let mut transfer = vec![0x01];
    weida::wire::Header::for_path("/chat").encode(&mut transfer);
    transfer.extend_from_slice(b"still here");
    local_data(&mut parked[0], &transfer).await;
    {
        use tokio::io::AsyncWriteExt;
        let fin = weida::wire::chunk::prefix(ChunkType::Fin, 0);
        parked[0].write_all(&fin).await.unwrap();
    }
    let m = guarded("the transfer", pair.recv()).await.unwrap();
    assert_eq!(&m.body[..], b"still here");
    drop(ctl);
    let _ = std::fs::remove_file(&path);
}

/// A listener that has read a dialler's GOAWAY holds an exchange until its answer has reached
/// the dialler, a reply, the replier's ERROR or a refusal's (PROTOCOL §3.5): it closes the
/// connection (`drained`) only after that, so no close discards an answer still in flight. The
/// raw dialler, behind a relay, opens an exchange, then sends GOAWAY(1) and a SUBSCRIBE on its
/// control stream, whose ANSWER shows the GOAWAY was read. The relay then drops everything the
/// listener sends, the answer is given (the replier's call returns once it is queued; a request
/// to a path where nothing is bound is refused at once), and once a datagram large enough to
/// hold the answer was dropped (each answer is 400 bytes or more: the reply's body, the
/// rejection's reason, the refused path that the ERROR names; an acknowledgement is far
/// smaller) the relay heals: the answer is sent again and arrives whole, then the close. Had the listener closed once the answer was queued, its close would have come first
/// and the answer would be lost (as an ERROR was before 2026-12-06).
#[tokio::test]
async fn a_draining_dialler_gets_the_whole_answer_before_the_listener_closes() {
    use common::fault_relay::{FaultRelay, Faults};
    use weida::wire::{ControlFrame, Subscription};
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Answer {
        Reply,
        Reject,
        Refusal,
    }
    for case in [Answer::Reply, Answer::Reject, Answer::Refusal] {
        let (_rt, listener, replier) = listener().await;
        let relay = FaultRelay::start(common::socket_addr(&listener)).await;
        let conn = common::raw::dial_at(relay.addr, b"weida/0", Default::default())
            .await
            .unwrap();
        let (conn, mut ctl, mut ctl_recv) = said_hello(conn, HELLO).await;
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        let unbound = format!("/{}", "n".repeat(400));
        let path = if case == Answer::Refusal {
            &unbound
        } else {
            "/rpc"
        };
        let mut request = Vec::new();
        weida::wire::Header::for_path(path).encode(&mut request);
        request.extend_from_slice(b"question");
        // The type byte opens the stream; a refused request's header comes only once the
        // listener's datagrams are dropped.
        send.write_all(&[0x02]).await.unwrap();
        let answer = tokio::spawn(async move { recv.read_to_end(1 << 20).await });
        let mut exchange = None;
        if case != Answer::Refusal {
            send.write_all(&request).await.unwrap();
            send.finish().unwrap();
            let mut x = guarded("the exchange", replier.accept()).await.unwrap();
            assert_eq!(&x.take_body().await.unwrap()[..], b"question");
            exchange = Some(x);
        }

        let mut frames = Vec::new();
        ControlFrame::GoAway { opened: 1 }.encode(&mut frames);
        ControlFrame::Subscribe(Subscription {
            request: 1,
            path: "/none".into(),
            filter: String::new(),
        })
        .encode(&mut frames);
        ctl.write_all(&frames).await.unwrap();
        let mut buf = Vec::new();
        loop {
            if let Some((f, _)) = ControlFrame::decode(&buf).unwrap() {
                assert!(
                    matches!(f, ControlFrame::Answer { request: 1, .. }),
                    "{f:?}"
                );
                break;
            }
            let c = guarded("the ANSWER", ctl_recv.read_chunk(1 << 16, true)).await;
            buf.extend_from_slice(&c.unwrap().expect("the ANSWER").bytes);
        }

        let lost = Faults {
            loss: 1.0,
            ..Faults::default()
        };
        relay.set_each(Faults::default(), lost);
        let body = vec![7u8; 400];
        let reason = "not today ".repeat(40);
        match (case, exchange) {
            (Answer::Reply, Some(x)) => x.reply(body.clone()).await.unwrap(),
            (Answer::Reject, Some(x)) => x.reject(&reason).await.unwrap(),
            _ => {
                send.write_all(&request).await.unwrap();
                send.finish().unwrap();
            }
        }
        // The answer went out, and was lost.
        guarded("the answer dropped", relay.to_client.dropped_one_of(400)).await;
        relay.set(Faults::default());
        let got = guarded("the answer", answer)
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{case:?}: the answer was cut off: {e}"));
        let error = || {
            assert_eq!(got[0], 0x01, "{case:?}: an ERROR");
            let (code, message) = weida::wire::reply::decode_error(&got[1..]).unwrap();
            (code.to_u64() as u32, message)
        };
        match case {
            Answer::Reply => assert!(got.ends_with(&body), "the whole reply"),
            Answer::Reject => assert_eq!(error(), (REJECTED, reason.clone())),
            Answer::Refusal => {
                let (code, message) = error();
                assert_eq!(code, UNKNOWN_ENDPOINT);
                assert!(message.contains(&unbound), "{message}");
            }
        }
        let (code, reason) = guarded("the close", closed_with(&conn)).await;
        assert_eq!((code, reason.as_str()), (NO_ERROR, "drained"), "{case:?}");
    }
}
