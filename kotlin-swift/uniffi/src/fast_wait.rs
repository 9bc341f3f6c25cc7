//! The Kotlin and Swift layers' fast lane for calls that wait: a receive that has caught up with its
//! sender, a request, a replier's accept, an accepted exchange's `takeBody` and `reply`, a
//! pusher's `sendMany`. Started, taken and freed through C functions of
//! numbers and a direct `ByteBuffer` (as `fast.rs`'s ready calls), and woken through one
//! callback of a number, so that a waiting call allocates no JNA `Structure`.
//!
//! Why: through UniFFI a waiting call is its method call, a poll with a continuation callback,
//! a `complete` with its call status and its returned `RustBuffer`, a `free`, and a handle
//! clone before each method call; a receive is three such calls (`received`, `recvInto`,
//! `takePacked`) and a `close`. Each `Structure` is a `malloc`, an entry in JNA's process-wide
//! map of live allocations and a cleaner registration. Profiled (JFR, two processes, 64 B),
//! that map was again a third of a batched receiver's samples, from this path, and it bounds
//! Kotlin's Req/Rep (docs/PERFORMANCE.md, "Kotlin's fast lane for waiting calls").
//!
//! Nothing here decides anything: a call is weida-ffi's [`Call`], built by the same function
//! as the UniFFI export's (`Requester::request_call`, `Replier::accept_call`, …), polled once on the caller's thread and run on the I/O thread as
//! [`weida_ffi::awaiting`] runs it, cancelled through its [`Cancel`]; its answer crosses in
//! UniFFI's encoding behind a tag byte, as `fast.rs`'s do.
//!
//! The protocol, from the Kotlin side (FastLane.kt; the Swift layer's FastLane.swift follows
//! it for the same calls):
//! 1. `weida_fast_on_wake(callback)` once per process.
//! 2. A `weida_fast_wait_*` call with a token of the caller's choosing returns a wait (0: no
//!    wait, take the UniFFI call). Its low bit set: it already finished, on this thread, and
//!    the callback will not be called for it.
//! 3. Otherwise the callback is called once with the token, on the I/O thread, when it ends.
//! 4. [`weida_fast_wait_take`] then takes its answer, and [`weida_fast_wait_free`] frees it,
//!    once, whatever happened: a wait freed before its answer was taken cancels its call (a
//!    request is reset, the replier sees Canceled) and what it had received goes back to the
//!    front of its queue, so a cancelled coroutine loses nothing.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use bytes::Bytes;
use uniffi::Handle;
use weida::Message as CoreMessage;
use weida_ffi::{Call, Cancel, Completion, Fail};

use crate::blob::Blob;
use crate::fast::{
    batch_tag, copied, encode, encode_error, hand_out, Answer, Handed, Lane, Receives, TAKEN,
};
use crate::packed::pack_within;
use crate::patterns::{meta_in, Exchange};

/// The callback a waiting call's end calls, with the caller's token.
pub type Wake = extern "C" fn(token: i64);

static WAKE: OnceLock<Wake> = OnceLock::new();

/// Sets the callback every wait's end calls, once per process: 0 if it was set here, 1 if one
/// was set before (that one stays). Its code must stay callable for the life of the process.
#[no_mangle]
pub extern "C" fn weida_fast_on_wake(wake: Wake) -> i32 {
    match WAKE.set(wake) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// "Still running": [`weida_fast_wait_take`]'s answer before the wait ended.
const RUNNING: i32 = -2;

/// What encodes a call's outcome as the caller reads it: a tag byte, then UniFFI's encoding,
/// within about `room` bytes where it can be cut (a batch; what it cuts it puts back).
type Encode<T> = Box<dyn Fn(Result<T, Fail>, usize) -> Answer + Send + Sync>;

/// Where a value goes when its caller is gone before it took it.
type Orphan<T> = Arc<dyn Fn(T) + Send + Sync>;

enum Slot<T> {
    Running,
    /// Finished on the caller's thread, at the first poll.
    Now(Result<T, Fail>),
    /// Finished on the I/O thread.
    Done(Completion<T>),
    /// Encoded, larger than the caller's buffer: for its next take.
    Kept(Vec<u8>),
    Taken,
    /// Freed: a completion that arrives now is settled as its caller's cancellation.
    Freed,
}

struct Waiting<T> {
    slot: Mutex<Slot<T>>,
    cancel: Cancel,
    encode: Encode<T>,
    orphan: Option<Orphan<T>>,
}

impl<T> Waiting<T> {
    fn slot(&self) -> MutexGuard<'_, Slot<T>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A wait as the caller holds it, its type erased.
trait Wait: Send + Sync {
    /// The answer, encoded within about `room` bytes: Err(true) while it runs, Err(false) once
    /// taken.
    fn answer(&self, room: usize) -> Result<Answer, bool>;
    /// Keeps an answer the caller's buffer could not hold, for its next take.
    fn keep(&self, buf: Vec<u8>);
    /// The caller is gone: cancel what runs, hand back what was not taken.
    fn free(&self);
}

impl<T: Send + 'static> Wait for Waiting<T> {
    fn answer(&self, room: usize) -> Result<Answer, bool> {
        let mut slot = self.slot();
        let out = match std::mem::replace(&mut *slot, Slot::Taken) {
            Slot::Now(r) => r,
            Slot::Done(c) => c.settle(false),
            Slot::Kept(buf) => return Ok(Answer::Encoded(buf)),
            other => {
                let running = matches!(other, Slot::Running);
                *slot = other;
                return Err(running);
            }
        };
        drop(slot);
        Ok((self.encode)(out, room))
    }

    fn keep(&self, buf: Vec<u8>) {
        *self.slot() = Slot::Kept(buf);
    }

    fn free(&self) {
        let was = std::mem::replace(&mut *self.slot(), Slot::Freed);
        // What is dropped here (a reply, an exchange that resets its stream) is dropped inside
        // the I/O runtime, as `Completion::settle` drops it.
        let _io = weida_ffi::io::enter();
        match was {
            Slot::Running => self.cancel.cancel(),
            Slot::Now(Ok(v)) => {
                if let Some(o) = &self.orphan {
                    weida_ffi::probe::orphaned();
                    o(v);
                }
            }
            Slot::Done(c) => {
                let _ = c.settle(true);
            }
            // An answer encoded and not read: the Kotlin layer reads what it took at once, so
            // only a caller that stopped between two takes of one answer drops it.
            Slot::Now(Err(_)) | Slot::Kept(_) | Slot::Taken | Slot::Freed => {}
        }
    }
}

/// A wait as its caller holds it: a `Box` of the shared state, whose pointer is aligned to a
/// pointer's size (at least 4), so its low bit is free to say "already finished".
type Held = Box<Arc<dyn Wait>>;

/// Starts `call` for the caller's `token`: polled once here, then run on the I/O thread, whose
/// end calls the wake callback. 0 when no callback was set (take the UniFFI call).
pub(crate) fn start<T: Send + 'static>(
    token: i64,
    call: Call<T>,
    encode: Encode<T>,
    orphan: Option<Orphan<T>>,
) -> i64 {
    let Some(&wake) = WAKE.get() else {
        return 0;
    };
    let mut call = match &orphan {
        Some(o) => {
            let o = Arc::clone(o);
            call.keeping(move |v| o(v))
        }
        None => call,
    };
    let w = Arc::new(Waiting {
        slot: Mutex::new(Slot::Running),
        cancel: Cancel::new(),
        encode,
        orphan,
    });
    let now = match call.poll_now() {
        Some(r) => {
            *w.slot() = Slot::Now(r);
            true
        }
        None => {
            let shared = Arc::clone(&w);
            call.on_io_thread(Some(w.cancel.clone()), move |done| {
                let mut slot = shared.slot();
                if matches!(*slot, Slot::Freed) {
                    drop(slot);
                    let _ = done.settle(true);
                    return;
                }
                *slot = Slot::Done(done);
                drop(slot);
                wake(token);
            });
            false
        }
    };
    let held: Held = Box::new(w);
    let raw = Box::into_raw(held) as i64;
    debug_assert_eq!(raw & 1, 0);
    raw | i64::from(now)
}

/// The wait `w` (its low bit cleared).
///
/// # Safety
/// `w` came from a `weida_fast_wait_*` call and is not freed.
unsafe fn wait<'a>(w: i64) -> &'a Arc<dyn Wait> {
    &*((w & !1) as *const Arc<dyn Wait>)
}

/// The answer of the wait `w` into `out` (`cap` bytes), as `fast.rs`'s `weida_fast_take_ready`
/// writes one (tag 0 and the value, tag 3 a batch cut to `out`, tag 1 and a `WeidaError`):
/// how many bytes (a call that panicked is tag 1, `Panic`). Tag 2 when it does not fit: it is
/// kept whole for the next call, which needs the size returned. -2 while it runs; -1 once
/// taken, or if encoding it panicked (the answer is then lost).
///
/// # Safety
/// `w` came from a `weida_fast_wait_*` call and is not freed; `out` holds `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_wait_take(w: i64, out: *mut u8, cap: i32) -> i32 {
    let Ok(cap) = usize::try_from(cap) else {
        return -1;
    };
    let wait = wait(w);
    let answer = catch_unwind(AssertUnwindSafe(|| wait.answer(cap.saturating_sub(1))));
    let buf = match answer {
        Ok(Ok(buf)) => buf,
        Ok(Err(true)) => return RUNNING,
        Ok(Err(false)) | Err(_) => return -1,
    };
    // Encoding a batch that does not fit can panic (a body above 2 GiB): -1, not an abort.
    match catch_unwind(AssertUnwindSafe(|| hand_out(buf, out, cap))) {
        Ok(Handed::Written(n)) => n,
        Ok(Handed::TooSmall(n, buf)) => {
            wait.keep(buf);
            n
        }
        Err(_) => -1,
    }
}

/// Frees the wait `w`: a call still running is cancelled, an answer not taken goes back where
/// it came from (a receive's messages to the front of their queue).
///
/// # Safety
/// `w` came from a `weida_fast_wait_*` call and is freed once, with no call on it running.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_wait_free(w: i64) {
    if w == 0 {
        return;
    }
    let held: Held = Box::from_raw((w & !1) as *mut Arc<dyn Wait>);
    let _ = catch_unwind(AssertUnwindSafe(|| held.free()));
}

/// `start`'s wait, or 0 (take the UniFFI call) when it has none or panicked.
fn started(start: impl FnOnce() -> Option<i64>) -> i64 {
    catch_unwind(AssertUnwindSafe(start))
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// The answer of a call that returns nothing: its tag alone, or its error.
fn done(r: Result<(), Fail>, _room: usize) -> Answer {
    match r {
        Ok(()) => vec![TAKEN],
        Err(f) => encode_error(f.into()),
    }
    .into()
}

/// The answer of a call that returns a body: as UniFFI writes a `ByteArray`, or its error.
fn body(r: Result<Bytes, Fail>, _room: usize) -> Answer {
    match r {
        Ok(b) => encode(TAKEN, Blob(b.to_vec())),
        Err(f) => encode_error(f.into()),
    }
    .into()
}

/// A receive of up to `max` messages from `e` that waits, as `recvInto` receives, started for
/// `token`. Its batch is written into the caller's buffer when taken, cut to it; what it took
/// and nobody took goes back to the front of the queue.
pub(crate) fn receive<T: Receives>(e: Arc<T>, max: u32, token: i64) -> i64 {
    let r = Arc::clone(&e);
    let call = Call::new(async move { crate::patterns::recv_up_to(r.core(), max).await });
    let back = Arc::clone(&e);
    let orphan: Orphan<Vec<CoreMessage>> =
        Arc::new(move |ms| weida_ffi::inbox::give_back(back.core(), ms));
    let encode = Box::new(move |r: Result<Vec<CoreMessage>, Fail>, room| match r {
        Ok(ms) => {
            let (packed, cut) = pack_within(e.core(), ms, room);
            Answer::Batch(batch_tag(cut), packed)
        }
        Err(f) => encode_error(f.into()).into(),
    });
    start(token, call, encode, Some(orphan))
}

/// The lane at `lane`.
///
/// # Safety
/// `lane` came from `weida_fast_lane` and is not freed.
unsafe fn lane<'a>(lane: u64) -> &'a Lane {
    &*(lane as *const Lane)
}

/// `recvInto(max)` and `takePacked()` through the lane, for the caller's `token`: a wait, or 0
/// (take the UniFFI calls) when the endpoint is gone, the call panicked or no wake callback was
/// set. Its answer is `weida_fast_take_ready`'s, never None.
///
/// # Safety
/// `lane` is a live lane of a receiving kind.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_wait_recv(lane_at: u64, max: i32, token: i64) -> i64 {
    let Lane::Take(t) = lane(lane_at) else {
        return 0;
    };
    // A `max` read as UniFFI reads a u32: the bits, whatever the sign Kotlin saw.
    started(|| (t.wait)(max as u32, token))
}

/// `Requester.request(body)` of the `len` bytes at `body` through the lane, for the caller's
/// `token`: a wait whose answer is tag 0 and the reply's body as UniFFI writes a `ByteArray`,
/// or tag 1 and a `WeidaError`; 0 (take the UniFFI call) when the endpoint is gone, the call
/// panicked or no wake callback was set. Freed before it is answered, the request is reset, as
/// a cancelled UniFFI call's is.
///
/// # Safety
/// `lane` is a live lane of kind 7; `body` holds `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_wait_request(
    lane_at: u64,
    body_at: *const u8,
    len: i32,
    token: i64,
) -> i64 {
    let (Lane::Request(r), Some(b)) = (lane(lane_at), copied(body_at, len)) else {
        return 0;
    };
    started(|| {
        let call = r.upgrade()?.request_call(meta_in(None), b);
        let reply = |r: Result<CoreMessage, Fail>, room| body(r.map(|m| m.body), room);
        Some(start(token, call, Box::new(reply), None))
    })
}

/// `Replier.accept()` through the lane, for the caller's `token`: a wait whose answer is tag 0
/// and an `Exchange` as UniFFI writes one (a handle the caller takes over), or tag 1 and a
/// `WeidaError`; 0 (take the UniFFI call) when the endpoint is gone, the call panicked or no
/// wake callback was set.
///
/// # Safety
/// `lane` is a live lane of kind 8.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_wait_accept(lane_at: u64, token: i64) -> i64 {
    let Lane::Accept(r) = lane(lane_at) else {
        return 0;
    };
    started(|| {
        let call = r.upgrade()?.accept_call();
        let exchange = |r: Result<weida::Exchange, Fail>, _room| {
            match r {
                Ok(x) => encode(TAKEN, Exchange::of(x)),
                Err(f) => encode_error(f.into()),
            }
            .into()
        };
        Some(start(token, call, Box::new(exchange), None))
    })
}

/// `Pusher.sendPacked(packed, count)` (`sendMany`) of the `len` bytes at `packed` through the
/// lane, for the caller's `token`: a wait whose answer is tag 0 alone, or tag 1 and a
/// `WeidaError` (its `sent` says how many were sent); 0 (take the UniFFI call) when the
/// endpoint is gone, the call panicked or no wake callback was set. Freed before it is
/// answered, it is cancelled as a dropped UniFFI call is.
///
/// # Safety
/// `lane` is a live lane of kind 0; `packed` holds `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_wait_send_packed(
    lane_at: u64,
    packed: *const u8,
    len: i32,
    count: i32,
    token: i64,
) -> i64 {
    let (Lane::Send(p), Some(all)) = (lane(lane_at), copied(packed, len)) else {
        return 0;
    };
    started(|| {
        // A `count` read as UniFFI reads a u32: the bits, whatever the sign Kotlin saw.
        let call = p
            .upgrade()?
            .send_packed_call(all, count as u32)
            .unwrap_or_else(|f| Call::new(async move { Err(f) }));
        Some(start(token, call, Box::new(done), None))
    })
}

/// The exchange whose UniFFI handle is `exchange`, borrowed: its caller keeps its own.
///
/// # Safety
/// `exchange` is the handle of a live `Exchange`, kept alive by its caller for this call.
unsafe fn lent_exchange(exchange: u64) -> Option<Arc<Exchange>> {
    Some(Handle::from_raw(exchange)?.into_arc_borrowed::<Exchange>())
}

/// `Exchange.takeBody()` (bounded by `maxCollectedBody`) through the lane, for the caller's
/// `token`: a wait whose answer is tag 0 and the body as UniFFI writes a `ByteArray`, or tag 1
/// and a `WeidaError`; 0 (take the UniFFI call) when the call panicked or no wake callback was
/// set.
///
/// # Safety
/// `exchange` is the handle of a live `Exchange`, lent by its caller for this call (the Kotlin
/// layer's `FastExchange`, which keeps it from being freed meanwhile).
#[no_mangle]
pub unsafe extern "C" fn weida_fast_wait_take_body(exchange: u64, token: i64) -> i64 {
    started(|| {
        let call = lent_exchange(exchange)?.take_body_call(None);
        Some(start(token, call, Box::new(body), None))
    })
}

/// `Exchange.reply(body)` of the `len` bytes at `body` through the lane, for the caller's
/// `token`: a wait whose answer is tag 0 alone, or tag 1 and a `WeidaError`; 0 (take the
/// UniFFI call) when the call panicked or no wake callback was set. Freed before it is
/// answered, the reply is cancelled as a dropped UniFFI call's is.
///
/// # Safety
/// As [`weida_fast_wait_take_body`]'s; `body` holds `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_wait_reply(
    exchange: u64,
    body_at: *const u8,
    len: i32,
    token: i64,
) -> i64 {
    let Some(b) = copied(body_at, len) else {
        return 0;
    };
    started(|| {
        let call = lent_exchange(exchange)?.reply_call(meta_in(None), b);
        Some(start(token, call, Box::new(done), None))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use uniffi::{Lift, RustBuffer};

    use super::*;
    use crate::error::WeidaError;
    use crate::fast::tests::{block, bodies, ends, lane, listening, take, Owned};
    use crate::fast::FAILED;
    use crate::UniFfiTag;

    // The wait callback of this test binary: every token woken, in order.
    static WOKEN: Mutex<Vec<i64>> = Mutex::new(Vec::new());
    static WOKE: std::sync::Condvar = std::sync::Condvar::new();

    extern "C" fn woken(token: i64) {
        WOKEN.lock().unwrap().push(token);
        WOKE.notify_all();
    }

    fn set_wake() {
        // Once per process, as the Kotlin layer sets it; any test here may be first.
        weida_fast_on_wake(woken);
    }

    /// Blocks until `token` was woken (a test that hangs here failed).
    fn wait_woken(token: i64) {
        let mut w = WOKEN.lock().unwrap();
        while !w.contains(&token) {
            w = WOKE.wait(w).unwrap();
        }
    }

    fn was_woken(token: i64) -> bool {
        WOKEN.lock().unwrap().contains(&token)
    }

    fn unique_token() -> i64 {
        static T: AtomicU64 = AtomicU64::new(1);
        T.fetch_add(1, Ordering::Relaxed) as i64
    }

    fn wait_take(w: i64, buf: &mut [u8]) -> i32 {
        // SAFETY: a live wait; `buf` is writable.
        unsafe { weida_fast_wait_take(w, buf.as_mut_ptr(), buf.len() as i32) }
    }

    fn wait_free(w: i64) {
        // SAFETY: a live wait, freed once.
        unsafe { weida_fast_wait_free(w) }
    }

    /// A receive on the puller's lane `rx` for `token`, which must wait: nothing is queued.
    fn waiting_receive(rx: &Owned, token: i64) -> i64 {
        // SAFETY: a live take lane.
        let w = unsafe { weida_fast_wait_recv(rx.0, 8, token) };
        assert!(w != 0 && w & 1 == 0, "nothing to take yet: it waits ({w})");
        w
    }

    #[test]
    fn a_waiting_receive_wakes_its_token_and_answers_as_take_ready_does() {
        set_wake();
        let e = ends();
        let rx = lane(&e.puller, 1);
        let token = unique_token();
        let w = waiting_receive(&rx, token);
        let mut buf = [0u8; 256];
        assert_eq!(wait_take(w, &mut buf), -2, "still running");
        assert!(!was_woken(token));
        block(e.pusher.send(b"late".to_vec().into(), None, None)).unwrap();
        wait_woken(token);
        let n = wait_take(w, &mut buf);
        assert!(n > 0, "{n}");
        assert_eq!(bodies(&buf[..n as usize]), [b"late".to_vec()]);
        assert_eq!(wait_take(w, &mut buf), -1, "taken once");
        wait_free(w);
    }

    #[test]
    fn a_wait_freed_untaken_loses_nothing_whether_it_had_finished_or_not() {
        set_wake();
        let e = ends();
        let rx = lane(&e.puller, 1);
        // Finished, woken, never taken: its message goes back to the front of the queue.
        let token = unique_token();
        let w = waiting_receive(&rx, token);
        block(e.pusher.send(b"one".to_vec().into(), None, None)).unwrap();
        wait_woken(token);
        wait_free(w);
        weida_ffi::call::waited();
        let mut buf = [0u8; 256];
        let n = take(&rx, 8, &mut buf);
        assert_eq!(bodies(&buf[..n as usize]), [b"one".to_vec()]);
        // Freed while it waits: its receive is cancelled, and what it may have taken meanwhile
        // goes back; the next message reaches the next receive.
        let token = unique_token();
        let w = waiting_receive(&rx, token);
        wait_free(w);
        block(e.pusher.send(b"two".to_vec().into(), None, None)).unwrap();
        let core = e.puller.endpoint();
        let got = weida_ffi::io::io().block_on(core.recv()).unwrap();
        assert_eq!(&got.body[..], b"two");
        assert!(!was_woken(token), "a freed wait is never woken");
    }

    #[test]
    fn a_request_an_accept_and_an_exchanges_calls_wait_and_answer_in_uniffis_encoding() {
        set_wake();
        let (server, client, listener) = listening();
        let replier = listener.replier("/rr".into(), None).unwrap();
        let requester = client.requester(None).unwrap();
        block(requester.connect(replier.address(), true, None)).unwrap();
        let (req, acc) = (lane(&requester, 7), lane(&replier, 8));
        let (a, r) = (unique_token(), unique_token());
        // SAFETY: live lanes of kinds 8 and 7; the body is readable.
        let aw = unsafe { weida_fast_wait_accept(acc.0, a) };
        let rw = unsafe { weida_fast_wait_request(req.0, b"ping".as_ptr(), 4, r) };
        assert!(aw != 0 && rw != 0);
        wait_woken(a);
        let mut buf = [0u8; 256];
        let n = wait_take(aw, &mut buf) as usize;
        assert_eq!(buf[0], TAKEN);
        let x = <Arc<Exchange> as Lift<UniFfiTag>>::try_read(&mut &buf[1..n]).unwrap();
        wait_free(aw);
        // The exchange's calls, on its handle lent as the Kotlin layer's `FastExchange` lends it.
        let h = Handle::from_arc(Arc::clone(&x));
        let t = unique_token();
        // SAFETY: `h` is a live handle of an Exchange, kept until the end of the test.
        let tw = unsafe { weida_fast_wait_take_body(h.as_raw(), t) };
        if tw & 1 == 0 {
            wait_woken(t);
        }
        let n = wait_take(tw, &mut buf) as usize;
        assert_eq!(buf[0], TAKEN);
        let body = <Vec<u8> as Lift<UniFfiTag>>::try_read(&mut &buf[1..n]).unwrap();
        assert_eq!(body, b"ping");
        wait_free(tw);
        let t = unique_token();
        // SAFETY: as above; the body is readable.
        let pw = unsafe { weida_fast_wait_reply(h.as_raw(), b"pong".as_ptr(), 4, t) };
        if pw & 1 == 0 {
            wait_woken(t);
        }
        assert_eq!(wait_take(pw, &mut buf), 1, "replied: the tag alone");
        assert_eq!(buf[0], TAKEN);
        wait_free(pw);
        // SAFETY: the handle made above, released once.
        drop(unsafe { h.into_arc::<Exchange>() });
        assert_eq!(Arc::strong_count(&x), 1, "a lent handle is not taken over");
        wait_woken(r);
        let n = wait_take(rw, &mut buf) as usize;
        assert_eq!(buf[0], TAKEN);
        let reply = <Vec<u8> as Lift<UniFfiTag>>::try_read(&mut &buf[1..n]).unwrap();
        assert_eq!(reply, b"pong");
        wait_free(rw);
        // A closed requester's error crosses at once, in UniFFI's encoding.
        requester.close_endpoint();
        let r = unique_token();
        // SAFETY: as above.
        let rw = unsafe { weida_fast_wait_request(req.0, b"x".as_ptr(), 1, r) };
        assert_eq!(rw & 1, 1, "failed at once, on this thread");
        let n = wait_take(rw, &mut buf) as usize;
        assert_eq!(buf[0], FAILED);
        let err =
            <WeidaError as Lift<UniFfiTag>>::try_lift(RustBuffer::from_vec(buf[1..n].to_vec()))
                .unwrap();
        assert!(matches!(err, WeidaError::Closed { .. }), "{err:?}");
        wait_free(rw);
        drop((listener, server, client));
    }

    #[test]
    fn a_packed_send_on_the_lane_sends_each_body_in_order_and_fails_as_the_export_does() {
        set_wake();
        let e = ends();
        let tx = lane(&e.pusher, 0);
        let sent: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 1 + 3 * i as usize]).collect();
        let packed = weida_ffi::packed::pack(sent.iter().map(Vec::as_slice));
        let send = |packed: &[u8], count: i32| {
            let t = unique_token();
            // SAFETY: a live send lane; `packed` is readable.
            let w = unsafe {
                weida_fast_wait_send_packed(tx.0, packed.as_ptr(), packed.len() as i32, count, t)
            };
            assert!(w != 0);
            if w & 1 == 0 {
                wait_woken(t);
            }
            let mut buf = [0u8; 512];
            let n = wait_take(w, &mut buf) as usize;
            wait_free(w);
            buf[..n].to_vec()
        };
        assert_eq!(send(&packed, 5), [TAKEN], "sent: the tag alone");
        let core = e.puller.endpoint();
        let got = weida_ffi::io::io().block_on(async {
            let mut got = Vec::new();
            while got.len() < 5 {
                got.extend(core.recv_many(8).await.unwrap());
            }
            got
        });
        let got: Vec<Vec<u8>> = got.iter().map(|m| m.body.to_vec()).collect();
        assert_eq!(got, sent);
        // A count the bytes do not hold is the export's error, and so is a closed endpoint's.
        let answer = send(&packed, 500);
        assert_eq!(answer[0], FAILED);
        e.pusher.close_endpoint();
        let answer = send(&packed, 5);
        assert_eq!(answer[0], FAILED);
        let err =
            <WeidaError as Lift<UniFfiTag>>::try_lift(RustBuffer::from_vec(answer[1..].to_vec()))
                .unwrap();
        assert!(matches!(err, WeidaError::Closed { .. }), "{err:?}");
    }
}
