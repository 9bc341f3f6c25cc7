//! QUIC transport on quinn: endpoints with raised UDP buffers, transport parameters from
//! [`Limits`], and the mapping of quinn's errors onto weida's loss causes.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

use quinn::{ConnectionError, ReadError, VarInt, WriteError};

use super::StreamError;
use crate::config::Limits;
use crate::error::{Error, LossCause};
use crate::fingerprint::Fingerprint;
use crate::tls::{self, Presented};
use crate::trust::{ClientTls, ServerTls};
use crate::wire::Code;

fn varint(n: u64) -> VarInt {
    VarInt::from_u64(n.min(crate::wire::varint::MAX)).expect("clamped to the varint range")
}

/// Transport parameters from a [`Limits`] profile. Only the dialling side sends keep-alives
/// (PATTERNS §1.8).
pub(crate) fn transport_config(
    limits: &Limits,
    dialling: bool,
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
    Ok(t)
}

/// A UDP socket with buffers raised to `buffer` bytes: the 208 KiB default drops packets on a
/// busy loopback. As root the kernel's rmem_max/wmem_max cap is bypassed with the FORCE options.
pub(crate) fn udp_socket(addr: SocketAddr, buffer: usize) -> Result<UdpSocket, Error> {
    use socket2::{Domain, Protocol, Socket, Type};
    let domain = if addr.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        // A dual-stack socket so one client endpoint reaches IPv4 and IPv6 peers.
        let _ = s.set_only_v6(false);
    }
    if buffer > 0 {
        let _ = s.set_recv_buffer_size(buffer);
        let _ = s.set_send_buffer_size(buffer);
        force_buffers(&s, buffer);
    }
    s.bind(&addr.into())?;
    tracing::debug!(
        recv = s.recv_buffer_size().unwrap_or(0),
        send = s.send_buffer_size().unwrap_or(0),
        %addr,
        "udp socket"
    );
    Ok(s.into())
}

fn force_buffers(s: &socket2::Socket, buffer: usize) {
    use std::os::fd::AsRawFd;
    let v: libc::c_int = buffer.min(i32::MAX as usize) as libc::c_int;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
        // SAFETY: setsockopt with a valid fd, a c_int value and its size.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                &v as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

fn endpoint(
    socket: UdpSocket,
    server: Option<quinn::ServerConfig>,
) -> Result<quinn::Endpoint, Error> {
    Ok(quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        server,
        socket,
        Arc::new(quinn::TokioRuntime),
    )?)
}

/// The dialling endpoint a runtime shares across its connections.
pub(crate) fn client_endpoint(buffer: usize) -> Result<quinn::Endpoint, Error> {
    let socket = udp_socket("[::]:0".parse().unwrap(), buffer)
        .or_else(|_| udp_socket("0.0.0.0:0".parse().unwrap(), buffer))?;
    endpoint(socket, None)
}

/// A listening endpoint at `addr`.
pub(crate) fn server_endpoint(
    addr: SocketAddr,
    tls: &ServerTls,
    limits: &Limits,
    buffer: usize,
) -> Result<quinn::Endpoint, Error> {
    let mut sc = tls::quic_server_config(tls)?;
    sc.transport_config(Arc::new(transport_config(limits, false)?));
    endpoint(udp_socket(addr, buffer)?, Some(sc))
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
    let mut cc = tls::quic_client_config(client, pin, presented.clone())?;
    cc.transport_config(Arc::new(transport_config(limits, true)?));
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
                ConnectionError::TimedOut => Error::Timeout,
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
