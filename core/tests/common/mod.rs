//! Shared test scaffolding: one body per behaviour, run over every transport.
#![allow(dead_code, unreachable_pub)]

pub mod raw;

use std::sync::atomic::{AtomicU64, Ordering};

pub mod fault_relay;

use weida::{Limits, Listener, Runtime, RuntimeConfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Quic,
    Inproc,
    Unix,
}

pub fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed) + u64::from(std::process::id()) * 1_000_000
}

/// A bind address on `t` that no other test uses.
pub fn bind_address(t: Transport) -> String {
    match t {
        Transport::Quic => "weida://127.0.0.1:0".to_string(),
        Transport::Inproc => format!("weida+inproc://test-{}", unique()),
        Transport::Unix => {
            let dir = std::env::temp_dir().join("weida-tests");
            std::fs::create_dir_all(&dir).unwrap();
            format!("weida+unix://{}/s{}.sock", dir.display(), unique())
        }
    }
}

/// `WEIDA_TEST_LANE_MAX` sets `RuntimeConfig::lane_max_message` for every test runtime made
/// here: `./dev test` runs the pattern tests with lanes on (the default) and off (`0`).
pub fn lane_max() -> usize {
    std::env::var("WEIDA_TEST_LANE_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(RuntimeConfig::default().lane_max_message)
}

pub fn lanes_on() -> bool {
    lane_max() > 0
}

/// A runtime's configuration for the tests: `limits`, the lane setting of the run, and no
/// redial. The tests written before redial existed assert what a loss does to an endpoint that
/// does not redial (`ReconnectPolicy::never()`, today's behaviour exactly); reconnect.rs
/// asserts the default, which redials.
pub fn config(limits: Limits) -> RuntimeConfig {
    RuntimeConfig {
        limits,
        lane_max_message: lane_max(),
        reconnect: weida::ReconnectPolicy::never(),
        ..RuntimeConfig::default()
    }
}

/// A bound runtime and a dialling one, both with `limits`.
pub async fn pair_with(t: Transport, limits: Limits) -> (Runtime, Listener, Runtime) {
    let server = Runtime::new(config(limits.clone())).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let client = Runtime::new(config(limits)).unwrap();
    (server, listener, client)
}

pub async fn pair(t: Transport) -> (Runtime, Listener, Runtime) {
    pair_with(t, Limits::default()).await
}

/// `payload` bytes of a recognisable pattern.
pub fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// Generates one `#[tokio::test]` per transport from an async body taking a `Transport`.
#[macro_export]
macro_rules! on_every_transport {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[tokio::test]
            async fn quic() {
                $crate::common::bounded(($body)($crate::common::Transport::Quic)).await
            }
            #[tokio::test]
            async fn inproc() {
                $crate::common::bounded(($body)($crate::common::Transport::Inproc)).await
            }
            #[tokio::test]
            async fn unix() {
                $crate::common::bounded(($body)($crate::common::Transport::Unix)).await
            }
        }
    };
}

/// A UDP relay between a QUIC client and server that can be frozen: while frozen it drops
/// every packet both ways, as a network that went silent would. Lets a test make a peer that
/// never acknowledges, or an idle timeout, without waiting on a clock of its own.
pub struct Relay {
    pub addr: std::net::SocketAddr,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
    server: std::sync::Arc<std::sync::Mutex<std::net::SocketAddr>>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    pub async fn start(server: std::net::SocketAddr) -> Self {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let front = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let back = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = front.local_addr().unwrap();
        let frozen = Arc::new(AtomicBool::new(false));
        let f = frozen.clone();
        let server = Arc::new(std::sync::Mutex::new(server));
        let to = server.clone();
        let task = tokio::spawn(async move {
            let mut client = None;
            let mut a = vec![0u8; 65536];
            let mut b = vec![0u8; 65536];
            loop {
                tokio::select! {
                    r = front.recv_from(&mut a) => {
                        let Ok((n, from)) = r else { break };
                        client = Some(from);
                        if !f.load(Ordering::Relaxed) {
                            let target = *to.lock().unwrap();
                            let _ = back.send_to(&a[..n], target).await;
                        }
                    }
                    r = back.recv_from(&mut b) => {
                        let Ok((n, from)) = r else { break };
                        let current = from == *to.lock().unwrap();
                        if let (Some(c), false, true) = (client, f.load(Ordering::Relaxed), current) {
                            let _ = front.send_to(&b[..n], c).await;
                        }
                    }
                }
            }
        });
        Self {
            addr,
            frozen,
            server,
            task,
        }
    }

    /// Forwards to `server` from now on (what the old one sends is dropped): the same address
    /// for the client, another server behind it.
    pub fn retarget(&self, server: std::net::SocketAddr) {
        *self.server.lock().unwrap() = server;
    }

    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::Relaxed);
    }

    /// Forwards again after [`Relay::freeze`].
    pub fn thaw(&self) {
        self.frozen.store(false, Ordering::Relaxed);
    }

    /// `address` (a QUIC listener's, with pin and path) pointed at this relay instead.
    pub fn address_for(&self, address: &weida::Address) -> String {
        let s = address.to_string();
        let at = s.find('@').unwrap();
        let slash = s[at..].find('/').map(|i| at + i).unwrap_or(s.len());
        format!("{}@{}{}", &s[..at], self.addr, &s[slash..])
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A runtime with `limits` bound on a fresh AF_UNIX socket, and the socket's path, for a local
/// process that connects to it by hand.
pub async fn local_listener(limits: Limits) -> (Runtime, Listener, std::path::PathBuf) {
    let server = Runtime::new(config(limits)).unwrap();
    let listener = server.bind(&bind_address(Transport::Unix)).await.unwrap();
    let path = match listener.address().target() {
        weida::address::Target::Unix(weida::address::UnixTarget::Path(p)) => p.clone(),
        other => panic!("not a socket path: {other:?}"),
    };
    (server, listener, path)
}

/// The socket address of a QUIC listener.
pub fn socket_addr(listener: &Listener) -> std::net::SocketAddr {
    match listener.address().target() {
        weida::address::Target::Quic { host, port } => format!("{host}:{port}").parse().unwrap(),
        other => panic!("not a QUIC listener: {other:?}"),
    }
}

/// Fails a test that hangs instead of hanging the suite (a hang is a bug, never a pass).
pub async fn bounded<F: std::future::Future<Output = ()>>(f: F) {
    tokio::time::timeout(std::time::Duration::from_secs(60), f)
        .await
        .expect("the test body did not finish within 60 s");
}
