//! The handler runtime (docs/SERVICES.md): `Service`, `Registration` and `Job`, over
//! weida-ffi's `service`. The loop that calls a handler per job and the `Outcome` type are each
//! language's own (kotlin-swift/kotlin `Service.kt`, kotlin-swift/swift `Service.swift`);
//! outcomes cross by name, so weida-ffi spells them once for every binding, and what a job
//! comes to after its handler is weida-ffi's (`Job::conclude`).

use std::collections::HashMap;
use std::sync::Arc;

use weida_ffi::io::OnIo;
use weida_ffi::service::{self as ffi, Kind, Settings};
use weida_ffi::{Call, Fail};

use crate::call::{run, Cancellation};
use crate::config::millis;
use crate::error::Result;
use crate::patterns::{message, Message};
use crate::runtime::{Listener, Runtime};

/// A registration's settings, each absent one the core's default: `concurrency` (handlers at
/// once, 1), `maxAttempts`, `deadLetter`, and `retryTo` (required for a pulling or Rep
/// registration, refused for a queue or fan-out).
#[derive(uniffi::Record, Default)]
pub struct ServiceSettings {
    #[uniffi(default = None)]
    pub concurrency: Option<u32>,
    #[uniffi(default = None)]
    pub max_attempts: Option<u32>,
    #[uniffi(default = None)]
    pub dead_letter: Option<String>,
    #[uniffi(default = None)]
    pub retry_to: Option<String>,
}

fn settings(s: Option<ServiceSettings>) -> Settings {
    let s = s.unwrap_or_default();
    Settings {
        concurrency: s.concurrency,
        max_attempts: s.max_attempts,
        dead_letter: s.dead_letter,
        retry_to: s.retry_to,
    }
}

/// `(name, value)` pairs by their camelCase names, as `Runtime.counters`.
fn pairs(p: &[(&'static str, u64)]) -> HashMap<String, u64> {
    p.iter()
        .map(|(n, v)| (weida_ffi::config::camel_case(n), *v))
        .collect()
}

/// Registrations of handlers on one runtime's endpoints.
#[derive(uniffi::Object)]
pub struct Service {
    rt: weida::Runtime,
}

impl Service {
    /// Starts the registration `kind` (its endpoint bound first, a refusal before anything is).
    async fn start(
        &self,
        kind: Kind<'_>,
        s: Option<ServiceSettings>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<Registration>> {
        let b = ffi::builder(&self.rt, kind, &settings(s))?;
        let r = run(Call::new(ffi::start(b)), cancel).await?;
        Ok(Arc::new(Registration { r: OnIo::new(r) }))
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Service {
    #[uniffi::constructor]
    pub fn new(runtime: Arc<Runtime>) -> Arc<Self> {
        Arc::new(Self {
            rt: weida::Runtime::clone(&runtime.inner),
        })
    }

    /// A queue: binds a Pull path on `listener`; copies go to it. Not cancel-safe (a start
    /// cancelled while it dials makes no registration).
    #[uniffi::method(default(settings = None, cancel = None))]
    pub async fn queue(
        &self,
        listener: Arc<Listener>,
        path: String,
        settings: Option<ServiceSettings>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<Registration>> {
        let kind = Kind::Queue {
            listener: &listener.inner,
            path: &path,
        };
        self.start(kind, settings, cancel).await
    }

    /// A fan-out: binds a Sub path holding `filters`; copies come back to it alone.
    #[uniffi::method(default(settings = None, cancel = None))]
    pub async fn fan_out(
        &self,
        listener: Arc<Listener>,
        path: String,
        filters: Vec<String>,
        settings: Option<ServiceSettings>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<Registration>> {
        let kind = Kind::FanOut {
            listener: &listener.inner,
            path: &path,
            filters,
        };
        self.start(kind, settings, cancel).await
    }

    /// A puller dialling the bound pusher at `address`; `retryTo` is required.
    #[uniffi::method(default(settings = None, cancel = None))]
    pub async fn pulling(
        &self,
        address: String,
        settings: Option<ServiceSettings>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<Registration>> {
        self.start(Kind::Pulling { address }, settings, cancel)
            .await
    }

    /// A subscriber dialling the bound publisher at `address`, holding `filters` (installed
    /// before it returns); `retryTo` is required, and a copy carries its topic as `weida-topic`.
    #[uniffi::method(default(settings = None, cancel = None))]
    pub async fn subscribing(
        &self,
        address: String,
        filters: Vec<String>,
        settings: Option<ServiceSettings>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<Registration>> {
        self.start(Kind::Subscribing { address, filters }, settings, cancel)
            .await
    }

    /// A Rep path: a `reply` outcome's body is the reply; `retryTo` is required.
    #[uniffi::method(default(settings = None, cancel = None))]
    pub async fn replying(
        &self,
        listener: Arc<Listener>,
        path: String,
        settings: Option<ServiceSettings>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<Registration>> {
        let kind = Kind::Replying {
            listener: &listener.inner,
            path: &path,
        };
        self.start(kind, settings, cancel).await
    }
}

/// One endpoint read for a handler.
#[derive(uniffi::Object)]
pub struct Registration {
    r: OnIo<Arc<weida::service::Registration>>,
}

#[uniffi::export(async_runtime = "tokio")]
impl Registration {
    /// The next job, once fewer than `concurrency` are unfinished; `Closed` once stopping.
    /// Cancel-safe: a job taken as it was cancelled goes back to the endpoint, the next
    /// `next`'s (weida-ffi's `next_call`).
    #[uniffi::method(default(cancel = None))]
    pub async fn next(&self, cancel: Option<Arc<Cancellation>>) -> Result<Arc<Job>> {
        let r = Arc::clone(&self.r);
        let j = run(ffi::next_call(r, |j| j, |j| j), cancel).await?;
        Ok(Arc::new(Job { j }))
    }

    /// The counters now by camelCase name: handled, retried, deadLettered, dropped, failed,
    /// inFlight, delayed.
    pub fn counters(&self) -> HashMap<String, u64> {
        pairs(&ffi::counters(&self.r.counters()))
    }

    /// A bound queue's or fan-out's own address, else null.
    pub fn address(&self) -> Option<String> {
        self.r.address().map(|a| a.to_string())
    }

    /// Where copies go.
    pub fn retry_address(&self) -> String {
        self.r.retry_address().to_string()
    }

    /// The warnings logged since the last call, oldest first (the newest 256 are kept): a
    /// failure with its peer, path, attempt and reason; `Unsupported` once; a message dropped
    /// at its limit; a copy not sent. `serve` hands them to its `onWarning`.
    pub fn take_warnings(&self) -> Vec<String> {
        self.r.take_warnings()
    }

    /// Takes nothing more, waits up to `deadline_ms` for handlers in flight and copies due,
    /// then closes: `unfinished`, `copiesDropped`. Not cancel-safe: cancelled, the registration
    /// stays stopping and its endpoints close when it is freed.
    pub async fn stop(&self, deadline_ms: f64) -> Result<HashMap<String, u64>> {
        let r = Arc::clone(&self.r);
        let deadline_s = millis("deadline", deadline_ms)?.as_secs_f64();
        let c = Call::new(async move {
            Ok::<_, Fail>(pairs(&ffi::stopped(&ffi::stop(r, deadline_s).await?)))
        });
        Ok(run(c, None).await?)
    }
}

/// One message handed to a handler, until its outcome is given (once: a second is `Closed`).
/// Freed unfinished, it is a failure, retried as declared.
#[derive(uniffi::Object)]
pub struct Job {
    j: ffi::Job,
}

#[uniffi::export]
impl Job {
    pub fn message(&self) -> Message {
        message(self.j.message().clone())
    }

    /// 1 for a first delivery; n for the copy a retry made of attempt n - 1.
    pub fn attempt(&self) -> u32 {
        self.j.attempt()
    }

    /// `Unsupported`, always: a brokerless hop has nothing to acknowledge.
    pub fn ack(&self) -> Result<()> {
        Ok(self.j.ack()?)
    }

    /// `Unsupported`, always: a brokerless hop has nothing to discard (`drop` is an outcome).
    pub fn discard(&self) -> Result<()> {
        Ok(self.j.discard()?)
    }

    /// Gives the outcome by name (`done`, `reply` with `body`, `ack`, `retry`, `retry_after`
    /// with `delay_ms`, `drop`); `Closed` if it was given already.
    pub fn finish(
        &self,
        outcome: String,
        delay_ms: Option<f64>,
        body: Option<Vec<u8>>,
    ) -> Result<()> {
        let delay_s = delay_ms
            .map(|d| millis("delay", d))
            .transpose()?
            .map(|d| d.as_secs_f64());
        let o = ffi::outcome(&outcome, delay_s, body.map(Into::into))?;
        Ok(self.j.finish(o)?)
    }

    /// The handler failed with `reason`: logged, counted, then a retry.
    pub fn fail(&self, reason: String) -> Result<()> {
        Ok(self.j.fail(&reason)?)
    }

    /// What the handler came to, for `serve`: the outcome as `finish` names it, except that
    /// one the core refuses (a negative delay) is the handler's failure and a job already
    /// given its outcome is left as it is (weida-ffi's `Job::conclude`). Never fails; the
    /// registration's warnings since.
    pub fn conclude(
        &self,
        outcome: String,
        delay_ms: Option<f64>,
        body: Option<Vec<u8>>,
    ) -> Vec<String> {
        let delay_s = delay_ms.map(|d| d / 1000.0);
        self.j.conclude(&outcome, delay_s, body.map(Into::into))
    }

    /// The handler failed with `reason`, for `serve`: as `fail`, unless the job was given its
    /// outcome already (weida-ffi's `Job::conclude_failed`). The registration's warnings since.
    pub fn conclude_failed(&self, reason: String) -> Vec<String> {
        self.j.conclude_failed(&reason)
    }
}
