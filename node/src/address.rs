//! Addresses as strings (`weida://sha256:<hex>@host:port/path`, `weida+unix:///s.sock//path`,
//! `weida+inproc://name/path`): the core's `Address` edits a caller needs to derive one.

use napi::Env;
use napi_derive::napi;
use weida::Address;

use crate::error;

fn parse(env: &Env, address: &str) -> napi::Result<Address> {
    Address::parse(address).map_err(|e| error::throw(env, e))
}

/// `address` with its endpoint path set to `path` (each transport spells the path its way).
#[napi]
pub fn with_path(env: Env, address: String, path: String) -> napi::Result<String> {
    parse(&env, &address)?
        .with_path(&path)
        .map(|a| a.to_string())
        .map_err(|e| error::throw(&env, e))
}

/// `address` pinning the key `fingerprint` (`sha256:…`); QUIC addresses only.
#[napi]
pub fn with_pin(env: Env, address: String, fingerprint: String) -> napi::Result<String> {
    let fp = fingerprint.parse().map_err(|e| error::throw(&env, e))?;
    parse(&env, &address)?
        .with_pin(fp)
        .map(|a| a.to_string())
        .map_err(|e| error::throw(&env, e))
}

/// `address` without its endpoint path: what a listener binds.
#[napi]
pub fn without_path(env: Env, address: String) -> napi::Result<String> {
    Ok(parse(&env, &address)?.without_path().to_string())
}
