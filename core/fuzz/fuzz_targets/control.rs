//! The control stream: frames are decoded one after another from the input, as the control
//! reader does. No input panics the decoder, "need more bytes" is never an error, and every
//! frame that decodes re-encodes to bytes that decode to the same frame.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weida::wire::{ControlFrame, DecodeError};

/// Guarantee sets are maps: the order of their pairs is not part of the value.
fn normalized(mut f: ControlFrame) -> ControlFrame {
    if let ControlFrame::Hello(h) = &mut f {
        h.offered.other.sort_unstable();
        h.required.other.sort_unstable();
    }
    f
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    loop {
        match ControlFrame::decode(rest) {
            Ok(Some((f, used))) => {
                assert!(used > 0 && used <= rest.len());
                let mut enc = Vec::new();
                f.encode(&mut enc);
                assert!(
                    enc.len() <= used,
                    "re-encoding grew: {} > {used}",
                    enc.len()
                );
                let (again, n) = ControlFrame::decode(&enc)
                    .expect("a re-encoded frame decodes")
                    .expect("a re-encoded frame is whole");
                assert_eq!(n, enc.len());
                assert_eq!(normalized(again), normalized(f));
                rest = &rest[used..];
            }
            Ok(None) => break,
            Err(e) => {
                assert_ne!(
                    e,
                    DecodeError::Truncated,
                    "need-more is Ok(None), not an error"
                );
                break;
            }
        }
    }
});
