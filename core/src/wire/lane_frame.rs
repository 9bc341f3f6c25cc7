//! Message lanes (PROTOCOL.md §4.1): a long-lived one-way stream of framed complete messages.
//!
//! ```text
//! lane  = 03  head  frame*  FIN
//! head  = a DATA header (§5) carrying PATH: the lane's endpoint path
//! frame = a DATA header (§5) without PATH   body_len:varint   body[body_len]
//! ```
//!
//! A frame is one whole message; its header carries what a per-message stream's would
//! (metadata, topic, sequence, producer) except the path, which the head gave once.

use super::{varint, DecodeError, Header, HeaderRef};

/// HELLO FEATURES bit of message lanes.
pub const FEATURE_LANES: u64 = 1;

/// HELLO FEATURES bit of lanes on parked connections (PROTOCOL.md §3.7): over AF_UNIX a
/// publisher may write a lane on a connection its subscriber parked, and the subscriber reads
/// it as one. In use only where both HELLOs set it and [`FEATURE_LANES`].
pub const FEATURE_PARKED_LANES: u64 = 1 << 2;

/// Appends a frame's header and body length to `out`; the body follows as its own buffer, so
/// it is never copied.
pub fn encode_frame_head<'a>(header: impl Into<HeaderRef<'a>>, body_len: usize, out: &mut Vec<u8>) {
    header.into().encode(out);
    varint::put(out, body_len as u64);
}

/// One frame decoded from the front of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneFrame {
    /// The frame's header (PATH absent in a well-formed frame).
    pub header: Header,
    /// Where the body is in the buffer.
    pub body: std::ops::Range<usize>,
}

/// Decodes one frame from the front of `buf`: `Ok(None)` when more bytes are needed (a lane
/// ends inside a frame only when it is cut short: its reader then drops the partial frame).
/// A header above `max_header` or a body above `max_body` is `TooLarge`, decided from the
/// length alone; a frame carrying PATH is malformed (the head names the path, once).
pub fn decode_frame(
    buf: &[u8],
    max_header: usize,
    max_body: u64,
) -> Result<Option<(LaneFrame, usize)>, DecodeError> {
    let (header, used) = match Header::decode(buf, max_header) {
        Ok(x) => x,
        Err(DecodeError::Truncated) => return Ok(None),
        Err(e) => return Err(e),
    };
    if header.path.is_some() {
        return Err(DecodeError::malformed("a lane frame carries PATH"));
    }
    let mut cur = &buf[used..];
    let len = match varint::get(&mut cur) {
        Ok(l) => l,
        Err(DecodeError::Truncated) => return Ok(None),
        Err(e) => return Err(e),
    };
    if len > max_body {
        return Err(DecodeError::TooLarge {
            what: "lane frame body",
            len,
            limit: max_body,
        });
    }
    let start = buf.len() - cur.len();
    if (cur.len() as u64) < len {
        return Ok(None);
    }
    let end = start + len as usize;
    Ok(Some((
        LaneFrame {
            header,
            body: start..end,
        },
        end,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Metadata;

    #[test]
    fn a_frame_round_trips_and_uses_exactly_its_bytes() {
        let h = Header {
            meta: Metadata::new().with("k", "v"),
            topic: Some("a.b".into()),
            sequence: Some(7),
            ..Header::default()
        };
        let mut buf = Vec::new();
        encode_frame_head(&h, 3, &mut buf);
        buf.extend_from_slice(b"xyz");
        let n = buf.len();
        buf.extend_from_slice(b"next");
        let (f, used) = decode_frame(&buf, 1024, 1024).unwrap().unwrap();
        assert_eq!(used, n);
        assert_eq!(f.header, h);
        assert_eq!(&buf[f.body], b"xyz");
        for cut in 0..n {
            assert_eq!(decode_frame(&buf[..cut], 1024, 1024), Ok(None), "cut {cut}");
        }
    }

    #[test]
    fn bounds_and_path_are_refused() {
        let mut buf = Vec::new();
        encode_frame_head(&Header::default(), 100, &mut buf);
        assert!(matches!(
            decode_frame(&buf, 1024, 99),
            Err(DecodeError::TooLarge { .. })
        ));
        let mut buf = Vec::new();
        encode_frame_head(&Header::for_path("/x"), 0, &mut buf);
        assert!(matches!(
            decode_frame(&buf, 1024, 99),
            Err(DecodeError::Malformed(_))
        ));
    }
}
