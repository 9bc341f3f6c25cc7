//! The chunk framing of local socket streams (PROTOCOL.md §8): a stream socket has a
//! half-close but no abort, so a cancelled or dead writer would read as a complete payload.
//! Every write is a chunk, and FIN and RESET are chunks of their own.
//!
//! ```text
//! chunk = type:u8  len:u32(big-endian)  payload[len]
//! ```

use super::{varint, Code, DecodeError};

/// Bytes of a chunk's prefix.
pub const PREFIX: usize = 5;

/// Chunk types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkType {
    /// 0x00: stream bytes.
    Data,
    /// 0x01: the writer finished (len 0).
    Fin,
    /// 0x02: the writer abandoned the stream; payload is a code varint.
    Reset,
    /// 0x03: the reader asks the writer to stop; payload is a code varint.
    Stop,
    /// 0x04: a dialler asks the listener to keep this socket for further exchanges (len 0; the
    /// socket's first chunk, PROTOCOL.md §8.7).
    Keep,
}

impl ChunkType {
    /// Its byte.
    pub fn to_byte(self) -> u8 {
        match self {
            Self::Data => 0,
            Self::Fin => 1,
            Self::Reset => 2,
            Self::Stop => 3,
            Self::Keep => 4,
        }
    }

    /// From its byte.
    pub fn from_byte(b: u8) -> Result<Self, DecodeError> {
        Ok(match b {
            0 => Self::Data,
            1 => Self::Fin,
            2 => Self::Reset,
            3 => Self::Stop,
            4 => Self::Keep,
            o => return Err(DecodeError::malformed(format!("chunk type 0x{o:02x}"))),
        })
    }
}

/// Encodes a chunk prefix.
pub fn prefix(ty: ChunkType, len: u32) -> [u8; PREFIX] {
    let l = len.to_be_bytes();
    [ty.to_byte(), l[0], l[1], l[2], l[3]]
}

/// Decodes a chunk prefix, refusing a DATA chunk above `max_len` and a FIN with a payload.
pub fn decode_prefix(p: [u8; PREFIX], max_len: u32) -> Result<(ChunkType, u32), DecodeError> {
    let ty = ChunkType::from_byte(p[0])?;
    let len = u32::from_be_bytes([p[1], p[2], p[3], p[4]]);
    match ty {
        ChunkType::Data if len > max_len => Err(DecodeError::TooLarge {
            what: "chunk",
            len: len.into(),
            limit: max_len.into(),
        }),
        ChunkType::Fin if len != 0 => Err(DecodeError::malformed("FIN chunk with a payload")),
        ChunkType::Keep if len != 0 => Err(DecodeError::malformed("KEEP chunk with a payload")),
        ChunkType::Reset | ChunkType::Stop if !(1..=8).contains(&len) => Err(
            DecodeError::malformed("RESET/STOP chunk without exactly one code"),
        ),
        _ => Ok((ty, len)),
    }
}

/// Encodes a RESET or STOP chunk with its code.
pub fn code_chunk(ty: ChunkType, code: Code) -> Vec<u8> {
    let mut v = Vec::with_capacity(PREFIX + 8);
    let n = code.to_u64();
    v.extend_from_slice(&prefix(ty, varint::len(n) as u32));
    varint::put(&mut v, n);
    v
}

/// Decodes the payload of a RESET or STOP chunk.
pub fn decode_code(mut payload: &[u8]) -> Result<Code, DecodeError> {
    let n = varint::get(&mut payload)?;
    if !payload.is_empty() {
        return Err(DecodeError::malformed("bytes after a chunk's code"));
    }
    Ok(Code::from_u64(n))
}
