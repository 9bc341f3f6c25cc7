//! The stream types: `OutgoingTransfer` and its `Delivery`, `IncomingTransfer`, `Exchange`,
//! `PendingReply`; bodies in and out; metadata and `IncomingMeta` as JS values.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use bytes::Bytes;
use napi::bindgen_prelude::{
    BigInt, Buffer, BufferSlice, FnArgs, FromNapiValue, Function, FunctionRef, JsObjectValue, Null,
    Object, ToNapiValue, TypeName, ValidateNapiValue,
};
use napi::{sys, Env, JsValue, ValueType};
use napi_derive::napi;
use weida::{IncomingMeta, Metadata, PeerIdentity};
use weida_ffi::{packed, stream as ffi, Call};

use crate::runtime::{promise, Cancel};

/// Bodies up to this size cross the boundary as a copy, which costs less than a reference into
/// the other side's heap and its release; larger ones are shared without a copy.
const COPY_MAX: usize = 16 * 1024;

/// A body from JS: a string (sent as UTF-8) or any `Uint8Array` (a `Buffer` is one). A large
/// one is held by reference until the core is done with it: do not modify it meanwhile.
pub struct BodyIn(pub(crate) Bytes);

impl TypeName for BodyIn {
    fn type_name() -> &'static str {
        "string | Uint8Array"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for BodyIn {}

impl FromNapiValue for BodyIn {
    unsafe fn from_napi_value(env: sys::napi_env, v: sys::napi_value) -> napi::Result<Self> {
        let mut ty = 0;
        // SAFETY: env and v come from napi for this call.
        unsafe { sys::napi_typeof(env, v, &mut ty) };
        if ty == sys::ValueType::napi_string {
            // SAFETY: as above.
            return Ok(Self(Bytes::from(unsafe {
                String::from_napi_value(env, v)?
            })));
        }
        // SAFETY: as above; napi_get_buffer_info accepts any ArrayBufferView.
        let slice = unsafe { BufferSlice::from_napi_value(env, v) }.map_err(|_| {
            napi::Error::new(
                napi::Status::InvalidArg,
                "a body is a string or a Uint8Array (Buffer)",
            )
        })?;
        if slice.len() <= COPY_MAX {
            Ok(Self(Bytes::copy_from_slice(&slice)))
        } else {
            // SAFETY: as above.
            let held = unsafe { Buffer::from_napi_value(env, v)? };
            Ok(Self(Bytes::from_owner(held)))
        }
    }
}

/// A body to JS: a `Buffer`, over the received bytes themselves when large.
pub struct BodyOut(pub(crate) Bytes);

unsafe extern "C" fn release_bytes(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: `hint` is the Box<Bytes> leaked in `to_napi_value`, released once by napi.
    drop(unsafe { Box::from_raw(hint.cast::<Bytes>()) });
}

impl ToNapiValue for BodyOut {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let bytes = val.0;
        let len = bytes.len();
        let mut out = ptr::null_mut();
        if len > COPY_MAX {
            let held = Box::new(bytes);
            let data = held.as_ptr() as *mut c_void;
            let hint = Box::into_raw(held);
            // SAFETY: `data` stays valid until `release_bytes` frees `hint`, which owns it.
            let status = unsafe {
                sys::napi_create_external_buffer(
                    env,
                    len,
                    data,
                    Some(release_bytes),
                    hint.cast(),
                    &mut out,
                )
            };
            if status == sys::Status::napi_ok {
                return Ok(out);
            }
            // No external buffers here (a sandboxed runtime): copy instead.
            // SAFETY: napi did not take `hint`.
            let bytes = *unsafe { Box::from_raw(hint) };
            return copy_out(env, &bytes);
        }
        copy_out(env, &bytes)
    }
}

fn copy_out(env: sys::napi_env, b: &[u8]) -> napi::Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: napi copies `b.len()` bytes from `b`.
    let status = unsafe {
        sys::napi_create_buffer_copy(env, b.len(), b.as_ptr().cast(), ptr::null_mut(), &mut out)
    };
    if status == sys::Status::napi_ok {
        Ok(out)
    } else {
        Err(napi::Error::new(
            napi::Status::GenericFailure,
            "could not create a Buffer",
        ))
    }
}

/// Metadata from a JS `Record<string, string | Uint8Array>`, in its key order.
pub(crate) fn metadata_in(meta: Option<Object<'_>>) -> napi::Result<Metadata> {
    let mut m = Metadata::new();
    if let Some(o) = meta {
        for k in Object::keys(&o)? {
            let v: BodyIn = o.get_named_property_unchecked(&k)?;
            m.insert(k, v.0);
        }
    }
    Ok(m)
}

/// Metadata to JS: `Array<[string, Buffer]>`, in the order it arrived.
fn metadata_out(m: &Metadata) -> Vec<(String, BodyOut)> {
    m.iter()
        .map(|(k, v)| (k.to_string(), BodyOut(v.clone())))
        .collect()
}

/// `IncomingMeta` as a JS object: `{peer, path, metadata, topic, sequence, gap}`, where `peer`
/// is `null`, `{kind: 'key', fingerprint}` or `{kind: 'local', uid, gid, pid}`.
pub(crate) fn meta_out<'env>(env: &'env Env, m: &IncomingMeta) -> napi::Result<Object<'env>> {
    let mut o = Object::new(env)?;
    match &m.peer {
        None => o.set_named_property("peer", Null)?,
        Some(PeerIdentity::Key(fp)) => {
            let mut p = Object::new(env)?;
            p.set_named_property("kind", "key")?;
            p.set_named_property("fingerprint", fp.to_string())?;
            o.set_named_property("peer", p)?;
        }
        Some(PeerIdentity::Local { uid, gid, pid }) => {
            let mut p = Object::new(env)?;
            p.set_named_property("kind", "local")?;
            p.set_named_property("uid", *uid)?;
            p.set_named_property("gid", *gid)?;
            p.set_named_property("pid", *pid)?;
            o.set_named_property("peer", p)?;
        }
        Some(_) => o.set_named_property("peer", Null)?,
    }
    o.set_named_property("path", &*m.path)?;
    o.set_named_property("metadata", metadata_out(&m.metadata))?;
    o.set_named_property("topic", m.topic.clone())?;
    o.set_named_property("sequence", m.sequence.map(BigInt::from))?;
    o.set_named_property("gap", m.gap.map(BigInt::from))?;
    Ok(o)
}

/// What arrived with messages handed to JS together, made a JS object only when read: building
/// one costs about as much as the rest of a receive, and many receivers only read the body. One
/// native object per batch, not per message: each wrapped object costs a finalizer and a
/// reference, ~10 % of a 64 B receive when it was one per message (profiled, docs/BINDINGS.md).
#[napi]
pub struct Metas {
    metas: Vec<Arc<IncomingMeta>>,
}

#[napi]
impl Metas {
    /// The metadata of the `i`th message as a JS object (lib/index.ts reads it once, on first
    /// use of `meta`).
    #[napi(ts_return_type = "IncomingMeta")]
    pub fn get<'env>(&self, env: &'env Env, i: u32) -> napi::Result<Object<'env>> {
        match self.metas.get(i as usize) {
            Some(m) => meta_out(env, m),
            None => Err(napi::Error::from_reason("no message at that index")),
        }
    }
}

type MessageClass = FunctionRef<FnArgs<(BodyOut, Metas, u32)>, ()>;

thread_local! {
    // Per JS thread: the `Message` class of lib/index.ts.
    static MESSAGE: RefCell<Option<MessageClass>> = const { RefCell::new(None) };
}

/// Registers the class a whole message is made as: `new Message(body, metas, 0)`. Without it a
/// message is a plain `{body, meta}` object.
#[napi]
pub fn register_message_class(
    #[napi(ts_arg_type = "new (body: Buffer, metas: Metas, index: number) => object")]
    message_class: Function<'_, FnArgs<(BodyOut, Metas, u32)>, ()>,
) -> napi::Result<()> {
    let class = message_class.create_ref()?;
    MESSAGE.with(|m| *m.borrow_mut() = Some(class));
    Ok(())
}

/// A whole message as a JS `Message` (lib/index.ts), or `{meta, body}`.
pub(crate) fn message_out(env: &Env, m: weida::Message) -> napi::Result<Raw> {
    let body = BodyOut(m.body);
    MESSAGE.with(|c| match &*c.borrow() {
        Some(class) => {
            let metas = Metas {
                metas: vec![m.meta],
            };
            let made = class
                .borrow_back(env)?
                .new_instance((body, metas, 0).into())?;
            Ok(Raw(made.raw()))
        }
        None => {
            let mut o = Object::new(env)?;
            o.set_named_property("meta", meta_out(env, &m.meta)?)?;
            o.set_named_property("body", body)?;
            Ok(Raw(o.raw()))
        }
    })
}

/// Whole messages for JS, in the order received, as `[metas, count, packed, bodies]`
/// (native-header.d.ts, `Batch`): lib/index.ts makes each a `Message`, which costs less in JS
/// than a constructor called from here once per message. `packed` holds the bodies in
/// weida-ffi's packed layout (`weida_ffi::packed`), written straight into the new `Buffer`,
/// when `packed::packs_whole` says so (several bodies, 64 KiB at most in all); else `bodies`
/// holds them, one `Buffer` each.
pub(crate) fn batch_out(env: &Env, ms: Vec<weida::Message>) -> napi::Result<Raw> {
    let count = u32::try_from(ms.len()).unwrap_or(u32::MAX);
    let total: usize = ms.iter().map(|m| m.body.len()).sum();
    let mut out = env.create_array(4)?;
    out.set(1, count)?;
    if packed::packs_whole(ms.len(), total) {
        let size = packed::packed_len(ms.len(), total);
        let mut data = ptr::null_mut();
        let mut buffer = ptr::null_mut();
        // SAFETY: napi allocates `size` bytes and hands back where they are.
        let status = unsafe { sys::napi_create_buffer(env.raw(), size, &mut data, &mut buffer) };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_reason("could not create a Buffer"));
        }
        // SAFETY: `data` points at `size` writable bytes the new Buffer owns; nothing else
        // refers to them yet.
        let dst = unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), size) };
        packed::pack_into(dst, packed::bodies(&ms));
        let metas = ms.into_iter().map(|m| m.meta).collect();
        out.set(0, Metas { metas })?;
        out.set(2, Raw(buffer))?;
        out.set(3, Null)?;
    } else {
        let mut bodies = env.create_array(count)?;
        let mut metas = Vec::with_capacity(ms.len());
        for (i, m) in (0..count).zip(ms) {
            bodies.set(i, BodyOut(m.body))?;
            metas.push(m.meta);
        }
        out.set(0, Metas { metas })?;
        out.set(2, Null)?;
        out.set(3, bodies)?;
    }
    Ok(Raw(out.raw()))
}

/// The bodies of a `sendMany` that lib/index.ts packed in one buffer, in weida-ffi's packed
/// layout (`weida_ffi::packed::unpack`, which refuses a malformed one): each body is a slice of
/// `all`, so the whole batch crossed in one value and costs one copy, not a conversion and an
/// allocation per body.
pub(crate) fn unpack(all: Bytes, count: u32) -> napi::Result<Vec<Bytes>> {
    packed::unpack(all, count as usize)
        .map_err(|e| napi::Error::new(napi::Status::InvalidArg, e.to_string()))
}

/// A JS value made on the JS thread, handed back as the value a promise resolves with.
pub struct Raw(pub(crate) sys::napi_value);

impl ToNapiValue for Raw {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        Ok(val.0)
    }
}

/// An outgoing stream: `write` at your own pace, then `finish` (the payload then arrives with
/// no local handle) or `cancel` (the reader sees Canceled, never a complete payload). An
/// aborted write cancels the transfer. A transfer garbage-collected unfinished is cancelled.
#[napi]
pub struct OutgoingTransfer {
    t: Arc<ffi::OutgoingTransfer>,
}

impl OutgoingTransfer {
    pub(crate) fn new(t: Arc<ffi::OutgoingTransfer>) -> Self {
        Self { t }
    }
}

#[napi]
impl OutgoingTransfer {
    /// Writes all of `body`; waits while the peer's window is full. An aborted write cancels
    /// the transfer.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        promise(env, cancel, self.t.write_call(body.0), |_, ()| Ok(()))
    }

    /// Writes several buffers in order, as one write where the transport allows.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn write_chunks<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Array<string | Uint8Array>")] chunks: Vec<BodyIn>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let chunks = chunks.into_iter().map(|b| b.0).collect();
        promise(
            env,
            cancel,
            self.t.write_chunks_call(chunks),
            |_, ()| Ok(()),
        )
    }

    /// Queues the FIN; the `Delivery` reports the transport receipt.
    #[napi(ts_return_type = "Promise<Delivery>")]
    pub fn finish<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let t = Arc::clone(&self.t);
        promise(env, cancel, Call::new(t.finish()), |_, d| Ok(Delivery(d)))
    }

    /// Abandons the transfer: the reader sees Canceled; pending writes reject with it.
    #[napi]
    pub fn cancel(&self) {
        self.t.cancel();
    }
}

/// The transport receipt of a finished transfer; free to ignore.
#[napi]
pub struct Delivery(Arc<ffi::Delivery>);

#[napi]
impl Delivery {
    /// Resolves when the peer's transport holds every byte and the FIN (not when its
    /// application read it); a refusal that reached this side first is its error.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn delivered<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        promise(
            env,
            cancel,
            Call::new(Arc::clone(&self.0).delivered()),
            |_, ()| Ok(()),
        )
    }
}

/// An incoming one-way stream (or a reply's body): read it in chunks or collect it; dropping
/// it unread stops the writer.
#[napi]
pub struct IncomingTransfer {
    t: Arc<ffi::IncomingTransfer>,
}

impl IncomingTransfer {
    pub(crate) fn new(t: Arc<ffi::IncomingTransfer>) -> Self {
        Self { t }
    }
}

#[napi]
impl IncomingTransfer {
    #[napi(getter, ts_return_type = "IncomingMeta")]
    pub fn meta<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        meta_out(env, self.t.meta())
    }

    /// The next chunk, `null` after the writer's FIN; a cancelled stream is an error, never
    /// `null`.
    #[napi(ts_return_type = "Promise<Buffer | null>")]
    pub fn read_chunk<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let t = Arc::clone(&self.t);
        promise(env, cancel, Call::new(t.read_chunk()), |_, c| {
            Ok(c.map(BodyOut))
        })
    }

    /// The whole body, refusing one above `max` bytes (LIMIT_EXCEEDED).
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn collect<'env>(
        &self,
        env: &'env Env,
        max: f64,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let t = Arc::clone(&self.t);
        let max = crate::patterns::count("max", max);
        promise(
            env,
            cancel,
            Call::new(async move { t.collect(max?).await }),
            |_, b| Ok(BodyOut(b)),
        )
    }
}

/// An incoming exchange: the request, and the reply half this side answers on. An exchange
/// garbage-collected unanswered is Canceled for the requester.
#[napi]
pub struct Exchange {
    x: Arc<ffi::Exchange>,
}

impl Exchange {
    pub(crate) fn new(x: Arc<ffi::Exchange>) -> Self {
        Self { x }
    }
}

#[napi]
impl Exchange {
    #[napi(getter, ts_return_type = "IncomingMeta")]
    pub fn meta<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        meta_out(env, self.x.meta())
    }

    /// The request's next chunk, `null` at its end.
    #[napi(ts_return_type = "Promise<Buffer | null>")]
    pub fn read_chunk<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let x = Arc::clone(&self.x);
        promise(env, cancel, Call::new(x.read_chunk()), |_, c| {
            Ok(c.map(BodyOut))
        })
    }

    /// The whole request body, bounded by `limits.maxCollectedBody`.
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn take_body<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let x = Arc::clone(&self.x);
        promise(env, cancel, Call::new(x.take_body(None)), |_, b| {
            Ok(BodyOut(b))
        })
    }

    /// Replies with `body` (and metadata) and finishes the reply.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn reply<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let meta = metadata_in(meta)?;
        let x = Arc::clone(&self.x);
        promise(
            env,
            cancel,
            Call::new(x.reply(meta, body.0)),
            |_, ()| Ok(()),
        )
    }

    /// Opens the reply as a stream, for a reply written in parts.
    #[napi(ts_return_type = "Promise<OutgoingTransfer>")]
    pub fn open_reply<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let meta = metadata_in(meta)?;
        let x = Arc::clone(&self.x);
        promise(env, cancel, Call::new(x.open_reply(meta)), |_, t| {
            Ok(OutgoingTransfer::new(t))
        })
    }

    /// Answers REJECTED with a reason: the requester's call fails with ERR_WEIDA_REJECTED.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn reject<'env>(
        &self,
        env: &'env Env,
        reason: String,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let x = Arc::clone(&self.x);
        promise(env, cancel, Call::new(x.reject(reason)), |_, ()| Ok(()))
    }

    /// Answers with an error `code` (`REJECTED`, `UNSUPPORTED`, `CLOSED`, ...; the
    /// `ERR_WEIDA_` prefix optional) and `message`: the code's own wire code (`CLOSED`:
    /// GOING_AWAY), any other as REJECTED; a name that is no code rejects with
    /// ERR_WEIDA_INVALID_CONFIG.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn fail<'env>(
        &self,
        env: &'env Env,
        code: String,
        message: String,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        // Node spells codes ERR_WEIDA_<CODE>; the core's name is the rest.
        let code = code
            .strip_prefix("ERR_WEIDA_")
            .map_or(code.clone(), str::to_string);
        let x = Arc::clone(&self.x);
        promise(
            env,
            cancel,
            Call::new(x.fail(code, message)),
            |_, ()| Ok(()),
        )
    }

    /// Abandons the exchange unanswered (what dropping it does in Rust): the requester sees
    /// ERR_WEIDA_CANCELED, and calls pending here reject with it.
    #[napi]
    pub fn cancel(&self) {
        self.x.cancel();
    }
}

/// The reply half of an exchange this side opened.
#[napi]
pub struct PendingReply(Arc<ffi::PendingReply>);

impl PendingReply {
    pub(crate) fn new(r: Arc<ffi::PendingReply>) -> Self {
        Self(r)
    }
}

#[napi]
impl PendingReply {
    /// The reply's start: its metadata and a streamed body; the peer's error as this side's.
    #[napi(ts_return_type = "Promise<IncomingTransfer>")]
    pub fn reply<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = Arc::clone(&self.0);
        promise(env, cancel, Call::new(r.reply()), |_, t| {
            Ok(IncomingTransfer::new(t))
        })
    }

    /// The whole reply, bounded by `limits.maxCollectedBody`.
    #[napi(ts_return_type = "Promise<Message>")]
    pub fn body<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let r = Arc::clone(&self.0);
        promise(env, cancel, Call::new(r.body()), message_out)
    }
}

/// A streamed exchange this side opened, as JS objects.
pub(crate) fn opened(
    o: (weida::OutgoingTransfer, weida::PendingReply),
) -> (OutgoingTransfer, PendingReply) {
    let (t, r) = ffi::opened(o);
    (OutgoingTransfer::new(t), PendingReply::new(r))
}
