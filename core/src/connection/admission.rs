//! Which code refuses a stream, or to which endpoint it is admitted (PROTOCOL.md §9.1), as
//! functions over plain values: the type byte and how the stream arrived, its DATA header (or
//! why it could not be read), and what is bound at its path. Dispatch (`dispatch.rs`) reads
//! the bytes and calls these in the order of §9.1, one step per read; the tests below run
//! every branch, and the order, without a socket.

use crate::error::Error;
use crate::transport::reader::ReadFail;
use crate::wire::{Code, Header, StreamType};

/// What a path is bound to, and which streams it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteKind {
    /// Raw streams: both kinds.
    Acceptor,
    /// Req/Rep: exchanges only.
    Replier,
    /// Push/Pull: one-way transfers only.
    Puller,
    /// Pub/Sub: takes no stream; subscribers reach it with SUBSCRIBE.
    Publisher,
    /// PAIR: one-way transfers, only from the connection that claimed it (CLAIM, PROTOCOL.md
    /// §3.1.6).
    Pair,
    /// A bound pusher: takes no stream; pullers that claimed it get its messages (§3.1.6).
    Pusher,
}

impl RouteKind {
    /// Whether an endpoint of this kind takes a stream of type `ty`.
    pub(crate) fn takes(self, ty: StreamType) -> bool {
        matches!(
            (self, ty),
            (Self::Acceptor, StreamType::Transfer | StreamType::Exchange)
                | (Self::Replier, StreamType::Exchange)
                | (Self::Puller | Self::Pair, StreamType::Transfer)
                | (Self::Acceptor | Self::Puller | Self::Pair, StreamType::Lane)
        )
    }

    /// How a refusal names it (`"/p" is a replier, which ...`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Acceptor => "an acceptor",
            Self::Replier => "a replier",
            Self::Puller => "a puller",
            Self::Publisher => "a publisher",
            Self::Pair => "a pair",
            Self::Pusher => "a pusher",
        }
    }
}

/// How a stream arrived: the other half it came with, on which transport (what §9.1 steps 1
/// and 2 depend on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// A one-way stream: QUIC unidirectional, or in process.
    OneWay,
    /// A QUIC bidirectional stream.
    QuicBidi,
    /// An in-process bidirectional stream.
    InprocBidi,
    /// An AF_UNIX connection: always both ways, the back direction carrying STOPs.
    LocalSocket,
    /// Over AF_UNIX, a connection this dialler parked with its listener (§3.7): the listener
    /// writes a transfer on it, or a lane where lanes on parked connections are in use, and
    /// the back direction carries STOP chunks alone. Anything else the listener writes there
    /// is refused, never served as if this side were the listener (a session, a parked
    /// connection, an exchange).
    Parked,
}

/// A stream refused: the code its reader is stopped with (and, for an exchange, its ERROR
/// reply carries), and the ERROR's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamRefusal {
    pub(crate) code: Code,
    pub(crate) message: String,
}

impl StreamRefusal {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// What the type byte makes of a stream (§9.1 steps 1 and 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ByType {
    /// A control connection over a local socket: a session (§3.6).
    LocalSession,
    /// A connection a local-socket subscriber parks for its publisher (§3.7).
    Parked,
    /// A message lane (§4.1): its head is read next.
    Lane,
    /// A transfer or an exchange: its header is read next. `reply`: the other half is the
    /// exchange's reply half (otherwise it is dropped).
    Stream { ty: StreamType, reply: bool },
    /// Refused before anything more is read.
    Refused(StreamRefusal),
}

/// Steps 1 and 2: the stream's type byte, read from a stream that arrived as `arrival`, on a
/// connection where message lanes are in use when `lanes` (both HELLOs set FEATURES bit 0,
/// PROTOCOL.md §3.1.1): a lane where they are not is refused as an unassigned type is.
pub(crate) fn by_type(byte: u8, arrival: Arrival, lanes: bool) -> ByType {
    let local = arrival == Arrival::LocalSocket;
    let unsupported = || ByType::Refused(StreamRefusal::new(Code::Unsupported, UNSUPPORTED_TYPE));
    if arrival == Arrival::Parked {
        return match StreamType::from_byte(byte) {
            Ok(ty @ StreamType::Transfer) => ByType::Stream { ty, reply: false },
            Ok(StreamType::Lane) if lanes => ByType::Lane,
            _ => unsupported(),
        };
    }
    match StreamType::from_byte(byte) {
        // Over a local socket each control connection arrives like a stream.
        Ok(StreamType::Control) if local => ByType::LocalSession,
        Ok(ty @ (StreamType::Transfer | StreamType::Exchange)) => {
            let exchange = ty == StreamType::Exchange;
            // An exchange needs a reply half; a transfer on a bidirectional QUIC stream is
            // malformed. A local socket is always bidirectional, and an in-process transfer on
            // a bidirectional stream drops its reply half.
            let mismatch = match arrival {
                Arrival::OneWay => exchange,
                Arrival::QuicBidi => !exchange,
                Arrival::InprocBidi | Arrival::LocalSocket => false,
                Arrival::Parked => unreachable!("a parked connection's types are decided above"),
            };
            if mismatch {
                return ByType::Refused(StreamRefusal::new(
                    Code::ProtocolError,
                    "stream type does not match its direction",
                ));
            }
            ByType::Stream {
                ty,
                reply: exchange,
            }
        }
        Ok(StreamType::Parked) if local => ByType::Parked,
        // A lane is one-way; over a local socket the back direction carries its STOPs.
        Ok(StreamType::Lane)
            if lanes && matches!(arrival, Arrival::OneWay | Arrival::LocalSocket) =>
        {
            ByType::Lane
        }
        // One control stream per connection, and it is the first (§3.2).
        Ok(StreamType::Control) => ByType::Refused(StreamRefusal::new(
            Code::ProtocolError,
            "a second control stream",
        )),
        Ok(_) | Err(_) => unsupported(),
    }
}

const UNSUPPORTED_TYPE: &str = "unsupported stream type";

/// What a step decided: go on with `T`, refuse, or drop the stream with no refusal (nobody is
/// left to tell: it was reset or lost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step<T> {
    Next(T),
    Refuse(StreamRefusal),
    Drop,
}

/// Steps 3 to 5: the DATA header of a stream of type `ty` (a lane's head for
/// [`StreamType::Lane`]), or why it could not be read: its path, or the refusal.
pub(crate) fn by_header(ty: StreamType, header: &Result<Header, ReadFail>) -> Step<&str> {
    let lane = ty == StreamType::Lane;
    match header {
        Ok(h) => match &h.path {
            Some(path) => Step::Next(path),
            None if lane => Step::Refuse(StreamRefusal::new(
                Code::ProtocolError,
                "a lane without a path",
            )),
            None => Step::Refuse(StreamRefusal::new(
                Code::ProtocolError,
                "a stream without a path",
            )),
        },
        // Reset or lost before its header was whole: there is nobody to tell.
        Err(ReadFail::Stream(_)) => Step::Drop,
        Err(f) => {
            let message = match f.clone().into_error() {
                _ if lane => "bad lane head".to_string(),
                Error::LimitExceeded { detail, .. } => detail,
                e => e.to_string(),
            };
            Step::Refuse(StreamRefusal::new(f.code(), message))
        }
    }
}

/// What dispatch found bound at a stream's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// Nothing is bound there.
    Nothing,
    /// An endpoint of `kind`; `open` is false once its queue is closed (the endpoint is going
    /// away). A publisher has no queue and counts as open: it takes no stream anyway.
    Endpoint { kind: RouteKind, open: bool },
}

/// Steps 6 and 7: a stream of type `ty` to `path`, where `found` is bound: admitted to that
/// endpoint's queue (step 8), or the refusal. A lane's endpoint is checked for its kind first
/// and for its queue second (§4.1); a stream's for its queue first (§9.1).
pub(crate) fn by_endpoint(ty: StreamType, path: &str, found: Found) -> Result<(), StreamRefusal> {
    let nothing = || {
        StreamRefusal::new(
            Code::UnknownEndpoint,
            format!("nothing is bound at {path:?}"),
        )
    };
    let (kind, open) = match found {
        Found::Nothing => return Err(nothing()),
        Found::Endpoint { kind, open } => (kind, open),
    };
    if !open && ty != StreamType::Lane {
        return Err(nothing());
    }
    if !kind.takes(ty) {
        let what = match ty {
            StreamType::Exchange => "a request",
            StreamType::Lane => "one-way messages",
            _ => "a one-way transfer",
        };
        return Err(StreamRefusal::new(
            Code::Unsupported,
            format!("{path:?} is {}, which does not take {what}", kind.name()),
        ));
    }
    if !open {
        return Err(nothing());
    }
    Ok(())
}

/// A CHECK (PROTOCOL.md §3.1.5): whether the endpoint `found` at `path` takes at least one of
/// the stream kinds `streams` names (one bit per type byte, `wire::check_streams`), answered
/// as the first stream of those kinds would be refused (§9.1 steps 6 and 7): UNKNOWN_ENDPOINT
/// when nothing is bound, or the endpoint is going away; UNSUPPORTED when it takes none of
/// them, or `streams` names no kind a dialler opens.
pub(crate) fn by_check(streams: u64, path: &str, found: Found) -> Result<(), StreamRefusal> {
    // A pair takes streams only from the peer that claimed it: a CHECK cannot make one.
    if let Found::Endpoint {
        kind: RouteKind::Pair,
        open: true,
    } = found
    {
        return Err(StreamRefusal::new(
            Code::Unsupported,
            format!("{path:?} is a pair, which takes streams only from the peer that claimed it"),
        ));
    }
    let mut refusal = None;
    for ty in [StreamType::Transfer, StreamType::Exchange] {
        if streams & (1 << ty.to_byte()) == 0 {
            continue;
        }
        match by_endpoint(ty, path, found) {
            Ok(()) => return Ok(()),
            Err(r) => {
                refusal.get_or_insert(r);
            }
        }
    }
    Err(refusal.unwrap_or_else(|| {
        StreamRefusal::new(
            Code::Unsupported,
            format!("a CHECK of {path:?} names no stream kind a dialler opens ({streams:#x})"),
        )
    }))
}

/// A CLAIM (PROTOCOL.md §3.1.6) in `role` of the endpoint `found` at `path`, before the
/// endpoint itself decides (a pair already claimed answers LIMIT_EXCEEDED): UNKNOWN_ENDPOINT
/// when nothing is bound or it is going away, UNSUPPORTED when it takes no claim in that role
/// (a role this side does not know included).
pub(crate) fn by_claim(role: u64, path: &str, found: Found) -> Result<(), StreamRefusal> {
    let Found::Endpoint { kind, open: true } = found else {
        return Err(StreamRefusal::new(
            Code::UnknownEndpoint,
            format!("nothing is bound at {path:?}"),
        ));
    };
    use crate::wire::claim_role::{PAIR, PULLER};
    match (role, kind) {
        (PAIR, RouteKind::Pair) | (PULLER, RouteKind::Pusher) => Ok(()),
        (PAIR, _) => Err(StreamRefusal::new(
            Code::Unsupported,
            format!("{path:?} is {}, not a pair", kind.name()),
        )),
        (PULLER, _) => Err(StreamRefusal::new(
            Code::Unsupported,
            format!("{path:?} is {}, not a bound pusher", kind.name()),
        )),
        _ => Err(StreamRefusal::new(
            Code::Unsupported,
            format!("a claim of {path:?} in a role this listener does not know ({role})"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::StreamError;
    use crate::wire::DecodeError;
    use crate::LossCause;
    use Arrival::*;

    fn refused(code: Code, message: &str) -> ByType {
        ByType::Refused(StreamRefusal::new(code, message))
    }

    fn stream(ty: StreamType) -> ByType {
        ByType::Stream {
            ty,
            reply: ty == StreamType::Exchange,
        }
    }

    const DIRECTION: &str = "stream type does not match its direction";

    /// Step 1 and 2, every branch: the type byte, on each way a stream arrives, with lanes
    /// taken or not.
    #[test]
    fn the_type_byte_and_the_direction_decide_what_a_stream_is() {
        use StreamType::*;
        let rows: &[(u8, Arrival, bool, ByType)] = &[
            // 00: a session over a local socket, a second control stream elsewhere.
            (0x00, LocalSocket, true, ByType::LocalSession),
            (
                0x00,
                OneWay,
                true,
                refused(Code::ProtocolError, "a second control stream"),
            ),
            (
                0x00,
                QuicBidi,
                true,
                refused(Code::ProtocolError, "a second control stream"),
            ),
            (
                0x00,
                InprocBidi,
                false,
                refused(Code::ProtocolError, "a second control stream"),
            ),
            // 01: a transfer, anywhere but on a bidirectional QUIC stream.
            (0x01, OneWay, true, stream(Transfer)),
            (0x01, InprocBidi, true, stream(Transfer)),
            (0x01, LocalSocket, true, stream(Transfer)),
            (
                0x01,
                QuicBidi,
                true,
                refused(Code::ProtocolError, DIRECTION),
            ),
            // 02: an exchange needs its reply half.
            (0x02, QuicBidi, true, stream(Exchange)),
            (0x02, InprocBidi, true, stream(Exchange)),
            (0x02, LocalSocket, false, stream(Exchange)),
            (0x02, OneWay, true, refused(Code::ProtocolError, DIRECTION)),
            // 03: a lane, one-way (or over a local socket), when lanes are in use.
            (0x03, OneWay, true, ByType::Lane),
            (0x03, LocalSocket, true, ByType::Lane),
            (
                0x03,
                OneWay,
                false,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            (
                0x03,
                QuicBidi,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            (
                0x03,
                InprocBidi,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            // 04: a parked connection exists only over a local socket.
            (0x04, LocalSocket, true, ByType::Parked),
            (
                0x04,
                OneWay,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            (
                0x04,
                QuicBidi,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            // On a connection this dialler parked: a transfer, or a lane where lanes on parked
            // connections are in use; nothing that would make this side a listener.
            (0x01, Arrival::Parked, false, stream(Transfer)),
            (0x03, Arrival::Parked, true, ByType::Lane),
            (
                0x03,
                Arrival::Parked,
                false,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            (
                0x00,
                Arrival::Parked,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            (
                0x02,
                Arrival::Parked,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            (
                0x04,
                Arrival::Parked,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            // Anything else: unsupported.
            (
                0x05,
                OneWay,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
            (
                0xff,
                LocalSocket,
                true,
                refused(Code::Unsupported, "unsupported stream type"),
            ),
        ];
        for (byte, arrival, lanes, want) in rows {
            assert_eq!(
                &by_type(*byte, *arrival, *lanes),
                want,
                "{byte:#04x} {arrival:?} {lanes}"
            );
        }
        // Every byte this version does not define is refused the same way, whatever the rest.
        for byte in 0x05..=0xff {
            for arrival in [OneWay, QuicBidi, InprocBidi, LocalSocket, Arrival::Parked] {
                for lanes in [false, true] {
                    let want = refused(Code::Unsupported, "unsupported stream type");
                    assert_eq!(by_type(byte, arrival, lanes), want);
                }
            }
        }
    }

    fn with_path(path: &str) -> Header {
        Header::for_path(path)
    }

    fn too_large() -> ReadFail {
        ReadFail::Decode(DecodeError::TooLarge {
            what: "header",
            len: 70_000,
            limit: 16_384,
        })
    }

    /// Steps 3 to 5, every branch, for a stream and for a lane's head.
    #[test]
    fn the_header_decides_the_path_or_the_refusal() {
        use StreamType::*;
        let refuse = |code, message: &str| Step::Refuse(StreamRefusal::new(code, message));
        let rows: Vec<(StreamType, Result<Header, ReadFail>, Step<&str>)> = vec![
            (Transfer, Ok(with_path("/jobs")), Step::Next("/jobs")),
            (Lane, Ok(with_path("/jobs")), Step::Next("/jobs")),
            // Step 3: the length above the bound, decided before the body is read.
            (
                Exchange,
                Err(too_large()),
                refuse(
                    Code::LimitExceeded,
                    "a header of 70000 bytes, above max_header_size 16384 (16 KiB)",
                ),
            ),
            (
                Lane,
                Err(too_large()),
                refuse(Code::LimitExceeded, "bad lane head"),
            ),
            // Step 4: a version this side does not speak; malformed; the FIN inside it.
            (
                Transfer,
                Err(ReadFail::Decode(DecodeError::Unsupported(
                    "header version 1".into(),
                ))),
                refuse(
                    Code::Unsupported,
                    "protocol error: unsupported header version 1",
                ),
            ),
            (
                Transfer,
                Err(ReadFail::Decode(DecodeError::malformed("truncated key"))),
                refuse(Code::ProtocolError, "protocol error: truncated key"),
            ),
            (
                Exchange,
                Err(ReadFail::Decode(DecodeError::Truncated)),
                refuse(
                    Code::ProtocolError,
                    "protocol error: stream ended inside a frame",
                ),
            ),
            (
                Lane,
                Err(ReadFail::Decode(DecodeError::malformed("truncated key"))),
                refuse(Code::ProtocolError, "bad lane head"),
            ),
            // Step 4: reset or lost before the header was whole: dropped, no refusal.
            (
                Transfer,
                Err(ReadFail::Stream(StreamError::Reset(Code::Canceled))),
                Step::Drop,
            ),
            (
                Lane,
                Err(ReadFail::Stream(StreamError::Lost(LossCause::PeerClosed))),
                Step::Drop,
            ),
            // Step 5: no PATH.
            (
                Transfer,
                Ok(Header::default()),
                refuse(Code::ProtocolError, "a stream without a path"),
            ),
            (
                Lane,
                Ok(Header::default()),
                refuse(Code::ProtocolError, "a lane without a path"),
            ),
        ];
        for (ty, header, want) in &rows {
            assert_eq!(&by_header(*ty, header), want, "{ty:?} {header:?}");
        }
    }

    /// Steps 6 and 7, every branch: the endpoint found at the path, its kind and whether its
    /// queue is open, for each stream type.
    /// A CHECK passes when the endpoint takes one of the kinds asked about, and is answered
    /// otherwise with the code the first such stream would be refused with.
    #[test]
    fn a_check_passes_when_the_endpoint_takes_one_of_the_kinds_asked() {
        use crate::wire::check_streams::{EXCHANGE, TRANSFER};
        let open = |kind| Found::Endpoint { kind, open: true };
        let closing = |kind| Found::Endpoint { kind, open: false };
        let both = TRANSFER | EXCHANGE;
        let pass = [
            (TRANSFER, open(RouteKind::Puller)),
            (TRANSFER, open(RouteKind::Acceptor)),
            (EXCHANGE, open(RouteKind::Replier)),
            (EXCHANGE, open(RouteKind::Acceptor)),
            (both, open(RouteKind::Puller)),
            (both, open(RouteKind::Replier)),
            (both, open(RouteKind::Acceptor)),
        ];
        for (streams, found) in pass {
            assert_eq!(
                by_check(streams, "/p", found),
                Ok(()),
                "{streams} {found:?}"
            );
        }
        let unknown = Code::UnknownEndpoint;
        let unsupported = Code::Unsupported;
        let refused = [
            (TRANSFER, Found::Nothing, unknown),
            (both, Found::Nothing, unknown),
            (TRANSFER, closing(RouteKind::Puller), unknown),
            (TRANSFER, open(RouteKind::Replier), unsupported),
            (EXCHANGE, open(RouteKind::Puller), unsupported),
            (TRANSFER, open(RouteKind::Publisher), unsupported),
            (both, open(RouteKind::Publisher), unsupported),
            // A kind no dialler opens (a lane is asked as a transfer), or none at all.
            (1 << 3, open(RouteKind::Puller), unsupported),
            (0, open(RouteKind::Acceptor), unsupported),
            // A pair is claimed, never checked: its streams come only from its claimant.
            (TRANSFER, open(RouteKind::Pair), unsupported),
            (TRANSFER, closing(RouteKind::Pair), unknown),
        ];
        for (streams, found, code) in refused {
            let r = by_check(streams, "/p", found).unwrap_err();
            assert_eq!(r.code, code, "{streams} {found:?}: {}", r.message);
        }
    }

    #[test]
    fn a_claim_passes_only_for_the_endpoint_its_role_names() {
        use crate::wire::claim_role::{PAIR, PULLER};
        let open = |kind| Found::Endpoint { kind, open: true };
        assert_eq!(by_claim(PAIR, "/p", open(RouteKind::Pair)), Ok(()));
        assert_eq!(by_claim(PULLER, "/p", open(RouteKind::Pusher)), Ok(()));
        let refused = [
            (PAIR, Found::Nothing, Code::UnknownEndpoint),
            (
                PAIR,
                Found::Endpoint {
                    kind: RouteKind::Pair,
                    open: false,
                },
                Code::UnknownEndpoint,
            ),
            (PAIR, open(RouteKind::Puller), Code::Unsupported),
            (PAIR, open(RouteKind::Publisher), Code::Unsupported),
            (7, open(RouteKind::Pair), Code::Unsupported),
            (PULLER, open(RouteKind::Pair), Code::Unsupported),
            (PAIR, open(RouteKind::Pusher), Code::Unsupported),
            (PULLER, open(RouteKind::Puller), Code::Unsupported),
        ];
        for (role, found, code) in refused {
            let r = by_claim(role, "/p", found).unwrap_err();
            assert_eq!(r.code, code, "{role} {found:?}: {}", r.message);
        }
    }

    #[test]
    fn the_endpoint_found_admits_the_stream_or_refuses_it() {
        use RouteKind::*;
        use StreamType::*;
        let open = |kind| Found::Endpoint { kind, open: true };
        let closed = |kind| Found::Endpoint { kind, open: false };
        let nothing = || {
            Err(StreamRefusal::new(
                Code::UnknownEndpoint,
                "nothing is bound at \"/p\"",
            ))
        };
        let unsupported = |what: &str, kind: &str| {
            Err(StreamRefusal::new(
                Code::Unsupported,
                format!("\"/p\" is {kind}, which does not take {what}"),
            ))
        };
        let rows: Vec<(StreamType, Found, Result<(), StreamRefusal>)> = vec![
            // Admitted: each kind with what it takes.
            (Transfer, open(Puller), Ok(())),
            (Lane, open(Puller), Ok(())),
            (Exchange, open(Replier), Ok(())),
            (Transfer, open(Acceptor), Ok(())),
            (Exchange, open(Acceptor), Ok(())),
            (Lane, open(Acceptor), Ok(())),
            // Step 6: nothing bound, or an endpoint going away.
            (Transfer, Found::Nothing, nothing()),
            (Exchange, Found::Nothing, nothing()),
            (Lane, Found::Nothing, nothing()),
            (Transfer, closed(Puller), nothing()),
            (Lane, closed(Puller), nothing()),
            // Step 7: the pattern does not take the stream.
            (
                Transfer,
                open(Replier),
                unsupported("a one-way transfer", "a replier"),
            ),
            (
                Lane,
                open(Replier),
                unsupported("one-way messages", "a replier"),
            ),
            (Exchange, open(Puller), unsupported("a request", "a puller")),
            (
                Transfer,
                open(Publisher),
                unsupported("a one-way transfer", "a publisher"),
            ),
            (
                Exchange,
                open(Publisher),
                unsupported("a request", "a publisher"),
            ),
            (
                Lane,
                open(Publisher),
                unsupported("one-way messages", "a publisher"),
            ),
        ];
        for (ty, found, want) in rows {
            assert_eq!(by_endpoint(ty, "/p", found), want, "{ty:?} {found:?}");
        }
    }

    /// The steps of §9.1 in dispatch's order, for the table below: the first refusal wins.
    fn decide(
        byte: u8,
        arrival: Arrival,
        header: Result<Header, ReadFail>,
        found: Found,
    ) -> Step<StreamType> {
        let ty = match by_type(byte, arrival, true) {
            ByType::Stream { ty, .. } => ty,
            ByType::Lane => StreamType::Lane,
            ByType::Refused(r) => return Step::Refuse(r),
            other => panic!("not a stream: {other:?}"),
        };
        let path = match by_header(ty, &header) {
            Step::Next(p) => p,
            Step::Refuse(r) => return Step::Refuse(r),
            Step::Drop => return Step::Drop,
        };
        match by_endpoint(ty, path, found) {
            Ok(()) => Step::Next(ty),
            Err(r) => Step::Refuse(r),
        }
    }

    /// The refusal order of PROTOCOL.md §9.1: a stream with several faults is refused for the
    /// first, step by step, and a lane checks its endpoint's kind before its queue (§4.1).
    #[test]
    fn a_stream_with_several_faults_is_refused_for_the_first_in_the_order_of_section_9_1() {
        let closed_replier = Found::Endpoint {
            kind: RouteKind::Replier,
            open: false,
        };
        let code = |s: Step<StreamType>| match s {
            Step::Refuse(r) => Some(r.code),
            _ => None,
        };
        let no_path = || Ok(Header::default());
        let rows: Vec<(&str, Step<StreamType>, Option<Code>)> = vec![
            // 1 before 2..: an unknown type with every later fault.
            (
                "type",
                decide(0x09, OneWay, Err(too_large()), Found::Nothing),
                Some(Code::Unsupported),
            ),
            // 2 before 3: an exchange on a one-way stream with a header above the bound.
            (
                "direction",
                decide(0x02, OneWay, Err(too_large()), Found::Nothing),
                Some(Code::ProtocolError),
            ),
            // 3 before 5 and 6: the header's length, even with no path and nothing bound.
            (
                "length",
                decide(0x01, OneWay, Err(too_large()), Found::Nothing),
                Some(Code::LimitExceeded),
            ),
            // 4 before 6: a malformed header to a path where nothing is bound.
            (
                "header",
                decide(
                    0x01,
                    OneWay,
                    Err(ReadFail::Decode(DecodeError::Unsupported(
                        "header version 1".into(),
                    ))),
                    Found::Nothing,
                ),
                Some(Code::Unsupported),
            ),
            // 4: a reset before the header is whole is dropped, whatever else is wrong.
            (
                "reset",
                decide(
                    0x01,
                    OneWay,
                    Err(ReadFail::Stream(StreamError::Reset(Code::Canceled))),
                    Found::Nothing,
                ),
                None,
            ),
            // 5 before 6: no path, nothing bound.
            (
                "path",
                decide(0x01, OneWay, no_path(), Found::Nothing),
                Some(Code::ProtocolError),
            ),
            // 6 before 7: a transfer to a replier that is going away.
            (
                "endpoint",
                decide(0x01, OneWay, Ok(with_path("/p")), closed_replier),
                Some(Code::UnknownEndpoint),
            ),
            // A lane: 7 before 6 (its endpoint's kind, then its queue).
            (
                "lane",
                decide(0x03, OneWay, Ok(with_path("/p")), closed_replier),
                Some(Code::Unsupported),
            ),
        ];
        for (step, got, want) in rows {
            assert_eq!(code(got), want, "{step}");
        }
    }
}
