//! The wire layer: protocol v0 as pure functions over bytes (docs/PROTOCOL.md is the normative
//! text).
//!
//! Nothing here touches a socket: transports move bytes, this module gives them meaning, so
//! every decoder can be tested and fuzzed on its own.
//!
//! Owns: the bytes of PROTOCOL.md (varints, the DATA header, control frames and HELLO, the
//! reply half and ERROR, error codes, lane frames, the AF_UNIX chunk framing). Every decoder
//! returns [`DecodeError`](crate::wire::DecodeError) and never panics.
//! Must not: touch a socket, a task or a clock, or import any other layer: only the foundation
//! modules (`error` for the code-to-error mapping; `core/layers.py` checks it).

pub mod chunk;
pub mod codes;
pub mod control;
pub mod header;
pub mod lane_frame;
pub mod reply;
pub mod varint;

pub use codes::Code;
pub use control::{
    check_streams, claim_role, ControlFrame, GuaranteeSet, Hello, Ordering, PathCheck, PathClaim,
    Session, Subscription, FEATURE_CLAIM, FEATURE_KEPT_SOCKETS, FEATURE_PATH_CHECK,
};
pub use header::{Header, HeaderRef, Metadata};
pub use reply::ReplyStatus;

/// Why bytes could not be decoded. Every decoder returns this and never panics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// More bytes are needed.
    #[error("truncated")]
    Truncated,
    /// The bytes violate the protocol; the text says how.
    #[error("{0}")]
    Malformed(String),
    /// A declared length is above the receiver's bound.
    #[error("{what} of {len} bytes is above the limit of {limit}")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// Its declared length.
        len: u64,
        /// The bound.
        limit: u64,
    },
    /// A version or stream type this implementation does not speak.
    #[error("unsupported {0}")]
    Unsupported(String),
}

impl DecodeError {
    pub(crate) fn malformed(s: impl Into<String>) -> Self {
        Self::Malformed(s.into())
    }
}

/// The first byte of every stream (PROTOCOL.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamType {
    /// The control stream: HELLO, then SUBSCRIBE/UNSUBSCRIBE/GOAWAY/CLOSE frames.
    Control,
    /// A one-way transfer: DATA header, then the body until FIN.
    Transfer,
    /// The request half of an exchange; the reply half answers with a status byte.
    Exchange,
    /// A message lane: a long-lived one-way stream of framed complete messages (`lane_frame`).
    Lane,
    /// A connection a local-socket subscriber parks for its publisher to write a copy on
    /// (PROTOCOL.md §3.7): `04 token_len:varint token`, then the reverse direction carries a
    /// transfer.
    Parked,
}

impl StreamType {
    /// Its byte.
    pub fn to_byte(self) -> u8 {
        match self {
            Self::Control => 0x00,
            Self::Transfer => 0x01,
            Self::Exchange => 0x02,
            Self::Lane => 0x03,
            Self::Parked => 0x04,
        }
    }

    /// From its byte; an unknown type is `Unsupported` (the receiver answers UNSUPPORTED).
    pub fn from_byte(b: u8) -> Result<Self, DecodeError> {
        Ok(match b {
            0x00 => Self::Control,
            0x01 => Self::Transfer,
            0x02 => Self::Exchange,
            0x03 => Self::Lane,
            0x04 => Self::Parked,
            other => {
                return Err(DecodeError::Unsupported(format!(
                    "stream type 0x{other:02x}"
                )))
            }
        })
    }
}

/// Reads a length-prefixed field map body: `(key varint, len varint, value)*` until `buf` is
/// empty. Shared by the DATA header and HELLO.
pub(crate) fn fields(
    mut buf: &[u8],
) -> impl Iterator<Item = Result<(u64, &[u8]), DecodeError>> + '_ {
    std::iter::from_fn(move || {
        if buf.is_empty() {
            return None;
        }
        let r = (|| {
            let key = varint::get(&mut buf).map_err(|_| DecodeError::malformed("truncated key"))?;
            let len =
                varint::get(&mut buf).map_err(|_| DecodeError::malformed("truncated length"))?;
            if len > buf.len() as u64 {
                return Err(DecodeError::malformed(format!(
                    "field 0x{key:x} declares {len} bytes, {} remain",
                    buf.len()
                )));
            }
            let (v, rest) = buf.split_at(len as usize);
            buf = rest;
            Ok((key, v))
        })();
        if r.is_err() {
            buf = &[];
        }
        Some(r)
    })
}

pub(crate) fn put_field(out: &mut Vec<u8>, key: u64, value: &[u8]) {
    varint::put(out, key);
    varint::put(out, value.len() as u64);
    out.extend_from_slice(value);
}

pub(crate) fn put_varint_field(out: &mut Vec<u8>, key: u64, v: u64) {
    varint::put(out, key);
    varint::put(out, varint::len(v) as u64);
    varint::put(out, v);
}

pub(crate) fn varint_value(key: u64, mut v: &[u8]) -> Result<u64, DecodeError> {
    let n = varint::get(&mut v)
        .map_err(|_| DecodeError::malformed(format!("field 0x{key:x}: truncated varint")))?;
    if !v.is_empty() {
        return Err(DecodeError::malformed(format!(
            "field 0x{key:x}: {} bytes after its varint",
            v.len()
        )));
    }
    Ok(n)
}

pub(crate) fn utf8_value(key: u64, v: &[u8]) -> Result<String, DecodeError> {
    String::from_utf8(v.to_vec())
        .map_err(|_| DecodeError::malformed(format!("field 0x{key:x} is not UTF-8")))
}
