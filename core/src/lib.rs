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
mod connection;
mod error;
mod patterns;
mod runtime;
mod security;
pub mod service;
mod transport;
/// The wire codec (docs/PROTOCOL.md). Unstable and not API: public only with the `internals`
/// feature, for the fuzz targets and the codec's tests.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod wire;
// Its items are `pub` for `internals`; without it they are the crate's own, and the decoders
// nothing in the library calls (the reference lane frame decoder, ...) are the ones the fuzz
// targets and the vectors exercise.
#[cfg(not(feature = "internals"))]
#[allow(unreachable_pub, dead_code)]
mod wire;

/// Pub/Sub topic filters: the grammar and a matching trie (its home is `patterns/pubsub/`).
pub use patterns::pubsub::filter;

pub use address::Address;
pub use config::{
    EndpointOptions, GiveUp, Limits, OutboxFull, ReconnectPolicy, RuntimeConfig, StopOn,
};
pub use connection::cancel::Canceler;
pub use connection::handles::{
    Delivery, Exchange, Incoming, IncomingMeta, IncomingTransfer, Message, OutgoingTransfer,
    PendingReply,
};
pub use error::{AddressPart, Error, ErrorCode, FieldValue, Limit, LossCause, Result, Unanswered};
pub use patterns::{
    Acceptor, BoundPusher, BoundSubscriber, Bus, DialingPublisher, DialingPuller, DropCause,
    Dropped, FanOut, Pair, Peer, Publisher, Puller, Pusher, Receiving, Replier, Requester,
    Respondent, Subscriber, SurveyRun, Surveyor,
};
pub use runtime::counters::Counters;
pub use runtime::events::{Missed, PeerEvent, PeerEvents};
pub use runtime::listener::Listener;
pub use runtime::{Drained, Runtime};
pub use security::fingerprint::Fingerprint;
pub use security::identity::{fingerprint_of_certificate, Identity};
pub use security::trust::{ClientTls, ServerTls, Trust};
pub use transport::PeerIdentity;
/// weida-bench's raw quinn baseline (the `bench-hooks` feature): not API.
#[cfg(feature = "bench-hooks")]
#[doc(hidden)]
pub use transport::{
    quic::transport_config as quinn_transport_config,
    udp::{quinn_socket, udp_socket},
};
pub use wire::{GuaranteeSet, Metadata, Ordering};
