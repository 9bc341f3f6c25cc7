//! Large read buffers handed back for the next read when the last view of one goes.
//!
//! The same holds for the batches the Kotlin and Swift layers copy in to send (about 260 KiB
//! at 256 bodies of 1 KiB), which the lane's writer frees on the I/O thread.
//!
//! An AF_UNIX chunk is read into an allocation of its own (about 128 KiB in a throughput run),
//! and the frames in it leave as views that the reading task hands to another thread. glibc
//! returns such blocks to the kernel when they are freed in bursts at the top of a thread's
//! arena (its trim threshold), so every read after faults its pages in again and the kernel
//! zeroes them: in a Swift worker's receiving I/O thread, a quarter of its time
//! (docs/PERFORMANCE.md, "Read buffers handed back"). Buffers here go back to a process-wide
//! free list instead, bounded in bytes, and a read of the same size class takes one from it.
//!
//! Only sizes from [`GRAIN`] to [`LARGEST`] are kept, rounded up to a multiple of [`GRAIN`] so
//! that chunks of nearly the same length share a class: a buffer is at most one grain larger
//! than its read, and a small message, which glibc serves from its bins anyway, never holds a
//! rounded block. What is kept is at most [`KEPT`] bytes, whatever the peers send.

use std::sync::Mutex;

use bytes::Bytes;

/// Sizes are rounded up to a multiple of this, and nothing smaller is kept.
pub(crate) const GRAIN: usize = 32 * 1024;

/// The largest buffer kept: a read above it gets an allocation of its own, freed as before.
pub(crate) const LARGEST: usize = 1024 * 1024;

/// The most bytes the free list holds.
pub(crate) const KEPT: usize = 4 * 1024 * 1024;

/// A free list of buffers, each of a capacity that is a multiple of [`GRAIN`] up to
/// [`LARGEST`], at most [`KEPT`] bytes of them.
pub(crate) struct Recycler {
    free: Mutex<Free>,
}

struct Free {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

/// The process's free list.
pub(crate) static SHARED: Recycler = Recycler::new();

/// The capacity a buffer for `need` bytes gets: `need` rounded up to a multiple of [`GRAIN`]
/// when it is a size that is kept, else `need`.
pub(crate) fn class(need: usize) -> usize {
    if (GRAIN..=LARGEST).contains(&need) {
        need.next_multiple_of(GRAIN)
    } else {
        need
    }
}

impl Recycler {
    pub(crate) const fn new() -> Self {
        Self {
            free: Mutex::new(Free {
                bufs: Vec::new(),
                bytes: 0,
            }),
        }
    }

    /// An empty buffer with room for `need` bytes (capacity [`class`]`(need)`), one handed back
    /// if there is one of that class. Its spare bytes are not zeroed: read into it with
    /// `BufMut`, which writes before it exposes.
    pub(crate) fn take(&self, need: usize) -> Vec<u8> {
        let cap = class(need);
        if kept_class(cap) {
            let mut free = self.lock();
            if let Some(i) = free.bufs.iter().position(|b| b.capacity() == cap) {
                let buf = free.bufs.swap_remove(i);
                free.bytes -= cap;
                return buf;
            }
        }
        Vec::with_capacity(cap)
    }

    /// `buf`'s bytes as a `Bytes` whose allocation comes back here when its last view goes,
    /// if it is of a kept class; otherwise a plain `Bytes`, freed as usual.
    pub(crate) fn freeze(&'static self, buf: Vec<u8>) -> Bytes {
        if kept_class(buf.capacity()) {
            Bytes::from_owner(Lent { buf, home: self })
        } else {
            Bytes::from(buf)
        }
    }

    /// `bytes` copied into a buffer taken as [`take`](Self::take) takes one, as a `Bytes` that
    /// hands it back as [`freeze`](Self::freeze)'s do: a batch a binding copies in to send.
    pub(crate) fn copy(&'static self, bytes: &[u8]) -> Bytes {
        let mut buf = self.take(bytes.len());
        buf.extend_from_slice(bytes);
        self.freeze(buf)
    }

    fn give_back(&self, mut buf: Vec<u8>) {
        let cap = buf.capacity();
        let mut free = self.lock();
        if free.bytes + cap <= KEPT {
            buf.clear();
            free.bytes += cap;
            free.bufs.push(buf);
        }
        // Otherwise it is freed here, after the lock (the list is full).
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Free> {
        // The list is consistent between statements, so a panic elsewhere leaves it usable.
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn kept_class(cap: usize) -> bool {
    (GRAIN..=LARGEST).contains(&cap) && cap % GRAIN == 0
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

    fn local() -> &'static Recycler {
        Box::leak(Box::new(Recycler::new()))
    }

    /// A kept class's buffer comes back when its last view goes, on whatever thread, and the
    /// next read of that class takes the same allocation; a view kept alive keeps it out.
    #[test]
    fn a_buffer_comes_back_when_its_last_view_goes_and_the_next_read_of_its_class_takes_it() {
        let r = local();
        let mut buf = r.take(100_000);
        assert_eq!(buf.capacity(), 4 * GRAIN);
        buf.extend((0..100_000u32).map(|i| i as u8));
        let at = buf.as_ptr();
        let all = r.freeze(buf);
        let view = all.slice(10..20);
        drop(all);
        // A view is alive: the allocation is still lent.
        let other = r.take(100_000);
        assert_ne!(other.as_ptr(), at);
        assert_eq!(&view[..], &(10..20u8).collect::<Vec<_>>()[..]);
        std::thread::spawn(move || drop(view)).join().unwrap();
        // Back, and taken by a read of the same class (not of another).
        let other = r.take(200_000);
        assert_ne!(other.as_ptr(), at);
        let again = r.take(4 * GRAIN - 7);
        assert_eq!(again.as_ptr(), at);
        assert!(again.is_empty());
        assert_eq!(r.lock().bytes, 0);
        // A copy in takes from the same list, and hands back the same way.
        drop(again);
        let sent: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let copy = r.copy(&sent);
        assert_eq!(&copy[..], &sent[..]);
        let at = copy.as_ptr();
        drop(copy);
        let again = r.take(sent.len());
        assert_eq!(again.as_ptr(), at);
    }

    /// Sizes below a grain and above the largest class are neither rounded nor kept, and the
    /// list never holds more than `KEPT` bytes however many buffers come back.
    #[test]
    fn only_the_kept_sizes_are_rounded_and_the_list_holds_at_most_its_bound() {
        let r = local();
        for need in [0, 1, GRAIN - 1, LARGEST + 1, 16 << 20] {
            let buf = r.take(need);
            assert_eq!(buf.capacity(), need, "{need}");
            drop(r.freeze(buf));
            assert_eq!(r.lock().bufs.len(), 0, "{need}");
        }
        assert_eq!(class(GRAIN), GRAIN);
        assert_eq!(class(GRAIN + 1), 2 * GRAIN);
        assert_eq!(class(LARGEST), LARGEST);
        let lent: Vec<Bytes> = (0..2 * KEPT / LARGEST)
            .map(|_| r.freeze(r.take(LARGEST)))
            .collect();
        drop(lent);
        let free = r.lock();
        assert_eq!(free.bytes, KEPT);
        assert_eq!(free.bufs.len(), KEPT / LARGEST);
    }
}
