//! The sending end of a message lane (docs/decisions/0001-message-lanes.md, PROTOCOL.md §4.1):
//! whole small messages queued by `send`, written as frames on one long-lived stream by a
//! writer task that coalesces whatever is queued into one write. No timer: a lone message goes
//! out at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::error::{Error, LossCause, Result};
use crate::runtime::Shared;
use crate::transport::{Conn, SendHalf};

/// Frames a lane queues before `send` waits: backpressure, as a stream slot was.
const QUEUE: usize = 256;
/// What one coalesced write carries at most.
const BATCH_BYTES: usize = 256 * 1024;
const BATCH_FRAMES: usize = 128;

struct Frame {
    head: Bytes,
    body: Bytes,
}

/// What a lane's writer reports to its senders.
#[derive(Default)]
struct LaneState {
    /// Why the lane ended early (a refusal, a loss), until a sender takes it.
    failed: Mutex<Option<Error>>,
    ended: tokio::sync::Notify,
    done: std::sync::atomic::AtomicBool,
}

/// A lane toward one path of one connection. Cheap to clone; the writer ends (finishing the
/// stream) once every clone is dropped and what was queued is written.
#[derive(Clone)]
pub(crate) struct Lane {
    tx: mpsc::Sender<Frame>,
    state: Arc<LaneState>,
}

impl Lane {
    /// Starts a lane whose stream is opened on `conn` with `head` (`03` and the path header)
    /// when its first frame is queued. `opened` counts the stream for GOAWAY.
    pub(crate) fn start(
        shared: Arc<Shared>,
        conn: Conn,
        path: Arc<str>,
        head: Bytes,
        opened: Arc<AtomicU64>,
    ) -> Lane {
        let (tx, rx) = mpsc::channel(QUEUE);
        let state = Arc::new(LaneState::default());
        tokio::spawn(writer(shared, conn, path, head, rx, state.clone(), opened));
        Lane { tx, state }
    }

    pub(crate) fn same(&self, other: &Lane) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }

    /// The failure the writer met, once: the sender that takes it reports it, and the next
    /// one opens a new lane.
    pub(crate) fn take_failure(&self) -> Option<Error> {
        self.state.failed.lock().unwrap().take()
    }

    /// Queues a frame (its header bytes and its body): waits while the lane's queue is full.
    /// Cancel-safe: a cancelled send queued nothing.
    pub(crate) async fn send(&self, head: Bytes, body: Bytes) -> Result<()> {
        self.tx.send(Frame { head, body }).await.map_err(|_| {
            self.take_failure()
                .unwrap_or(Error::ConnectionLost(LossCause::PeerClosed))
        })
    }

    /// Waits until the writer has written everything queued and finished the stream (or
    /// failed). The caller must have dropped every other clone.
    pub(crate) async fn close(self) {
        let state = self.state.clone();
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

async fn writer(
    shared: Arc<Shared>,
    conn: Conn,
    path: Arc<str>,
    head: Bytes,
    mut rx: mpsc::Receiver<Frame>,
    state: Arc<LaneState>,
    opened: Arc<AtomicU64>,
) {
    let outcome = write_lane(&shared, &conn, &path, head, &mut rx, &opened).await;
    if let Err((e, lost)) = outcome {
        // Frames still queued are lost with the lane, as unfinished streams would be.
        let mut lost = lost;
        rx.close();
        while rx.try_recv().is_ok() {
            lost += 1;
        }
        shared
            .stats
            .lane_messages_lost
            .fetch_add(lost, Ordering::Relaxed);
        tracing::debug!(%path, error = %e, lost, "lane ended");
        *state.failed.lock().unwrap() = Some(e);
    }
    state.done.store(true, Ordering::Release);
    state.ended.notify_waiters();
}

/// Writes the lane until every sender is gone, then finishes it. On failure returns the error
/// and how many frames were handed to the failed write.
async fn write_lane(
    shared: &Shared,
    conn: &Conn,
    path: &str,
    head: Bytes,
    rx: &mut mpsc::Receiver<Frame>,
    opened: &AtomicU64,
) -> std::result::Result<(), (Error, u64)> {
    // No stream until there is something to send.
    let Some(first) = rx.recv().await else {
        return Ok(());
    };
    let mut send: SendHalf = conn.open_uni().await.map_err(|e| (e, 1))?;
    shared.stats.streams_opened.fetch_add(1, Ordering::Relaxed);
    opened.fetch_add(1, Ordering::AcqRel);
    let mut body_bytes = first.body.len() as u64;
    let mut bufs = vec![head, first.head, first.body];
    let mut frames = 1u64;
    let mut written = 0u64;
    loop {
        let mut bytes: usize = bufs.iter().map(Bytes::len).sum();
        while (frames as usize) < BATCH_FRAMES && bytes < BATCH_BYTES {
            match rx.try_recv() {
                Ok(f) => {
                    bytes += f.head.len() + f.body.len();
                    body_bytes += f.body.len() as u64;
                    bufs.push(f.head);
                    bufs.push(f.body);
                    frames += 1;
                }
                Err(_) => break,
            }
        }
        if let Err(e) = send.write_all(&mut bufs).await {
            return Err((e.into_write_error(path), frames));
        }
        shared.stats.add_sent(body_bytes);
        shared
            .stats
            .lane_messages_sent
            .fetch_add(frames, Ordering::Relaxed);
        written += frames;
        bufs.clear();
        match rx.recv().await {
            Some(f) => {
                body_bytes = f.body.len() as u64;
                bufs.push(f.head);
                bufs.push(f.body);
                frames = 1;
            }
            None => break,
        }
    }
    match send.finish().await {
        Ok(receipt) => {
            shared.receipts.park_many(receipt, written);
            Ok(())
        }
        Err(e) => Err((e.into_write_error(path), 0)),
    }
}
