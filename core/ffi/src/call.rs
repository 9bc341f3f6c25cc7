//! Running a core future for a foreign caller and settling its promise (docs/BINDINGS.md,
//! "Threading"). A language plugs in a sink that moves a [`Completion`] to its own thread (the
//! socket an asyncio loop watches, a napi threadsafe deferred); everything else is here:
//!
//! - the eager first poll: [`Call::poll_now`] polls the future once on the calling thread,
//!   inside the I/O runtime's context, so an operation that can finish at once (a send within
//!   the peer's budget, a message already queued) settles with no thread hop;
//! - the ready budget: after [`READY_STREAK`] operations in a row finished at once, the next
//!   one yields to the foreign event loop, so a stream of ready messages cannot starve its
//!   other tasks: [`Call::poll_turn`] still polls it here and hands a finished one back for the
//!   loop's next turn ([`Turn::Later`]), [`Call::poll_now`] sends it to the I/O thread;
//! - [`Call::on_io_thread`]: the rest of the future runs on the I/O thread;
//! - cancellation: [`Cancel::cancel`] (the foreign side cancelled) drops the core future,
//!   which cancels the operation in the core, and runs the call's cancel action at once
//!   ([`Call::cancelling`]: a write cancels its transfer);
//! - the orphan hand-back: a value that reaches the foreign thread after its caller cancelled
//!   goes to the call's orphan action ([`Call::keeping`]: a received message back to its
//!   endpoint) instead of being lost.

use std::cell::Cell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures_util::task::AtomicWaker;
use futures_util::FutureExt;

use crate::error::Fail;
use crate::io;
use crate::probe;
use crate::spin;

/// Operations in a row a thread may finish at once before one takes the waiting path, which
/// yields to its event loop. One number for every language (Node's TypeScript layer reads it
/// for its synchronous paths, `READY_STREAK` in native.d.cts): 64 ready messages take about
/// 0.1 ms of a loop's time on this project's machines, a turn other tasks barely notice, while
/// each turn given costs a wake-up through the I/O thread (Python's used to be 16, which
/// paid it four times as often).
pub const READY_STREAK: u32 = 64;

thread_local! {
    static STREAK: Cell<u32> = const { Cell::new(0) };
}

/// Whether an operation on this thread may finish at once: false for one call after
/// [`READY_STREAK`] in a row did (and the streak restarts).
pub fn ready_turn() -> bool {
    STREAK.with(|n| {
        let s = n.get();
        if s >= READY_STREAK {
            n.set(0);
            false
        } else {
            n.set(s + 1);
            true
        }
    })
}

/// An operation on this thread waited: the streak restarts.
pub fn waited() {
    STREAK.with(|n| n.set(0));
}

/// A foreign caller's cancellation of one call (an asyncio future cancelled, an AbortSignal
/// fired), shared by the caller and the call.
#[derive(Clone, Default)]
pub struct Cancel(Arc<CancelState>);

#[derive(Default)]
struct CancelState {
    cancelled: AtomicBool,
    /// The call's outcome was delivered to its caller: cancelling is too late, and a no-op.
    settled: AtomicBool,
    waker: AtomicWaker,
    /// The call's cancel action, run by the first `cancel()`.
    action: Mutex<Option<Action>>,
}

/// What cancelling a call does at once, on the canceller's thread.
type Action = Box<dyn FnOnce() + Send>;

impl Cancel {
    /// A cancellation not yet fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires it: the call's cancel action runs now, here; its core future is dropped (on the
    /// I/O thread), which cancels the operation; a value it produced meanwhile goes to its
    /// orphan action.
    pub fn cancel(&self) {
        if self.0.settled.load(Ordering::Acquire) || self.0.cancelled.swap(true, Ordering::AcqRel) {
            return;
        }
        self.0.waker.wake();
        let action = self.lock_action().take();
        if let Some(a) = action {
            io::on_io(a);
        }
    }

    fn lock_action(&self) -> std::sync::MutexGuard<'_, Option<Action>> {
        self.0.action.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes `action` what cancelling does at once (run now if it already fired).
    fn set_action(&self, action: Action) {
        let mut slot = self.lock_action();
        if self.is_cancelled() {
            drop(slot);
            io::on_io(action);
        } else {
            *slot = Some(action);
        }
    }

    /// Whether it fired.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Acquire)
    }

    /// Resolves once it fired.
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        std::future::poll_fn(|cx| {
            if self.is_cancelled() {
                return Poll::Ready(());
            }
            self.0.waker.register(cx.waker());
            if self.is_cancelled() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

/// What to do with a value whose caller cancelled as it arrived.
pub type Orphan<T> = Box<dyn FnOnce(T) + Send>;

type Running<T> = Pin<Box<dyn Future<Output = Result<T, Fail>> + Send>>;

/// A core operation run for a foreign caller: polled once here ([`Call::poll_now`]), then, if
/// it must wait, moved to the I/O thread ([`Call::on_io_thread`]).
pub struct Call<T> {
    fut: Running<T>,
    orphan: Option<Orphan<T>>,
    on_cancel: Option<Action>,
    /// Its first poll on the caller's thread was pending, or it had none: not a call the ready
    /// streak sent to the I/O thread unpolled (which waits only if it is pending there).
    awaited: bool,
}

impl<T: Send + 'static> Call<T> {
    /// A call of `fut`. A panic inside it becomes [`Fail::Panic`], not a lost promise.
    pub fn new(fut: impl Future<Output = Result<T, Fail>> + Send + 'static) -> Self {
        Self {
            fut: Box::pin(
                AssertUnwindSafe(fut)
                    .catch_unwind()
                    .map(|r| r.unwrap_or(Err(Fail::Panic))),
            ),
            orphan: None,
            on_cancel: None,
            awaited: true,
        }
    }

    /// Runs `action` at once when the caller cancels, on its thread: whatever the I/O thread
    /// is doing with the call, its effect is known when `cancel` returns (a write cancels its
    /// transfer, even one whose write completed as it was cancelled).
    pub fn cancelling(mut self, action: impl FnOnce() + Send + 'static) -> Self {
        self.on_cancel = Some(Box::new(action));
        self
    }

    /// Hands a value that arrives after its caller cancelled to `orphan`.
    pub fn keeping(mut self, orphan: impl FnOnce(T) + Send + 'static) -> Self {
        self.orphan = Some(Box::new(orphan));
        self
    }

    /// One poll of the future on this thread, inside the I/O runtime's context, with a waker
    /// that does nothing (the I/O thread's task registers its own if it must wait).
    fn poll_here(&mut self) -> Poll<Result<T, Fail>> {
        let _entered = io::enter();
        self.fut
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
    }

    /// Polls the future once, here, inside the I/O runtime's context, unless this thread's
    /// ready streak is spent: its outcome if it finished. None: it must wait ([`Call::on_io_thread`]).
    pub fn poll_now(&mut self) -> Option<Result<T, Fail>> {
        if !ready_turn() {
            self.awaited = false;
            return None;
        }
        match self.poll_here() {
            Poll::Ready(r) => Some(r),
            Poll::Pending => {
                waited();
                None
            }
        }
    }

    /// Polls the future once, here, inside the I/O runtime's context, whether or not this
    /// thread's ready streak is spent. An outcome found with the streak spent is not handed
    /// over now but as a [`Turn::Later`], for the binding to deliver on its event loop's next
    /// turn from this thread: the loop still gives way to its other tasks, without a round
    /// trip through the I/O thread. `cancel` is the caller's (None: the later turn's own,
    /// [`Completion::canceller`]): cancelling before that delivery runs the call's cancel
    /// action, and the value goes to its orphan action. A whole message sent that way is on
    /// its way when the caller can still cancel, as one the I/O thread finished unseen is.
    pub fn poll_turn(mut self, cancel: Option<&Cancel>) -> Turn<T> {
        let now = ready_turn();
        match self.poll_here() {
            Poll::Ready(r) if now => Turn::Now(r),
            Poll::Ready(r) => {
                let cancel = cancel.cloned().unwrap_or_default();
                if let Some(a) = self.on_cancel.take() {
                    cancel.set_action(a);
                }
                Turn::Later(Completion {
                    out: Some(r),
                    orphan: self.orphan.take(),
                    cancel: Some(cancel),
                })
            }
            Poll::Pending => {
                waited();
                Turn::Wait(self)
            }
        }
    }

    /// Runs the future to its end on the I/O thread (the first poll's waker was a no-op: the
    /// task polls again and registers its own), then hands the [`Completion`] to `deliver`,
    /// there, which moves it to the foreign thread. `cancel` firing first drops the future.
    /// `deliver` is called once whatever happens, so a foreign promise is always settled.
    pub fn on_io_thread(
        self,
        cancel: Option<Cancel>,
        deliver: impl FnOnce(Completion<T>) + Send + 'static,
    ) {
        let Self {
            fut,
            orphan,
            on_cancel,
            awaited,
        } = self;
        if let (Some(c), Some(a)) = (&cancel, on_cancel) {
            c.set_action(a);
        }
        io::io().spawn(async move {
            // Whether the caller waits for this outcome: its first poll was pending, or, sent
            // here unpolled by the ready streak, it is pending here.
            let mut waits = awaited;
            let mut fut = fut;
            let run = std::future::poll_fn(|cx| {
                let p = fut.as_mut().poll(cx);
                waits |= p.is_pending();
                p
            });
            let out = match &cancel {
                None => Some(run.await),
                Some(c) => {
                    tokio::select! {
                        biased;
                        () = c.cancelled() => None,
                        r = run => Some(r),
                    }
                }
            };
            if waits {
                spin::handed_off();
            }
            deliver(Completion {
                out,
                orphan,
                cancel,
            });
        });
    }
}

/// What [`Call::poll_turn`] found.
#[must_use = "a finished call's value is lost unless it is delivered"]
pub enum Turn<T> {
    /// It finished: settle the promise now.
    Now(Result<T, Fail>),
    /// It finished, with this thread's ready streak spent: deliver it on the event loop's next
    /// turn, through the same sink as the I/O thread's completions.
    Later(Completion<T>),
    /// It must wait: run it with [`Call::on_io_thread`].
    Wait(Call<T>),
}

/// A finished call on its way to the foreign thread.
pub struct Completion<T> {
    /// None: cancelled before it finished.
    out: Option<Result<T, Fail>>,
    orphan: Option<Orphan<T>>,
    cancel: Option<Cancel>,
}

impl<T> Completion<T> {
    /// On the foreign thread: the outcome to settle the promise with, or [`Fail::Aborted`] when
    /// the caller cancelled first (`gone` is the caller's own view, e.g. a cancelled asyncio
    /// future; its [`Cancel`] counts too). The value of a cancelled call goes to its orphan
    /// action, or is dropped inside the I/O runtime's context.
    pub fn settle(self, gone: bool) -> Result<T, Fail> {
        let gone = gone || self.cancel.as_ref().is_some_and(Cancel::is_cancelled);
        if let (false, Some(c)) = (gone, &self.cancel) {
            // Delivered: a later `cancel()` (a done callback, an abort listener) does nothing.
            c.0.settled.store(true, Ordering::Release);
        }
        match self.out {
            None => Err(Fail::Aborted),
            Some(r) if !gone => r,
            Some(Ok(v)) => {
                let _entered = io::enter();
                match self.orphan {
                    Some(keep) => {
                        probe::orphaned();
                        keep(v);
                    }
                    None => drop(v),
                }
                Err(Fail::Aborted)
            }
            Some(Err(_)) => Err(Fail::Aborted),
        }
    }

    /// The caller's cancellation of this call, when it has one: [`Call::poll_turn`]'s own for a
    /// later turn whose caller gave none.
    pub fn canceller(&self) -> Option<Cancel> {
        self.cancel.clone()
    }

    /// The outcome as it came, cancelled or not (None: cancelled before it finished): for a
    /// caller that keeps whatever arrived (a receive queue's fetch).
    pub fn into_outcome(self) -> Option<Result<T, Fail>> {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::sync::mpsc;
    use std::time::Duration;

    fn wait<T>(rx: &mpsc::Receiver<T>) -> T {
        rx.recv_timeout(Duration::from_secs(5)).expect("delivered")
    }

    #[test]
    fn a_ready_future_finishes_on_the_calling_thread_until_the_streak_is_spent() {
        waited();
        for _ in 0..READY_STREAK {
            let mut c = Call::new(async { Ok::<_, Fail>(7) });
            assert_eq!(c.poll_now().map(|r| r.ok()), Some(Some(7)));
        }
        // The next one yields: it takes the I/O thread's path even though it is ready.
        let mut c = Call::new(async { Ok::<_, Fail>(8) });
        assert!(c.poll_now().is_none(), "the streak is spent");
        let (tx, rx) = mpsc::channel();
        c.on_io_thread(None, move |done| tx.send(done.settle(false).ok()).unwrap());
        assert_eq!(wait(&rx), Some(8));
        let mut c = Call::new(async { Ok::<_, Fail>(9) });
        assert!(c.poll_now().is_some(), "and restarts");
    }

    /// A call that records the thread it finished on.
    fn where_it_ran() -> Call<Option<String>> {
        Call::new(async { Ok(std::thread::current().name().map(str::to_string)) })
    }

    #[test]
    fn a_ready_call_past_the_streak_finishes_here_and_is_delivered_on_a_later_turn() {
        waited();
        let cancel = Cancel::new();
        for _ in 0..READY_STREAK {
            assert!(matches!(where_it_ran().poll_turn(None), Turn::Now(Ok(_))));
        }
        let here = std::thread::current().name().map(str::to_string);
        // Past the streak: finished on this thread (no I/O thread), handed back for later.
        let (undo_tx, undo) = mpsc::channel();
        let c = where_it_ran().cancelling(move || undo_tx.send(()).unwrap());
        let Turn::Later(done) = c.poll_turn(Some(&cancel)) else {
            panic!("the streak is spent: a later turn");
        };
        assert_eq!(done.settle(false).ok(), Some(here));
        // Delivered: the caller's cancel is past cancelling, and its action does not run.
        cancel.cancel();
        assert!(!cancel.is_cancelled());
        assert!(undo.try_recv().is_err());
        // The streak restarts.
        assert!(matches!(where_it_ran().poll_turn(None), Turn::Now(Ok(_))));
        assert!(matches!(
            Call::new(std::future::pending::<Result<(), Fail>>()).poll_turn(None),
            Turn::Wait(_)
        ));
    }

    #[test]
    fn a_later_turn_cancelled_before_delivery_runs_its_cancel_action_and_hands_its_value_back() {
        let (back_tx, back) = mpsc::channel();
        let (undo_tx, undo) = mpsc::channel();
        let before = probe::orphans();
        for _ in 0..READY_STREAK {
            let _ = Call::new(async { Ok::<_, Fail>(0) }).poll_turn(None);
        }
        let c = Call::new(async { Ok::<_, Fail>("message") })
            .keeping(move |m| back_tx.send(m).unwrap())
            .cancelling(move || undo_tx.send("undone").unwrap());
        let caller = Cancel::new();
        let Turn::Later(done) = c.poll_turn(Some(&caller)) else {
            panic!("a later turn");
        };
        // The caller cancels between the poll and the loop's next turn.
        caller.cancel();
        assert_eq!(wait(&undo), "undone");
        assert!(matches!(done.settle(false), Err(Fail::Aborted)));
        assert_eq!(wait(&back), "message");
        assert!(probe::orphans() > before);
    }

    #[test]
    fn only_a_call_its_caller_waits_for_starts_the_io_threads_poll() {
        /// Runs `c` on the I/O thread: whether its hand-off started the poll.
        fn started(c: Call<()>) -> bool {
            let (tx, rx) = mpsc::channel();
            c.on_io_thread(None, move |_| {
                tx.send(spin::HANDED.with(Cell::get)).unwrap()
            });
            wait(&rx)
        }
        /// A call of `f` that forgets earlier hand-offs on its thread as it finishes.
        fn clearing(f: impl Future<Output = ()> + Send + 'static) -> Call<()> {
            Call::new(async move {
                f.await;
                spin::HANDED.with(|h| h.set(false));
                Ok(())
            })
        }
        fn spend_the_streak() {
            waited();
            for _ in 0..READY_STREAK {
                assert!(Call::new(async { Ok::<_, Fail>(1) }).poll_now().is_some());
            }
        }
        // Pending on the caller's thread: waited for.
        let mut pending = clearing(tokio::task::yield_now());
        assert!(pending.poll_now().is_none());
        assert!(started(pending));
        // Sent to the I/O thread unpolled by the streak, and ready there: nobody waited.
        spend_the_streak();
        let mut deferred = clearing(async {});
        assert!(deferred.poll_now().is_none(), "the streak is spent");
        assert!(!started(deferred));
        // Sent unpolled by the streak, and pending on the I/O thread: waited for.
        spend_the_streak();
        let mut late = clearing(tokio::task::yield_now());
        assert!(late.poll_now().is_none(), "the streak is spent");
        assert!(started(late));
    }

    #[test]
    fn a_future_that_waits_finishes_on_the_io_thread() {
        let (go, gate) = tokio::sync::oneshot::channel::<u32>();
        let mut c = Call::new(async move { gate.await.map_err(|_| Fail::Aborted) });
        assert!(c.poll_now().is_none());
        let (tx, rx) = mpsc::channel();
        c.on_io_thread(Some(Cancel::new()), move |done| {
            let on = std::thread::current().name().map(str::to_string);
            tx.send((done.settle(false).ok(), on)).unwrap();
        });
        go.send(5).unwrap();
        assert_eq!(wait(&rx), (Some(5), Some("weida-io".to_string())));
    }

    #[test]
    fn cancelling_drops_the_core_future_and_settles_aborted() {
        struct Dropped(mpsc::Sender<&'static str>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                let _ = self.0.send("dropped");
            }
        }
        let (dropped_tx, dropped) = mpsc::channel();
        let guard = Dropped(dropped_tx);
        let c = Call::new(async move {
            let _g = guard;
            std::future::pending::<Result<(), Fail>>().await
        });
        let cancel = Cancel::new();
        let (tx, rx) = mpsc::channel();
        c.on_io_thread(Some(cancel.clone()), move |done| {
            tx.send(matches!(done.settle(false), Err(Fail::Aborted)))
                .unwrap()
        });
        cancel.cancel();
        assert_eq!(wait(&dropped), "dropped");
        assert!(wait(&rx));
    }

    #[test]
    fn a_value_that_arrives_after_its_caller_cancelled_is_handed_back() {
        let (back_tx, back) = mpsc::channel();
        let before = probe::orphans();
        let c = Call::new(async { Ok::<_, Fail>("message") })
            .keeping(move |m| back_tx.send(m).unwrap());
        let (tx, rx) = mpsc::channel();
        c.on_io_thread(None, move |done| tx.send(done).ok().unwrap());
        let done = wait(&rx);
        // The caller cancelled after the value was produced, before it reached its thread.
        assert!(matches!(done.settle(true), Err(Fail::Aborted)));
        assert_eq!(wait(&back), "message");
        assert!(probe::orphans() > before);
    }

    #[test]
    fn a_panic_settles_the_promise() {
        let mut c = Call::new(async { panic!("a bug") as Result<(), Fail> });
        assert!(matches!(c.poll_now(), Some(Err(Fail::Panic))));
    }
}
