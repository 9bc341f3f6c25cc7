//! The Kotlin layer's fast lane for calls that wait: a receive that has caught up with its
//! sender, a request, a replier's accept. Started, taken and freed through C functions of
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
//! Nothing here decides anything: a call is weida-ffi's [`Call`], built as the UniFFI export
//! builds it, polled once on the caller's thread and run on the I/O thread as
//! [`weida_ffi::awaiting`] runs it, cancelled through its [`Cancel`]; its answer crosses in
//! UniFFI's encoding behind a tag byte, as `fast.rs`'s do.
//!
//! The protocol, from the Kotlin side (FastLane.kt):
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

use weida_ffi::{Call, Cancel, Completion, Fail};

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
type Encode<T> = Box<dyn Fn(Result<T, Fail>, usize) -> Vec<u8> + Send + Sync>;

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
    fn answer(&self, room: usize) -> Result<Vec<u8>, bool>;
    /// Keeps an answer the caller's buffer could not hold, for its next take.
    fn keep(&self, buf: Vec<u8>);
    /// The caller is gone: cancel what runs, hand back what was not taken.
    fn free(&self);
}

impl<T: Send + 'static> Wait for Waiting<T> {
    fn answer(&self, room: usize) -> Result<Vec<u8>, bool> {
        let mut slot = self.slot();
        let out = match std::mem::replace(&mut *slot, Slot::Taken) {
            Slot::Now(r) => r,
            Slot::Done(c) => c.settle(false),
            Slot::Kept(buf) => return Ok(buf),
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
        match was {
            Slot::Running => self.cancel.cancel(),
            Slot::Now(Ok(v)) => {
                if let Some(o) = &self.orphan {
                    let _io = weida_ffi::io::enter();
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

/// A wait's handle: a `Box` of the shared state, aligned to 8, so its low bit is free to say
/// "already finished".
type Handle = Box<Arc<dyn Wait>>;

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
    let handle: Handle = Box::new(w);
    let raw = Box::into_raw(handle) as i64;
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
/// how many bytes. Tag 2 when it does not fit: it is kept whole for the next call, which needs
/// the size returned. -2 while it runs; -1 once taken, or if the call panicked.
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
    match crate::fast::hand_out(buf, out, cap) {
        crate::fast::Handed::Written(n) => n,
        crate::fast::Handed::TooSmall(n, buf) => {
            wait.keep(buf);
            n
        }
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
    let handle: Handle = Box::from_raw((w & !1) as *mut Arc<dyn Wait>);
    let _ = catch_unwind(AssertUnwindSafe(|| handle.free()));
}
