//! What a handler says happened to a message, and the header that counts attempts.

use std::time::Duration;

use bytes::Bytes;

/// The META name (PROTOCOL §5.1) a retry copy carries: which attempt the copy is, in ASCII
/// decimal. The first delivery carries none and is attempt 1; its first copy carries `2`.
pub const ATTEMPT_HEADER: &str = "weida-attempt";

/// A handler's outcome (docs/SERVICES.md §2). On a hop with no broker there is nothing to
/// acknowledge and nobody who redelivers: `Ack` and `Drop` only say what the handler
/// meant, and a retry is a new copy this process sends.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The handler finished: processed. What a handler that returns normally means.
    Done,
    /// Processed, and the reply to send (a Rep registration; elsewhere the body is ignored
    /// and this is `Done`).
    Reply(Bytes),
    /// "Acknowledge it": nothing to complete on a brokerless hop. Counts as processed; the
    /// registration logs `Unsupported` once.
    Ack,
    /// "Deliver it again": with neither `max_attempts` nor a dead-letter address declared the
    /// message is gone (at most once) and counted dropped; with either declared, a copy as
    /// `RetryAfter(0)`.
    Retry,
    /// A copy after this delay, waited in this process: a crash before it fires loses it.
    RetryAfter(Duration),
    /// "Discard it": the message is gone, counted dropped; the registration logs
    /// `Unsupported` once, as for `Ack`.
    Drop,
}

/// The attempt a message is: its [`ATTEMPT_HEADER`], or 1 when it has none. A value that is
/// not a decimal number from 1 up is attempt 1 too: the header is the sender's word, and a
/// peer that sends a bad one must not make this registration dead-letter at once.
#[inline]
pub(crate) fn attempt_of(meta: &crate::Metadata) -> u32 {
    if meta.is_empty() {
        return 1; // most messages: no header to look for
    }
    meta.get(ATTEMPT_HEADER)
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|s| s.parse::<u32>().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(1)
}

/// `meta` for the copy that is attempt `attempt`: every entry but the old attempt header,
/// kept in order, and the new one last.
pub(crate) fn copy_meta(meta: &crate::Metadata, attempt: u32) -> crate::Metadata {
    let mut out = crate::Metadata::new();
    for (name, value) in meta.iter() {
        if name != ATTEMPT_HEADER {
            out.insert(name.to_string(), value.clone());
        }
    }
    out.insert(ATTEMPT_HEADER, attempt.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metadata;

    #[test]
    fn the_first_delivery_is_attempt_one_and_a_bad_header_counts_as_none() {
        assert_eq!(attempt_of(&Metadata::new()), 1);
        assert_eq!(attempt_of(&Metadata::new().with(ATTEMPT_HEADER, "3")), 3);
        for bad in ["0", "-1", "x", "", "99999999999"] {
            assert_eq!(
                attempt_of(&Metadata::new().with(ATTEMPT_HEADER, bad)),
                1,
                "{bad}"
            );
        }
    }

    #[test]
    fn a_copy_keeps_the_metadata_and_replaces_the_attempt() {
        let m = Metadata::new()
            .with("a", "1")
            .with(ATTEMPT_HEADER, "2")
            .with("b", "2");
        let c = copy_meta(&m, 3);
        let got: Vec<(String, Bytes)> = c.iter().map(|(n, v)| (n.to_string(), v.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("a".to_string(), Bytes::from("1")),
                ("b".to_string(), Bytes::from("2")),
                (ATTEMPT_HEADER.to_string(), Bytes::from("3")),
            ]
        );
    }
}
