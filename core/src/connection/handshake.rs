//! The HELLO handshake's decisions (PROTOCOL.md §3.2, §3.3), as functions over plain values:
//! this side's HELLO, and what it and the peer's first control frame agree, or how the
//! connection is refused. The I/O (dial.rs for the dialler, dispatch.rs for the listener)
//! reads and writes the frames and does what these decide.

use crate::config::RuntimeConfig;
use crate::error::{Error, Result};
use crate::wire::{
    lane_frame, Code, ControlFrame, GuaranteeSet, Hello, Ordering, Session, FEATURE_CLAIM,
    FEATURE_KEPT_SOCKETS, FEATURE_PATH_CHECK,
};

/// What the endpoint a connection serves does with PerProducer numbering (PROTOCOL.md §3.3,
/// GUARANTEES §4): it decides the ordering this side's HELLO offers and requires. Ordering is
/// offered only by a side that honours it, so a peer that requires more is refused with
/// NEGOTIATION_FAILED instead of being accepted and never numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Flow {
    /// A listener: its HELLO comes before any path, so it speaks for every endpoint it may
    /// bind. As a subscriber (below), and it answers CLAIM (PROTOCOL.md §3.1.6).
    Listens,
    /// A subscriber: offers every level implemented, requires the configuration's.
    Receives,
    /// A pusher: numbers what it sends, and a puller detects gaps (it holds nothing back), so
    /// it offers detect. It receives nothing numbered, so it requires no ordering.
    Numbers,
    /// A requester or a raw peer: an exchange or a stream has no producer order to number, so
    /// it offers none and requires none.
    Unordered,
    /// A dialling pair or puller: it claims what it dials (PROTOCOL.md §3.1.6). A pair numbers
    /// what it sends as a pusher does, and the bound side numbers what it opens toward it; it
    /// detects gaps and holds nothing back, so it offers detect and requires the
    /// configuration's ordering, up to detect ([`unhonoured`] refuses more before dialling).
    Claims,
}

/// This runtime's HELLO for a connection serving `flow`: the ordering that flow honours, the
/// configuration's requirement where the flow receives numbered messages (PROTOCOL.md §3.3);
/// `session` is a local-socket subscriber's (§3.7). It always sets the path check (§3.1.5): a
/// listener of this implementation answers CHECK, and a dialler asks it before it uses a path.
pub(crate) fn our_hello(config: &RuntimeConfig, session: Option<&Session>, flow: Flow) -> Hello {
    let lanes = if config.lane_max_message > 0 {
        lane_frame::FEATURE_LANES | lane_frame::FEATURE_PARKED_LANES
    } else {
        0
    };
    let (offered, required) = match flow {
        Flow::Listens | Flow::Receives => (Ordering::Reassemble, config.guarantees.ordering),
        Flow::Claims => (
            Ordering::Detect,
            config.guarantees.ordering.min(Ordering::Detect),
        ),
        Flow::Numbers => (Ordering::Detect, Ordering::None),
        Flow::Unordered => (Ordering::None, Ordering::None),
    };
    let claim = match flow {
        Flow::Listens | Flow::Claims => FEATURE_CLAIM,
        Flow::Receives | Flow::Numbers | Flow::Unordered => 0,
    };
    // A listener of this implementation keeps a socket that asks (§8.7); a dialler keeps none.
    let kept = match flow {
        Flow::Listens => FEATURE_KEPT_SOCKETS,
        _ => 0,
    };
    Hello {
        max_header_size: config.limits.max_header_size,
        features: lanes | FEATURE_PATH_CHECK | claim | kept,
        offered: GuaranteeSet {
            ordering: offered,
            other: Vec::new(),
        },
        required: GuaranteeSet {
            ordering: required,
            other: config.guarantees.other.clone(),
        },
        session: session.map(Session::encode),
    }
}

/// Why a connection serving `flow` cannot be dialled under `config`: the configuration requires
/// an ordering that flow receives but cannot honour. A HELLO that required it would require more
/// than it offers, which is malformed (PROTOCOL.md §3.1.1), so the refusal is this side's,
/// before anything is sent, as NEGOTIATION_FAILED: the same answer a listener would give.
pub(crate) fn unhonoured(config: &RuntimeConfig, flow: Flow) -> Option<Error> {
    let required = config.guarantees.ordering;
    match flow {
        Flow::Claims if required > Ordering::Detect => Some(Error::NegotiationFailed(format!(
            "this runtime requires {required:?} ordering; a dialling pair or puller detects \
             gaps and holds nothing back, so it offers Detect"
        ))),
        _ => None,
    }
}

/// Which side of the handshake this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The dialler: it sent its HELLO first and reads the listener's.
    Dialling,
    /// The listener: it reads the dialler's HELLO, then answers with its own or CLOSE.
    Bound,
}

/// What two HELLOs agreed: the terms a connection runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Agreed {
    /// The agreed guarantee set (PROTOCOL.md §3.3).
    pub(crate) guarantees: GuaranteeSet,
    /// Both sides offered message lanes (§4.1).
    pub(crate) lanes: bool,
    /// Both sides set the path check (§3.1.5): the dialler may ask CHECK, and is answered.
    pub(crate) path_check: bool,
    /// Both sides set claims (§3.1.6): the dialler may send CLAIM, and is answered.
    pub(crate) claims: bool,
    /// Both sides offered lanes on parked connections as well as lanes (§3.7): over AF_UNIX
    /// a publisher writes small copies as frames of a lane on one parked connection.
    pub(crate) parked_lanes: bool,
    /// The peer keeps sockets (its HELLO set FEATURES bit 4, §8.7): a dialler's exchanges
    /// over AF_UNIX ask for theirs to be kept.
    pub(crate) peer_keeps_sockets: bool,
    /// The largest DATA header the peer accepts (its MAX_HEADER_SIZE).
    pub(crate) peer_max_header: u64,
    /// Pub/Sub copies toward the peer are numbered: it requires PerProducer ordering and the
    /// agreed set has it (§3.7). Numbering for a peer that did not ask would carry sequence
    /// bytes for nothing.
    pub(crate) numbered: bool,
    /// The peer's local-socket subscriber session, when its HELLO announced one that parks
    /// connections (§3.7); a malformed one is ignored.
    pub(crate) session: Option<Session>,
}

/// A handshake that ends without a connection, and how it ends.
#[derive(Debug)]
pub(crate) struct HandshakeRefusal {
    /// The code the connection is closed with.
    pub(crate) code: Code,
    /// The reason it is closed with.
    pub(crate) reason: String,
    /// Send CLOSE with the code and reason on the control stream first: the listener does
    /// when the two HELLOs do not meet (§3.2), so a dialler learns why on every transport.
    pub(crate) close_frame: bool,
    /// What the dialling caller gets.
    pub(crate) error: Error,
}

/// Decides a handshake from this side's HELLO and what it read of the peer's control stream
/// first: `first` is the first frame, `Ok(None)` when the stream ended (or, on the bound
/// side, the peer said nothing before the idle timeout), or the read's error (on the dialling
/// side already replaced by the peer's close reason when it closed the connection). The terms
/// agreed, or the refusal (PROTOCOL.md §3.2, §3.3).
pub(crate) fn conclude(
    side: Side,
    ours: &Hello,
    first: Result<Option<ControlFrame>>,
) -> std::result::Result<Agreed, HandshakeRefusal> {
    let negotiation_failed = |why: String| HandshakeRefusal {
        code: Code::NegotiationFailed,
        reason: why.clone(),
        close_frame: side == Side::Bound,
        error: Error::NegotiationFailed(why),
    };
    let expected_hello = |error: Error| HandshakeRefusal {
        code: Code::ProtocolError,
        reason: "expected HELLO".into(),
        close_frame: false,
        error,
    };
    let theirs = match (side, first) {
        (_, Ok(Some(ControlFrame::Hello(theirs)))) => theirs,
        // The listener refused this side's HELLO and said why.
        (Side::Dialling, Ok(Some(ControlFrame::Close { code, reason }))) => {
            return Err(HandshakeRefusal {
                code: Code::NoError,
                reason: String::new(),
                close_frame: false,
                error: code.into_error("", &reason),
            })
        }
        (Side::Dialling, Ok(_)) => {
            return Err(expected_hello(Error::Protocol(
                "the peer's first control frame is not HELLO".into(),
            )))
        }
        // Whatever the listener sent (a malformed frame, a version this side does not speak),
        // the connection cannot be used: it is closed with what the read found.
        (Side::Dialling, Err(e)) => {
            let code = match &e {
                Error::NegotiationFailed(_) => Code::NegotiationFailed,
                Error::Protocol(_) => Code::ProtocolError,
                _ => Code::NoError,
            };
            return Err(HandshakeRefusal {
                code,
                reason: "handshake failed".into(),
                close_frame: false,
                error: e,
            });
        }
        // A HELLO of a version this side does not speak is a failed negotiation, told as one.
        (Side::Bound, Err(Error::NegotiationFailed(why))) => return Err(negotiation_failed(why)),
        (Side::Bound, _) => {
            return Err(expected_hello(Error::Protocol(
                "the dialler's first control frame is not HELLO".into(),
            )))
        }
    };
    let guarantees = ours.negotiate(&theirs).map_err(negotiation_failed)?;
    let both = ours.features & theirs.features;
    let parked_lanes = lane_frame::FEATURE_LANES | lane_frame::FEATURE_PARKED_LANES;
    Ok(Agreed {
        lanes: both & lane_frame::FEATURE_LANES != 0,
        parked_lanes: both & parked_lanes == parked_lanes,
        path_check: both & FEATURE_PATH_CHECK != 0,
        claims: both & FEATURE_CLAIM != 0,
        // The one bit a dialler uses without setting it: keeping is the listener's to offer.
        peer_keeps_sockets: theirs.features & FEATURE_KEPT_SOCKETS != 0,
        peer_max_header: theirs.max_header_size,
        numbered: guarantees.ordering >= Ordering::Detect
            && theirs.required.ordering >= Ordering::Detect,
        session: theirs
            .session
            .as_deref()
            .and_then(|v| Session::decode(v).ok())
            .filter(|s| s.parked > 0),
        guarantees,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::LossCause;
    use crate::wire::StreamType;
    use bytes::Bytes;

    fn hello(lanes: bool, required: Ordering) -> Hello {
        let config = RuntimeConfig {
            lane_max_message: if lanes { 1024 } else { 0 },
            guarantees: GuaranteeSet {
                ordering: required,
                other: Vec::new(),
            },
            ..RuntimeConfig::default()
        };
        our_hello(&config, None, Flow::Receives)
    }

    fn session(parked: u64) -> Session {
        Session {
            parked,
            token: Bytes::from_static(b"0123456789abcdef"),
        }
    }

    /// HELLOs that meet, from either side: the agreed set, lanes when both offer them, the
    /// peer's header bound, numbering when the peer requires ordering, and the peer's session.
    #[test]
    fn two_hellos_that_meet_agree_on_every_term() {
        let plain = hello(true, Ordering::None);
        let mut small = hello(false, Ordering::Detect);
        small.max_header_size = 4096;
        let mut with_session = hello(true, Ordering::None);
        with_session.session = Some(session(3).encode());
        let mut parks_none = hello(true, Ordering::None);
        parks_none.session = Some(session(0).encode());
        let mut bad_session = hello(true, Ordering::None);
        bad_session.session = Some(Bytes::from_static(&[0xff]));
        // (ours, theirs, lanes, peer_max_header, numbered, ordering agreed, parked)
        type Row<'a> = (&'a Hello, &'a Hello, bool, u64, bool, Ordering, Option<u64>);
        let rows: Vec<Row<'_>> = vec![
            (
                &plain,
                &plain,
                true,
                16 * 1024,
                false,
                Ordering::Reassemble,
                None,
            ),
            (
                &plain,
                &small,
                false,
                4096,
                true,
                Ordering::Reassemble,
                None,
            ),
            (
                &small,
                &plain,
                false,
                16 * 1024,
                false,
                Ordering::Reassemble,
                None,
            ),
            (
                &plain,
                &with_session,
                true,
                16 * 1024,
                false,
                Ordering::Reassemble,
                Some(3),
            ),
            (
                &plain,
                &parks_none,
                true,
                16 * 1024,
                false,
                Ordering::Reassemble,
                None,
            ),
            (
                &plain,
                &bad_session,
                true,
                16 * 1024,
                false,
                Ordering::Reassemble,
                None,
            ),
        ];
        for side in [Side::Dialling, Side::Bound] {
            for (i, (ours, theirs, lanes, max, numbered, ordering, parked)) in
                rows.iter().enumerate()
            {
                let first = Ok(Some(ControlFrame::Hello((*theirs).clone())));
                let agreed = conclude(side, ours, first).unwrap_or_else(|r| panic!("{i}: {r:?}"));
                assert_eq!(agreed.lanes, *lanes, "{side:?} {i}");
                // Lanes on parked connections come with lanes in this implementation.
                assert_eq!(agreed.parked_lanes, *lanes, "{side:?} {i}");
                // Every HELLO of this implementation sets the path check.
                assert!(agreed.path_check, "{side:?} {i}");
                assert_eq!(agreed.peer_max_header, *max, "{side:?} {i}");
                assert_eq!(agreed.numbered, *numbered, "{side:?} {i}");
                assert_eq!(agreed.guarantees.ordering, *ordering, "{side:?} {i}");
                assert_eq!(agreed.session.map(|s| s.parked), *parked, "{side:?} {i}");
            }
        }
    }

    /// Every way a handshake is refused, on each side: the code and reason the connection is
    /// closed with, whether the listener tells the dialler with CLOSE, and the dialler's error.
    #[test]
    fn a_handshake_that_fails_says_how_on_each_side() {
        let ours = hello(true, Ordering::None);
        let mut offers_nothing = hello(true, Ordering::None);
        offers_nothing.offered = GuaranteeSet::core();
        let requires_detect = hello(true, Ordering::Detect);
        let mut requires_unknown = hello(true, Ordering::None);
        requires_unknown.required.other.push((0x05, 1));
        requires_unknown.offered.other.push((0x05, 1));
        use Side::*;
        let neg = |s: &str| Error::NegotiationFailed(s.into());
        // (side, ours, first frame, code, reason, CLOSE frame, the dialler's error)
        type Row<'a> = (
            Side,
            &'a Hello,
            Result<Option<ControlFrame>>,
            Code,
            &'a str,
            bool,
            &'a str,
        );
        let rows: Vec<Row<'_>> = vec![
            // The HELLOs do not meet: this side requires more than the peer offers, or the
            // peer requires what nobody reaches.
            (
                Dialling,
                &requires_detect,
                Ok(Some(ControlFrame::Hello(offers_nothing.clone()))),
                Code::NegotiationFailed,
                "this side requires",
                false,
                "negotiation failed: this side requires",
            ),
            (
                Bound,
                &ours,
                Ok(Some(ControlFrame::Hello(requires_unknown.clone()))),
                Code::NegotiationFailed,
                "the peer requires",
                true,
                "negotiation failed: the peer requires",
            ),
            // A HELLO of a version this side does not speak.
            (
                Bound,
                &ours,
                Err(neg("unsupported HELLO version 1")),
                Code::NegotiationFailed,
                "unsupported HELLO version 1",
                true,
                "negotiation failed: unsupported HELLO",
            ),
            (
                Dialling,
                &ours,
                Err(neg("unsupported HELLO version 1")),
                Code::NegotiationFailed,
                "handshake failed",
                false,
                "negotiation failed: unsupported HELLO",
            ),
            // The listener refused and said why with CLOSE.
            (
                Dialling,
                &ours,
                Ok(Some(ControlFrame::Close {
                    code: Code::NegotiationFailed,
                    reason: "no".into(),
                })),
                Code::NoError,
                "",
                false,
                "negotiation failed: no",
            ),
            // Something else came first, or nothing.
            (
                Dialling,
                &ours,
                Ok(Some(ControlFrame::GoAway { opened: 0 })),
                Code::ProtocolError,
                "expected HELLO",
                false,
                "protocol error: the peer's first control frame",
            ),
            (
                Dialling,
                &ours,
                Ok(None),
                Code::ProtocolError,
                "expected HELLO",
                false,
                "protocol error: the peer's first control frame",
            ),
            (
                Bound,
                &ours,
                Ok(Some(ControlFrame::GoAway { opened: 0 })),
                Code::ProtocolError,
                "expected HELLO",
                false,
                "protocol error: the dialler's first control frame",
            ),
            (
                Bound,
                &ours,
                Ok(None),
                Code::ProtocolError,
                "expected HELLO",
                false,
                "protocol error: the dialler's first control frame",
            ),
            (
                Bound,
                &ours,
                Ok(Some(ControlFrame::Close {
                    code: Code::NoError,
                    reason: String::new(),
                })),
                Code::ProtocolError,
                "expected HELLO",
                false,
                "protocol error: the dialler's first control frame",
            ),
            // A malformed frame, or a read that failed.
            (
                Dialling,
                &ours,
                Err(Error::Protocol("control stream: truncated".into())),
                Code::ProtocolError,
                "handshake failed",
                false,
                "protocol error: control stream",
            ),
            (
                Bound,
                &ours,
                Err(Error::Protocol("control stream: truncated".into())),
                Code::ProtocolError,
                "expected HELLO",
                false,
                "protocol error: the dialler's",
            ),
            (
                Dialling,
                &ours,
                Err(Error::ConnectionLost(LossCause::PeerClosed)),
                Code::NoError,
                "handshake failed",
                false,
                "connection lost: peer closed",
            ),
            (
                Bound,
                &ours,
                Err(Error::ConnectionLost(LossCause::PeerClosed)),
                Code::ProtocolError,
                "expected HELLO",
                false,
                "protocol error: the dialler's",
            ),
        ];
        for (i, (side, ours, first, code, reason, close_frame, error)) in
            rows.into_iter().enumerate()
        {
            let r = match conclude(side, ours, first) {
                Err(r) => r,
                Ok(a) => panic!("{i}: agreed {a:?}"),
            };
            assert_eq!(r.code, code, "{i}");
            assert!(r.reason.starts_with(reason), "{i}: {:?}", r.reason);
            assert_eq!(r.close_frame, close_frame, "{i}");
            assert!(r.error.to_string().starts_with(error), "{i}: {}", r.error);
        }
    }

    /// This side's HELLO offers every ordering level, requires the configuration's, and offers
    /// lanes when they are on, and the path check always (its bytes:
    /// `the_hello_bytes_protocol_md_shows_are_the_ones_sent`).
    #[test]
    fn our_hello_offers_everything_and_requires_the_configuration() {
        let h = hello(true, Ordering::Detect);
        assert_eq!(h.offered.ordering, Ordering::Reassemble);
        assert_eq!(h.required.ordering, Ordering::Detect);
        assert_eq!(
            h.features,
            lane_frame::FEATURE_LANES | lane_frame::FEATURE_PARKED_LANES | FEATURE_PATH_CHECK
        );
        assert_eq!(hello(false, Ordering::None).features, FEATURE_PATH_CHECK);
        let s = session(2);
        let config = RuntimeConfig::default();
        assert_eq!(
            our_hello(&config, Some(&s), Flow::Receives).session,
            Some(s.encode())
        );
    }

    /// The path check is in use only when both HELLOs set its bit: a peer that predates it
    /// (or another implementation that does not answer CHECK) is never asked, from either
    /// side (PROTOCOL.md §3.1.5).
    #[test]
    fn the_path_check_is_agreed_only_when_both_hellos_set_it() {
        let ours = hello(true, Ordering::None);
        let mut old = hello(true, Ordering::None);
        old.features = lane_frame::FEATURE_LANES;
        for side in [Side::Dialling, Side::Bound] {
            let agreed = conclude(side, &ours, Ok(Some(ControlFrame::Hello(old.clone())))).unwrap();
            assert!(!agreed.path_check, "{side:?}");
            assert!(agreed.lanes, "{side:?}");
            let agreed = conclude(side, &old, Ok(Some(ControlFrame::Hello(ours.clone())))).unwrap();
            assert!(!agreed.path_check, "{side:?}");
        }
    }

    /// Lanes on parked connections are in use only when both HELLOs set their bit and the
    /// lanes bit: a subscriber that predates them (or reads a parked connection as §3.7 had it,
    /// one transfer each) is never sent a lane there, and neither bit alone is enough.
    #[test]
    fn lanes_on_parked_connections_are_agreed_only_when_both_hellos_set_both_bits() {
        let ours = hello(true, Ordering::None);
        let mut older = hello(true, Ordering::None);
        older.features &= !lane_frame::FEATURE_PARKED_LANES;
        let mut alone = hello(true, Ordering::None);
        alone.features &= !lane_frame::FEATURE_LANES;
        for side in [Side::Dialling, Side::Bound] {
            for (a, b) in [
                (&ours, &older),
                (&older, &ours),
                (&ours, &alone),
                (&alone, &ours),
            ] {
                let agreed = conclude(side, a, Ok(Some(ControlFrame::Hello(b.clone())))).unwrap();
                assert!(!agreed.parked_lanes, "{side:?}");
            }
            let agreed =
                conclude(side, &ours, Ok(Some(ControlFrame::Hello(ours.clone())))).unwrap();
            assert!(agreed.parked_lanes && agreed.lanes, "{side:?}");
        }
    }

    /// The bytes PROTOCOL.md shows as this implementation's HELLO (§3.3, and the examples of
    /// §3.2, §3.6 and §3.7), and the vector of conformance/vectors/hello.json that names it, are
    /// what `our_hello` encodes: neither can drift from the code again.
    #[test]
    fn the_hello_bytes_protocol_md_shows_are_the_ones_sent() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let read = |path: &str| {
            std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        let frame = |config: &RuntimeConfig, session: Option<&Session>, flow: Flow| {
            let mut out = Vec::new();
            ControlFrame::Hello(our_hello(config, session, flow)).encode(&mut out);
            out
        };
        let spaced = |b: &[u8]| {
            b.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        // A DATA chunk of AF_UNIX (§8.1) carrying `payload`, as §3.6 writes it.
        let chunk = |payload: &[u8]| {
            let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
            format!(
                "{}  {}",
                spaced(&[&[0][..], &len].concat()),
                spaced(payload)
            )
        };
        let default = RuntimeConfig::default();
        let hello = frame(&default, None, Flow::Receives);
        let detect = RuntimeConfig {
            guarantees: GuaranteeSet {
                ordering: Ordering::Detect,
                other: Vec::new(),
            },
            ..RuntimeConfig::default()
        };
        let parked = Session {
            parked: 2,
            token: Bytes::from_static(&[0xab, 0xcd]),
        };
        let listener = frame(&default, None, Flow::Listens);
        let control = [&[StreamType::Control.to_byte()][..], &hello].concat();
        let shown = [
            ("§3.3, the default HELLO", spaced(&hello)),
            ("§3.3, a listener's HELLO", spaced(&listener)),
            (
                "§3.3, a listener requiring detect",
                spaced(&frame(&detect, None, Flow::Listens)),
            ),
            (
                "§3.1.6, a dialling pair's HELLO",
                spaced(&frame(&default, None, Flow::Claims)),
            ),
            (
                "§3.1.6, a dialling pair requiring detect",
                spaced(&frame(&detect, None, Flow::Claims)),
            ),
            ("§3.2, the listener's answer", spaced(&listener)),
            (
                "§3.3, a pusher's HELLO",
                spaced(&frame(&detect, None, Flow::Numbers)),
            ),
            (
                "§3.3, a requester's HELLO",
                spaced(&frame(&detect, None, Flow::Unordered)),
            ),
            ("§3.2, the dialler's first bytes", spaced(&control)),
            ("§3.6, the dialler's first chunk", chunk(&control)),
            ("§3.6, the listener's answer", chunk(&listener)),
            (
                "§3.7, a parking subscriber",
                spaced(&frame(&default, Some(&parked), Flow::Receives)),
            ),
        ];
        let doc = read("docs/PROTOCOL.md");
        for (what, bytes) in shown {
            assert!(doc.contains(&bytes), "PROTOCOL.md {what} is not `{bytes}`");
        }
        let vectors: serde_json::Value =
            serde_json::from_str(&read("conformance/vectors/hello.json")).unwrap();
        let named = [
            (
                "HELLO: this implementation's default (lanes, path check, offers reassemble)",
                hello.clone(),
            ),
            (
                "HELLO: this implementation's listener (lanes, path check, claims, kept sockets, offers reassemble)",
                listener.clone(),
            ),
            (
                "HELLO: this implementation's dialling pair (lanes, path check, claims, offers detect)",
                frame(&default, None, Flow::Claims),
            ),
        ];
        for (name, bytes) in named {
            let vector = vectors["vectors"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == name)
                .unwrap_or_else(|| panic!("hello.json has no vector {name:?}"));
            assert_eq!(vector["hex"], hex::encode(&bytes), "{name}");
        }
    }
}
