//! The DATA header decoder: no input panics it, a bound only ever refuses (never changes what
//! decodes), and what decodes re-encodes to bytes that decode to the same header.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weida::wire::{DecodeError, Header};

fn check_reencodes(h: &Header, took: usize) {
    let enc = h.to_bytes();
    assert!(
        enc.len() <= took,
        "re-encoding grew: {} > {took}",
        enc.len()
    );
    assert_eq!(Header::decode(&enc, usize::MAX), Ok((h.clone(), enc.len())));
}

fuzz_target!(|data: &[u8]| {
    let unbounded = Header::decode(data, usize::MAX);
    if let Ok((h, used)) = &unbounded {
        assert!(*used <= data.len());
        check_reencodes(h, *used);
    }
    // A bound refuses with TooLarge or gives what no bound gives.
    match Header::decode(data, 32) {
        Err(DecodeError::TooLarge { len, limit, .. }) => assert!(len > limit),
        bounded => assert_eq!(bounded, unbounded),
    }
    if let Ok(h) = Header::decode_body(data) {
        check_reencodes(&h, data.len() + 8);
    }
});
