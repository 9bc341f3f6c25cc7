//! The core's `patterns::pubsub` handles a binding wraps beyond the endpoints: [`FanOut`], a
//! message streamed to many subscribers, with the same rules as a transfer's
//! ([`crate::stream`]): a write whose caller cancels cancels the message (no subscriber can
//! then get a payload with a chunk missing), `cancel()` interrupts a pending write, and used
//! after `finish`/`cancel` it is `Closed`/`Canceled`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use weida::Error;

use crate::call::Call;
use crate::error::Fail;
use crate::io::{on_io, OnIo};

/// A message streamed chunk by chunk to every subscriber `Publisher::open` matched. The race
/// of a cancel with a write is the core's ([`weida::Canceler`]).
pub struct FanOut {
    /// Writes take turns (the core's `write` takes `&mut`); empty once finished.
    f: OnIo<tokio::sync::Mutex<Option<weida::FanOut>>>,
    canceler: weida::Canceler,
    finished: AtomicBool,
    /// The copies attached after the last operation (the core's count is behind the lock a
    /// write holds).
    copies: AtomicUsize,
}

impl FanOut {
    /// Wraps an open fan-out.
    pub fn new(mut f: weida::FanOut) -> Arc<Self> {
        Arc::new(Self {
            copies: AtomicUsize::new(f.copies()),
            canceler: f.canceler(),
            f: OnIo::new(tokio::sync::Mutex::new(Some(f))),
            finished: AtomicBool::new(false),
        })
    }

    /// Why it is gone: `Canceled` after a cancel, `Closed` after `finish`.
    fn gone(&self) -> Fail {
        if self.canceler.is_canceled() {
            Fail::Core(Error::Canceled)
        } else {
            Fail::Core(Error::Closed)
        }
    }

    /// Copies still attached (not dropped); after `finish`, those it was finished for; after
    /// `cancel`, 0.
    pub fn copies(&self) -> usize {
        if self.canceler.is_canceled() {
            return 0;
        }
        self.copies.load(Ordering::Acquire)
    }

    /// Neither finished nor cancelled.
    pub fn is_open(&self) -> bool {
        !self.finished.load(Ordering::Acquire) && !self.canceler.is_canceled()
    }

    /// Hands `chunk` to every attached copy, first waiting up to `Limits::fanout_wait` for
    /// the copies with no room for it (those still full then are dropped); the copies still
    /// attached. `cancel()` interrupts it (`Canceled`).
    pub async fn write(self: Arc<Self>, chunk: Bytes) -> Result<usize, Fail> {
        let mut slot = self.f.lock().await;
        let f = slot.as_mut().ok_or_else(|| self.gone())?;
        let n = f.write(chunk).await?;
        self.copies.store(n, Ordering::Release);
        Ok(n)
    }

    /// A call of `write`: its caller cancelling it cancels the message at once, as `cancel()`
    /// does, even if the write completed meanwhile.
    pub fn write_call(self: &Arc<Self>, chunk: Bytes) -> Call<usize> {
        let c = self.canceler.clone();
        Call::new(Arc::clone(self).write(chunk)).cancelling(move || {
            c.cancel();
        })
    }

    /// Runs a synchronous operation on the open fan-out: [`Fail::Busy`] while a write holds
    /// it.
    fn now<T>(
        &self,
        op: impl FnOnce(&mut Option<weida::FanOut>) -> weida::Result<T>,
    ) -> Result<T, Fail> {
        let Ok(mut slot) = self.f.try_lock() else {
            return Err(Fail::Busy);
        };
        if slot.is_none() {
            return Err(self.gone());
        }
        on_io(|| op(&mut slot)).map_err(Fail::from)
    }

    /// Hands `chunk` to every attached copy without waiting (a copy with no room is dropped);
    /// the copies still attached.
    pub fn write_now(&self, chunk: Bytes) -> Result<usize, Fail> {
        let n = self.now(|f| f.as_mut().expect("open").write_now(chunk))?;
        self.copies.store(n, Ordering::Release);
        Ok(n)
    }

    /// Ends the message for every attached copy; how many were still attached (a cancelled
    /// message is `Canceled`).
    pub fn finish(&self) -> Result<usize, Fail> {
        if self.canceler.is_canceled() {
            return Err(Fail::Core(Error::Canceled));
        }
        let n = self.now(|f| Ok(f.take().expect("open").finish()))?;
        self.finished.store(true, Ordering::Release);
        self.copies.store(n, Ordering::Release);
        Ok(n)
    }

    /// Cancels every copy: subscribers discard what they received of it. Interrupts a pending
    /// write. Nothing once finished.
    pub fn cancel(&self) {
        self.canceler.cancel();
    }
}
