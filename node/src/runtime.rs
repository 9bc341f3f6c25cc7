//! `Runtime` and `Listener`, and how every async call runs: on one current-thread tokio runtime
//! on a dedicated I/O thread (docs/BINDINGS.md, "Threading"), settling a JS promise through a
//! threadsafe function, so no JS runs off the main thread and the event loop never blocks.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use futures_util::FutureExt;
use napi::bindgen_prelude::{BigInt, JsObjectValue, Object, ToNapiValue};
use napi::{sys, Env, JsValue};
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use crate::config::{self, LimitsOptions};
use crate::error::{self, Fail};
use crate::identity::{Identity, Trust};
use crate::patterns::{Acceptor, Peer, Publisher, Puller, Pusher, Replier, Requester, Subscriber};
use crate::stream::Raw;

/// The binding's I/O runtime, started on first use. Its thread is not a handle Node waits for:
/// only a pending promise keeps the process alive (lib/index.ts, "Lifetime").
pub(crate) fn io() -> &'static tokio::runtime::Handle {
    static IO: OnceLock<tokio::runtime::Handle> = OnceLock::new();
    IO.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("the weida I/O runtime starts");
        let handle = rt.handle().clone();
        std::thread::Builder::new()
            .name("weida-io".into())
            .spawn(move || rt.block_on(std::future::pending::<()>()))
            .expect("the weida I/O thread starts");
        handle
    })
}

/// Runs `f` inside the I/O runtime's context: synchronous core calls that may touch tokio
/// (drops that reset a stream, closes) find the reactor they expect.
pub(crate) fn on_io<T>(f: impl FnOnce() -> T) -> T {
    let _entered = io().enter();
    f()
}

/// A core value dropped inside the I/O runtime's context. The core's drops may start a task (a
/// local socket stream owes its peer a STOP or RESET, core/src/transport/unix.rs), and JS drops
/// a handle whenever its garbage collector runs, on the JS thread.
pub(crate) struct Io<T>(ManuallyDrop<T>);

impl<T> Io<T> {
    pub(crate) fn new(t: T) -> Io<T> {
        Io(ManuallyDrop::new(t))
    }
}

impl<T> Deref for Io<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Io<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T> Drop for Io<T> {
    fn drop(&mut self) {
        let _entered = io().enter();
        // SAFETY: dropped once, here; the value is not used after.
        unsafe { ManuallyDrop::drop(&mut self.0) }
    }
}

/// A cancellation the TypeScript layer ties to an AbortSignal: `cancel()` drops the Rust future
/// of every call it was passed to, which cancels the operation in the core (a request or a
/// transfer being written is reset, and the peer sees Canceled).
#[napi]
pub struct Cancel {
    pub(crate) token: CancellationToken,
}

#[napi]
impl Cancel {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Cancel {
        Cancel {
            token: CancellationToken::new(),
        }
    }

    /// Aborts every pending call this was passed to; later calls abort at once.
    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }
}

/// Runs `fut` and returns a promise of `convert(output)`; `convert` runs on the JS thread, and a
/// failure becomes its JS error there ([`error::to_js`]). `cancel` drops the future and rejects
/// with an AbortError.
///
/// The future is polled once here, on the JS thread inside the I/O runtime's context: an
/// operation that need not wait (a send with room in the window, a receive with a message
/// queued) settles its promise at once, with no hop to the I/O thread and back. One that would
/// wait moves to the I/O thread and settles through a threadsafe function.
pub(crate) fn promise<'env, T, V, F, C>(
    env: &'env Env,
    cancel: Option<&Cancel>,
    fut: F,
    convert: C,
) -> napi::Result<Object<'env>>
where
    T: Send + 'static,
    V: ToNapiValue + 'static,
    F: Future<Output = Result<T, Fail>> + Send + 'static,
    C: FnOnce(&Env, T) -> napi::Result<V> + Send + 'static,
{
    start(env, cancel, fut, convert, None)
}

/// What to do with a value whose call was aborted after the core produced it: a received
/// message goes back to its endpoint (`give_back`), so an aborted receive loses nothing.
pub(crate) type Orphan<T> = Box<dyn FnOnce(T) + Send>;

/// [`promise`] for a receive: a value that reaches the JS thread after the call's AbortSignal
/// fired (it arrived on the I/O thread just as the caller aborted) is handed to `orphan` and
/// the call rejects with an AbortError, as if it had been aborted before the value arrived.
/// The abort and this check both run on the JS thread, so every value is either delivered or
/// handed back (docs/BINDINGS.md, "Threading").
pub(crate) fn promise_keeping<'env, T, V, F, C>(
    env: &'env Env,
    cancel: Option<&Cancel>,
    fut: F,
    convert: C,
    orphan: Orphan<T>,
) -> napi::Result<Object<'env>>
where
    T: Send + 'static,
    V: ToNapiValue + 'static,
    F: Future<Output = Result<T, Fail>> + Send + 'static,
    C: FnOnce(&Env, T) -> napi::Result<V> + Send + 'static,
{
    start(env, cancel, fut, convert, Some(orphan))
}

fn start<'env, T, V, F, C>(
    env: &'env Env,
    cancel: Option<&Cancel>,
    fut: F,
    convert: C,
    orphan: Option<Orphan<T>>,
) -> napi::Result<Object<'env>>
where
    T: Send + 'static,
    V: ToNapiValue + 'static,
    F: Future<Output = Result<T, Fail>> + Send + 'static,
    C: FnOnce(&Env, T) -> napi::Result<V> + Send + 'static,
{
    let token = cancel.map(|c| c.token.clone());
    // Checked on the JS thread when the value is converted: aborted meanwhile, it is handed back.
    let keep = orphan.and_then(|o| Some((token.clone()?, o)));
    let mut run = Box::pin(async move {
        let run = std::panic::AssertUnwindSafe(fut).catch_unwind();
        match token {
            None => run.await,
            Some(t) => tokio::select! {
                biased;
                _ = t.cancelled() => Ok(Err(Fail::Aborted)),
                r = run => r,
            },
        }
    });
    let first = {
        let _entered = io().enter();
        let mut cx = Context::from_waker(Waker::noop());
        run.as_mut().poll(&mut cx)
    };
    if let Poll::Ready(out) = first {
        return settled(env, settle(env, out, convert, keep));
    }
    let (deferred, promise) = env.create_deferred()?;
    // The first poll's waker was a no-op: the spawned task polls again, and registers its own.
    io().spawn(async move {
        let out = run.await;
        deferred.resolve(move |env: Env| settle(&env, out, convert, keep));
    });
    Ok(promise)
}

type Outcome<T> = std::thread::Result<Result<T, Fail>>;

fn settle<T, V>(
    env: &Env,
    out: Outcome<T>,
    convert: impl FnOnce(&Env, T) -> napi::Result<V>,
    keep: Option<(CancellationToken, Orphan<T>)>,
) -> napi::Result<V> {
    match out {
        Ok(Ok(v)) => match keep {
            Some((token, orphan)) if token.is_cancelled() => {
                orphan(v);
                Err(error::to_js(env, Fail::Aborted))
            }
            _ => convert(env, v),
        },
        Ok(Err(f)) => Err(error::to_js(env, f)),
        Err(_) => Err(napi::Error::from_reason("weida: a panic in the binding")),
    }
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
    pub(crate) inner: Io<weida::Runtime>,
    /// What `bind` presents; kept for `bind(address, {requireClient})`.
    identity: weida::Identity,
}

#[napi]
impl Runtime {
    /// `new Runtime({identity, trust, limits, presentIdentity, sendTimeoutMs, ordering,
    /// laneMaxMessage})`,
    /// spelled out by position here (lib/index.ts takes the options object).
    #[napi(constructor)]
    #[allow(clippy::too_many_arguments)] // one argument per option, as napi spells them
    pub fn new(
        env: Env,
        identity: Option<&Identity>,
        trust: Option<&Trust>,
        limits: Option<LimitsOptions>,
        present_identity: Option<bool>,
        send_timeout_ms: Option<f64>,
        #[napi(ts_arg_type = "'none' | 'detect' | 'reassemble' | undefined | null")]
        ordering: Option<String>,
        lane_max_message: Option<f64>,
    ) -> napi::Result<Runtime> {
        let cfg = config::runtime_config(
            identity.map(|i| i.inner.clone()),
            trust.map(|t| t.inner.clone()),
            limits,
            present_identity,
            send_timeout_ms,
            ordering,
            lane_max_message,
        )
        .map_err(|e| error::throw(&env, e))?;
        let identity = cfg.identity.clone();
        let inner = on_io(|| weida::Runtime::new(cfg)).map_err(|e| error::throw(&env, e))?;
        Ok(Runtime {
            inner: Io::new(inner),
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
        let tls = require_client
            .map(|t| weida::ServerTls::new(self.identity.clone()).require_client(t.inner.clone()));
        promise(
            env,
            cancel,
            async move {
                Ok(match tls {
                    Some(tls) => rt.bind_with(&address, tls).await?,
                    None => rt.bind(&address).await?,
                })
            },
            |_, l| Ok(Listener { inner: Io::new(l) }),
        )
    }

    #[napi]
    pub fn pusher(&self) -> Pusher {
        Pusher::new(on_io(|| self.inner.pusher()))
    }

    #[napi]
    pub fn requester(&self) -> Requester {
        Requester::new(on_io(|| self.inner.requester()))
    }

    #[napi]
    pub fn peer(&self) -> Peer {
        Peer::new(on_io(|| self.inner.peer()))
    }

    #[napi]
    pub fn subscriber(&self) -> Subscriber {
        Subscriber::new(on_io(|| self.inner.subscriber()))
    }

    /// Stops admitting work, gives finished transfers until `deadlineMs` to reach the peer's
    /// transport, then closes everything.
    #[napi(ts_return_type = "Promise<{ delivered: bigint; outstanding: bigint }>")]
    pub fn drain<'env>(&self, env: &'env Env, deadline_ms: f64) -> napi::Result<Object<'env>> {
        let rt = weida::Runtime::clone(&self.inner);
        let deadline = config::duration_ms("deadlineMs", deadline_ms);
        promise(
            env,
            None,
            async move { Ok(rt.drain(deadline?).await) },
            |env, d| {
                let mut o = Object::new(env)?;
                o.set_named_property("delivered", BigInt::from(d.delivered))?;
                o.set_named_property("outstanding", BigInt::from(d.outstanding))?;
                Ok(Raw(o.raw()))
            },
        )
    }

    /// Closes every connection and listener now; pending calls end with their error.
    #[napi]
    pub fn shutdown(&self) {
        on_io(|| self.inner.shutdown());
    }

    /// The counters, as BigInts (monotonic since the runtime started).
    #[napi(ts_return_type = "Counters")]
    pub fn counters<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let c = self.inner.counters();
        let mut o = Object::new(env)?;
        for (name, v) in [
            ("streamsOpened", c.streams_opened),
            ("streamsAccepted", c.streams_accepted),
            ("streamsRefused", c.streams_refused),
            ("bytesSent", c.bytes_sent),
            ("bytesReceived", c.bytes_received),
            ("connectionsDialled", c.connections_dialled),
            ("connectionsAccepted", c.connections_accepted),
            ("receiptsDelivered", c.receipts_delivered),
            ("receiptsFailed", c.receipts_failed),
            ("copiesPublished", c.copies_published),
            ("laneMessagesSent", c.lane_messages_sent),
            ("laneMessagesReceived", c.lane_messages_received),
            ("laneMessagesLost", c.lane_messages_lost),
        ] {
            o.set_named_property(name, BigInt::from(v))?;
        }
        Ok(o)
    }
}

/// A bound address; endpoints are registered on it by path.
#[napi]
pub struct Listener {
    pub(crate) inner: Io<weida::Listener>,
}

#[napi]
impl Listener {
    /// The bound address: over QUIC with its real port and the `sha256:` pin of its key.
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    #[napi]
    pub fn puller(&self, env: Env, path: String) -> napi::Result<Puller> {
        let p = on_io(|| self.inner.puller(&path)).map_err(|e| error::throw(&env, e))?;
        Ok(Puller::new(p, weida::Listener::clone(&self.inner)))
    }

    #[napi]
    pub fn replier(&self, env: Env, path: String) -> napi::Result<Replier> {
        let r = on_io(|| self.inner.replier(&path)).map_err(|e| error::throw(&env, e))?;
        Ok(Replier::new(r, weida::Listener::clone(&self.inner)))
    }

    #[napi]
    pub fn acceptor(&self, env: Env, path: String) -> napi::Result<Acceptor> {
        let a = on_io(|| self.inner.acceptor(&path)).map_err(|e| error::throw(&env, e))?;
        Ok(Acceptor::new(a, weida::Listener::clone(&self.inner)))
    }

    #[napi]
    pub fn publisher(&self, env: Env, path: String) -> napi::Result<Publisher> {
        let p = on_io(|| self.inner.publisher(&path)).map_err(|e| error::throw(&env, e))?;
        Ok(Publisher::new(p, weida::Listener::clone(&self.inner)))
    }

    /// Stops accepting connections, closes the ones it accepted, and ends its endpoints.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}
