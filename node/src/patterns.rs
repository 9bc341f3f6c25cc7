//! The patterns: `Pusher`/`Puller`, `Requester`/`Replier`, raw `Peer`/`Acceptor`,
//! `Publisher` (with its `FanOut` and `Dropped`)/`Subscriber`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::FutureExt;
use napi::bindgen_prelude::{BigInt, Either, Object};
use napi::{Env, Status};
use napi_derive::napi;
use weida::{Error as CoreError, Incoming, Receiving};

use crate::config::count;
use crate::error::{self, Fail};
use crate::runtime::{on_io, promise, promise_keeping, Cancel, Io};
use crate::stream::{
    batch_out, message_out, metadata_in, BodyIn, BodyOut, Exchange, IncomingTransfer,
    OutgoingTransfer, PendingReply, Raw, Slot,
};

/// A JS count from a core one (connections, copies, queued messages: far below 2^32).
fn small(n: usize) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

/// The `max` of a `recvMany`: a whole number (0 is taken as 1, as the core does).
fn batch(max: f64) -> Result<usize, CoreError> {
    Ok(usize::try_from(count("max", max)?).unwrap_or(usize::MAX))
}

/// A receive for JS: up to `max` whole messages as `[metas, bodies]` (stream.rs `batch_out`),
/// waiting for the first; an aborted receive hands what it got back (`give_back`).
fn recv_batch<'env, R: Receiving>(
    env: &'env Env,
    cancel: Option<&Cancel>,
    r: &Arc<Io<R>>,
    max: f64,
) -> napi::Result<Object<'env>> {
    let (r, back) = (r.clone(), r.clone());
    promise_keeping(
        env,
        cancel,
        async move { Ok(r.recv_many(batch(max)?).await?) },
        batch_out,
        Box::new(move |ms| ms.into_iter().for_each(|m| back.give_back(m))),
    )
}

/// The messages ready now, up to `max`, as [`recv_batch`] gives them; null when none is ready,
/// and the error a receive would reject with thrown at once. Its `recv_many` ends before an
/// error met after the first message and keeps the error for the next receive, as it does when
/// it waits, so nothing is lost between the two.
fn take_ready<R: Receiving>(env: &Env, r: &R, max: f64) -> napi::Result<Option<Raw>> {
    let max = batch(max).map_err(|e| error::throw(env, e))?;
    match on_io(|| r.recv_many(max).now_or_never()) {
        None => Ok(None),
        Some(Ok(ms)) => Ok(Some(batch_out(env, ms)?)),
        Some(Err(e)) => Err(error::throw(env, e)),
    }
}

/// A dialling endpoint held for JS: `close()` lets go of it (calls already pending run on).
struct Dialing<T>(Mutex<Option<Arc<T>>>);

impl<T> Dialing<T> {
    fn new(t: T) -> Dialing<T> {
        Dialing(Mutex::new(Some(Arc::new(t))))
    }

    /// The endpoint, or Closed after `close()` (reported by the promise, not thrown).
    fn get(&self) -> Result<Arc<T>, Fail> {
        self.0
            .lock()
            .unwrap()
            .clone()
            .ok_or(Fail::Core(CoreError::Closed))
    }

    fn sync(&self, env: &Env) -> napi::Result<Arc<T>> {
        self.0
            .lock()
            .unwrap()
            .clone()
            .ok_or_else(|| error::throw(env, CoreError::Closed))
    }

    fn close(&self) {
        let t = self.0.lock().unwrap().take();
        on_io(|| drop(t));
    }
}

impl<T> Drop for Dialing<T> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Sends messages to pullers, one stream each, round-robin per message.
#[napi]
pub struct Pusher {
    inner: Dialing<weida::Pusher>,
}

impl Pusher {
    pub(crate) fn new(p: weida::Pusher) -> Pusher {
        Pusher {
            inner: Dialing::new(p),
        }
    }
}

impl Pusher {
    /// Sends each body as its own message, in order; the first failure rejects.
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
            async move {
                let p = p?;
                for b in bodies {
                    p.send(b).await?;
                }
                Ok(())
            },
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
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        promise(
            env,
            cancel,
            async move { Ok(p?.connect(&address).await?) },
            |_, ()| Ok(()),
        )
    }

    /// Removes `address`; true if it was connected.
    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        let p = self.inner.sync(&env)?;
        on_io(|| p.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    /// Live connections.
    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner
            .get()
            .map_or(0, |p| p.peer_count().try_into().unwrap_or(u32::MAX))
    }

    /// Sends a whole message: resolves once its FIN is queued (it then arrives with no local
    /// handle). Waits for the peer's stream budget (backpressure).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn send<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            async move { Ok(p?.send_with(meta, body.0).await?) },
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
        let p = self.inner.sync(&env)?;
        match on_io(|| p.try_send(body.0)) {
            Ok(None) => Ok(true),
            Ok(Some(_)) => Ok(false),
            Err(e) => Err(error::throw(&env, e)),
        }
    }

    /// Sends each body as its own message, in order, in one call across the boundary; the
    /// first failure rejects (the bodies before it were sent).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn send_many<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Array<string | Uint8Array>")] bodies: Vec<BodyIn>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let bodies: Vec<Bytes> = bodies.into_iter().map(|b| b.0).collect();
        self.send_all(env, bodies, cancel)
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
        meta: Option<Object>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            async move { Ok(p?.open(meta).await?) },
            |_, t| Ok(OutgoingTransfer::new(t)),
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
    inner: Dialing<weida::Requester>,
}

impl Requester {
    pub(crate) fn new(r: weida::Requester) -> Requester {
        Requester {
            inner: Dialing::new(r),
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
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = self.inner.get();
        promise(
            env,
            cancel,
            async move { Ok(r?.connect(&address).await?) },
            |_, ()| Ok(()),
        )
    }

    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        let r = self.inner.sync(&env)?;
        on_io(|| r.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner
            .get()
            .map_or(0, |r| r.peer_count().try_into().unwrap_or(u32::MAX))
    }

    /// Sends `body` and resolves with the reply body. A reply lost after the request's FIN
    /// rejects with ERR_WEIDA_INDETERMINATE; an aborted request is Canceled at the replier.
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn request<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            async move { Ok(r?.request_with(meta, body.0).await?) },
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
        meta: Option<Object>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            async move { Ok(r?.request_with(meta, body.0).await?) },
            message_out,
        )
    }

    /// Opens a streamed request: `[transfer, pendingReply]`.
    #[napi(ts_return_type = "Promise<[OutgoingTransfer, PendingReply]>")]
    pub fn open<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            async move { Ok(r?.open(meta).await?) },
            |_, (t, p)| Ok((OutgoingTransfer::new(t), PendingReply::new(p))),
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
    inner: Dialing<weida::Peer>,
}

impl Peer {
    pub(crate) fn new(p: weida::Peer) -> Peer {
        Peer {
            inner: Dialing::new(p),
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
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        promise(
            env,
            cancel,
            async move { Ok(p?.connect(&address).await?) },
            |_, ()| Ok(()),
        )
    }

    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        let p = self.inner.sync(&env)?;
        on_io(|| p.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner
            .get()
            .map_or(0, |p| p.peer_count().try_into().unwrap_or(u32::MAX))
    }

    /// Opens a one-way stream.
    #[napi(ts_return_type = "Promise<OutgoingTransfer>")]
    pub fn open<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            async move { Ok(p?.open(meta).await?) },
            |_, t| Ok(OutgoingTransfer::new(t)),
        )
    }

    /// Opens an exchange: `[transfer, pendingReply]`.
    #[napi(ts_return_type = "Promise<[OutgoingTransfer, PendingReply]>")]
    pub fn exchange<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let meta = metadata_in(meta)?;
        promise(
            env,
            cancel,
            async move { Ok(p?.exchange(meta).await?) },
            |_, (t, r)| Ok((OutgoingTransfer::new(t), PendingReply::new(r))),
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
    inner: Arc<Io<weida::Puller>>,
    // Keeps the listener open while an endpoint on it is in use (the core closes a listener
    // when its last handle drops, which in JS would be whenever the GC ran).
    _listener: Io<weida::Listener>,
}

impl Puller {
    pub(crate) fn new(p: weida::Puller, listener: weida::Listener) -> Puller {
        Puller {
            inner: Arc::new(Io::new(p)),
            _listener: Io::new(listener),
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

    /// Up to `max` whole messages as `[metas, bodies]` (lib/index.ts makes them `Message`s),
    /// waiting for the first. A message its sender cancelled rejects with ERR_WEIDA_CANCELED
    /// and the puller goes on; an error met after the first message rejects the next receive;
    /// after `close()`, ERR_WEIDA_CLOSED. Aborted as they arrived, they go back to the puller.
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
        let p = self.inner.clone();
        promise(env, cancel, async move { Ok(p.accept().await?) }, |_, t| {
            Ok(IncomingTransfer::new(t))
        })
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
    inner: Arc<Io<weida::Replier>>,
    _listener: Io<weida::Listener>,
}

impl Replier {
    pub(crate) fn new(r: weida::Replier, listener: weida::Listener) -> Replier {
        Replier {
            inner: Arc::new(Io::new(r)),
            _listener: Io::new(listener),
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
        let r = self.inner.clone();
        promise(env, cancel, async move { Ok(r.accept().await?) }, |_, x| {
            Ok(Exchange::new(x))
        })
    }

    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}

/// Receives both stream kinds at a bound path.
#[napi]
pub struct Acceptor {
    inner: Arc<Io<weida::Acceptor>>,
    _listener: Io<weida::Listener>,
}

impl Acceptor {
    pub(crate) fn new(a: weida::Acceptor, listener: weida::Listener) -> Acceptor {
        Acceptor {
            inner: Arc::new(Io::new(a)),
            _listener: Io::new(listener),
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
        let a = self.inner.clone();
        promise(env, cancel, async move { Ok(a.accept().await?) }, |_, i| {
            Ok(match i {
                Incoming::Stream(t) => Either::A(IncomingTransfer::new(t)),
                Incoming::Exchange(x) => Either::B(Exchange::new(x)),
                #[allow(unreachable_patterns)]
                _ => return Err(napi::Error::from_reason("an unknown kind of stream")),
            })
        })
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
    fn from(d: weida::Dropped) -> Dropped {
        Dropped {
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
    inner: Io<weida::Publisher>,
    _listener: Io<weida::Listener>,
}

impl Publisher {
    pub(crate) fn new(p: weida::Publisher, listener: weida::Listener) -> Publisher {
        Publisher {
            inner: Io::new(p),
            _listener: Io::new(listener),
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
        Ok(FanOut::new(f))
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

    /// Unbinds the path and ends every subscription.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}

/// A message streamed to every subscriber matched at `Publisher.open`, chunk by chunk. One
/// garbage-collected unfinished is cancelled (subscribers never see half a message).
#[napi]
pub struct FanOut {
    slot: Arc<Slot<weida::FanOut>>,
    /// The copies attached after the last call that changed them: what `copies` reads while a
    /// write holds the fan-out, or once `finish` (its count) or `cancel` (0) consumed it.
    last: Arc<AtomicU32>,
}

impl FanOut {
    fn new(f: weida::FanOut) -> FanOut {
        FanOut {
            last: Arc::new(AtomicU32::new(small(f.copies()))),
            slot: Slot::new(f),
        }
    }

    /// The fan-out for a synchronous call: a pending `write` holds it (await it first), and
    /// `finish` or `cancel` consumed it.
    fn held<'a>(
        &'a self,
        env: &Env,
    ) -> napi::Result<tokio::sync::MutexGuard<'a, Option<weida::FanOut>>> {
        let g = self.slot.item.try_lock().map_err(|_| {
            napi::Error::new(
                Status::GenericFailure,
                "a write is pending on this FanOut: await it first",
            )
        })?;
        if g.is_none() {
            return Err(error::throw(env, self.slot.spent()));
        }
        Ok(g)
    }
}

#[napi]
impl FanOut {
    /// Copies still attached (not dropped).
    #[napi(getter)]
    pub fn copies(&self) -> u32 {
        match self.slot.item.try_lock() {
            Ok(g) => g
                .as_ref()
                .map_or_else(|| self.last.load(Ordering::Relaxed), |f| small(f.copies())),
            Err(_) => self.last.load(Ordering::Relaxed),
        }
    }

    /// Hands `chunk` to every attached copy, first waiting up to `fanoutWaitMs` for room;
    /// resolves with the copies still attached. Aborting it writes nothing (the fan-out goes
    /// on); `cancel()` while it waits rejects it with ERR_WEIDA_CANCELED.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] chunk: BodyIn,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let (slot, last) = (self.slot.clone(), self.last.clone());
        promise(
            env,
            cancel,
            async move {
                let mut g = slot.item.lock().await;
                let f = g.as_mut().ok_or_else(|| slot.used())?;
                let r = tokio::select! {
                    r = f.write(chunk.0) => Some(r),
                    _ = slot.gone.cancelled() => None,
                };
                let Some(r) = r else {
                    // `cancel()` found the fan-out held: dropping it cancels every copy.
                    g.take();
                    return Err(Fail::Core(CoreError::Canceled));
                };
                let n = small(r?);
                last.store(n, Ordering::Relaxed);
                Ok(n)
            },
            |_, n| Ok(n),
        )
    }

    /// Hands `chunk` to every attached copy without waiting (a copy with no room is dropped);
    /// returns the copies still attached.
    #[napi]
    pub fn write_now(
        &self,
        env: Env,
        #[napi(ts_arg_type = "string | Uint8Array")] chunk: BodyIn,
    ) -> napi::Result<u32> {
        let mut g = self.held(&env)?;
        let f = g.as_mut().expect("held checked it");
        let n = on_io(|| f.write_now(chunk.0))
            .map(small)
            .map_err(|e| error::throw(&env, e))?;
        self.last.store(n, Ordering::Relaxed);
        Ok(n)
    }

    /// Ends the message for every attached copy; returns how many were still attached.
    #[napi]
    pub fn finish(&self, env: Env) -> napi::Result<u32> {
        let f = self.held(&env)?.take().expect("held checked it");
        let n = small(on_io(|| f.finish()));
        self.last.store(n, Ordering::Relaxed);
        Ok(n)
    }

    /// Cancels every copy: subscribers discard what they received of it. A no-op once finished.
    #[napi]
    pub fn cancel(&self) {
        self.slot.gone.cancel();
        // A pending write holds the fan-out and drops it when it sees `gone`.
        if let Ok(mut g) = self.slot.item.try_lock() {
            if let Some(f) = g.take() {
                self.last.store(0, Ordering::Relaxed);
                on_io(|| f.cancel());
            }
        }
    }
}

/// Receives the messages of the publishers it connects to whose topics its filters select.
#[napi]
pub struct Subscriber {
    inner: Arc<Io<weida::Subscriber>>,
}

impl Subscriber {
    pub(crate) fn new(s: weida::Subscriber) -> Subscriber {
        Subscriber {
            inner: Arc::new(Io::new(s)),
        }
    }
}

#[napi]
impl Subscriber {
    /// Dials the publisher at `address` and installs every filter held there.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(
        &self,
        env: &'env Env,
        address: String,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let s = self.inner.clone();
        promise(
            env,
            cancel,
            async move { Ok(s.connect(&address).await?) },
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
        let s = self.inner.clone();
        promise(
            env,
            cancel,
            async move { Ok(s.subscribe(&filter).await?) },
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
        let s = self.inner.clone();
        promise(
            env,
            cancel,
            async move { Ok(s.unsubscribe(&filter).await?) },
            |_, removed| Ok(removed),
        )
    }

    /// The filters held, in the order given.
    #[napi(getter)]
    pub fn filters(&self) -> Vec<String> {
        self.inner.filters()
    }

    /// Up to `max` messages as `[metas, bodies]` (lib/index.ts makes them `Message`s, each
    /// with its `meta.topic`, and `sequence` and `gap` under PerProducer ordering), waiting for
    /// the first; an error met after the first rejects the next receive. Aborted as they
    /// arrived, they go back to the subscriber.
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

    /// Messages received and waiting for `recv`.
    #[napi(getter)]
    pub fn queued(&self) -> u32 {
        small(self.inner.queued())
    }

    /// Closes every connection; receiving returns what is queued, then ERR_WEIDA_CLOSED.
    #[napi]
    pub fn close(&self) {
        on_io(|| self.inner.close());
    }
}
