//! The connection layer: a connection's life above the transport. Dialling (with this side of
//! the HELLO handshake) and accepting (the bound side, then dispatch of every stream the peer
//! opens), a dialled [`link::Link`] and its message lane, GOAWAY, the receipts `drain` waits
//! for, the control stream's reader, the reverse direction of Pub/Sub, and the stream handles
//! every pattern hands out ([`handles`]).
//!
//! Owns: the protocol's connection-level decisions (HELLO negotiation, which code refuses a
//! stream), what a connection and its streams count, and the handles' rules (`Indeterminate`,
//! cancel on drop).
//! Must not: know a pattern beyond the [`admission::RouteKind`] of an endpoint, hold the
//! routes or the pool (the runtime does: dispatch reaches the bound endpoints through the
//! [`dispatch::Endpoints`] trait, and a publisher through [`reverse::Publication`]), or name
//! quinn. It imports only `transport`, `security`, `wire` and the foundation modules
//! (docs/ARCHITECTURE.md §1, checked by
//! `core/layers.py`).

pub(crate) mod admission;
pub(crate) mod cancel;
pub(crate) mod context;
pub(crate) mod control;
pub(crate) mod dial;
pub(crate) mod dispatch;
pub(crate) mod goaway;
pub(crate) mod handles;
pub(crate) mod handshake;
pub(crate) mod lane;
pub(crate) mod link;
pub(crate) mod numbering;
pub(crate) mod receipts;
pub(crate) mod reverse;
pub(crate) mod share;
