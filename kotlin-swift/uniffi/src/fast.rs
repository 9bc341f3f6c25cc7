//! The Kotlin and Swift layers' fast lane: the calls a message makes when it can finish now (a
//! `Pusher`'s `sendReady`, a receiving endpoint's `takeReady`) as C functions of numbers and
//! byte buffers, beside the UniFFI exports that do the same.
//!
//! Why: through JNA every UniFFI call allocates `Structure`s (its call status, each
//! `RustBuffer` passed or returned, and a handle clone is one more call with its own), each a
//! `malloc`, an entry in JNA's process-wide map of live allocations and a cleaner
//! registration. Profiled (JFR, a two-process Push/Pull of 64 B, one suspend call per
//! message), that map's inserts took half of a receiver's samples, and a message cost about
//! 60 µs of CPU on each side (docs/PERFORMANCE.md, "Kotlin's fast lane"). JNA's direct mapping
//! calls a function of `long`, `int`, `byte[]` and a direct `ByteBuffer` with none of that.
//! Swift (FastLane.swift, through the hand-written header Sources/weida_fastFFI/weida_fast.h)
//! takes its receives, `sendMany`, requests, accepts and exchanges' `takeBody` and `reply` here
//! for another reason: a batch through UniFFI
//! was lifted through three copies into fresh buffers, and a packed send lowered through two,
//! where here it is written into, or read from, a buffer the caller keeps
//! (docs/PERFORMANCE.md, "Swift's fast lane").
//!
//! Nothing here decides anything: each function calls what the UniFFI export calls, and its
//! answer crosses in UniFFI's own encoding (`Lower::write`) behind a tag byte, read on the
//! Kotlin side by the generated converters, so a value or an error reads exactly as through
//! the export.
//!
//! A lane is made once per endpoint from the endpoint's UniFFI handle (an `Arc` the caller
//! cloned for the call, as UniFFI's own methods take it) and keeps a `Weak`: it never keeps
//! an endpoint alive, and once the endpoint is gone it answers "not now", so the caller takes
//! the UniFFI path, which reports the endpoint destroyed as it always does. The Kotlin side
//! frees a lane once (`weida_fast_lane_free`), when the object holding it is unreachable.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use uniffi::{Handle, Lower};
use weida::Receiving;

use crate::bound_push::DialingPuller;
use crate::bus::Bus;
use crate::collector::BoundSubscriber;
use crate::error::{Result, WeidaError};
use crate::fast_wait;
use crate::packed::{take_ready_within, Batch, Packed};
use crate::pair::Pair;
use crate::patterns::{Puller, Pusher, Replier, Requester, Subscriber};
use crate::UniFfiTag;

/// What one endpoint's lane calls.
pub(crate) enum Lane {
    Send(Weak<Pusher>),
    Take(Take),
    Request(Weak<Requester>),
    Accept(Weak<Replier>),
}

/// What a receiving endpoint's lane takes with: `take_ready_within(max, room)`, None once the
/// endpoint is gone.
type TakeFn = dyn Fn(u32, usize) -> Option<Result<(Option<Batch>, bool)>> + Send + Sync;

/// What a receiving endpoint's lane waits with: a receive of up to `max` messages started for
/// a token (`fast_wait::start`), None once the endpoint is gone.
type WaitFn = dyn Fn(u32, i64) -> Option<i64> + Send + Sync;

/// A receiving endpoint's lane: its take, and an answer that did not fit in the caller's
/// buffer. A batch is cut to the caller's buffer, so only an answer of one message (or an
/// error) larger than it is ever kept: whichever call comes next takes it, as the next
/// message of the queue it was the front of.
pub(crate) struct Take {
    take: Box<TakeFn>,
    pub(crate) wait: Box<WaitFn>,
    kept: Mutex<Option<Vec<u8>>>,
}

/// A receiving endpoint of this crate and the core endpoint it receives from.
pub(crate) trait Receives: Send + Sync + 'static {
    type Core: Receiving;
    fn core(&self) -> &Self::Core;
}

macro_rules! receives {
    ($($t:ty => $core:ty),* $(,)?) => {$(
        impl Receives for $t {
            type Core = $core;
            fn core(&self) -> &$core {
                &self.inner
            }
        }
    )*};
}

receives! {
    Puller => weida::Puller,
    Subscriber => weida::Subscriber,
    DialingPuller => weida::DialingPuller,
    BoundSubscriber => weida::BoundSubscriber,
    Pair => weida::Pair,
    Bus => weida::Bus,
}

/// The tags of an answer, its first byte in the caller's buffer.
pub(crate) const TAKEN: u8 = 0;
pub(crate) const FAILED: u8 = 1;
const TOO_SMALL: u8 = 2;
/// Taken, its batch cut to the buffer: a larger one would have taken more.
pub(crate) const TAKEN_CUT: u8 = 3;

/// A lane for the endpoint whose cloned UniFFI handle is `handle`; 0 if `kind` is none of
/// these (the handle is then left as it came, for the caller to release): 0 a `Pusher`; a
/// receiving endpoint: 1 a `Puller`, 2 a `Subscriber`, 3 a `DialingPuller`, 4 a
/// `BoundSubscriber`, 5 a `Pair`, 6 a `Bus`; 7 a `Requester`, 8 a `Replier`.
///
/// # Safety
/// `handle` is a handle UniFFI made for an object of that kind, cloned for this call (the
/// Kotlin layer's `callWithHandle`); for a known `kind` this function takes it over.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_lane(handle: u64, kind: i32) -> u64 {
    if !(0..=8).contains(&kind) {
        return 0;
    }
    let Some(h) = Handle::from_raw(handle) else {
        return 0;
    };
    let lane = match kind {
        0 => Lane::Send(Arc::downgrade(&h.into_arc::<Pusher>())),
        1 => take_lane::<Puller>(h),
        2 => take_lane::<Subscriber>(h),
        3 => take_lane::<DialingPuller>(h),
        4 => take_lane::<BoundSubscriber>(h),
        5 => take_lane::<Pair>(h),
        6 => take_lane::<Bus>(h),
        7 => Lane::Request(Arc::downgrade(&h.into_arc::<Requester>())),
        _ => Lane::Accept(Arc::downgrade(&h.into_arc::<Replier>())),
    };
    Box::into_raw(Box::new(lane)) as u64
}

/// The lane of the receiving endpoint `h`.
///
/// # Safety
/// As [`weida_fast_lane`]'s: `h` is a cloned handle of a `T`.
unsafe fn take_lane<T: Receives>(h: Handle) -> Lane {
    let endpoint = Arc::downgrade(&h.into_arc::<T>());
    let waits = endpoint.clone();
    Lane::Take(Take {
        take: Box::new(move |max, room| {
            let e = endpoint.upgrade()?;
            Some(take_ready_within(e.core(), max, room))
        }),
        wait: Box::new(move |max, token| Some(fast_wait::receive(waits.upgrade()?, max, token))),
        kept: Mutex::new(None),
    })
}

/// Frees a lane.
///
/// # Safety
/// `lane` came from [`weida_fast_lane`] and is freed once, with no call on it running.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_lane_free(lane: u64) {
    if lane != 0 {
        drop(Box::from_raw(lane as *mut Lane));
    }
}

/// `Pusher::send_ready` of the `len` bytes at `body`: 0 queued, 1 not now (take the waiting
/// `send`), 2 yield first; below 0, the send failed (a closed endpoint, a lane's failure the
/// core reports once, a header over the peer's limit) and its error is in `out`, `-r` bytes
/// (tag 1 and a `WeidaError`; tag 2 if `out`, `cap` bytes, is too small for it, and `-r` is
/// then the size it needs: the error is kept for [`weida_fast_kept`]). 1 too when the
/// endpoint is gone or the call panicked: the waiting `send` reports what happened.
///
/// # Safety
/// `lane` is a live lane of kind 0; `body` holds `len` readable bytes; `out` holds `cap`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_send_ready(
    lane: u64,
    body: *const u8,
    len: i32,
    out: *mut u8,
    cap: i32,
) -> i32 {
    let Lane::Send(p) = &*(lane as *const Lane) else {
        return 1;
    };
    let (Some(body), Ok(cap)) = (copied(body, len), usize::try_from(cap)) else {
        return 1;
    };
    let answer = catch_unwind(AssertUnwindSafe(|| {
        let p = p.upgrade()?;
        Some(match p.send_ready_bytes(body) {
            Ok(code) => Ok(i32::from(code)),
            Err(e) => Err(encode_error(e)),
        })
    }));
    match answer {
        Ok(Some(Ok(code))) => code,
        Ok(Some(Err(buf))) => match hand_out(buf.into(), out, cap) {
            Handed::Written(n) => -n,
            Handed::TooSmall(n, buf) => {
                KEPT_ERROR.with(|k| *k.borrow_mut() = Some(buf));
                -n
            }
        },
        _ => 1,
    }
}

thread_local! {
    /// A send's error that did not fit in its caller's buffer, for the same thread's next
    /// [`weida_fast_kept`] (the Kotlin layer calls it at once, on the same thread).
    static KEPT_ERROR: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

/// The send error this thread's last [`weida_fast_send_ready`] kept, into `out` (`cap`
/// bytes): how many bytes; -1 if there is none or it still does not fit.
///
/// # Safety
/// `out` holds `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_kept(out: *mut u8, cap: i32) -> i32 {
    let Ok(cap) = usize::try_from(cap) else {
        return -1;
    };
    KEPT_ERROR.with(|k| match k.borrow_mut().take() {
        Some(buf) => match hand_out(buf.into(), out, cap) {
            Handed::Written(n) => n,
            Handed::TooSmall(_, buf) => {
                *k.borrow_mut() = Some(buf);
                -1
            }
        },
        None => -1,
    })
}

/// `takeReady(max)` into `out` (`cap` bytes): the first byte a tag, then the answer in
/// UniFFI's encoding. Tag 0: an `Option<Packed>` follows (None: nothing is ready; a `Packed`
/// of no message: yield first), its batch cut to what fits, the rest left at the front of the
/// queue (tag 3 when it was cut: the caller may bring a larger buffer next time); tag 1: a `WeidaError` follows, the receive's error, taken in its place. Returns how
/// many bytes it wrote. An answer that still does not fit (one message larger than `out`, or
/// an error) is kept whole for the next call on the lane; this one writes tag 2 and returns
/// the size the next call's buffer needs. -1 when the endpoint is gone or the call panicked:
/// take the UniFFI path.
///
/// # Safety
/// `lane` is a live lane of a receiving kind; `out` holds `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_take_ready(lane: u64, max: i32, out: *mut u8, cap: i32) -> i32 {
    let Lane::Take(t) = &*(lane as *const Lane) else {
        return -1;
    };
    let Ok(cap) = usize::try_from(cap) else {
        return -1;
    };
    let mut kept = t.kept.lock().unwrap_or_else(|p| p.into_inner());
    let answer = match kept.take() {
        Some(buf) => Answer::Encoded(buf),
        None => {
            // A `max` read as UniFFI reads a u32: the bits, whatever the sign Kotlin saw.
            let max = max as u32;
            let room = cap.saturating_sub(1);
            let answer = catch_unwind(AssertUnwindSafe(|| {
                (t.take)(max, room).map(|a| match a {
                    Ok((Some(packed), cut)) => Answer::Batch(batch_tag(cut), packed),
                    Ok((None, _)) => encode(TAKEN, None::<Packed>).into(),
                    Err(e) => encode_error(e).into(),
                })
            }));
            let Ok(Some(answer)) = answer else {
                return -1;
            };
            answer
        }
    };
    // Encoding a batch that does not fit can panic (a body above 2 GiB): -1, not an abort.
    match catch_unwind(AssertUnwindSafe(|| hand_out(answer, out, cap))) {
        Ok(Handed::Written(n)) => n,
        Ok(Handed::TooSmall(n, buf)) => {
            *kept = Some(buf);
            n
        }
        Err(_) => -1,
    }
}

/// The `len` bytes at `at`, copied: a body that crossed as a Kotlin `ByteArray`, or a packed
/// batch in a thread's direct `ByteBuffer`. None for a negative length.
///
/// # Safety
/// `at` holds `len` readable bytes.
pub(crate) unsafe fn copied(at: *const u8, len: i32) -> Option<Bytes> {
    Some(match usize::try_from(len).ok()? {
        0 => Bytes::new(),
        n => Bytes::copy_from_slice(std::slice::from_raw_parts(at, n)),
    })
}

/// A batch's tag: [`TAKEN_CUT`] when the caller's buffer cut it.
pub(crate) fn batch_tag(cut: bool) -> u8 {
    if cut {
        TAKEN_CUT
    } else {
        TAKEN
    }
}

/// An answer: `tag`, then `value` as UniFFI writes it.
pub(crate) fn encode<T: Lower<UniFfiTag>>(tag: u8, value: T) -> Vec<u8> {
    let mut buf = Vec::with_capacity(256);
    buf.push(tag);
    T::write(value, &mut buf);
    buf
}

pub(crate) fn encode_error(e: WeidaError) -> Vec<u8> {
    encode(FAILED, e)
}

/// An answer for the caller's buffer: bytes already encoded, or a batch (its tag, and the
/// messages to write as a `Some(Packed)`), which [`hand_out`] writes straight into the buffer
/// when it fits, with no buffer between: each body is copied once, from the message Rust
/// received to its place in the caller's buffer ([`Batch::write_some`]).
pub(crate) enum Answer {
    Encoded(Vec<u8>),
    Batch(u8, Batch),
}

impl From<Vec<u8>> for Answer {
    fn from(buf: Vec<u8>) -> Self {
        Self::Encoded(buf)
    }
}

pub(crate) enum Handed {
    Written(i32),
    /// It needs this many bytes; here it is back, encoded.
    TooSmall(i32, Vec<u8>),
}

/// Writes `answer` to `out` if it fits in `cap` bytes; else writes tag 2 there and hands it
/// back, encoded.
///
/// # Safety
/// `out` holds `cap` writable bytes.
pub(crate) unsafe fn hand_out(answer: Answer, out: *mut u8, cap: usize) -> Handed {
    let buf = match answer {
        Answer::Batch(tag, p) => {
            let n = 1 + p.written_len();
            if n <= cap {
                let out = std::slice::from_raw_parts_mut(out, n);
                out[0] = tag;
                p.write_some(&mut out[1..]);
                // Within `cap`, which is an i32.
                return Handed::Written(n as i32);
            }
            encode(tag, Some(p.into_packed()))
        }
        Answer::Encoded(buf) => buf,
    };
    // Above 2 GiB no `ByteBuffer` holds it (nor could UniFFI's `RustBuffer`): it is cut by
    // the batch budget long before, unless one body alone is that large.
    let n = i32::try_from(buf.len()).unwrap_or(i32::MAX);
    if buf.len() <= cap {
        std::ptr::copy_nonoverlapping(buf.as_ptr(), out, buf.len());
        Handed::Written(n)
    } else {
        if cap > 0 {
            *out = TOO_SMALL;
        }
        Handed::TooSmall(n, buf)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};

    use uniffi::{Lift, RustBuffer};

    use super::*;
    use crate::runtime::{Listener, Runtime};

    pub(crate) struct Ends {
        pub(crate) _rts: (Arc<Runtime>, Arc<Runtime>, Arc<Listener>),
        pub(crate) pusher: Arc<Pusher>,
        pub(crate) puller: Arc<Puller>,
    }

    pub(crate) fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// A server runtime bound in process under a fresh name, and a client runtime.
    pub(crate) fn listening() -> (Arc<Runtime>, Arc<Runtime>, Arc<Listener>) {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "weida+inproc://fast-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let options = || crate::config::RuntimeOptions {
            identity: None,
            trust: None,
            limits: HashMap::new(),
            reconnect: None,
            options: HashMap::new(),
        };
        let server = Runtime::new(options()).unwrap();
        let client = Runtime::new(options()).unwrap();
        let listener = block(server.bind(name, None, None)).unwrap();
        (server, client, listener)
    }

    pub(crate) fn ends() -> Ends {
        let (server, client, listener) = listening();
        let puller = listener.puller("/jobs".into(), None).unwrap();
        let pusher = client.pusher(None).unwrap();
        block(pusher.connect(puller.address(), true, None)).unwrap();
        Ends {
            _rts: (server, client, listener),
            pusher,
            puller,
        }
    }

    /// A lane, freed when dropped.
    pub(crate) struct Owned(pub(crate) u64);

    impl Drop for Owned {
        fn drop(&mut self) {
            // SAFETY: made by `lane`, freed once, here.
            unsafe { weida_fast_lane_free(self.0) }
        }
    }

    /// A lane as the Kotlin layer makes one: from a handle cloned for the call.
    pub(crate) fn lane<T>(o: &Arc<T>, kind: i32) -> Owned {
        let h = Handle::from_arc(Arc::clone(o)).as_raw();
        // SAFETY: a handle made from an Arc of the kind named, handed over.
        Owned(unsafe { weida_fast_lane(h, kind) })
    }

    fn send(lane: &Owned, body: &[u8]) -> i32 {
        send_into(lane, body, &mut [0u8; 256])
    }

    fn send_into(lane: &Owned, body: &[u8], out: &mut [u8]) -> i32 {
        // SAFETY: a live send lane; `body` is readable, `out` writable.
        unsafe {
            weida_fast_send_ready(
                lane.0,
                body.as_ptr(),
                body.len() as i32,
                out.as_mut_ptr(),
                out.len() as i32,
            )
        }
    }

    pub(crate) fn take(lane: &Owned, max: i32, buf: &mut [u8]) -> i32 {
        // SAFETY: a live take lane; `buf` is writable.
        unsafe { weida_fast_take_ready(lane.0, max, buf.as_mut_ptr(), buf.len() as i32) }
    }

    pub(crate) fn bodies(answer: &[u8]) -> Vec<Vec<u8>> {
        assert_eq!(answer[0], TAKEN);
        let packed = <Option<Packed> as Lift<UniFfiTag>>::try_lift(RustBuffer::from_vec(
            answer[1..].to_vec(),
        ))
        .unwrap()
        .expect("a batch");
        let all = weida_ffi::packed::unpack(packed.bodies.into(), packed.count as usize).unwrap();
        all.into_iter().map(|b| b.to_vec()).collect()
    }

    #[test]
    fn a_lane_sends_and_takes_what_the_uniffi_calls_do_and_keeps_an_answer_too_large() {
        let e = ends();
        let (tx, rx) = (lane(&e.pusher, 0), lane(&e.puller, 1));
        weida_ffi::call::waited();
        assert_eq!(
            send(&tx, b"zero"),
            1,
            "no lane yet: not now, as `sendReady` says"
        );
        block(e.pusher.send(b"zero".to_vec().into(), None, None)).unwrap();
        assert_eq!(
            send(&tx, b"one"),
            0,
            "queued at once on the lane the send opened"
        );
        assert_eq!(send(&tx, b"two"), 0);
        // "two" surely ready: all received in the core, "two" handed back to its queue.
        let core = e.puller.endpoint();
        let got = weida_ffi::io::io().block_on(async {
            let mut got = Vec::new();
            for _ in 0..3 {
                got.push(core.recv().await.unwrap());
            }
            got
        });
        let bodies_in_core: Vec<&[u8]> = got.iter().map(|m| &m.body[..]).collect();
        assert_eq!(bodies_in_core, [&b"zero"[..], b"one", b"two"]);
        let two = got.into_iter().nth(2).unwrap();
        core.give_back(two);
        let mut small = [0u8; 4];
        let need = take(&rx, 8, &mut small);
        assert_eq!(small[0], TOO_SMALL, "kept, not lost");
        let mut buf = vec![0u8; need as usize];
        assert_eq!(take(&rx, 8, &mut buf), need);
        assert_eq!(bodies(&buf), [b"two".to_vec()]);
        // Nothing ready: None, as `takeReady` says it.
        let n = take(&rx, 8, &mut buf) as usize;
        assert_eq!(&buf[..n], [TAKEN, 0]);
    }

    #[test]
    fn a_batch_is_cut_to_the_callers_buffer_and_the_rest_stays_first_in_order() {
        let e = ends();
        let (tx, rx) = (lane(&e.pusher, 0), lane(&e.puller, 1));
        block(e.pusher.send(b"opens the lane".to_vec().into(), None, None)).unwrap();
        weida_ffi::call::waited();
        let sent: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 100]).collect();
        for b in &sent {
            assert_eq!(send(&tx, b), 0);
        }
        // All surely ready: received in the core, then handed back to the front in order.
        let core = e.puller.endpoint();
        let got = weida_ffi::io::io().block_on(async {
            let mut got = Vec::new();
            while got.len() < 7 {
                got.push(core.recv().await.unwrap());
            }
            got
        });
        weida_ffi::inbox::give_back(&*core, got.into_iter().skip(1));
        // Room for about two bodies of 100 bytes: two at a time, in order, nothing lost.
        let mut buf = [0u8; 300];
        let mut taken = Vec::new();
        let mut tags = Vec::new();
        while taken.len() < sent.len() {
            let n = take(&rx, 100, &mut buf);
            assert!(n > 0 && (n as usize) <= buf.len(), "{n}");
            // Cut to the buffer, and it says so; the last batch, all that was left, is not.
            tags.push(buf[0]);
            buf[0] = TAKEN;
            let batch = bodies(&buf[..n as usize]);
            assert!(!batch.is_empty() && batch.len() <= 2, "{}", batch.len());
            taken.extend(batch);
        }
        assert_eq!(taken, sent);
        assert_eq!(tags.first(), Some(&TAKEN_CUT), "{tags:?}");
        assert_eq!(tags.last(), Some(&TAKEN), "{tags:?}");
    }

    #[test]
    fn a_sends_error_crosses_in_uniffis_encoding_and_is_kept_when_it_does_not_fit() {
        let e = ends();
        let tx = lane(&e.pusher, 0);
        e.pusher.close_endpoint();
        weida_ffi::call::waited();
        let mut out = [0u8; 512];
        let n = send_into(&tx, b"x", &mut out);
        assert!(n < 0, "{n}");
        assert_eq!(out[0], FAILED);
        let err = <WeidaError as Lift<UniFfiTag>>::try_lift(RustBuffer::from_vec(
            out[1..(-n) as usize].to_vec(),
        ))
        .unwrap();
        assert!(matches!(err, WeidaError::Closed { .. }), "{err:?}");
        // Too small for it: kept for this thread's next `weida_fast_kept`.
        let mut small = [0u8; 2];
        let need = -send_into(&tx, b"x", &mut small);
        assert_eq!(small[0], TOO_SMALL);
        let mut big = vec![0u8; need as usize];
        // SAFETY: `big` is writable.
        let n = unsafe { weida_fast_kept(big.as_mut_ptr(), need) };
        assert_eq!(n, need);
        assert_eq!(big[0], FAILED);
    }

    #[test]
    fn a_lane_keeps_no_endpoint_alive_and_answers_not_now_once_it_is_gone() {
        let e = ends();
        let (tx, rx) = (lane(&e.pusher, 0), lane(&e.puller, 1));
        let Ends {
            _rts,
            pusher,
            puller,
        } = e;
        assert_eq!(
            Arc::strong_count(&pusher),
            1,
            "the lane holds a weak reference"
        );
        drop((pusher, puller));
        assert_eq!(send(&tx, b"x"), 1, "not now: the UniFFI path reports it");
        assert_eq!(take(&rx, 1, &mut [0u8; 64]), -1);
    }

    #[test]
    fn a_receives_error_crosses_in_uniffis_encoding() {
        let e = ends();
        let rx = lane(&e.puller, 1);
        e.puller.close_endpoint();
        let mut buf = [0u8; 512];
        weida_ffi::call::waited();
        let n = take(&rx, 1, &mut buf) as usize;
        assert_eq!(buf[0], FAILED);
        let err =
            <WeidaError as Lift<UniFfiTag>>::try_lift(RustBuffer::from_vec(buf[1..n].to_vec()))
                .unwrap();
        assert!(matches!(err, WeidaError::Closed { .. }), "{err:?}");
    }
}
