//! QUIC transport on quinn: endpoints with raised UDP buffers, transport parameters from
//! [`Limits`], security/tls.rs's rustls configurations wrapped for quinn, the peer's key as the
//! handshake proved it, and the mapping of quinn's errors onto weida's loss causes.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

use quinn::{ConnectionError, ReadError, VarInt, WriteError};

use super::udp::{self, udp_socket};
use super::{Conn, StreamError};
use crate::address::Host;
use crate::config::Limits;
use crate::error::{Error, LossCause};
use crate::security::fingerprint::Fingerprint;
use crate::security::identity::{fingerprint_of_certificate, Identity};
use crate::security::tls::{self, Presented};
use crate::security::trust::{ClientTls, ServerTls};
use crate::wire::Code;

fn varint(n: u64) -> VarInt {
    VarInt::from_u64(n.min(crate::wire::varint::MAX)).expect("clamped to the varint range")
}

/// Transport parameters from a [`Limits`] profile, for a connection over loopback or not.
/// Only the dialling side sends keep-alives (PATTERNS §1.8).
///
/// Public (hidden, with `bench-hooks`) only so that weida-bench's raw quinn baseline runs with
/// the same ones.
#[cfg_attr(not(feature = "bench-hooks"), allow(unreachable_pub))]
pub fn transport_config(
    limits: &Limits,
    dialling: bool,
    loopback: bool,
) -> Result<quinn::TransportConfig, Error> {
    let mut t = quinn::TransportConfig::default();
    t.max_concurrent_uni_streams(varint(limits.max_concurrent_uni_streams));
    // One more than the budget: the control stream is not an exchange (PROTOCOL.md §10.1).
    t.max_concurrent_bidi_streams(varint(limits.max_concurrent_bidi_streams.saturating_add(1)));
    t.stream_receive_window(varint(limits.stream_receive_window));
    t.receive_window(varint(limits.connection_receive_window));
    t.send_window(limits.send_window);
    t.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(limits.idle_timeout).map_err(|_| {
            Error::InvalidConfig(format!(
                "idle_timeout {:?} is out of range",
                limits.idle_timeout
            ))
        })?,
    ));
    t.keep_alive_interval(if dialling { limits.keep_alive } else { None });
    // Wire v0 carries nothing in QUIC DATAGRAM frames, so neither side advertises
    // max_datagram_frame_size (quinn would by default: PROTOCOL.md §10.1).
    t.datagram_receive_buffer_size(None);
    let mut mtu = quinn::MtuDiscoveryConfig::default();
    mtu.upper_bound(udp_payload(limits));
    if let Some(payload) = loopback.then(|| loopback_payload(limits)).flatten() {
        // Start where discovery would end, and probe nothing: a probe is padded to its size,
        // and quinn reads padding a byte at a time, some milliseconds per connection at
        // 64 KiB. The congestion window starts at ten of these datagrams, as at ten of 1200
        // bytes elsewhere (RFC 9002 §7.2 caps it lower to spare a shared network; loopback has
        // none, and a window under two datagrams waits out the peer's ACK delay).
        t.initial_mtu(payload);
        mtu.upper_bound(payload);
        let mut cubic = quinn::congestion::CubicConfig::default();
        cubic.initial_window(10 * u64::from(payload));
        t.congestion_controller_factory(Arc::new(cubic));
    }
    t.mtu_discovery_config(Some(mtu));
    Ok(t)
}

/// `Limits::max_udp_payload`, which `Limits::validate` keeps within QUIC's range.
fn udp_payload(limits: &Limits) -> u16 {
    limits.max_udp_payload.clamp(1200, 65527) as u16
}

/// Whether `addr` is a loopback address (an IPv4 one mapped into IPv6 included).
pub(crate) fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// The UDP payload a loopback path carries within `max_udp_payload`: the loopback interface's
/// MTU less an IPv6 and a UDP header (the larger pair). None where the MTU cannot be read;
/// discovery finds it then.
fn loopback_payload(limits: &Limits) -> Option<u16> {
    static MTU: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let mtu = (*MTU.get_or_init(udp::loopback_mtu))?;
    let payload = u64::from(mtu.saturating_sub(40 + 8)).min(limits.max_udp_payload);
    (payload >= 1200).then_some(payload as u16)
}

fn endpoint(
    socket: UdpSocket,
    server: Option<(quinn::ServerConfig, &Identity)>,
    limits: &Limits,
) -> Result<quinn::Endpoint, Error> {
    let (mut config, server) = match server {
        Some((sc, identity)) => (resetting(identity), Some(sc)),
        None => (quinn::EndpointConfig::default(), None),
    };
    config
        .max_udp_payload_size(udp_payload(limits))
        .map_err(|e| Error::InvalidConfig(format!("max_udp_payload: {e}")))?;
    Ok(quinn::Endpoint::new_with_abstract_socket(
        config,
        server,
        udp::quinn_socket(socket)?,
        Arc::new(quinn::TokioRuntime),
    )?)
}

/// A listener's endpoint configuration whose stateless reset key is its identity's: a server
/// restarted with the same key answers a packet of a connection its previous process held with
/// a stateless reset (RFC 9000 §10.3), so the peer learns of the restart at its next packet
/// instead of at its idle timeout, and redials. Its connection IDs are plain random ones,
/// valid for any process of the identity (quinn's default signs them with a key drawn per
/// process, and ignores a packet whose ID the new process did not sign). Another key resets
/// nothing: the peer then learns at its idle timeout, and its redial finds PeerChanged.
fn resetting(identity: &Identity) -> quinn::EndpointConfig {
    let secret = identity.derived_secret("weida/0 QUIC stateless reset");
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret);
    let mut config = quinn::EndpointConfig::new(Arc::new(key));
    config.cid_generator(|| Box::new(RandomCids));
    config
}

/// Random 8-byte connection IDs, any of which a listener of the same identity may reset.
struct RandomCids;

impl quinn::ConnectionIdGenerator for RandomCids {
    fn generate_cid(&mut self) -> quinn::ConnectionId {
        quinn::ConnectionId::new(&rand::random::<[u8; 8]>())
    }

    fn cid_len(&self) -> usize {
        8
    }

    fn cid_lifetime(&self) -> Option<std::time::Duration> {
        None
    }
}

/// security/tls.rs's client configuration wrapped for quinn (default transport configuration).
pub(crate) fn client_config(
    tls: &ClientTls,
    pin: Option<Fingerprint>,
    presented: Presented,
) -> Result<quinn::ClientConfig, Error> {
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(tls::client_config(tls, pin, presented)?)
            .map_err(unusable_tls)?;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}

/// security/tls.rs's server configuration wrapped for quinn (default transport configuration).
pub(crate) fn server_config(tls: &ServerTls) -> Result<quinn::ServerConfig, Error> {
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls::server_config(tls)?)
        .map_err(unusable_tls)?;
    Ok(quinn::ServerConfig::with_crypto(Arc::new(crypto)))
}

fn unusable_tls(e: impl std::fmt::Display) -> Error {
    Error::InvalidConfig(format!("QUIC cannot use this TLS configuration: {e}"))
}

/// The fingerprint of the key the peer of `conn` presented (its leaf certificate), or `None`
/// for an anonymous client.
pub(crate) fn peer_fingerprint(conn: &quinn::Connection) -> Option<Fingerprint> {
    let chain = conn
        .peer_identity()?
        .downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
        .ok()?;
    fingerprint_of_certificate(chain.first()?).ok()
}

/// The dialling endpoint a runtime shares across its connections.
pub(crate) struct Client(quinn::Endpoint);

/// A dialling endpoint on an unspecified address (IPv6 and IPv4 where the host allows).
pub(crate) fn client_endpoint(buffer: usize, limits: &Limits) -> Result<Client, Error> {
    let socket = udp_socket("[::]:0".parse().unwrap(), buffer)
        .or_else(|_| udp_socket("0.0.0.0:0".parse().unwrap(), buffer))?;
    Ok(Client(endpoint(socket, None, limits)?))
}

impl Client {
    /// Dials `addr` and completes the handshake: see [`connect`].
    pub(crate) async fn connect(
        &self,
        addr: SocketAddr,
        server_name: &str,
        pin: Option<Fingerprint>,
        client: &ClientTls,
        limits: &Limits,
    ) -> Result<Conn, Error> {
        let c = connect(&self.0, addr, server_name, pin, client, limits).await?;
        Ok(Conn::Quic(c))
    }

    /// Closes every connection dialled from it with `code`.
    pub(crate) fn close(&self, code: Code, reason: &[u8]) {
        self.0.close(varint(code.to_u64()), reason);
    }

    /// Resolves once no connection dialled from it is left: every close has been sent and its
    /// draining period is over (quinn's `Endpoint::wait_idle`). Cancel-safe.
    pub(crate) async fn idle(&self) {
        self.0.wait_idle().await;
    }
}

/// What [`Server::next`] yields: a peer's first packets, its handshake still to complete.
pub(crate) struct Incoming(quinn::Incoming);

/// Resolves the host of a QUIC address to one socket address: the one resolver every dial
/// and every bind uses.
pub(crate) async fn resolve(host: &Host, port: u16) -> Result<SocketAddr, Error> {
    let ip = match host {
        Host::Ip(ip) => *ip,
        Host::Name(name) => tokio::net::lookup_host((name.as_str(), port))
            .await?
            .next()
            .ok_or_else(|| {
                Error::Io(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{name} resolves to nothing"),
                ))
            })?
            .ip(),
    };
    Ok(SocketAddr::new(ip, port))
}

/// A listening endpoint, and the server configuration it accepts loopback peers with.
#[derive(Clone)]
pub(crate) struct Server {
    endpoint: quinn::Endpoint,
    loopback: Arc<quinn::ServerConfig>,
}

impl Server {
    /// The next connection attempt; None once the endpoint is closed.
    pub(crate) async fn next(&self) -> Option<Incoming> {
        self.endpoint.accept().await.map(Incoming)
    }

    /// Refuses `incoming` before its handshake (the listener is at `max_connections`): the
    /// dialler reads CONNECTION_REFUSED.
    pub(crate) fn refuse(&self, incoming: Incoming) {
        incoming.0.refuse();
    }

    /// Completes the handshake of `incoming`: the connection and the peer's address.
    pub(crate) async fn accept(&self, incoming: Incoming) -> Result<(Conn, SocketAddr), Error> {
        let c = self
            .handshake(incoming.0)
            .await
            .map_err(|e| Error::ConnectionLost(loss_cause(&e)))?;
        let remote = c.remote_address();
        Ok((Conn::Quic(c), remote))
    }

    /// Completes the handshake of `incoming`, with the loopback transport parameters when the
    /// peer is on this host.
    async fn handshake(
        &self,
        incoming: quinn::Incoming,
    ) -> Result<quinn::Connection, ConnectionError> {
        if is_loopback(incoming.remote_address()) {
            incoming.accept_with(self.loopback.clone())?.await
        } else {
            incoming.await
        }
    }

    /// The address it is bound to (the real port when 0 was asked for).
    pub(crate) fn local_addr(&self) -> Result<SocketAddr, Error> {
        Ok(self.endpoint.local_addr()?)
    }

    /// Stops accepting and closes every connection it accepted with `code`.
    pub(crate) fn close(&self, code: Code, reason: &[u8]) {
        self.endpoint.close(varint(code.to_u64()), reason);
    }

    /// Resolves once no connection it accepted is left: every close has been sent and its
    /// draining period is over (quinn's `Endpoint::wait_idle`). Cancel-safe.
    pub(crate) async fn idle(&self) {
        self.endpoint.wait_idle().await;
    }
}

/// A listening endpoint at `addr`.
pub(crate) fn server_endpoint(
    addr: SocketAddr,
    tls: &ServerTls,
    limits: &Limits,
    buffer: usize,
) -> Result<Server, Error> {
    let mut sc = server_config(tls)?;
    let mut loopback = sc.clone();
    sc.transport_config(Arc::new(transport_config(limits, false, false)?));
    loopback.transport_config(Arc::new(transport_config(limits, false, true)?));
    Ok(Server {
        endpoint: endpoint(
            udp_socket(addr, buffer)?,
            Some((sc, tls.identity())),
            limits,
        )?,
        loopback: Arc::new(loopback),
    })
}

/// Dials `addr` and completes the handshake. A key outside the terms is `Untrusted`, carrying
/// what answered.
pub(crate) async fn connect(
    ep: &quinn::Endpoint,
    addr: SocketAddr,
    server_name: &str,
    pin: Option<Fingerprint>,
    client: &ClientTls,
    limits: &Limits,
) -> Result<quinn::Connection, Error> {
    let presented = Presented::default();
    let mut cc = client_config(client, pin, presented.clone())?;
    cc.transport_config(Arc::new(transport_config(limits, true, is_loopback(addr))?));
    let connecting = ep
        .connect_with(cc, addr, server_name)
        .map_err(|e| Error::InvalidConfig(format!("cannot dial {addr}: {e}")))?;
    match connecting.await {
        Ok(c) => Ok(c),
        Err(e) => {
            if let Some(fingerprint) = presented.rejected() {
                return Err(Error::Untrusted {
                    fingerprint,
                    expected: pin,
                });
            }
            Err(match e {
                ConnectionError::TimedOut => Error::Timeout { last_loss: None },
                // A QUIC endpoint that takes no new connections (a closed listener whose
                // socket is still open) refuses the handshake: nothing listens there.
                ConnectionError::ConnectionClosed(c)
                    if c.error_code == quinn::TransportErrorCode::CONNECTION_REFUSED =>
                {
                    Error::Unreachable {
                        address: addr.to_string(),
                        why: crate::error::Unanswered::Refused(
                            "the QUIC endpoint there takes no new connections (a closed \
                             listener, or one at its max_connections)"
                                .into(),
                        ),
                    }
                }
                other => Error::ConnectionLost(loss_cause(&other)),
            })
        }
    }
}

/// The loss cause of a quinn connection error.
pub(crate) fn loss_cause(e: &ConnectionError) -> LossCause {
    match e {
        ConnectionError::TimedOut => LossCause::IdleTimeout,
        ConnectionError::ApplicationClosed(_) => LossCause::PeerClosed,
        ConnectionError::LocallyClosed => LossCause::LocallyClosed,
        ConnectionError::Reset => LossCause::Reset,
        ConnectionError::ConnectionClosed(c) => LossCause::TransportError(c.to_string()),
        other => LossCause::TransportError(other.to_string()),
    }
}

/// The code and reason a peer's application closed the connection with, if it did.
pub(crate) fn app_close(e: &ConnectionError) -> Option<(Code, String)> {
    match e {
        ConnectionError::ApplicationClosed(a) => Some((
            Code::from_u64(a.error_code.into_inner()),
            String::from_utf8_lossy(&a.reason).into_owned(),
        )),
        _ => None,
    }
}

pub(crate) fn write_error(e: WriteError) -> StreamError {
    match e {
        WriteError::Stopped(code) => StreamError::Stopped(Code::from_u64(code.into_inner())),
        WriteError::ConnectionLost(c) => StreamError::Lost(loss_cause(&c)),
        WriteError::ClosedStream => StreamError::Reset(Code::Canceled),
        WriteError::ZeroRttRejected => {
            StreamError::Lost(LossCause::TransportError("0-RTT rejected".into()))
        }
    }
}

pub(crate) fn read_error(e: ReadError) -> StreamError {
    match e {
        ReadError::Reset(code) => StreamError::Reset(Code::from_u64(code.into_inner())),
        ReadError::ConnectionLost(c) => StreamError::Lost(loss_cause(&c)),
        ReadError::ClosedStream | ReadError::IllegalOrderedRead => {
            StreamError::Reset(Code::Canceled)
        }
        ReadError::ZeroRttRejected => {
            StreamError::Lost(LossCause::TransportError("0-RTT rejected".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::security::identity::Identity;
    use crate::security::trust::Trust;

    /// A client dialling a server over loopback, each with its own `Limits`. `as_remote`: both
    /// ends use the parameters of a path that is not loopback (so discovery runs).
    async fn pair(
        server: &Limits,
        client: &Limits,
        as_remote: bool,
    ) -> (quinn::Connection, quinn::Connection) {
        let id = Identity::ephemeral();
        let pin = id.fingerprint();
        let srv = server_endpoint(
            "127.0.0.1:0".parse().unwrap(),
            &ServerTls::new(id),
            server,
            1 << 20,
        )
        .unwrap();
        let addr = srv.endpoint.local_addr().unwrap();
        let client_ep = client_endpoint(1 << 20, client).unwrap();
        let tls = ClientTls::new(Identity::ephemeral(), Trust::address());
        let name = tls::server_name("127.0.0.1", &tls, Some(pin));
        let accepting = tokio::spawn(async move {
            let incoming = srv.endpoint.accept().await.unwrap();
            match as_remote {
                true => incoming.await,
                false => srv.handshake(incoming).await,
            }
        });
        let c = if as_remote {
            let mut cc = client_config(&tls, Some(pin), Presented::default()).unwrap();
            cc.transport_config(Arc::new(transport_config(client, true, false).unwrap()));
            client_ep
                .0
                .connect_with(cc, addr, &name)
                .unwrap()
                .await
                .unwrap()
        } else {
            connect(&client_ep.0, addr, &name, Some(pin), &tls, client)
                .await
                .unwrap()
        };
        (c, accepting.await.unwrap().unwrap())
    }

    fn mtu(c: &quinn::Connection) -> u16 {
        c.stats().path.current_mtu
    }

    /// The path MTU `conn` sends at once discovery has reached `at_least`. MTU discovery has no
    /// event to wait on, so this polls the connection's statistics while traffic flows.
    async fn mtu_reaching(conn: &quinn::Connection, at_least: u16) -> u16 {
        let wait = async {
            loop {
                if mtu(conn) >= at_least {
                    return mtu(conn);
                }
                let mut s = conn.open_uni().await.unwrap();
                s.write_all(&[0u8; 4096]).await.unwrap();
                s.finish().unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .unwrap_or_else(|_| panic!("the path MTU never reached {at_least}"))
    }

    #[tokio::test]
    async fn a_loopback_connection_starts_at_the_loopback_datagram_size() {
        let Some(lo) = udp::loopback_mtu() else {
            return; // not read on this platform: discovery finds it (tested below)
        };
        let (c, s) = pair(&Limits::default(), &Limits::default(), false).await;
        let want = (lo - 48).min(65527) as u16;
        assert_eq!((mtu(&c), mtu(&s)), (want, want));
        // Many datagrams of that size cross at once, none lost (the batches fit a sendmsg).
        let (written, read) = tokio::join!(
            async {
                let mut w = c.open_uni().await.unwrap();
                w.write_all(&vec![7u8; 8 << 20]).await.unwrap();
                w.finish().unwrap();
            },
            async { s.accept_uni().await.unwrap().read_to_end(16 << 20).await }
        );
        let () = written;
        assert_eq!(read.unwrap().len(), 8 << 20);
        let stats = c.stats();
        assert_eq!(stats.path.lost_packets, 0, "{:?}", stats.path);
        assert_eq!(stats.path.sent_plpmtud_probes, 0, "{:?}", stats.path);
        assert!(stats.udp_tx.datagrams < 1024, "{:?}", stats.udp_tx);
    }

    #[tokio::test]
    async fn max_udp_payload_caps_either_side() {
        let small = Limits {
            max_udp_payload: 1452,
            ..Limits::default()
        };
        // Its own ceiling.
        let (c, _s) = pair(&Limits::default(), &small, false).await;
        assert!(mtu(&c) <= 1452, "{}", mtu(&c));
        // The peer's: the transport parameter it advertised bounds what we send.
        let (c, _s) = pair(&small, &Limits::default(), false).await;
        assert!(mtu(&c) <= 1452, "{}", mtu(&c));
    }

    #[tokio::test]
    async fn elsewhere_discovery_searches_up_to_max_udp_payload() {
        let (c, _s) = pair(&Limits::default(), &Limits::default(), true).await;
        assert!(mtu_reaching(&c, 8 * 1024).await <= 65527);
        let small = Limits {
            max_udp_payload: 1452,
            ..Limits::default()
        };
        // The first probe of an uncapped search would be far above 1452.
        let (c, _s) = pair(&Limits::default(), &small, true).await;
        assert!(mtu_reaching(&c, 1432).await <= 1452);
    }

    /// Neither side advertises QUIC DATAGRAM support (the max_datagram_frame_size transport
    /// parameter), over loopback or elsewhere: wire v0 does not use it (PROTOCOL.md §10.1).
    #[tokio::test]
    async fn neither_side_advertises_quic_datagrams() {
        for as_remote in [false, true] {
            let (c, s) = pair(&Limits::default(), &Limits::default(), as_remote).await;
            assert_eq!(
                (c.max_datagram_size(), s.max_datagram_size()),
                (None, None),
                "as_remote: {as_remote}"
            );
        }
    }

    #[test]
    fn max_udp_payload_outside_quic_range_is_refused() {
        for bad in [0, 1199, 65528] {
            let l = Limits {
                max_udp_payload: bad,
                ..Limits::default()
            };
            assert!(
                matches!(l.validate(), Err(Error::InvalidConfig(_))),
                "{bad}"
            );
        }
    }
}
