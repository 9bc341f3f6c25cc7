//! The DATA header every transfer, request and successful reply starts with (PROTOCOL.md §5).
//!
//! ```text
//! header  = length:varint  version:u8(=0)  field*      ; length counts version + fields
//! field   = key:varint  len:varint  value[len]
//! ```

use bytes::Bytes;

use super::{fields, put_field, put_varint_field, utf8_value, varint, varint_value, DecodeError};

/// Field keys of the DATA header.
pub mod key {
    /// Endpoint path (UTF-8). Required on transfers and requests, absent on replies.
    pub const PATH: u64 = 0x01;
    /// One application metadata entry: `name_len:varint name value`. Repeatable, ordered.
    pub const META: u64 = 0x02;
    /// Pub/Sub topic (UTF-8).
    pub const TOPIC: u64 = 0x03;
    /// PerProducer sequence number (varint).
    pub const SEQUENCE: u64 = 0x04;
    /// Producer name under Stable producer naming (opaque bytes). Absent under Fingerprint.
    pub const PRODUCER: u64 = 0x05;
}

/// The only header version v0 writes and reads.
pub const VERSION: u8 = 0;

/// Application metadata: ordered `(name, value)` pairs; a name may repeat.
///
/// ```
/// use weida::Metadata;
/// let mut m = Metadata::new();
/// m.insert("content-type", "application/json");
/// assert_eq!(m.get("content-type").unwrap().as_ref(), b"application/json");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata(Vec<(String, Bytes)>);

impl Metadata {
    /// Empty metadata.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// Appends an entry.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<Bytes>) -> &mut Self {
        self.0.push((name.into(), value.into()));
        self
    }

    /// Builder form of [`Metadata::insert`].
    pub fn with(mut self, name: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.insert(name, value);
        self
    }

    /// The first value under `name`.
    pub fn get(&self, name: &str) -> Option<&Bytes> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Every entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Bytes)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<N: Into<String>, V: Into<Bytes>> FromIterator<(N, V)> for Metadata {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(n, v)| (n.into(), v.into()))
                .collect(),
        )
    }
}

/// A decoded DATA header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// The endpoint path.
    pub path: Option<String>,
    /// Application metadata.
    pub meta: Metadata,
    /// Pub/Sub topic.
    pub topic: Option<String>,
    /// PerProducer sequence number.
    pub sequence: Option<u64>,
    /// Stable producer name.
    pub producer: Option<Bytes>,
}

impl Header {
    /// No field at all: the header of most small messages.
    pub fn is_empty(&self) -> bool {
        self.path.is_none()
            && self.meta.is_empty()
            && self.topic.is_none()
            && self.sequence.is_none()
            && self.producer.is_none()
    }

    /// A header carrying `meta` and nothing else.
    pub(crate) fn with_meta(meta: Metadata) -> Self {
        Self {
            meta,
            ..Self::default()
        }
    }
}

/// A header to encode from borrowed parts: what a sender has at hand, encoded without
/// allocating (a publisher encodes one per copy).
#[derive(Debug, Clone, Copy)]
pub struct HeaderRef<'a> {
    /// The endpoint path.
    pub path: Option<&'a str>,
    /// Application metadata.
    pub meta: &'a Metadata,
    /// Pub/Sub topic.
    pub topic: Option<&'a str>,
    /// PerProducer sequence number.
    pub sequence: Option<u64>,
    /// Stable producer name.
    pub producer: Option<&'a [u8]>,
}

impl<'a> From<&'a Header> for HeaderRef<'a> {
    fn from(h: &'a Header) -> Self {
        HeaderRef {
            path: h.path.as_deref(),
            meta: &h.meta,
            topic: h.topic.as_deref(),
            sequence: h.sequence,
            producer: h.producer.as_deref(),
        }
    }
}

fn meta_value_len(name: &str, value: &[u8]) -> usize {
    varint::len(name.len() as u64) + name.len() + value.len()
}

impl HeaderRef<'_> {
    /// The header's length as its length prefix counts it (the version byte and the fields),
    /// which is what a receiver's MAX_HEADER_SIZE bounds (PROTOCOL.md §5.3); computed, not
    /// encoded.
    pub fn counted_len(&self) -> usize {
        fn field(key: u64, len: usize) -> usize {
            varint::len(key) + varint::len(len as u64) + len
        }
        let mut len = 1;
        len += self.path.map_or(0, |p| field(key::PATH, p.len()));
        for (name, value) in &self.meta.0 {
            len += field(key::META, meta_value_len(name, value));
        }
        len += self.topic.map_or(0, |t| field(key::TOPIC, t.len()));
        len += self
            .sequence
            .map_or(0, |s| field(key::SEQUENCE, varint::len(s)));
        len += self.producer.map_or(0, |p| field(key::PRODUCER, p.len()));
        len
    }

    /// Appends the encoded header (length prefix included) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let len = self.counted_len();
        out.reserve(varint::len(len as u64) + len);
        varint::put(out, len as u64);
        out.push(VERSION);
        if let Some(p) = self.path {
            put_field(out, key::PATH, p.as_bytes());
        }
        for (name, value) in &self.meta.0 {
            varint::put(out, key::META);
            varint::put(out, meta_value_len(name, value) as u64);
            varint::put(out, name.len() as u64);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(value);
        }
        if let Some(t) = self.topic {
            put_field(out, key::TOPIC, t.as_bytes());
        }
        if let Some(s) = self.sequence {
            put_varint_field(out, key::SEQUENCE, s);
        }
        if let Some(p) = self.producer {
            put_field(out, key::PRODUCER, p);
        }
    }
}

impl Header {
    /// A header naming only a path.
    pub fn for_path(path: &str) -> Self {
        Self {
            path: Some(path.to_string()),
            ..Self::default()
        }
    }

    /// Appends the encoded header (length prefix included) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        HeaderRef::from(self).encode(out)
    }

    /// The encoded header as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }

    /// Decodes a header body (what follows the length prefix). Unknown keys are skipped;
    /// a repeated single-valued key is malformed.
    pub fn decode_body(body: &[u8]) -> Result<Self, DecodeError> {
        let (&version, rest) = body
            .split_first()
            .ok_or_else(|| DecodeError::malformed("empty header"))?;
        if version != VERSION {
            return Err(DecodeError::Unsupported(format!(
                "header version {version}"
            )));
        }
        let mut h = Self::default();
        for field in fields(rest) {
            let (k, v) = field?;
            fn once<T>(slot: &mut Option<T>, k: u64, val: T) -> Result<(), DecodeError> {
                if slot.replace(val).is_some() {
                    return Err(DecodeError::malformed(format!("field 0x{k:x} repeated")));
                }
                Ok(())
            }
            match k {
                key::PATH => once(&mut h.path, k, utf8_value(k, v)?)?,
                key::META => {
                    let mut cur = v;
                    let n = varint::get(&mut cur)
                        .map_err(|_| DecodeError::malformed("metadata: truncated name length"))?;
                    if n > cur.len() as u64 {
                        return Err(DecodeError::malformed("metadata: name longer than entry"));
                    }
                    let (name, value) = cur.split_at(n as usize);
                    let name = std::str::from_utf8(name)
                        .map_err(|_| DecodeError::malformed("metadata name is not UTF-8"))?;
                    h.meta.insert(name, Bytes::copy_from_slice(value));
                }
                key::TOPIC => once(&mut h.topic, k, utf8_value(k, v)?)?,
                key::SEQUENCE => once(&mut h.sequence, k, varint_value(k, v)?)?,
                key::PRODUCER => once(&mut h.producer, k, Bytes::copy_from_slice(v))?,
                _ => {} // unknown keys are skipped (PROTOCOL.md §5.2)
            }
        }
        Ok(h)
    }

    /// Decodes a whole header (length prefix included) from the front of `buf`, bounded by
    /// `max_body`. Returns the header and how many bytes it took.
    pub fn decode(buf: &[u8], max_body: usize) -> Result<(Self, usize), DecodeError> {
        let mut cur = buf;
        let len = varint::get(&mut cur)?;
        if len > max_body as u64 {
            return Err(DecodeError::TooLarge {
                what: "header",
                len,
                limit: max_body as u64,
            });
        }
        let prefix = buf.len() - cur.len();
        if (cur.len() as u64) < len {
            return Err(DecodeError::Truncated);
        }
        let h = Self::decode_body(&cur[..len as usize])?;
        Ok((h, prefix + len as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `counted_len` is what `encode`'s length prefix says, for every field and for lengths on
    /// both sides of a varint's size steps: a sender checks a receiver's bound with it before
    /// encoding anything.
    #[test]
    fn the_counted_length_is_what_the_encoded_prefix_counts() {
        for n in [0usize, 1, 60, 63, 64, 200, 16_383, 16_384, 70_000] {
            let text = "p".repeat(n);
            let meta: Metadata = [("k".repeat(n % 97), vec![7u8; n])].into_iter().collect();
            let headers = [
                Header::default(),
                Header::for_path(&text),
                Header {
                    path: Some("/feed".into()),
                    meta,
                    topic: Some(text.clone()),
                    sequence: Some(n as u64 * 1_000_003),
                    producer: Some(Bytes::from(vec![1u8; n % 40])),
                },
            ];
            for h in &headers {
                let mut out = Vec::new();
                h.encode(&mut out);
                let prefix = varint::len_from_first_byte(out[0]);
                let said = varint::get(&mut &out[..]).unwrap();
                assert_eq!(HeaderRef::from(h).counted_len(), out.len() - prefix, "{n}");
                assert_eq!(said as usize, out.len() - prefix, "{n}");
            }
        }
    }
}
