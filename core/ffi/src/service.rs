//! The handler runtime (docs/SERVICES.md) as every binding holds it: one set of settings, one
//! start per kind of registration, an outcome named as data, a job finished once, and the
//! counters as `(name, value)` pairs. A binding's own part is calling its language's function
//! for each job and passing back what it returned or raised.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use weida::service::{Builder, Outcome, Ready, Registration, Service, ServiceCounters, Stopped};
use weida::{Error, Message};

use crate::call::Call;
use crate::error::Fail;
use crate::io::on_io;

/// A registration's settings, as every binding takes them (Python keyword arguments, Node an
/// options object).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Handlers at once (None: 1).
    pub concurrency: Option<u32>,
    /// The attempt limit.
    pub max_attempts: Option<u32>,
    /// The dead-letter address.
    pub dead_letter: Option<String>,
    /// Where copies go: required for a pulling, subscribing or Rep registration, refused for a bound queue
    /// or fan-out (whose copies go to their own path).
    pub retry_to: Option<String>,
}

/// Which endpoint a registration reads.
pub enum Kind<'a> {
    /// A Pull path bound on the listener.
    Queue {
        listener: &'a weida::Listener,
        path: &'a str,
    },
    /// A Sub path bound on the listener, holding these filters.
    FanOut {
        listener: &'a weida::Listener,
        path: &'a str,
        filters: Vec<String>,
    },
    /// A puller dialling the bound pusher at this address.
    Pulling { address: String },
    /// A subscriber dialling the bound publisher at this address, holding these filters.
    Subscribing {
        address: String,
        filters: Vec<String>,
    },
    /// A Rep path bound on the listener.
    Replying {
        listener: &'a weida::Listener,
        path: &'a str,
    },
}

fn settle<S>(b: Builder<S>, s: &Settings) -> Builder<S> {
    let mut b = b.concurrency(s.concurrency.unwrap_or(1));
    if let Some(n) = s.max_attempts {
        b = b.max_attempts(n);
    }
    if let Some(d) = &s.dead_letter {
        b = b.dead_letter(d);
    }
    b
}

/// The builder for `kind`, its endpoint bound (inside the I/O runtime's context). A pulling or
/// Rep registration without `retry_to`, and a bound one with it, are refused here: a binding
/// has no type to make the first a compile error, so it is `InvalidConfig` before anything is
/// bound or sent (python/tests/test_service.py and node/test/service.test.mjs
/// `a_registration_without_an_address_is_refused_at_start`).
pub fn builder(rt: &weida::Runtime, kind: Kind<'_>, s: &Settings) -> Result<Builder<Ready>, Fail> {
    let service = Service::new(rt);
    let own = |b: Builder<Ready>| -> Result<Builder<Ready>, Fail> {
        if let Some(to) = &s.retry_to {
            return Err(Error::InvalidConfig(format!(
                "retry_to {to:?} on a bound queue or fan-out: its copies go to its own path"
            ))
            .into());
        }
        Ok(settle(b, s))
    };
    let named = |b: Builder<weida::service::NeedsAddress>,
                 what: &str|
     -> Result<Builder<Ready>, Fail> {
        match &s.retry_to {
            Some(to) => Ok(settle(b, s).retry_to(to)),
            None => Err(Error::InvalidConfig(format!(
                "a {what} registration has no address of its own: retry_to must name where its copies go"
            ))
            .into()),
        }
    };
    on_io(|| match kind {
        Kind::Queue { listener, path } => own(service.queue(listener, path)?),
        Kind::FanOut {
            listener,
            path,
            filters,
        } => {
            let f: Vec<&str> = filters.iter().map(String::as_str).collect();
            own(service.fan_out(listener, path, &f)?)
        }
        Kind::Pulling { address } => named(service.pulling(&address), "pulling"),
        Kind::Subscribing { address, filters } => {
            let f: Vec<&str> = filters.iter().map(String::as_str).collect();
            named(service.subscribing(&address, &f), "subscribing")
        }
        Kind::Replying { listener, path } => named(service.replying(listener, path)?, "Rep"),
    })
}

/// Starts `b` (dials what it sends to). Not cancel-safe, as `Builder::start`.
pub async fn start(b: Builder<Ready>) -> Result<Arc<Registration>, Fail> {
    Ok(Arc::new(b.start().await?))
}

/// The outcome a binding names: `done`, `reply` (with `body`), `ack`, `retry`, `retry_after`
/// (with `delay_s`, seconds, finite and not negative) and `drop`; anything else is
/// `InvalidConfig`, so every language spells them the same.
pub fn outcome(name: &str, delay_s: Option<f64>, body: Option<Bytes>) -> Result<Outcome, Fail> {
    Ok(match name {
        "done" => Outcome::Done,
        "reply" => Outcome::Reply(body.unwrap_or_default()),
        "ack" => Outcome::Ack,
        "retry" => Outcome::Retry,
        "drop" => Outcome::Drop,
        "retry_after" => match delay_s {
            Some(d) if d.is_finite() && d >= 0.0 => Outcome::RetryAfter(Duration::from_secs_f64(d)),
            other => {
                return Err(Error::InvalidConfig(format!(
                    "retry_after needs a delay in seconds, finite and not negative (got {other:?})"
                ))
                .into())
            }
        },
        other => {
            return Err(Error::InvalidConfig(format!(
                "unknown outcome {other:?}: done, reply, ack, retry, retry_after or drop"
            ))
            .into())
        }
    })
}

/// A job as a binding holds it: its message and attempt readable any time, its outcome given
/// once (a second `finish` or `fail` is `Closed`). Dropped unfinished, it is a failure, as in
/// the core.
pub struct Job {
    job: Mutex<Option<weida::service::Job>>,
    message: Message,
    attempt: u32,
}

impl Job {
    /// The message.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// Its attempt (1 for a first delivery).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    fn take(&self) -> Result<weida::service::Job, Fail> {
        self.job
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or(Fail::Core(Error::Closed))
    }

    fn with<T>(&self, f: impl FnOnce(&weida::service::Job) -> weida::Result<T>) -> Result<T, Fail> {
        let g = self.job.lock().unwrap_or_else(|p| p.into_inner());
        Ok(f(g.as_ref().ok_or(Fail::Core(Error::Closed))?)?)
    }

    /// `ack()`: `Unsupported`, always (logged once per registration).
    pub fn ack(&self) -> Result<(), Fail> {
        self.with(|j| j.ack())
    }

    /// `drop()` in a binding: `Unsupported`, always.
    pub fn discard(&self) -> Result<(), Fail> {
        self.with(|j| j.discard())
    }

    /// Carries out `outcome` (inside the I/O runtime's context: it may send).
    pub fn finish(&self, outcome: Outcome) -> Result<(), Fail> {
        let j = self.take()?;
        on_io(|| j.finish(outcome));
        Ok(())
    }

    /// Hands the job back untouched (`Job::give_back` in the core), unless it was finished.
    pub fn give_back(&self) {
        if let Ok(j) = self.take() {
            j.give_back();
        }
    }

    /// The handler failed with `reason`: counted, logged, then a retry.
    pub fn fail(&self, reason: &str) -> Result<(), Fail> {
        let j = self.take()?;
        on_io(|| j.fail(reason));
        Ok(())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // A core job's drop settles it (a failure), which may send: inside the I/O runtime.
        let j = self.job.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if j.is_some() {
            on_io(|| drop(j));
        }
    }
}

/// `next` as a binding calls it: a job that reaches the binding's thread after its caller
/// cancelled goes back to the endpoint (`Job::give_back`: the next `next` returns it, nothing
/// counted) instead of being dropped, which would be a failure; so a cancelled `next` loses
/// nothing in any language. `wrap` makes the binding's object of a job, `unwrap` takes it
/// apart again for the hand-back (tested from each binding:
/// `a_next_cancelled_as_its_job_arrives_loses_nothing`).
pub fn next_call<T: Send + 'static>(
    r: Arc<Registration>,
    wrap: impl FnOnce(Job) -> T + Send + 'static,
    unwrap: impl FnOnce(T) -> Job + Send + 'static,
) -> Call<T> {
    Call::new(async move {
        let j = next(r).await?;
        crate::probe::fetched_one(); // for the tests that race a cancel against it
        Ok(wrap(j))
    })
    .keeping(move |t| unwrap(t).give_back())
}

/// The next job. Cancel-safe, as `Registration::next`.
pub async fn next(r: Arc<Registration>) -> Result<Job, Fail> {
    let j = r.next().await?;
    Ok(Job {
        message: j.message().clone(),
        attempt: j.attempt(),
        job: Mutex::new(Some(j)),
    })
}

/// Stops `r` within `deadline_s` seconds. Not cancel-safe, as `Registration::stop`.
pub async fn stop(r: Arc<Registration>, deadline_s: f64) -> Result<Stopped, Fail> {
    if !(deadline_s.is_finite() && deadline_s >= 0.0) {
        return Err(Error::InvalidConfig(format!(
            "a stop's deadline must be seconds, finite and not negative (got {deadline_s})"
        ))
        .into());
    }
    Ok(r.stop(Duration::from_secs_f64(deadline_s)).await)
}

/// How many counters a registration has.
pub const COUNTERS: usize = 7;

/// Every counter as `(name, value)`, in the core's order, so no binding lists the fields.
pub fn counters(c: &ServiceCounters) -> [(&'static str, u64); COUNTERS] {
    [
        ("handled", c.handled),
        ("retried", c.retried),
        ("dead_lettered", c.dead_lettered),
        ("dropped", c.dropped),
        ("failed", c.failed),
        ("in_flight", c.in_flight),
        ("delayed", c.delayed),
    ]
}

/// What a stop left, as `(name, value)`.
pub fn stopped(s: &Stopped) -> [(&'static str, u64); 2] {
    [
        ("unfinished", s.unfinished),
        ("copies_dropped", s.copies_dropped),
    ]
}
