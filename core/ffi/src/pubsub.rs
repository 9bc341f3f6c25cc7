//! The core's `patterns::pubsub` handles a binding wraps beyond the endpoints: [`FanOut`], a
//! message streamed to many subscribers, with the same rules as a transfer's
//! ([`crate::stream`]): a write whose caller cancels cancels the message (no subscriber can
//! then get a payload with a chunk missing), `cancel()` interrupts a pending write, and used
//! after `finish`/`cancel` it is `Closed`/`Canceled`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::Notify;
use weida::Error;

use crate::call::Call;
use crate::error::Fail;
use crate::io::{on_io, OnIo};

/// Where a fan-out is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Finished,
    Canceled,
}

struct Slot {
    state: State,
    /// None while open: a write holds it.
    f: Option<weida::FanOut>,
}

/// A message streamed chunk by chunk to every subscriber `Publisher::open` matched. The state
/// and the core handle change together under one (never awaited) lock, so a cancel racing a
/// write that completes cannot leave the message open.
pub struct FanOut {
    slot: OnIo<Mutex<Slot>>,
    /// Writes take their turn (the core's `write` takes `&mut`).
    turn: tokio::sync::Mutex<()>,
    /// The copies attached after the last operation (the core's count changes only in one).
    copies: AtomicUsize,
    cancel: Notify,
}

fn gone(state: State) -> Fail {
    match state {
        State::Canceled => Fail::Core(Error::Canceled),
        _ => Fail::Core(Error::Closed),
    }
}

/// The handle a write holds. Dropped without `put_back` (the write was interrupted, or its
/// caller cancelled it), it cancels the message.
struct Held<'a> {
    fan: &'a FanOut,
    f: Option<weida::FanOut>,
}

impl Held<'_> {
    fn put_back(mut self) {
        let f = self.f.take();
        let mut s = self.fan.lock();
        if s.state == State::Open {
            s.f = f;
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.f.take() {
            self.fan.lock().state = State::Canceled;
            self.fan.copies.store(0, Ordering::Release);
            on_io(|| drop(f));
        }
    }
}

impl FanOut {
    /// Wraps an open fan-out.
    pub fn new(f: weida::FanOut) -> Arc<FanOut> {
        Arc::new(FanOut {
            copies: AtomicUsize::new(f.copies()),
            slot: OnIo::new(Mutex::new(Slot {
                state: State::Open,
                f: Some(f),
            })),
            turn: tokio::sync::Mutex::new(()),
            cancel: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Copies still attached (not dropped); after `finish`, those it was finished for; after
    /// `cancel`, 0.
    pub fn copies(&self) -> usize {
        self.copies.load(Ordering::Acquire)
    }

    /// Neither finished nor cancelled.
    pub fn is_open(&self) -> bool {
        self.lock().state == State::Open
    }

    /// Resolves once the message was cancelled.
    async fn canceled(&self) {
        loop {
            let n = self.cancel.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.lock().state == State::Canceled {
                return;
            }
            n.await;
        }
    }

    /// Hands `chunk` to every attached copy, first waiting up to `Limits::fanout_wait` for
    /// the copies with no room for it (those still full then are dropped); the copies still
    /// attached. `cancel()` interrupts it (`Canceled`).
    pub async fn write(self: Arc<Self>, chunk: Bytes) -> Result<usize, Fail> {
        let _turn = self.turn.lock().await;
        let mut held = {
            let mut s = self.lock();
            match (s.state, s.f.take()) {
                (State::Open, Some(f)) => Held {
                    fan: &self,
                    f: Some(f),
                },
                // Writes take turns, so only a cancel can have emptied an open slot.
                (state, _) => return Err(gone(state)),
            }
        };
        let f = held.f.as_mut().expect("held");
        let r = tokio::select! {
            biased;
            // Dropping `held` cancels every copy.
            () = self.canceled() => return Err(Fail::Core(Error::Canceled)),
            r = f.write(chunk) => r,
        };
        held.put_back();
        let n = r?;
        self.copies.store(n, Ordering::Release);
        Ok(n)
    }

    /// A call of `write`: its caller cancelling it cancels the message at once, as `cancel()`
    /// does, even if the write completed meanwhile.
    pub fn write_call(self: &Arc<Self>, chunk: Bytes) -> Call<usize> {
        let f = Arc::clone(self);
        Call::new(Arc::clone(self).write(chunk)).cancelling(move || f.cancel())
    }

    /// Runs a synchronous operation on the open fan-out: [`Fail::Busy`] while a write holds
    /// it.
    fn now<T>(&self, op: impl FnOnce(&mut Slot) -> weida::Result<T>) -> Result<T, Fail> {
        let mut s = self.lock();
        match (s.state, s.f.is_some()) {
            (State::Open, true) => on_io(|| op(&mut s)).map_err(Fail::from),
            (State::Open, false) => Err(Fail::Busy),
            (state, _) => Err(gone(state)),
        }
    }

    /// Hands `chunk` to every attached copy without waiting (a copy with no room is dropped);
    /// the copies still attached.
    pub fn write_now(&self, chunk: Bytes) -> Result<usize, Fail> {
        let n = self.now(|s| s.f.as_mut().expect("open").write_now(chunk))?;
        self.copies.store(n, Ordering::Release);
        Ok(n)
    }

    /// Ends the message for every attached copy; how many were still attached.
    pub fn finish(&self) -> Result<usize, Fail> {
        let n = self.now(|s| {
            let n = s.f.take().expect("open").finish();
            s.state = State::Finished;
            Ok(n)
        })?;
        self.copies.store(n, Ordering::Release);
        Ok(n)
    }

    /// Cancels every copy: subscribers discard what they received of it. Interrupts a pending
    /// write. Nothing once finished.
    pub fn cancel(&self) {
        let f = {
            let mut s = self.lock();
            if s.state != State::Open {
                return;
            }
            s.state = State::Canceled;
            s.f.take()
        };
        self.copies.store(0, Ordering::Release);
        self.cancel.notify_waiters();
        on_io(|| drop(f));
    }
}
