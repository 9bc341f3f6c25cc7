//! A received stream's bytes as the layers above read them: a type byte, a DATA header, a
//! length-prefixed value, lane frames, the rest up to FIN, with what was read ahead of the
//! caller kept in front. Pure framing over a [`RecvHalf`]: it knows the wire's shapes (from
//! `wire`), not what a stream means.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;

use super::{Conn, LiveStream, RecvHalf, StreamError};
use crate::error::{Error, Limit};
use crate::wire::{self, Code, DecodeError, Header};

/// The most bytes one read hands back.
pub(crate) const READ_CHUNK: usize = 64 * 1024;
/// The most of a lane frame cut across chunks that is joined to the next chunk before the
/// frame is read field by field instead (a large frame is then copied once, not per chunk).
const CARRY_MAX: usize = 8 * 1024;

/// `a` then `b`, in one new buffer.
fn joined(a: &[u8], b: &[u8]) -> Bytes {
    let mut j = BytesMut::with_capacity(a.len() + b.len());
    j.extend_from_slice(a);
    j.extend_from_slice(b);
    j.freeze()
}

/// A received stream's bytes, with what was read ahead of the caller kept in front.
pub(crate) struct StreamReader {
    recv: RecvHalf,
    ahead: Bytes,
    /// Stream ended (FIN read, or an error returned): nothing more to stop.
    ended: bool,
    /// Counts this stream as live on its connection until dropped (for a graceful drain).
    live: Option<LiveStream>,
    /// The body deadline and its connection's traffic ([`Watch`]). None: a read waits for as
    /// long as it takes (a control stream, or this side's own reply reader).
    watch: Option<Arc<Watch>>,
}

/// `Limits::body_idle_timeout` for the readers of one connection's streams, and that
/// connection's traffic as they see it: how many reads of its streams' bodies brought
/// something (bytes, or a FIN). When a reader's deadline passes and no read of any stream of
/// the connection brought anything meanwhile, the peer sent nothing but keep-alives while
/// holding stalled streams: the connection is closed with LIMIT_EXCEEDED (PROTOCOL §9.5), not
/// only the stream.
pub(crate) struct Watch {
    idle: Duration,
    read: AtomicU64,
    /// The connection to close; None where a stream is a connection of its own (AF_UNIX) or
    /// the peer is one this side chose to dial (a subscriber's publisher).
    conn: Option<Conn>,
}

impl Watch {
    /// The watch of `conn`'s streams.
    pub(crate) fn of(conn: Conn, idle: Duration) -> Arc<Self> {
        Arc::new(Self {
            idle,
            read: AtomicU64::new(0),
            conn: Some(conn),
        })
    }

    /// The deadline alone, for a stream with no connection to close.
    pub(crate) fn alone(idle: Duration) -> Arc<Self> {
        Arc::new(Self {
            idle,
            read: AtomicU64::new(0),
            conn: None,
        })
    }

    fn got(&self) {
        self.read.fetch_add(1, Ordering::Relaxed);
    }

    /// The traffic so far, to compare with at a deadline.
    pub(crate) fn seen(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// A deadline passed on one of the connection's streams: if no read of any of them
    /// brought anything since `seen`, the connection carries only stalled streams and
    /// keep-alives, and is closed.
    pub(crate) fn expired(&self, seen: u64, what: &str) {
        if self.seen() != seen {
            return;
        }
        if let Some(c) = &self.conn {
            c.close(
                Code::LimitExceeded,
                &format!("{what}: nothing on any stream of the connection"),
            );
        }
    }
}

impl StreamReader {
    pub(crate) fn new(recv: RecvHalf) -> Self {
        Self {
            recv,
            ahead: Bytes::new(),
            ended: false,
            live: None,
            watch: None,
        }
    }

    pub(crate) fn counted(mut self, live: Option<LiveStream>) -> Self {
        self.live = live;
        self
    }

    /// Bounds every wait for the writer's bytes by `idle` (`Limits::body_idle_timeout`),
    /// except a lane's wait between frames (an idle lane is not a stalled message). Set once
    /// the stream's type is known: a control stream waits between frames for as long as it
    /// takes.
    pub(crate) fn set_idle(&mut self, watch: &Arc<Watch>) {
        self.watch = Some(watch.clone());
    }

    pub(crate) async fn chunk(&mut self, max: usize) -> Result<Option<Bytes>, StreamError> {
        if !self.ahead.is_empty() {
            let n = self.ahead.len().min(max);
            return Ok(Some(self.ahead.split_to(n)));
        }
        if self.ended {
            return Ok(None);
        }
        let r = self.read_timed(max).await;
        if !matches!(r, Ok(Some(_))) {
            self.ended = true;
        }
        r
    }

    /// A read from the transport, bounded by `idle` if set: past it the stream is stopped
    /// with LIMIT_EXCEEDED (the writer's next write fails with it) and the read fails
    /// [`StreamError::Idle`]. The timer is set only when the read must wait: bytes already
    /// received cost no timer.
    async fn read_timed(&mut self, max: usize) -> Result<Option<Bytes>, StreamError> {
        let Some(watch) = self.watch.clone() else {
            return self.recv.read_chunk(max).await;
        };
        let r = {
            let mut read = std::pin::pin!(self.recv.read_chunk(max));
            match read.as_mut().now_or_never() {
                Some(r) => Some(r),
                None => {
                    let seen = watch.seen();
                    match tokio::time::timeout(watch.idle, read).await {
                        Ok(r) => Some(r),
                        Err(_) => {
                            watch.expired(seen, "body_idle_timeout");
                            None
                        }
                    }
                }
            }
        };
        match r {
            Some(r) => {
                if r.is_ok() {
                    watch.got();
                }
                r
            }
            None => {
                self.stop(Code::LimitExceeded);
                Err(StreamError::Idle(Limit::BodyIdle))
            }
        }
    }

    /// Exactly `n` bytes, or `Truncated` if the stream ends first. Without a copy when the
    /// bytes are in one chunk, which is the common case for a type byte and a header.
    async fn exact(&mut self, n: usize) -> Result<Bytes, ReadFail> {
        if self.ahead.is_empty() && n > 0 {
            match self.chunk(usize::MAX).await.map_err(ReadFail::Stream)? {
                Some(c) => self.ahead = c,
                None => return Err(ReadFail::Decode(DecodeError::Truncated)),
            }
        }
        if self.ahead.len() >= n {
            return Ok(self.ahead.split_to(n));
        }
        let mut buf = BytesMut::with_capacity(n);
        buf.extend_from_slice(&std::mem::take(&mut self.ahead));
        while buf.len() < n {
            match self.chunk(READ_CHUNK).await.map_err(ReadFail::Stream)? {
                Some(c) => {
                    let need = n - buf.len();
                    if c.len() > need {
                        buf.extend_from_slice(&c[..need]);
                        self.ahead = c.slice(need..);
                    } else {
                        buf.extend_from_slice(&c);
                    }
                }
                None => return Err(ReadFail::Decode(DecodeError::Truncated)),
            }
        }
        Ok(buf.freeze())
    }

    pub(crate) async fn byte(&mut self) -> Result<u8, ReadFail> {
        Ok(self.exact(1).await?[0])
    }

    /// A varint, byte by byte as far as needed.
    async fn varint(&mut self) -> Result<u64, ReadFail> {
        let first = self.byte().await?;
        let n = wire::varint::len_from_first_byte(first);
        let mut v = [0u8; 8];
        v[0] = first;
        if n > 1 {
            v[1..n].copy_from_slice(&self.exact(n - 1).await?);
        }
        wire::varint::get(&mut &v[..n]).map_err(ReadFail::Decode)
    }

    /// The next lane frame (PROTOCOL.md §4.1): its header and its body (or, for a body above
    /// `max_body`, its length: the body was skipped), `None` at the lane's FIN. A body is one
    /// buffer, without a copy when it arrived in one chunk.
    #[allow(clippy::type_complexity)]
    pub(crate) async fn lane_frame(
        &mut self,
        max_header: u64,
        max_body: u64,
    ) -> Result<Option<(Header, Result<Bytes, u64>)>, ReadFail> {
        if self.ahead.is_empty() && !self.wait_data().await? {
            return Ok(None);
        }
        loop {
            let mut header = None;
            let missing = match self.lane_frame_ahead(max_header, max_body, &mut header) {
                Ahead::Frame(body) => return Ok(Some((header.unwrap_or_default(), Ok(body)))),
                Ahead::Short(missing) if !self.ended && self.ahead.len() < CARRY_MAX => missing,
                Ahead::Short(_) | Ahead::General => break,
            };
            // A frame cut across chunks (a 1 KiB frame often is): what is left is joined with
            // the next chunk, so that this frame parses in place. When the frame's length is
            // known only the bytes that complete it are copied, and the rest of the chunk (up
            // to 64 KiB on loopback) stays where it is for the frames after it.
            match self.read_timed(usize::MAX).await {
                Ok(Some(c)) => {
                    let take = missing.map_or(c.len(), |n| n.min(c.len()));
                    self.ahead = joined(&self.ahead, &c[..take]);
                    if take < c.len() {
                        // The frame is whole now (exactly what completes it was taken).
                        let frame = self.lane_frame_ahead(max_header, max_body, &mut header);
                        let rest = c.slice(take..);
                        self.ahead = match self.ahead.is_empty() {
                            true => rest,
                            false => joined(&self.ahead, &rest),
                        };
                        if let Ahead::Frame(body) = frame {
                            return Ok(Some((header.unwrap_or_default(), Ok(body))));
                        }
                    }
                }
                // The general path below reports the end (a frame cut short) or the error.
                Ok(None) => {
                    self.ended = true;
                    break;
                }
                Err(e) => {
                    self.ended = true;
                    return Err(ReadFail::Stream(e));
                }
            }
        }
        let header = self.header(max_header).await?;
        if header.path.is_some() {
            return Err(ReadFail::Decode(DecodeError::malformed(
                "a lane frame carries PATH",
            )));
        }
        let len = self.varint().await?;
        if len > max_body {
            // Refused, as a stream above the bound would be, but the lane goes on: the body is
            // read past without being kept (flow control bounds what that costs).
            self.skip(len).await?;
            return Ok(Some((header, Err(len))));
        }
        Ok(Some((header, Ok(self.exact(len as usize).await?))))
    }

    /// A lane frame that lies whole in what was read ahead, parsed from the buffer with one
    /// split for its body: the common case, as a batch of frames arrives in one chunk (the
    /// byte-by-byte path costs a shared-buffer clone per field). `Short` when the buffer ends
    /// inside a well-formed frame; `General` for anything else (a bound exceeded, a malformed
    /// field), which the field-by-field path reads and reports.
    fn lane_frame_ahead(
        &mut self,
        max_header: u64,
        max_body: u64,
        header: &mut Option<Header>,
    ) -> Ahead {
        let mut cur = &self.ahead[..];
        let header_len = match wire::varint::get(&mut cur) {
            Ok(n) => n,
            Err(DecodeError::Truncated) => return Ahead::Short(None),
            Err(_) => return Ahead::General,
        };
        if header_len > max_header {
            return Ahead::General;
        }
        if (cur.len() as u64) < header_len {
            return Ahead::Short(None);
        }
        let (header_bytes, mut cur) = cur.split_at(header_len as usize);
        // Most frames carry no field: the version byte alone, and no header is built.
        let fields = match header_bytes {
            [wire::header::VERSION] => None,
            _ => match Header::decode_body(header_bytes) {
                Ok(h) if h.path.is_some() => return Ahead::General,
                Ok(h) => Some(h),
                Err(_) => return Ahead::General,
            },
        };
        let len = match wire::varint::get(&mut cur) {
            Ok(n) => n,
            Err(DecodeError::Truncated) => return Ahead::Short(None),
            Err(_) => return Ahead::General,
        };
        if len > max_body {
            return Ahead::General;
        }
        if (cur.len() as u64) < len {
            return Ahead::Short(Some((len - cur.len() as u64) as usize));
        }
        let used = self.ahead.len() - cur.len();
        bytes::Buf::advance(&mut self.ahead, used);
        if fields.is_some() {
            *header = fields;
        }
        Ahead::Frame(self.ahead.split_to(len as usize))
    }

    /// The next lane frame if it is whole in what was already read, without waiting; None
    /// otherwise (nothing read ahead, a frame cut short, or one the field-by-field path of
    /// [`StreamReader::lane_frame`] must read and report), and then nothing was consumed.
    /// A frame's header is put in `header` when it has a field, which is left as it was
    /// otherwise.
    pub(crate) fn lane_frame_ready(
        &mut self,
        max_header: u64,
        max_body: u64,
        header: &mut Option<Header>,
    ) -> Option<Bytes> {
        if self.ahead.is_empty() {
            return None;
        }
        match self.lane_frame_ahead(max_header, max_body, header) {
            Ahead::Frame(body) => Some(body),
            Ahead::Short(_) | Ahead::General => None,
        }
    }

    /// Waits until a byte is there to read: true, or false at the FIN. Not bounded by
    /// `idle`: it is a lane's wait between frames.
    pub(crate) async fn wait_data(&mut self) -> Result<bool, ReadFail> {
        if !self.ahead.is_empty() {
            return Ok(true);
        }
        if self.ended {
            return Ok(false);
        }
        match self.recv.read_chunk(usize::MAX).await {
            Ok(Some(c)) => {
                if let Some(w) = &self.watch {
                    w.got();
                }
                self.ahead = c;
                Ok(true)
            }
            Ok(None) => {
                if let Some(w) = &self.watch {
                    w.got();
                }
                self.ended = true;
                Ok(false)
            }
            Err(e) => {
                self.ended = true;
                Err(ReadFail::Stream(e))
            }
        }
    }

    /// Reads past `n` bytes without keeping them.
    async fn skip(&mut self, mut n: u64) -> Result<(), ReadFail> {
        while n > 0 {
            let want = n.min(READ_CHUNK as u64) as usize;
            match self.chunk(want).await.map_err(ReadFail::Stream)? {
                Some(c) => n -= c.len() as u64,
                None => return Err(ReadFail::Decode(DecodeError::Truncated)),
            }
        }
        Ok(())
    }

    /// A length-prefixed value (`len:varint bytes`), refusing one above `max` bytes.
    pub(crate) async fn prefixed(&mut self, max: usize) -> Result<Bytes, ReadFail> {
        let len = self.varint().await?;
        if len > max as u64 {
            return Err(ReadFail::Decode(DecodeError::TooLarge {
                what: "token",
                len,
                limit: max as u64,
            }));
        }
        self.exact(len as usize).await
    }

    /// A DATA header, refusing one above `max` bytes before reading it.
    pub(crate) async fn header(&mut self, max: u64) -> Result<Header, ReadFail> {
        let len = self.varint().await?;
        if len > max {
            return Err(ReadFail::Decode(DecodeError::TooLarge {
                what: "header",
                len,
                limit: max,
            }));
        }
        let body = self.exact(len as usize).await?;
        Header::decode_body(&body).map_err(ReadFail::Decode)
    }

    /// Everything up to FIN, refusing more than `max` bytes (`TooLarge`).
    pub(crate) async fn rest(&mut self, max: usize) -> Result<Bytes, ReadFail> {
        let mut parts: Vec<Bytes> = Vec::new();
        let mut total = 0usize;
        while let Some(c) = self.chunk(READ_CHUNK).await.map_err(ReadFail::Stream)? {
            total += c.len();
            if total > max {
                return Err(ReadFail::Decode(DecodeError::TooLarge {
                    what: "frame",
                    len: total as u64,
                    limit: max as u64,
                }));
            }
            parts.push(c);
        }
        Ok(concat(parts))
    }

    /// Hands the stream's place among its connection's live streams to whoever answers it.
    pub(crate) fn take_live(&mut self) -> Option<LiveStream> {
        self.live.take()
    }

    pub(crate) fn stop(&mut self, code: Code) {
        if !self.ended {
            self.ended = true;
            self.recv.stop(code);
        }
    }
}

pub(crate) fn concat(mut parts: Vec<Bytes>) -> Bytes {
    match parts.len() {
        0 => Bytes::new(),
        1 => parts.pop().unwrap(),
        _ => {
            let mut b = BytesMut::with_capacity(parts.iter().map(|p| p.len()).sum());
            for p in parts {
                b.extend_from_slice(&p);
            }
            b.freeze()
        }
    }
}

/// What the read-ahead buffer holds of the next lane frame.
enum Ahead {
    /// A whole frame's body; its header went to the caller's slot, which a frame with no
    /// field (the common case) leaves as it was: no header is built or moved for it.
    Frame(Bytes),
    /// The buffer ends inside the frame: the bytes still missing, once its length was read.
    Short(Option<usize>),
    /// Something the field-by-field path must read (and may report).
    General,
}

/// Why reading a framed part of a stream failed.
#[derive(Debug, Clone)]
pub(crate) enum ReadFail {
    Stream(StreamError),
    Decode(DecodeError),
}

impl ReadFail {
    /// The code a receiver stops a stream with when its framing is bad.
    pub(crate) fn code(&self) -> Code {
        match self {
            Self::Stream(_) => Code::NoError,
            Self::Decode(DecodeError::TooLarge { .. }) => Code::LimitExceeded,
            Self::Decode(DecodeError::Unsupported(_)) => Code::Unsupported,
            Self::Decode(_) => Code::ProtocolError,
        }
    }

    pub(crate) fn into_error(self) -> Error {
        match self {
            Self::Stream(e) => e.into_read_error(),
            Self::Decode(DecodeError::TooLarge { what, len, limit }) => {
                let (bound, name) = match what {
                    "header" => (Limit::HeaderSize, "max_header_size"),
                    "lane frame body" => (Limit::CollectedBody, "max_collected_body"),
                    // A token, a chunk, a control frame: the protocol's own bounds.
                    _ => (Limit::HeaderSize, "the protocol's bound"),
                };
                let what = if what == "lane frame body" {
                    "message"
                } else {
                    what
                };
                Error::limit(
                    bound,
                    format!(
                        "a {what} of {len} bytes, above {name} {limit} ({})",
                        crate::error::human_bytes(limit)
                    ),
                )
            }
            Self::Decode(DecodeError::Truncated) => {
                Error::Protocol("stream ended inside a frame".into())
            }
            Self::Decode(e) => Error::Protocol(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::byte_channel::byte_channel;

    /// Frames of a lane: with and without header fields, empty and larger bodies.
    fn frames() -> Vec<(Header, Bytes)> {
        let mut with_fields = Header {
            topic: Some("a.b".into()),
            sequence: Some(300),
            ..Header::default()
        };
        with_fields.meta.insert("k", "v");
        vec![
            (Header::default(), Bytes::from_static(b"one")),
            (with_fields, Bytes::from(vec![7u8; 200])),
            (Header::default(), Bytes::new()),
            (Header::default(), Bytes::from(vec![9u8; 17_000])),
        ]
    }

    fn encoded() -> Vec<u8> {
        let mut out = Vec::new();
        for (h, b) in frames() {
            wire::lane_frame::encode_frame_head(&h, b.len(), &mut out);
            out.extend_from_slice(&b);
        }
        out
    }

    async fn read_back(chunks: Vec<Bytes>, max_body: u64) -> Vec<(Header, Result<Bytes, u64>)> {
        let (mut w, r) = byte_channel(1 << 20, None, None, None);
        for c in chunks {
            w.write(c).await.unwrap();
        }
        w.finish().unwrap();
        let mut reader = StreamReader::new(RecvHalf::Channel(r));
        let mut got = Vec::new();
        while let Some(f) = reader.lane_frame(1024, max_body).await.unwrap() {
            got.push(f);
        }
        got
    }

    /// The in-buffer fast path and the field-by-field path read the same frames, wherever the
    /// chunks of the lane are cut (at every byte of the first frames, and one byte at a time).
    #[tokio::test]
    async fn lane_frames_read_the_same_whatever_the_chunking() {
        let all = Bytes::from(encoded());
        let want: Vec<_> = frames().into_iter().map(|(h, b)| (h, Ok(b))).collect();
        assert_eq!(read_back(vec![all.clone()], u64::MAX).await, want);
        for cut in 1..300 {
            let chunks = vec![all.slice(..cut), all.slice(cut..)];
            assert_eq!(read_back(chunks, u64::MAX).await, want, "cut at {cut}");
        }
        let bytewise = (0..all.len()).map(|i| all.slice(i..i + 1)).collect();
        assert_eq!(read_back(bytewise, u64::MAX).await, want);
    }

    /// A malformed frame is reported as soon as it is read, not when more bytes arrive: the
    /// writer here stays open and sends nothing more.
    #[tokio::test]
    async fn a_malformed_frame_is_reported_without_waiting_for_more() {
        for bad in [
            &[0x01, 0x07][..],
            &[0x02, 0x00, 0x01, 0x41, 0x00, 0x00, 0x00],
        ] {
            let (mut w, r) = byte_channel(1 << 20, None, None, None);
            w.write(Bytes::copy_from_slice(bad)).await.unwrap();
            let mut reader = StreamReader::new(RecvHalf::Channel(r));
            let got =
                tokio::time::timeout(Duration::from_secs(10), reader.lane_frame(1024, u64::MAX))
                    .await
                    .expect("the malformed frame was reported");
            assert!(matches!(got, Err(ReadFail::Decode(_))), "{bad:?}: {got:?}");
            drop(w);
        }
    }

    /// A body above the bound is reported by its length on either path, and the lane goes on.
    #[tokio::test]
    async fn a_body_above_the_bound_is_skipped_on_either_path() {
        let all = Bytes::from(encoded());
        for chunks in [vec![all.clone()], vec![all.slice(..5), all.slice(5..)]] {
            let got = read_back(chunks, 1000).await;
            assert_eq!(got.len(), 4);
            assert_eq!(got[1].1, Ok(Bytes::from(vec![7u8; 200])));
            assert_eq!(got[3].1, Err(17_000));
        }
    }
}
