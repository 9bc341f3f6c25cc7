//! QUIC variable-length integers (RFC 9000 §16): the one integer encoding of the weida wire.

use bytes::{Buf, BufMut};

use super::DecodeError;

/// The largest value a varint can carry (2^62 - 1).
pub const MAX: u64 = (1 << 62) - 1;

/// How many bytes `v` takes as a varint.
pub fn len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `v` in its shortest form. Values above [`MAX`] are a caller bug.
pub fn put(buf: &mut impl BufMut, v: u64) {
    debug_assert!(v <= MAX, "varint out of range: {v}");
    match len(v) {
        1 => buf.put_u8(v as u8),
        2 => buf.put_u16(0x4000 | v as u16),
        4 => buf.put_u32(0x8000_0000 | v as u32),
        _ => buf.put_u64(0xc000_0000_0000_0000 | v),
    }
}

/// Reads one varint; any encoding length is accepted, as RFC 9000 requires.
pub fn get(buf: &mut impl Buf) -> Result<u64, DecodeError> {
    if !buf.has_remaining() {
        return Err(DecodeError::Truncated);
    }
    let first = buf.chunk()[0];
    let n = 1usize << (first >> 6);
    if buf.remaining() < n {
        return Err(DecodeError::Truncated);
    }
    Ok(match n {
        1 => u64::from(buf.get_u8() & 0x3f),
        2 => u64::from(buf.get_u16() & 0x3fff),
        4 => u64::from(buf.get_u32() & 0x3fff_ffff),
        _ => buf.get_u64() & 0x3fff_ffff_ffff_ffff,
    })
}

/// How many bytes the varint starting with `first` occupies.
pub fn len_from_first_byte(first: u8) -> usize {
    1usize << (first >> 6)
}
