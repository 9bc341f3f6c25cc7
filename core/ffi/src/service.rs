//! The handler runtime (docs/SERVICES.md) as every binding holds it: one set of settings, one
//! start per kind of registration, an outcome named as data, a job finished once, and the
//! counters as `(name, value)` pairs. A binding's own part is calling its language's function
//! for each job and passing back what it returned or raised.

use std::sync::{Arc, Mutex, Weak};
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
/// (with `delay_s`, seconds, finite, not negative and no longer than a `Duration` holds) and
/// `drop`; anything else is `InvalidConfig`, so every language spells them the same.
pub fn outcome(name: &str, delay_s: Option<f64>, body: Option<Bytes>) -> Result<Outcome, Fail> {
    Ok(match name {
        "done" => Outcome::Done,
        "reply" => Outcome::Reply(body.unwrap_or_default()),
        "ack" => Outcome::Ack,
        "retry" => Outcome::Retry,
        "drop" => Outcome::Drop,
        "retry_after" => match delay_s.map(Duration::try_from_secs_f64) {
            // try_from refuses a negative, NaN or infinite delay, and one too long to hold.
            Some(Ok(d)) => Outcome::RetryAfter(d),
            _ => {
                return Err(Error::InvalidConfig(format!(
                "retry_after needs a delay in seconds, finite and not negative (got {delay_s:?})"
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
/// the core. A binding's `serve` loop gives the outcome with [`Job::conclude`] or
/// [`Job::conclude_failed`] instead, which never fail.
pub struct Job {
    job: Mutex<Option<weida::service::Job>>,
    message: Message,
    attempt: u32,
    /// For the warnings `conclude` drains; weak, so a job a program keeps does not keep its
    /// registration (whose drop closes the endpoint) alive.
    registration: Weak<Registration>,
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

    /// What a handler came to, as every binding's `serve` loop gives it: the outcome so
    /// named ([`outcome`]) is carried out. An outcome [`outcome`] refuses (a negative delay,
    /// an unknown name) is the handler's failure, the refusal its reason: counted `failed`,
    /// logged with the message's peer and path, retried as declared. A job the handler gave
    /// its outcome itself (the pull API) is left as it is. Never fails, where `finish` is
    /// strict. Returns the registration's warnings, drained after the job, for the loop to
    /// log in its language's way (each binding's `a_refused_outcome_is_a_failure_and_serve_goes_on`
    /// and `a_job_the_handler_finished_itself_is_not_finished_twice`).
    pub fn conclude(&self, name: &str, delay_s: Option<f64>, body: Option<Bytes>) -> Vec<String> {
        match outcome(name, delay_s, body) {
            Ok(o) => {
                // Closed: the handler finished the job itself.
                let _ = self.finish(o);
                self.warnings()
            }
            Err(e) => self.conclude_failed(&format!("the outcome was refused: {}", e.message())),
        }
    }

    /// The handler failed (threw, was cancelled, returned what names no outcome) with
    /// `reason`: as `fail`, unless the handler already gave the job its outcome itself, when
    /// it is left as it is. Never fails. Returns the registration's warnings, as `conclude`.
    pub fn conclude_failed(&self, reason: &str) -> Vec<String> {
        // Closed: the handler finished the job itself.
        let _ = self.fail(reason);
        self.warnings()
    }

    /// The registration's warnings since they were last taken; none once it is gone.
    fn warnings(&self) -> Vec<String> {
        match self.registration.upgrade() {
            Some(r) => {
                let w = r.take_warnings();
                // The last reference, if the binding's went meanwhile: its drop closes the
                // endpoint, inside the I/O runtime.
                on_io(|| drop(r));
                w
            }
            None => Vec::new(),
        }
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
        registration: Arc::downgrade(&r),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::io;

    /// A queue on an in-process listener, started with no limit, `n` messages pushed to it;
    /// the runtimes and listener kept as long as the registration.
    fn queue_of(n: usize) -> (Arc<Registration>, impl Sized) {
        let name = format!("weida+inproc://ffi-service-{}", std::process::id());
        io().block_on(async move {
            let rt = weida::Runtime::new(Default::default()).unwrap();
            let listener = rt.bind(&name).await.unwrap();
            let kind = Kind::Queue {
                listener: &listener,
                path: "/jobs",
            };
            let r = start(builder(&rt, kind, &Settings::default()).unwrap())
                .await
                .unwrap();
            let pusher = rt.pusher();
            pusher
                .connect(&r.address().unwrap().to_string())
                .await
                .unwrap();
            for i in 0..n {
                pusher.send(format!("m{i}")).await.unwrap();
            }
            (r, (rt, listener, pusher))
        })
    }

    fn next_of(r: &Arc<Registration>) -> Job {
        io().block_on(next(Arc::clone(r))).unwrap()
    }

    #[test]
    fn conclude_fails_a_refused_outcome_and_leaves_a_job_finished_by_its_handler() {
        let (r, _keep) = queue_of(4);
        // A refused outcome: the handler's failure, the refusal its reason, with no limit
        // declared a drop; the warning is drained with it.
        let warnings = next_of(&r).conclude("retry_after", Some(-1.0), None);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("path=/jobs")
                && warnings[0]
                    .contains("reason=the outcome was refused: invalid configuration: retry_after"),
            "{warnings:?}"
        );
        let c = r.counters();
        assert_eq!((c.failed, c.dropped, c.handled), (1, 1, 0));
        // A delay too long for a Duration is refused too, not a panic.
        assert!(next_of(&r).conclude("retry_after", Some(1e300), None).len() == 1);
        assert_eq!(r.counters().failed, 2);
        // Finished by its handler (the pull API): neither conclude touches it again.
        let j = next_of(&r);
        j.finish(Outcome::Done).unwrap();
        assert_eq!(j.conclude("done", None, None), Vec::<String>::new());
        assert_eq!(j.conclude_failed("late"), Vec::<String>::new());
        // The pull API stays strict: a second finish is Closed.
        assert!(matches!(
            j.finish(Outcome::Done),
            Err(Fail::Core(Error::Closed))
        ));
        let j = next_of(&r);
        assert!(j.conclude_failed("no disk")[0].contains("reason=no disk"));
        let c = r.counters();
        assert_eq!((c.handled, c.failed, c.dropped, c.in_flight), (1, 3, 3, 0));
    }
}
