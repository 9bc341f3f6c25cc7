//! The UDP socket under quinn: kernel buffers raised, and send batches kept within what one
//! `sendmsg` may carry.
//!
//! quinn hands its socket up to ten datagrams of the path MTU at once for one segmentation-
//! offload (GSO) send. The kernel builds the whole batch as one IP packet before it cuts it,
//! so a batch above 64 KiB fails with EMSGSIZE, which quinn-udp treats as a lost MTU probe
//! and ignores: every datagram in it is lost. At Ethernet's 1452 bytes ten fit; once
//! discovery finds loopback's 64 KiB datagrams (`Limits::max_udp_payload`) almost no batch
//! does, and loss recovery collapses the congestion window. [`quinn_socket`] splits such a
//! batch into sends the kernel takes.

use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, Runtime, UdpPoller};

use crate::error::Error;

/// The most bytes one GSO send may carry: one IP packet's 65 535 less the IPv4 and UDP
/// headers (IPv4's is the smaller limit, and a dual-stack socket sends IPv4 too).
pub(crate) const MAX_BATCH_BYTES: usize = 65_535 - 20 - 8;

/// A UDP socket with buffers raised to `buffer` bytes: the 208 KiB default drops packets on a
/// busy loopback. As root the kernel's rmem_max/wmem_max cap is bypassed with the FORCE options.
///
/// Public (hidden, with `bench-hooks`) only so that weida-bench's raw quinn baseline runs on
/// the same socket.
#[cfg_attr(not(feature = "bench-hooks"), allow(unreachable_pub))]
pub fn udp_socket(addr: SocketAddr, buffer: usize) -> Result<UdpSocket, Error> {
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
                size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// The loopback interface's MTU (Linux and Android; elsewhere None, and discovery finds it).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn loopback_mtu() -> Option<u32> {
    use std::os::fd::AsRawFd;
    let probe = UdpSocket::bind("127.0.0.1:0").ok()?;
    // SAFETY: an all-zero ifreq is valid (an empty name, a zero union).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *d = *s as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads the NUL-terminated name and writes the MTU into the ifreq,
    // which outlives the call; the fd is an open socket.
    let r = unsafe { libc::ioctl(probe.as_raw_fd(), libc::SIOCGIFMTU, &mut req) };
    // SAFETY: a successful SIOCGIFMTU set the union's MTU member.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    (r == 0 && mtu > 0).then_some(mtu as u32)
}

/// The loopback interface's MTU (Linux and Android; elsewhere None, and discovery finds it).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn loopback_mtu() -> Option<u32> {
    None
}

/// `socket` as quinn drives it on tokio, with batches above `MAX_BATCH_BYTES` split.
///
/// Public (hidden, with `bench-hooks`) only so that weida-bench's raw quinn baseline runs on
/// the same socket.
#[cfg_attr(not(feature = "bench-hooks"), allow(unreachable_pub))]
pub fn quinn_socket(socket: UdpSocket) -> io::Result<Arc<dyn AsyncUdpSocket>> {
    let inner = quinn::TokioRuntime.wrap_udp_socket(socket)?;
    Ok(Arc::new(Batches { inner }))
}

/// A quinn socket whose sends never pass [`MAX_BATCH_BYTES`].
struct Batches {
    inner: Arc<dyn AsyncUdpSocket>,
}

impl fmt::Debug for Batches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Batches").field(&self.inner).finish()
    }
}

/// Sends `t` through `send` in parts of whole datagrams, each within [`MAX_BATCH_BYTES`]. A
/// socket that is full before the first part gives WouldBlock (quinn retries the whole
/// batch); one that fills after it loses the rest, as a full socket buffer would, and QUIC's
/// loss recovery sends it again.
fn send_split(
    t: &Transmit<'_>,
    mut send: impl FnMut(&Transmit<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let Some(seg) = t
        .segment_size
        .filter(|_| t.contents.len() > MAX_BATCH_BYTES)
    else {
        return send(t);
    };
    let part_len = (MAX_BATCH_BYTES / seg).max(1) * seg;
    for (i, part) in t.contents.chunks(part_len).enumerate() {
        let sub = Transmit {
            destination: t.destination,
            ecn: t.ecn,
            contents: part,
            segment_size: (part.len() > seg).then_some(seg),
            src_ip: t.src_ip,
        };
        match send(&sub) {
            Ok(()) => {}
            Err(e) if i == 0 => return Err(e),
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

impl AsyncUdpSocket for Batches {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.inner.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit<'_>) -> io::Result<()> {
        send_split(transmit, |t| self.inner.try_send(t))
    }

    fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.inner.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transmit(contents: &[u8], segment_size: Option<usize>) -> Transmit<'_> {
        Transmit {
            destination: "127.0.0.1:9".parse().unwrap(),
            ecn: None,
            contents,
            segment_size,
            src_ip: None,
        }
    }

    /// What `send_split` handed on: (bytes, segment size) per send.
    fn parts(
        t: &Transmit<'_>,
        fail_at: Option<usize>,
    ) -> (io::Result<()>, Vec<(usize, Option<usize>)>) {
        let mut seen = Vec::new();
        let r = send_split(t, |s| {
            if Some(seen.len()) == fail_at {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            seen.push((s.contents.len(), s.segment_size));
            Ok(())
        });
        (r, seen)
    }

    #[test]
    fn a_batch_within_one_ip_packet_goes_whole() {
        let bytes = vec![0u8; 10 * 1452];
        let (r, seen) = parts(&transmit(&bytes, Some(1452)), None);
        assert!(r.is_ok());
        assert_eq!(seen, [(10 * 1452, Some(1452))]);
    }

    #[test]
    fn a_larger_batch_is_cut_at_datagram_boundaries() {
        // Ten 16 000-byte datagrams, the last one short: four per send at most.
        let bytes = vec![0u8; 9 * 16_000 + 700];
        let (r, seen) = parts(&transmit(&bytes, Some(16_000)), None);
        assert!(r.is_ok());
        assert_eq!(
            seen,
            [
                (64_000, Some(16_000)),
                (64_000, Some(16_000)),
                (16_700, Some(16_000)),
            ]
        );
        assert!(seen.iter().all(|(n, _)| *n <= MAX_BATCH_BYTES));
        // Datagrams of 64 KiB go one per send, as plain datagrams.
        let big = vec![0u8; 3 * 65_000];
        let (_, seen) = parts(&transmit(&big, Some(65_000)), None);
        assert_eq!(seen, [(65_000, None); 3]);
    }

    #[test]
    fn a_full_socket_before_the_first_part_is_retried_whole_and_after_it_loses_the_rest() {
        let bytes = vec![0u8; 8 * 16_000];
        let t = transmit(&bytes, Some(16_000));
        let (r, seen) = parts(&t, Some(0));
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::WouldBlock);
        assert!(seen.is_empty());
        let (r, seen) = parts(&t, Some(1));
        assert!(
            r.is_ok(),
            "the first part left: quinn must not send it again"
        );
        assert_eq!(seen, [(64_000, Some(16_000))]);
    }
}
