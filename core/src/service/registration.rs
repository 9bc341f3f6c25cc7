//! A registration: one endpoint read for a handler, its bounded concurrency, what each outcome
//! does, and its stop.

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;

use super::counters::{Count, ServiceCounters};
use super::outcome::{attempt_of, copy_meta, Outcome};
use super::source::{same_endpoint, Sink, Source};
use crate::address::Address;
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::{Exchange, Message};

/// A registration whose copies have somewhere to go: a bound queue or fan-out (its own path),
/// or a connecting or Rep registration given [`Builder::retry_to`].
#[derive(Debug)]
pub struct Ready;

/// A connecting or Rep registration: it has no address of its own, so it cannot be started
/// until [`Builder::retry_to`] names where its copies go.
///
/// ```compile_fail
/// # async fn f(rt: weida::Runtime, listener: weida::Listener) -> weida::Result<()> {
/// let service = weida::service::Service::new(&rt);
/// // No `start` on a Rep registration that has not said where its copies go:
/// service.replying(&listener, "/rpc")?.start().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct NeedsAddress;

/// Settings of a registration before it starts. `start` exists only on `Builder<Ready>`.
pub struct Builder<S> {
    runtime: Runtime,
    source: Source,
    /// The bound endpoint's own address (a queue or fan-out): where its copies go.
    own: Option<Address>,
    /// A puller's bound pushers, dialled at start.
    dial: Option<String>,
    retry_to: Option<String>,
    concurrency: u32,
    max_attempts: Option<u32>,
    dead_letter: Option<String>,
    _state: PhantomData<S>,
}

impl<S> Builder<S> {
    pub(crate) fn new(
        runtime: Runtime,
        source: Source,
        own: Option<Address>,
        dial: Option<String>,
    ) -> Self {
        Self {
            runtime,
            source,
            own,
            dial,
            retry_to: None,
            concurrency: 1,
            max_attempts: None,
            dead_letter: None,
            _state: PhantomData,
        }
    }

    /// How many handlers run at once (default 1: one at a time, in arrival order). At most
    /// this many messages are taken from the endpoint and not yet finished; the rest wait in
    /// the endpoint's queue, which is its backpressure.
    pub fn concurrency(mut self, n: u32) -> Self {
        self.concurrency = n;
        self
    }

    /// The attempts a message gets: at this attempt a retry goes to the dead-letter address
    /// instead (or is dropped, with a warning, without one). Declaring it makes `Retry` a
    /// copy.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }

    /// Where a message goes at the attempt limit: the address of a bound Pull path, sent to
    /// by a pusher of this registration's. Declaring it makes `Retry` a copy; without
    /// [`Builder::max_attempts`] there is no limit, so no message reaches it (a warning at
    /// start says so).
    pub fn dead_letter(mut self, address: &str) -> Self {
        self.dead_letter = Some(address.to_string());
        self
    }

    fn to<T>(self) -> Builder<T> {
        Builder {
            runtime: self.runtime,
            source: self.source,
            own: self.own,
            dial: self.dial,
            retry_to: self.retry_to,
            concurrency: self.concurrency,
            max_attempts: self.max_attempts,
            dead_letter: self.dead_letter,
            _state: PhantomData,
        }
    }
}

impl Builder<NeedsAddress> {
    /// Where this registration's copies go: the address of a bound Pull path (usually a queue
    /// the service binds for itself, with a registration of its own).
    pub fn retry_to(mut self, address: &str) -> Builder<Ready> {
        self.retry_to = Some(address.to_string());
        self.to()
    }
}

impl Builder<Ready> {
    /// Checks the settings, dials what the registration sends to (and a puller's bound
    /// pushers), and starts taking messages. `InvalidConfig` for a concurrency or attempt
    /// limit of 0, a dead-letter address that is the registration's own path (a loop), and a
    /// Rep registration whose copies would go to its own Rep path (a Rep path takes no
    /// pushes). Not cancel-safe: dropped while it dials, the registration is not made and
    /// what it bound is unbound.
    pub async fn start(self) -> Result<Registration> {
        if self.concurrency == 0 {
            return Err(Error::InvalidConfig(
                "a registration's concurrency must be at least 1".into(),
            ));
        }
        if self.max_attempts == Some(0) {
            return Err(Error::InvalidConfig(
                "max_attempts must be at least 1 (the first delivery is attempt 1)".into(),
            ));
        }
        let retry_address = match (&self.own, &self.retry_to) {
            (_, Some(to)) => Address::parse(to)?,
            (Some(own), None) => own.clone(),
            (None, None) => unreachable!("Builder<Ready> has an address"),
        };
        retry_address.endpoint_path()?;
        let dead = match &self.dead_letter {
            Some(d) => {
                let d = Address::parse(d)?;
                d.endpoint_path()?;
                if let Some(own) = &self.own {
                    if same_endpoint(&d, own) {
                        return Err(Error::InvalidConfig(format!(
                            "the dead-letter address {d} is this registration's own path: a dead letter would come back to it"
                        )));
                    }
                }
                Some(d)
            }
            None => None,
        };
        if let (Source::Replying(r), Some(_)) = (&self.source, &self.retry_to) {
            if same_endpoint(&retry_address, r.address()) {
                return Err(Error::InvalidConfig(format!(
                    "the retry address {retry_address} is this Rep registration's own path, which takes no pushes"
                )));
            }
        }
        match (&self.source, &self.dial) {
            (Source::Pulling(p), Some(a)) => p.connect(a).await?,
            (Source::Subscribing(sub, filters), Some(a)) => {
                for f in filters {
                    sub.subscribe(f).await?;
                }
                sub.connect(a).await?;
            }
            _ => {}
        }
        let retry = match (&self.source, self.retry_to.is_none()) {
            (Source::FanOut(_), true) => {
                let p = self.runtime.publisher();
                p.connect(&retry_address.to_string()).await?;
                Sink::Publish(p)
            }
            _ => {
                let p = self.runtime.pusher();
                p.connect(&retry_address.to_string()).await?;
                Sink::Push(p)
            }
        };
        let dead = match dead {
            Some(d) => {
                let p = self.runtime.pusher();
                p.connect(&d.to_string()).await?;
                Some((Sink::Push(p), d))
            }
            None => None,
        };
        let name = match (&self.own, &self.dial, &self.source) {
            (Some(own), _, s) => format!("{} {own}", s.kind()),
            (None, Some(d), s) => format!("{} {d}", s.kind()),
            (None, None, Source::Replying(r)) => format!("rep {}", r.address()),
            (None, None, s) => s.kind().to_string(),
        };
        let limit_declared = self.max_attempts.is_some() || dead.is_some();
        // A Rep path's requests are read by a task of their own from now on.
        let source = match self.source {
            Source::Replying(r) => Source::Requests(super::source::Requests::start(r)),
            other => other,
        };
        let endless = dead.is_some() && self.max_attempts.is_none();
        let reg = Registration {
            shared: Arc::new(Shared {
                name,
                source,
                own: self.own,
                retry,
                retry_address,
                dead,
                max_attempts: self.max_attempts,
                limit_declared,
                concurrency: u64::from(self.concurrency),
                slots: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                slot_waiters: AtomicUsize::new(0),
                slot_freed: Notify::new(),
                count: Count::default(),
                warned: [AtomicBool::new(false), AtomicBool::new(false)],
                stopping: watch::channel(false).0,
                abandon: watch::channel(false).0,
                past_deadline: AtomicBool::new(false),
                tasks: Mutex::new(JoinSet::new()),
                warnings: Mutex::default(),
                warned_now: Notify::new(),
                handle: tokio::runtime::Handle::current(),
            }),
        };
        if endless {
            // Allowed (declaring a dead letter makes a retry a copy), and almost never meant.
            reg.shared.warn(
                "a dead-letter address with no max_attempts: every retry is a copy to the retry \
                 address, without end, and no message reaches the dead letter"
                    .into(),
            );
        }
        Ok(reg)
    }
}

struct Shared {
    name: String,
    source: Source,
    own: Option<Address>,
    retry: Sink,
    retry_address: Address,
    dead: Option<(Sink, Address)>,
    max_attempts: Option<u32>,
    /// `max_attempts` or a dead-letter address: `Retry` makes a copy.
    limit_declared: bool,
    /// Handlers at once: `slots` taken, never above this.
    concurrency: u64,
    /// Handler slots taken: by a job, or by a `next` waiting for a message to put in one.
    slots: AtomicU64,
    /// No more jobs: read on every message without a lock (`stopping` is for waiting).
    closed: AtomicBool,
    /// Those waiting for a slot (a `next`, a stop waiting for none in flight), told by
    /// `slot_freed` only when there are any: a slot freed costs one atomic otherwise.
    slot_waiters: AtomicUsize,
    slot_freed: Notify,
    count: Count,
    /// `Unsupported` was logged for `ack`, and for `drop` (each once per registration).
    warned: [AtomicBool; 2],
    /// No more jobs, for those waiting.
    stopping: watch::Sender<bool>,
    /// A stop's deadline passed: copies still waiting are dropped.
    abandon: watch::Sender<bool>,
    /// A stop's deadline passed with handlers unfinished: a copy one of them asks for later
    /// is dropped at once.
    past_deadline: AtomicBool,
    /// Copies waiting or being sent, and replies being written.
    tasks: Mutex<JoinSet<()>>,
    /// What was logged, for `take_warnings`.
    warnings: Mutex<std::collections::VecDeque<String>>,
    /// Raised on each warning, for `next_warnings`.
    warned_now: Notify,
    handle: tokio::runtime::Handle,
}

/// The warnings a registration keeps for [`Registration::take_warnings`]: the newest this
/// many (a binding that never takes them holds no more).
const WARNINGS_KEPT: usize = 256;

impl Shared {
    /// Logs `text` (`tracing`, WARN) and keeps it for a binding to log in its language's way.
    fn warn(&self, text: String) {
        tracing::warn!(registration = %self.name, "{text}");
        let mut w = self.warnings.lock().unwrap();
        if w.len() == WARNINGS_KEPT {
            w.pop_front();
        }
        w.push_back(text);
        drop(w);
        self.warned_now.notify_waiters();
    }

    fn unsupported(&self, what: &str) {
        let (flag, counts_as) = if what == "ack" {
            (&self.warned[0], "processed")
        } else {
            (&self.warned[1], "dropped")
        };
        if !flag.swap(true, Ordering::Relaxed) {
            self.warn(format!(
                "{what}: Unsupported, a brokerless hop has nothing to acknowledge or discard; \
                 the message counts as {counts_as} (logged once per registration)"
            ));
        }
    }

    /// Stops handing out jobs; `true` the first time.
    fn close(&self) -> bool {
        self.stopping.send_replace(true);
        !self.closed.swap(true, Ordering::SeqCst)
    }

    /// A handler slot if one is free now and the registration is open: one compare-and-swap,
    /// where a semaphore's permit costs a lock to give back. SeqCst, with `close` and `stop`:
    /// either a stop sees the slot taken and waits for it, or this sees the stop and gives it
    /// back.
    fn try_slot(&self) -> Result<bool> {
        let n = &self.slots;
        let mut now = n.load(Ordering::SeqCst);
        loop {
            if now >= self.concurrency {
                return Ok(false);
            }
            match n.compare_exchange_weak(now, now + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => break,
                Err(seen) => now = seen,
            }
        }
        if self.closed.load(Ordering::SeqCst) {
            self.free_slot();
            return Err(Error::Closed);
        }
        Ok(true)
    }

    /// Up to `want` more handler slots, as many as are free now, with one compare-and-swap:
    /// how many. `Closed` (and none taken) once stopping, as [`Shared::try_slot`].
    fn try_slots(&self, want: u64) -> Result<u64> {
        let n = &self.slots;
        let mut now = n.load(Ordering::SeqCst);
        let got = loop {
            let got = want.min(self.concurrency.saturating_sub(now));
            if got == 0 {
                return Ok(0);
            }
            match n.compare_exchange_weak(now, now + got, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => break got,
                Err(seen) => now = seen,
            }
        };
        if self.closed.load(Ordering::SeqCst) {
            self.free_slots(got);
            return Err(Error::Closed);
        }
        Ok(got)
    }

    /// Gives a slot back, and tells those waiting for one, if any.
    fn free_slot(&self) {
        self.free_slots(1);
    }

    /// Gives `n` slots back at once, as [`Shared::free_slot`].
    fn free_slots(&self, n: u64) {
        if n == 0 {
            return;
        }
        self.slots.fetch_sub(n, Ordering::SeqCst);
        if self.slot_waiters.load(Ordering::SeqCst) > 0 {
            self.slot_freed.notify_waiters();
        }
    }

    /// Waits until `ready` holds, checked after each slot freed. Either this sees a slot
    /// freed before it counted itself a waiter, or the slot's release sees it waiting
    /// (both SeqCst), so no wake-up is lost.
    async fn wait_for_slots(&self, mut ready: impl FnMut() -> Result<bool>) -> Result<()> {
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.slot_waiters.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.slot_waiters);
        loop {
            // Made before the check, so a slot freed after it wakes this.
            let freed = self.slot_freed.notified();
            if ready()? {
                return Ok(());
            }
            freed.await;
        }
    }

    /// A handler slot, waited for; `Closed` once stopping.
    async fn wait_slot(&self) -> Result<()> {
        let mut stop = self.stopping.subscribe();
        tokio::select! {
            biased;
            _ = stop.wait_for(|v| *v) => Err(Error::Closed),
            r = self.wait_for_slots(|| self.try_slot()) => r,
        }
    }

    /// Counts one up or down a counter only a slot's holder changes (`in_flight`, `handled`,
    /// `failed`). With one slot its holders take turns, each handing over through the slot's
    /// SeqCst release and take, so a plain read and write cannot lose a count: no locked
    /// instruction on every message (a profile showed them as settle's hot spots); with
    /// more slots, an atomic add.
    fn bump(&self, c: &AtomicU64, up: bool) {
        if self.concurrency == 1 {
            let v = c.load(Ordering::Relaxed);
            c.store(if up { v + 1 } else { v - 1 }, Ordering::Relaxed);
        } else if up {
            Count::add(c);
        } else {
            Count::sub(c);
        }
    }

    /// An arrival in the slot just taken for it: in flight from here.
    fn taken(&self, a: super::source::Arrival) -> Taken {
        self.bump(&self.count.in_flight, true);
        Taken::of(a.message, a.exchange)
    }

    /// The next message for a handler, its slot taken, if both are there now; the common
    /// case under load, with no waiting machinery.
    fn try_take(&self) -> Option<Result<Taken>> {
        match self.try_slot() {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some(Err(e)),
        }
        match self.source.try_recv() {
            Some(Ok(a)) => Some(Ok(self.taken(a))),
            Some(Err(e)) => {
                self.free_slot();
                Some(Err(e))
            }
            None => {
                self.free_slot();
                None
            }
        }
    }

    /// The next message for a handler, its slot taken, waited for. `Closed` once stopping;
    /// cancel-safe.
    async fn take(&self) -> Result<Taken> {
        if self.closed.load(Ordering::Relaxed) {
            return Err(Error::Closed);
        }
        if let Some(t) = self.try_take() {
            return t;
        }
        // The waits are boxed apart, so the futures that call this stay small.
        if !self.try_slot()? {
            Box::pin(self.wait_slot()).await?;
        }
        // The slot is held from here: given back if this is dropped before a message comes.
        let mut slot = SlotHeld(Some(self));
        let arrival = match self.source.try_recv() {
            Some(a) => a?,
            None => Box::pin(self.wait_arrival()).await?,
        };
        slot.0 = None;
        Ok(self.taken(arrival))
    }

    /// The next arrival, waited for; `Closed` once stopping.
    async fn wait_arrival(&self) -> Result<super::source::Arrival> {
        let mut stop = self.stopping.subscribe();
        tokio::select! {
            biased;
            _ = stop.wait_for(|v| *v) => Err(Error::Closed),
            a = self.source.recv() => a,
        }
    }

    /// Carries out `outcome` for `taken` (docs/SERVICES.md §2), `failure` saying why the
    /// handler failed if it did, then gives its slot back: `in_flight` down first (a count read
    /// after `handled` went up sees it no longer in flight), the slot last (a stop that sees
    /// every slot free sees every count).
    fn settle(
        self: &Arc<Self>,
        taken: Taken,
        outcome: Outcome,
        failure: Option<String>,
        by: Settler<'_>,
    ) {
        // The common case, a handler done with a queue's or a fan-out's message, kept apart
        // from the rest, whose replies and copies make a large frame.
        if failure.is_none() && outcome == Outcome::Done && taken.exchange.is_none() {
            self.count_settled(by);
            self.count_handled(by);
            self.release(by);
            return;
        }
        self.settle_otherwise(taken, outcome, failure, by);
    }

    /// One message no longer in flight, counted where `by` counts.
    fn count_settled(&self, by: Settler<'_>) {
        match by {
            Settler::Tallied(t) => Tally::up(&t.settled),
            _ => self.bump(&self.count.in_flight, false),
        }
    }

    /// One message handled, counted where `by` counts.
    fn count_handled(&self, by: Settler<'_>) {
        match by {
            Settler::Tallied(t) => Tally::up(&t.handled),
            _ => self.bump(&self.count.handled, true),
        }
    }

    /// A settled job's slot, given back unless `run` keeps it.
    fn release(&self, by: Settler<'_>) {
        if let Settler::Job = by {
            self.free_slot();
        }
    }

    /// [`Shared::settle`] for every other case.
    #[inline(never)]
    fn settle_otherwise(
        self: &Arc<Self>,
        taken: Taken,
        outcome: Outcome,
        failure: Option<String>,
        by: Settler<'_>,
    ) {
        let Taken {
            message,
            attempt,
            mut exchange,
        } = taken;
        self.count_settled(by);
        if let Some(reason) = &failure {
            self.bump(&self.count.failed, true);
            let peer = match &message.meta.peer {
                Some(p) => p.to_string(),
                None => "none".to_string(),
            };
            self.warn(format!(
                "a handler failed: path={} peer={peer} attempt={attempt} reason={reason}",
                message.meta.path
            ));
        }
        let refusal = match outcome {
            Outcome::Done | Outcome::Reply(_) | Outcome::Ack => {
                if outcome == Outcome::Ack {
                    self.unsupported("ack");
                }
                self.count_handled(by);
                if let Some(ex) = exchange.take() {
                    let body = match outcome {
                        Outcome::Reply(b) => b,
                        _ => bytes::Bytes::new(),
                    };
                    self.spawn(async move {
                        if let Err(e) = ex.reply(body).await {
                            tracing::debug!(error = %e, "a reply could not be written");
                        }
                    });
                }
                None
            }
            Outcome::Drop => {
                self.unsupported("drop");
                Count::add(&self.count.dropped);
                Some("dropped by the handler".to_string())
            }
            Outcome::Retry if !self.limit_declared => {
                Count::add(&self.count.dropped);
                tracing::debug!(registration = %self.name, "retry with no attempt limit declared: not redelivered (at most once)");
                Some(match &failure {
                    Some(r) => format!("the handler failed: {r}"),
                    None => "the handler asked for a retry, and none is declared".to_string(),
                })
            }
            Outcome::Retry => {
                self.copy(message, attempt, Duration::ZERO);
                Some("retried: a copy was sent on".to_string())
            }
            Outcome::RetryAfter(d) => {
                self.copy(message, attempt, d);
                Some("retried: a copy was sent on".to_string())
            }
        };
        if let (Some(reason), Some(ex)) = (refusal, exchange) {
            self.spawn(async move {
                if let Err(e) = ex.reject(&reason).await {
                    tracing::debug!(error = %e, "a refusal could not be written");
                }
            });
        }
        self.release(by);
    }

    /// Puts `taken` back in front of the endpoint, uncounted, and frees its slot.
    fn give_back(&self, taken: Taken) {
        self.bump(&self.count.in_flight, false);
        self.source.give_back(super::source::Arrival {
            message: taken.message,
            exchange: taken.exchange,
        });
        self.free_slot();
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().unwrap();
        while tasks.try_join_next().is_some() {} // what finished, forgotten
        tasks.spawn_on(task, &self.handle);
    }

    /// A copy of `message` as the attempt after `attempt`, after `delay` (to the retry
    /// address), or at the limit to the dead-letter address (at once) or nowhere.
    fn copy(self: &Arc<Self>, message: Message, attempt: u32, delay: Duration) {
        if self.past_deadline.load(Ordering::SeqCst) {
            // A handler that finished after its stop's deadline: the copy senders are closed
            // or closing, and nothing waits for a copy any more. Counted now, not when its
            // send would fail later, after whoever stopped has read the counters.
            Count::add(&self.count.dropped);
            self.warn(format!(
                "a copy of attempt {attempt} from a handler that finished after the stop's deadline: dropped"
            ));
            return;
        }
        let at_limit = self.max_attempts.is_some_and(|m| attempt >= m);
        let (meta, dead) = if at_limit {
            if self.dead.is_none() {
                Count::add(&self.count.dropped);
                self.warn(format!(
                    "a message at its attempt limit ({attempt}) dropped: no dead-letter address is declared"
                ));
                return;
            }
            (copy_meta(&message.meta.metadata, attempt), true)
        } else {
            (copy_meta(&message.meta.metadata, attempt + 1), false)
        };
        Count::add(&self.count.delayed);
        let s = self.clone();
        let mut abandon = self.abandon.subscribe();
        self.spawn(async move {
            if !delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = abandon.wait_for(|v| *v) => {
                        Count::sub(&s.count.delayed);
                        Count::add(&s.count.dropped);
                        s.warn("a retry copy still waiting at the stop's deadline dropped".into());
                        return;
                    }
                }
            }
            Count::sub(&s.count.delayed);
            let (sink, to, counter) = match (&s.dead, dead) {
                (Some((sink, to)), true) => (sink, to, &s.count.dead_lettered),
                _ => (&s.retry, &s.retry_address, &s.count.retried),
            };
            match sink.send(&message, meta).await {
                Ok(()) => Count::add(counter),
                Err(e) => {
                    Count::add(&s.count.dropped);
                    s.warn(format!("a copy to {to} could not be sent ({e}): dropped"));
                }
            }
        });
    }
}

/// A registration taking messages from one endpoint for a handler (docs/SERVICES.md).
///
/// ```no_run
/// # async fn f(rt: weida::Runtime) -> weida::Result<()> {
/// use std::time::Duration;
/// use weida::service::{Outcome, Service};
///
/// let listener = rt.bind("weida://127.0.0.1:5555").await?;
/// let service = Service::new(&rt);
/// let jobs = service
///     .queue(&listener, "/jobs")?
///     .concurrency(4)
///     .max_attempts(3)
///     .dead_letter("weida://127.0.0.1:5556/dead")
///     .start()
///     .await?;
/// jobs.run(|message, attempt| async move {
///     if message.body.is_empty() {
///         return Err(format!("empty job (attempt {attempt})")); // a retry, as declared
///     }
///     Ok::<_, String>(Outcome::RetryAfter(Duration::from_secs(1)))
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub struct Registration {
    shared: Arc<Shared>,
}

/// What a stop left: handlers still running at its deadline (their outcomes, when they come,
/// are carried out as far as the closed endpoints allow: a copy one asks for is dropped at
/// once, counted), and copies it dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stopped {
    /// Handlers that had not finished by the deadline.
    pub unfinished: u64,
    /// Copies still waiting for their delay at the deadline, dropped.
    pub copies_dropped: u64,
}

impl Registration {
    /// The next message for a handler, once fewer than `concurrency` are in flight. `Closed`
    /// once the registration is stopping; any other error is the endpoint's for one message
    /// (a transfer its sender cancelled, one above its size bound), and the next call goes
    /// on. Cancel-safe: dropped before it returns, it takes no message.
    pub async fn next(&self) -> Result<Job> {
        let taken = self.shared.take().await?;
        Ok(Job {
            taken: Some(taken),
            shared: self.shared.clone(),
        })
    }

    /// Takes messages and runs `handler` on each, at most `concurrency` at once, until the
    /// registration stops and the handlers it started have finished; then returns `Ok`.
    /// `handler` gets the message and its attempt (1 for a first delivery); its `Err` is a
    /// failure (logged with the message's peer and path, counted `failed`, then a `Retry`),
    /// and so is a panic in its future; a panic in the call itself, before it returns a
    /// future, is counted a failure as it unwinds out of `run`. The handlers run inside the future this returns (with concurrency
    /// 1, one after the other, in the order the endpoint hands messages out): no task is
    /// spawned per message, which costs more than a small handler does; a handler that needs
    /// another thread spawns its work itself. A queue's ready messages are taken a batch at a
    /// time; those taken and not handed out when it ends go back to the endpoint, in order.
    /// Not cancel-safe: dropped, it drops the handlers it started, each then a failure retried
    /// as declared; call [`Registration::stop`] to end
    /// it instead, and await it to its end.
    pub async fn run<F, Fut, E>(&self, handler: F) -> Result<()>
    where
        F: Fn(Message, u32) -> Fut,
        Fut: Future<Output = std::result::Result<Outcome, E>> + Send + 'static,
        E: Display + Send + 'static,
    {
        use futures_util::stream::{FuturesUnordered, StreamExt};
        use futures_util::FutureExt;
        let s = &self.shared;
        let skipped = |e: Error| tracing::debug!(registration = %s.name, error = %e, "a message the endpoint could not take whole");
        if s.concurrency == 1 {
            // One at a time: each handler is awaited where it is, with nothing to schedule. While
            // messages keep coming the loop keeps the one slot from each to the next, instead of
            // giving it back and taking it again, and gives it back when it would wait.
            // What is ready is taken a batch at a time under one lock, then handed out from
            // here in order.
            let mut slot = SlotHeld(None);
            let mut ready = Batch::new(s);
            loop {
                let next = match slot.0 {
                    Some(_) if s.closed.load(Ordering::Relaxed) => return Ok(()),
                    Some(_) => match ready.next_message() {
                        // The common case under load: a message of the batch, made a job
                        // where it is, with no arrival to unwrap (measured: a tenth of the
                        // loop's cost at 64 B).
                        Some(m) => {
                            s.bump(&s.count.in_flight, true);
                            Ok(Taken::of(m, None))
                        }
                        None => match s.source.try_recv() {
                            Some(r) => r.map(|a| s.taken(a)),
                            None => {
                                slot.give_back();
                                continue;
                            }
                        },
                    },
                    None => s.take().await.inspect(|_| slot.0 = Some(s)),
                };
                match next {
                    Ok(taken) => {
                        // The handler's future is a local of this loop's own state, not a
                        // future moved into it per message.
                        // As in `one` below: the job held first, then the handler called.
                        let held = Held {
                            shared: s,
                            taken: Some(taken),
                            by: Settler::Kept,
                        };
                        let work = AssertUnwindSafe(held.call(&handler));
                        held.conclude(work.catch_unwind().await)
                    }
                    Err(Error::Closed) => return Ok(()),
                    Err(e) => skipped(e),
                }
                // Under load every message is ready and every small handler finishes at once:
                // without this the loop would never give its thread to the other tasks on it.
                tokio::task::consume_budget().await;
            }
        }
        // Many at once. The loop holds slots for its handlers and counts them in a tally of
        // its own (declared before the handlers, so dropped after them and before the slots:
        // every count is added before a slot is given back). A handler that finishes where it
        // starts leaves its slot to the next message, so under load a turn of up to a batch
        // of messages costs one slot taken and one given back, not two per message.
        let mut slots = Slots { shared: s, held: 0 };
        let tally = TallyOf {
            count: &s.count,
            tally: Tally::default(),
        };
        let tally = &tally;
        let one = |taken: Taken| {
            let held = Held {
                shared: s,
                taken: Some(taken),
                by: Settler::Tallied(&tally.tally),
            };
            // A handler whose future panics is a failure of its message, not the end of the
            // loop; one that panics in its call, before there is a future, is a failure as the
            // panic unwinds out of `run` (the job is held first).
            let work = AssertUnwindSafe(held.call(&handler));
            async move { held.conclude(work.catch_unwind().await) }
        };
        // A handler is polled once where it starts: one that finishes then (most small ones)
        // never reaches the set, which costs an allocation and a wake-up each, and its box is
        // the next handler's (`Pin::set` drops the finished future in place).
        let mut running = FuturesUnordered::new();
        let mut spare = None;
        let mut start = |taken: Taken, running: &mut FuturesUnordered<_>| {
            let mut work = match spare.take() {
                Some(mut b) => {
                    std::pin::Pin::set(&mut b, one(taken));
                    b
                }
                None => Box::pin(one(taken)),
            };
            if (&mut work).now_or_never().is_some() {
                spare = Some(work); // finished: never polled again, only overwritten
            } else {
                // Polled again by the set, with its waker, before it waits.
                running.push(work);
            }
        };
        let mut ready = Batch::new(s);
        let mut open = true;
        while open || !running.is_empty() {
            tokio::task::consume_budget().await; // as above
                                                 // What is ready now, with no select per message: first what the batch holds (the
                                                 // endpoint's oldest), at most a batch a turn.
            for _ in 0..BATCH {
                if s.closed.load(Ordering::Relaxed) {
                    open = false;
                }
                if !open {
                    break;
                }
                // A slot: a spare one (held, its handler finished), or as many more as are
                // free, at once.
                if slots.held == running.len() as u64 {
                    match s.try_slots(s.concurrency - slots.held) {
                        Ok(0) => break,
                        Ok(n) => slots.held += n,
                        Err(_) => {
                            open = false;
                            break;
                        }
                    }
                }
                // As with one at a time: the batch's message made a job where it is.
                let more = match ready.next_message() {
                    Some(m) => Ok(Taken::of(m, None)),
                    None => match s.source.try_recv() {
                        Some(r) => r.map(|a| Taken::of(a.message, a.exchange)),
                        None => break,
                    },
                };
                match more {
                    Ok(taken) => {
                        Tally::up(&tally.tally.taken);
                        start(taken, &mut running)
                    }
                    Err(Error::Closed) => open = false,
                    Err(e) => skipped(e),
                }
            }
            // Before it waits: the counts added, then the spare slots given back.
            tally.tally.flush(&s.count);
            slots.keep(running.len() as u64);
            // While the batch holds messages, the turn ended for want of a slot (or at its
            // limit, when one is free already): wait for one to be free (a handler of this
            // loop's to finish, or a job of a `next` caller's), not for the endpoint, which
            // holds only what came after them.
            let from_endpoint = open && ready.is_empty();
            let for_a_slot = open && !from_endpoint;
            tokio::select! {
                biased;
                Some(()) = running.next(), if !running.is_empty() => {}
                _ = s.wait_for_slots(|| Ok(s.slots.load(Ordering::SeqCst) < s.concurrency)), if for_a_slot => {}
                next = s.take(), if from_endpoint => match next {
                    // Its slot, taken by `take`, is the loop's from here; its count, the
                    // registration's.
                    Ok(taken) => {
                        slots.held += 1;
                        start(taken, &mut running)
                    }
                    Err(Error::Closed) => open = false,
                    Err(e) => skipped(e),
                },
                else => {}
            }
        }
        Ok(())
    }

    /// The warnings logged since the last call, oldest first (at most the newest 256 are
    /// kept): a failure with its peer, path, attempt and reason; `Unsupported` once; a message
    /// dropped at its limit; a copy not sent. They also go to `tracing` as WARN events; a
    /// binding takes them to log them in its language's way (Python's `logging`).
    pub fn take_warnings(&self) -> Vec<String> {
        self.shared.warnings.lock().unwrap().drain(..).collect()
    }

    /// [`Registration::take_warnings`], waited for: returns once at least one was logged
    /// since the last take, with every one logged so far, so a program prints them as they
    /// come (`weida serve` does). Cancel-safe: dropped while it waits, it takes nothing.
    pub async fn next_warnings(&self) -> Vec<String> {
        loop {
            // Made before the look, so a warning logged after it wakes this.
            let logged = self.shared.warned_now.notified();
            let w = self.take_warnings();
            if !w.is_empty() {
                return w;
            }
            logged.await;
        }
    }

    /// The counters now. What [`Registration::run`]'s own handlers did with concurrency
    /// above 1 is added a turn of its loop at a time (about a batch, 32 messages), and always before
    /// their slots are free, so a finished [`Registration::stop`] sees every count.
    pub fn counters(&self) -> ServiceCounters {
        self.shared.count.read()
    }

    /// The bound endpoint's own address (a queue or a fan-out): where its copies go; None
    /// for a connecting or Rep registration.
    pub fn address(&self) -> Option<&Address> {
        self.shared.own.as_ref()
    }

    /// Where this registration's copies go.
    pub fn retry_address(&self) -> &Address {
        &self.shared.retry_address
    }

    /// Stops: no more messages are taken (`next` answers `Closed`); handlers in flight are
    /// waited for, and copies whose delay ends, until `deadline`; copies still waiting then
    /// are dropped (counted, with a warning); then the endpoint and the copy senders close.
    /// A message the endpoint queued and no handler took is lost with it, as any message
    /// a closed endpoint holds. Not cancel-safe: dropped, the registration stays stopping
    /// and its endpoint open until the registration is dropped.
    pub async fn stop(&self, deadline: Duration) -> Stopped {
        let s = &self.shared;
        let until = tokio::time::Instant::now() + deadline;
        s.close();
        let none_in_flight = s.wait_for_slots(|| Ok(s.slots.load(Ordering::SeqCst) == 0));
        let unfinished = match tokio::time::timeout_at(until, none_in_flight).await {
            Ok(_) => 0,
            Err(_) => {
                s.past_deadline.store(true, Ordering::SeqCst);
                s.count.in_flight.load(Ordering::Relaxed)
            }
        };
        let mut tasks = std::mem::take(&mut *s.tasks.lock().unwrap());
        let before = s.count.dropped.load(Ordering::Relaxed);
        if tokio::time::timeout_at(until, async { while tasks.join_next().await.is_some() {} })
            .await
            .is_err()
        {
            s.abandon.send_replace(true);
            // What was being sent fails at once once its sender closes: counted dropped.
            s.retry.close();
            if let Some((d, _)) = &s.dead {
                d.close();
            }
            while tasks.join_next().await.is_some() {}
        }
        let copies_dropped = s.count.dropped.load(Ordering::Relaxed) - before;
        s.source.close();
        s.retry.close();
        if let Some((d, _)) = &s.dead {
            d.close();
        }
        Stopped {
            unfinished,
            copies_dropped,
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// A message taken for a handler, its slot held, until it is settled.
struct Taken {
    message: Message,
    attempt: u32,
    exchange: Option<Box<Exchange>>,
}

impl Taken {
    fn of(message: Message, exchange: Option<Box<Exchange>>) -> Self {
        Self {
            attempt: attempt_of(&message.meta.metadata),
            message,
            exchange,
        }
    }
}

/// A job inside [`Registration::run`]: a [`Job`] that borrows its registration.
struct Held<'a> {
    shared: &'a Arc<Shared>,
    taken: Option<Taken>,
    /// `run`'s, one way or the other: where its slot and counts go.
    by: Settler<'a>,
}

/// Who settles a job, which says where its slot and its counts go.
#[derive(Clone, Copy)]
enum Settler<'a> {
    /// A [`Job`]: its slot is given back, its counts are the registration's.
    Job,
    /// `run` one at a time: its slot is a [`SlotHeld`]'s, kept for the next message.
    Kept,
    /// `run` with many at once: its slot is one of those `run` holds (a [`Slots`]'s), its
    /// counts go to `run`'s [`Tally`].
    Tallied(&'a Tally),
}

/// The counts of `run`'s own handlers (with many at once), written only by `run`'s task,
/// whose future polls and drops every one of them: a plain load and store each, where the
/// registration's counters take a locked instruction per message (profiled at a quarter of
/// a no-op handler's cost at concurrency 16). Added to the registration's counters once a
/// turn of `run`'s loop, before the slots they held are given back, so a stop that sees every
/// slot free sees every count.
#[derive(Default)]
struct Tally {
    /// Taken in flight.
    taken: AtomicU64,
    /// Settled, so no longer in flight.
    settled: AtomicU64,
    handled: AtomicU64,
}

/// A [`Tally`] added to its registration's counters when dropped (with `run`).
struct TallyOf<'a> {
    count: &'a Count,
    tally: Tally,
}

impl Drop for TallyOf<'_> {
    fn drop(&mut self) {
        self.tally.flush(self.count);
    }
}

impl Tally {
    /// One more, by the only writer: no read-modify-write needed.
    fn up(c: &AtomicU64) {
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Adds what was counted since the last time to `count`.
    fn flush(&self, count: &Count) {
        let take = |c: &AtomicU64| {
            let v = c.load(Ordering::Relaxed);
            c.store(0, Ordering::Relaxed);
            v
        };
        let (taken, settled, handled) =
            (take(&self.taken), take(&self.settled), take(&self.handled));
        if taken > settled {
            count
                .in_flight
                .fetch_add(taken - settled, Ordering::Relaxed);
        } else if settled > taken {
            count
                .in_flight
                .fetch_sub(settled - taken, Ordering::Relaxed);
        }
        if handled > 0 {
            count.handled.fetch_add(handled, Ordering::Relaxed);
        }
    }
}

/// The handler slots `run` holds (with many at once): those its handlers in flight hold, and
/// spare ones it reuses for the next messages. Given back when it would wait, and when
/// dropped.
struct Slots<'a> {
    shared: &'a Shared,
    held: u64,
}

impl Slots<'_> {
    /// Gives back all but `keep`.
    fn keep(&mut self, keep: u64) {
        self.shared.free_slots(self.held - keep);
        self.held = keep;
    }
}

impl Drop for Slots<'_> {
    fn drop(&mut self) {
        self.keep(0);
    }
}

impl Held<'_> {
    /// Calls `handler` with the job's message and attempt. Not wrapped in `catch_unwind`,
    /// which would keep the handler's call from being inlined into `run`'s loop (measured: a
    /// twentieth of its throughput at 64 B): a panic here unwinds through this job, which
    /// settles it as a failure.
    fn call<F, Fut>(&self, handler: &F) -> Fut
    where
        F: Fn(Message, u32) -> Fut,
    {
        let t = self
            .taken
            .as_ref()
            .expect("a held job's message is there until it is settled");
        handler(t.message.clone(), t.attempt)
    }

    /// Settles the job with what its handler came to: an outcome, an error (a failure) or a
    /// panic (a failure).
    fn conclude<E: Display>(
        mut self,
        handled: std::thread::Result<std::result::Result<Outcome, E>>,
    ) {
        let (outcome, failure) = match handled {
            Ok(Ok(outcome)) => (outcome, None),
            Ok(Err(e)) => (Outcome::Retry, Some(e.to_string())),
            Err(_) => (Outcome::Retry, Some("the handler panicked".to_string())),
        };
        if let Some(t) = self.taken.take() {
            self.shared.settle(t, outcome, failure, self.by);
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.taken.take() {
            let reason = Some(dropped_unfinished());
            self.shared.settle(t, Outcome::Retry, reason, self.by);
        }
    }
}

/// Messages [`Registration::run`] took from its endpoint in one batch and has not handed out
/// yet: handed back to the endpoint, in order, if `run` ends first (stopped, or dropped), so a
/// later `next` finds them where they were.
struct Batch<'a> {
    shared: &'a Shared,
    /// Last to be handed out first: the batch reversed, so each is a `pop`.
    taken: Vec<Message>,
}

/// Messages taken from the endpoint at once.
const BATCH: usize = 32;

impl<'a> Batch<'a> {
    fn new(shared: &'a Shared) -> Self {
        Self {
            shared,
            taken: Vec::with_capacity(BATCH),
        }
    }

    fn is_empty(&self) -> bool {
        self.taken.is_empty()
    }

    /// The next message taken, taking the next batch once these are handed out.
    fn next_message(&mut self) -> Option<Message> {
        if self.taken.is_empty() {
            self.shared.source.take_ready(&mut self.taken, BATCH);
            self.taken.reverse();
        }
        self.taken.pop()
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        while let Some(message) = self.taken.pop() {
            self.shared.source.give_back(super::source::Arrival {
                message,
                exchange: None,
            });
        }
    }
}

/// A slot [`Registration::run`] keeps from one message to the next, given back when it is
/// dropped (`run` with it).
struct SlotHeld<'a>(Option<&'a Shared>);

impl SlotHeld<'_> {
    fn give_back(&mut self) {
        if let Some(s) = self.0.take() {
            s.free_slot();
        }
    }
}

impl Drop for SlotHeld<'_> {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// Why a job dropped unfinished failed.
fn dropped_unfinished() -> String {
    if std::thread::panicking() {
        "the handler panicked"
    } else {
        "the job was dropped before it finished"
    }
    .to_string()
}

/// One message handed to a handler, until it says its [`Outcome`]. Dropped unfinished, it is
/// a failure (`failed`, then a `Retry`), so a handler that panics is counted, not lost
/// silently.
pub struct Job {
    /// Until the job is settled.
    taken: Option<Taken>,
    shared: Arc<Shared>,
}

impl Job {
    fn taken(&self) -> &Taken {
        self.taken
            .as_ref()
            .expect("a job's message is there until it is settled")
    }

    /// The message.
    pub fn message(&self) -> &Message {
        &self.taken().message
    }

    /// Which attempt this is: 1 for a first delivery, n for the copy a retry made of
    /// attempt n − 1 (its `weida-attempt` header).
    pub fn attempt(&self) -> u32 {
        self.taken().attempt
    }

    /// "Acknowledge it": `Unsupported`, always, since a brokerless hop has nothing to
    /// complete. Logged once per registration; the message counts as processed when the
    /// handler finishes normally.
    pub fn ack(&self) -> Result<()> {
        self.shared.unsupported("ack");
        Err(Error::Unsupported(
            "ack: a brokerless hop has nothing to acknowledge".into(),
        ))
    }

    /// "Discard it" (`drop` elsewhere): `Unsupported`, always, for the reason `ack` is.
    /// Finish with [`Outcome::Drop`] to count the message dropped.
    pub fn discard(&self) -> Result<()> {
        self.shared.unsupported("drop");
        Err(Error::Unsupported(
            "drop: a brokerless hop has nothing to discard".into(),
        ))
    }

    /// Carries out `outcome` (docs/SERVICES.md §2): counts it, answers a Rep exchange, and
    /// sends or schedules a copy. Returns at once; what it sends is sent in the background.
    pub fn finish(mut self, outcome: Outcome) {
        if let Some(t) = self.taken.take() {
            self.shared.settle(t, outcome, None, Settler::Job);
        }
    }

    /// Hands the job back untouched, as if it had never been taken: its message goes back in
    /// front of the endpoint's queue (the next `next` returns it, the same attempt), its slot
    /// is free, and nothing is counted. For a caller that took a job it cannot hand to a
    /// handler (a binding whose caller cancelled `next` as the job arrived), so a cancelled
    /// `next` loses nothing.
    pub fn give_back(mut self) {
        if let Some(t) = self.taken.take() {
            self.shared.give_back(t);
        }
    }

    /// The handler failed: logged with the message's peer and path, counted `failed`, then
    /// carried out as [`Outcome::Retry`].
    pub fn fail(mut self, reason: impl Display) {
        if let Some(t) = self.taken.take() {
            self.shared
                .settle(t, Outcome::Retry, Some(reason.to_string()), Settler::Job);
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(t) = self.taken.take() {
            self.shared
                .settle(t, Outcome::Retry, Some(dropped_unfinished()), Settler::Job);
        }
    }
}
