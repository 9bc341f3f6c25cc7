//! Why a binding call failed, as data a binding turns into its language's error with no match
//! of its own: the code, the message, `definite`, and the fields ([`weida::Error::fields`],
//! plus `sent` for a batch send). Also the error an exchange's `fail(code, message)` answers
//! with, chosen here once (docs/BINDINGS.md, "Errors").

use weida::{Error, ErrorCode, FieldValue};

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
    fn from(e: Error) -> Self {
        Self::Core(e)
    }
}

impl Fail {
    /// The core error, if the core said so.
    pub fn core(&self) -> Option<&Error> {
        match self {
            Self::Core(e) | Self::Sent { error: e, .. } => Some(e),
            Self::Aborted | Self::Busy | Self::Panic => None,
        }
    }

    /// The core error, owned.
    pub fn into_core(self) -> Option<Error> {
        match self {
            Self::Core(e) | Self::Sent { error: e, .. } => Some(e),
            Self::Aborted | Self::Busy | Self::Panic => None,
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
            Self::Aborted => "aborted",
            Self::Busy => "busy",
            Self::Panic => "panic",
            Self::Core(e) | Self::Sent { error: e, .. } => e.code().as_str(),
        }
    }

    /// The message: the core error's text, or what the binding's own failure means.
    pub fn message(&self) -> String {
        match self {
            Self::Core(e) | Self::Sent { error: e, .. } => e.to_string(),
            Self::Aborted => "the operation was aborted".into(),
            Self::Busy => "a write of this object is pending: await it before the next call".into(),
            Self::Panic => "a panic in the weida binding (a bug: please report it)".into(),
        }
    }

    /// False only for `Indeterminate`, whose outcome is unknown.
    pub fn definite(&self) -> bool {
        self.core().is_none_or(Error::is_definite_failure)
    }

    /// The fields the error carries, snake_case names: the core's, and `sent` for a batch.
    pub fn fields(&self) -> Vec<(&'static str, FieldValue)> {
        match self {
            Self::Core(e) => e.fields(),
            Self::Sent { sent, error } => {
                let mut f = error.fields();
                f.push(("sent", FieldValue::Int(*sent as i64)));
                f
            }
            Self::Aborted | Self::Busy | Self::Panic => Vec::new(),
        }
    }
}

/// The core error an exchange's `fail(code, message)` (and an incoming transfer's `refuse`)
/// answers with: the core's [`Error::for_reply`] for the code so named (`CLOSED` goes as
/// GOING_AWAY, a code with no wire code of its own as INTERNAL_ERROR, read as `Rejected`). A
/// name that is no code is `InvalidConfig` (test_errors.py:
/// `test_fail_closed_is_going_away_on_the_wire` and errors.test.mjs:
/// `fail_closed_is_going_away_on_the_wire`).
pub fn answer(code: &str, message: &str) -> Result<Error, Error> {
    let c = ErrorCode::from_name(code)
        .ok_or_else(|| Error::InvalidConfig(format!("{code:?} is not a weida error code")))?;
    Ok(Error::for_reply(c, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire codes themselves are the core's (wire/codes.rs (unit):
    /// an_error_for_a_reply_is_sent_as_its_code_and_read_back_as_itself); here, that every
    /// code's name reaches it and no other name does.
    #[test]
    fn fail_answers_with_the_cores_error_for_the_code_it_names() {
        for code in ErrorCode::ALL {
            let (got, want) = (
                answer(code.as_str(), "why").unwrap(),
                Error::for_reply(code, "why"),
            );
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{code:?}");
        }
        assert!(matches!(answer("CLOSED", "").unwrap(), Error::Closed));
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
