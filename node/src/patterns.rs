//! The patterns: `Pusher`/`Puller`, `Requester`/`Replier`, raw `Peer`/`Acceptor`.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use napi::bindgen_prelude::{Either, Object};
use napi::Env;
use napi_derive::napi;
use weida::{Error as CoreError, Incoming};

use crate::error::{self, Fail};
use crate::runtime::{on_io, promise, Cancel, Io};
use crate::stream::{
    message_out, metadata_in, BodyIn, BodyOut, Exchange, IncomingTransfer, OutgoingTransfer,
    PendingReply,
};

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

    /// Sends each body as its own message, in order, in one call across the boundary; the
    /// first failure rejects (the bodies before it were sent).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn send_many<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Array<string | Uint8Array>")] bodies: Vec<BodyIn>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.get();
        let bodies: Vec<Bytes> = bodies.into_iter().map(|b| b.0).collect();
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

    /// The next whole message `{meta, body}`. A message its sender cancelled rejects with
    /// ERR_WEIDA_CANCELED and the puller goes on; after `close()`, ERR_WEIDA_CLOSED.
    #[napi(ts_return_type = "Promise<Message>")]
    pub fn recv<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let p = self.inner.clone();
        promise(env, cancel, async move { Ok(p.recv().await?) }, message_out)
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
