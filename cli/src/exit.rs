//! What a command that failed reports: the error with its context and cause chain on stderr,
//! and an exit status a script can branch on. The statuses are a contract (cli/README.md and
//! `weida --help`), so they live here, once, with the text that documents them.

use std::fmt::Write as _;
use std::io;

use weida::{Error, ErrorCode};

/// The command did what was asked (a serving role stopped by a signal or `--count` too).
pub(crate) const OK: u8 = 0;
/// Any failure without a status of its own: I/O, an invalid address or configuration, a
/// protocol or negotiation error, an identity that exists without `--force`.
pub(crate) const OTHER: u8 = 1;
/// The command line could not be parsed (clap's own status, kept so).
pub(crate) const USAGE: u8 = 2;
/// UNTRUSTED: the peer presented a key the address's pin (or `--trust-pin`) does not accept.
pub(crate) const UNTRUSTED: u8 = 3;
/// UNKNOWN_ENDPOINT: nothing is bound at that path on the peer.
pub(crate) const UNKNOWN_ENDPOINT: u8 = 4;
/// NOT_CONNECTED, UNREACHABLE, CONNECTION_LOST or CLOSED: no connection (nothing listening
/// answered the dial), or it ended before an outcome.
pub(crate) const CONNECTION: u8 = 5;
/// TIMEOUT: `--timeout` (or a configured deadline) passed first.
pub(crate) const TIMEOUT: u8 = 6;
/// INDETERMINATE: the request reached the peer whole and its reply was lost.
pub(crate) const INDETERMINATE: u8 = 7;
/// REJECTED: the peer's application refused (e.g. a `rep --exec` command that failed).
pub(crate) const REJECTED: u8 = 8;
/// LIMIT_EXCEEDED: a body or header above a bound, here or at the peer.
pub(crate) const LIMIT_EXCEEDED: u8 = 9;
/// UNSUPPORTED: the path is bound by a pattern that cannot take this stream.
pub(crate) const UNSUPPORTED: u8 = 10;
/// CANCELED: the transfer was cancelled by the other side before it completed.
pub(crate) const CANCELED: u8 = 11;
/// INVALID_FILTER: a Pub/Sub filter or topic that breaks the segment grammar.
pub(crate) const INVALID_FILTER: u8 = 12;
/// A client role was interrupted (Ctrl-C) before its operation completed: 128 + SIGINT.
pub(crate) const INTERRUPTED: u8 = 130;

/// Each exit status and what it means, as `weida --help` and the man page print them (a `\n`
/// is where the help wraps a long meaning). A test checks that every constant above is here
/// with the core codes it maps; the CLI's tests run each status they can produce and check
/// that `weida --help` says so (tests/common/mod.rs).
#[rustfmt::skip] // a status a line, as the help prints them
pub(crate) const STATUSES: &[(u8, &str)] = &[
    (OK, "success (a serving role stopped by Ctrl-C or --count included)"),
    (OTHER, "any other error: I/O, invalid address or configuration, protocol"),
    (USAGE, "command-line usage"),
    (UNTRUSTED, "UNTRUSTED: the peer's key is not the one the address pins (nor a --trust-pin)"),
    (UNKNOWN_ENDPOINT, "UNKNOWN_ENDPOINT: nothing is bound at that path"),
    (CONNECTION, "UNREACHABLE, NOT_CONNECTED, CONNECTION_LOST or CLOSED: the connection failed\n(nothing listens there) or ended first"),
    (TIMEOUT, "TIMEOUT: --timeout passed first"),
    (INDETERMINATE, "INDETERMINATE: the request arrived whole, its reply was lost: it may have acted"),
    (REJECTED, "REJECTED: the peer's application refused (rep --exec: the command failed)"),
    (LIMIT_EXCEEDED, "LIMIT_EXCEEDED: a body above a bound (--max-body here, or the peer's),\nor a pair another peer holds"),
    (UNSUPPORTED, "UNSUPPORTED: that path takes another pattern (push to a rep path, ...)"),
    (CANCELED, "CANCELED: the other side cancelled the transfer"),
    (INVALID_FILTER, "INVALID_FILTER: a Pub/Sub filter or topic breaks the segment grammar"),
    (INTERRUPTED, "interrupted (Ctrl-C) before a client operation (or pub's publishing) completed"),
];

/// The addresses each transport takes, after the statuses in `weida --help`.
pub(crate) const ADDRESSES: &str = "\
Addresses: weida://[sha256:<hex>@]host:port/path, weida+unix://<socket>//<path>,
weida+inproc://name/path. See cli/README.md for formats and examples.";

/// What `weida --help` prints after the commands: the exit statuses, then the addresses.
pub(crate) fn help() -> String {
    let mut out = String::from("Exit status:\n");
    for (status, meaning) in STATUSES {
        // A wrapped meaning goes on under itself.
        let meaning = meaning.replace('\n', &format!("\n{:9}", ""));
        let _ = writeln!(out, "    {status:<5}{meaning}");
    }
    out.push('\n');
    out.push_str(ADDRESSES);
    out
}

/// The exit status for a core error, by its stable code (never by its text).
pub(crate) fn status_of(code: ErrorCode) -> u8 {
    match code {
        ErrorCode::Untrusted => UNTRUSTED,
        ErrorCode::UnknownEndpoint => UNKNOWN_ENDPOINT,
        ErrorCode::NotConnected
        | ErrorCode::Unreachable
        | ErrorCode::ConnectionLost
        | ErrorCode::Closed => CONNECTION,
        ErrorCode::Timeout => TIMEOUT,
        ErrorCode::Indeterminate => INDETERMINATE,
        ErrorCode::Rejected => REJECTED,
        ErrorCode::LimitExceeded => LIMIT_EXCEEDED,
        ErrorCode::Unsupported => UNSUPPORTED,
        ErrorCode::Canceled => CANCELED,
        ErrorCode::InvalidFilter => INVALID_FILTER,
        // InvalidAddress, InvalidConfig, Protocol, NegotiationFailed, Io, and codes added
        // after this tool was written.
        _ => OTHER,
    }
}

/// Why a command failed, and what it was doing at the time.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: Kind,
    /// What the command was doing, innermost first ("connecting to weida://...").
    context: Vec<String>,
    /// What to do about it, when this tool knows better than the error.
    hint: Option<String>,
}

#[derive(Debug)]
enum Kind {
    Weida(Error),
    Io(io::Error),
    /// A refusal of this tool's own (an identity that exists, a bad argument combination).
    Message(String),
    /// Ctrl-C (or SIGTERM) before a client operation completed.
    Interrupted,
    /// Whoever reads our stdout went away (`weida pull | head -1`): stop quietly, as a
    /// SIGPIPE'd tool would, but with status 0 since nothing here failed.
    OutputClosed,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::new(Kind::Weida(e))
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Self::new(Kind::Io(e))
    }
}

impl Failure {
    fn new(kind: Kind) -> Self {
        Self {
            kind,
            context: Vec::new(),
            hint: None,
        }
    }

    /// A refusal of this tool's own, with exit status 1.
    pub(crate) fn msg(text: impl Into<String>) -> Self {
        Self::new(Kind::Message(text.into()))
    }

    /// Interrupted by a signal before a client operation completed.
    pub(crate) fn interrupted() -> Self {
        Self::new(Kind::Interrupted)
    }

    /// A failed write to stdout: a closed pipe ends the command quietly, anything else is an
    /// I/O error.
    pub(crate) fn output(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Self::new(Kind::OutputClosed)
        } else {
            Self::from(e).context("writing to stdout")
        }
    }

    /// Adds what the command was doing when this happened.
    pub(crate) fn context(mut self, what: impl Into<String>) -> Self {
        self.context.push(what.into());
        self
    }

    /// Adds what to do about it.
    pub(crate) fn hint(mut self, what: impl Into<String>) -> Self {
        self.hint = Some(what.into());
        self
    }

    /// True for [`Failure::interrupted`].
    pub(crate) fn is_interrupted(&self) -> bool {
        matches!(self.kind, Kind::Interrupted)
    }

    /// The core error, if this is one.
    pub(crate) fn weida(&self) -> Option<&Error> {
        match &self.kind {
            Kind::Weida(e) => Some(e),
            _ => None,
        }
    }

    /// The process exit status.
    pub(crate) fn status(&self) -> u8 {
        match &self.kind {
            Kind::Weida(e) => status_of(e.code()),
            Kind::Io(_) | Kind::Message(_) => OTHER,
            Kind::Interrupted => INTERRUPTED,
            Kind::OutputClosed => OK,
        }
    }

    /// The text for stderr: `error: ...`, what the command was doing, the cause chain, the
    /// core's code, and a hint where one helps. Empty when there is nothing to say.
    pub(crate) fn report(&self) -> String {
        let mut out = String::new();
        let top: &dyn std::error::Error = match &self.kind {
            Kind::OutputClosed => return out,
            Kind::Interrupted => {
                let _ = writeln!(out, "error: interrupted");
                return out;
            }
            Kind::Message(m) => {
                let _ = writeln!(out, "error: {m}");
                for c in &self.context {
                    let _ = writeln!(out, "  while {c}");
                }
                if let Some(h) = &self.hint {
                    let _ = writeln!(out, "  hint: {h}");
                }
                return out;
            }
            Kind::Weida(e) => e,
            Kind::Io(e) => e,
        };
        // The core's messages already carry their structured fields (the fingerprint that
        // answered and the pin, the path, the loss cause), so the top line is its Display.
        let _ = writeln!(out, "error: {top}");
        for c in &self.context {
            let _ = writeln!(out, "  while {c}");
        }
        // The core's `Io` message already quotes its source: a cause is printed only when it
        // adds something to the line before it.
        let mut shown = top.to_string();
        let mut source = top.source();
        while let Some(s) = source {
            let text = s.to_string();
            if !shown.contains(&text) {
                let _ = writeln!(out, "  caused by: {text}");
            }
            shown = text;
            source = s.source();
        }
        if let Kind::Weida(e) = &self.kind {
            let _ = writeln!(
                out,
                "  code: {} (exit status {})",
                e.code(),
                status_of(e.code())
            );
        }
        let hint = self
            .hint
            .clone()
            .or_else(|| self.weida().and_then(core_hint));
        if let Some(h) = hint {
            let _ = writeln!(out, "  hint: {h}");
        }
        out
    }
}

/// What to do next, for the errors where the fix is not obvious from the message.
fn core_hint(e: &Error) -> Option<String> {
    match e {
        Error::Untrusted {
            fingerprint,
            expected: Some(_),
        } => Some(format!(
            "the listener there presents {fingerprint}, not the pinned key: the address is \
             stale (a listener without --identity gets a new key at each start) or something \
             else answers there"
        )),
        Error::Untrusted {
            fingerprint,
            expected: None,
        } => Some(format!(
            "pin the key in the address (weida://{fingerprint}@host:port/path) or pass \
             --trust-pin {fingerprint}"
        )),
        Error::Indeterminate(_) => {
            Some("the peer may or may not have acted on the request: check before retrying".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_is_in_the_help_text() {
        let help = help();
        for (status, code) in [
            (OK, None),
            (OTHER, None),
            (USAGE, None),
            (UNTRUSTED, Some("UNTRUSTED")),
            (UNKNOWN_ENDPOINT, Some("UNKNOWN_ENDPOINT")),
            (CONNECTION, Some("CONNECTION_LOST")),
            (TIMEOUT, Some("TIMEOUT")),
            (INDETERMINATE, Some("INDETERMINATE")),
            (REJECTED, Some("REJECTED")),
            (LIMIT_EXCEEDED, Some("LIMIT_EXCEEDED")),
            (UNSUPPORTED, Some("UNSUPPORTED")),
            (CANCELED, Some("CANCELED")),
            (INVALID_FILTER, Some("INVALID_FILTER")),
            (INTERRUPTED, None),
        ] {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{status} ")))
                .unwrap_or_else(|| panic!("status {status} is not in the help text"));
            if let Some(code) = code {
                assert!(line.contains(code), "{line:?} should name {code}");
            }
        }
    }

    #[test]
    fn every_core_code_has_the_status_its_help_line_names() {
        let help = help();
        for code in ErrorCode::ALL {
            // The status line that names this code, if one does; a code no line names is
            // "any other error".
            let named = help.lines().find(|l| {
                l.split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
                    .any(|word| word == code.as_str())
            });
            let expected = match named {
                Some(line) => line
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse::<u8>()
                    .unwrap(),
                None => OTHER,
            };
            assert_eq!(status_of(code), expected, "{code}: {named:?}");
        }
    }
}
