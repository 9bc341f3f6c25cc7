//! The reply half of an exchange: a status byte, then a DATA header or an ERROR frame that is
//! all the rest of the stream. No input panics, and what decodes re-encodes to the same value.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weida::wire::{reply, Header, ReplyStatus};

fuzz_target!(|data: &[u8]| {
    let Some((&status, rest)) = data.split_first() else {
        return;
    };
    // The ERROR frame decoder on its own, whatever the status byte says.
    if let Ok((code, message)) = reply::decode_error(rest) {
        assert!(message.len() <= reply::MAX_ERROR_MESSAGE);
        let mut enc = Vec::new();
        reply::encode_error(code, &message, &mut enc);
        assert_eq!(enc[0], ReplyStatus::Error.to_byte());
        assert_eq!(reply::decode_error(&enc[1..]), Ok((code, message)));
    }
    match ReplyStatus::from_byte(status) {
        Ok(ReplyStatus::Ok) => {
            if let Ok((h, used)) = Header::decode(rest, usize::MAX) {
                let mut enc = vec![ReplyStatus::Ok.to_byte()];
                h.encode(&mut enc);
                assert!(enc.len() <= 1 + used);
                assert_eq!(
                    Header::decode(&enc[1..], usize::MAX),
                    Ok((h, enc.len() - 1))
                );
            }
        }
        Ok(ReplyStatus::Error) => {}
        Err(_) => assert!(status > 1),
    }
});
