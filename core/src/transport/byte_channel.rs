//! A byte channel: one direction of an in-process stream, and the receive side of a local
//! socket stream. A bounded queue of `Bytes` with FIN, RESET and STOP, so that a cancelled or
//! dropped writer is never read as a complete payload (PATTERNS §1.5, §1.10). (Not the
//! `weida+pipe://` scheme, which names Windows named pipes.)

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{Notify, OwnedSemaphorePermit};

use super::{Life, StreamError};
use crate::wire::Code;

struct State {
    queue: VecDeque<Bytes>,
    queued: usize,
    // Bytes the reader has taken, ever: a write past the window is done once this reaches its
    // mark, whatever happened after (a stop, a loss), and never by bytes discarded.
    read: u64,
    fin: bool,
    reset: Option<Code>,
    // The writer's side died with its connection (not a deliberate reset): the reader reports
    // the loss, so a requester can tell Indeterminate from Canceled.
    lost: Option<crate::error::LossCause>,
    stop: Option<Code>,
    writer_gone: bool,
}

/// What the two ends of one channel share.
struct Channel {
    state: Mutex<State>,
    window: usize,
    // One reader and one writer: notify_one keeps a permit, so no wake-up can be missed.
    readable: Notify,
    writable: Notify,
    // The connection as each end sees it: when it dies, a waiting end learns why (the two ends
    // of one in-process connection name the same death differently: locally vs peer closed).
    writer_life: Option<Arc<Life>>,
    reader_life: Option<Arc<Life>>,
    // The stream budget slot this stream holds until both halves are gone (PATTERNS §1.4).
    _permit: Option<Arc<OwnedSemaphorePermit>>,
}

/// The writing end.
pub(crate) struct Writer {
    shared: Arc<Channel>,
    done: bool,
}

/// The reading end.
pub(crate) struct Reader {
    shared: Arc<Channel>,
}

/// A new byte channel whose writer may run `window` bytes ahead of its reader.
pub(crate) fn byte_channel(
    window: usize,
    writer_life: Option<Arc<Life>>,
    reader_life: Option<Arc<Life>>,
    permit: Option<Arc<OwnedSemaphorePermit>>,
) -> (Writer, Reader) {
    let shared = Arc::new(Channel {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            queued: 0,
            read: 0,
            fin: false,
            reset: None,
            lost: None,
            stop: None,
            writer_gone: false,
        }),
        window: window.max(1),
        readable: Notify::new(),
        writable: Notify::new(),
        writer_life,
        reader_life,
        _permit: permit,
    });
    (
        Writer {
            shared: shared.clone(),
            done: false,
        },
        Reader { shared },
    )
}

fn lost(life: &Option<Arc<Life>>) -> Option<crate::error::LossCause> {
    life.as_ref().and_then(|l| l.cause())
}

impl Channel {
    async fn wait(&self, n: &Notify, life: &Option<Arc<Life>>) {
        match life {
            Some(life) => {
                tokio::select! {
                    _ = n.notified() => {}
                    _ = life.dead() => {}
                }
            }
            None => n.notified().await,
        }
    }
}

impl Writer {
    /// Queues `b`, waiting while the reader is a window behind. A chunk larger than the window
    /// is queued whole once the queue is empty, so that its reader takes it without a copy,
    /// and the write returns only once the reader has read it down to the window: as over
    /// QUIC, a write does not return while more than a window of it is unread, so a reader
    /// that refuses the stream at its header is seen by a writer whose payload passes the
    /// window (PATTERNS §1.6), whatever the threads' timing. Once read that far it has
    /// succeeded, even if the reader stops or the connection dies before this task runs again.
    pub(crate) async fn write(&mut self, b: Bytes) -> Result<(), StreamError> {
        if b.is_empty() {
            return Ok(());
        }
        let mut b = Some(b);
        // Past the window: done when the reader has read this many bytes in all.
        let mut mark = None;
        loop {
            {
                let mut st = self.shared.state.lock().unwrap();
                if mark.is_some_and(|m| st.read >= m) {
                    return Ok(());
                }
                if let Some(code) = st.stop {
                    return Err(StreamError::Stopped(code));
                }
                if let Some(cause) = lost(&self.shared.writer_life) {
                    return Err(StreamError::Lost(cause));
                }
                if let Some(c) = b.take() {
                    if st.queued == 0 || st.queued + c.len() <= self.shared.window {
                        st.queued += c.len();
                        st.queue.push_back(c);
                        let over = st.queued.saturating_sub(self.shared.window);
                        mark = Some(st.read + over as u64);
                        drop(st);
                        self.shared.readable.notify_one();
                        if over == 0 {
                            return Ok(());
                        }
                        // The reader may have read it already: looked at on the next turn.
                        continue;
                    }
                    b = Some(c);
                }
            }
            self.shared
                .wait(&self.shared.writable, &self.shared.writer_life)
                .await;
        }
    }

    /// Marks the end of the stream. Returns the stop code if the reader already stopped it.
    pub(crate) fn finish(&mut self) -> Result<(), StreamError> {
        let mut st = self.shared.state.lock().unwrap();
        self.done = true;
        if let Some(code) = st.stop {
            return Err(StreamError::Stopped(code));
        }
        if let Some(cause) = lost(&self.shared.writer_life) {
            return Err(StreamError::Lost(cause));
        }
        st.fin = true;
        drop(st);
        self.shared.readable.notify_one();
        Ok(())
    }

    /// Abandons the stream with `code`: queued bytes are discarded, the reader sees the reset.
    pub(crate) fn reset(&mut self, code: Code) {
        let mut st = self.shared.state.lock().unwrap();
        self.done = true;
        if st.fin {
            return;
        }
        // On a dead connection a reset carries nothing: the reader learns the loss, as it
        // would over QUIC, where a connection's end ends every stream on it.
        if let Some(cause) = lost(&self.shared.reader_life) {
            st.lost = Some(cause);
            drop(st);
            self.shared.readable.notify_one();
            return;
        }
        st.reset = Some(code);
        st.queue.clear();
        st.queued = 0;
        drop(st);
        self.shared.readable.notify_one();
    }

    /// Resolves when the reader stops the stream (with its code) or the connection dies.
    pub(crate) async fn stopped(&self) -> Result<Code, StreamError> {
        loop {
            {
                let st = self.shared.state.lock().unwrap();
                if let Some(code) = st.stop {
                    return Ok(code);
                }
                if let Some(cause) = lost(&self.shared.writer_life) {
                    return Err(StreamError::Lost(cause));
                }
            }
            self.shared
                .wait(&self.shared.writable, &self.shared.writer_life)
                .await;
        }
    }
}

impl Writer {
    /// Ends the stream as lost with its connection (a socket that closed without FIN).
    pub(crate) fn lose(&mut self, cause: crate::error::LossCause) {
        let mut st = self.shared.state.lock().unwrap();
        self.done = true;
        if st.fin || st.reset.is_some() {
            return;
        }
        st.lost = Some(cause);
        drop(st);
        self.shared.readable.notify_one();
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let mut st = self.shared.state.lock().unwrap();
        st.writer_gone = true;
        if !self.done && !st.fin && st.reset.is_none() {
            // Dropped with its connection dead: a loss. Dropped otherwise: a cancellation.
            match lost(&self.shared.reader_life) {
                Some(cause) => st.lost = Some(cause),
                None => {
                    st.reset = Some(Code::Canceled);
                    st.queue.clear();
                    st.queued = 0;
                }
            }
        }
        drop(st);
        self.shared.readable.notify_one();
    }
}

impl Reader {
    /// The next chunk of at most `max` bytes; `Ok(None)` only after the writer's FIN.
    pub(crate) async fn read_chunk(&mut self, max: usize) -> Result<Option<Bytes>, StreamError> {
        loop {
            {
                let mut st = self.shared.state.lock().unwrap();
                if let Some(code) = st.reset {
                    return Err(StreamError::Reset(code));
                }
                if let Some(cause) = &st.lost {
                    return Err(StreamError::Lost(cause.clone()));
                }
                if let Some(front) = st.queue.front_mut() {
                    let b = if front.len() > max {
                        front.split_to(max)
                    } else {
                        st.queue.pop_front().unwrap()
                    };
                    st.queued -= b.len();
                    st.read += b.len() as u64;
                    drop(st);
                    self.shared.writable.notify_one();
                    return Ok(Some(b));
                }
                if st.fin {
                    return Ok(None);
                }
                if st.writer_gone {
                    return Err(StreamError::Reset(Code::Canceled));
                }
                if let Some(code) = st.stop {
                    return Err(StreamError::Stopped(code));
                }
                if let Some(cause) = lost(&self.shared.reader_life) {
                    return Err(StreamError::Lost(cause));
                }
            }
            self.shared
                .wait(&self.shared.readable, &self.shared.reader_life)
                .await;
        }
    }

    /// Asks the writer to stop with `code`; unread bytes are discarded.
    pub(crate) fn stop(&mut self, code: Code) {
        let mut st = self.shared.state.lock().unwrap();
        if st.fin && st.queue.is_empty() {
            return;
        }
        // On a dead connection a stop carries nothing: the writer learns the loss, as it would
        // over QUIC, where a connection's end ends every stream on it.
        if lost(&self.shared.reader_life).is_none() {
            st.stop.get_or_insert(code);
        }
        st.queue.clear();
        st.queued = 0;
        drop(st);
        self.shared.writable.notify_one();
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // A reader that walks away stops the writer, as QUIC's STOP_SENDING(0) does.
        self.stop(Code::NoError);
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::Poll;

    use super::*;

    fn poll_once<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        let waker = std::task::Waker::noop();
        f.poll(&mut std::task::Context::from_waker(waker))
    }

    #[tokio::test]
    async fn a_chunk_past_the_window_is_written_only_once_the_reader_takes_it() {
        let (mut w, mut r) = byte_channel(8, None, None, None);
        let mut write = pin!(w.write(Bytes::from(vec![7u8; 20])));
        assert!(
            poll_once(write.as_mut()).is_pending(),
            "returned before the reader read"
        );
        // The reader takes it whole (no copy), and the write is done.
        assert_eq!(r.read_chunk(usize::MAX).await.unwrap().unwrap().len(), 20);
        write.await.unwrap();
    }

    #[tokio::test]
    async fn a_reader_that_stops_fails_a_write_past_the_window_however_late_it_stops() {
        let (mut w, mut r) = byte_channel(8, None, None, None);
        w.write(Bytes::from_static(b"head")).await.unwrap();
        // The reader reads the header, then takes its time to refuse the stream: the body,
        // past the window, is not written meanwhile.
        assert_eq!(
            &r.read_chunk(usize::MAX).await.unwrap().unwrap()[..],
            b"head"
        );
        let mut write = pin!(w.write(Bytes::from(vec![7u8; 20])));
        assert!(poll_once(write.as_mut()).is_pending());
        r.stop(Code::UnknownEndpoint);
        assert!(matches!(
            write.await,
            Err(StreamError::Stopped(Code::UnknownEndpoint))
        ));
    }

    #[tokio::test]
    async fn a_write_past_the_window_read_whole_has_succeeded_though_the_reader_then_stops() {
        let (mut w, mut r) = byte_channel(8, None, None, None);
        let mut write = pin!(w.write(Bytes::from(vec![7u8; 20])));
        assert!(poll_once(write.as_mut()).is_pending());
        // The reader takes it all, then walks away, before the writer runs again: delivered.
        assert_eq!(r.read_chunk(usize::MAX).await.unwrap().unwrap().len(), 20);
        r.stop(Code::NoError);
        write.await.unwrap();
    }

    #[tokio::test]
    async fn a_partial_read_frees_a_write_past_the_window_once_it_is_within() {
        let (mut w, mut r) = byte_channel(8, None, None, None);
        let mut write = pin!(w.write(Bytes::from(vec![7u8; 20])));
        assert!(poll_once(write.as_mut()).is_pending());
        assert_eq!(r.read_chunk(10).await.unwrap().unwrap().len(), 10);
        assert!(
            poll_once(write.as_mut()).is_pending(),
            "10 left, past a window of 8"
        );
        assert_eq!(r.read_chunk(2).await.unwrap().unwrap().len(), 2);
        write.await.unwrap();
    }
}
