//! The sending end of a message lane (docs/decisions/0001-message-lanes.md, PROTOCOL.md §4.1):
//! whole small messages queued by `send`, written as frames on one long-lived stream by a
//! writer task that coalesces whatever is queued into one write. No timer: a lone message goes
//! out at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

use super::context::Context;
use super::numbering::Numbering;
use crate::error::{Error, LossCause, Result};
use crate::transport::{Conn, SendHalf};
use crate::wire::Header;

/// What a lane queues before `send` waits (backpressure, as a stream slot was): frames while
/// below both bounds, so at most `QUEUE_BYTES` of frames (heads and bodies) and one more frame;
/// with the queueful its writer took and is writing, a lane holds at most twice that. Deep in
/// frames for small messages: a sender faster than the writer parks each time it fills the
/// queue and is woken when the writer takes it, a hand-over between threads paid once a
/// queueful (at 256 frames the kernel was a third of a batched 64-byte sender's process).
/// Bounded in bytes at what 256 frames of 1 KiB held: 1 KiB messages queue as before (1 MiB
/// measured slower there over QUIC), and a lane of 16 KiB messages queues 256 KiB for a stalled
/// peer, not 4 MiB (PERFORMANCE.md, "A lane queue bounded in frames and in bytes").
const QUEUE_FRAMES: usize = 1024;
const QUEUE_BYTES: usize = 256 * 1024;
/// A block of a [`Batch`] holds at most this many frames, or a frame more than this many
/// bytes: one buffer, begun at 16 KiB and grown in place, which is what each write of the
/// lane's writer was before a queueful became one write. Kept so, since a queueful held in one
/// growing buffer, or in blocks of 64 KiB or 128 KiB allocated whole, measured the core's
/// 1 KiB row over AF_UNIX 17–44% slower (with frames then copied on the sender's thread, a
/// change not kept: PERFORMANCE.md, "One write a queueful").
const BLOCK_FRAMES: usize = 128;
const BLOCK_BYTES: usize = 256 * 1024;
const FIRST_BLOCK: usize = 16 * 1024;

/// A frame queued for the lane's writer.
struct QueuedFrame {
    head: FrameHead,
    body: Bytes,
}

/// A frame's header and body length: inline for the common header with no fields (no
/// allocation per message), else encoded.
pub(crate) enum FrameHead {
    Inline([u8; 10], u8),
    Encoded(Vec<u8>),
    /// A header to number as the frame is queued, and a body of this length: numbered and
    /// encoded under the queue's lock, so the numbers follow the lane's order whatever the
    /// senders' interleaving (PROTOCOL.md §4: a gap must mean a message that never arrived).
    Numbered(Box<Header>, usize, Arc<Numbering>),
}

impl FrameHead {
    /// The head of a frame whose header has no field (`01 00`) and a body of `len` bytes.
    pub(crate) fn plain(len: usize) -> Self {
        let mut b = [0u8; 10];
        b[0] = 0x01;
        let n = crate::wire::varint::len(len as u64);
        // A varint is at most 8 bytes: it fits after the two header bytes.
        crate::wire::varint::put(&mut &mut b[2..2 + n], len as u64);
        Self::Inline(b, (2 + n) as u8)
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Inline(b, n) => &b[..*n as usize],
            Self::Encoded(v) => v,
            Self::Numbered(..) => unreachable!("numbered as it is queued"),
        }
    }

    /// The head as queued: a numbered one takes its number now.
    fn queued(self) -> Self {
        match self {
            Self::Numbered(mut h, len, numbering) => {
                numbering.number(&mut h);
                let mut head = Vec::with_capacity(24);
                crate::wire::lane_frame::encode_frame_head(&*h, len, &mut head);
                Self::Encoded(head)
            }
            other => other,
        }
    }
}

/// Why [`Lane::try_send`] queued nothing.
pub(crate) enum TrySend {
    /// The queue is full: the frame, to send with waiting.
    Full(FrameHead, Bytes),
    /// The lane ended, and why.
    Ended(Error),
}

/// The frames between a lane's senders and its writer. A plain locked queue rather than a
/// channel: a sender takes the lock once per frame and the writer once per batch (it takes
/// everything queued), where a bounded channel costs a semaphore and a waker per frame on
/// both sides (profiled: a quarter of the lane path's time).
struct FrameQueue {
    state: Mutex<FrameQueueState>,
    /// Wakes the writer: a frame went into an empty queue, or the last sender left.
    work: Notify,
    /// Wakes senders waiting for room (or for the lane's end).
    room: Notify,
}

#[derive(Default)]
struct FrameQueueState {
    frames: VecDeque<QueuedFrame>,
    /// The bytes of the frames in `frames`, heads and bodies: a head may carry metadata up to
    /// the peer's header bound.
    bytes: usize,
    /// The writer ended: nothing more is queued.
    closed: bool,
    /// Every handle is gone, or the lane was closed: the writer finishes once the queue is
    /// empty.
    senders_gone: bool,
}

impl FrameQueueState {
    /// No frame is queued until the writer takes the queue (a sender waits for `room`).
    fn full(&self) -> bool {
        self.frames.len() >= QUEUE_FRAMES || self.bytes >= QUEUE_BYTES
    }

    /// Queues a frame if there is room: whether it is the only one (the writer may be
    /// waiting for it), or the frame back.
    fn push(
        &mut self,
        head: FrameHead,
        body: Bytes,
    ) -> std::result::Result<bool, (FrameHead, Bytes)> {
        if self.full() {
            return Err((head, body));
        }
        let head = head.queued();
        self.bytes += head.as_slice().len() + body.len();
        self.frames.push_back(QueuedFrame { head, body });
        Ok(self.frames.len() == 1)
    }

    /// Moves every queued frame to `into` (empty): whether the queue was full, so senders
    /// may be waiting for room.
    fn take(&mut self, into: &mut VecDeque<QueuedFrame>) -> bool {
        debug_assert!(into.is_empty(), "the writer wrote what it took before");
        let was_full = self.full();
        std::mem::swap(&mut self.frames, into);
        self.bytes = 0;
        was_full
    }
}

/// What a lane's writer reports to its senders.
#[derive(Default)]
struct LaneState {
    /// Why the lane ended early (a refusal, a loss), until a sender takes it.
    failed: Mutex<Option<Error>>,
    /// Set once `failed` was: a sender checks it without the lock.
    failing: AtomicBool,
    ended: Notify,
    done: AtomicBool,
}

/// What the handles of one lane share; the last one to go tells the writer.
struct Senders {
    queue: Arc<FrameQueue>,
    state: Arc<LaneState>,
}

impl Drop for Senders {
    fn drop(&mut self) {
        self.queue.state.lock().unwrap().senders_gone = true;
        self.queue.work.notify_one();
    }
}

/// A lane toward one path of one connection. Cheap to clone; the writer ends (finishing the
/// stream) once every clone is dropped and what was queued is written.
#[derive(Clone)]
pub(crate) struct Lane {
    inner: Arc<Senders>,
}

impl Lane {
    /// Starts a lane whose stream is opened on `conn` with `head` (`03` and the path header)
    /// when its first frame is queued. `opened` counts the stream for GOAWAY.
    pub(crate) fn start(
        ctx: Arc<Context>,
        conn: Conn,
        path: Arc<str>,
        head: Bytes,
        opened: Arc<AtomicU64>,
    ) -> Self {
        let queue = Arc::new(FrameQueue {
            state: Mutex::new(FrameQueueState::default()),
            work: Notify::new(),
            room: Notify::new(),
        });
        let state = Arc::new(LaneState::default());
        tokio::spawn(writer(
            ctx,
            conn,
            path,
            head,
            queue.clone(),
            state.clone(),
            opened,
        ));
        Self {
            inner: Arc::new(Senders { queue, state }),
        }
    }

    pub(crate) fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The failure the writer met, once: the sender that takes it reports it, and the next
    /// one opens a new lane.
    pub(crate) fn take_failure(&self) -> Option<Error> {
        let state = &self.inner.state;
        if !state.failing.load(Ordering::Acquire) {
            return None;
        }
        state.failed.lock().unwrap().take()
    }

    /// The writer failed (whether or not a sender took the failure yet): a sender with a
    /// handle of its own goes back to the link, which reports it and starts a new lane.
    pub(crate) fn failing(&self) -> bool {
        self.inner.state.failing.load(Ordering::Acquire)
    }

    fn ended(&self) -> Error {
        self.take_failure()
            .unwrap_or(Error::ConnectionLost(LossCause::PeerClosed))
    }

    /// Queues a frame if the lane's queue has room, without waiting: the common case, with
    /// no clone of the lane and no timer. Gives the frame back when the queue is full; the
    /// lane's failure when it ended.
    pub(crate) fn try_send(
        &self,
        head: FrameHead,
        body: Bytes,
    ) -> std::result::Result<(), TrySend> {
        let queue = &self.inner.queue;
        let mut st = queue.state.lock().unwrap();
        if st.closed {
            drop(st);
            return Err(TrySend::Ended(self.ended()));
        }
        let first = st.push(head, body).map_err(|(h, b)| TrySend::Full(h, b))?;
        drop(st);
        if first {
            queue.work.notify_one();
        }
        Ok(())
    }

    /// Queues a frame (its header bytes and its body): waits while the lane's queue is full.
    /// Cancel-safe: a cancelled send queued nothing.
    pub(crate) async fn send(&self, mut head: FrameHead, mut body: Bytes) -> Result<()> {
        loop {
            let room = self.inner.queue.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.try_send(head, body) {
                Ok(()) => return Ok(()),
                Err(TrySend::Ended(e)) => return Err(e),
                Err(TrySend::Full(h, b)) => (head, body) = (h, b),
            }
            room.await;
        }
    }

    /// Waits until the writer has written everything queued and finished the stream (or
    /// failed). Other handles may live on (a sender's cached one): the writer finishes anyway,
    /// and a frame queued after it did is refused as on any ended lane.
    pub(crate) async fn close(self) {
        let state = self.inner.state.clone();
        self.inner.queue.state.lock().unwrap().senders_gone = true;
        self.inner.queue.work.notify_one();
        drop(self);
        loop {
            let n = state.ended.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if state.done.load(Ordering::Acquire) {
                return;
            }
            n.await;
        }
    }
}

impl FrameQueue {
    /// Everything queued, once there is something (waking senders waiting for room); None
    /// once every sender is gone and nothing is left.
    async fn take(&self, into: &mut VecDeque<QueuedFrame>) -> bool {
        loop {
            let work = self.work.notified();
            tokio::pin!(work);
            work.as_mut().enable();
            {
                let mut st = self.state.lock().unwrap();
                if !st.frames.is_empty() {
                    let was_full = st.take(into);
                    drop(st);
                    if was_full {
                        self.room.notify_waiters();
                    }
                    return true;
                }
                if st.senders_gone {
                    return false;
                }
            }
            work.await;
        }
    }

    /// The writer ended: what is still queued is lost, and senders learn it.
    fn close(&self) -> u64 {
        let mut st = self.state.lock().unwrap();
        st.closed = true;
        let lost = st.frames.len() as u64;
        st.frames.clear();
        st.bytes = 0;
        drop(st);
        self.room.notify_waiters();
        lost
    }
}

/// Bodies below this are copied into the batch's blocks: quinn walks its send buffer chunk
/// by chunk per packet, so thousands of tiny chunks cost more than copying them (profiled:
/// `write_stream_frames` at a third of the CPU with a chunk per frame head and body).
pub(crate) const COPY_BELOW: usize = 4096;

/// One coalesced write: small frames copied into blocks, large bodies kept as their own.
pub(crate) struct Batch {
    bufs: Vec<Bytes>,
    cur: bytes::BytesMut,
    /// The frames in `cur`.
    block_frames: usize,
    pub(crate) frames: usize,
    pub(crate) bytes: usize,
    pub(crate) body_bytes: u64,
}

impl Batch {
    pub(crate) fn new(prefix: Bytes) -> Self {
        let mut cur = bytes::BytesMut::with_capacity(FIRST_BLOCK);
        cur.extend_from_slice(&prefix);
        Self {
            bufs: Vec::new(),
            cur,
            block_frames: 0,
            frames: 0,
            bytes: prefix.len(),
            body_bytes: 0,
        }
    }

    fn push(&mut self, f: QueuedFrame) {
        self.push_parts(f.head.as_slice(), f.body);
    }

    pub(crate) fn push_parts(&mut self, head: &[u8], body: Bytes) {
        if self.block_frames >= BLOCK_FRAMES || self.cur.len() >= BLOCK_BYTES {
            // A new block of its own: what `seal` leaves is the rest of the last block's
            // allocation, shared with it, and once that filled, the block would be
            // reallocated and what it held copied.
            self.seal();
            self.cur = bytes::BytesMut::with_capacity(FIRST_BLOCK);
            self.block_frames = 0;
        }
        self.block_frames += 1;
        self.frames += 1;
        self.bytes += head.len() + body.len();
        self.body_bytes += body.len() as u64;
        self.cur.extend_from_slice(head);
        if body.len() < COPY_BELOW {
            self.cur.extend_from_slice(&body);
        } else {
            self.seal();
            self.bufs.push(body);
        }
    }

    fn seal(&mut self) {
        if !self.cur.is_empty() {
            self.bufs.push(self.cur.split().freeze());
        }
    }

    pub(crate) fn finish(mut self) -> Vec<Bytes> {
        self.seal();
        self.bufs
    }
}

async fn writer(
    ctx: Arc<Context>,
    conn: Conn,
    path: Arc<str>,
    head: Bytes,
    queue: Arc<FrameQueue>,
    state: Arc<LaneState>,
    opened: Arc<AtomicU64>,
) {
    let outcome = write_lane(&ctx, &conn, &path, head, &queue, &opened).await;
    if let Err((e, unwritten, unconfirmed)) = outcome {
        tracing::debug!(%path, error = %e, "lane ended");
        // Set before the queue closes: a sender that finds it closed finds why.
        *state.failed.lock().unwrap() = Some(e);
        state.failing.store(true, Ordering::Release);
        // Frames still queued are lost with the lane, as unfinished streams would be; so may
        // be the written ones the peer's transport may not hold: they move from sent to lost.
        let lost = unwritten + unconfirmed + queue.close();
        ctx.stats
            .lane_messages_sent
            .fetch_sub(unconfirmed, Ordering::Relaxed);
        ctx.stats
            .lane_messages_lost
            .fetch_add(lost, Ordering::Relaxed);
    } else {
        queue.close();
    }
    state.done.store(true, Ordering::Release);
    state.ended.notify_waiters();
}

/// The frames written on a lane that its peer's transport may not hold yet. quinn does not say
/// how much of a stream the peer acknowledged, but it never holds more than `send_window`
/// bytes unacknowledged on a connection (quinn-proto's write limit): so every frame that ends
/// at least `send_window` bytes before the lane's written end was acknowledged, and the
/// frames after that point are an upper bound on what the peer's transport lacks. Over AF_UNIX
/// and in process a written frame is counted as the peer's, as before (their buffers are the
/// kernel's and the peer's own).
struct Unconfirmed {
    /// `Limits::send_window` over QUIC; None elsewhere.
    window: Option<u64>,
    /// The end offset and frame count of each write not yet proven acknowledged.
    writes: VecDeque<(u64, u64)>,
    frames: u64,
    offset: u64,
}

impl Unconfirmed {
    fn new(send: &SendHalf, window: u64) -> Self {
        Self {
            window: matches!(send, SendHalf::Quic(_)).then_some(window),
            writes: VecDeque::new(),
            frames: 0,
            offset: 0,
        }
    }

    fn written(&mut self, bytes: u64, frames: u64) {
        self.offset += bytes;
        let Some(window) = self.window else { return };
        self.writes.push_back((self.offset, frames));
        self.frames += frames;
        let proven = self.offset.saturating_sub(window);
        while let Some(&(end, n)) = self.writes.front() {
            if end > proven {
                break;
            }
            self.writes.pop_front();
            self.frames -= n;
        }
    }
}

/// Writes the lane until every sender is gone, then finishes it. On failure returns the error,
/// how many frames the failed write held (a queueful, some of which may have gone out: counted
/// lost), and how many written ones the peer's transport may not hold (`Unconfirmed`).
async fn write_lane(
    ctx: &Context,
    conn: &Conn,
    path: &str,
    head: Bytes,
    queue: &FrameQueue,
    opened: &AtomicU64,
) -> std::result::Result<(), (Error, u64, u64)> {
    let mut taken = VecDeque::new();
    // No stream until there is something to send.
    if !queue.take(&mut taken).await {
        return Ok(());
    }
    let mut send: SendHalf = conn
        .open_uni()
        .await
        .map_err(|e| (e, taken.len() as u64, 0))?;
    ctx.stats.streams_opened.fetch_add(1, Ordering::Relaxed);
    opened.fetch_add(1, Ordering::AcqRel);
    let mut unconfirmed = Unconfirmed::new(&send, ctx.limits.send_window);
    let mut prefix = head;
    let mut written = 0u64;
    // A QUIC lane waiting for frames learns of its connection's loss at once, so what it wrote
    // and the peer may lack is counted when the loss is, not at the next send (which may
    // never come: the redial's outbox takes the sends after it). Polled only while the queue
    // is empty (`biased`).
    let quic = unconfirmed.window.is_some();
    let closed = async {
        match quic {
            true => conn.closed().await,
            false => std::future::pending().await,
        }
    };
    tokio::pin!(closed);
    loop {
        // Everything taken (never nothing), as one write, which the queue's bounds bound: a
        // queueful of 64-byte frames was eight writes, and over AF_UNIX eight chunks of about
        // 9 KiB, each copied once more (PERFORMANCE.md, "One write a queueful"). Its blocks
        // live until it is written: a queueful's copies, where it was one write's.
        let mut batch = Batch::new(std::mem::take(&mut prefix));
        for f in taken.drain(..) {
            batch.push(f);
        }
        let (frames, bytes, body_bytes) =
            (batch.frames as u64, batch.bytes as u64, batch.body_bytes);
        let mut bufs = batch.finish();
        if let Err(e) = send.write_all(&mut bufs).await {
            return Err((e.into_write_error(path), frames, unconfirmed.frames));
        }
        unconfirmed.written(bytes, frames);
        ctx.stats.add_sent(body_bytes);
        ctx.stats
            .lane_messages_sent
            .fetch_add(frames, Ordering::Relaxed);
        written += frames;
        let more = tokio::select! {
            biased;
            more = queue.take(&mut taken) => more,
            cause = &mut closed => {
                return Err((Error::ConnectionLost(cause), 0, unconfirmed.frames));
            }
        };
        if !more {
            break;
        }
    }
    match send.finish().await {
        Ok(receipt) => {
            ctx.receipts.park_many(receipt, written);
            Ok(())
        }
        Err(e) => Err((e.into_write_error(path), 0, unconfirmed.frames)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use bytes::Bytes;

    use super::{FrameHead, FrameQueueState, QUEUE_BYTES, QUEUE_FRAMES};

    /// How many bodies of `len` bytes an empty queue takes before it is full.
    fn room_for(st: &mut FrameQueueState, len: usize) -> usize {
        let body = Bytes::from(vec![7u8; len]);
        let mut n = 0;
        while st.push(FrameHead::plain(len), body.clone()).is_ok() {
            n += 1;
        }
        n
    }

    #[test]
    fn a_lane_queue_is_bounded_in_frames_and_in_bytes() {
        let mut st = FrameQueueState::default();
        // Small bodies: the frame bound.
        assert_eq!(room_for(&mut st, 64), QUEUE_FRAMES);
        let mut taken = VecDeque::new();
        assert!(st.take(&mut taken), "a full queue wakes waiting senders");
        assert_eq!(taken.len(), QUEUE_FRAMES);
        // 16 KiB bodies: the byte bound, heads counted, 16 frames; the last one goes past it,
        // and no further.
        for len in [16 * 1024, 3000] {
            st.take(&mut VecDeque::new());
            let frame = FrameHead::plain(len).as_slice().len() + len;
            assert_eq!(room_for(&mut st, len), QUEUE_BYTES.div_ceil(frame), "{len}");
            assert!(st.bytes >= QUEUE_BYTES && st.bytes < QUEUE_BYTES + frame);
        }
        // Heads count: 16 heads of 16 KiB of metadata and no body fill it as well.
        st.take(&mut VecDeque::new());
        let mut n = 0;
        while st
            .push(FrameHead::Encoded(vec![1; 16 * 1024]), Bytes::new())
            .is_ok()
        {
            n += 1;
        }
        assert_eq!(n, 16);
        // A body larger than the bound goes alone into an empty queue.
        st.take(&mut VecDeque::new());
        assert_eq!(room_for(&mut st, QUEUE_BYTES + 1), 1);
        // A queue taken before it filled has no sender waiting.
        st.take(&mut VecDeque::new());
        assert_eq!(
            st.push(FrameHead::plain(3), Bytes::from_static(b"abc"))
                .ok(),
            Some(true)
        );
        assert_eq!(
            st.push(FrameHead::plain(3), Bytes::from_static(b"def"))
                .ok(),
            Some(false)
        );
        assert!(!st.take(&mut VecDeque::new()));
        assert_eq!(st.bytes, 0);
    }

    #[test]
    fn a_batch_cuts_blocks_at_128_frames_or_256_kib_and_keeps_large_bodies_uncopied() {
        let mut batch = super::Batch::new(Bytes::from_static(b"HEAD"));
        let head = FrameHead::plain(64);
        for _ in 0..QUEUE_FRAMES {
            batch.push_parts(head.as_slice(), Bytes::from(vec![7u8; 64]));
        }
        let big = Bytes::from(vec![9u8; super::COPY_BELOW]);
        batch.push_parts(FrameHead::plain(big.len()).as_slice(), big.clone());
        assert_eq!(batch.frames, QUEUE_FRAMES + 1);
        let bufs = batch.finish();
        // Eight blocks of 128 frames (the lane's head first in the first), the large body's
        // head in a ninth, and the large body as it was queued, not a copy.
        let frame = head.as_slice().len() + 64;
        assert_eq!(bufs.len(), QUEUE_FRAMES / 128 + 2);
        assert!(bufs[0].starts_with(b"HEAD"));
        assert_eq!(bufs[0].len(), 4 + 128 * frame);
        assert!(bufs[1..8].iter().all(|b| b.len() == 128 * frame));
        assert_eq!(&bufs[8][..], FrameHead::plain(big.len()).as_slice());
        assert_eq!(bufs[9].as_ptr(), big.as_ptr());
        // Frames of 3000 bytes: a block ends at the first frame that takes it to 256 KiB (88
        // of them), never inside a frame.
        let mut batch = super::Batch::new(Bytes::new());
        let head = FrameHead::plain(3000);
        let frame = head.as_slice().len() + 3000;
        for _ in 0..100 {
            batch.push_parts(head.as_slice(), Bytes::from(vec![1u8; 3000]));
        }
        let bufs = batch.finish();
        let first = super::BLOCK_BYTES.div_ceil(frame);
        assert_eq!(first, 88);
        assert_eq!(
            bufs.iter().map(|b| b.len()).collect::<Vec<_>>(),
            [first * frame, (100 - first) * frame]
        );
    }

    #[test]
    fn a_plain_head_is_what_the_codec_writes_for_an_empty_header() {
        for len in [0usize, 5, 63, 64, 16_383, 16_384, 1 << 30] {
            let mut enc = Vec::new();
            crate::wire::lane_frame::encode_frame_head(
                &crate::wire::Header::default(),
                len,
                &mut enc,
            );
            assert_eq!(FrameHead::plain(len).as_slice(), &enc[..], "{len}");
        }
    }
}
