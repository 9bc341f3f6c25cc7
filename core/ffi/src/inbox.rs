//! Receives from a puller or a subscriber: the endpoint's queue continued on the foreign
//! side, so a receive cancelled as its message arrives neither loses nor reorders anything
//! (docs/BINDINGS.md, "Receiving"; python/tests/test_cancel.py and
//! node/test/cancel.test.mjs `receives_raced_and_cancelled_keep_the_order`).
//!
//! Receives that must wait queue in call order behind at most ONE fetch from the core at a
//! time ([`fetch`], on the I/O thread). What a fetch brings is handed to the waiting receives
//! on the foreign thread, where they are also cancelled, so there is no race between the two;
//! what no receive wants stays here, ahead of the core's queue: counted by `queued`, handed
//! out before `Closed`, never lost. Until a fetch has settled here, nothing takes from the
//! core directly, so nothing overtakes what it took.
//!
//! Node's TypeScript layer keeps the same queue in JS (lib/index.ts `Inbox`), over [`fetch`]
//! and [`take_now`], because its messages cross the boundary in packed batches and a native
//! object per message cost ~30 % of its receiving thread (docs/BINDINGS.md, "Receiving in
//! batches"); Python, and the UniFFI bindings later, use this one.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::FutureExt;
use weida::{Message, Receiving};

use crate::call::{self, Call, Cancel, Completion, Turn};
use crate::error::Fail;
use crate::io::{enter, OnIo};
use crate::probe;

/// The most messages one fetch takes: a receive that waits, and its wake-up from the I/O
/// thread, then serve this many receives, not one.
pub const BATCH: usize = 64;

/// Up to `max` messages from the endpoint (at least one): the core's `recv_many`, counted by
/// [`probe::fetched`].
pub async fn fetch<R: Receiving>(r: Arc<R>, max: usize) -> Result<Vec<Message>, Fail> {
    let ms = r.recv_many(max.max(1)).await?;
    probe::fetched_one();
    Ok(ms)
}

/// Hands `ms` back to `r`, served before anything else in the order given (the core's
/// `give_back` serves what it was handed back first in, first out; test
/// `packed::tests::what_is_over_budget_goes_back_to_the_front_in_order`).
pub fn give_back<R: Receiving>(r: &R, ms: impl IntoIterator<Item = Message>) {
    let _entered = enter();
    ms.into_iter().for_each(|m| r.give_back(m));
}

/// What a receive would give without waiting: up to `max` messages, or the error a receive
/// would report now; None when nothing is ready.
pub fn take_now<R: Receiving>(r: &R, max: usize) -> Option<Result<Vec<Message>, Fail>> {
    let _entered = enter();
    r.recv_many(max.max(1))
        .now_or_never()
        .map(|r| r.map_err(Fail::from))
}

/// A receive waiting in an [`Inbox`], settled on the foreign thread.
pub trait Waiter: Send + 'static {
    /// Whether its caller cancelled it: it is skipped, and what it would have got goes to the
    /// next.
    fn is_gone(&self) -> bool;
    /// Settles it with what it got (one message or more, or the error in its place).
    fn settle(self, got: Result<Vec<Message>, Fail>);
}

/// Runs a job on the foreign thread: where the waiters are settled and cancelled.
pub trait Post: Send + Sync + 'static {
    /// Queues `job` for the foreign thread (called from the I/O thread and the foreign one).
    fn post(&self, job: Box<dyn FnOnce() + Send>);
}

/// What a binding holds to take a cancelled receive out of its inbox, whatever the endpoint.
pub trait Leave: Send + Sync {
    /// [`Inbox::leave`].
    fn leave(&self, ticket: Ticket) -> bool;
}

impl<R: Receiving, W: Waiter> Leave for Inbox<R, W> {
    fn leave(&self, ticket: Ticket) -> bool {
        // The inherent `Inbox::leave` (a path resolves to it before the trait's): no recursion.
        Self::leave(self, ticket)
    }
}

/// A waiting receive's place, for [`Inbox::leave`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

struct State<W> {
    /// Taken from the core, not yet handed out; an error keeps its place among them (boxed:
    /// messages are moved through here by the batch, and an error is rare and large).
    held: VecDeque<Result<Message, Box<Fail>>>,
    /// Receives waiting, in call order: (ticket, up to how many, the receive).
    waiting: VecDeque<(u64, usize, W)>,
    /// The one fetch running, until its completion is handled here.
    fetching: Option<Cancel>,
    /// The ticket of the receive the running fetch was started for (the first waiting).
    fetch_for: u64,
    /// A job is posted to serve from `held` (a receive yielded to the event loop).
    serving: bool,
    next: u64,
    /// Where jobs for the foreign thread go: the last waiting receive's.
    post: Option<Arc<dyn Post>>,
}

/// A puller's or subscriber's receives (module doc).
pub struct Inbox<R: Receiving, W: Waiter> {
    endpoint: OnIo<Arc<R>>,
    state: Mutex<State<W>>,
}

/// Up to `max` held items: messages, stopping before an error unless it comes first.
fn take_held(
    held: &mut VecDeque<Result<Message, Box<Fail>>>,
    max: usize,
) -> Result<Vec<Message>, Fail> {
    let mut out = Vec::with_capacity(max.clamp(1, held.len().max(1)));
    while out.len() < max.max(1) {
        match held.front() {
            Some(Ok(_)) => {
                if let Some(Ok(m)) = held.pop_front() {
                    out.push(m);
                }
            }
            Some(Err(_)) if out.is_empty() => {
                return Err(*held.pop_front().and_then(Result::err).expect("an error"));
            }
            _ => break,
        }
    }
    Ok(out)
}

impl<R: Receiving, W: Waiter> Inbox<R, W> {
    /// The receives of `endpoint`.
    pub fn new(endpoint: Arc<R>) -> Arc<Self> {
        Arc::new(Self {
            endpoint: OnIo::new(endpoint),
            state: Mutex::new(State {
                held: VecDeque::new(),
                waiting: VecDeque::new(),
                fetching: None,
                fetch_for: 0,
                serving: false,
                next: 0,
                post: None,
            }),
        })
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Arc<R> {
        &self.endpoint
    }

    fn lock(&self) -> MutexGuard<'_, State<W>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Messages (and errors in their place) taken from the core and not yet handed out.
    pub fn held(&self) -> usize {
        self.lock().held.len()
    }

    /// A receive of up to `max` messages (at least one, unless `max` is 0). Settles `w` at once when something is
    /// ready and no receive is waiting before it (and this thread's ready streak allows,
    /// [`call::READY_STREAK`]); with the streak spent, what is ready is taken here all the
    /// same and `w` is settled on the foreign loop's next turn (through `post`). Else queues
    /// it, starting a fetch through `post` if none is running. Returns its ticket for
    /// [`Inbox::leave`] when it did not settle at once.
    pub fn recv(self: &Arc<Self>, max: usize, w: W, post: &Arc<dyn Post>) -> Option<Ticket> {
        if max == 0 {
            // Up to none is none, at once (as the core's `recv_many(0)`).
            w.settle(Ok(Vec::new()));
            return None;
        }
        let mut s = self.lock();
        if s.waiting.is_empty() && !s.held.is_empty() && call::ready_turn() {
            let got = take_held(&mut s.held, max);
            drop(s);
            w.settle(got);
            return None;
        }
        // A fetch of everything ready (up to a batch), polled once here: what is ready settles
        // this receive now (the rest is held for the next), else the same future waits on the
        // I/O thread, with no second look at the endpoint. With the streak spent, what is
        // ready is still taken here, and held: the receive is served on the loop's next turn
        // (below), not by a round trip through the I/O thread.
        let mut now = None;
        if s.waiting.is_empty() && s.held.is_empty() && s.fetching.is_none() {
            let c = Call::new(fetch(Arc::clone(&self.endpoint), BATCH.max(max)));
            match c.poll_turn(None) {
                Turn::Now(Ok(mut ms)) => {
                    // What this receive does not want is held, in order, for the next.
                    if ms.len() > max {
                        s.held.extend(ms.drain(max..).map(Ok));
                    }
                    drop(s);
                    w.settle(Ok(ms));
                    return None;
                }
                Turn::Now(Err(f)) => {
                    drop(s);
                    w.settle(Err(f));
                    return None;
                }
                Turn::Later(done) => match done.into_outcome() {
                    Some(Ok(ms)) => s.held.extend(ms.into_iter().map(Ok)),
                    Some(Err(f)) => s.held.push_back(Err(Box::new(f))),
                    None => {}
                },
                Turn::Wait(c) => now = Some(c),
            }
        }
        call::waited();
        let ticket = s.next;
        s.next += 1;
        s.waiting.push_back((ticket, max, w));
        s.post = Some(Arc::clone(post));
        if let Some(c) = now {
            self.run_fetch(&mut s, c);
        } else if !s.held.is_empty() {
            // The streak is spent: hand out on the foreign loop's next turn.
            if !s.serving {
                s.serving = true;
                let inbox = Arc::clone(self);
                post.post(Box::new(move || inbox.serve_posted()));
            }
        } else if s.fetching.is_none() {
            self.start_fetch(&mut s);
        }
        Some(Ticket(ticket))
    }

    /// The next message if one is ready and no receive waits before it: a held one, else the
    /// core's (unless a fetch is running: it goes first).
    pub fn try_recv(&self) -> Option<Result<Message, Fail>> {
        let mut s = self.lock();
        if !s.waiting.is_empty() {
            return None;
        }
        if let Some(item) = s.held.pop_front() {
            return Some(item.map_err(|f| *f));
        }
        if s.fetching.is_some() {
            return None;
        }
        drop(s);
        let _entered = enter();
        self.endpoint.try_recv().map(|r| r.map_err(Fail::from))
    }

    /// The receive `ticket` was cancelled: it leaves the queue (true if it was still in it).
    /// When no receive is left, the fetch is cancelled; what it had taken stays here.
    pub fn leave(&self, ticket: Ticket) -> bool {
        let mut s = self.lock();
        let Some(i) = s.waiting.iter().position(|(t, _, _)| *t == ticket.0) else {
            return false;
        };
        let w = s.waiting.remove(i);
        if s.waiting.is_empty() {
            if let Some(c) = &s.fetching {
                c.cancel();
            }
        }
        drop(s);
        drop(w);
        true
    }

    fn start_fetch(self: &Arc<Self>, s: &mut State<W>) {
        let max = s.waiting.front().map_or(BATCH, |(_, m, _)| BATCH.max(*m));
        let c = Call::new(fetch(Arc::clone(&self.endpoint), max));
        self.run_fetch(s, c);
    }

    /// Runs `c` as the one fetch, for the first waiting receive, on the I/O thread.
    fn run_fetch(self: &Arc<Self>, s: &mut State<W>, c: Call<Vec<Message>>) {
        let Some(post) = s.post.clone() else {
            return;
        };
        let cancel = Cancel::new();
        s.fetching = Some(cancel.clone());
        s.fetch_for = s.waiting.front().map_or(0, |(t, _, _)| *t);
        let inbox = Arc::clone(self);
        c.on_io_thread(Some(cancel), move |done| {
            post.post(Box::new(move || inbox.fetched(done)))
        });
    }

    /// On the foreign thread: a fetch ended. What it brought joins the held items, in order,
    /// and the waiting receives are served.
    fn fetched(self: &Arc<Self>, done: Completion<Vec<Message>>) {
        let mut s = self.lock();
        s.fetching = None;
        let for_ticket = s.fetch_for;
        let brought = match done.into_outcome() {
            None => false,
            Some(r) => {
                // The common case: nothing held, and the first waiting receive (alive) takes
                // all it brought, handed over as it came.
                let direct = s.held.is_empty()
                    && match (&r, s.waiting.front()) {
                        (Ok(ms), Some((_, max, w))) => ms.len() <= *max && !w.is_gone(),
                        (Err(_), Some((_, _, w))) => !w.is_gone(),
                        _ => false,
                    };
                if direct {
                    let (ticket, _, w) = s.waiting.pop_front().expect("a waiting receive");
                    if !s.waiting.is_empty() {
                        self.start_fetch(&mut s);
                    }
                    drop(s);
                    w.settle(r);
                    if ticket != for_ticket {
                        probe::orphaned();
                    }
                    return;
                }
                match r {
                    Ok(ms) => s.held.extend(ms.into_iter().map(Ok)),
                    Err(f) => s.held.push_back(Err(Box::new(f))),
                }
                true
            }
        };
        let served = self.serve(s, for_ticket);
        if brought && !served {
            // The receive it was fetched for was cancelled as it arrived: what it brought went
            // to the next receive, or is held for it, in its place.
            probe::orphaned();
        }
    }

    /// On the foreign thread: a receive that yielded to the event loop is served.
    fn serve_posted(self: &Arc<Self>) {
        let mut s = self.lock();
        s.serving = false;
        self.serve(s, u64::MAX);
    }

    /// Hands held items to the waiting receives, in call order (skipping those cancelled),
    /// then starts a fetch if any is left waiting; settles them once the lock is released.
    /// Whether the receive `watch` was among those settled.
    fn serve(self: &Arc<Self>, mut s: MutexGuard<'_, State<W>>, watch: u64) -> bool {
        let mut settled = Vec::new();
        let mut watched = false;
        while !s.held.is_empty() {
            let Some((ticket, max, w)) = s.waiting.pop_front() else {
                break;
            };
            if w.is_gone() {
                continue;
            }
            watched |= ticket == watch;
            let got = take_held(&mut s.held, max);
            settled.push((w, got));
        }
        if !s.waiting.is_empty() && s.fetching.is_none() {
            self.start_fetch(&mut s);
        }
        drop(s);
        for (w, got) in settled {
            w.settle(got);
        }
        watched
    }
}

impl<W: Waiter> Inbox<weida::Subscriber, W> {
    /// Messages received and waiting for a receive: those held here and the core's.
    pub fn queued(&self) -> usize {
        self.held() + self.endpoint.queued()
    }

    /// Resolves once [`Inbox::queued`] is at least `n` (with no receive pending, what is held
    /// here does not change meanwhile).
    pub async fn until_queued(self: Arc<Self>, n: usize) -> Result<(), Fail> {
        let held = self.held();
        self.endpoint.until_queued(n.saturating_sub(held)).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::call::READY_STREAK;
    use crate::io::io;

    /// The foreign thread, played by the test's: posted jobs wait here until it runs them.
    struct Jobs(Mutex<mpsc::Sender<Box<dyn FnOnce() + Send>>>);

    impl Post for Jobs {
        fn post(&self, job: Box<dyn FnOnce() + Send>) {
            let _ = self.0.lock().unwrap().send(job);
        }
    }

    struct Receive {
        gone: Arc<AtomicBool>,
        out: mpsc::Sender<Result<Vec<Message>, Fail>>,
    }

    impl Waiter for Receive {
        fn is_gone(&self) -> bool {
            self.gone.load(Ordering::Acquire)
        }
        fn settle(self, got: Result<Vec<Message>, Fail>) {
            let _ = self.out.send(got);
        }
    }

    struct Setup {
        _rts: (weida::Runtime, weida::Runtime, weida::Listener),
        pusher: Arc<weida::Pusher>,
        inbox: Arc<Inbox<weida::Puller, Receive>>,
        post: Arc<dyn Post>,
        jobs: mpsc::Receiver<Box<dyn FnOnce() + Send>>,
    }

    struct Pending {
        ticket: Option<Ticket>,
        gone: Arc<AtomicBool>,
        got: mpsc::Receiver<Result<Vec<Message>, Fail>>,
    }

    fn setup() -> Setup {
        let p = crate::testing::pair();
        let (tx, jobs) = mpsc::channel();
        Setup {
            _rts: p._runtimes,
            pusher: Arc::new(p.pusher),
            inbox: Inbox::new(Arc::new(p.puller)),
            post: Arc::new(Jobs(Mutex::new(tx))),
            jobs,
        }
    }

    impl Setup {
        fn send(&self, bodies: &[&'static str]) {
            let p = Arc::clone(&self.pusher);
            let bodies: Vec<bytes::Bytes> = bodies.iter().map(|b| (*b).into()).collect();
            io().block_on(async move {
                for b in bodies {
                    p.send(b).await.unwrap();
                }
            });
        }

        fn receive(&self, max: usize) -> Pending {
            let gone = Arc::new(AtomicBool::new(false));
            let (out, got) = mpsc::channel();
            let w = Receive {
                gone: Arc::clone(&gone),
                out,
            };
            Pending {
                ticket: self.inbox.recv(max, w, &self.post),
                gone,
                got,
            }
        }

        /// Runs the next job posted to the foreign thread.
        fn run_job(&self) {
            let job = self
                .jobs
                .recv_timeout(Duration::from_secs(10))
                .expect("a job");
            job();
        }
    }

    fn bodies(got: Result<Vec<Message>, Fail>) -> Vec<String> {
        got.unwrap()
            .iter()
            .map(|m| String::from_utf8(m.body.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn receives_that_wait_are_served_in_call_order_by_one_fetch() {
        let s = setup();
        let a = s.receive(1);
        let b = s.receive(1);
        let c = s.receive(2);
        assert!(a.ticket.is_some() && b.ticket.is_some() && c.ticket.is_some());
        s.send(&["1", "2", "3", "4"]);
        // One fetch serves as many waiting receives as it brought, in call order; the next
        // fetch starts while one is left waiting.
        let mut got = Vec::new();
        for p in [&a, &b, &c] {
            let r = loop {
                if let Ok(r) = p.got.try_recv() {
                    break r;
                }
                s.run_job();
            };
            got.push(bodies(r));
        }
        assert_eq!(got[..2], [vec!["1"], vec!["2"]]);
        assert_eq!(got[2][0], "3", "then the third, up to two: {got:?}");
    }

    #[test]
    fn a_receive_cancelled_as_its_message_arrives_loses_and_reorders_nothing() {
        let s = setup();
        let before = (probe::orphans(), probe::fetched());
        let a = s.receive(1);
        let ticket = a.ticket.expect("nothing is ready: it waits");
        s.send(&["first", "second"]);
        // The fetch took "first" (and maybe "second") on the I/O thread; its completion waits
        // for the foreign thread, where the receive is cancelled first.
        assert!(probe::wait_fetched(before.1 + 1, Duration::from_secs(10)));
        a.gone.store(true, Ordering::Release);
        assert!(s.inbox.leave(ticket));
        s.run_job();
        assert!(
            a.got.try_recv().is_err(),
            "a cancelled receive gets nothing"
        );
        assert!(
            probe::orphans() > before.0,
            "the message came back to the queue"
        );
        // Kept, in its place: the next receives get "first", then "second".
        let b = s.receive(1);
        let mut got = match b.ticket {
            None => bodies(b.got.try_recv().unwrap()),
            Some(_) => panic!("a held message is ready"),
        };
        while got.len() < 2 {
            let c = s.receive(1);
            if c.ticket.is_some() {
                s.run_job();
            }
            got.extend(bodies(c.got.recv_timeout(Duration::from_secs(10)).unwrap()));
        }
        assert_eq!(got, ["first", "second"]);
        assert!(s.inbox.try_recv().is_none());
    }

    #[test]
    fn a_receive_past_the_streak_takes_what_is_ready_here_and_hands_it_out_on_a_later_turn() {
        let s = setup();
        s.send(&["1"]);
        // A message surely ready in the core: received, and handed back to its queue's front.
        let e = Arc::clone(s.inbox.endpoint());
        let m = io().block_on(async move { e.recv().await }).unwrap();
        s.inbox.endpoint().give_back(m);
        call::waited();
        for _ in 0..READY_STREAK {
            assert!(call::ready_turn());
        }
        let a = s.receive(1);
        assert!(
            a.ticket.is_some(),
            "the streak is spent: it does not settle now"
        );
        assert!(a.got.try_recv().is_err());
        // Taken here, not by a fetch on the I/O thread, and held for the loop's next turn.
        assert_eq!(s.inbox.held(), 1);
        s.run_job();
        assert_eq!(bodies(a.got.try_recv().unwrap()), ["1"]);
        assert_eq!(s.inbox.held(), 0);
    }

    #[test]
    fn an_error_keeps_its_place_among_the_messages() {
        let mut held: VecDeque<Result<Message, Box<Fail>>> = VecDeque::new();
        let m = |b: &'static str| Message {
            meta: Arc::new(weida::IncomingMeta::default()),
            body: b.into(),
        };
        held.push_back(Ok(m("a")));
        held.push_back(Err(Box::new(Fail::Core(weida::Error::Canceled))));
        held.push_back(Ok(m("b")));
        assert_eq!(
            take_held(&mut held, 8).unwrap().len(),
            1,
            "stops before the error"
        );
        assert!(matches!(
            take_held(&mut held, 8),
            Err(Fail::Core(weida::Error::Canceled))
        ));
        assert_eq!(take_held(&mut held, 8).unwrap().len(), 1);
    }
}
