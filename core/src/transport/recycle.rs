//! Large read buffers handed back for the next read when the last view of one goes.
//!
//! An AF_UNIX chunk is read into a buffer of its own, and the frames in it leave as views that
//! the reading task hands to another thread, which lets them go in bursts. glibc hands such
//! blocks back to the kernel when frees leave a thread's arena top above its trim threshold,
//! which it moves as the process runs; a process in that state faults every page of the next
//! block in again and the kernel zeroes it (up to 48,723 faults a second in a Swift receiving
//! worker: docs/PERFORMANCE.md, "Read buffers handed back"). Buffers here go back to a
//! process-wide free list instead, bounded in bytes, and the next buffer of the same size
//! class is taken from it.
//!
//! Only sizes from [`SMALLEST`] to [`LARGEST`] are kept, each rounded up to its class: a
//! multiple of an eighth of the power of two below it, so that a buffer is at most an eighth
//! larger than asked (a window or a collected body counts the bytes, not the buffer) and
//! chunks of nearly the same length share a class. A small message, which glibc serves from
//! its bins anyway, never gets a rounded buffer. The list holds at most [`KEPT`] bytes: when
//! a buffer comes back to a full list, the oldest go first, so that a burst of one size does
//! not keep the list from serving the next.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, TryLockError};

use bytes::Bytes;

/// The smallest size kept.
pub(crate) const SMALLEST: usize = 32 * 1024;

/// The largest size kept: above it a buffer is allocated and freed as usual. An AF_UNIX
/// chunk of the most a writer puts in one (1 MiB) and its prefix is below it.
pub(crate) const LARGEST: usize = 2 * 1024 * 1024;

/// The most bytes the free list holds.
pub(crate) const KEPT: usize = 4 * 1024 * 1024;

/// A free list of buffers, each of a kept class, at most [`KEPT`] bytes of them, oldest first.
pub(crate) struct Recycler {
    free: Mutex<Free>,
}

struct Free {
    bufs: VecDeque<Vec<u8>>,
    bytes: usize,
}

/// The process's free list.
pub(crate) static SHARED: Recycler = Recycler::new();

/// The capacity a buffer for `need` bytes gets: its class if `need` is a size that is kept,
/// else `need`.
pub(crate) fn class(need: usize) -> usize {
    if kept_size(need) {
        need.next_multiple_of(step(need))
    } else {
        need
    }
}

/// An eighth of the power of two at or below `n` (n ≥ 8).
fn step(n: usize) -> usize {
    (1usize << (usize::BITS - 1 - n.leading_zeros())) / 8
}

fn kept_size(n: usize) -> bool {
    (SMALLEST..=LARGEST).contains(&n)
}

/// Whether `cap` is a class: a kept size that rounds to itself.
fn is_class(cap: usize) -> bool {
    kept_size(cap) && cap % step(cap) == 0
}

impl Recycler {
    pub(crate) const fn new() -> Self {
        Self {
            free: Mutex::new(Free {
                bufs: VecDeque::new(),
                bytes: 0,
            }),
        }
    }

    /// An empty buffer with room for `need` bytes (capacity [`class`]`(need)`), one handed back
    /// if there is one of that class. Its spare bytes are not zeroed: fill it through
    /// `BufMut` or `extend_from_slice`, which write before they expose.
    pub(crate) fn take(&self, need: usize) -> Vec<u8> {
        let cap = class(need);
        if is_class(cap) {
            if let Some(mut free) = self.lock() {
                // The newest first: the likeliest to be in the cache.
                if let Some(i) = free.bufs.iter().rposition(|b| b.capacity() == cap) {
                    let buf = free.bufs.remove(i).expect("found at i");
                    free.bytes -= cap;
                    return buf;
                }
            }
        }
        // `with_capacity` allocates exactly `cap` for bytes (`Vec`'s guarantees), which
        // `freeze` checks again rather than trusts.
        Vec::with_capacity(cap)
    }

    /// `buf`'s bytes as a `Bytes` whose buffer comes back here when its last view goes, if its
    /// capacity is a class; otherwise a plain `Bytes`, freed as usual.
    pub(crate) fn freeze(&'static self, buf: Vec<u8>) -> Bytes {
        if is_class(buf.capacity()) {
            Bytes::from_owner(Lent { buf, home: self })
        } else {
            Bytes::from(buf)
        }
    }

    fn give_back(&self, mut buf: Vec<u8>) {
        let cap = buf.capacity();
        let Some(mut free) = self.lock() else { return };
        // The oldest make room; what they were is what a burst left behind.
        let mut gone = Vec::new();
        while free.bytes + cap > KEPT {
            let Some(old) = free.bufs.pop_front() else {
                break;
            };
            free.bytes -= old.capacity();
            gone.push(old);
        }
        buf.clear();
        free.bytes += cap;
        free.bufs.push_back(buf);
        // Freed after the lock, so that no other thread waits on glibc's work.
        drop(free);
        drop(gone);
    }

    /// What the list holds: its bytes, and each buffer's capacity, oldest first.
    #[cfg(test)]
    pub(crate) fn held(&self) -> (usize, Vec<usize>) {
        let free = self.lock().expect("a test's own list");
        (free.bytes, free.bufs.iter().map(Vec::capacity).collect())
    }

    /// The list, unless another thread holds it: then the caller allocates or frees as if it
    /// were empty or full, rather than wait (and a child forked while a thread held it does
    /// not hang on it).
    fn lock(&self) -> Option<MutexGuard<'_, Free>> {
        match self.free.try_lock() {
            Ok(g) => Some(g),
            // The list is consistent between statements, so a panic elsewhere leaves it usable.
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

/// A free list of a test's own, so that what it asserts of the list is not what other tests
/// running in the same process did to [`SHARED`].
#[cfg(test)]
pub(crate) fn leaked() -> &'static Recycler {
    Box::leak(Box::new(Recycler::new()))
}

/// A buffer lent out as a `Bytes`: handed back to its free list when the last view goes.
struct Lent {
    buf: Vec<u8>,
    home: &'static Recycler,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.home.give_back(std::mem::take(&mut self.buf));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept class's buffer comes back when its last view goes, on whatever thread, and the
    /// next buffer of that class is that one; a view kept alive keeps it out.
    #[test]
    fn a_buffer_comes_back_when_its_last_view_goes_and_the_next_read_of_its_class_takes_it() {
        let r = leaked();
        let mut buf = r.take(100_000);
        let cap = class(100_000);
        assert_eq!(buf.capacity(), cap);
        buf.extend((0..100_000u32).map(|i| i as u8));
        let at = buf.as_ptr();
        let all = r.freeze(buf);
        let view = all.slice(10..20);
        drop(all);
        assert_eq!(r.held(), (0, vec![]), "a view is alive: still lent");
        assert_eq!(&view[..], &(10..20u8).collect::<Vec<_>>()[..]);
        std::thread::spawn(move || drop(view)).join().unwrap();
        assert_eq!(r.held(), (cap, vec![cap]));
        // Not taken by another class, and taken by its own.
        let other = r.take(200_000);
        assert_ne!(other.as_ptr(), at);
        assert_eq!(r.held(), (cap, vec![cap]));
        let again = r.take(cap - 7);
        assert_eq!(again.as_ptr(), at);
        assert!(again.is_empty());
        assert_eq!(r.held(), (0, vec![]));
    }

    /// Classes are at most an eighth above the size asked; sizes below the smallest and above
    /// the largest are neither rounded nor kept, nor is a buffer whose capacity is no class.
    #[test]
    fn only_the_kept_sizes_are_rounded_and_by_at_most_an_eighth() {
        let r = leaked();
        for need in [0, 1, SMALLEST - 1, LARGEST + 1, 16 << 20] {
            let buf = r.take(need);
            assert_eq!(buf.capacity(), need, "{need}");
            drop(r.freeze(buf));
            assert_eq!(r.held(), (0, vec![]), "{need}");
        }
        drop(r.freeze(Vec::with_capacity(SMALLEST + 1)));
        assert_eq!(r.held(), (0, vec![]), "not a class");
        for need in (SMALLEST..=LARGEST).step_by(997).chain([SMALLEST, LARGEST]) {
            let c = class(need);
            assert!(c >= need && c - need <= need / 8, "{need} -> {c}");
            assert!(is_class(c), "{need} -> {c}");
            assert_eq!(class(c), c);
        }
        // A lane's blocks of 128 frames of about 1 KiB, each a chunk, share a class.
        assert_eq!(class(131_072 + 5), class(131_072 + 9_000));
    }

    /// The list never holds more than `KEPT` bytes however many buffers come back; a buffer
    /// that comes back to a full list takes the place of the oldest, and a read takes the
    /// newest of its class.
    #[test]
    fn the_list_holds_at_most_its_bound_and_the_newest_push_the_oldest_out() {
        let r = leaked();
        let big = class(LARGEST);
        let lent: Vec<Bytes> = (0..3 * KEPT / big).map(|_| r.freeze(r.take(big))).collect();
        let order: Vec<*const u8> = lent.iter().map(|b| b.as_ptr()).collect();
        // Dropped in order: the last ones back are the ones kept.
        for b in lent {
            drop(b);
        }
        let (bytes, caps) = r.held();
        assert_eq!(bytes, KEPT);
        assert_eq!(caps, vec![big; KEPT / big]);
        // A read takes the newest of its class, the last dropped.
        let newest = r.take(big);
        assert_eq!(newest.as_ptr(), *order.last().unwrap());
        drop(r.freeze(newest));
        // A burst of another class takes the place of the oldest, and only the newest big
        // one is left.
        let small = class(100_000);
        let lent: Vec<Bytes> = (0..3).map(|_| r.freeze(r.take(small))).collect();
        drop(lent);
        let (bytes, caps) = r.held();
        assert!(bytes <= KEPT, "{bytes}");
        assert_eq!(caps, vec![big, small, small, small]);
        let kept = r.take(big);
        assert_eq!(kept.as_ptr(), *order.last().unwrap());
        assert_eq!(r.take(small).capacity(), small);
        assert_eq!(r.held().1, vec![small, small]);
    }
}
