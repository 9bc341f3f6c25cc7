//! The handler runtime (docs/SERVICES.md): `Service`, `Registration` and `Job`, over
//! weida-ffi's `service`. The loop that calls a handler per job and the outcomes are
//! TypeScript's own (lib/index.ts); what a job comes to after its handler is weida-ffi's
//! (`Job::conclude`).

use std::sync::Arc;

use napi::bindgen_prelude::JsObjectValue;
use napi::bindgen_prelude::{BigInt, Object};
use napi::{Env, JsValue};
use napi_derive::napi;
use weida_ffi::config as options;
use weida_ffi::io::OnIo;
use weida_ffi::service::{self as ffi, Kind, Settings};
use weida_ffi::Call;

use crate::error;
use crate::runtime::{promise, Cancel, Listener, Runtime};
use crate::stream::{message_out, BodyIn, Raw};

/// A registration's settings (camelCase in JS: `maxAttempts`, `deadLetter`, `retryTo`).
#[napi(object)]
pub struct ServiceSettings {
    pub concurrency: Option<u32>,
    pub max_attempts: Option<u32>,
    pub dead_letter: Option<String>,
    pub retry_to: Option<String>,
}

fn settings(s: Option<ServiceSettings>) -> Settings {
    s.map(|s| Settings {
        concurrency: s.concurrency,
        max_attempts: s.max_attempts,
        dead_letter: s.dead_letter,
        retry_to: s.retry_to,
    })
    .unwrap_or_default()
}

fn pairs<'env>(env: &'env Env, p: &[(&'static str, u64)]) -> napi::Result<Object<'env>> {
    let mut o = Object::new(env)?;
    for (name, v) in p {
        o.set_named_property(&options::camel_case(name), BigInt::from(*v))?;
    }
    Ok(o)
}

/// Registrations of handlers on one runtime's endpoints.
#[napi]
pub struct Service {
    rt: weida::Runtime,
}

impl Service {
    fn start<'env>(
        &self,
        env: &'env Env,
        kind: Kind<'_>,
        s: Option<ServiceSettings>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let b = ffi::builder(&self.rt, kind, &settings(s)).map_err(|e| error::to_js(env, e))?;
        promise(
            env,
            cancel,
            Call::new(async move { ffi::start(b).await }),
            |_, r| Ok(Registration { r: OnIo::new(r) }),
        )
    }
}

#[napi]
impl Service {
    #[napi(constructor)]
    pub fn new(runtime: &Runtime) -> Self {
        Self {
            rt: weida::Runtime::clone(&runtime.inner),
        }
    }

    /// A queue: binds a Pull path; copies go to it.
    #[napi(ts_return_type = "Promise<Registration>")]
    pub fn queue<'env>(
        &self,
        env: &'env Env,
        listener: &Listener,
        path: String,
        settings: Option<ServiceSettings>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        self.start(
            env,
            Kind::Queue {
                listener: &listener.inner,
                path: &path,
            },
            settings,
            cancel,
        )
    }

    /// A fan-out: binds a Sub path holding `filters`; copies come back to it alone.
    #[napi(ts_return_type = "Promise<Registration>")]
    pub fn fan_out<'env>(
        &self,
        env: &'env Env,
        listener: &Listener,
        path: String,
        filters: Vec<String>,
        settings: Option<ServiceSettings>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let kind = Kind::FanOut {
            listener: &listener.inner,
            path: &path,
            filters,
        };
        self.start(env, kind, settings, cancel)
    }

    /// A puller dialling a bound pusher; `retryTo` is required.
    #[napi(ts_return_type = "Promise<Registration>")]
    pub fn pulling<'env>(
        &self,
        env: &'env Env,
        address: String,
        settings: Option<ServiceSettings>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        self.start(env, Kind::Pulling { address }, settings, cancel)
    }

    /// A subscriber dialling a bound publisher, holding `filters`; `retryTo` is required.
    #[napi(ts_return_type = "Promise<Registration>")]
    pub fn subscribing<'env>(
        &self,
        env: &'env Env,
        address: String,
        filters: Vec<String>,
        settings: Option<ServiceSettings>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        self.start(
            env,
            Kind::Subscribing { address, filters },
            settings,
            cancel,
        )
    }

    /// A Rep path; `retryTo` is required.
    #[napi(ts_return_type = "Promise<Registration>")]
    pub fn replying<'env>(
        &self,
        env: &'env Env,
        listener: &Listener,
        path: String,
        settings: Option<ServiceSettings>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        self.start(
            env,
            Kind::Replying {
                listener: &listener.inner,
                path: &path,
            },
            settings,
            cancel,
        )
    }
}

/// One endpoint read for a handler.
#[napi]
pub struct Registration {
    r: OnIo<Arc<weida::service::Registration>>,
}

#[napi]
impl Registration {
    /// The next job; rejects `ERR_WEIDA_CLOSED` once stopping. Cancel-safe.
    #[napi(ts_return_type = "Promise<Job>")]
    pub fn next<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = Arc::clone(&self.r);
        promise(env, cancel, ffi::next_call(r, |j| j, |j| j), |_, j| {
            Ok(Job { j })
        })
    }

    /// handled, retried, deadLettered, dropped, failed, inFlight, delayed (BigInts).
    #[napi(ts_return_type = "ServiceCounters")]
    pub fn counters<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        pairs(env, &ffi::counters(&self.r.counters()))
    }

    /// A bound queue's or fan-out's own address, else null.
    #[napi(getter)]
    pub fn address(&self) -> Option<String> {
        self.r.address().map(|a| a.to_string())
    }

    /// The warnings logged since the last call, oldest first (the newest 256 are kept).
    #[napi]
    pub fn take_warnings(&self) -> Vec<String> {
        self.r.take_warnings()
    }

    /// Where copies go.
    #[napi(getter)]
    pub fn retry_address(&self) -> String {
        self.r.retry_address().to_string()
    }

    /// Takes nothing more, waits up to `deadline` seconds for handlers in flight and copies
    /// due, then closes: `{unfinished, copiesDropped}`. Not cancel-safe.
    #[napi(ts_return_type = "Promise<Stopped>")]
    pub fn stop<'env>(&self, env: &'env Env, deadline: f64) -> napi::Result<Object<'env>> {
        let r = Arc::clone(&self.r);
        promise(
            env,
            None,
            Call::new(async move { ffi::stop(r, deadline).await }),
            |env, s| {
                let o = pairs(env, &ffi::stopped(&s))?;
                Ok(Raw(o.raw()))
            },
        )
    }
}

/// One message handed to a handler, until its outcome is given.
#[napi]
pub struct Job {
    j: ffi::Job,
}

#[napi]
impl Job {
    /// The message.
    #[napi(ts_return_type = "Message")]
    pub fn message(&self, env: Env) -> napi::Result<Raw> {
        message_out(&env, self.j.message().clone())
    }

    /// 1 for a first delivery; n for the copy a retry made of attempt n - 1.
    #[napi(getter)]
    pub fn attempt(&self) -> u32 {
        self.j.attempt()
    }

    /// Throws `ERR_WEIDA_UNSUPPORTED`, always: a brokerless hop has nothing to acknowledge.
    #[napi]
    pub fn ack(&self, env: Env) -> napi::Result<()> {
        self.j.ack().map_err(|e| error::to_js(&env, e))
    }

    /// Throws `ERR_WEIDA_UNSUPPORTED`, always.
    #[napi]
    pub fn discard(&self, env: Env) -> napi::Result<()> {
        self.j.discard().map_err(|e| error::to_js(&env, e))
    }

    /// Gives the outcome by name (`done`, `reply`, `ack`, `retry`, `retry_after`, `drop`);
    /// throws `ERR_WEIDA_CLOSED` if it was given already.
    #[napi]
    pub fn finish(
        &self,
        env: Env,
        outcome: String,
        delay: Option<f64>,
        #[napi(ts_arg_type = "string | Uint8Array | undefined | null")] body: Option<BodyIn>,
    ) -> napi::Result<()> {
        let o =
            ffi::outcome(&outcome, delay, body.map(|b| b.0)).map_err(|e| error::to_js(&env, e))?;
        self.j.finish(o).map_err(|e| error::to_js(&env, e))
    }

    /// The handler failed with `reason`: logged, counted, then a retry.
    #[napi]
    pub fn fail(&self, env: Env, reason: String) -> napi::Result<()> {
        self.j.fail(&reason).map_err(|e| error::to_js(&env, e))
    }

    /// What the handler came to, for `serve`: weida-ffi's `Job::conclude` (a refused outcome
    /// a failure, a job already finished left as it is); the registration's warnings since.
    #[napi]
    pub fn conclude(
        &self,
        outcome: String,
        delay: Option<f64>,
        #[napi(ts_arg_type = "string | Uint8Array | undefined | null")] body: Option<BodyIn>,
    ) -> Vec<String> {
        self.j.conclude(&outcome, delay, body.map(|b| b.0))
    }

    /// The handler failed with `reason`, for `serve`: weida-ffi's `Job::conclude_failed`; the
    /// registration's warnings since.
    #[napi]
    pub fn conclude_failed(&self, reason: String) -> Vec<String> {
        self.j.conclude_failed(&reason)
    }
}
