//! Frames of the control stream (PROTOCOL.md §3): HELLO and the negotiation of guarantee sets,
//! the Pub/Sub SUBSCRIBE/UNSUBSCRIBE frames, GOAWAY, CLOSE, and the CHECK a dialler asks of a
//! path before it uses it.
//!
//! ```text
//! frame = type:varint  len:varint  payload[len]
//! ```

use bytes::Bytes;

use super::{fields, put_field, put_varint_field, varint, varint_value, Code, DecodeError};

/// Control frame types.
pub mod frame_type {
    /// HELLO: the first frame each side sends.
    pub const HELLO: u64 = 0x01;
    /// SUBSCRIBE: a subscriber adds a filter on a path: `request:varint path_len:varint path
    /// filter` (path and filter UTF-8; the filter runs to the end of the payload).
    pub const SUBSCRIBE: u64 = 0x02;
    /// UNSUBSCRIBE: a subscriber removes a filter; the payload is SUBSCRIBE's.
    pub const UNSUBSCRIBE: u64 = 0x03;
    /// GOAWAY: the sender opens no new streams (drain); payload: how many streams it opened on
    /// this connection, the control stream excluded (varint).
    pub const GOAWAY: u64 = 0x04;
    /// CLOSE: the connection ends with a code and reason (local transports; QUIC uses
    /// CONNECTION_CLOSE).
    pub const CLOSE: u64 = 0x05;
    /// ANSWER: the listener's answer to a SUBSCRIBE or UNSUBSCRIBE: `request:varint
    /// code:varint reason` (the reason UTF-8, to the end of the payload; code 0 = done).
    pub const ANSWER: u64 = 0x06;
    /// CHECK: a dialler asks whether the endpoint bound at a path takes the streams it will
    /// open: `request:varint streams:varint path` (path UTF-8, to the end of the payload),
    /// answered by ANSWER. Sent only where both HELLOs set [`super::FEATURE_PATH_CHECK`].
    pub const CHECK: u64 = 0x07;
    /// CLAIM: a dialler asks to become the peer the endpoint bound at a path sends to, in a
    /// role: `request:varint role:varint path` (path UTF-8, to the end of the payload),
    /// answered by ANSWER. Sent only where both HELLOs set [`super::FEATURE_CLAIM`].
    pub const CLAIM: u64 = 0x08;
}

/// HELLO FEATURES bit of claims (PROTOCOL.md §3.1.6): the sender answers CLAIM and opens
/// transfers toward a dialler that claimed one of its endpoints (a listener), or may send
/// CLAIM and takes the transfers the listener opens (a dialler). In use on a connection only
/// when both HELLOs set it.
pub const FEATURE_CLAIM: u64 = 1 << 3;

/// HELLO FEATURES bit of kept sockets (PROTOCOL.md §8.7), meaningful over AF_UNIX only: a
/// listener that sets it keeps a socket whose first chunk is KEEP for one exchange after
/// another; a dialler sends KEEP only to a listener that set it.
pub const FEATURE_KEPT_SOCKETS: u64 = 1 << 4;

/// The roles a CLAIM names (PROTOCOL.md §3.1.6).
pub mod claim_role {
    /// The one peer of a bound PAIR: it sends to the pair and the pair sends to it.
    pub const PAIR: u64 = 1;
    /// A worker of a bound pusher: one of the pullers its messages are dealt to, round-robin.
    pub const PULLER: u64 = 2;
}

/// HELLO FEATURES bit of the path check: the sender answers CHECK (a listener) or may send it
/// (a dialler). In use on a connection only when both HELLOs set it (PROTOCOL.md §3.1.1).
pub const FEATURE_PATH_CHECK: u64 = 1 << 1;

/// The stream kinds a CHECK names, one bit per stream type byte (PROTOCOL.md §4): a dialler
/// names the kinds it will open, and the path passes when its endpoint takes at least one.
pub mod check_streams {
    /// One-way transfers (type `01`), and the lanes that carry small ones (`03`).
    pub const TRANSFER: u64 = 1 << 1;
    /// Exchanges (type `02`).
    pub const EXCHANGE: u64 = 1 << 2;
}

/// HELLO field keys.
pub mod hello_key {
    /// The largest DATA header the sender accepts (varint).
    pub const MAX_HEADER_SIZE: u64 = 0x01;
    /// Feature bits the sender offers (varint). Bit 0: message lanes; bit 1: the path check;
    /// bit 2: lanes on parked connections; bit 3: claims; bit 4: kept sockets.
    pub const FEATURES: u64 = 0x02;
    /// The guarantee set the sender offers.
    pub const OFFERED: u64 = 0x03;
    /// The guarantee set the sender requires.
    pub const REQUIRED: u64 = 0x04;
    /// A local-socket subscriber's session: `parked:varint token` — how many reverse
    /// connections it parks in advance, and the token each of them carries (PROTOCOL.md §3.7).
    pub const SESSION: u64 = 0x05;
}

/// Guarantee dimensions (GUARANTEES.md §3). v0 implements ordering; the others are named so
/// that a peer requiring one of them is refused rather than silently ignored.
pub mod dimension {
    /// Delivery (BestEffort, AtMostOnce, AtLeastOnce).
    pub const DELIVERY: u64 = 0x01;
    /// Acknowledgement/completion.
    pub const ACKNOWLEDGEMENT: u64 = 0x02;
    /// Ordering: 0 None, 1 PerProducer(detect), 2 PerProducer(reassemble).
    pub const ORDERING: u64 = 0x03;
    /// Deduplication.
    pub const DEDUPLICATION: u64 = 0x04;
    /// Backpressure behaviour.
    pub const BACKPRESSURE: u64 = 0x05;
    /// Producer naming.
    pub const PRODUCER_NAMING: u64 = 0x06;
    /// Control isolation.
    pub const CONTROL_ISOLATION: u64 = 0x07;
}

/// The smallest MAX_HEADER_SIZE a HELLO may announce: below it no path fits.
pub const MIN_HEADER_SIZE: u64 = 64;

/// The HELLO version byte v0 writes.
pub const HELLO_VERSION: u8 = 0;

/// The ordering dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Ordering {
    /// No order across messages (the core set).
    #[default]
    None,
    /// PerProducer, detect: number each message, report gaps, hold nothing.
    Detect,
    /// PerProducer, reassemble: hold out-of-order arrivals, bounded by max_reorder_hold.
    Reassemble,
}

impl Ordering {
    fn level(self) -> u64 {
        self as u64
    }
}

/// A guarantee set: one level per dimension; a dimension at its core level is not written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuaranteeSet {
    /// Ordering.
    pub ordering: Ordering,
    /// Non-core levels of dimensions this implementation does not implement, as received.
    pub other: Vec<(u64, u64)>,
}

impl GuaranteeSet {
    /// The core set (everything at its core level).
    pub fn core() -> Self {
        Self::default()
    }

    /// True when every dimension is at its core level.
    pub fn is_core(&self) -> bool {
        self.ordering == Ordering::None && self.other.iter().all(|&(_, l)| l == 0)
    }

    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::new();
        if self.ordering != Ordering::None {
            varint::put(&mut v, dimension::ORDERING);
            varint::put(&mut v, self.ordering.level());
        }
        for &(d, l) in &self.other {
            if l != 0 {
                varint::put(&mut v, d);
                varint::put(&mut v, l);
            }
        }
        v
    }

    fn decode(mut buf: &[u8]) -> Result<Self, DecodeError> {
        let mut s = Self::default();
        let mut seen = Vec::new();
        while !buf.is_empty() {
            // The set is a whole field value: running out inside it is malformed, not a
            // reason to wait for more bytes.
            let d = varint::get(&mut buf)
                .map_err(|_| DecodeError::malformed("guarantee set: truncated dimension"))?;
            let l = varint::get(&mut buf)
                .map_err(|_| DecodeError::malformed("guarantee set: truncated level"))?;
            if seen.contains(&d) {
                return Err(DecodeError::malformed(format!("dimension {d} repeated")));
            }
            seen.push(d);
            match d {
                dimension::ORDERING => {
                    s.ordering = match l {
                        0 => Ordering::None,
                        1 => Ordering::Detect,
                        2 => Ordering::Reassemble,
                        // An unknown level of a known dimension cannot be compared: keep it as
                        // "other" so negotiation refuses it if required.
                        _ => {
                            s.other.push((d, l));
                            Ordering::None
                        }
                    }
                }
                // A core level is not written (see `encode`), so one that is written anyway
                // is dropped: the decoded set then encodes back to what it means.
                _ if l != 0 => s.other.push((d, l)),
                _ => {}
            }
        }
        Ok(s)
    }

    /// Whether `self` (an agreed set) reaches `required`: per dimension, at least its level;
    /// any non-core level of a dimension this implementation does not know is unreachable.
    pub fn reaches(&self, required: &Self) -> bool {
        self.ordering >= required.ordering && required.other.iter().all(|&(_, l)| l == 0)
    }

    /// Whether a set that declares `required` also declares at least as much in `self`, per
    /// dimension and by number — a sanity check of one HELLO, which needs no knowledge of what
    /// the levels mean (negotiation, which does, is [`GuaranteeSet::reaches`]).
    fn covers_declared(&self, required: &Self) -> bool {
        let level = |s: &Self, d: u64| -> u64 {
            if d == dimension::ORDERING && s.ordering != Ordering::None {
                return s.ordering.level();
            }
            s.other.iter().find(|(x, _)| *x == d).map_or(0, |&(_, l)| l)
        };
        let mut dims: Vec<u64> = required.other.iter().map(|&(d, _)| d).collect();
        dims.push(dimension::ORDERING);
        dims.iter().all(|&d| level(self, d) >= level(required, d))
    }

    /// The per-dimension intersection of two offers: the weaker level of each.
    pub fn intersect(&self, other: &Self) -> Self {
        Self {
            ordering: self.ordering.min(other.ordering),
            other: Vec::new(),
        }
    }
}

/// The first frame on the control stream, from each side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The largest DATA header (length-prefixed body) the sender accepts.
    pub max_header_size: u64,
    /// Feature bits offered.
    pub features: u64,
    /// Offered guarantee set.
    pub offered: GuaranteeSet,
    /// Required guarantee set.
    pub required: GuaranteeSet,
    /// Session token (reserved).
    pub session: Option<Bytes>,
}

impl Default for Hello {
    fn default() -> Self {
        Self {
            max_header_size: 16 * 1024,
            features: 0,
            offered: GuaranteeSet::core(),
            required: GuaranteeSet::core(),
            session: None,
        }
    }
}

impl Hello {
    /// Negotiates this side's HELLO against the peer's: the agreed set, or why not.
    pub fn negotiate(&self, peer: &Self) -> Result<GuaranteeSet, String> {
        let agreed = self.offered.intersect(&peer.offered);
        if !agreed.reaches(&self.required) {
            return Err(format!(
                "this side requires {:?}; this side offers {:?} and the peer {:?}",
                self.required, self.offered, peer.offered
            ));
        }
        if !agreed.reaches(&peer.required) {
            return Err(format!(
                "the peer requires {:?}, this side offers {:?}",
                peer.required, self.offered
            ));
        }
        Ok(agreed)
    }

    fn encode_payload(&self) -> Vec<u8> {
        let mut p = vec![HELLO_VERSION];
        put_varint_field(&mut p, hello_key::MAX_HEADER_SIZE, self.max_header_size);
        if self.features != 0 {
            put_varint_field(&mut p, hello_key::FEATURES, self.features);
        }
        if !self.offered.is_core() {
            put_field(&mut p, hello_key::OFFERED, &self.offered.encode());
        }
        if !self.required.is_core() {
            put_field(&mut p, hello_key::REQUIRED, &self.required.encode());
        }
        if let Some(s) = &self.session {
            put_field(&mut p, hello_key::SESSION, s);
        }
        p
    }

    fn decode_payload(p: &[u8]) -> Result<Self, DecodeError> {
        let (&version, rest) = p
            .split_first()
            .ok_or_else(|| DecodeError::malformed("empty HELLO"))?;
        if version != HELLO_VERSION {
            return Err(DecodeError::Unsupported(format!("HELLO version {version}")));
        }
        let mut h = Self {
            max_header_size: 0,
            ..Self::default()
        };
        let mut seen_size = false;
        let mut seen: Vec<u64> = Vec::new();
        for f in fields(rest) {
            let (k, v) = f?;
            if k <= hello_key::SESSION {
                if seen.contains(&k) {
                    return Err(DecodeError::malformed(format!(
                        "HELLO field 0x{k:x} repeated"
                    )));
                }
                seen.push(k);
            }
            match k {
                hello_key::MAX_HEADER_SIZE => {
                    h.max_header_size = varint_value(k, v)?;
                    seen_size = true;
                }
                hello_key::FEATURES => h.features = varint_value(k, v)?,
                hello_key::OFFERED => h.offered = GuaranteeSet::decode(v)?,
                hello_key::REQUIRED => h.required = GuaranteeSet::decode(v)?,
                hello_key::SESSION => h.session = Some(Bytes::copy_from_slice(v)),
                _ => {}
            }
        }
        if !seen_size {
            return Err(DecodeError::malformed("HELLO without MAX_HEADER_SIZE"));
        }
        if h.max_header_size < MIN_HEADER_SIZE {
            return Err(DecodeError::malformed(format!(
                "HELLO MAX_HEADER_SIZE {} is below {MIN_HEADER_SIZE}",
                h.max_header_size
            )));
        }
        if !h.offered.covers_declared(&h.required) {
            return Err(DecodeError::malformed("HELLO requires more than it offers"));
        }
        Ok(h)
    }
}

/// A control-stream frame.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlFrame {
    /// HELLO.
    Hello(Hello),
    /// SUBSCRIBE: add `filter` on `path`.
    Subscribe(Subscription),
    /// UNSUBSCRIBE: remove `filter` on `path`.
    Unsubscribe(Subscription),
    /// The answer to the SUBSCRIBE or UNSUBSCRIBE numbered `request`.
    Answer {
        /// The request it answers.
        request: u64,
        /// NO_ERROR when done; otherwise why not.
        code: Code,
        /// Human-readable reason.
        reason: String,
    },
    /// GOAWAY: the sender opens no more streams; it opened `opened` of them (control excluded),
    /// so the receiver can close once it has taken and finished every one.
    GoAway {
        /// Streams the sender opened on this connection.
        opened: u64,
    },
    /// CLOSE with a code and a reason.
    Close {
        /// Why.
        code: Code,
        /// Human-readable reason.
        reason: String,
    },
    /// CHECK: does the endpoint at a path take the streams the dialler will open?
    Check(PathCheck),
    /// CLAIM: may the dialler be the peer the endpoint at a path sends to?
    Claim(PathClaim),
    /// A frame type this implementation does not know; skipped by the reader.
    Unknown(u64),
}

/// The payload of CHECK (PROTOCOL.md §3.1.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathCheck {
    /// Numbers the request so its ANSWER can name it; from the same count as SUBSCRIBE's.
    pub request: u64,
    /// The stream kinds the dialler will open ([`check_streams`]), one bit per type byte.
    pub streams: u64,
    /// The endpoint path asked about.
    pub path: String,
}

impl PathCheck {
    fn encode(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(4 + self.path.len());
        varint::put(&mut p, self.request);
        varint::put(&mut p, self.streams);
        p.extend_from_slice(self.path.as_bytes());
        p
    }

    fn decode(mut p: &[u8]) -> Result<Self, DecodeError> {
        let bad = |what: &str| DecodeError::malformed(format!("CHECK: {what}"));
        let request = varint::get(&mut p).map_err(|_| bad("truncated request"))?;
        let streams = varint::get(&mut p).map_err(|_| bad("truncated stream kinds"))?;
        let path = std::str::from_utf8(p).map_err(|_| bad("path is not UTF-8"))?;
        Ok(Self {
            request,
            streams,
            path: path.to_string(),
        })
    }
}

/// The payload of CLAIM (PROTOCOL.md §3.1.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathClaim {
    /// Numbers the request so its ANSWER can name it; from the same count as CHECK's.
    pub request: u64,
    /// What the dialler claims to be ([`claim_role`]); a role this side does not know is
    /// answered UNSUPPORTED, not malformed.
    pub role: u64,
    /// The endpoint path claimed.
    pub path: String,
}

impl PathClaim {
    fn encode(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(4 + self.path.len());
        varint::put(&mut p, self.request);
        varint::put(&mut p, self.role);
        p.extend_from_slice(self.path.as_bytes());
        p
    }

    fn decode(mut p: &[u8]) -> Result<Self, DecodeError> {
        let bad = |what: &str| DecodeError::malformed(format!("CLAIM: {what}"));
        let request = varint::get(&mut p).map_err(|_| bad("truncated request"))?;
        let role = varint::get(&mut p).map_err(|_| bad("truncated role"))?;
        let path = std::str::from_utf8(p).map_err(|_| bad("path is not UTF-8"))?;
        Ok(Self {
            request,
            role,
            path: path.to_string(),
        })
    }
}

/// The payload of SUBSCRIBE and UNSUBSCRIBE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// Numbers the request so its ANSWER can name it; chosen by the subscriber.
    pub request: u64,
    /// The publisher's endpoint path.
    pub path: String,
    /// The filter, as text (its grammar is checked by the publisher, not by the codec).
    pub filter: String,
}

impl Subscription {
    fn encode(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(4 + self.path.len() + self.filter.len());
        varint::put(&mut p, self.request);
        varint::put(&mut p, self.path.len() as u64);
        p.extend_from_slice(self.path.as_bytes());
        p.extend_from_slice(self.filter.as_bytes());
        p
    }

    fn decode(mut p: &[u8]) -> Result<Self, DecodeError> {
        let bad = |what: &str| DecodeError::malformed(format!("SUBSCRIBE: {what}"));
        let request = varint::get(&mut p).map_err(|_| bad("truncated request"))?;
        let len = varint::get(&mut p).map_err(|_| bad("truncated path length"))?;
        if len > p.len() as u64 {
            return Err(bad("path longer than the payload"));
        }
        let (path, filter) = p.split_at(len as usize);
        let text = |b: &[u8]| {
            std::str::from_utf8(b)
                .map(str::to_string)
                .map_err(|_| bad("text is not UTF-8"))
        };
        Ok(Self {
            request,
            path: text(path)?,
            filter: text(filter)?,
        })
    }
}

/// The largest control frame payload a v0 reader accepts.
pub const MAX_CONTROL_FRAME: u64 = 64 * 1024;

impl ControlFrame {
    /// Appends the encoded frame to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let (ty, payload) = match self {
            Self::Hello(h) => (frame_type::HELLO, h.encode_payload()),
            Self::Subscribe(s) => (frame_type::SUBSCRIBE, s.encode()),
            Self::Unsubscribe(s) => (frame_type::UNSUBSCRIBE, s.encode()),
            Self::Answer {
                request,
                code,
                reason,
            } => {
                let mut p = Vec::new();
                varint::put(&mut p, *request);
                varint::put(&mut p, code.to_u64());
                p.extend_from_slice(reason.as_bytes());
                (frame_type::ANSWER, p)
            }
            Self::GoAway { opened } => {
                let mut p = Vec::new();
                varint::put(&mut p, *opened);
                (frame_type::GOAWAY, p)
            }
            Self::Close { code, reason } => {
                let mut p = Vec::new();
                varint::put(&mut p, code.to_u64());
                p.extend_from_slice(reason.as_bytes());
                (frame_type::CLOSE, p)
            }
            Self::Check(c) => (frame_type::CHECK, c.encode()),
            Self::Claim(c) => (frame_type::CLAIM, c.encode()),
            Self::Unknown(t) => (*t, Vec::new()),
        };
        varint::put(out, ty);
        varint::put(out, payload.len() as u64);
        out.extend_from_slice(&payload);
    }

    /// Decodes one frame from the front of `buf`: `Ok(None)` when more bytes are needed.
    pub fn decode(buf: &[u8]) -> Result<Option<(Self, usize)>, DecodeError> {
        let mut cur = buf;
        let ty = match varint::get(&mut cur) {
            Ok(t) => t,
            Err(DecodeError::Truncated) => return Ok(None),
            Err(e) => return Err(e),
        };
        let len = match varint::get(&mut cur) {
            Ok(l) => l,
            Err(DecodeError::Truncated) => return Ok(None),
            Err(e) => return Err(e),
        };
        if len > MAX_CONTROL_FRAME {
            return Err(DecodeError::TooLarge {
                what: "control frame",
                len,
                limit: MAX_CONTROL_FRAME,
            });
        }
        if (cur.len() as u64) < len {
            return Ok(None);
        }
        let p = &cur[..len as usize];
        let used = buf.len() - cur.len() + len as usize;
        let text = |p: &[u8]| {
            String::from_utf8(p.to_vec())
                .map_err(|_| DecodeError::malformed("control frame text is not UTF-8"))
        };
        let f = match ty {
            frame_type::HELLO => Self::Hello(Hello::decode_payload(p)?),
            frame_type::SUBSCRIBE => Self::Subscribe(Subscription::decode(p)?),
            frame_type::UNSUBSCRIBE => Self::Unsubscribe(Subscription::decode(p)?),
            frame_type::ANSWER => {
                let mut c = p;
                let request = varint::get(&mut c)
                    .map_err(|_| DecodeError::malformed("ANSWER without a request"))?;
                let code = varint::get(&mut c)
                    .map_err(|_| DecodeError::malformed("ANSWER without a code"))?;
                Self::Answer {
                    request,
                    code: Code::from_u64(code),
                    reason: text(c)?,
                }
            }
            frame_type::GOAWAY => Self::GoAway {
                opened: varint_value(frame_type::GOAWAY, p)?,
            },
            frame_type::CLOSE => {
                let mut c = p;
                let code = varint::get(&mut c)
                    .map_err(|_| DecodeError::malformed("CLOSE without a code"))?;
                Self::Close {
                    code: Code::from_u64(code),
                    reason: text(c)?,
                }
            }
            frame_type::CHECK => Self::Check(PathCheck::decode(p)?),
            frame_type::CLAIM => Self::Claim(PathClaim::decode(p)?),
            other => Self::Unknown(other),
        };
        Ok(Some((f, used)))
    }
}

/// The value of HELLO's SESSION field: a local-socket subscriber's reverse-connection session
/// (PROTOCOL.md §3.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// How many reverse connections the subscriber parks in advance.
    pub parked: u64,
    /// The token every parked connection of this session carries.
    pub token: Bytes,
}

/// The largest session token a reader accepts.
pub const MAX_SESSION_TOKEN: usize = 64;

impl Session {
    /// The SESSION field value.
    pub fn encode(&self) -> Bytes {
        let mut v = Vec::with_capacity(2 + self.token.len());
        varint::put(&mut v, self.parked);
        v.extend_from_slice(&self.token);
        Bytes::from(v)
    }

    /// Reads a SESSION field value.
    pub fn decode(mut v: &[u8]) -> Result<Self, DecodeError> {
        let parked = varint::get(&mut v)
            .map_err(|_| DecodeError::malformed("SESSION without a parked count"))?;
        if v.is_empty() || v.len() > MAX_SESSION_TOKEN {
            return Err(DecodeError::malformed(format!(
                "SESSION token of {} bytes (1 to {MAX_SESSION_TOKEN})",
                v.len()
            )));
        }
        Ok(Self {
            parked,
            token: Bytes::copy_from_slice(v),
        })
    }

    /// What a parked connection writes first: its stream type and this session's token,
    /// `04 token_len:varint token`.
    pub fn parked_head(&self) -> Bytes {
        let mut v = vec![super::StreamType::Parked.to_byte()];
        varint::put(&mut v, self.token.len() as u64);
        v.extend_from_slice(&self.token);
        Bytes::from(v)
    }
}
