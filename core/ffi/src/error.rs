//! Why a binding call failed, as data a binding turns into its language's error with no match
//! of its own: the code, the message, `definite`, and the fields ([`weida::Error::fields`],
//! plus `sent` for a batch send). Also the error an exchange's `fail(code, message)` answers
//! with, chosen here once (docs/BINDINGS.md, "Errors").

use weida::wire::Code;
use weida::{Error, ErrorCode, FieldValue, Limit};

/// Why a call failed.
#[derive(Debug)]
pub enum Fail {
    /// The core said so.
    Core(Error),
    /// A batch send stopped at `error` after `sent` bodies (the error's `sent` field).
    Sent {
        /// Bodies sent before the failure.
        sent: usize,
        /// What stopped it.
        error: Error,
    },
    /// The caller cancelled it (an asyncio cancellation, an AbortSignal).
    Aborted,
    /// A synchronous call found the object held by a pending write of its own (await it).
    Busy,
    /// A bug: the call panicked.
    Panic,
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Core(e)
    }
}

impl Fail {
    /// The core error, if the core said so.
    pub fn core(&self) -> Option<&Error> {
        match self {
            Fail::Core(e) | Fail::Sent { error: e, .. } => Some(e),
            Fail::Aborted | Fail::Busy | Fail::Panic => None,
        }
    }

    /// The core error, owned.
    pub fn into_core(self) -> Option<Error> {
        match self {
            Fail::Core(e) | Fail::Sent { error: e, .. } => Some(e),
            Fail::Aborted | Fail::Busy | Fail::Panic => None,
        }
    }

    /// The core's code; None for the binding's own failures ([`Fail::kind`]).
    pub fn code(&self) -> Option<ErrorCode> {
        self.core().map(Error::code)
    }

    /// `aborted`, `busy` or `panic` for a failure of the binding's own; the code's name
    /// otherwise.
    pub fn kind(&self) -> &'static str {
        match self {
            Fail::Aborted => "aborted",
            Fail::Busy => "busy",
            Fail::Panic => "panic",
            Fail::Core(e) | Fail::Sent { error: e, .. } => e.code().as_str(),
        }
    }

    /// The message: the core error's text, or what the binding's own failure means.
    pub fn message(&self) -> String {
        match self {
            Fail::Core(e) | Fail::Sent { error: e, .. } => e.to_string(),
            Fail::Aborted => "the operation was aborted".into(),
            Fail::Busy => "a write of this object is pending: await it before the next call".into(),
            Fail::Panic => "a panic in the weida binding (a bug: please report it)".into(),
        }
    }

    /// False only for `Indeterminate`, whose outcome is unknown.
    pub fn definite(&self) -> bool {
        self.core().is_none_or(Error::is_definite_failure)
    }

    /// The fields the error carries, snake_case names: the core's, and `sent` for a batch.
    pub fn fields(&self) -> Vec<(&'static str, FieldValue)> {
        match self {
            Fail::Core(e) => e.fields(),
            Fail::Sent { sent, error } => {
                let mut f = error.fields();
                f.push(("sent", FieldValue::Int(*sent as i64)));
                f
            }
            Fail::Aborted | Fail::Busy | Fail::Panic => Vec::new(),
        }
    }
}

/// The core error an exchange's `fail(code, message)` (and an incoming transfer's `refuse`)
/// answers with, so the peer sees the wire code the core sends for it (`Code::of_error`): a
/// code with a wire code of its own goes as it, `CLOSED` as GOING_AWAY (the peer's request
/// fails ConnectionLost, loss cause `peer_closed`), and any other code as REJECTED with the
/// message. A name that is no code is `InvalidConfig` (python/tests/test_errors.py and
/// node/test/errors.test.mjs `fail_closed_is_going_away_on_the_wire`).
pub fn answer(code: &str, message: &str) -> Result<Error, Error> {
    let c = ErrorCode::from_name(code)
        .ok_or_else(|| Error::InvalidConfig(format!("{code:?} is not a weida error code")))?;
    let m = message.to_string();
    Ok(match c {
        ErrorCode::Canceled => Error::Canceled,
        ErrorCode::UnknownEndpoint => Error::UnknownEndpoint { path: m },
        ErrorCode::Unsupported => Error::Unsupported(m),
        ErrorCode::LimitExceeded => Error::LimitExceeded {
            limit: Limit::Remote,
            detail: m,
        },
        ErrorCode::Protocol => Error::Protocol(m),
        ErrorCode::NegotiationFailed => Error::NegotiationFailed(m),
        ErrorCode::Closed => Error::Closed,
        _ => Error::Rejected(m),
    })
}

/// The wire code [`answer`] puts on the wire for `code`.
pub fn answer_code(code: &str) -> Option<Code> {
    answer(code, "").ok().map(|e| Code::of_error(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_puts_the_cores_wire_code_for_the_code_on_the_wire() {
        let cases = [
            ("CANCELED", Code::Canceled),
            ("UNKNOWN_ENDPOINT", Code::UnknownEndpoint),
            ("UNSUPPORTED", Code::Unsupported),
            ("REJECTED", Code::Rejected),
            ("LIMIT_EXCEEDED", Code::LimitExceeded),
            ("PROTOCOL", Code::ProtocolError),
            ("NEGOTIATION_FAILED", Code::NegotiationFailed),
            ("CLOSED", Code::GoingAway),
            ("TIMEOUT", Code::Rejected),
            ("IO", Code::Rejected),
        ];
        for (name, wire) in cases {
            assert_eq!(answer_code(name), Some(wire), "{name}");
        }
        assert!(matches!(
            answer("NOT_A_CODE", "x"),
            Err(Error::InvalidConfig(_))
        ));
    }

    #[test]
    fn a_batch_failure_says_how_many_were_sent() {
        let f = Fail::Sent {
            sent: 3,
            error: Error::Closed,
        };
        assert_eq!(f.code(), Some(ErrorCode::Closed));
        assert_eq!(f.fields(), [("sent", FieldValue::Int(3))]);
        assert!(f.definite());
        assert_eq!(Fail::Aborted.kind(), "aborted");
    }
}
