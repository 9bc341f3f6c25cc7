//! A registration: one endpoint read for a handler, its bounded concurrency, what each outcome
//! does, and its stop.

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
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
    /// by a pusher of this registration's. Declaring it makes `Retry` a copy.
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
        if let (Source::Pulling(p), Some(a)) = (&self.source, &self.dial) {
            p.connect(a).await?;
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
        Ok(Registration {
            shared: Arc::new(Shared {
                name,
                source,
                own: self.own,
                retry,
                retry_address,
                dead,
                max_attempts: self.max_attempts,
                limit_declared,
                concurrency: self.concurrency,
                permits: Arc::new(Semaphore::new(self.concurrency as usize)),
                count: Count::default(),
                warned: AtomicBool::new(false),
                stopping: watch::channel(false).0,
                abandon: watch::channel(false).0,
                tasks: Mutex::new(JoinSet::new()),
                warnings: Mutex::default(),
                handle: tokio::runtime::Handle::current(),
            }),
        })
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
    concurrency: u32,
    permits: Arc<Semaphore>,
    count: Count,
    /// `Unsupported` was logged (once per registration).
    warned: AtomicBool,
    /// No more jobs.
    stopping: watch::Sender<bool>,
    /// A stop's deadline passed: copies still waiting are dropped.
    abandon: watch::Sender<bool>,
    /// Copies waiting or being sent, and replies being written.
    tasks: Mutex<JoinSet<()>>,
    /// What was logged, for `take_warnings`.
    warnings: Mutex<std::collections::VecDeque<String>>,
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
    }

    fn unsupported(&self, what: &str) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            self.warn(format!(
                "{what}: Unsupported, a brokerless hop has nothing to acknowledge or discard; \
                 the message counts as {} (logged once per registration)",
                if what == "ack" {
                    "processed"
                } else {
                    "dropped"
                }
            ));
        }
    }

    /// A handler slot, waited for; `Closed` once stopping.
    async fn wait_permit(&self) -> Result<OwnedSemaphorePermit> {
        let mut stop = self.stopping.subscribe();
        tokio::select! {
            biased;
            _ = stop.wait_for(|v| *v) => Err(Error::Closed),
            p = self.permits.clone().acquire_owned() => p.map_err(|_| Error::Closed),
        }
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

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().unwrap();
        while tasks.try_join_next().is_some() {} // what finished, forgotten
        tasks.spawn_on(task, &self.handle);
    }

    /// A copy of `message` as the attempt after `attempt`, after `delay` (to the retry
    /// address), or at the limit to the dead-letter address (at once) or nowhere.
    fn copy(self: &Arc<Self>, message: Message, attempt: u32, delay: Duration) {
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
/// are carried out as far as the closed endpoints allow), and copies it dropped.
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
        let s = &self.shared;
        if *s.stopping.borrow() {
            return Err(Error::Closed);
        }
        // Under load a handler slot is free and a message is queued: neither waits, and the
        // machinery that would (a stop watch, a select, the endpoint's receive) is boxed
        // apart, so this future stays small and is cheap to make and move.
        let permit = match s.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => Box::pin(s.wait_permit()).await?,
        };
        let arrival = match s.source.try_recv() {
            Some(a) => a?,
            None => Box::pin(s.wait_arrival()).await?,
        };
        Count::add(&s.count.in_flight);
        Ok(Job {
            attempt: attempt_of(&arrival.message.meta.metadata),
            message: Some(arrival.message),
            exchange: arrival.exchange,
            permit: Some(permit),
            shared: s.clone(),
        })
    }

    /// Takes messages and runs `handler` on each, at most `concurrency` at once, until the
    /// registration stops and the handlers it started have finished; then returns `Ok`.
    /// `handler` gets the message and its attempt (1 for a first delivery); its `Err` is a
    /// failure (logged with the message's peer and path, counted `failed`, then a `Retry`),
    /// and so is a panic. The handlers run inside the future this returns (with concurrency
    /// 1, one after the other, in the order the endpoint hands messages out): no task is
    /// spawned per message, which costs more than a small handler does; a handler that needs
    /// another thread spawns its work itself. Not cancel-safe: dropped, it drops the handlers
    /// it started, each then a failure retried as declared; call [`Registration::stop`] to end
    /// it instead, and await it to its end.
    pub async fn run<F, Fut, E>(&self, handler: F) -> Result<()>
    where
        F: Fn(Message, u32) -> Fut,
        Fut: Future<Output = std::result::Result<Outcome, E>> + Send + 'static,
        E: Display + Send + 'static,
    {
        use futures_util::stream::{FuturesUnordered, StreamExt};
        use futures_util::FutureExt;
        let one = |job: Job| {
            // A handler that panics is a failure of its message, not the end of the loop.
            let work = std::panic::AssertUnwindSafe(handler(job.message().clone(), job.attempt));
            async move {
                match work.catch_unwind().await {
                    Ok(Ok(outcome)) => job.finish(outcome),
                    Ok(Err(e)) => job.fail(e),
                    Err(_) => job.fail("the handler panicked"),
                }
            }
        };
        if self.shared.concurrency == 1 {
            // One at a time: each handler is awaited where it is, with nothing to schedule.
            loop {
                match self.next().await {
                    Ok(job) => one(job).await,
                    Err(Error::Closed) => return Ok(()),
                    Err(e) => {
                        tracing::debug!(registration = %self.shared.name, error = %e, "a message the endpoint could not take whole")
                    }
                }
            }
        }
        let mut running = FuturesUnordered::new();
        let mut open = true;
        while open || !running.is_empty() {
            tokio::select! {
                biased;
                Some(()) = running.next(), if !running.is_empty() => {}
                next = self.next(), if open => match next {
                    Ok(job) => running.push(one(job)),
                    Err(Error::Closed) => open = false,
                    Err(e) => tracing::debug!(registration = %self.shared.name, error = %e, "a message the endpoint could not take whole"),
                },
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

    /// The counters now.
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
        s.stopping.send_replace(true);
        let all = s.concurrency;
        let unfinished = match tokio::time::timeout_at(until, s.permits.acquire_many(all)).await {
            Ok(_) => 0,
            Err(_) => s.count.in_flight.load(Ordering::Relaxed),
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
        self.shared.stopping.send_replace(true);
    }
}

/// One message handed to a handler, until it says its [`Outcome`]. Dropped unfinished, it is
/// a failure (`failed`, then a `Retry`), so a handler that panics is counted, not lost
/// silently.
pub struct Job {
    /// Until the job is settled.
    message: Option<Message>,
    attempt: u32,
    exchange: Option<Box<Exchange>>,
    permit: Option<OwnedSemaphorePermit>,
    shared: Arc<Shared>,
}

impl Job {
    /// The message.
    pub fn message(&self) -> &Message {
        self.message
            .as_ref()
            .expect("a job's message is there until it is settled")
    }

    /// Which attempt this is: 1 for a first delivery, n for the copy a retry made of
    /// attempt n − 1 (its `weida-attempt` header).
    pub fn attempt(&self) -> u32 {
        self.attempt
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
        self.settle(outcome, None);
    }

    /// The handler failed: logged with the message's peer and path, counted `failed`, then
    /// carried out as [`Outcome::Retry`].
    pub fn fail(mut self, reason: impl Display) {
        self.settle(Outcome::Retry, Some(reason.to_string()));
    }

    fn settle(&mut self, outcome: Outcome, failure: Option<String>) {
        let Some(permit) = self.permit.take() else {
            return; // settled already
        };
        let s = self.shared.clone();
        Count::sub(&s.count.in_flight);
        // Taken, not cloned: a settled job's message is not read again (its `Drop` sees no
        // permit and does nothing).
        let message = self
            .message
            .take()
            .expect("an unsettled job holds its message");
        if let Some(reason) = &failure {
            Count::add(&s.count.failed);
            let peer = match &message.meta.peer {
                Some(p) => p.to_string(),
                None => "none".to_string(),
            };
            s.warn(format!(
                "a handler failed: path={} peer={peer} attempt={} reason={reason}",
                message.meta.path, self.attempt
            ));
        }
        let refusal = match outcome {
            Outcome::Done | Outcome::Reply(_) | Outcome::Ack => {
                if outcome == Outcome::Ack {
                    s.unsupported("ack");
                }
                Count::add(&s.count.handled);
                if let Some(ex) = self.exchange.take() {
                    let body = match outcome {
                        Outcome::Reply(b) => b,
                        _ => bytes::Bytes::new(),
                    };
                    s.spawn(async move {
                        if let Err(e) = ex.reply(body).await {
                            tracing::debug!(error = %e, "a reply could not be written");
                        }
                    });
                }
                None
            }
            Outcome::Drop => {
                s.unsupported("drop");
                Count::add(&s.count.dropped);
                Some("dropped by the handler".to_string())
            }
            Outcome::Retry if !s.limit_declared => {
                Count::add(&s.count.dropped);
                tracing::debug!(registration = %s.name, "retry with no attempt limit declared: not redelivered (at most once)");
                Some(match &failure {
                    Some(r) => format!("the handler failed: {r}"),
                    None => "the handler asked for a retry, and none is declared".to_string(),
                })
            }
            Outcome::Retry => {
                s.copy(message, self.attempt, Duration::ZERO);
                Some("retried: a copy was sent on".to_string())
            }
            Outcome::RetryAfter(d) => {
                s.copy(message, self.attempt, d);
                Some("retried: a copy was sent on".to_string())
            }
        };
        if let (Some(reason), Some(ex)) = (refusal, self.exchange.take()) {
            s.spawn(async move {
                if let Err(e) = ex.reject(&reason).await {
                    tracing::debug!(error = %e, "a refusal could not be written");
                }
            });
        }
        drop(permit);
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if self.permit.is_some() {
            let why = if std::thread::panicking() {
                "the handler panicked"
            } else {
                "the job was dropped before it finished"
            };
            self.settle(Outcome::Retry, Some(why.to_string()));
        }
    }
}
