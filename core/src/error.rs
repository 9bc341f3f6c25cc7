//! The one error type of weida, its stable codes, and the loss causes it keeps.
//!
//! Every binding maps [`Error`] once, by [`Error::code`]; the codes are the language-neutral
//! vocabulary of the conformance suite and of docs/PROTOCOL.md §7.

use std::fmt;
use std::io;

use crate::security::fingerprint::Fingerprint;

/// Why a connection ended. Kept, never flattened, so a caller (and later the redial policy)
/// can tell a peer that went away from a network that dropped it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossCause {
    /// Nothing arrived for the negotiated idle timeout.
    IdleTimeout,
    /// The peer closed the connection (or, locally, went away).
    PeerClosed,
    /// This side closed it: `shutdown`, `drain`, or a `Listener::close`.
    LocallyClosed,
    /// The peer's transport reset the connection (stateless reset, or a local socket reset).
    Reset,
    /// A transport or protocol error ended the connection; the text says which.
    TransportError(String),
    /// A redial of the address was answered by another key than the one its first connection
    /// proved: not the same peer, so the address is given up (a redial never goes live to a
    /// stranger).
    PeerChanged,
    /// A redial failed (nothing listening, a handshake refused); the text is that failure.
    DialFailed(String),
    /// A redial reached the listener, and nothing is bound at the path any more (its CHECK was
    /// answered UNKNOWN_ENDPOINT, PROTOCOL.md §3.1.5): the path, as the listener named it.
    UnknownEndpoint(String),
}

impl LossCause {
    /// Every name [`LossCause::name`] gives, in declaration order: the bindings' vocabulary
    /// (a new cause gets its name here, so no binding has an "unknown" name of its own).
    pub const NAMES: [&'static str; 8] = [
        "idle_timeout",
        "peer_closed",
        "locally_closed",
        "reset",
        "transport_error",
        "peer_changed",
        "dial_failed",
        "unknown_endpoint",
    ];

    /// The cause's stable name, as the bindings and the conformance suite spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::IdleTimeout => "idle_timeout",
            Self::PeerClosed => "peer_closed",
            Self::LocallyClosed => "locally_closed",
            Self::Reset => "reset",
            Self::TransportError(_) => "transport_error",
            Self::PeerChanged => "peer_changed",
            Self::DialFailed(_) => "dial_failed",
            Self::UnknownEndpoint(_) => "unknown_endpoint",
        }
    }
}

impl fmt::Display for LossCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::IdleTimeout => f.write_str("idle timeout"),
            Self::PeerClosed => f.write_str("peer closed"),
            Self::LocallyClosed => f.write_str("locally closed"),
            Self::Reset => f.write_str("reset"),
            Self::TransportError(s) => write!(f, "transport error: {s}"),
            Self::PeerChanged => f.write_str("the address answered with another key"),
            Self::DialFailed(s) => write!(f, "redial failed: {s}"),
            Self::UnknownEndpoint(p) => write!(f, "nothing is bound at {p:?} any more"),
        }
    }
}

/// Which part of an address is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddressPart {
    /// The `weida://`, `weida+unix://`, ... prefix.
    Scheme,
    /// The `sha256:<hex>@` pin.
    Pin,
    /// The host.
    Host,
    /// The port.
    Port,
    /// The socket path of a local socket address.
    SocketPath,
    /// The in-process name.
    Name,
    /// The endpoint path.
    Path,
}

impl AddressPart {
    /// The part's stable name (`scheme`, `pin`, `host`, `port`, `socket_path`, `name`, `path`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Scheme => "scheme",
            Self::Pin => "pin",
            Self::Host => "host",
            Self::Port => "port",
            Self::SocketPath => "socket_path",
            Self::Name => "name",
            Self::Path => "path",
        }
    }
}

impl fmt::Display for AddressPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Scheme => "scheme",
            Self::Pin => "pin",
            Self::Host => "host",
            Self::Port => "port",
            Self::SocketPath => "socket path",
            Self::Name => "name",
            Self::Path => "path",
        })
    }
}

/// Why a dial found no weida listener ([`Error::Unreachable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unanswered {
    /// Nothing answered the handshake within this long (`Limits::connect_timeout`, or the
    /// idle timeout when that is shorter): over QUIC a closed port looks so, since UDP has no
    /// refusal; or a listener that completed the transport's handshake sent no HELLO.
    NoAnswer(std::time::Duration),
    /// The operating system refused at once: no socket file, or nothing accepting on it; or
    /// nothing is bound at that in-process name. The text is what was refused.
    Refused(String),
}

impl Unanswered {
    /// The stable name: `no_answer` or `refused`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::NoAnswer(_) => "no_answer",
            Self::Refused(_) => "refused",
        }
    }
}

/// A duration as a person reads it in a message: `5 s`, `1.5 s`, `250 ms`.
pub(crate) fn human_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms >= 1000 && ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else if ms >= 1000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{ms} ms")
    }
}

fn unreachable_text(address: &str, why: &Unanswered) -> String {
    match why {
        Unanswered::NoAnswer(d) => format!(
            "no weida listener answered at {address} within {} (connect_timeout): is the \
             service running, at this host and port?",
            human_duration(*d)
        ),
        Unanswered::Refused(what) => format!("nothing listens at {address}: {what}"),
    }
}

/// Which configured bound a [`Error::LimitExceeded`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// `Limits::max_header_size`.
    HeaderSize,
    /// `Limits::max_collected_body` (or the `max` given to a collect).
    CollectedBody,
    /// The peer refused with LIMIT_EXCEEDED; its bound is not known here.
    Remote,
    /// A fan-out or outbox byte budget.
    ByteBudget,
    /// A queue bound.
    Queue,
    /// `Limits::max_filters` (filters of one subscriber on one publisher).
    Filters,
    /// `Limits::body_idle_timeout`: a stream's writer sent nothing for that long while its
    /// reader waited.
    BodyIdle,
    /// `Limits::header_timeout`: a stream's type byte and header did not arrive in time.
    HeaderTimeout,
    /// `RuntimeConfig::outbox_messages`: a pusher's outbox is full (under `OutboxFull::Reject`).
    OutboxMessages,
    /// `RuntimeConfig::outbox_bytes`: a pusher's outbox is full in bytes, or a body is larger
    /// than the whole outbox.
    OutboxBytes,
    /// A pair takes one peer at a time, and another holds it.
    Peers,
}

impl Limit {
    /// The bound's stable name: the `Limits` field it is (`max_header_size`,
    /// `max_collected_body`, `max_filters`) or what it is (`remote`, `byte_budget`, `queue`).
    pub fn name(self) -> &'static str {
        match self {
            Self::HeaderSize => "max_header_size",
            Self::CollectedBody => "max_collected_body",
            Self::Remote => "remote",
            Self::ByteBudget => "byte_budget",
            Self::Queue => "queue",
            Self::Filters => "max_filters",
            Self::BodyIdle => "body_idle_timeout",
            Self::HeaderTimeout => "header_timeout",
            Self::OutboxMessages => "outbox_messages",
            Self::OutboxBytes => "outbox_bytes",
            Self::Peers => "peers",
        }
    }
}

impl Limit {
    /// Where the bound is set and the way around it, for the error's message: what a person
    /// reading `LimitExceeded` needs to do next.
    pub fn hint(self) -> &'static str {
        match self {
            Self::HeaderSize => {
                "max_header_size is a Limits option of each side, 16 KiB by default: raise it \
                 on the side that refused, or carry less metadata (a body has no such bound)"
            }
            Self::CollectedBody => {
                "raise max_collected_body (16 MiB by default) in the runtime's Limits or this \
                 endpoint's options, or stream the body: open() to send it, accept() to \
                 receive it in chunks"
            }
            Self::Remote => {
                "the peer refused with LIMIT_EXCEEDED: a bound the peer sets (its \
                 max_collected_body, 16 MiB by default, or its max_header_size; over AF_UNIX \
                 also its max_local_peer_connections, 1024 by default); raise it there, or \
                 stream the body with open() so the peer can accept() it in chunks"
            }
            Self::ByteBudget => {
                "raise subscriber_buffer_bytes (1 MiB by default) in the publisher's Limits, or \
                 publish the body as a stream (fan_out) in chunks within it"
            }
            Self::Queue => "raise the queue's bound, or take from it sooner",
            Self::Filters => {
                "raise max_filters (1024 by default) in the publisher's Limits, or subscribe \
                 with fewer, wider filters"
            }
            Self::BodyIdle => {
                "the peer's stream made no progress for body_idle_timeout (30 s by default); \
                 raise it in the receiving side's Limits if its writers are slow on purpose"
            }
            Self::HeaderTimeout => {
                "the peer's stream did not say what it is within header_timeout (10 s by \
                 default); raise it in the receiving side's Limits if its peers are that slow"
            }
            Self::OutboxMessages => {
                "the pusher's outbox holds what is sent while no peer is live: raise \
                 outbox_messages (1000 by default) in the runtime's config or the pusher's \
                 options, or let send wait for room (outbox_full block, the default)"
            }
            Self::OutboxBytes => {
                "the pusher's outbox holds what is sent while no peer is live: raise \
                 outbox_bytes (8 MiB by default) in the runtime's config or the pusher's \
                 options; a larger body can go as a stream with open(), which waits for a peer"
            }
            Self::Peers => {
                "a pair takes one peer at a time: the one that holds it must leave (close, or \
                 its connection ends) before another can claim it; raise nothing, bind another \
                 pair for another peer"
            }
        }
    }
}

/// A byte count as a person reads it next to the exact figure: `16 MiB`, `1.5 KiB`, `300 B`.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::HeaderSize => "max_header_size",
            Self::CollectedBody => "max_collected_body",
            Self::Remote => "the peer's limit",
            Self::ByteBudget => "byte budget",
            Self::Queue => "queue bound",
            Self::Filters => "max_filters",
            Self::BodyIdle => "body_idle_timeout",
            Self::HeaderTimeout => "header_timeout",
            Self::OutboxMessages => "outbox_messages",
            Self::OutboxBytes => "outbox_bytes",
            Self::Peers => "one peer at a time",
        })
    }
}

/// The stable, language-neutral code of an [`Error`]. Bindings expose it as a string
/// (`CONNECTION_LOST`, ...) and the conformance scenarios expect it by that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// See [`Error::NotConnected`].
    NotConnected,
    /// See [`Error::ConnectionLost`].
    ConnectionLost,
    /// See [`Error::Indeterminate`].
    Indeterminate,
    /// See [`Error::Untrusted`].
    Untrusted,
    /// See [`Error::UnknownEndpoint`].
    UnknownEndpoint,
    /// See [`Error::Unsupported`].
    Unsupported,
    /// See [`Error::Rejected`].
    Rejected,
    /// See [`Error::Canceled`].
    Canceled,
    /// See [`Error::LimitExceeded`].
    LimitExceeded,
    /// See [`Error::Timeout`].
    Timeout,
    /// See [`Error::InvalidAddress`].
    InvalidAddress,
    /// See [`Error::NegotiationFailed`].
    NegotiationFailed,
    /// See [`Error::Protocol`].
    Protocol,
    /// See [`Error::InvalidConfig`].
    InvalidConfig,
    /// See [`Error::InvalidFilter`].
    InvalidFilter,
    /// See [`Error::Closed`].
    Closed,
    /// See [`Error::Io`].
    Io,
    /// See [`Error::Unreachable`].
    Unreachable,
}

impl ErrorCode {
    /// The code as the conformance vocabulary spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotConnected => "NOT_CONNECTED",
            Self::ConnectionLost => "CONNECTION_LOST",
            Self::Indeterminate => "INDETERMINATE",
            Self::Untrusted => "UNTRUSTED",
            Self::UnknownEndpoint => "UNKNOWN_ENDPOINT",
            Self::Unsupported => "UNSUPPORTED",
            Self::Rejected => "REJECTED",
            Self::Canceled => "CANCELED",
            Self::LimitExceeded => "LIMIT_EXCEEDED",
            Self::Timeout => "TIMEOUT",
            Self::InvalidAddress => "INVALID_ADDRESS",
            Self::NegotiationFailed => "NEGOTIATION_FAILED",
            Self::Protocol => "PROTOCOL",
            Self::InvalidConfig => "INVALID_CONFIG",
            Self::InvalidFilter => "INVALID_FILTER",
            Self::Closed => "CLOSED",
            Self::Io => "IO",
            Self::Unreachable => "UNREACHABLE",
        }
    }

    /// The code `name` spells (as [`ErrorCode::as_str`] does), if it is one.
    ///
    /// ```
    /// use weida::ErrorCode;
    /// assert_eq!(ErrorCode::from_name("CLOSED"), Some(ErrorCode::Closed));
    /// assert_eq!(ErrorCode::from_name("closed"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Every code, for bindings that build one class per code.
    pub const ALL: [Self; 18] = [
        Self::NotConnected,
        Self::ConnectionLost,
        Self::Indeterminate,
        Self::Untrusted,
        Self::UnknownEndpoint,
        Self::Unsupported,
        Self::Rejected,
        Self::Canceled,
        Self::LimitExceeded,
        Self::Timeout,
        Self::InvalidAddress,
        Self::NegotiationFailed,
        Self::Protocol,
        Self::InvalidConfig,
        Self::InvalidFilter,
        Self::Closed,
        Self::Io,
        Self::Unreachable,
    ];
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can go wrong in weida, with its cause kept.
///
/// ```
/// use weida::{Error, LossCause};
/// let e = Error::Indeterminate(LossCause::PeerClosed);
/// assert!(!e.is_definite_failure());
/// assert_eq!(e.code().as_str(), "INDETERMINATE");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The endpoint was never connected to any address.
    #[error("not connected: the endpoint has no address to send to")]
    NotConnected,
    /// The connection ended before the operation reached a definite outcome that succeeded.
    #[error("connection lost: {0}")]
    ConnectionLost(LossCause),
    /// The request reached FIN and its reply was lost: the peer may or may not have acted on
    /// it. Neither a success nor a definite failure (GUARANTEES §5).
    #[error("indeterminate: the request was sent whole but its reply was lost ({0})")]
    Indeterminate(LossCause),
    /// The peer presented a key outside the configured trust; carries what answered.
    #[error("untrusted peer {fingerprint}{}", expected_note(.expected))]
    Untrusted {
        /// The fingerprint the peer presented.
        fingerprint: Fingerprint,
        /// The pin the address named, if it named one.
        expected: Option<Fingerprint>,
    },
    /// Nothing is bound at that path.
    #[error("unknown endpoint {path:?}")]
    UnknownEndpoint {
        /// The path that was asked for (as far as this side knows it).
        path: String,
    },
    /// The endpoint at that path cannot serve this kind of stream or request.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The peer's application refused.
    #[error("rejected: {0}")]
    Rejected(String),
    /// The transfer was cancelled (by either side) before it completed.
    #[error("canceled")]
    Canceled,
    /// A configured bound was exceeded. The message says which bound, what passed it and
    /// the bound's value, where it is set and the way around it ([`Limit::hint`]).
    #[error("limit exceeded: {limit} ({detail}); {}", .limit.hint())]
    LimitExceeded {
        /// Which bound.
        limit: Limit,
        /// What exceeded it.
        detail: String,
    },
    /// A caller's or the configured deadline passed.
    #[error("timed out{}", timeout_note(.last_loss))]
    Timeout {
        /// When the wait was for a redial (every connection of the endpoint down), the last
        /// loss; None for any other deadline.
        last_loss: Option<LossCause>,
    },
    /// The address could not be parsed; says which part is wrong.
    #[error("invalid address ({part}): {reason}")]
    InvalidAddress {
        /// The malformed part.
        part: AddressPart,
        /// Why.
        reason: String,
    },
    /// The peers' guarantee sets or versions do not meet.
    #[error("negotiation failed: {0}")]
    NegotiationFailed(String),
    /// The peer sent bytes that violate the wire protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A configuration was refused before any traffic (GUARANTEES §4).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A Pub/Sub filter or topic that breaks the segment grammar (PATTERNS §4): refused,
    /// never widened. Says which part is wrong.
    #[error("{0}")]
    InvalidFilter(#[from] crate::filter::FilterError),
    /// The runtime, listener or endpoint was closed or is draining.
    #[error("closed")]
    Closed,
    /// An operating-system error.
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    /// A dial found no weida listener at the address: nothing answered within
    /// `Limits::connect_timeout`, or the operating system refused at once. Nothing was sent.
    #[error("unreachable: {}", unreachable_text(.address, .why))]
    Unreachable {
        /// Where the dial went: `host:port`, the socket's path, or the in-process name.
        address: String,
        /// Why nothing answered.
        why: Unanswered,
    },
}

fn timeout_note(last_loss: &Option<LossCause>) -> String {
    match last_loss {
        Some(c) => format!(" waiting for a redial: every connection is down (the last: {c})"),
        None => String::new(),
    }
}

fn expected_note(expected: &Option<Fingerprint>) -> String {
    match expected {
        Some(fp) => format!(" (the address pins {fp})"),
        None => " (no pin or anchor accepts it)".to_string(),
    }
}

/// The value of one structured field of an [`Error`] ([`Error::fields`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldValue {
    /// A text, or a name from a fixed set (a loss cause, a limit, an address part).
    Text(String),
    /// A number (an OS error number).
    Int(i64),
    /// Known to be absent (no pin was named, the OS gave no number).
    Null,
}

impl Error {
    /// The structured fields this error keeps, as data, so a binding builds its error from
    /// them with no match of its own: `loss_cause` (ConnectionLost, Indeterminate);
    /// `fingerprint` and `expected` (Untrusted); `path` (UnknownEndpoint); `limit` and
    /// `detail` (LimitExceeded); `part` and `reason` (InvalidAddress); `reason` (Rejected,
    /// Unsupported); `what`, `text` and `reason` (InvalidFilter); `errno` (Io); `address`
    /// and `why` (Unreachable: `no_answer` or `refused`). Names are
    /// snake_case; enumerated values are the names of [`LossCause::name`], [`Limit::name`]
    /// and [`AddressPart::name`].
    ///
    /// ```
    /// use weida::{Error, FieldValue, LossCause};
    /// let e = Error::ConnectionLost(LossCause::IdleTimeout);
    /// assert_eq!(e.fields(), [("loss_cause", FieldValue::Text("idle_timeout".into()))]);
    /// ```
    pub fn fields(&self) -> Vec<(&'static str, FieldValue)> {
        let text = |s: &str| FieldValue::Text(s.to_string());
        match self {
            Self::ConnectionLost(c) | Self::Indeterminate(c) => {
                vec![("loss_cause", text(c.name()))]
            }
            Self::Untrusted {
                fingerprint,
                expected,
            } => vec![
                ("fingerprint", FieldValue::Text(fingerprint.to_string())),
                (
                    "expected",
                    expected.map_or(FieldValue::Null, |f| FieldValue::Text(f.to_string())),
                ),
            ],
            Self::UnknownEndpoint { path } => vec![("path", text(path))],
            Self::LimitExceeded { limit, detail } => {
                vec![("limit", text(limit.name())), ("detail", text(detail))]
            }
            Self::InvalidAddress { part, reason } => {
                vec![("part", text(part.name())), ("reason", text(reason))]
            }
            Self::Rejected(r) | Self::Unsupported(r) => vec![("reason", text(r))],
            Self::InvalidFilter(f) => vec![
                ("what", text(f.what)),
                ("text", text(&f.text)),
                ("reason", text(&f.reason)),
            ],
            Self::Timeout { last_loss } => vec![(
                "loss_cause",
                last_loss
                    .as_ref()
                    .map_or(FieldValue::Null, |c| text(c.name())),
            )],
            Self::Unreachable { address, why } => {
                vec![("address", text(address)), ("why", text(why.name()))]
            }
            Self::Io(e) => vec![(
                "errno",
                e.raw_os_error()
                    .map_or(FieldValue::Null, |n| FieldValue::Int(n.into())),
            )],
            Self::NotConnected
            | Self::Canceled
            | Self::NegotiationFailed(_)
            | Self::Protocol(_)
            | Self::InvalidConfig(_)
            | Self::Closed => Vec::new(),
        }
    }

    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::NotConnected => ErrorCode::NotConnected,
            Self::ConnectionLost(_) => ErrorCode::ConnectionLost,
            Self::Indeterminate(_) => ErrorCode::Indeterminate,
            Self::Untrusted { .. } => ErrorCode::Untrusted,
            Self::UnknownEndpoint { .. } => ErrorCode::UnknownEndpoint,
            Self::Unsupported(_) => ErrorCode::Unsupported,
            Self::Rejected(_) => ErrorCode::Rejected,
            Self::Canceled => ErrorCode::Canceled,
            Self::LimitExceeded { .. } => ErrorCode::LimitExceeded,
            Self::Timeout { .. } => ErrorCode::Timeout,
            Self::InvalidAddress { .. } => ErrorCode::InvalidAddress,
            Self::NegotiationFailed(_) => ErrorCode::NegotiationFailed,
            Self::Protocol(_) => ErrorCode::Protocol,
            Self::InvalidConfig(_) => ErrorCode::InvalidConfig,
            Self::InvalidFilter(_) => ErrorCode::InvalidFilter,
            Self::Closed => ErrorCode::Closed,
            Self::Io(_) => ErrorCode::Io,
            Self::Unreachable { .. } => ErrorCode::Unreachable,
        }
    }

    /// True when the operation certainly did not take effect at the peer's application, or
    /// certainly failed; false for [`Error::Indeterminate`], whose outcome is unknown.
    pub fn is_definite_failure(&self) -> bool {
        !matches!(self, Self::Indeterminate(_))
    }

    /// The loss cause, for `ConnectionLost` and `Indeterminate`.
    pub fn loss_cause(&self) -> Option<&LossCause> {
        match self {
            Self::ConnectionLost(c) | Self::Indeterminate(c) => Some(c),
            _ => None,
        }
    }

    pub(crate) fn limit(limit: Limit, detail: impl Into<String>) -> Self {
        Self::LimitExceeded {
            limit,
            detail: detail.into(),
        }
    }
}

/// `Result` with weida's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_loss_cause_has_a_listed_name() {
        let all = [
            LossCause::IdleTimeout,
            LossCause::PeerClosed,
            LossCause::LocallyClosed,
            LossCause::Reset,
            LossCause::TransportError("x".into()),
            LossCause::PeerChanged,
            LossCause::DialFailed("x".into()),
            LossCause::UnknownEndpoint("/x".into()),
        ];
        let names: Vec<_> = all.iter().map(LossCause::name).collect();
        assert_eq!(names, LossCause::NAMES);
    }

    #[test]
    fn every_limit_says_where_it_is_set_and_the_way_around_it() {
        use Limit::*;
        for (limit, option) in [
            (HeaderSize, "max_header_size"),
            (CollectedBody, "max_collected_body"),
            (Remote, "max_collected_body"),
            (ByteBudget, "subscriber_buffer_bytes"),
            (Filters, "max_filters"),
            (BodyIdle, "body_idle_timeout"),
            (HeaderTimeout, "header_timeout"),
            (OutboxMessages, "outbox_messages"),
            (OutboxBytes, "outbox_bytes"),
        ] {
            let e = Error::limit(limit, "what passed it");
            let said = e.to_string();
            assert!(said.contains(option), "{limit:?}: {said}");
            assert!(said.contains("raise"), "{limit:?}: {said}");
            assert!(said.contains("(what passed it)"), "{limit:?}: {said}");
        }
        assert!(Error::limit(Queue, "x").to_string().contains("raise"));
        assert!(Error::limit(Peers, "x")
            .to_string()
            .contains("one peer at a time"));
        assert_eq!(human_bytes(16 << 20), "16 MiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1000), "1000 B");
        assert_eq!(
            human_duration(std::time::Duration::from_millis(300)),
            "300 ms"
        );
        assert_eq!(human_duration(std::time::Duration::from_secs(5)), "5 s");
    }

    #[test]
    fn every_code_is_found_by_its_name() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_name(c.as_str()), Some(c));
        }
        assert_eq!(ErrorCode::from_name("ERR_WEIDA_CLOSED"), None);
    }

    #[test]
    fn fields_name_what_each_error_keeps() {
        let f = |e: Error| {
            e.fields()
                .into_iter()
                .map(|(n, v)| match v {
                    FieldValue::Text(t) => format!("{n}={t}"),
                    FieldValue::Int(i) => format!("{n}={i}"),
                    FieldValue::Null => format!("{n}=null"),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            f(Error::Indeterminate(LossCause::Reset)),
            ["loss_cause=reset"]
        );
        assert_eq!(
            f(Error::limit(Limit::Filters, "one more")),
            ["limit=max_filters", "detail=one more"]
        );
        assert_eq!(
            f(Error::InvalidAddress {
                part: AddressPart::SocketPath,
                reason: "empty".into()
            }),
            ["part=socket_path", "reason=empty"]
        );
        assert_eq!(f(Error::Io(io::Error::from_raw_os_error(2))), ["errno=2"]);
        assert_eq!(f(Error::Io(io::Error::other("x"))), ["errno=null"]);
        assert!(f(Error::Closed).is_empty());
    }
}
