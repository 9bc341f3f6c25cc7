//! # weida
//!
//! ZeroMQ's idea on QUIC: messaging patterns (Req/Rep, Push/Pull, Pub/Sub, raw streams) over QUIC,
//! in process and over AF_UNIX, with peers named by the SHA-256 fingerprint of their key.
//! A stream per message is the unit of delivery, receipt, cancel and backpressure.
//!
//! ```no_run
//! # async fn f() -> weida::Result<()> {
//! use weida::{Runtime, RuntimeConfig};
//! let rt = Runtime::new(RuntimeConfig::default())?;
//! let listener = rt.bind("weida://127.0.0.1:0").await?;
//! let puller = listener.puller("/jobs")?;
//! let pusher = rt.pusher();
//! pusher.connect(&puller.address().to_string()).await?;
//! pusher.send("hello").await?;
//! let msg = puller.recv().await?;
//! assert_eq!(&msg.body[..], b"hello");
//! # Ok(()) }
//! ```
//!
//! The behaviour is specified in docs/PATTERNS.md and docs/GUARANTEES.md, the wire in
//! docs/PROTOCOL.md; every claim there names the test that defends it.

#![warn(missing_docs)]

pub mod address;
mod config;
mod error;
mod feed;
pub mod filter;
mod fingerprint;
mod hub;
mod identity;
mod lane;
mod ordering;
mod patterns;
mod queue;
mod runtime;
mod stream;
mod tls;
mod transport;
mod trust;
pub mod wire;

pub use address::Address;
pub use config::{Limits, RuntimeConfig};
pub use error::{AddressPart, Error, ErrorCode, FieldValue, Limit, LossCause, Result};
pub use fingerprint::Fingerprint;
pub use identity::{fingerprint_of_certificate, Identity};
pub use patterns::{
    Acceptor, DropCause, Dropped, FanOut, Peer, Publisher, Puller, Pusher, Receiving, Replier,
    Requester, Subscriber,
};
pub use runtime::{Counters, Drained, Incoming, Listener, Runtime};
pub use stream::{
    Delivery, Exchange, IncomingMeta, IncomingTransfer, Message, OutgoingTransfer, PendingReply,
};
pub use transport::PeerIdentity;
#[doc(hidden)]
pub use transport::{
    quic::transport_config as quinn_transport_config,
    udp::{quinn_socket, udp_socket},
};
pub use trust::{ClientTls, ServerTls, Trust};
pub use wire::{GuaranteeSet, Metadata, Ordering};
