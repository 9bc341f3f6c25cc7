//! The endpoints of Push/Pull, Req/Rep and Pub/Sub, the exchange a replier accepts, and
//! [`Received`], where a receive puts what it took (weida-ffi's `awaiting::Held`: dropped
//! untaken, it goes back to the front of its endpoint's queue, so a receive whose coroutine
//! is cancelled loses nothing).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use weida::{Metadata, PeerIdentity, Receiving};
use weida_ffi::awaiting::Held;
use weida_ffi::call::ready_turn;
use weida_ffi::inbox::give_back;
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::patterns::{connect, send_many, Endpoint};
use weida_ffi::{Call, Fail};

use crate::blob::Blob;
use crate::call::{run, Cancellation};
use crate::error::Result;
use crate::events::PeerEvents;
use crate::packed::{pack, take_ready, Packed};

/// Who sent a message, as the transport proved it.
#[derive(Debug, Clone, uniffi::Enum)]
pub enum Peer {
    /// A QUIC peer that presented this key.
    Key { fingerprint: String },
    /// An AF_UNIX peer, as the kernel reported it.
    Local { uid: u32, gid: u32, pid: i32 },
}

/// A whole message and what arrived with it.
#[derive(Debug, Clone, uniffi::Record)]
pub struct Message {
    pub body: Blob,
    /// Application metadata, in order.
    pub metadata: Vec<MetaEntry>,
    /// The endpoint path it was addressed to.
    pub path: String,
    /// The peer (null in process, or for an anonymous QUIC client).
    pub peer: Option<Peer>,
    /// Pub/Sub: the topic.
    pub topic: Option<String>,
    /// Under PerProducer ordering (a subscriber's copies, a puller's messages): the sequence
    /// number, and how many were missed.
    pub sequence: Option<u64>,
    pub gap: Option<u64>,
}

/// One metadata entry.
#[derive(Debug, Clone, uniffi::Record)]
pub struct MetaEntry {
    pub name: String,
    pub value: Vec<u8>,
}

pub(crate) fn meta_in(m: Option<HashMap<String, Vec<u8>>>) -> Metadata {
    let mut out = Metadata::new();
    for (k, v) in m.into_iter().flatten() {
        out.insert(k, v);
    }
    out
}

pub(crate) fn peer(p: Option<&PeerIdentity>) -> Option<Peer> {
    match p {
        Some(PeerIdentity::Key(f)) => Some(Peer::Key {
            fingerprint: f.to_string(),
        }),
        Some(PeerIdentity::Local { uid, gid, pid }) => Some(Peer::Local {
            uid: *uid,
            gid: *gid,
            pid: *pid,
        }),
        _ => None,
    }
}

/// Metadata out, in order.
pub(crate) fn entries(m: &Metadata) -> Vec<MetaEntry> {
    m.iter()
        .map(|(n, v)| MetaEntry {
            name: n.to_string(),
            value: v.to_vec(),
        })
        .collect()
}

pub(crate) fn message(m: weida::Message) -> Message {
    let meta = &m.meta;
    Message {
        body: Blob(m.body.to_vec()),
        metadata: entries(&meta.metadata),
        path: meta.path.to_string(),
        peer: peer(meta.peer.as_ref()),
        topic: meta.topic.clone(),
        sequence: meta.sequence,
        gap: meta.gap,
    }
}

/// What a receive took, until the caller takes it; dropped untaken, given back.
#[derive(uniffi::Object)]
pub struct Received {
    held: Held<Vec<weida::Message>>,
}

impl Received {
    pub(crate) fn of<R: Receiving>(endpoint: Arc<R>) -> Arc<Self> {
        Arc::new(Self {
            held: Held::new(move |ms: Vec<weida::Message>| {
                // Back in front of the queue, in order.
                give_back(&*endpoint, ms);
            }),
        })
    }
}

#[uniffi::export]
impl Received {
    /// The messages the receive took (empty once taken).
    pub fn take(&self) -> Vec<Message> {
        self.held
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(message)
            .collect()
    }

    /// The messages the receive took, packed (`Packed`; empty once taken): what the Kotlin and
    /// Swift layers lift, one record for the batch instead of one per message. Beyond one
    /// packed batch's bounds (`weida_ffi::packed::over_budget`), the rest stays here, and goes back to the
    /// front of the queue when this is dropped (or to the next take).
    pub fn take_packed(&self) -> Packed {
        let mut ms = self.held.take().unwrap_or_default();
        let rest = weida_ffi::packed::over_budget(&mut ms);
        if !rest.is_empty() {
            self.held.put(rest);
        }
        pack(&ms)
    }
}

/// A receive of up to `max` messages into `into`, awaited.
pub(crate) async fn receive<R: Receiving>(
    r: Arc<R>,
    max: u32,
    into: Arc<Received>,
    cancel: Option<Arc<Cancellation>>,
) -> Result<()> {
    let c = Call::new(async move {
        into.held.put(recv_up_to(&*r, max).await?);
        Ok::<_, Fail>(())
    });
    Ok(run(c, cancel).await?)
}

/// Up to `max` messages from `r` (at least one): `recvInto`'s and the Kotlin fast lane's
/// receive (`fast.rs`).
pub(crate) async fn recv_up_to<R: Receiving>(
    r: &R,
    max: u32,
) -> std::result::Result<Vec<weida::Message>, Fail> {
    Ok(match usize::try_from(max).unwrap_or(usize::MAX) {
        1 => vec![r.recv().await?],
        max => r.recv_many(max).await?,
    })
}

pub(crate) fn try_receive<R: Receiving>(r: &R) -> Result<Option<Message>> {
    match on_io(|| r.try_recv()) {
        None => Ok(None),
        Some(Ok(m)) => Ok(Some(message(m))),
        Some(Err(e)) => Err(e.into()),
    }
}

/// The dialling side of Push/Pull.
#[derive(uniffi::Object)]
pub struct Pusher {
    inner: Endpoint<weida::Pusher>,
}

impl Pusher {
    /// `send_ready` of bytes: the UniFFI export's and the Kotlin fast lane's (`fast.rs`).
    pub(crate) fn send_ready_bytes(&self, body: Bytes) -> Result<u8> {
        if !ready_turn() {
            return Ok(2);
        }
        Ok(if self.try_send_bytes(body)? { 0 } else { 1 })
    }

    fn try_send_bytes(&self, body: Bytes) -> Result<bool> {
        let p = self.inner.get()?;
        Ok(on_io(|| p.try_send(body))?.is_none())
    }

    pub(crate) fn new(p: weida::Pusher) -> Arc<Self> {
        Arc::new(Self {
            inner: Endpoint::new(p),
        })
    }

    /// The core's pusher, or `Closed` after `close_endpoint`.
    pub(crate) fn endpoint(&self) -> std::result::Result<Arc<weida::Pusher>, Fail> {
        self.inner.get()
    }

    /// The call `send_packed` runs: the export's and the Kotlin fast lane's (`fast.rs`).
    pub(crate) fn send_packed_call(
        &self,
        packed: Bytes,
        count: u32,
    ) -> std::result::Result<Call<()>, Fail> {
        let p = self.inner.get()?;
        let bodies = weida_ffi::packed::unpack(packed, count as usize).map_err(Fail::from)?;
        Ok(Call::new(send_many(p, bodies)))
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Pusher {
    /// Connects to `address`: waits for the first dial (`wait`), or records it and dials in
    /// the background (connect-before-bind).
    #[uniffi::method(default(cancel = None))]
    pub async fn connect(
        &self,
        address: String,
        wait: bool,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let p = self.inner.get()?;
        Ok(run(Call::new(connect(p, address, wait)), cancel).await?)
    }

    pub fn disconnect(&self, address: String) -> Result<bool> {
        Ok(on_io(|| {
            self.inner.get()?.disconnect(&address).map_err(Fail::from)
        })?)
    }

    pub fn peer_count(&self) -> Result<u32> {
        Ok(self.inner.get()?.peer_count() as u32)
    }

    pub fn events(&self) -> Result<Arc<PeerEvents>> {
        Ok(PeerEvents::new(on_io(|| self.inner.get())?.events()))
    }

    /// Sends `body` (with `meta`) as one message. Cancelled, the transfer is reset and the
    /// reader sees Canceled.
    #[uniffi::method(default(cancel = None))]
    pub async fn send(
        &self,
        body: Blob,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let p = self.inner.get()?;
        let meta = meta_in(meta);
        let c = Call::new(async move { Ok(p.send_with(meta, Bytes::from(body)).await?) });
        Ok(run(c, cancel).await?)
    }

    /// Sends each of the `count` bodies packed in `packed` as its own message, in order; a
    /// failure says how many were sent (its `sent` field). Kotlin's and Swift's `sendMany`
    /// pack a list in weida-ffi's packed layout (`weida_ffi::packed`), so the batch crosses as
    /// one value and each body is a slice of it, not a list lifted body by body; a malformed
    /// batch is refused (InvalidConfig) with nothing sent.
    #[uniffi::method(default(cancel = None))]
    pub async fn send_packed(
        &self,
        packed: Blob,
        count: u32,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        Ok(run(self.send_packed_call(packed.into(), count)?, cancel).await?)
    }

    /// Queues `body` at once if there is room: true; false if there is none.
    pub fn try_send(&self, body: Blob) -> Result<bool> {
        self.try_send_bytes(body.into())
    }

    /// `try_send` for a caller that yields: 0 `body` is queued; 1 it is not, take the waiting
    /// `send`; 2 this thread has finished `weida_ffi::call::READY_STREAK` operations at once in
    /// a row, so yield to the dispatcher, then take the waiting `send` (a stream of ready sends
    /// cannot starve the caller's other coroutines). The Kotlin layer's `send(body)`: one FFI
    /// call and no future for a send that can be queued now. A number, not an enum: through
    /// JNA an enum is a buffer to allocate and free on every send.
    pub fn send_ready(&self, body: Blob) -> Result<u8> {
        self.send_ready_bytes(body.into())
    }

    /// Lets go of the endpoint: later calls are `Closed` (Python's and Node's `close`).
    pub fn close_endpoint(&self) {
        self.inner.close();
    }
}

/// The bound side of Push/Pull.
#[derive(uniffi::Object)]
pub struct Puller {
    pub(crate) inner: OnIo<Arc<weida::Puller>>,
}

impl Puller {
    pub(crate) fn new(p: weida::Puller) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(p)),
        })
    }

    /// The core's puller.
    pub(crate) fn endpoint(&self) -> Arc<weida::Puller> {
        Arc::clone(&self.inner)
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Puller {
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// Where the next receive puts what it takes.
    pub fn received(&self) -> Arc<Received> {
        Received::of(Arc::clone(&self.inner))
    }

    /// Receives up to `max` messages (at least one) into `into`. Cancel-safe: cancelled, it
    /// loses nothing.
    #[uniffi::method(default(cancel = None))]
    pub async fn recv_into(
        &self,
        max: u32,
        into: Arc<Received>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        receive(Arc::clone(&self.inner), max, into, cancel).await
    }

    /// A message if one is ready, without waiting.
    pub fn try_recv(&self) -> Result<Option<Message>> {
        try_receive(&**self.inner)
    }

    /// Up to `max` messages ready now, packed, in one call with no future. None: nothing is
    /// ready, take the waiting receive; an empty batch: this thread's ready streak is spent,
    /// yield to the dispatcher first, then take the waiting receive.
    pub fn take_ready(&self, max: u32) -> Result<Option<Packed>> {
        take_ready(&**self.inner, max)
    }

    /// Ends the endpoint: receives then end with `Closed` (Python's and Node's `close`).
    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}

/// The dialling side of Req/Rep.
#[derive(uniffi::Object)]
pub struct Requester {
    inner: Endpoint<weida::Requester>,
}

impl Requester {
    pub(crate) fn new(r: weida::Requester) -> Arc<Self> {
        Arc::new(Self {
            inner: Endpoint::new(r),
        })
    }

    /// The core's requester, or `Closed` after `close_endpoint`.
    pub(crate) fn endpoint(&self) -> std::result::Result<Arc<weida::Requester>, Fail> {
        self.inner.get()
    }

    /// The call `request_with` runs: the export's and the Kotlin fast lane's (`fast.rs`).
    pub(crate) fn request_call(&self, meta: Metadata, body: Bytes) -> Call<weida::Message> {
        let r = self.inner.get();
        Call::new(async move { Ok(r?.request_with(meta, body).await?) })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Requester {
    #[uniffi::method(default(cancel = None))]
    pub async fn connect(
        &self,
        address: String,
        wait: bool,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let r = self.inner.get()?;
        Ok(run(Call::new(connect(r, address, wait)), cancel).await?)
    }

    pub fn disconnect(&self, address: String) -> Result<bool> {
        Ok(on_io(|| {
            self.inner.get()?.disconnect(&address).map_err(Fail::from)
        })?)
    }

    pub fn peer_count(&self) -> Result<u32> {
        Ok(self.inner.get()?.peer_count() as u32)
    }

    pub fn events(&self) -> Result<Arc<PeerEvents>> {
        Ok(PeerEvents::new(on_io(|| self.inner.get())?.events()))
    }

    /// Sends `body` and returns the reply's body. Cancelled, the request is reset and the
    /// replier sees Canceled.
    #[uniffi::method(default(cancel = None))]
    pub async fn request(
        &self,
        body: Blob,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Blob> {
        let m = self.request_with(body, meta, cancel).await?;
        Ok(m.body)
    }

    /// As `request`, the whole reply with what came with it.
    #[uniffi::method(default(cancel = None))]
    pub async fn request_with(
        &self,
        body: Blob,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Message> {
        let c = self.request_call(meta_in(meta), body.into());
        Ok(message(run(c, cancel).await?))
    }

    pub fn close_endpoint(&self) {
        self.inner.close();
    }
}

/// The bound side of Req/Rep.
#[derive(uniffi::Object)]
pub struct Replier {
    inner: OnIo<Arc<weida::Replier>>,
}

impl Replier {
    pub(crate) fn new(r: weida::Replier) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(r)),
        })
    }

    /// The call `accept` runs: the export's and the Kotlin fast lane's (`fast.rs`).
    pub(crate) fn accept_call(&self) -> Call<weida::Exchange> {
        let r = Arc::clone(&self.inner);
        Call::new(async move { Ok(r.accept().await?) })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Replier {
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// The next exchange. Cancelled just as an exchange arrives, that exchange is dropped and
    /// its requester sees Canceled. No default for `cancel`: the Kotlin layer's `accept()` takes the
    /// fast lane (FastLane.kt), the Swift layer's passes its task's cancellation.
    pub async fn accept(&self, cancel: Option<Arc<Cancellation>>) -> Result<Arc<Exchange>> {
        Ok(Exchange::of(run(self.accept_call(), cancel).await?))
    }

    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}

/// An incoming exchange: the request, and the reply this side owes. Cancelled (or dropped)
/// unanswered, the requester sees Canceled.
#[derive(uniffi::Object)]
pub struct Exchange {
    pub(crate) inner: Arc<weida_ffi::stream::Exchange>,
}

impl Exchange {
    pub(crate) fn of(x: weida::Exchange) -> Arc<Self> {
        Arc::new(Self {
            inner: weida_ffi::stream::Exchange::new(x),
        })
    }

    /// The call `take_body` runs: the export's and the Kotlin fast lane's (`fast.rs`).
    pub(crate) fn take_body_call(&self, max: Option<u64>) -> Call<Bytes> {
        Call::new(Arc::clone(&self.inner).take_body(max))
    }

    /// The call `reply` runs: the export's and the Kotlin fast lane's (`fast.rs`).
    pub(crate) fn reply_call(&self, meta: Metadata, body: Bytes) -> Call<()> {
        Call::new(Arc::clone(&self.inner).reply(meta, body))
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Exchange {
    /// The endpoint path the request was addressed to.
    pub fn path(&self) -> String {
        self.inner.meta().path.to_string()
    }

    /// Who sent the request (null in process, or for an anonymous QUIC client), as a
    /// message's `peer`: what a replier checks before it answers.
    pub fn peer(&self) -> Option<Peer> {
        peer(self.inner.meta().peer.as_ref())
    }

    /// The request's metadata, in order.
    pub fn metadata(&self) -> Vec<MetaEntry> {
        entries(&self.inner.meta().metadata)
    }

    /// The whole request body, bounded by `max` (default `maxCollectedBody`).
    #[uniffi::method(default(cancel = None))]
    pub async fn take_body(
        &self,
        max: Option<u64>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Blob> {
        Ok(run(self.take_body_call(max), cancel).await?.to_vec().into())
    }

    /// Replies with `body` (and metadata) and finishes the reply.
    #[uniffi::method(default(cancel = None))]
    pub async fn reply(
        &self,
        body: Blob,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        Ok(run(self.reply_call(meta_in(meta), body.into()), cancel).await?)
    }

    /// Answers REJECTED with `reason`.
    #[uniffi::method(default(cancel = None))]
    pub async fn reject(&self, reason: String, cancel: Option<Arc<Cancellation>>) -> Result<()> {
        let x = Arc::clone(&self.inner);
        Ok(run(Call::new(x.reject(reason)), cancel).await?)
    }

    /// Answers with the error `code` names (`TIMEOUT`, `CLOSED`, …) and `message`.
    #[uniffi::method(default(cancel = None))]
    pub async fn fail(
        &self,
        code: String,
        message: String,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let x = Arc::clone(&self.inner);
        Ok(run(Call::new(x.fail(code, message)), cancel).await?)
    }

    /// Abandons the exchange unanswered: the requester sees Canceled.
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

/// What a publisher dropped, by cause.
#[derive(Debug, uniffi::Record)]
pub struct Dropped {
    pub queue_full: u64,
    pub byte_budget: u64,
    pub reverse_pool_empty: u64,
    pub dead_subscriber: u64,
    pub refused: u64,
    pub total: u64,
}

impl From<weida::Dropped> for Dropped {
    fn from(d: weida::Dropped) -> Self {
        Self {
            queue_full: d.queue_full,
            byte_budget: d.byte_budget,
            reverse_pool_empty: d.reverse_pool_empty,
            dead_subscriber: d.dead_subscriber,
            refused: d.refused,
            total: d.total(),
        }
    }
}

/// The bound side of Pub/Sub.
#[derive(uniffi::Object)]
pub struct Publisher {
    inner: OnIo<Arc<weida::Publisher>>,
}

impl Publisher {
    pub(crate) fn new(p: weida::Publisher) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(p)),
        })
    }

    /// The core's publisher.
    pub(crate) fn endpoint(&self) -> &weida::Publisher {
        &self.inner
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Publisher {
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// Queues a copy of `body` for every subscriber whose filters select `topic`; how many.
    /// Never waits.
    pub fn publish(&self, topic: String, body: Blob) -> Result<u32> {
        Ok(on_io(|| self.inner.publish(&topic, body))? as u32)
    }

    pub fn subscriber_count(&self) -> u32 {
        self.inner.subscriber_count() as u32
    }

    /// Returns once `n` subscribers are attached.
    #[uniffi::method(default(cancel = None))]
    pub async fn until_subscribers(&self, n: u32, cancel: Option<Arc<Cancellation>>) -> Result<()> {
        let p = Arc::clone(&self.inner);
        let c = Call::new(async move {
            p.until_subscribers(n as usize).await;
            Ok::<_, Fail>(())
        });
        Ok(run(c, cancel).await?)
    }

    pub fn dropped(&self) -> Dropped {
        self.inner.dropped().into()
    }

    /// What was dropped of the copies published on `topic` (a topic name, not a filter).
    pub fn dropped_on(&self, topic: String) -> Dropped {
        self.inner.dropped_on(&topic).into()
    }

    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}

/// The dialling side of Pub/Sub.
#[derive(uniffi::Object)]
pub struct Subscriber {
    pub(crate) inner: OnIo<Arc<weida::Subscriber>>,
}

impl Subscriber {
    pub(crate) fn new(s: weida::Subscriber) -> Arc<Self> {
        Arc::new(Self {
            inner: OnIo::new(Arc::new(s)),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Subscriber {
    #[uniffi::method(default(cancel = None))]
    pub async fn connect(
        &self,
        address: String,
        wait: bool,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let s = Arc::clone(&self.inner);
        Ok(run(Call::new(connect(s, address, wait)), cancel).await?)
    }

    pub fn disconnect(&self, address: String) -> Result<bool> {
        Ok(on_io(|| self.inner.disconnect(&address))?)
    }

    pub fn peer_count(&self) -> u32 {
        self.inner.peer_count() as u32
    }

    pub fn events(&self) -> Arc<PeerEvents> {
        PeerEvents::new(on_io(|| self.inner.events()))
    }

    /// Adds `filter` (segments split by `.`, `*` one, `>` the rest); returns once every
    /// connected publisher has it.
    #[uniffi::method(default(cancel = None))]
    pub async fn subscribe(&self, filter: String, cancel: Option<Arc<Cancellation>>) -> Result<()> {
        let s = Arc::clone(&self.inner);
        Ok(run(
            Call::new(async move { Ok(s.subscribe(&filter).await?) }),
            cancel,
        )
        .await?)
    }

    /// Removes `filter`; true if it was there. No copy it selected arrives after it returns.
    #[uniffi::method(default(cancel = None))]
    pub async fn unsubscribe(
        &self,
        filter: String,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<bool> {
        let s = Arc::clone(&self.inner);
        Ok(run(
            Call::new(async move { Ok(s.unsubscribe(&filter).await?) }),
            cancel,
        )
        .await?)
    }

    pub fn filters(&self) -> Vec<String> {
        self.inner.filters()
    }

    /// Messages received and waiting for a receive.
    pub fn queued(&self) -> u64 {
        self.inner.queued() as u64
    }

    /// Where the next receive puts what it takes.
    pub fn received(&self) -> Arc<Received> {
        Received::of(Arc::clone(&self.inner))
    }

    /// Receives up to `max` messages (at least one) into `into`. Cancel-safe: cancelled, it
    /// loses nothing.
    #[uniffi::method(default(cancel = None))]
    pub async fn recv_into(
        &self,
        max: u32,
        into: Arc<Received>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        receive(Arc::clone(&self.inner), max, into, cancel).await
    }

    pub fn try_recv(&self) -> Result<Option<Message>> {
        try_receive(&**self.inner)
    }

    /// Up to `max` messages ready now, packed, in one call with no future. None: nothing is
    /// ready, take the waiting receive; an empty batch: this thread's ready streak is spent,
    /// yield to the dispatcher first, then take the waiting receive.
    pub fn take_ready(&self, max: u32) -> Result<Option<Packed>> {
        take_ready(&**self.inner, max)
    }

    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}
