//! How a received message is printed: `text`, `hex`, `json` lines, or `raw` bytes.
//!
//! Every format is built from a core [`IncomingMeta`] and a body, so a pattern that adds
//! fields to the metadata (Pub/Sub's topic, PerProducer's sequence and gap) prints them here
//! with no change to the commands. The JSON schema is documented in cli/README.md.

use std::io::{self, IsTerminal, Write};

use base64::Engine as _;
use serde_json::{json, Map, Value};
use weida::{IncomingMeta, PeerIdentity};

use crate::progress;

/// How each message is printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// The body as UTF-8 (invalid bytes replaced), one line per message; line breaks in the
    /// body are shown as `\n` and `\r` so a message is always one line. A Pub/Sub message is
    /// `TOPIC<TAB>BODY` (a topic holds no tab). For people.
    Text,
    /// The body as lowercase hex, one line per message: exact, and diffable.
    Hex,
    /// One JSON object per line, with the peer, path, metadata and body (cli/README.md).
    Json,
    /// The body's bytes exactly, nothing added between messages (but for `req` on a
    /// terminal: a newline after a reply that lacks one).
    Raw,
}

/// Writes one message in `format` and flushes, so a reader of a pipe sees it at once.
pub(crate) fn write_message(
    out: &mut impl Write,
    format: Format,
    meta: &IncomingMeta,
    body: &[u8],
) -> io::Result<()> {
    match format {
        // A topic cannot hold a tab (the core refuses control characters in one), so the
        // first tab splits the line: `cut -f1` is the topic. One from a peer that broke that
        // rule is escaped like the body, and the split still holds.
        Format::Text => match &meta.topic {
            Some(topic) => writeln!(
                out,
                "{}\t{}",
                one_line(topic.as_bytes()).replace('\t', "\\t"),
                one_line(body)
            )?,
            None => writeln!(out, "{}", one_line(body))?,
        },
        Format::Hex => {
            let mut line = hex(body);
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        Format::Json => {
            serde_json::to_writer(&mut *out, &message_json(meta, body))?;
            out.write_all(b"\n")?;
        }
        Format::Raw => out.write_all(body)?,
    }
    out.flush()
}

/// [`write_message`] on stdout (clear of any progress line on the same terminal).
pub(crate) fn print_message(format: Format, meta: &IncomingMeta, body: &[u8]) -> io::Result<()> {
    progress::above(|| write_message(&mut io::stdout().lock(), format, meta, body))
}

/// Bodies written raw to stdout as they come (`weida req`'s replies). On a terminal each
/// ends with a newline, added when the body did not end with one, so what follows (the next
/// reply, the shell's prompt) starts on a line of its own; into a pipe or a file the bytes
/// are the bodies' exactly.
pub(crate) struct RawOut {
    terminal: bool,
    /// The last byte of the body being written, if it has one yet.
    last: Option<u8>,
}

impl RawOut {
    /// Raw bodies on this process's stdout.
    pub(crate) fn stdout() -> Self {
        Self {
            terminal: io::stdout().is_terminal(),
            last: None,
        }
    }

    /// Writes the next part of a body.
    pub(crate) fn write(&mut self, part: &[u8]) -> io::Result<()> {
        if let Some(&b) = part.last() {
            self.last = Some(b);
        }
        progress::above(|| io::stdout().lock().write_all(part))
    }

    /// Ends a body: the newline a terminal needs, then a flush.
    pub(crate) fn end(&mut self) -> io::Result<()> {
        let newline = ends_with_newline(self.terminal, self.last.take());
        progress::above(|| {
            let mut out = io::stdout().lock();
            if newline {
                out.write_all(b"\n")?;
            }
            out.flush()
        })
    }
}

/// Whether a raw body whose last byte was `last` (`None`: empty) needs a newline after it:
/// only on a terminal, and only when it does not end with one already.
fn ends_with_newline(terminal: bool, last: Option<u8>) -> bool {
    terminal && last.is_some_and(|b| b != b'\n')
}

/// The JSON object of one message (the schema in cli/README.md). Optional core fields appear
/// only when the core reports them, so a consumer can tell "absent" from "zero".
pub(crate) fn message_json(meta: &IncomingMeta, body: &[u8]) -> Value {
    let mut m = Map::new();
    m.insert("peer".into(), peer_json(meta.peer.as_ref()));
    m.insert("path".into(), Value::String(meta.path.to_string()));
    let metadata = meta
        .metadata
        .iter()
        .map(|(name, value)| {
            let mut entry = Map::new();
            entry.insert("name".into(), Value::String(name.to_string()));
            bytes_field(&mut entry, "value", value);
            Value::Object(entry)
        })
        .collect();
    m.insert("metadata".into(), Value::Array(metadata));
    if let Some(topic) = &meta.topic {
        m.insert("topic".into(), Value::String(topic.clone()));
    }
    if let Some(sequence) = meta.sequence {
        m.insert("sequence".into(), json!(sequence));
    }
    if let Some(gap) = meta.gap {
        m.insert("gap".into(), json!(gap));
    }
    m.insert("size".into(), json!(body.len()));
    bytes_field(&mut m, "body", body);
    Value::Object(m)
}

/// The peer as the transport proved it: `{"kind": "key", "fingerprint": ...}`,
/// `{"kind": "local", "uid", "gid", "pid"}`, or null (in process, or an anonymous client).
fn peer_json(peer: Option<&PeerIdentity>) -> Value {
    match peer {
        None => Value::Null,
        Some(PeerIdentity::Key(fp)) => json!({ "kind": "key", "fingerprint": fp.to_string() }),
        Some(PeerIdentity::Local { uid, gid, pid }) => {
            json!({ "kind": "local", "uid": uid, "gid": gid, "pid": pid })
        }
        // `PeerIdentity` is non-exhaustive: a kind added later still prints, as its text.
        Some(other) => json!({ "kind": "other", "text": other.to_string() }),
    }
}

/// `name` as a string when `bytes` is UTF-8, else `name_base64`: exactly one of the two, so
/// text stays readable and binary stays exact.
fn bytes_field(obj: &mut Map<String, Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            obj.insert(name.into(), Value::String(s.to_string()));
        }
        Err(_) => {
            obj.insert(
                format!("{name}_base64"),
                Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
            );
        }
    }
}

/// The body as one line of text: lossy UTF-8 with line breaks escaped.
fn one_line(body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use weida::{Fingerprint, Identity, Metadata};

    fn meta() -> IncomingMeta {
        let mut m = IncomingMeta::default();
        m.path = "/jobs".into();
        m.metadata = Metadata::new().with("k", "v").with("bin", vec![0xff, 0x00]);
        m
    }

    fn printed(format: Format, meta: &IncomingMeta, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_message(&mut out, format, meta, body).unwrap();
        out
    }

    #[test]
    fn text_is_one_line_and_hex_is_exact() {
        assert_eq!(printed(Format::Text, &meta(), b"a\nb\r"), b"a\\nb\\r\n");
        assert_eq!(
            printed(Format::Text, &meta(), &[0x61, 0xff]),
            "a\u{fffd}\n".as_bytes()
        );
        assert_eq!(
            printed(Format::Hex, &meta(), &[0x00, 0xab, 0x10]),
            b"00ab10\n"
        );
        assert_eq!(printed(Format::Raw, &meta(), b"a\nb"), b"a\nb");
    }

    #[test]
    fn text_shows_the_topic_before_a_tab() {
        let mut m = meta();
        m.topic = Some("prices.btc.eur".into());
        assert_eq!(
            printed(Format::Text, &m, b"64210\nx"),
            b"prices.btc.eur\t64210\\nx\n"
        );
        // A topic no weida publisher could send still leaves the first tab the split.
        m.topic = Some("a\tb".into());
        assert_eq!(printed(Format::Text, &m, b"x"), b"a\\tb\tx\n");
        // Only text: hex and raw stay the body alone, json has its `topic` field.
        assert_eq!(printed(Format::Hex, &m, b"x"), b"78\n");
        assert_eq!(printed(Format::Raw, &m, b"x"), b"x");
    }

    #[test]
    fn a_raw_body_gets_a_newline_only_on_a_terminal_and_only_when_it_lacks_one() {
        assert!(ends_with_newline(true, Some(b'o')));
        assert!(!ends_with_newline(true, Some(b'\n')));
        assert!(
            !ends_with_newline(true, None),
            "an empty body prints nothing"
        );
        assert!(!ends_with_newline(false, Some(b'o')), "a pipe or a file");
    }

    #[test]
    fn json_carries_every_field_and_base64_for_binary() {
        let fp: Fingerprint = Identity::ephemeral().fingerprint();
        let mut m = meta();
        m.peer = Some(PeerIdentity::Key(fp));
        let v: Value = serde_json::from_slice(&printed(Format::Json, &m, b"hi")).unwrap();
        assert_eq!(v["peer"]["kind"], "key");
        assert_eq!(v["peer"]["fingerprint"], fp.to_string());
        assert_eq!(v["path"], "/jobs");
        assert_eq!(v["metadata"][0]["name"], "k");
        assert_eq!(v["metadata"][0]["value"], "v");
        assert_eq!(v["metadata"][1]["value_base64"], "/wA=");
        assert_eq!(v["body"], "hi");
        assert_eq!(v["size"], 2);
        assert!(v.get("topic").is_none() && v.get("sequence").is_none());

        let v = message_json(&m, &[0xff, 0xfe]);
        assert!(v.get("body").is_none());
        assert_eq!(v["body_base64"], "//4=");
    }

    #[test]
    fn json_prints_topic_sequence_and_gap_when_the_core_reports_them() {
        let mut m = meta();
        m.topic = Some("prices.eur".into());
        m.sequence = Some(7);
        m.gap = Some(0);
        m.peer = Some(PeerIdentity::Local {
            uid: 1,
            gid: 2,
            pid: 3,
        });
        let v = message_json(&m, b"");
        assert_eq!(v["topic"], "prices.eur");
        assert_eq!(v["sequence"], 7);
        assert_eq!(v["gap"], 0);
        assert_eq!(
            v["peer"],
            json!({"kind": "local", "uid": 1, "gid": 2, "pid": 3})
        );
        assert_eq!(v["body"], "");
    }
}
