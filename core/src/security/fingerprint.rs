//! `Fingerprint`: the SHA-256 of a peer's public key, the name weida gives a peer.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::error::{AddressPart, Error};

/// The SHA-256 of a public key (its DER `SubjectPublicKeyInfo`), written `sha256:<64 hex>`.
///
/// The fingerprint names the key, not the certificate, so a certificate renewed under the same
/// key keeps its fingerprint.
///
/// ```
/// use weida::Fingerprint;
/// let fp: Fingerprint = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
///     .parse()
///     .unwrap();
/// assert_eq!(fp.to_string().len(), 7 + 64);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER-encoded `SubjectPublicKeyInfo`.
    pub fn of_public_key(spki_der: &[u8]) -> Self {
        Self(Sha256::digest(spki_der).into())
    }

    /// From the raw 32 digest bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw 32 digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex of the digest, without the `sha256:` prefix.
    pub fn hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from_digit((b >> 4) as u32, 16).unwrap());
            s.push(char::from_digit((b & 15) as u32, 16).unwrap());
        }
        s
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

impl FromStr for Fingerprint {
    type Err = Error;

    /// Accepts `sha256:<64 hex>`; hex digits in either case.
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = |reason: String| Error::InvalidAddress {
            part: AddressPart::Pin,
            reason,
        };
        let hex = s
            .strip_prefix("sha256:")
            .ok_or_else(|| bad(format!("{s:?} does not start with \"sha256:\"")))?;
        if hex.len() != 64 {
            return Err(bad(format!(
                "a sha256 fingerprint has 64 hex digits, {:?} has {}",
                hex,
                hex.len()
            )));
        }
        let mut out = [0u8; 32];
        for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
            let digit = |c: u8| {
                (c as char)
                    .to_digit(16)
                    .ok_or_else(|| bad(format!("{:?} is not a hex digit", c as char)))
            };
            out[i] = (digit(pair[0])? << 4 | digit(pair[1])?) as u8;
        }
        Ok(Self(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips_and_rejects_malformed() {
        let fp = Fingerprint::of_public_key(b"key");
        assert_eq!(fp.to_string().parse::<Fingerprint>().unwrap(), fp);
        assert_eq!(
            fp.to_string()
                .to_uppercase()
                .replace("SHA256", "sha256")
                .parse::<Fingerprint>()
                .unwrap(),
            fp
        );
        for bad in [
            "",
            "sha256:",
            "md5:00",
            "sha256:zz",
            &format!("sha256:{}0", fp.hex()),
        ] {
            assert!(matches!(
                bad.parse::<Fingerprint>(),
                Err(Error::InvalidAddress {
                    part: AddressPart::Pin,
                    ..
                })
            ));
        }
    }
}
