//! The reply half of an exchange (PROTOCOL.md §6): a status byte, then either a DATA header
//! and the reply body, or an ERROR with a code and a message.
//!
//! ```text
//! reply = 0x00 header body...FIN
//!       | 0x01 code:varint  message_len:varint  message(UTF-8)  FIN
//! ```

use super::{varint, Code, DecodeError};

/// The first byte of a reply half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyStatus {
    /// A reply: a DATA header and the body follow.
    Ok,
    /// An ERROR frame follows.
    Error,
}

impl ReplyStatus {
    /// Its byte.
    pub fn to_byte(self) -> u8 {
        match self {
            Self::Ok => 0x00,
            Self::Error => 0x01,
        }
    }

    /// From its byte.
    pub fn from_byte(b: u8) -> Result<Self, DecodeError> {
        match b {
            0x00 => Ok(Self::Ok),
            0x01 => Ok(Self::Error),
            other => Err(DecodeError::malformed(format!(
                "reply status 0x{other:02x}"
            ))),
        }
    }
}

/// The longest message an ERROR frame may carry; longer ones are truncated by the writer.
pub const MAX_ERROR_MESSAGE: usize = 1024;

/// Encodes an ERROR reply half (status byte included).
pub fn encode_error(code: Code, message: &str, out: &mut Vec<u8>) {
    let mut m = message;
    if m.len() > MAX_ERROR_MESSAGE {
        let mut end = MAX_ERROR_MESSAGE;
        while !m.is_char_boundary(end) {
            end -= 1;
        }
        m = &m[..end];
    }
    out.push(ReplyStatus::Error.to_byte());
    varint::put(out, code.to_u64());
    varint::put(out, m.len() as u64);
    out.extend_from_slice(m.as_bytes());
}

/// Decodes what follows the ERROR status byte. The frame must be all of `buf` (the writer
/// finishes the stream after it).
pub fn decode_error(buf: &[u8]) -> Result<(Code, String), DecodeError> {
    let mut cur = buf;
    let code = varint::get(&mut cur)?;
    let len = varint::get(&mut cur)?;
    if len > MAX_ERROR_MESSAGE as u64 {
        return Err(DecodeError::TooLarge {
            what: "error message",
            len,
            limit: MAX_ERROR_MESSAGE as u64,
        });
    }
    if (cur.len() as u64) < len {
        return Err(DecodeError::Truncated);
    }
    if cur.len() as u64 > len {
        return Err(DecodeError::malformed("bytes after the ERROR frame"));
    }
    let msg = std::str::from_utf8(cur)
        .map_err(|_| DecodeError::malformed("error message is not UTF-8"))?
        .to_string();
    Ok((Code::from_u64(code), msg))
}
