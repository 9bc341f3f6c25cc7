//! The Node binding of weida: a napi-rs addon (`weida.<platform>.node`, loaded by native.cjs)
//! under the TypeScript layer in lib/. A binding only converts; behaviour lives in the core.
//! One file per core module it projects (docs/BINDINGS.md): runtime, patterns, stream, error,
//! config, identity, address.

#![deny(clippy::all)]
// napi-derive generates the registration code for every exported item.
#![allow(unreachable_pub)]

pub mod address;
pub mod config;
pub mod error;
pub mod identity;
pub mod patterns;
pub mod runtime;
pub mod stream;
