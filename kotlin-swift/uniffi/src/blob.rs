//! [`Blob`]: a message body across the FFI, copied whole.
//!
//! UniFFI carries a `Vec<u8>` as any `Vec<T>`: one `u8` at a time, pushed with a capacity
//! check when lowered and read with a bounds check when lifted. Profiled on the Kotlin bench,
//! that loop was the largest Rust frame of a batched receive at 64 B and about 1 µs per
//! message of each side at 1 KiB (docs/PERFORMANCE.md, "Kotlin"). A `Blob` has the same
//! encoding (a big-endian i32 length, then the bytes) and the same type metadata, so the
//! bindings generated for it are byte for byte those of a `Vec<u8>` (Kotlin `ByteArray`, Swift
//! `Data`, and the same API checksums); only this side copies with `extend_from_slice` and
//! `to_vec`. The unit tests check the encoding against UniFFI's own `Vec<u8>`.

use uniffi::deps::anyhow::{anyhow, ensure};
use uniffi::{FfiConverter, MetadataBuffer, RustBuffer, TypeId};

use crate::UniFfiTag;

/// Bytes across the FFI as UniFFI's `Vec<u8>`, copied whole ([module doc](self)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

impl From<Vec<u8>> for Blob {
    fn from(v: Vec<u8>) -> Self {
        Self(v)
    }
}

impl From<Blob> for bytes::Bytes {
    fn from(b: Blob) -> Self {
        b.0.into()
    }
}

// SAFETY: `lower` returns a RustBuffer made from a Vec, which `try_lift` (or the foreign side)
// takes back whole; the encoding is Vec<u8>'s, so the foreign code's converter reads it.
unsafe impl FfiConverter<UniFfiTag> for Blob {
    type FfiType = RustBuffer;

    fn lower(obj: Self) -> RustBuffer {
        let mut buf = Vec::with_capacity(4 + obj.0.len());
        <Self as FfiConverter<UniFfiTag>>::write(obj, &mut buf);
        RustBuffer::from_vec(buf)
    }

    fn try_lift(v: RustBuffer) -> uniffi::Result<Self> {
        let v = v.destroy_into_vec();
        let mut rest = v.as_slice();
        let blob = <Self as FfiConverter<UniFfiTag>>::try_read(&mut rest)?;
        ensure!(
            rest.is_empty(),
            "junk data left in buffer after lifting a Blob"
        );
        Ok(blob)
    }

    fn write(obj: Self, buf: &mut Vec<u8>) {
        // UniFFI limits a sequence to i32::MAX items, and panics above it as this does.
        let len = i32::try_from(obj.0.len()).expect("a body above 2 GiB");
        buf.extend_from_slice(&len.to_be_bytes());
        buf.extend_from_slice(&obj.0);
    }

    fn try_read(buf: &mut &[u8]) -> uniffi::Result<Self> {
        let (len, rest) = buf
            .split_first_chunk::<4>()
            .ok_or_else(|| anyhow!("a Blob's length cut short"))?;
        let len = usize::try_from(i32::from_be_bytes(*len))?;
        ensure!(rest.len() >= len, "a Blob of {len} bytes cut short");
        let (bytes, rest) = rest.split_at(len);
        *buf = rest;
        Ok(Self(bytes.to_vec()))
    }

    const TYPE_ID_META: MetadataBuffer = <Vec<u8> as TypeId<UniFfiTag>>::TYPE_ID_META;
}

uniffi::derive_ffi_traits!(local Blob);

#[cfg(test)]
mod tests {
    use uniffi::{Lift, Lower};

    use super::*;

    #[test]
    fn a_blob_is_encoded_as_uniffis_vec_of_u8_both_ways() {
        for body in [
            vec![],
            vec![7],
            (0..=255).collect::<Vec<u8>>(),
            vec![0xa5; 70_000],
        ] {
            let mut ours = Vec::new();
            <Blob as Lower<UniFfiTag>>::write(Blob(body.clone()), &mut ours);
            let mut theirs = Vec::new();
            <Vec<u8> as Lower<UniFfiTag>>::write(body.clone(), &mut theirs);
            assert_eq!(ours, theirs);

            let read = <Blob as Lift<UniFfiTag>>::try_read(&mut theirs.as_slice()).unwrap();
            assert_eq!(read.0, body);
            let lifted = <Blob as Lift<UniFfiTag>>::try_lift(<Vec<u8> as Lower<UniFfiTag>>::lower(
                body.clone(),
            ))
            .unwrap();
            assert_eq!(lifted.0, body);
            let back = <Vec<u8> as Lift<UniFfiTag>>::try_lift(<Blob as Lower<UniFfiTag>>::lower(
                Blob(body.clone()),
            ))
            .unwrap();
            assert_eq!(back, body);
        }
    }

    #[test]
    fn a_blob_cut_short_or_followed_by_junk_is_refused() {
        assert!(<Blob as Lift<UniFfiTag>>::try_read(&mut [0u8, 0, 0].as_slice()).is_err());
        assert!(<Blob as Lift<UniFfiTag>>::try_read(&mut [0u8, 0, 0, 2, 9].as_slice()).is_err());
        assert!(<Blob as Lift<UniFfiTag>>::try_read(&mut [0xffu8, 0, 0, 0].as_slice()).is_err());
        let mut junk = Vec::new();
        <Vec<u8> as Lower<UniFfiTag>>::write(vec![1, 2], &mut junk);
        junk.push(0);
        assert!(<Blob as Lift<UniFfiTag>>::try_lift(RustBuffer::from_vec(junk)).is_err());
    }
}
