//! weida-ffi's `Fail` as one UniFFI error: one variant per core code (Kotlin makes it the
//! sealed `WeidaException` with a subclass per code), each with the message, `definite` and
//! the error's fields by their camelCase names (weida-ffi gives them as data), and the
//! binding's own `Aborted`, `Busy` and `Panic`.

use std::collections::HashMap;

use weida::{ErrorCode, FieldValue};
use weida_ffi::config::camel_case;
use weida_ffi::Fail;

/// Why a weida call failed: the core's code (the variant, and `code` by its name:
/// `CONNECTION_LOST`; `ABORTED`, `BUSY`, `PANIC` for the binding's own), its message (`description`: Kotlin's `message` is Exception's own), whether the failure is
/// definite (false only for `Indeterminate`) and its fields (`lossCause`, `fingerprint`,
/// `expected`, `path`, `limit`, `detail`, `part`, `reason`, `what`, `text`, `errno`, `sent`;
/// a field known to be absent is null).
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum WeidaError {
    #[error("{description}")]
    NotConnected {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    ConnectionLost {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Indeterminate {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Untrusted {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    UnknownEndpoint {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Unsupported {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Rejected {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Canceled {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    LimitExceeded {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Timeout {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    InvalidAddress {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    NegotiationFailed {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Protocol {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    InvalidConfig {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    InvalidFilter {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Closed {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Io {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    #[error("{description}")]
    Unreachable {
        code: String,
        description: String,
        definite: bool,
        fields: HashMap<String, Option<String>>,
    },
    /// The call was cancelled by its caller.
    #[error("{description}")]
    Aborted { code: String, description: String },
    /// A synchronous call found the object held by a pending write of its own.
    #[error("{description}")]
    Busy { code: String, description: String },
    /// A bug: the call panicked.
    #[error("{description}")]
    Panic { code: String, description: String },
}

impl From<Fail> for WeidaError {
    fn from(f: Fail) -> Self {
        let description = f.message();
        let code = f.kind().to_ascii_uppercase();
        let definite = f.definite();
        let fields: HashMap<String, Option<String>> = f
            .fields()
            .into_iter()
            .map(|(n, v)| {
                let v = match v {
                    FieldValue::Text(t) => Some(t),
                    FieldValue::Int(i) => Some(i.to_string()),
                    _ => None,
                };
                (camel_case(n), v)
            })
            .collect();
        let Some(c) = f.code() else {
            return match f {
                Fail::Busy => Self::Busy { code, description },
                Fail::Panic => Self::Panic { code, description },
                _ => Self::Aborted { code, description },
            };
        };
        macro_rules! by_code {
            ($($c:ident),*) => {
                match c {
                    $(ErrorCode::$c => Self::$c { code, description, definite, fields },)*
                    _ => Self::Protocol { code, description, definite, fields },
                }
            };
        }
        by_code!(
            NotConnected,
            ConnectionLost,
            Indeterminate,
            Untrusted,
            UnknownEndpoint,
            Unsupported,
            Rejected,
            Canceled,
            LimitExceeded,
            Timeout,
            InvalidAddress,
            NegotiationFailed,
            Protocol,
            InvalidConfig,
            InvalidFilter,
            Closed,
            Io,
            Unreachable
        )
    }
}

impl From<weida::Error> for WeidaError {
    fn from(e: weida::Error) -> Self {
        Fail::Core(e).into()
    }
}

/// The result of every fallible export.
pub type Result<T> = std::result::Result<T, WeidaError>;
