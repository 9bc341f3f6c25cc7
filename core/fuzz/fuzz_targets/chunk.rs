//! Local socket chunk framing: chunks are read one after another from the input, as the Unix
//! transport reads them. No input panics, a prefix that decodes is the prefix its type and
//! length encode to, and a RESET/STOP code re-encodes to a chunk that decodes to the same code.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weida::wire::chunk::{self, ChunkType};

/// The DATA bound a reader applies (the fuzzer sees both sides of it).
const MAX_LEN: u32 = 1024;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Some(p) = rest.get(..chunk::PREFIX) {
        let p: [u8; chunk::PREFIX] = p.try_into().unwrap();
        let Ok((ty, len)) = chunk::decode_prefix(p, MAX_LEN) else {
            break;
        };
        assert_eq!(chunk::prefix(ty, len), p);
        let end = chunk::PREFIX + len as usize;
        let Some(payload) = rest.get(chunk::PREFIX..end) else {
            break;
        };
        match ty {
            ChunkType::Data => assert!(len <= MAX_LEN),
            ChunkType::Fin | ChunkType::Keep => assert_eq!(len, 0),
            ChunkType::Reset | ChunkType::Stop => {
                if let Ok(code) = chunk::decode_code(payload) {
                    let enc = chunk::code_chunk(ty, code);
                    assert!(enc.len() <= end);
                    let q: [u8; chunk::PREFIX] = enc[..chunk::PREFIX].try_into().unwrap();
                    let (ty2, len2) = chunk::decode_prefix(q, 0).expect("a code chunk's prefix");
                    assert_eq!((ty2, len2 as usize), (ty, enc.len() - chunk::PREFIX));
                    assert_eq!(chunk::decode_code(&enc[chunk::PREFIX..]), Ok(code));
                }
            }
        }
        rest = &rest[end..];
    }
    // The code decoder on its own, on any bytes.
    if let Ok(code) = chunk::decode_code(data) {
        let enc = chunk::code_chunk(ChunkType::Reset, code);
        assert_eq!(chunk::decode_code(&enc[chunk::PREFIX..]), Ok(code));
    }
});
