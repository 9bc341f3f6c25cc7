//! Properties of the wire v0 codec: every valid value survives encode and decode, a decoder
//! uses exactly the bytes its encoding took, a cut encoding is Truncated (never a wrong value),
//! and no input, however arbitrary, makes a decoder panic; what an arbitrary input decodes to
//! encodes back to bytes that decode to the same value.

use bytes::Bytes;
use proptest::prelude::*;
use weida::wire::chunk::{self, ChunkType};
use weida::wire::control::{dimension, frame_type, MAX_CONTROL_FRAME};
use weida::wire::reply::{self, MAX_ERROR_MESSAGE};
use weida::wire::{
    varint, Code, ControlFrame, DecodeError, GuaranteeSet, Header, Hello, Metadata, Ordering,
    StreamType,
};
use weida::Address;

// ---- strategies ----

/// Any varint value, each encoding length equally likely, boundaries included.
fn varint_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..=63u64,
        64..=16_383u64,
        16_384..=(1u64 << 30) - 1,
        (1u64 << 30)..=varint::MAX,
        prop::sample::select(vec![
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            varint::MAX
        ]),
    ]
}

fn text() -> impl Strategy<Value = String> {
    "(?s).{0,24}"
}

fn blob() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..32)
}

fn header() -> impl Strategy<Value = Header> {
    (
        prop::option::of(text()),
        prop::collection::vec((text(), blob()), 0..5),
        prop::option::of(text()),
        prop::option::of(varint_value()),
        prop::option::of(blob()),
    )
        .prop_map(|(path, meta, topic, sequence, producer)| Header {
            path,
            meta: meta.into_iter().collect::<Metadata>(),
            topic,
            sequence,
            producer: producer.map(Bytes::from),
        })
}

fn ordering() -> impl Strategy<Value = Ordering> {
    prop_oneof![
        Just(Ordering::None),
        Just(Ordering::Detect),
        Just(Ordering::Reassemble)
    ]
}

/// A set as a decoder gives it back: each dimension once, no core level, and an unknown level
/// of the ordering dimension only when ordering itself is at its core level.
fn offered_set() -> impl Strategy<Value = GuaranteeSet> {
    (
        ordering(),
        prop::collection::btree_map(
            varint_value().prop_filter("not ordering", |d| *d != dimension::ORDERING),
            1..=varint::MAX,
            0..4,
        ),
        prop::option::of(3..=varint::MAX),
    )
        .prop_flat_map(|(ordering, others, odd_ordering)| {
            let mut other: Vec<(u64, u64)> = others.into_iter().collect();
            if let (Ordering::None, Some(level)) = (ordering, odd_ordering) {
                other.push((dimension::ORDERING, level));
            }
            Just(other)
                .prop_shuffle()
                .prop_map(move |other| GuaranteeSet { ordering, other })
        })
}

/// A HELLO that offers at least what it requires, announcing a header bound of at least 64.
fn hello() -> impl Strategy<Value = Hello> {
    (
        varint_value().prop_map(|v| v.max(weida::wire::control::MIN_HEADER_SIZE)),
        varint_value(),
        offered_set(),
        ordering(),
        prop::option::of(blob()),
    )
        .prop_map(|(max_header_size, features, offered, required, session)| {
            let required = GuaranteeSet {
                ordering: required.min(offered.ordering),
                other: Vec::new(),
            };
            Hello {
                max_header_size,
                features,
                offered,
                required,
                session: session.map(Bytes::from),
            }
        })
}

/// Any code, as `Code::from_u64` names it (so a known number is never `Other`).
fn code() -> impl Strategy<Value = Code> {
    prop_oneof![0..=12u64, varint_value()].prop_map(Code::from_u64)
}

fn control_frame() -> impl Strategy<Value = ControlFrame> {
    prop_oneof![
        hello().prop_map(ControlFrame::Hello),
        (any::<u64>(), text(), text()).prop_map(|(r, p, f)| ControlFrame::Subscribe(
            weida::wire::Subscription {
                request: r % (1 << 62),
                path: p,
                filter: f
            }
        )),
        (any::<u64>(), text(), text()).prop_map(|(r, p, f)| ControlFrame::Unsubscribe(
            weida::wire::Subscription {
                request: r % (1 << 62),
                path: p,
                filter: f
            }
        )),
        (any::<u64>(), 0u64..12, text()).prop_map(|(r, c, reason)| ControlFrame::Answer {
            request: r % (1 << 62),
            code: Code::from_u64(c),
            reason
        }),
        (any::<u64>(), varint_value(), text()).prop_map(|(r, streams, path)| {
            ControlFrame::Check(weida::wire::PathCheck {
                request: r % (1 << 62),
                streams,
                path,
            })
        }),
        (any::<u64>(), varint_value(), text()).prop_map(|(r, role, path)| {
            ControlFrame::Claim(weida::wire::PathClaim {
                request: r % (1 << 62),
                role,
                path,
            })
        }),
        varint_value().prop_map(|opened| ControlFrame::GoAway { opened }),
        (code(), text()).prop_map(|(code, reason)| ControlFrame::Close { code, reason }),
        varint_value()
            .prop_filter("an unknown type", |t| *t > frame_type::CLAIM)
            .prop_map(ControlFrame::Unknown),
    ]
}

fn chunk_type() -> impl Strategy<Value = ChunkType> {
    prop::sample::select(vec![
        ChunkType::Data,
        ChunkType::Fin,
        ChunkType::Reset,
        ChunkType::Stop,
        ChunkType::Keep,
    ])
}

fn stream_type() -> impl Strategy<Value = StreamType> {
    prop::sample::select(vec![
        StreamType::Control,
        StreamType::Transfer,
        StreamType::Exchange,
        StreamType::Lane,
        StreamType::Parked,
    ])
}

/// Arbitrary bytes, or a valid encoding from `valid` with a few bytes overwritten, inserted or
/// removed and possibly cut: most of what the mutations reach gets past the first checks.
fn bytes_like(valid: impl Strategy<Value = Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let mutated = (
        valid,
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 0..3),
        prop::option::weighted(0.2, any::<prop::sample::Index>()),
    )
        .prop_map(|(mut b, edits, cut)| {
            for (at, byte, how) in edits {
                match (how, b.is_empty()) {
                    (0, false) => {
                        let i = at.index(b.len());
                        b[i] = byte;
                    }
                    (1, _) => {
                        let i = at.index(b.len() + 1);
                        b.insert(i, byte);
                    }
                    (_, false) => {
                        b.remove(at.index(b.len()));
                    }
                    _ => {}
                }
            }
            if let Some(cut) = cut {
                b.truncate(cut.index(b.len() + 1));
            }
            b
        });
    prop_oneof![prop::collection::vec(any::<u8>(), 0..64), mutated]
}

fn encoded_header() -> impl Strategy<Value = Vec<u8>> {
    header().prop_map(|h| h.to_bytes())
}

fn encoded_frame() -> impl Strategy<Value = Vec<u8>> {
    control_frame().prop_map(|f| encode_frame(&f))
}

fn encoded_error() -> impl Strategy<Value = Vec<u8>> {
    (code(), text()).prop_map(|(c, m)| {
        let mut out = Vec::new();
        reply::encode_error(c, &m, &mut out);
        out.split_off(1)
    })
}

fn encode_frame(f: &ControlFrame) -> Vec<u8> {
    let mut out = Vec::new();
    f.encode(&mut out);
    out
}

fn encode_varint(v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint::put(&mut out, v);
    out
}

/// Guarantee sets are maps; the order of `other` is the order the pairs came in.
fn same_frame(a: &ControlFrame, b: &ControlFrame) -> bool {
    let sorted = |f: &ControlFrame| {
        let mut f = f.clone();
        if let ControlFrame::Hello(h) = &mut f {
            h.offered.other.sort_unstable();
            h.required.other.sort_unstable();
        }
        f
    };
    sorted(a) == sorted(b)
}

// ---- round trips ----

proptest! {
    #[test]
    fn varint_round_trips_in_its_shortest_form(v in varint_value(), tail in blob()) {
        let enc = encode_varint(v);
        prop_assert_eq!(enc.len(), varint::len(v));
        prop_assert_eq!(varint::len_from_first_byte(enc[0]), enc.len());
        let mut buf = enc.clone();
        buf.extend_from_slice(&tail);
        let mut cur = &buf[..];
        prop_assert_eq!(varint::get(&mut cur), Ok(v));
        prop_assert_eq!(cur, &tail[..]);
        for cut in 0..enc.len() {
            prop_assert_eq!(varint::get(&mut &enc[..cut]), Err(DecodeError::Truncated));
        }
    }

    #[test]
    fn varint_decodes_every_encoding_length(v in varint_value(), wider in 0..4u32) {
        // Any encoding at least as long as the shortest one carries the same value.
        let width = varint::len(v).max(1 << wider);
        let tag = u64::from(width.trailing_zeros()) << (8 * width - 2);
        let enc = (tag | v).to_be_bytes()[8 - width..].to_vec();
        let mut cur = &enc[..];
        prop_assert_eq!(varint::get(&mut cur), Ok(v));
        prop_assert!(cur.is_empty());
    }

    #[test]
    fn header_round_trips_and_uses_exactly_its_bytes(h in header(), tail in blob()) {
        let enc = h.to_bytes();
        let mut buf = enc.clone();
        buf.extend_from_slice(&tail);
        prop_assert_eq!(Header::decode(&buf, usize::MAX), Ok((h.clone(), enc.len())));
        // The bound is on the body, the length prefix excluded.
        let body = enc.len() - varint::len_from_first_byte(enc[0]);
        prop_assert_eq!(Header::decode(&enc, body), Ok((h.clone(), enc.len())));
        let too_large = matches!(Header::decode(&enc, body - 1), Err(DecodeError::TooLarge { .. }));
        prop_assert!(too_large);
        prop_assert_eq!(Header::decode_body(&enc[enc.len() - body..]), Ok(h));
    }

    #[test]
    fn a_cut_header_is_truncated_never_a_wrong_value(h in header()) {
        let enc = h.to_bytes();
        for cut in 0..enc.len() {
            prop_assert_eq!(
                Header::decode(&enc[..cut], usize::MAX),
                Err(DecodeError::Truncated),
                "cut at {} of {}", cut, enc.len()
            );
        }
    }

    #[test]
    fn control_frames_round_trip_and_use_exactly_their_bytes(f in control_frame(), tail in blob()) {
        let enc = encode_frame(&f);
        prop_assert!(enc.len() as u64 <= MAX_CONTROL_FRAME + 16);
        let mut buf = enc.clone();
        buf.extend_from_slice(&tail);
        let (got, used) = ControlFrame::decode(&buf).unwrap().expect("a whole frame");
        prop_assert!(same_frame(&got, &f), "{:?} != {:?}", got, f);
        prop_assert_eq!(used, enc.len());
        for cut in 0..enc.len() {
            prop_assert_eq!(ControlFrame::decode(&enc[..cut]), Ok(None), "cut at {}", cut);
        }
    }

    #[test]
    fn hello_negotiation_agrees_both_ways(a in hello(), b in hello()) {
        // What one side agrees to, the other does too, and the agreed set is symmetric.
        match (a.negotiate(&b), b.negotiate(&a)) {
            (Ok(x), Ok(y)) => prop_assert_eq!(x, y),
            (Err(_), Err(_)) => {}
            (x, y) => prop_assert!(false, "one-sided: {:?} / {:?}", x, y),
        }
    }

    #[test]
    fn error_replies_round_trip(c in code(), m in "(?s).{0,400}") {
        let mut enc = Vec::new();
        reply::encode_error(c, &m, &mut enc);
        prop_assert_eq!(enc[0], 0x01);
        // The writer cuts a long message at a character boundary at most 1024 bytes in.
        let mut end = m.len().min(MAX_ERROR_MESSAGE);
        while !m.is_char_boundary(end) {
            end -= 1;
        }
        prop_assert!(m.len() - end < 4 || end == m.len());
        prop_assert_eq!(reply::decode_error(&enc[1..]), Ok((c, m[..end].to_string())));
        for cut in 1..enc.len() {
            prop_assert_eq!(reply::decode_error(&enc[1..cut]), Err(DecodeError::Truncated));
        }
    }

    #[test]
    fn chunk_prefixes_round_trip(ty in chunk_type(), len in any::<u32>(), max in any::<u32>()) {
        let p = chunk::prefix(ty, len);
        prop_assert_eq!(ChunkType::from_byte(p[0]), Ok(ty));
        let got = chunk::decode_prefix(p, max);
        let ok = match ty {
            ChunkType::Data => len <= max,
            ChunkType::Fin | ChunkType::Keep => len == 0,
            ChunkType::Reset | ChunkType::Stop => (1..=8).contains(&len),
        };
        if ok {
            prop_assert_eq!(got, Ok((ty, len)));
        } else {
            prop_assert!(got.is_err());
        }
    }

    #[test]
    fn code_chunks_round_trip(stop in any::<bool>(), c in code()) {
        let ty = if stop { ChunkType::Stop } else { ChunkType::Reset };
        let enc = chunk::code_chunk(ty, c);
        let p: [u8; chunk::PREFIX] = enc[..chunk::PREFIX].try_into().unwrap();
        let (got_ty, len) = chunk::decode_prefix(p, 0).unwrap();
        prop_assert_eq!(got_ty, ty);
        prop_assert_eq!(len as usize, enc.len() - chunk::PREFIX);
        prop_assert_eq!(chunk::decode_code(&enc[chunk::PREFIX..]), Ok(c));
    }

    #[test]
    fn codes_round_trip(n in varint_value()) {
        prop_assert_eq!(Code::from_u64(n).to_u64(), n);
    }

    #[test]
    fn stream_types_round_trip(t in stream_type()) {
        prop_assert_eq!(StreamType::from_byte(t.to_byte()), Ok(t));
    }
}

// ---- arbitrary input: no panic, and what decodes re-encodes to the same value ----

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn header_decode_takes_any_bytes(b in bytes_like(encoded_header()), max in prop_oneof![3 => Just(usize::MAX), 1 => 0..64usize]) {
        if let Ok((h, used)) = Header::decode(&b, max) {
            prop_assert!(used <= b.len());
            let enc = h.to_bytes();
            prop_assert!(enc.len() <= used, "re-encoding grew: {} > {}", enc.len(), used);
            prop_assert_eq!(Header::decode(&enc, usize::MAX), Ok((h, enc.len())));
        }
    }

    #[test]
    fn header_decode_body_takes_any_bytes(b in bytes_like(encoded_header().prop_map(|e| {
        let n = varint::len_from_first_byte(e[0]);
        e[n..].to_vec()
    }))) {
        if let Ok(h) = Header::decode_body(&b) {
            let enc = h.to_bytes();
            prop_assert_eq!(Header::decode(&enc, usize::MAX), Ok((h, enc.len())));
        }
    }

    #[test]
    fn control_decode_takes_any_bytes(b in bytes_like(encoded_frame())) {
        match ControlFrame::decode(&b) {
            Ok(Some((f, used))) => {
                prop_assert!(used <= b.len());
                let enc = encode_frame(&f);
                prop_assert!(enc.len() <= used, "re-encoding grew: {} > {}", enc.len(), used);
                let (again, n) = ControlFrame::decode(&enc).unwrap().expect("a whole frame");
                prop_assert!(same_frame(&again, &f), "{:?} != {:?}", again, f);
                prop_assert_eq!(n, enc.len());
            }
            // A decoder that says "more bytes" must mean it: the frame is not all there.
            Ok(None) => prop_assert!(b.len() as u64 <= MAX_CONTROL_FRAME + 16),
            // "Truncated" is Ok(None) here, never an error.
            Err(e) => prop_assert_ne!(e, DecodeError::Truncated),
        }
    }

    #[test]
    fn decode_error_takes_any_bytes(b in bytes_like(encoded_error())) {
        if let Ok((c, m)) = reply::decode_error(&b) {
            prop_assert!(m.len() <= MAX_ERROR_MESSAGE);
            let mut enc = Vec::new();
            reply::encode_error(c, &m, &mut enc);
            prop_assert_eq!(reply::decode_error(&enc[1..]), Ok((c, m)));
        }
    }

    #[test]
    fn chunk_decoders_take_any_bytes(p in any::<[u8; chunk::PREFIX]>(), max in any::<u32>(), payload in bytes_like(prop_oneof![
        code().prop_map(|c| chunk::code_chunk(ChunkType::Reset, c)[chunk::PREFIX..].to_vec()),
        Just(vec![0x40, 0x00]),
    ])) {
        if let Ok((ty, len)) = chunk::decode_prefix(p, max) {
            prop_assert_eq!(chunk::prefix(ty, len), p);
        }
        if let Ok(c) = chunk::decode_code(&payload) {
            let enc = chunk::code_chunk(ChunkType::Stop, c);
            prop_assert!(enc.len() - chunk::PREFIX <= payload.len());
            prop_assert_eq!(chunk::decode_code(&enc[chunk::PREFIX..]), Ok(c));
        }
    }

    #[test]
    fn varint_get_takes_any_bytes(b in prop::collection::vec(any::<u8>(), 0..10)) {
        let mut cur = &b[..];
        match varint::get(&mut cur) {
            Ok(v) => {
                prop_assert!(v <= varint::MAX);
                prop_assert_eq!(b.len() - cur.len(), varint::len_from_first_byte(b[0]));
            }
            Err(e) => {
                prop_assert_eq!(e, DecodeError::Truncated);
                prop_assert!(b.is_empty() || b.len() < varint::len_from_first_byte(b[0]));
            }
        }
    }

    #[test]
    fn address_parse_takes_any_text(s in prop_oneof![
        any::<String>(),
        "(weida|weida\\+unix|weida\\+inproc|weida\\+pipe|WEIDA)://[@\\[\\]:/a-z0-9.%?# -]{0,40}",
    ]) {
        if let Ok(a) = Address::parse(&s) {
            let text = a.to_string();
            prop_assert_eq!(Address::parse(&text).ok(), Some(a));
        }
    }
}

#[test]
fn stream_type_from_byte_takes_every_byte() {
    for b in 0..=u8::MAX {
        match StreamType::from_byte(b) {
            Ok(t) => assert_eq!(t.to_byte(), b),
            Err(e) => {
                assert!(b > 4, "0x{b:02x}");
                assert!(matches!(e, DecodeError::Unsupported(_)), "0x{b:02x}: {e:?}");
            }
        }
    }
}

#[test]
fn a_complete_control_frame_is_never_truncated() {
    // Regression: these frames are whole, so no further byte could help; they are malformed.
    let close_without_code = [frame_type::CLOSE as u8, 0x00];
    let set_cut_in_a_varint = [0x01, 0x07, 0x00, 0x01, 0x01, 0x3f, 0x03, 0x01, 0x40];
    for b in [&close_without_code[..], &set_cut_in_a_varint[..]] {
        assert!(
            matches!(ControlFrame::decode(b), Err(DecodeError::Malformed(_))),
            "{b:02x?}: {:?}",
            ControlFrame::decode(b)
        );
    }
}

#[test]
fn a_written_core_level_decodes_to_the_core_set() {
    // Regression: HELLO offering dimension 0x09 at level 0 and ordering at level 0.
    let b = [
        0x01, 0x0b, 0x00, 0x01, 0x02, 0x40, 0x40, 0x03, 0x04, 0x09, 0x00, 0x03, 0x00,
    ];
    let Some((ControlFrame::Hello(h), 13)) = ControlFrame::decode(&b).unwrap() else {
        panic!("{:?}", ControlFrame::decode(&b));
    };
    assert_eq!(h.offered, GuaranteeSet::core());
}

#[test]
fn negotiation_refuses_an_unknown_required_dimension_and_agrees_on_the_weaker_offer() {
    let core = Hello::default();
    let mut strange = Hello::default();
    strange.offered.other.push((5, 1));
    strange.required.other.push((5, 1));
    // It decodes (it offers what it requires), and negotiation refuses it on either side.
    let mut b = Vec::new();
    ControlFrame::Hello(strange.clone()).encode(&mut b);
    assert!(matches!(
        ControlFrame::decode(&b),
        Ok(Some((ControlFrame::Hello(_), _)))
    ));
    assert!(core.negotiate(&strange).is_err());
    assert!(strange.negotiate(&core).is_err());
    let mut detect = Hello::default();
    detect.offered.ordering = Ordering::Detect;
    assert_eq!(core.negotiate(&detect).unwrap(), GuaranteeSet::core());
}
