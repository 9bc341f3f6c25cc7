//! Addresses as text, parsed and rebuilt by the core's `Address` (an AF_UNIX address ends its
//! socket path with `//` before the endpoint path, which no caller should have to know).

use crate::error::Result;

/// `address` with its endpoint path set to `path`.
#[uniffi::export]
pub fn address_with_path(address: String, path: String) -> Result<String> {
    Ok(weida::Address::parse(&address)?
        .with_path(&path)?
        .to_string())
}

/// `address` pinned to the key `fingerprint` (`sha256:…`).
#[uniffi::export]
pub fn address_with_pin(address: String, fingerprint: String) -> Result<String> {
    let fp: weida::Fingerprint = fingerprint.parse()?;
    Ok(weida::Address::parse(&address)?.with_pin(fp)?.to_string())
}

/// `address` with no endpoint path (what a listener is bound at).
#[uniffi::export]
pub fn address_without_path(address: String) -> Result<String> {
    Ok(weida::Address::parse(&address)?.without_path().to_string())
}

/// The endpoint path of `address`, if it has one.
#[uniffi::export]
pub fn address_path(address: String) -> Result<Option<String>> {
    Ok(weida::Address::parse(&address)?.path().map(str::to_string))
}

/// The key `address` pins (`sha256:…`), if it pins one.
#[uniffi::export]
pub fn address_pin(address: String) -> Result<Option<String>> {
    Ok(weida::Address::parse(&address)?
        .pin()
        .map(ToString::to_string))
}
