//! Application error codes: one number space for RESET_STREAM, STOP_SENDING,
//! CONNECTION_CLOSE, the ERROR reply and the local RESET/STOP chunks (PROTOCOL.md §7).

use crate::error::{Error, ErrorCode, Limit, LossCause};

/// A weida application error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// 0x00: nothing wrong (a reader that stops early without a reason, a normal close).
    NoError,
    /// 0x01: the writer abandoned the transfer.
    Canceled,
    /// 0x02: nothing is bound at the path.
    UnknownEndpoint,
    /// 0x03: the endpoint cannot serve this stream type or request.
    Unsupported,
    /// 0x04: the application refused.
    Rejected,
    /// 0x05: a bound was exceeded (header size, queue, budget).
    LimitExceeded,
    /// 0x06: the bytes violate the protocol.
    ProtocolError,
    /// 0x07: the guarantee sets or versions do not meet.
    NegotiationFailed,
    /// 0x08: the peer failed internally.
    InternalError,
    /// 0x09: the peer is shutting down and will not take this.
    GoingAway,
    /// Any other number, kept as it came.
    Other(u64),
}

impl Code {
    /// Its number.
    pub fn to_u64(self) -> u64 {
        match self {
            Self::NoError => 0x00,
            Self::Canceled => 0x01,
            Self::UnknownEndpoint => 0x02,
            Self::Unsupported => 0x03,
            Self::Rejected => 0x04,
            Self::LimitExceeded => 0x05,
            Self::ProtocolError => 0x06,
            Self::NegotiationFailed => 0x07,
            Self::InternalError => 0x08,
            Self::GoingAway => 0x09,
            Self::Other(n) => n,
        }
    }

    /// From its number.
    pub fn from_u64(n: u64) -> Self {
        match n {
            0x00 => Self::NoError,
            0x01 => Self::Canceled,
            0x02 => Self::UnknownEndpoint,
            0x03 => Self::Unsupported,
            0x04 => Self::Rejected,
            0x05 => Self::LimitExceeded,
            0x06 => Self::ProtocolError,
            0x07 => Self::NegotiationFailed,
            0x08 => Self::InternalError,
            0x09 => Self::GoingAway,
            n => Self::Other(n),
        }
    }

    /// The name the protocol document uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::NoError => "NO_ERROR",
            Self::Canceled => "CANCELED",
            Self::UnknownEndpoint => "UNKNOWN_ENDPOINT",
            Self::Unsupported => "UNSUPPORTED",
            Self::Rejected => "REJECTED",
            Self::LimitExceeded => "LIMIT_EXCEEDED",
            Self::ProtocolError => "PROTOCOL_ERROR",
            Self::NegotiationFailed => "NEGOTIATION_FAILED",
            Self::InternalError => "INTERNAL_ERROR",
            Self::GoingAway => "GOING_AWAY",
            Self::Other(_) => "OTHER",
        }
    }

    /// The error a code names when it ends a stream or answers a request. `path` is what this
    /// side asked for, `message` what the peer said (empty for a bare reset or stop).
    pub fn into_error(self, path: &str, message: &str) -> Error {
        let said = |default: &str| {
            if message.is_empty() {
                default.to_string()
            } else {
                message.to_string()
            }
        };
        match self {
            // A stop without a reason, or a reset: the transfer did not complete.
            Self::NoError | Self::Canceled => Error::Canceled,
            Self::UnknownEndpoint => Error::UnknownEndpoint {
                path: path.to_string(),
            },
            Self::Unsupported => {
                Error::Unsupported(said(&format!("the endpoint at {path:?} cannot serve this")))
            }
            Self::Rejected => Error::Rejected(said("refused by the peer")),
            Self::LimitExceeded => Error::limit(Limit::Remote, said("refused by the peer")),
            Self::ProtocolError => Error::Protocol(said("the peer reported a protocol error")),
            Self::NegotiationFailed => Error::NegotiationFailed(said("refused by the peer")),
            Self::InternalError => Error::Rejected(said("the peer failed internally")),
            Self::GoingAway => Error::ConnectionLost(LossCause::PeerClosed),
            Self::Other(n) => Error::Rejected(said(&format!("unknown code 0x{n:x}"))),
        }
    }

    /// The code a local error is reported to the peer with.
    pub fn of_error(e: &Error) -> Self {
        match e {
            Error::Canceled => Self::Canceled,
            Error::UnknownEndpoint { .. } => Self::UnknownEndpoint,
            Error::Unsupported(_) => Self::Unsupported,
            Error::Rejected(_) => Self::Rejected,
            Error::LimitExceeded { .. } => Self::LimitExceeded,
            Error::Protocol(_) => Self::ProtocolError,
            Error::NegotiationFailed(_) => Self::NegotiationFailed,
            Error::Closed => Self::GoingAway,
            _ => Self::InternalError,
        }
    }
}

impl Error {
    /// The error that, given to `Exchange::fail`, answers a request with the wire code of
    /// `code` and `message`; its requester's `request` then fails with an error of that code.
    /// For a replier that names a code and a message (a binding's `fail(code, message)`).
    /// `Closed` answers GOING_AWAY, as a replier whose runtime closes does (the requester's
    /// `request` fails `ConnectionLost`, loss cause `peer_closed`); any other code with no wire
    /// code of its own (`Timeout`, `Io`, ...) answers INTERNAL_ERROR, which a requester reads as
    /// `Rejected` with the message.
    pub fn for_reply(code: ErrorCode, message: &str) -> Self {
        let wire = match code {
            ErrorCode::Closed => return Self::Closed,
            ErrorCode::Canceled => Code::Canceled,
            ErrorCode::UnknownEndpoint => Code::UnknownEndpoint,
            ErrorCode::Unsupported => Code::Unsupported,
            ErrorCode::Rejected => Code::Rejected,
            ErrorCode::LimitExceeded => Code::LimitExceeded,
            ErrorCode::Protocol => Code::ProtocolError,
            ErrorCode::NegotiationFailed => Code::NegotiationFailed,
            _ => Code::InternalError,
        };
        wire.into_error("", message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a replier's `fail(code, message)` answers for each `ErrorCode`: the wire code its
    /// error is sent with, and the error the requester reads (the same one).
    #[test]
    fn an_error_for_a_reply_is_sent_as_its_code_and_read_back_as_itself() {
        for code in ErrorCode::ALL {
            let e = Error::for_reply(code, "why");
            let (wire, read) = match code {
                ErrorCode::Canceled => (Code::Canceled, ErrorCode::Canceled),
                ErrorCode::UnknownEndpoint => (Code::UnknownEndpoint, ErrorCode::UnknownEndpoint),
                ErrorCode::Unsupported => (Code::Unsupported, ErrorCode::Unsupported),
                ErrorCode::Rejected => (Code::Rejected, ErrorCode::Rejected),
                ErrorCode::LimitExceeded => (Code::LimitExceeded, ErrorCode::LimitExceeded),
                ErrorCode::Protocol => (Code::ProtocolError, ErrorCode::Protocol),
                ErrorCode::NegotiationFailed => {
                    (Code::NegotiationFailed, ErrorCode::NegotiationFailed)
                }
                ErrorCode::Closed => (Code::GoingAway, ErrorCode::ConnectionLost),
                // INTERNAL_ERROR reads as Rejected, which is sent as REJECTED.
                _ => (Code::Rejected, ErrorCode::Rejected),
            };
            assert_eq!(Code::of_error(&e), wire, "{code:?}");
            if code == ErrorCode::Closed {
                assert!(matches!(
                    Code::of_error(&e).into_error("", "why"),
                    Error::ConnectionLost(LossCause::PeerClosed)
                ));
                continue;
            }
            assert_eq!(e.code(), read, "{code:?}");
            assert_eq!(
                Code::of_error(&e).into_error("", "why").code(),
                read,
                "{code:?}"
            );
            if matches!(read, ErrorCode::Rejected | ErrorCode::Unsupported) {
                assert!(e.to_string().contains("why"), "{code:?}: {e}");
            }
        }
    }
}
