//! Security: who a peer is and whom each side accepts. An [`identity::Identity`] (a key and its
//! certificate), the [`fingerprint::Fingerprint`] that names it, the [`trust`] terms of each
//! side, and the rustls configurations and verifiers that enforce them ([`tls`]).
//!
//! Owns: keys, certificates, fingerprints, trust decisions, rustls configurations.
//! Must not: touch a socket, a stream or a connection, or name quinn: transport/quic.rs wraps
//! these configurations for QUIC. It imports only `wire` and the foundation modules below it
//! (docs/ARCHITECTURE.md §1, checked by
//! `core/layers.py`).

pub(crate) mod fingerprint;
pub(crate) mod identity;
pub(crate) mod tls;
pub(crate) mod trust;
