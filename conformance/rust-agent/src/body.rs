//! Bodies as the control protocol gives them (README §Bodies): made from a spec on the sending
//! side, reported as a summary (size, SHA-256, short text) on the receiving side, so a 2 MiB body
//! never crosses the control channel.

use bytes::Bytes;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::Failure;

/// The longest body whose text a summary carries.
const TEXT_IN_SUMMARY: usize = 1024;

/// The bytes a body spec names: `{"text": s}`, `{"hex": s}` or
/// `{"size": n, "pattern": "seq"|"zero", "offset": k}` (seq: byte i is (offset + i) mod 251).
pub(crate) fn make(spec: &Value) -> Result<Bytes, Failure> {
    let obj = spec
        .as_object()
        .ok_or_else(|| Failure::bad("a body is an object"))?;
    if let Some(t) = obj.get("text") {
        let t = t
            .as_str()
            .ok_or_else(|| Failure::bad("body.text is a string"))?;
        return Ok(Bytes::copy_from_slice(t.as_bytes()));
    }
    if let Some(h) = obj.get("hex") {
        let h = h
            .as_str()
            .ok_or_else(|| Failure::bad("body.hex is a string"))?;
        return unhex(h).map(Bytes::from);
    }
    let size = obj
        .get("size")
        .and_then(Value::as_u64)
        .ok_or_else(|| Failure::bad("a body has text, hex, or size and pattern"))?
        as usize;
    let offset = obj.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    match obj.get("pattern").and_then(Value::as_str).unwrap_or("seq") {
        "seq" => Ok((0..size)
            .map(|i| ((offset + i) % 251) as u8)
            .collect::<Vec<u8>>()
            .into()),
        "zero" => Ok(vec![0u8; size].into()),
        other => Err(Failure::bad(format!("unknown body pattern {other:?}"))),
    }
}

/// How a received body is reported: its size, its SHA-256 and, when short UTF-8, its text.
pub(crate) fn summary(body: &[u8]) -> Value {
    let mut m = Map::new();
    m.insert("size".into(), json!(body.len()));
    m.insert("sha256".into(), json!(hex(&Sha256::digest(body))));
    if body.len() <= TEXT_IN_SUMMARY {
        if let Ok(t) = std::str::from_utf8(body) {
            m.insert("text".into(), json!(t));
        }
    }
    Value::Object(m)
}

/// A running summary for a body read in chunks.
#[derive(Default)]
pub(crate) struct Tally {
    hash: Sha256,
    size: usize,
    head: Vec<u8>,
}

impl Tally {
    pub(crate) fn add(&mut self, chunk: &[u8]) {
        self.hash.update(chunk);
        self.size += chunk.len();
        if self.head.len() <= TEXT_IN_SUMMARY {
            let room = TEXT_IN_SUMMARY + 1 - self.head.len();
            self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
    }

    pub(crate) fn summary(self) -> Value {
        let mut m = Map::new();
        m.insert("size".into(), json!(self.size));
        m.insert("sha256".into(), json!(hex(&self.hash.finalize())));
        if self.size <= TEXT_IN_SUMMARY {
            if let Ok(t) = std::str::from_utf8(&self.head) {
                m.insert("text".into(), json!(t));
            }
        }
        Value::Object(m)
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, Failure> {
    if s.len() % 2 != 0 {
        return Err(Failure::bad("body.hex has an odd length"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| Failure::bad("body.hex is not hex"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_tally_equals_the_whole_summary() {
        let b = make(&json!({"size": 5000, "pattern": "seq"})).unwrap();
        let mut t = Tally::default();
        for c in b.chunks(777) {
            t.add(c);
        }
        assert_eq!(t.summary(), summary(&b));
        let short = make(&json!({"text": "ping"})).unwrap();
        let mut t = Tally::default();
        t.add(&short[..2]);
        t.add(&short[2..]);
        assert_eq!(t.summary(), summary(&short));
        assert_eq!(summary(&short)["text"], "ping");
    }

    #[test]
    fn seq_is_i_mod_251_from_the_offset() {
        let b = make(&json!({"size": 3, "pattern": "seq", "offset": 250})).unwrap();
        assert_eq!(&b[..], &[250, 0, 1]);
        assert_eq!(&make(&json!({"hex": "00ff"})).unwrap()[..], &[0, 255]);
    }
}
