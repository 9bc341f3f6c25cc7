//! Running a core call for a caller that awaits a Rust future itself (the UniFFI bindings:
//! a Kotlin coroutine, a Swift task), where Python and Node plug a sink into [`Call`]. The
//! future [`run`] returns keeps the [`Call`] rules: the eager first poll on the caller's
//! thread, the rest on the I/O thread; dropping it (UniFFI drops a Rust future when the
//! coroutine awaiting it is cancelled) fires the call's [`Cancel`], which drops the core
//! future, so the operation is cancelled in the core (a transfer being written is reset, the
//! peer sees Canceled), and a value that was produced meanwhile goes to the call's orphan
//! action.
//!
//! A caller whose cancellation never drops the Rust future (a Swift task: UniFFI's Swift code
//! awaits the future to its end whatever happens to the task) gives [`run_or_cancel`] a
//! [`Cancel`] and fires it from its own cancellation handler: the call then ends as a dropped
//! one would, and the future returns [`Fail::Aborted`] (kotlin-swift/swift CancelTests
//! `test_an_asyncio_cancelled_request_is_canceled_at_the_replier`).
//!
//! A value handed over as a future's output can still be lost between the two sides of the
//! boundary (UniFFI stores the output and a coroutine cancelled before it reads it frees it).
//! Where losing it matters, a receive, the value is put in a [`Held`] the caller made before
//! the call and takes after it: its drop hands an untaken value back
//! (kotlin-swift/kotlin `an_asyncio_cancelled_recv_loses_nothing`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use crate::call::{Call, Cancel, Completion};
use crate::error::Fail;
use crate::io;

/// The outcome of `c`, awaited: see the module doc. Dropping the future cancels the call.
pub fn run<T: Send + 'static>(c: Call<T>) -> Awaiting<T> {
    run_or_cancel(c, None)
}

/// As [`run`], and `cancel`, when given, fired by the caller, cancels the call as dropping the
/// future does: the future then returns [`Fail::Aborted`] (at once if it had already fired),
/// or the value, if the call had finished first.
pub fn run_or_cancel<T: Send + 'static>(mut c: Call<T>, cancel: Option<Cancel>) -> Awaiting<T> {
    if cancel.as_ref().is_some_and(Cancel::is_cancelled) {
        return Awaiting(State::Ready(Some(Err(Fail::Aborted))));
    }
    if let Some(r) = c.poll_now() {
        return Awaiting(State::Ready(Some(r)));
    }
    let cancel = cancel.unwrap_or_default();
    let (tx, rx) = oneshot::channel::<Completion<T>>();
    c.on_io_thread(Some(cancel.clone()), move |done| {
        if let Err(done) = tx.send(done) {
            // The awaiting future was dropped meanwhile: its value goes to the orphan action.
            let _ = done.settle(true);
        }
    });
    Awaiting(State::Waiting { rx, cancel })
}

/// The future [`run`] returns.
pub struct Awaiting<T>(State<T>);

enum State<T> {
    Ready(Option<Result<T, Fail>>),
    Waiting {
        rx: oneshot::Receiver<Completion<T>>,
        cancel: Cancel,
    },
    Done,
}

// Nothing in it is pinned: the value is only moved out.
impl<T> Unpin for Awaiting<T> {}

impl<T> Future for Awaiting<T> {
    type Output = Result<T, Fail>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.0 {
            State::Ready(r) => {
                let r = r.take().unwrap_or(Err(Fail::Aborted));
                this.0 = State::Done;
                Poll::Ready(r)
            }
            State::Waiting { rx, .. } => match Pin::new(rx).poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(done) => {
                    this.0 = State::Done;
                    Poll::Ready(done.map_or(Err(Fail::Aborted), |d| d.settle(false)))
                }
            },
            State::Done => Poll::Ready(Err(Fail::Aborted)),
        }
    }
}

impl<T> Drop for Awaiting<T> {
    fn drop(&mut self) {
        if let State::Waiting { rx, cancel } = &mut self.0 {
            cancel.cancel();
            if let Ok(done) = rx.try_recv() {
                let _ = done.settle(true);
            }
        }
    }
}

/// Where an untaken [`Held`] value goes.
type HandBack<T> = Box<dyn FnOnce(T) + Send>;

/// A value a call puts here for its caller to take after it returns (module doc); dropped
/// untaken, it goes to the hand-back given at its making (a message back to the front of its
/// endpoint's queue), inside the I/O runtime's context.
pub struct Held<T: Send + 'static> {
    value: Mutex<Option<T>>,
    back: Mutex<Option<HandBack<T>>>,
}

impl<T: Send + 'static> Held<T> {
    /// Empty; an untaken value goes to `back`.
    pub fn new(back: impl FnOnce(T) + Send + 'static) -> Self {
        Self {
            value: Mutex::new(None),
            back: Mutex::new(Some(Box::new(back))),
        }
    }

    /// Puts `v` here. A `Held` takes one value: a second is handed back at once.
    pub fn put(&self, v: T) {
        let mut slot = self.value.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(v);
        } else if let Some(back) = self.back.lock().unwrap_or_else(|p| p.into_inner()).take() {
            drop(slot);
            io::on_io(|| back(v));
        }
    }

    /// The value, once.
    pub fn take(&self) -> Option<T> {
        self.value.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl<T: Send + 'static> Drop for Held<T> {
    fn drop(&mut self) {
        let v = self
            .value
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let back = self
            .back
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let (Some(v), Some(back)) = (v, back) {
            crate::probe::orphaned();
            io::on_io(|| back(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_ready_call_and_a_waiting_one_both_finish() {
        crate::call::waited();
        assert_eq!(
            block_on(run(Call::new(async { Ok::<_, Fail>(1) }))).ok(),
            Some(1)
        );
        let (go, gate) = oneshot::channel::<u32>();
        let waiting = run(Call::new(
            async move { gate.await.map_err(|_| Fail::Aborted) },
        ));
        go.send(2).unwrap();
        assert_eq!(block_on(waiting).ok(), Some(2));
    }

    /// Says on its channel when it is dropped: a core future holding it was dropped.
    struct Dropped(mpsc::Sender<()>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }

    #[test]
    fn dropping_the_awaiting_future_drops_the_core_future() {
        let (tx, rx) = mpsc::channel();
        let guard = Dropped(tx);
        let waiting = run(Call::new(async move {
            let _g = guard;
            std::future::pending::<Result<(), Fail>>().await
        }));
        drop(waiting);
        rx.recv_timeout(Duration::from_secs(5)).expect("dropped");
    }

    #[test]
    fn a_fired_cancel_drops_the_core_future_and_the_awaiting_one_is_aborted() {
        let (tx, rx) = mpsc::channel();
        let guard = Dropped(tx);
        let cancel = Cancel::new();
        let waiting = run_or_cancel(
            Call::new(async move {
                let _g = guard;
                std::future::pending::<Result<(), Fail>>().await
            }),
            Some(cancel.clone()),
        );
        cancel.cancel();
        rx.recv_timeout(Duration::from_secs(5)).expect("dropped");
        assert!(matches!(block_on(waiting), Err(Fail::Aborted)));
        // Fired before the call: it is not run at all.
        let (tx, rx) = mpsc::channel();
        let guard = Dropped(tx);
        let never = run_or_cancel(
            Call::new(async move {
                let _g = guard;
                Ok::<_, Fail>(1)
            }),
            Some(cancel),
        );
        assert!(matches!(block_on(never), Err(Fail::Aborted)));
        rx.recv_timeout(Duration::from_secs(5))
            .expect("dropped unpolled");
        // Finished first: the value, and a later cancel does nothing.
        let late = Cancel::new();
        let done = run_or_cancel(Call::new(async { Ok::<_, Fail>(2) }), Some(late.clone()));
        assert_eq!(block_on(done).ok(), Some(2));
        late.cancel();
    }

    #[test]
    fn an_untaken_held_value_is_handed_back() {
        let (tx, rx) = mpsc::channel();
        let held = Held::new(move |v: u32| tx.send(v).unwrap());
        held.put(7);
        drop(held);
        assert_eq!(rx.recv_timeout(Duration::from_secs(1)).ok(), Some(7));
        let (tx, rx) = mpsc::channel();
        let held = Held::new(move |v: u32| tx.send(v).unwrap());
        held.put(8);
        assert_eq!(held.take(), Some(8));
        drop(held);
        assert!(rx.try_recv().is_err(), "taken: nothing handed back");
    }
}
