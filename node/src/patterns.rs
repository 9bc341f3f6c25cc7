//! The patterns: `Pusher`/`Puller`, `Requester`/`Replier`, raw `Peer`/`Acceptor`,
//! `Publisher` (with its `FanOut` and `Dropped`)/`Subscriber`. Receives cross in batches
//! (weida-ffi's `fetch` and `take_now`) into the TypeScript layer's inbox (lib/index.ts).

use std::sync::Arc;

use bytes::Bytes;
use napi::bindgen_prelude::{BigInt, Either, Object};
use napi::Env;
use napi_derive::napi;
use weida::Receiving;
use weida_ffi::config::{count_arg, Given};
use weida_ffi::inbox::{fetch, give_back, take_now};
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::packed::keep_one_batch;
use weida_ffi::patterns::{send_many, Endpoint};
use weida_ffi::{pubsub, Call, Fail};

use crate::config::JS;
use crate::error;
use crate::events::PeerEvents;
use crate::runtime::{promise, Cancel};
use crate::stream::{
    batch_out, message_out, metadata_in, opened, BodyIn, BodyOut, Exchange, IncomingTransfer,
    OutgoingTransfer, Raw,
};

/// A JS count from a core one (connections, copies, queued messages: far below 2^32).
fn small(n: usize) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

/// A count argument (`max`) from a JS number, checked as an option's is.
pub(crate) fn count(name: &'static str, v: f64) -> Result<u64, Fail> {
    Ok(count_arg(name, Given::Float(v), JS)?)
}

/// The `max` of a receive.
fn batch(max: f64) -> Result<usize, Fail> {
    Ok(usize::try_from(count("max", max)?).unwrap_or(usize::MAX))
}

/// A receive for JS: up to `max` whole messages as a `Batch` (stream.rs `batch_out`), waiting
/// for the first, at most one packed batch (`weida_ffi::packed::keep_one_batch`, the rest
/// handed back to the endpoint, in order). The split is made where the batch is delivered, on
/// the JS thread, not where it was fetched: what an aborted receive got then goes back whole
/// and in order (`give_back`; the TypeScript inbox takes nothing from the endpoint while this
/// is pending, so it is the next any receive takes). Split on the I/O thread, an over-budget
/// fetch's rest went back first and the aborted batch behind it, out of order.
pub(crate) fn recv_batch<'env, R: Receiving>(
    env: &'env Env,
    cancel: Option<&Cancel>,
    r: &Arc<R>,
    max: f64,
) -> napi::Result<Object<'env>> {
    let (r, back, keep) = (Arc::clone(r), Arc::clone(r), Arc::clone(r));
    let call = Call::new(async move { fetch(r, batch(max)?).await })
        .keeping(move |ms| give_back(&*back, ms));
    promise(env, cancel, call, move |env, mut ms| {
        keep_one_batch(&*keep, &mut ms);
        batch_out(env, ms)
    })
}

/// The messages ready now, up to `max`, as [`recv_batch`] gives them; null when none is ready,
/// and the error a receive would reject with thrown at once.
pub(crate) fn take_ready<R: Receiving>(env: &Env, r: &R, max: f64) -> napi::Result<Option<Raw>> {
    let max = batch(max).map_err(|f| error::to_js(env, f))?;
    match take_now(r, max) {
        None => Ok(None),
        Some(Ok(mut ms)) => {
            keep_one_batch(r, &mut ms);
            Ok(Some(batch_out(env, ms)?))
        }
        Some(Err(f)) => Err(error::to_js(env, f)),
    }
}

/// The endpoint for a synchronous call, or the throw of `Closed`.
fn sync<T>(env: &Env, e: &Endpoint<T>) -> napi::Result<Arc<T>> {
    e.get().map_err(|f| error::to_js(env, f))
}

/// Sends messages to pullers, one stream each, round-robin per message.
#[napi]
pub struct Pusher {
    inner: Endpoint<weida::Pusher>,
}

impl Pusher {
    pub(crate) fn new(p: weida::Pusher) -> Self {
        Self {
            inner: Endpoint::new(p),
        }
    }

    fn send_all<'env>(
        &self,
        env: &'env Env,
        bodies: Vec<Bytes>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        promise(
            env,
            cancel,
            Call::new(async move { send_many(p?, bodies).await }),
            |_, ()| Ok(()),
        )
    }
}

#[napi]
impl Pusher {
    /// Dials `address` (with its path) and adds it to the round-robin.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(
        &self,
        env: &'env Env,
        address: String,
        wait: bool,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        promise(
            env,
            cancel,
            Call::new(async move { weida_ffi::patterns::connect(p?, address, wait).await }),
            |_, ()| Ok(()),
        )
    }

    /// Removes `address`; true if it was connected.
    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        let p = sync(&env, &self.inner)?;
        on_io(|| p.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    /// Live connections.
    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner.get().map_or(0, |p| small(p.peer_count()))
    }

    /// What happens to this endpoint's addresses from now on: connected, lost, retrying,
    /// gave up (`PeerEvent`); `Closed` after `close()`.
    #[napi]
    pub fn events(&self, env: Env) -> napi::Result<PeerEvents> {
        let e = self.inner.get().map_err(|f| error::to_js(&env, f))?;
        Ok(PeerEvents::new(e.events()))
    }

    /// Sends a whole message: resolves once its FIN is queued (it then arrives with no local
    /// handle). Waits for the peer's stream budget (backpressure).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn send<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(p?.send_with(meta, body.0).await?) }),
            |_, ()| Ok(()),
        )
    }

    /// Sends a whole message now if it can go without waiting (a small body on an open lane
    /// with room; the first `send` opens it): true, sent exactly as `send` would have; false,
    /// nothing was sent and `send` sends it (to the same peer in the round-robin). Throws what
    /// `send` would reject with.
    #[napi]
    pub fn try_send(
        &self,
        env: Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
    ) -> napi::Result<bool> {
        let p = sync(&env, &self.inner)?;
        match on_io(|| p.try_send(body.0)) {
            Ok(None) => Ok(true),
            Ok(Some(_)) => Ok(false),
            Err(e) => Err(error::throw(&env, e)),
        }
    }

    /// Sends each body as its own message, in order, in one call across the boundary; the
    /// first failure rejects, its `sent` saying how many went before it.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn send_many<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Array<string | Uint8Array>")] bodies: Vec<BodyIn>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        self.send_all(env, bodies.into_iter().map(|b| b.0).collect(), cancel)
    }

    /// `send_many` of small bodies packed in one buffer by lib/index.ts (`stream::unpack`):
    /// one value across the boundary for the whole batch.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn send_packed<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Uint8Array")] packed: BodyIn,
        count: u32,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let bodies = crate::stream::unpack(packed.0, count)?;
        self.send_all(env, bodies, cancel)
    }

    /// Opens a streamed message.
    #[napi(ts_return_type = "Promise<OutgoingTransfer>")]
    pub fn open<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(p?.open(meta).await?) }),
            |_, t| {
                Ok(OutgoingTransfer::new(
                    weida_ffi::stream::OutgoingTransfer::new(t),
                ))
            },
        )
    }

    /// Lets go of the pusher; later calls reject with ERR_WEIDA_CLOSED.
    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }
}

/// Sends requests and awaits replies, round-robin over connected repliers.
#[napi]
pub struct Requester {
    inner: Endpoint<weida::Requester>,
}

impl Requester {
    pub(crate) fn new(r: weida::Requester) -> Self {
        Self {
            inner: Endpoint::new(r),
        }
    }
}

#[napi]
impl Requester {
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(
        &self,
        env: &'env Env,
        address: String,
        wait: bool,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = self.inner.get();
        promise(
            env,
            cancel,
            Call::new(async move { weida_ffi::patterns::connect(r?, address, wait).await }),
            |_, ()| Ok(()),
        )
    }

    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        let r = sync(&env, &self.inner)?;
        on_io(|| r.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner.get().map_or(0, |r| small(r.peer_count()))
    }

    /// What happens to this endpoint's addresses from now on: connected, lost, retrying,
    /// gave up (`PeerEvent`); `Closed` after `close()`.
    #[napi]
    pub fn events(&self, env: Env) -> napi::Result<PeerEvents> {
        let e = self.inner.get().map_err(|f| error::to_js(&env, f))?;
        Ok(PeerEvents::new(e.events()))
    }

    /// Sends `body` and resolves with the reply body. A reply lost after the request's FIN
    /// rejects with ERR_WEIDA_INDETERMINATE; an aborted request is Canceled at the replier.
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn request<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(r?.request_with(meta, body.0).await?) }),
            |_, m| Ok(BodyOut(m.body)),
        )
    }

    /// `request` with the reply's metadata: resolves with the whole reply `{meta, body}`.
    #[napi(ts_return_type = "Promise<Message>")]
    pub fn request_with<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(r?.request_with(meta, body.0).await?) }),
            message_out,
        )
    }

    /// Opens a streamed request: `[transfer, pendingReply]`.
    #[napi(ts_return_type = "Promise<[OutgoingTransfer, PendingReply]>")]
    pub fn open<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(r?.open(meta).await?) }),
            |_, o| Ok(opened(o)),
        )
    }

    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }
}

/// Opens raw streams to acceptors: one-way transfers and exchanges.
#[napi]
pub struct Peer {
    inner: Endpoint<weida::Peer>,
}

impl Peer {
    pub(crate) fn new(p: weida::Peer) -> Self {
        Self {
            inner: Endpoint::new(p),
        }
    }
}

#[napi]
impl Peer {
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(
        &self,
        env: &'env Env,
        address: String,
        wait: bool,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        promise(
            env,
            cancel,
            Call::new(async move { weida_ffi::patterns::connect(p?, address, wait).await }),
            |_, ()| Ok(()),
        )
    }

    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        let p = sync(&env, &self.inner)?;
        on_io(|| p.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner.get().map_or(0, |p| small(p.peer_count()))
    }

    /// What happens to this endpoint's addresses from now on: connected, lost, retrying,
    /// gave up (`PeerEvent`); `Closed` after `close()`.
    #[napi]
    pub fn events(&self, env: Env) -> napi::Result<PeerEvents> {
        let e = self.inner.get().map_err(|f| error::to_js(&env, f))?;
        Ok(PeerEvents::new(e.events()))
    }

    /// Opens a one-way stream.
    #[napi(ts_return_type = "Promise<OutgoingTransfer>")]
    pub fn open<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(p?.open(meta).await?) }),
            |_, t| {
                Ok(OutgoingTransfer::new(
                    weida_ffi::stream::OutgoingTransfer::new(t),
                ))
            },
        )
    }

    /// Opens an exchange: `[transfer, pendingReply]`.
    #[napi(ts_return_type = "Promise<[OutgoingTransfer, PendingReply]>")]
    pub fn exchange<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            Call::new(async move { Ok(p?.exchange(meta).await?) }),
            |_, o| Ok(opened(o)),
        )
    }

    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }
}

/// Receives pushed messages at a bound path.
#[napi]
pub struct Puller {
    inner: OnIo<Arc<weida::Puller>>,
}

impl Puller {
    pub(crate) fn new(p: weida::Puller) -> Self {
        Self {
            inner: OnIo::new(Arc::new(p)),
        }
    }
}

#[napi]
impl Puller {
    /// The address to dial this puller at.
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// Up to `max` whole messages as a `Batch` (lib/index.ts makes them `Message`s), waiting
    /// for the first. A message its sender cancelled rejects with ERR_WEIDA_CANCELED and the
    /// puller goes on; an error met after the first message rejects the next receive; after
    /// `close()`, ERR_WEIDA_CLOSED. Aborted as they arrived, they go back to the puller, first.
    #[napi(ts_return_type = "Promise<Batch>")]
    pub fn recv_batch<'env>(
        &self,
        env: &'env Env,
        max: f64,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        recv_batch(env, cancel, &self.inner, max)
    }

    /// What `recvBatch` would give without waiting, or null; throws what it would reject with.
    #[napi(ts_return_type = "Batch | null")]
    pub fn take(&self, env: Env, max: f64) -> napi::Result<Option<Raw>> {
        take_ready(&env, &**self.inner, max)
    }

    /// The next message as a stream, for bodies read in parts.
    #[napi(ts_return_type = "Promise<IncomingTransfer>")]
    pub fn accept<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { Ok(p.accept().await?) }),
            |_, t| {
                Ok(IncomingTransfer::new(
                    weida_ffi::stream::IncomingTransfer::new(t),
                ))
            },
        )
    }

    /// Unbinds the path; receiving ends with ERR_WEIDA_CLOSED once the queue is taken.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}

/// Answers requests at a bound path.
#[napi]
pub struct Replier {
    inner: OnIo<Arc<weida::Replier>>,
}

impl Replier {
    pub(crate) fn new(r: weida::Replier) -> Self {
        Self {
            inner: OnIo::new(Arc::new(r)),
        }
    }
}

#[napi]
impl Replier {
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// The next exchange.
    #[napi(ts_return_type = "Promise<Exchange>")]
    pub fn accept<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { Ok(r.accept().await?) }),
            |_, x| Ok(Exchange::new(weida_ffi::stream::Exchange::new(x))),
        )
    }

    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}

/// Receives both stream kinds at a bound path.
#[napi]
pub struct Acceptor {
    inner: OnIo<Arc<weida::Acceptor>>,
}

impl Acceptor {
    pub(crate) fn new(a: weida::Acceptor) -> Self {
        Self {
            inner: OnIo::new(Arc::new(a)),
        }
    }
}

#[napi]
impl Acceptor {
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// The next stream: an `IncomingTransfer` or an `Exchange`.
    #[napi(ts_return_type = "Promise<IncomingTransfer | Exchange>")]
    pub fn accept<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let a = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { weida_ffi::stream::Incoming::new(a.accept().await?) }),
            |_, i| {
                Ok(match i {
                    weida_ffi::stream::Incoming::Stream(t) => Either::A(IncomingTransfer::new(t)),
                    weida_ffi::stream::Incoming::Exchange(x) => Either::B(Exchange::new(x)),
                })
            },
        )
    }

    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}

/// Copies a publisher dropped, by cause (core `Dropped`), and their `total`.
#[napi(object, object_from_js = false)]
pub struct Dropped {
    pub queue_full: BigInt,
    pub byte_budget: BigInt,
    pub reverse_pool_empty: BigInt,
    pub dead_subscriber: BigInt,
    pub refused: BigInt,
    pub total: BigInt,
}

impl From<weida::Dropped> for Dropped {
    fn from(d: weida::Dropped) -> Self {
        Self {
            queue_full: d.queue_full.into(),
            byte_budget: d.byte_budget.into(),
            reverse_pool_empty: d.reverse_pool_empty.into(),
            dead_subscriber: d.dead_subscriber.into(),
            refused: d.refused.into(),
            total: d.total().into(),
        }
    }
}

/// Publishes messages by topic to the subscribers whose filters select them, never waiting.
#[napi]
pub struct Publisher {
    inner: OnIo<Arc<weida::Publisher>>,
}

impl Publisher {
    pub(crate) fn new(p: weida::Publisher) -> Self {
        Self {
            inner: OnIo::new(Arc::new(p)),
        }
    }
}

#[napi]
impl Publisher {
    /// The address subscribers dial.
    #[napi(getter)]
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// Queues `body` for every subscriber whose filters select `topic` and returns how many
    /// copies were queued; never waits. A body above `subscriberBufferBytes` throws
    /// ERR_WEIDA_LIMIT_EXCEEDED, a malformed topic ERR_WEIDA_INVALID_FILTER.
    #[napi]
    pub fn publish(
        &self,
        env: Env,
        topic: String,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
    ) -> napi::Result<u32> {
        on_io(|| self.inner.publish(&topic, body.0))
            .map(small)
            .map_err(|e| error::throw(&env, e))
    }

    /// Opens a streamed message to the subscribers whose filters select `topic` now.
    #[napi]
    pub fn open(&self, env: Env, topic: String) -> napi::Result<FanOut> {
        let f = on_io(|| self.inner.open(&topic)).map_err(|e| error::throw(&env, e))?;
        Ok(FanOut(pubsub::FanOut::new(f)))
    }

    /// Copies dropped since the publisher was bound, by cause.
    #[napi]
    pub fn dropped(&self) -> Dropped {
        self.inner.dropped().into()
    }

    /// Copies of `topic` dropped, by cause.
    #[napi]
    pub fn dropped_on(&self, topic: String) -> Dropped {
        self.inner.dropped_on(&topic).into()
    }

    /// Subscribers connected now (with at least one filter).
    #[napi(getter)]
    pub fn subscriber_count(&self) -> u32 {
        small(self.inner.subscriber_count())
    }

    /// Resolves once `subscriberCount` is `n`, the copies of one that went counted: a test's
    /// event to await instead of polling. Internal.
    #[napi(js_name = "_untilSubscribers", ts_return_type = "Promise<void>")]
    pub fn until_subscribers<'env>(&self, env: &'env Env, n: u32) -> napi::Result<Object<'env>> {
        let p = Arc::clone(&self.inner);
        promise(
            env,
            None,
            Call::new(async move {
                p.until_subscribers(n as usize).await;
                Ok(())
            }),
            |_, ()| Ok(()),
        )
    }

    /// Unbinds the path and ends every subscription.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}

/// A message streamed to every subscriber matched at `Publisher.open`, chunk by chunk. One
/// garbage-collected unfinished is cancelled (subscribers never see half a message).
#[napi]
pub struct FanOut(Arc<pubsub::FanOut>);

#[napi]
impl FanOut {
    /// Copies still attached (not dropped).
    #[napi(getter)]
    pub fn copies(&self) -> u32 {
        small(self.0.copies())
    }

    /// Hands `chunk` to every attached copy, first waiting up to `fanoutWaitMs` for room;
    /// resolves with the copies still attached. Aborting it cancels the message, as `cancel()`
    /// does; `cancel()` while it waits rejects it with ERR_WEIDA_CANCELED.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] chunk: BodyIn,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        promise(env, cancel, self.0.write_call(chunk.0), |_, n| Ok(small(n)))
    }

    /// Hands `chunk` to every attached copy without waiting (a copy with no room is dropped);
    /// returns the copies still attached.
    #[napi]
    pub fn write_now(
        &self,
        env: Env,
        #[napi(ts_arg_type = "string | Uint8Array")] chunk: BodyIn,
    ) -> napi::Result<u32> {
        self.0
            .write_now(chunk.0)
            .map(small)
            .map_err(|f| error::to_js(&env, f))
    }

    /// Ends the message for every attached copy; returns how many were still attached.
    #[napi]
    pub fn finish(&self, env: Env) -> napi::Result<u32> {
        self.0
            .finish()
            .map(small)
            .map_err(|f| error::to_js(&env, f))
    }

    /// Cancels every copy: subscribers discard what they received of it. A no-op once finished.
    #[napi]
    pub fn cancel(&self) {
        self.0.cancel();
    }
}

/// Receives the messages of the publishers it connects to whose topics its filters select.
#[napi]
pub struct Subscriber {
    inner: OnIo<Arc<weida::Subscriber>>,
}

impl Subscriber {
    pub(crate) fn new(s: weida::Subscriber) -> Self {
        Self {
            inner: OnIo::new(Arc::new(s)),
        }
    }
}

#[napi]
impl Subscriber {
    /// Dials the publisher at `address` and installs every filter held there; with `wait`
    /// false records it at once and does that in the background (connect-before-bind).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(
        &self,
        env: &'env Env,
        address: String,
        wait: bool,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let s = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(weida_ffi::patterns::connect(s, address, wait)),
            |_, ()| Ok(()),
        )
    }

    /// Closes the connection to `address`; true if it was connected.
    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        on_io(|| self.inner.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    /// Live connections.
    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        small(self.inner.peer_count())
    }

    /// What happens to this subscriber's publishers from now on (`PeerEvent`); a redialled
    /// publisher gets every filter again.
    #[napi]
    pub fn events(&self) -> PeerEvents {
        PeerEvents::new(self.inner.events())
    }

    /// Adds `filter`: resolves once every connected publisher installed it. A malformed filter
    /// rejects with ERR_WEIDA_INVALID_FILTER. Not cancel-safe: aborted, the filter may be left
    /// installed at some publishers (`unsubscribe` removes it).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn subscribe<'env>(
        &self,
        env: &'env Env,
        filter: String,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let s = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { Ok(s.subscribe(&filter).await?) }),
            |_, ()| Ok(()),
        )
    }

    /// Removes one entry of `filter`: resolves with false if it was not held, else once every
    /// connected publisher removed it.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn unsubscribe<'env>(
        &self,
        env: &'env Env,
        filter: String,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let s = Arc::clone(&self.inner);
        promise(
            env,
            cancel,
            Call::new(async move { Ok(s.unsubscribe(&filter).await?) }),
            |_, removed| Ok(removed),
        )
    }

    /// The filters held, in the order given.
    #[napi(getter)]
    pub fn filters(&self) -> Vec<String> {
        self.inner.filters()
    }

    /// Up to `max` messages as a `Batch` (lib/index.ts makes them `Message`s, each with its
    /// `meta.topic`, and `sequence` and `gap` under PerProducer ordering), waiting for the
    /// first; an error met after the first rejects the next receive. Aborted as they arrived,
    /// they go back to the subscriber, first.
    #[napi(ts_return_type = "Promise<Batch>")]
    pub fn recv_batch<'env>(
        &self,
        env: &'env Env,
        max: f64,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        recv_batch(env, cancel, &self.inner, max)
    }

    /// What `recvBatch` would give without waiting, or null; throws what it would reject with.
    #[napi(ts_return_type = "Batch | null")]
    pub fn take(&self, env: Env, max: f64) -> napi::Result<Option<Raw>> {
        take_ready(&env, &**self.inner, max)
    }

    /// Messages received and waiting for `recv` in the core (lib/index.ts adds its inbox's).
    #[napi(getter)]
    pub fn queued(&self) -> u32 {
        small(self.inner.queued())
    }

    /// Resolves once `queued` is at least `n`: a test's event to await instead of polling.
    /// Internal.
    #[napi(js_name = "_untilQueued", ts_return_type = "Promise<void>")]
    pub fn until_queued<'env>(&self, env: &'env Env, n: u32) -> napi::Result<Object<'env>> {
        let s = Arc::clone(&self.inner);
        promise(
            env,
            None,
            Call::new(async move {
                s.until_queued(n as usize).await;
                Ok(())
            }),
            |_, ()| Ok(()),
        )
    }

    /// Closes every connection; receiving returns what is queued, then ERR_WEIDA_CLOSED.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}
