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
