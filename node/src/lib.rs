//! The Node binding of weida: a napi-rs addon (`weida.<platform>.node`, loaded by native.cjs)
//! under the TypeScript layer in lib/. A binding only converts; behaviour lives in the core.
//! One file per core module it projects (docs/BINDINGS.md): runtime, patterns, stream, error,
//! config, identity, address.

#![deny(clippy::all)]
// napi-derive generates the registration code for every exported item.
#![allow(unreachable_pub)]

/// The addon's allocator. A body a `send` copies in is allocated on the JS thread and freed on
/// the I/O thread once the lane has written it; under glibc's malloc each such free takes the
/// allocating arena's lock, and on the 1 KiB Push/Pull profile the allocations and the futex
/// wake-ups that lock caused were ~20 % of the JS thread. mimalloc frees across threads
/// without a shared lock. Only this addon's Rust allocations use it: what V8 or Node allocates
/// is theirs, and every buffer handed to JS is copied into memory V8 owns.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod address;
pub mod config;
pub mod error;
pub mod identity;
pub mod patterns;
pub mod runtime;
pub mod stream;
