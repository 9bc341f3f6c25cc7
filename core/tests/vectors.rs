//! The conformance vectors of conformance/vectors/ (see its README.md) against this
//! implementation: every canonical `value` encodes to exactly its `hex`, every `hex` decodes to
//! its `value` using all of its bytes, and every `invalid` input fails with the named class.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde_json::Value;
use weida::wire::chunk::{self, ChunkType};
use weida::wire::control::dimension;
use weida::wire::{
    reply, varint, Code, ControlFrame, DecodeError, GuaranteeSet, Header, Hello, Metadata,
    Ordering, PathCheck, PathClaim, ReplyStatus, Session, StreamType,
};

/// Every file the directory must hold, and nothing else but README.md.
const FILES: [&str; 7] = [
    "varint.json",
    "lane.json",
    "header.json",
    "hello.json",
    "reply.json",
    "chunk.json",
    "stream_type.json",
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/vectors")
}

fn load(name: &str) -> Value {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn class(e: &DecodeError) -> &'static str {
    match e {
        DecodeError::Truncated => "truncated",
        DecodeError::Malformed(_) => "malformed",
        DecodeError::TooLarge { .. } => "too_large",
        DecodeError::Unsupported(_) => "unsupported",
        _ => "an error class the vectors do not name",
    }
}

fn field<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key)
        .unwrap_or_else(|| panic!("{key:?} missing in {v}"))
}

fn u64_of(v: &Value, key: &str) -> u64 {
    field(v, key)
        .as_u64()
        .unwrap_or_else(|| panic!("{key:?} is not a u64 in {v}"))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    field(v, key)
        .as_str()
        .unwrap_or_else(|| panic!("{key:?} is not a string in {v}"))
}

fn opt_str(v: &Value, key: &str) -> Option<String> {
    let f = field(v, key);
    (!f.is_null()).then(|| {
        f.as_str()
            .unwrap_or_else(|| panic!("{key:?} in {v}"))
            .to_string()
    })
}

fn opt_hex(v: &Value, key: &str) -> Option<Bytes> {
    opt_str(v, key).map(|h| Bytes::from(hex::decode(h).unwrap()))
}

/// What decoding one vector's bytes gives: the value and how many bytes it took.
type Decoded<T> = Result<(T, usize), DecodeError>;

/// Runs one file: `parse` reads a `value`, `encode` writes one, `decode` reads bytes (with the
/// vector object at hand for per-vector bounds). Returns (vectors, invalid) counts.
fn run<T: PartialEq + Debug>(
    file: &str,
    parse: impl Fn(&Value) -> T,
    encode: impl Fn(&T) -> Vec<u8>,
    decode: impl Fn(&[u8], &Value) -> Decoded<T>,
) -> (usize, usize) {
    let doc = load(file);
    assert!(
        field(&doc, "description").is_string(),
        "{file}: description"
    );
    let vectors = field(&doc, "vectors")
        .as_array()
        .expect("vectors is an array");
    let invalid = field(&doc, "invalid")
        .as_array()
        .expect("invalid is an array");
    let mut names = BTreeSet::new();
    for v in vectors.iter().chain(invalid) {
        let name = str_of(v, "name");
        assert!(
            names.insert(name.to_string()),
            "{file}: name {name:?} repeats"
        );
    }
    let mut canonical = 0;
    for v in vectors {
        let name = str_of(v, "name");
        let bytes = hex::decode(str_of(v, "hex")).unwrap_or_else(|e| panic!("{file}: {name}: {e}"));
        let value = parse(field(v, "value"));
        let is_canonical = match v.get("canonical") {
            None => true,
            Some(c) => c
                .as_bool()
                .unwrap_or_else(|| panic!("{file}: {name}: canonical")),
        };
        if is_canonical {
            canonical += 1;
            assert_eq!(
                hex::encode(encode(&value)),
                hex::encode(&bytes),
                "{file}: {name}: encoding {value:?}"
            );
        } else {
            assert_ne!(
                hex::encode(encode(&value)),
                hex::encode(&bytes),
                "{file}: {name}: marked non-canonical but encodes to its hex"
            );
        }
        match decode(&bytes, v) {
            Ok((got, used)) => {
                assert_eq!(got, value, "{file}: {name}: decoding");
                assert_eq!(used, bytes.len(), "{file}: {name}: bytes used");
            }
            Err(e) => panic!("{file}: {name}: decoding failed: {e:?}"),
        }
    }
    assert!(canonical > 0, "{file}: no canonical vector");
    for v in invalid {
        let name = str_of(v, "name");
        let bytes = hex::decode(str_of(v, "hex")).unwrap_or_else(|e| panic!("{file}: {name}: {e}"));
        let want = str_of(v, "error");
        assert!(
            ["truncated", "malformed", "too_large", "unsupported"].contains(&want),
            "{file}: {name}: error {want:?} is not a class"
        );
        match decode(&bytes, v) {
            Ok((got, used)) => {
                panic!("{file}: {name}: decoded to {got:?} using {used} bytes, want {want}")
            }
            Err(e) => assert_eq!(class(&e), want, "{file}: {name}: {e:?}"),
        }
    }
    (vectors.len(), invalid.len())
}

#[test]
fn the_directory_holds_exactly_the_known_files() {
    let mut found: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    found.sort();
    let mut want: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    want.push("README.md".into());
    want.sort();
    assert_eq!(
        found, want,
        "a vector file the tests do not run, or one missing"
    );
}

// ---- varint.json ----

#[test]
fn varint_vectors() {
    let counts = run(
        "varint.json",
        |v| u64_of(v, "value"),
        |&n| {
            let mut out = Vec::new();
            varint::put(&mut out, n);
            out
        },
        |b, _| {
            let mut cur = b;
            let n = varint::get(&mut cur)?;
            Ok((n, b.len() - cur.len()))
        },
    );
    assert!(counts.0 >= 12 && counts.1 >= 1, "{counts:?}");
}

// ---- header.json ----

fn parse_header(v: &Value) -> Header {
    let meta: Metadata = field(v, "meta")
        .as_array()
        .expect("meta is an array")
        .iter()
        .map(|m| {
            let name = str_of(m, "name").to_string();
            let value = match (m.get("value"), m.get("value_hex")) {
                (Some(t), None) => Bytes::from(t.as_str().expect("value is text").to_string()),
                (None, Some(h)) => {
                    Bytes::from(hex::decode(h.as_str().expect("value_hex")).unwrap())
                }
                _ => panic!("a metadata entry has exactly one of value, value_hex: {m}"),
            };
            (name, value)
        })
        .collect();
    let sequence = field(v, "sequence");
    Header {
        path: opt_str(v, "path"),
        meta,
        topic: opt_str(v, "topic"),
        sequence: (!sequence.is_null()).then(|| sequence.as_u64().expect("sequence")),
        producer: opt_hex(v, "producer_hex"),
    }
}

/// The bound a vector names (`max_body`, `max_len`), or none.
fn bound(v: &Value, key: &str) -> Option<u64> {
    v.get(key).map(|b| b.as_u64().expect("a bound is a u64"))
}

#[test]
fn header_vectors() {
    let counts = run("header.json", parse_header, Header::to_bytes, |b, v| {
        let max = bound(v, "max_body").map_or(usize::MAX, |m| m as usize);
        Header::decode(b, max)
    });
    assert!(counts.0 >= 10 && counts.1 >= 10, "{counts:?}");
}

// ---- lane.json (message lane frames) ----

#[derive(Debug, PartialEq)]
struct LaneFrame {
    header: Header,
    body: Vec<u8>,
}

#[test]
fn lane_frame_vectors() {
    let counts = run(
        "lane.json",
        |v| LaneFrame {
            header: parse_header(&{
                let mut v = v.clone();
                v["path"] = Value::Null;
                v
            }),
            body: hex::decode(str_of(v, "body_hex")).unwrap(),
        },
        |f| {
            let mut out = Vec::new();
            weida::wire::lane_frame::encode_frame_head(&f.header, f.body.len(), &mut out);
            out.extend_from_slice(&f.body);
            out
        },
        |b, v| {
            let max = bound(v, "max_body").unwrap_or(u64::MAX);
            match weida::wire::lane_frame::decode_frame(b, usize::MAX, max)? {
                Some((f, used)) => Ok((
                    LaneFrame {
                        header: f.header,
                        body: b[f.body].to_vec(),
                    },
                    used,
                )),
                None => Err(DecodeError::Truncated),
            }
        },
    );
    assert!(counts.0 >= 5 && counts.1 >= 5, "{counts:?}");
}

// ---- hello.json (control frames) ----

fn parse_set(v: &Value) -> GuaranteeSet {
    let mut s = GuaranteeSet::core();
    for pair in v.as_array().expect("a guarantee set is an array") {
        let pair = pair.as_array().expect("a [dimension, level] pair");
        assert_eq!(pair.len(), 2, "{pair:?}");
        let (d, l) = (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap());
        assert_ne!(l, 0, "core levels are not listed: {pair:?}");
        match (d, l) {
            (dimension::ORDERING, 1) => s.ordering = Ordering::Detect,
            (dimension::ORDERING, 2) => s.ordering = Ordering::Reassemble,
            _ => s.other.push((d, l)),
        }
    }
    s
}

fn parse_control(v: &Value) -> ControlFrame {
    match str_of(v, "frame") {
        "hello" => ControlFrame::Hello(Hello {
            max_header_size: u64_of(v, "max_header_size"),
            features: u64_of(v, "features"),
            offered: parse_set(field(v, "offered")),
            required: parse_set(field(v, "required")),
            session: opt_hex(v, "session_hex").inspect(|s| {
                session_of(s);
            }),
        }),
        "subscribe" => ControlFrame::Subscribe(parse_subscription(v)),
        "unsubscribe" => ControlFrame::Unsubscribe(parse_subscription(v)),
        "answer" => ControlFrame::Answer {
            request: u64_of(v, "request"),
            code: Code::from_u64(u64_of(v, "code")),
            reason: str_of(v, "reason").into(),
        },
        "goaway" => ControlFrame::GoAway {
            opened: u64_of(v, "opened"),
        },
        "close" => ControlFrame::Close {
            code: Code::from_u64(u64_of(v, "code")),
            reason: str_of(v, "reason").into(),
        },
        "check" => ControlFrame::Check(PathCheck {
            request: u64_of(v, "request"),
            streams: u64_of(v, "streams"),
            path: str_of(v, "path").into(),
        }),
        "claim" => ControlFrame::Claim(PathClaim {
            request: u64_of(v, "request"),
            role: u64_of(v, "role"),
            path: str_of(v, "path").into(),
        }),
        "unknown" => ControlFrame::Unknown(u64_of(v, "type")),
        other => panic!("frame {other:?}"),
    }
}

/// A vector's SESSION value is a session (PROTOCOL §3.1.1, §3.7): `parked:varint token`, with
/// a token of 1 to 64 bytes, that encodes back to exactly its bytes. The HELLO codec keeps the
/// field as bytes (a listener that cannot decode one treats the dialler as having none), so
/// without this a vector could name a session and carry something else.
fn session_of(bytes: &Bytes) -> Session {
    let s = Session::decode(bytes).unwrap_or_else(|e| panic!("SESSION {bytes:02x?}: {e:?}"));
    assert_eq!(&s.encode(), bytes, "SESSION {bytes:02x?} is not canonical");
    s
}

#[test]
fn a_session_vector_carries_a_session() {
    let doc = load("hello.json");
    let sessions: Vec<Session> = field(&doc, "vectors")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| field(v, "value"))
        .filter(|v| v.get("session_hex").is_some())
        .filter_map(|v| opt_hex(v, "session_hex"))
        .map(|b| session_of(&b))
        .collect();
    // The one of §3.7's example: two parked connections, the token `ab cd`.
    assert!(
        sessions
            .iter()
            .any(|s| s.parked == 2 && s.token[..] == [0xab, 0xcd]),
        "{sessions:?}"
    );
}

fn parse_subscription(v: &Value) -> weida::wire::Subscription {
    weida::wire::Subscription {
        request: u64_of(v, "request"),
        path: str_of(v, "path").into(),
        filter: str_of(v, "filter").into(),
    }
}

/// Guarantee sets are maps: the order of their pairs does not matter.
fn normalized(mut f: ControlFrame) -> ControlFrame {
    if let ControlFrame::Hello(h) = &mut f {
        h.offered.other.sort_unstable();
        h.required.other.sort_unstable();
    }
    f
}

#[test]
fn control_frame_vectors() {
    let counts = run(
        "hello.json",
        |v| normalized(parse_control(v)),
        |f| {
            let mut out = Vec::new();
            f.encode(&mut out);
            out
        },
        |b, _| match ControlFrame::decode(b)? {
            Some((f, used)) => Ok((normalized(f), used)),
            None => Err(DecodeError::Truncated),
        },
    );
    assert!(counts.0 >= 10 && counts.1 >= 10, "{counts:?}");
}

// ---- reply.json ----

#[derive(Debug, PartialEq)]
enum Reply {
    Ok(Header),
    Error(u64, String),
}

#[test]
fn reply_vectors() {
    let counts = run(
        "reply.json",
        |v| match str_of(v, "status") {
            "ok" => Reply::Ok(parse_header(field(v, "header"))),
            "error" => Reply::Error(u64_of(v, "code"), str_of(v, "message").into()),
            other => panic!("status {other:?}"),
        },
        |r| {
            let mut out = Vec::new();
            match r {
                Reply::Ok(h) => {
                    out.push(ReplyStatus::Ok.to_byte());
                    h.encode(&mut out);
                }
                Reply::Error(code, message) => {
                    reply::encode_error(Code::from_u64(*code), message, &mut out)
                }
            }
            out
        },
        |b, _| {
            let (&status, rest) = b.split_first().ok_or(DecodeError::Truncated)?;
            match ReplyStatus::from_byte(status)? {
                ReplyStatus::Ok => {
                    let (h, used) = Header::decode(rest, usize::MAX)?;
                    Ok((Reply::Ok(h), 1 + used))
                }
                ReplyStatus::Error => {
                    let (code, message) = reply::decode_error(rest)?;
                    Ok((Reply::Error(code.to_u64(), message), b.len()))
                }
            }
        },
    );
    assert!(counts.0 >= 5 && counts.1 >= 5, "{counts:?}");
}

// ---- chunk.json ----

#[derive(Debug, PartialEq)]
enum Chunk {
    Data(Vec<u8>),
    Fin,
    Reset(u64),
    Stop(u64),
    Keep,
}

#[test]
fn chunk_vectors() {
    let counts = run(
        "chunk.json",
        |v| match str_of(v, "chunk") {
            "data" => Chunk::Data(hex::decode(str_of(v, "payload_hex")).unwrap()),
            "fin" => Chunk::Fin,
            "reset" => Chunk::Reset(u64_of(v, "code")),
            "stop" => Chunk::Stop(u64_of(v, "code")),
            "keep" => Chunk::Keep,
            other => panic!("chunk {other:?}"),
        },
        |c| match c {
            Chunk::Data(p) => {
                let mut out = chunk::prefix(ChunkType::Data, p.len() as u32).to_vec();
                out.extend_from_slice(p);
                out
            }
            Chunk::Fin => chunk::prefix(ChunkType::Fin, 0).to_vec(),
            Chunk::Reset(code) => chunk::code_chunk(ChunkType::Reset, Code::from_u64(*code)),
            Chunk::Stop(code) => chunk::code_chunk(ChunkType::Stop, Code::from_u64(*code)),
            Chunk::Keep => chunk::prefix(ChunkType::Keep, 0).to_vec(),
        },
        |b, v| {
            let p: [u8; chunk::PREFIX] = b
                .get(..chunk::PREFIX)
                .ok_or(DecodeError::Truncated)?
                .try_into()
                .unwrap();
            let max = bound(v, "max_len").map_or(u32::MAX, |m| m as u32);
            let (ty, len) = chunk::decode_prefix(p, max)?;
            let end = chunk::PREFIX + len as usize;
            let payload = b.get(chunk::PREFIX..end).ok_or(DecodeError::Truncated)?;
            let c = match ty {
                ChunkType::Data => Chunk::Data(payload.to_vec()),
                ChunkType::Fin => Chunk::Fin,
                ChunkType::Reset => Chunk::Reset(chunk::decode_code(payload)?.to_u64()),
                ChunkType::Stop => Chunk::Stop(chunk::decode_code(payload)?.to_u64()),
                ChunkType::Keep => Chunk::Keep,
            };
            Ok((c, end))
        },
    );
    assert!(counts.0 >= 5 && counts.1 >= 5, "{counts:?}");
}

// ---- stream_type.json ----

#[test]
fn stream_type_vectors() {
    let all = [
        StreamType::Control,
        StreamType::Transfer,
        StreamType::Exchange,
        StreamType::Lane,
        StreamType::Parked,
    ];
    let name = |t: StreamType| match t {
        StreamType::Control => "control",
        StreamType::Transfer => "transfer",
        StreamType::Exchange => "exchange",
        StreamType::Lane => "lane",
        StreamType::Parked => "parked",
        _ => "unnamed",
    };
    let counts = run(
        "stream_type.json",
        |v| {
            let n = str_of(v, "stream_type");
            *all.iter()
                .find(|&&t| name(t) == n)
                .unwrap_or_else(|| panic!("stream type {n:?}"))
        },
        |t| vec![t.to_byte()],
        |b, _| {
            let &[byte] = b else {
                panic!("a stream type vector is one byte: {b:?}")
            };
            Ok((StreamType::from_byte(byte)?, 1))
        },
    );
    assert_eq!(counts.0, all.len(), "every stream type has its vector");
}
