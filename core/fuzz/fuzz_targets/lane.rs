//! The lane frame decoder: no input panics it, a body bound only ever refuses (never changes
//! what decodes), a frame uses no more than its input, and what decodes re-encodes to bytes
//! that decode to the same frame.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weida::wire::lane_frame::{decode_frame, encode_frame_head};
use weida::wire::DecodeError;

fuzz_target!(|data: &[u8]| {
    let unbounded = decode_frame(data, usize::MAX, u64::MAX);
    if let Ok(Some((f, used))) = &unbounded {
        assert!(*used <= data.len());
        assert!(f.body.end == *used && f.body.start <= f.body.end);
        assert!(f.header.path.is_none());
        let mut enc = Vec::new();
        encode_frame_head(&f.header, f.body.len(), &mut enc);
        enc.extend_from_slice(&data[f.body.clone()]);
        let (g, n) = decode_frame(&enc, usize::MAX, u64::MAX).unwrap().unwrap();
        assert_eq!(n, enc.len());
        assert_eq!(g.header, f.header);
        assert_eq!(&enc[g.body], &data[f.body.clone()]);
    }
    match decode_frame(data, usize::MAX, 16) {
        Err(DecodeError::TooLarge { len, limit, .. }) => assert!(len > limit),
        bounded => assert_eq!(bounded, unbounded),
    }
});
