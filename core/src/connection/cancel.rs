//! The shareable cancel handle of a message being written ([`Canceler`]): what a binding, a
//! timer or another task holds to abandon an `OutgoingTransfer` or a `FanOut` that one task
//! writes. The race between a write that completes and a cancel is resolved here, once: a
//! cancel called before the write's outcome is taken wins (the write fails `Canceled`, the
//! reader sees `Canceled`), a cancel after the message was finished does nothing.
//!
//! It costs nothing until asked for: a handle without a canceler keeps its writer to itself.
//! With one, the writer (a stream's send half, or a fan-out's copies) is parked here whenever
//! no operation holds it, so a cancel of an idle message resets it at once, not when its owner
//! next calls.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::error::{Error, Result};

const OPEN: u8 = 0;
const FINISHED: u8 = 1;
const CANCELED: u8 = 2;

/// Abandons the message it was taken from, from any thread or task: the writer's pending or
/// next operation fails `Canceled`, and every reader sees `Canceled`, never a short payload.
/// Cloning it is cheap; every clone cancels the same message. A cancel after the message was
/// finished (or already cancelled) does nothing.
///
/// ```no_run
/// # async fn f(pusher: weida::Pusher, big: bytes::Bytes) -> weida::Result<()> {
/// let mut t = pusher.open(Default::default()).await?;
/// let canceler = t.canceler();
/// let writing = tokio::spawn(async move { t.write(big).await });
/// canceler.cancel(); // the write, waiting on a full window, fails Canceled
/// assert!(writing.await.unwrap().is_err());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Canceler(Arc<dyn Cancel>);

impl Canceler {
    /// Cancels the message; `true` if this call did (it was neither finished nor cancelled).
    pub fn cancel(&self) -> bool {
        self.0.cancel()
    }

    /// The message was cancelled (by a canceler, by its owner's `cancel`, or by being dropped
    /// unfinished).
    pub fn is_canceled(&self) -> bool {
        self.0.is_canceled()
    }
}

impl std::fmt::Debug for Canceler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Canceler")
            .field("canceled", &self.is_canceled())
            .finish()
    }
}

trait Cancel: Send + Sync {
    fn cancel(&self) -> bool;
    fn is_canceled(&self) -> bool;
}

/// The state a [`Canceler`] shares with the handle it cancels, and the writer `T` while no
/// operation holds it; `reset` abandons a writer.
pub(crate) struct Parked<T> {
    state: AtomicU8,
    wake: Notify,
    writer: Mutex<Option<T>>,
    reset: fn(T),
}

impl<T: Send + 'static> Parked<T> {
    pub(crate) fn new(writer: T, reset: fn(T)) -> Arc<Self> {
        Arc::new(Self {
            state: AtomicU8::new(OPEN),
            wake: Notify::new(),
            writer: Mutex::new(Some(writer)),
            reset,
        })
    }

    pub(crate) fn canceler(self: &Arc<Self>) -> Canceler {
        Canceler(Arc::clone(self) as Arc<dyn Cancel>)
    }

    fn lock(&self) -> MutexGuard<'_, Option<T>> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn is_canceled(&self) -> bool {
        self.state.load(Ordering::Acquire) == CANCELED
    }

    /// Takes the writer for an operation; `Canceled` once cancelled. The guard puts it back
    /// when dropped (the operation ended, or its future was dropped midway), and resets it
    /// then if a cancel came meanwhile.
    pub(crate) fn take(self: &Arc<Self>) -> Result<Held<T>> {
        match self.lock().take() {
            Some(w) => Ok(Held {
                parked: Arc::clone(self),
                writer: Some(w),
            }),
            // Only a cancel (or a finish, which consumes the owner) leaves it empty between
            // operations: the owner's operations take turns.
            None => Err(Error::Canceled),
        }
    }

    /// Runs `op` on the writer; a cancel meanwhile interrupts it (`Canceled`), and is checked
    /// first, so a cancel that came before the outcome was taken wins.
    pub(crate) async fn run<R>(
        self: &Arc<Self>,
        op: impl AsyncFnOnce(&mut T) -> Result<R>,
    ) -> Result<R> {
        let mut held = self.take()?;
        let writer = held.writer.as_mut().expect("held until dropped");
        tokio::select! {
            biased;
            () = self.canceled() => Err(Error::Canceled),
            r = op(writer) => if self.is_canceled() { Err(Error::Canceled) } else { r },
        }
    }

    /// Commits the message (its finish begins): the writer is the caller's, and a cancel from
    /// now on does nothing. `Canceled` if a cancel came first.
    pub(crate) fn finish(&self) -> Result<T> {
        if self
            .state
            .compare_exchange(OPEN, FINISHED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::Canceled);
        }
        Ok(self.lock().take().expect("parked between operations"))
    }

    /// Resolves once cancelled.
    pub(crate) async fn canceled(&self) {
        loop {
            let n = self.wake.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.is_canceled() {
                return;
            }
            n.await;
        }
    }
}

impl<T: Send + 'static> Cancel for Parked<T> {
    fn cancel(&self) -> bool {
        if self
            .state
            .compare_exchange(OPEN, CANCELED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        self.wake.notify_waiters();
        // Idle: reset now. Held by an operation: it resets the writer as it puts it back (the
        // state was set before this lock, and it reads the state under the lock).
        let idle = self.lock().take();
        if let Some(w) = idle {
            (self.reset)(w);
        }
        true
    }

    fn is_canceled(&self) -> bool {
        Self::is_canceled(self)
    }
}

/// The writer an operation holds; put back (or reset, once cancelled) when dropped.
pub(crate) struct Held<T: Send + 'static> {
    parked: Arc<Parked<T>>,
    writer: Option<T>,
}

impl<T: Send + 'static> Drop for Held<T> {
    fn drop(&mut self) {
        let Some(w) = self.writer.take() else { return };
        let mut slot = self.parked.lock();
        if self.parked.is_canceled() {
            drop(slot);
            (self.parked.reset)(w);
        } else {
            *slot = Some(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A writer that counts its resets.
    type Counted = Arc<AtomicUsize>;

    fn parked() -> (Arc<Parked<Counted>>, Counted) {
        let resets = Counted::default();
        let p = Parked::new(Arc::clone(&resets), |w: Counted| {
            w.fetch_add(1, Ordering::SeqCst);
        });
        (p, resets)
    }

    #[tokio::test]
    async fn a_cancel_resets_an_idle_writer_at_once_and_one_held_as_it_is_put_back() {
        let (idle, resets) = parked();
        assert!(idle.canceler().cancel());
        assert_eq!(resets.load(Ordering::SeqCst), 1, "idle: at once");
        assert!(!idle.canceler().cancel(), "a second cancel does nothing");
        assert!(matches!(idle.take(), Err(Error::Canceled)));

        let (held, resets) = parked();
        let guard = held.take().unwrap();
        assert!(held.canceler().cancel());
        assert_eq!(resets.load(Ordering::SeqCst), 0, "held: not yet");
        drop(guard);
        assert_eq!(resets.load(Ordering::SeqCst), 1, "as it is put back");
    }

    #[tokio::test]
    async fn a_cancel_interrupts_a_running_operation_and_wins_over_its_outcome() {
        let (p, resets) = parked();
        let c = p.canceler();
        let (r, ()) = tokio::join!(
            p.run(async |_| std::future::pending::<Result<()>>().await),
            async {
                tokio::task::yield_now().await;
                c.cancel();
            }
        );
        assert!(matches!(r, Err(Error::Canceled)));
        assert_eq!(resets.load(Ordering::SeqCst), 1);

        // An operation that completes after the cancel was called still reports Canceled.
        let (p, resets) = parked();
        let c = p.canceler();
        let r = p
            .run(async |_| {
                c.cancel();
                Ok(())
            })
            .await;
        assert!(matches!(r, Err(Error::Canceled)));
        assert_eq!(resets.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn after_finish_a_cancel_does_nothing() {
        let (p, resets) = parked();
        let w = p.finish().unwrap();
        assert!(Arc::ptr_eq(&w, &resets));
        assert!(!p.canceler().cancel());
        assert!(!p.canceler().is_canceled());
        assert_eq!(resets.load(Ordering::SeqCst), 0);
    }
}
