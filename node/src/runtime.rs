//! `Runtime` and `Listener`, and how every async call settles its JS promise: weida-ffi's
//! `Call` (the eager first poll, the ready streak, the I/O thread, cancellation, the orphan
//! hand-back; docs/BINDINGS.md, "Threading") with a napi threadsafe deferred as its sink, so no
//! JS runs off the main thread and the event loop never blocks.

use std::ptr;

use napi::bindgen_prelude::{BigInt, ClassInstance, JsObjectValue, Object, ToNapiValue};
use napi::{sys, Env, JsValue};
use napi_derive::napi;
use weida_ffi::config as options;
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::{Call, Completion, Fail, Turn};

use crate::config::{endpoint_options, pairs, JS};
use crate::error;
use crate::identity::{Identity, Trust};
use crate::patterns::{Acceptor, Peer, Publisher, Puller, Pusher, Replier, Requester, Subscriber};
use crate::stream::Raw;

/// A cancellation the TypeScript layer ties to an AbortSignal: `cancel()` cancels the call it
/// was passed to (weida-ffi's `Cancel`: its core future is dropped, which cancels the
/// operation in the core; a request or a transfer being written is reset, and the peer sees
/// Canceled).
#[napi]
pub struct Cancel {
    pub(crate) inner: weida_ffi::Cancel,
}

#[napi]
impl Cancel {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self {
            inner: weida_ffi::Cancel::new(),
        }
    }

    /// Aborts the call this was passed to; a call it is passed to later aborts at once.
    #[napi]
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

/// Runs `c` and returns a promise of `convert(output)`; `convert` runs on the JS thread, and a
/// failure becomes its JS error there ([`error::to_js`]). `cancel` cancels it: the promise
/// rejects with an AbortError.
pub(crate) fn promise<'env, T, V, C>(
    env: &'env Env,
    cancel: Option<&Cancel>,
    c: Call<T>,
    convert: C,
) -> napi::Result<Object<'env>>
where
    T: Send + 'static,
    V: ToNapiValue + 'static,
    C: FnOnce(&Env, T) -> napi::Result<V> + Send + 'static,
{
    let cancel = cancel.map(|c| c.inner.clone());
    if cancel.as_ref().is_some_and(weida_ffi::Cancel::is_cancelled) {
        return settled::<V>(env, Err(error::to_js(env, Fail::Aborted)));
    }
    let c = match c.poll_turn(cancel.as_ref()) {
        Turn::Now(r) => {
            let r = r
                .map_err(|f| error::to_js(env, f))
                .and_then(|v| convert(env, v));
            return settled(env, r);
        }
        Turn::Later(done) => Err(done),
        Turn::Wait(c) => Ok(c),
    };
    let (deferred, promise) = match env.create_deferred() {
        Ok(d) => d,
        Err(e) => {
            if let Err(done) = c {
                // Finished but undeliverable: its value goes back as a cancelled one's would.
                let _ = done.settle(true);
            }
            return Err(e);
        }
    };
    let deliver = move |done: Completion<T>| {
        deferred.resolve(move |env: Env| match done.settle(false) {
            Ok(v) => convert(&env, v),
            Err(f) => Err(error::to_js(&env, f)),
        });
    };
    match c {
        // Resolved through the threadsafe function on the loop's next turn, queued from here.
        Err(done) => deliver(done),
        Ok(c) => c.on_io_thread(cancel, deliver),
    }
    Ok(promise)
}

/// A promise already settled with `r`.
fn settled<'env, V: ToNapiValue>(env: &'env Env, r: napi::Result<V>) -> napi::Result<Object<'env>> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: a napi call on the JS thread with its env; the deferred is settled right below.
    let status = unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) };
    if status != sys::Status::napi_ok {
        return Err(napi::Error::from_reason("could not create a promise"));
    }
    // SAFETY: as above; `to_napi_value` makes the value in this env.
    let status = unsafe {
        match r.and_then(|v| V::to_napi_value(env.raw(), v)) {
            Ok(v) => sys::napi_resolve_deferred(env.raw(), deferred, v),
            Err(e) => {
                let e = napi::Error::to_napi_value(env.raw(), e)?;
                sys::napi_reject_deferred(env.raw(), deferred, e)
            }
        }
    };
    if status != sys::Status::napi_ok {
        return Err(napi::Error::from_reason("could not settle a promise"));
    }
    Ok(Object::from_raw(env.raw(), promise))
}

/// The process-wide entry point: binds listeners, makes the dialling endpoints.
#[napi]
pub struct Runtime {
    pub(crate) inner: OnIo<weida::Runtime>,
    /// What `bind` presents; kept for `bind(address, {requireClient})`.
    identity: weida::Identity,
}

#[napi]
impl Runtime {
    /// `new Runtime({identity, trust, limits, presentIdentity, sendTimeoutMs, udpBuffer,
    /// ordering, laneMaxMessage})`: the options of weida-ffi's table, checked there.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "RuntimeOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Self> {
        let mut cfg = weida::RuntimeConfig::default();
        if let Some(o) = &options {
            if let Some(i) = o.get::<ClassInstance<'_, Identity>>("identity")? {
                cfg.identity = i.inner.clone();
            }
            if let Some(t) = o.get::<ClassInstance<'_, Trust>>("trust")? {
                cfg.trust = t.inner.clone();
            }
            if let Some(l) = o.get::<Object<'_>>("limits")? {
                cfg.limits =
                    options::limits(JS, pairs(&l, &[])?).map_err(|e| error::throw(&env, e))?;
            }
            if let Some(r) = o.get::<Object<'_>>("reconnect")? {
                cfg.reconnect =
                    options::reconnect(JS, pairs(&r, &[])?).map_err(|e| error::throw(&env, e))?;
            }
            options::apply(
                &options::RUNTIME,
                &mut cfg,
                JS,
                pairs(o, &["identity", "trust", "limits", "reconnect"])?,
            )
            .map_err(|e| error::throw(&env, e))?;
        }
        let identity = cfg.identity.clone();
        let inner = weida_ffi::runtime::runtime(cfg).map_err(|f| error::to_js(&env, f))?;
        Ok(Self {
            inner: OnIo::new(inner),
            identity,
        })
    }

    /// The `sha256:…` fingerprint of the key this runtime presents.
    #[napi(getter)]
    pub fn fingerprint(&self) -> String {
        self.inner.fingerprint().to_string()
    }

    /// Binds `address` (no path); `requireClient` makes a client key mandatory.
    #[napi(ts_return_type = "Promise<Listener>")]
    pub fn bind<'env>(
        &self,
        env: &'env Env,
        address: String,
        require_client: Option<&Trust>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let rt = weida::Runtime::clone(&self.inner);
        let tls = weida::ServerTls::new(self.identity.clone());
        let tls = match require_client {
            Some(t) => tls.require_client(t.inner.clone()),
            None => tls,
        };
        promise(
            env,
            cancel,
            Call::new(async move { Ok(rt.bind_with(&address, tls).await?) }),
            |_, l| {
                Ok(Listener {
                    inner: OnIo::new(l),
                })
            },
        )
    }

    #[napi]
    pub fn pusher(
        &self,
        env: Env,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Pusher> {
        let o = endpoint_options(&env, options)?;
        let e = on_io(|| self.inner.pusher_with(&o)).map_err(|e| error::throw(&env, e))?;
        Ok(Pusher::new(e))
    }

    #[napi]
    pub fn requester(
        &self,
        env: Env,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Requester> {
        let o = endpoint_options(&env, options)?;
        let e = on_io(|| self.inner.requester_with(&o)).map_err(|e| error::throw(&env, e))?;
        Ok(Requester::new(e))
    }

    /// A puller that dials bound pushers.
    #[napi]
    pub fn puller(
        &self,
        env: Env,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<crate::bound_push::DialingPuller> {
        let o = endpoint_options(&env, options)?;
        let p = on_io(|| self.inner.puller_with(&o)).map_err(|e| error::throw(&env, e))?;
        Ok(crate::bound_push::DialingPuller::new(p))
    }

    /// A dialling pair.
    #[napi]
    pub fn pair(
        &self,
        env: Env,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<crate::pair::Pair> {
        let o = endpoint_options(&env, options)?;
        let p = on_io(|| self.inner.pair_with(&o)).map_err(|e| error::throw(&env, e))?;
        Ok(crate::pair::Pair::new(p))
    }

    /// A publisher that dials collectors.
    #[napi]
    pub fn publisher(
        &self,
        env: Env,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<crate::collector::DialingPublisher> {
        let o = endpoint_options(&env, options)?;
        let p = on_io(|| self.inner.publisher_with(&o)).map_err(|e| error::throw(&env, e))?;
        Ok(crate::collector::DialingPublisher::new(p))
    }

    /// A bus member bound at `path` on `listener` (this runtime's).
    #[napi]
    pub fn bus(
        &self,
        env: Env,
        listener: &Listener,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<crate::bus::Bus> {
        let o = endpoint_options(&env, options)?;
        let b = on_io(|| self.inner.bus_with(&listener.inner, &path, &o))
            .map_err(|e| error::throw(&env, e))?;
        Ok(crate::bus::Bus::new(b))
    }

    #[napi]
    pub fn surveyor(
        &self,
        env: Env,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<crate::survey::Surveyor> {
        let o = endpoint_options(&env, options)?;
        let e = on_io(|| self.inner.surveyor_with(&o)).map_err(|e| error::throw(&env, e))?;
        Ok(crate::survey::Surveyor::new(e))
    }

    #[napi]
    pub fn peer(
        &self,
        env: Env,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Peer> {
        let o = endpoint_options(&env, options)?;
        let e = on_io(|| self.inner.peer_with(&o)).map_err(|e| error::throw(&env, e))?;
        Ok(Peer::new(e))
    }

    #[napi]
    pub fn subscriber(
        &self,
        env: Env,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Subscriber> {
        let o = endpoint_options(&env, options)?;
        let e = on_io(|| self.inner.subscriber_with(&o)).map_err(|e| error::throw(&env, e))?;
        Ok(Subscriber::new(e))
    }

    /// Stops admitting work, writes out the pushers' outboxes, gives finished transfers until
    /// `deadlineMs` to reach the peer's transport, then closes everything.
    #[napi(ts_return_type = "Promise<{ delivered: bigint; outstanding: bigint; unsent: bigint }>")]
    pub fn drain<'env>(&self, env: &'env Env, deadline_ms: f64) -> napi::Result<Object<'env>> {
        let rt = weida::Runtime::clone(&self.inner);
        let deadline = options::duration_arg("deadline", options::Given::Float(deadline_ms), JS);
        promise(
            env,
            None,
            Call::new(async move { Ok(rt.drain(deadline?).await) }),
            |env, d| {
                let mut o = Object::new(env)?;
                o.set_named_property("delivered", BigInt::from(d.delivered))?;
                o.set_named_property("outstanding", BigInt::from(d.outstanding))?;
                o.set_named_property("unsent", BigInt::from(d.unsent))?;
                Ok(Raw(o.raw()))
            },
        )
    }

    /// Closes every connection and listener now; pending calls end with their error.
    #[napi]
    pub fn shutdown(&self) {
        on_io(|| self.inner.shutdown());
    }

    /// Closes every connection and listener now, as `shutdown` does, and resolves once the
    /// closes have been sent (at most a second).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let rt = weida::Runtime::clone(&self.inner);
        promise(
            env,
            None,
            Call::new(async move {
                rt.close().await;
                Ok::<_, Fail>(())
            }),
            |_, ()| Ok(()),
        )
    }

    /// The counters, as BigInts by camelCase name (weida-ffi lists them).
    #[napi(ts_return_type = "Counters")]
    pub fn counters<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let mut o = Object::new(env)?;
        for (name, v) in weida_ffi::runtime::counters(&self.inner.counters()) {
            o.set_named_property(&options::camel_case(name), BigInt::from(v))?;
        }
        Ok(o)
    }
}

/// A bound address; endpoints are registered on it by path.
#[napi]
pub struct Listener {
    pub(crate) inner: OnIo<weida::Listener>,
}

#[napi]
impl Listener {
    /// The bound address: over QUIC with its real port and the `sha256:` pin of its key.
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    #[napi]
    pub fn puller(
        &self,
        env: Env,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Puller> {
        let o = endpoint_options(&env, options)?;
        let p = on_io(|| self.inner.puller_with(&path, &o)).map_err(|e| error::throw(&env, e))?;
        Ok(Puller::new(p))
    }

    #[napi]
    pub fn replier(
        &self,
        env: Env,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Replier> {
        let o = endpoint_options(&env, options)?;
        let r = on_io(|| self.inner.replier_with(&path, &o)).map_err(|e| error::throw(&env, e))?;
        Ok(Replier::new(r))
    }

    /// A respondent: a `Replier` by another name.
    #[napi]
    pub fn respondent(
        &self,
        env: Env,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Replier> {
        self.replier(env, path, options)
    }

    #[napi]
    pub fn acceptor(
        &self,
        env: Env,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Acceptor> {
        let o = endpoint_options(&env, options)?;
        let a = on_io(|| self.inner.acceptor_with(&path, &o)).map_err(|e| error::throw(&env, e))?;
        Ok(Acceptor::new(a))
    }

    #[napi]
    pub fn publisher(
        &self,
        env: Env,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<Publisher> {
        let o = endpoint_options(&env, options)?;
        let p =
            on_io(|| self.inner.publisher_with(&path, &o)).map_err(|e| error::throw(&env, e))?;
        Ok(Publisher::new(p))
    }

    /// Binds a pusher at `path`.
    #[napi]
    pub fn pusher(
        &self,
        env: Env,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<crate::bound_push::BoundPusher> {
        let o = endpoint_options(&env, options)?;
        let p = on_io(|| self.inner.pusher_with(&path, &o)).map_err(|e| error::throw(&env, e))?;
        Ok(crate::bound_push::BoundPusher::new(p))
    }

    /// Binds a pair at `path`.
    #[napi]
    pub fn pair(
        &self,
        env: Env,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<crate::pair::Pair> {
        let o = endpoint_options(&env, options)?;
        let p = on_io(|| self.inner.pair_with(&path, &o)).map_err(|e| error::throw(&env, e))?;
        Ok(crate::pair::Pair::new(p))
    }

    /// Binds a collector at `path`.
    #[napi]
    pub fn subscriber(
        &self,
        env: Env,
        path: String,
        #[napi(ts_arg_type = "EndpointOptions | undefined | null")] options: Option<Object<'_>>,
    ) -> napi::Result<crate::collector::BoundSubscriber> {
        let o = endpoint_options(&env, options)?;
        let s =
            on_io(|| self.inner.subscriber_with(&path, &o)).map_err(|e| error::throw(&env, e))?;
        Ok(crate::collector::BoundSubscriber::new(s))
    }

    /// The connections this listener accepts from now on: `connected` (with `url`, where
    /// the connection comes from, and the key it presented) and `lost` (with its cause).
    #[napi]
    pub fn events(&self) -> crate::events::PeerEvents {
        crate::events::PeerEvents::new(self.inner.events())
    }

    /// Stops accepting connections, closes the ones it accepted, and ends its endpoints.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}
