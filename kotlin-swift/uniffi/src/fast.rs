//! The Kotlin layer's fast lane: the calls a message makes when it can finish now (a
//! `Pusher`'s `sendReady`, a `Puller`'s or `Subscriber`'s `takeReady`) as C functions of
//! numbers and byte buffers, beside the UniFFI exports that do the same.
//!
//! Why: through JNA every UniFFI call allocates `Structure`s (its call status, each
//! `RustBuffer` passed or returned, and a handle clone is one more call with its own), each a
//! `malloc`, an entry in JNA's process-wide map of live allocations and a cleaner
//! registration. Profiled (JFR, a two-process Push/Pull of 64 B, one suspend call per
//! message), that map's inserts took half of a receiver's samples, and a message cost 60-90
//! µs of CPU on each side (docs/PERFORMANCE.md, "Kotlin's fast lane"). JNA's direct mapping
//! calls a function of `long`, `int`, `byte[]` and a direct `ByteBuffer` with none of that.
//!
//! Nothing here decides anything: each function calls what the UniFFI export calls, and its
//! answer crosses in UniFFI's own encoding (`Lower::write`), read on the Kotlin side by the
//! generated converters, so a value or an error reads exactly as through the export.
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

use crate::bound_push::DialingPuller;
use crate::bus::Bus;
use crate::collector::BoundSubscriber;
use crate::error::{Result, WeidaError};
use crate::packed::Packed;
use crate::pair::Pair;
use crate::patterns::{Puller, Pusher, Subscriber};
use crate::UniFfiTag;

/// What one endpoint's lane calls.
enum Lane {
    Send(Weak<Pusher>),
    Take(Take),
}

/// A receiving endpoint's lane: its `take_ready`, and an answer taken that did not fit in the
/// caller's buffer, handed out first by the next call.
struct Take {
    take: Box<dyn Fn(u32) -> Option<Result<Option<Packed>>> + Send + Sync>,
    kept: Mutex<Option<Vec<u8>>>,
}

impl Take {
    fn lane(take: impl Fn(u32) -> Option<Result<Option<Packed>>> + Send + Sync + 'static) -> Lane {
        Lane::Take(Self {
            take: Box::new(take),
            kept: Mutex::new(None),
        })
    }
}

/// The tags of a take's answer, its first byte in the caller's buffer.
const TAKEN: u8 = 0;
const FAILED: u8 = 1;
const TOO_SMALL: u8 = 2;

/// A lane for the endpoint whose cloned UniFFI handle is `handle`; 0 if it is none of the
/// kinds below. `kind`: 0 a `Pusher`; a receiving endpoint: 1 a `Puller`, 2 a `Subscriber`,
/// 3 a `DialingPuller`, 4 a `BoundSubscriber`, 5 a `Pair`, 6 a `Bus`.
///
/// # Safety
/// `handle` is a handle UniFFI made for an object of that kind, cloned for this call (the
/// Kotlin layer's `callWithHandle`); this function takes that reference over.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_lane(handle: u64, kind: i32) -> u64 {
    let Some(h) = Handle::from_raw(handle) else {
        return 0;
    };
    let lane = match kind {
        0 => Lane::Send(Arc::downgrade(&h.into_arc::<Pusher>())),
        1 => take_lane(h, Puller::take_ready),
        2 => take_lane(h, Subscriber::take_ready),
        3 => take_lane(h, DialingPuller::take_ready),
        4 => take_lane(h, BoundSubscriber::take_ready),
        5 => take_lane(h, Pair::take_ready),
        6 => take_lane(h, Bus::take_ready),
        _ => return 0,
    };
    Box::into_raw(Box::new(lane)) as u64
}

/// The lane of a receiving endpoint `h`, whose UniFFI `take_ready` is `take`.
///
/// # Safety
/// As [`weida_fast_lane`]'s: `h` is a cloned handle of a `T`.
unsafe fn take_lane<T: Send + Sync + 'static>(
    h: Handle,
    take: fn(&T, u32) -> Result<Option<Packed>>,
) -> Lane {
    let endpoint = Arc::downgrade(&h.into_arc::<T>());
    Take::lane(move |max| Some(take(&*endpoint.upgrade()?, max)))
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
/// `send`, which also reports any error), 2 yield first.
///
/// # Safety
/// `lane` is a live lane of kind 0; `body` holds `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_send_ready(lane: u64, body: *const u8, len: i32) -> i32 {
    let Lane::Send(p) = &*(lane as *const Lane) else {
        return 1;
    };
    let body = match usize::try_from(len) {
        Ok(0) => Bytes::new(),
        Ok(n) => Bytes::copy_from_slice(std::slice::from_raw_parts(body, n)),
        Err(_) => return 1,
    };
    catch_unwind(AssertUnwindSafe(|| match p.upgrade() {
        // An error (a closed endpoint, a header over the peer's limit) is the waiting
        // `send`'s to report, with the same body: nothing was sent.
        Some(p) => p.send_ready_bytes(body).map_or(1, i32::from),
        None => 1,
    }))
    .unwrap_or(1)
}

/// `takeReady(max)` into `out` (`cap` bytes): the first byte a tag, then the answer in
/// UniFFI's encoding. Tag 0: an `Option<Packed>` follows (None: nothing is ready; a `Packed`
/// of no message: yield first); tag 1: a `WeidaError` follows, the receive's error, taken in
/// its place. Returns how many bytes it wrote. An answer larger than `cap` is kept whole and
/// handed out first by the next call (nothing taken is lost, and nothing overtakes it); this
/// one writes tag 2 and returns the size the next call's buffer needs. -1 when the endpoint
/// is gone or the call panicked: take the UniFFI path.
///
/// # Safety
/// `lane` is a live lane of kind 1 or 2; `out` holds `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn weida_fast_take_ready(lane: u64, max: i32, out: *mut u8, cap: i32) -> i32 {
    let Lane::Take(t) = &*(lane as *const Lane) else {
        return -1;
    };
    let Ok(cap) = usize::try_from(cap) else {
        return -1;
    };
    let mut kept = t.kept.lock().unwrap_or_else(|p| p.into_inner());
    let buf = match kept.take() {
        Some(buf) => buf,
        None => {
            let max = u32::try_from(max).unwrap_or(1);
            let Some(answer) = catch_unwind(AssertUnwindSafe(|| (t.take)(max)))
                .ok()
                .flatten()
            else {
                return -1;
            };
            encode(answer)
        }
    };
    let Ok(n) = i32::try_from(buf.len()) else {
        // Above 2 GiB: no `ByteBuffer` holds it (nor could UniFFI's `RustBuffer`).
        return -1;
    };
    if buf.len() <= cap {
        std::ptr::copy_nonoverlapping(buf.as_ptr(), out, buf.len());
    } else {
        if cap > 0 {
            *out = TOO_SMALL;
        }
        *kept = Some(buf);
    }
    n
}

/// A take's answer as the caller reads it: its tag, then the value in UniFFI's encoding.
fn encode(answer: Result<Option<Packed>>) -> Vec<u8> {
    let mut buf = Vec::with_capacity(256);
    match answer {
        Ok(packed) => {
            buf.push(TAKEN);
            <Option<Packed> as Lower<UniFfiTag>>::write(packed, &mut buf);
        }
        Err(e) => {
            buf.push(FAILED);
            <WeidaError as Lower<UniFfiTag>>::write(e, &mut buf);
        }
    }
    buf
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};

    use uniffi::{Lift, RustBuffer};

    use super::*;
    use crate::runtime::{Listener, Runtime};

    struct Ends {
        _rts: (Arc<Runtime>, Arc<Runtime>, Arc<Listener>),
        pusher: Arc<Pusher>,
        puller: Arc<Puller>,
    }

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn ends() -> Ends {
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
    struct Owned(u64);

    impl Drop for Owned {
        fn drop(&mut self) {
            // SAFETY: made by `lane`, freed once, here.
            unsafe { weida_fast_lane_free(self.0) }
        }
    }

    /// A lane as the Kotlin layer makes one: from a handle cloned for the call.
    fn lane<T>(o: &Arc<T>, kind: i32) -> Owned {
        let h = Handle::from_arc(Arc::clone(o)).as_raw();
        // SAFETY: a handle made from an Arc of the kind named, handed over.
        Owned(unsafe { weida_fast_lane(h, kind) })
    }

    fn send(lane: &Owned, body: &[u8]) -> i32 {
        // SAFETY: a live send lane; `body` is readable.
        unsafe { weida_fast_send_ready(lane.0, body.as_ptr(), body.len() as i32) }
    }

    fn take(lane: &Owned, max: i32, buf: &mut [u8]) -> i32 {
        // SAFETY: a live take lane; `buf` is writable.
        unsafe { weida_fast_take_ready(lane.0, max, buf.as_mut_ptr(), buf.len() as i32) }
    }

    fn bodies(answer: &[u8]) -> Vec<Vec<u8>> {
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
