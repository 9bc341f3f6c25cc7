//! Shared test scaffolding: one body per behaviour, run over every transport.
#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicU64, Ordering};

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

pub fn config(limits: Limits) -> RuntimeConfig {
    RuntimeConfig {
        limits,
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
                ($body)($crate::common::Transport::Quic).await
            }
            #[tokio::test]
            async fn inproc() {
                ($body)($crate::common::Transport::Inproc).await
            }
            #[tokio::test]
            async fn unix() {
                ($body)($crate::common::Transport::Unix).await
            }
        }
    };
}
