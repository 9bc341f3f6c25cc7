//! AF_UNIX transport: the OS connection is the stream (one socket per transfer or exchange, or
//! one exchange after another on a kept socket, PROTOCOL.md §8.7),
//! with the chunk framing of `wire::chunk` so that a cancelled or dead writer is never read as a
//! complete payload, and the peer named by the kernel (SO_PEERCRED).

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::byte_channel::{self, byte_channel};
use super::recycle;
use super::{IncomingRaw, Life, PeerIdentity, RecvHalf, SendHalf, StreamError};
use crate::address::UnixTarget;
use crate::config::Limits;
use crate::error::{Error, LossCause};
use crate::wire::chunk::{self, ChunkType};
use crate::wire::Code;

/// A writer splits its bytes into chunks of at most this many.
const WRITE_CHUNK: usize = 1 << 20;
/// A reader refuses a chunk that declares more than this.
const READ_CHUNK_LIMIT: u32 = 16 << 20;
/// Below this, prefix and payload are copied into one buffer so a message is one syscall.
const COALESCE: usize = 16 * 1024;
/// Buffers gathered into one chunk at most, well under the kernel's IOV_MAX (1024) for one
/// writev with the prefix.
const GATHER_MAX: usize = 512;
/// What buffers are gathered into one chunk up to; a larger buffer has chunks of its own. The
/// reader allocates a chunk's payload at once, and with chunks of 256 KiB (above glibc's initial
/// mmap threshold) it page-faulted in slow runs of a 16 KiB Push/Pull: a lead, not a shown cause;
/// at 4 KiB, 64 KiB chunks measured no slow run (PERFORMANCE.md). The reader's buffers come
/// from a free list since (`recycle`), which took such faults away at 1 KiB; larger gathers were
/// not measured again.
const GATHER: usize = 64 * 1024;

/// What every stream of one socket shares: its write half and what outlives a stream. A
/// socket carries one stream, or, kept (PROTOCOL.md §8.7), one exchange after another.
struct Socket {
    write: tokio::sync::Mutex<OwnedWriteHalf>,
    // The socket's descriptor, to shut it down without the write lock (`shut`), which a write
    // to a peer that does not read can hold for ever. Open while `write` is.
    fd: std::os::fd::RawFd,
    // The runtime this socket lives on: a handle may be dropped outside any runtime (a
    // binding's garbage collector), and the owed chunks still need a task to write them.
    runtime: tokio::runtime::Handle,
    // A listener's socket: its place in its peer process's share, given back when the last
    // half is dropped, which is when the descriptor closes.
    _slot: Option<ShareSlot>,
    // The dialler asked for the socket to be kept (its first chunk was KEEP).
    kept: AtomicBool,
    // A kept socket's streams so far (the pump's current one is the last) and whether it was
    // retired: read and changed together, so a retirement and the next exchange's start are
    // ordered (the one that comes first wins, §8.7).
    turn: Mutex<Turn>,
    // A dialler's kept socket: the pool it goes back to after a clean exchange.
    pool: Option<std::sync::Weak<Pool>>,
    // A dialler's budget slot (max_local_streams), held until the pump ends, idle in the
    // pool too: a descriptor is a descriptor (`Conn::open_socket` ends an idle one for it).
    permit: Mutex<Option<OwnedSemaphorePermit>>,
}

#[derive(Default)]
struct Turn {
    streams: u64,
    retired: bool,
    // A dialler's next exchange on this kept socket, for the pump to read into once the
    // listener answers it.
    // Weak: the exchange's own handles hold its state, and a strong one here would hold the
    // socket itself (Sock holds Socket) past everything else.
    next: Option<(byte_channel::Writer, std::sync::Weak<Sock>)>,
}

impl Socket {
    fn new(
        write: OwnedWriteHalf,
        runtime: tokio::runtime::Handle,
        slot: Option<ShareSlot>,
    ) -> Self {
        let fd = std::os::fd::AsRawFd::as_raw_fd(write.as_ref() as &UnixStream);
        Self {
            write: tokio::sync::Mutex::new(write),
            fd,
            runtime,
            _slot: slot,
            kept: AtomicBool::new(false),
            turn: Mutex::new(Turn::default()),
            pool: None,
            permit: Mutex::new(None),
        }
    }

    /// Ends the socket both ways (its pump then reads its end), at once: without the write
    /// lock, which a write to a peer that does not read holds (that write then fails). A chunk
    /// it cuts is a loss to the peer, which an end of the socket is anyway.
    fn shut(&self) {
        // SAFETY: `fd` is open while `self.write` holds its half of the socket, and `&self`
        // holds that.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(self.fd) };
        let _ = socket2::SockRef::from(&fd).shutdown(std::net::Shutdown::Both);
    }
}

/// The most kept sockets a dialler's connection holds idle (§8.7), each in its budget
/// (`max_local_streams`) as a busy one is.
const POOL_MAX: usize = 4;

/// A dialler's kept sockets, idle, each with the time it became so.
#[derive(Default)]
struct Pool {
    idle: Mutex<Vec<(Arc<Socket>, std::time::Instant)>>,
}

impl Pool {
    /// Ends every idle socket: the connection they belong to is over.
    fn empty(&self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        for (socket, _) in idle {
            socket.shut();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.empty();
    }
}

/// State one stream's writer, reader and the socket's pump share.
struct Sock {
    socket: Arc<Socket>,
    // Bytes of the chunk being written that are not written yet, from its first written byte
    // on. A write cancelled mid-chunk leaves it above zero; before a RESET can follow, the
    // chunk is completed (`padding`: the rest of its prefix, zeros for its payload, which the
    // reader may deliver before the RESET makes the stream Canceled: PROTOCOL.md §8.3). Only
    // touched under the socket's write lock; atomics so `Sock` stays shareable without one.
    unfinished: AtomicUsize,
    // That chunk's prefix, little-endian in the low five bytes.
    unfinished_head: AtomicU64,
    // A chunk cut by a cancelled write was completed with filler: the stream is broken, and no
    // later write may follow the filler (the reader would take it for data, §8.3).
    cut: AtomicBool,
    // On a kept socket, this listener's reader let go of the request after its reply's FIN
    // was begun: no STOP is written (it would reach the dialler after the reply's end, when it
    // may have begun its next exchange on the socket, §8.7); what is left of the request is
    // read and discarded to its FIN, and the socket is then kept.
    draining: AtomicBool,
    stop: Mutex<Option<Code>>,
    pump_done: AtomicBool,
    events: Notify,
    // STOP/RESET chunks owed to the peer, written before the write direction shuts down.
    pending: Mutex<Vec<u8>>,
    // Local handles (writer, reader) still alive. At zero this side is done writing, so the
    // write direction is shut down and the peer's pump sees EOF (without it both pumps would
    // wait for each other's EOF and hold their budget slots forever), unless the stream ended
    // cleanly on a kept socket (`keeps`).
    handles: AtomicUsize,
    // Why this side ended the socket, when the runtime or listener it lives on closed: its
    // own reads and writes then report that cause (LocallyClosed), not the peer's.
    ended: OnceLock<LossCause>,
    // The peer's FIN was read (and when); this side's FIN is being written, and was written.
    fin_read: AtomicBool,
    fin_read_at: OnceLock<std::time::Instant>,
    fin_begun: AtomicBool,
    fin_written: AtomicBool,
    // A STOP or RESET went either way, a write failed, or a FIN was begun and abandoned (its
    // `finish` cancelled): the socket ends with this stream.
    spoiled: AtomicBool,
}

impl Sock {
    fn new(socket: Arc<Socket>) -> Self {
        Self {
            socket,
            unfinished: AtomicUsize::new(0),
            unfinished_head: AtomicU64::new(0),
            cut: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            stop: Mutex::new(None),
            pump_done: AtomicBool::new(false),
            events: Notify::new(),
            handles: AtomicUsize::new(2),
            pending: Mutex::new(Vec::new()),
            ended: OnceLock::new(),
            fin_read: AtomicBool::new(false),
            fin_read_at: OnceLock::new(),
            fin_begun: AtomicBool::new(false),
            fin_written: AtomicBool::new(false),
            spoiled: AtomicBool::new(false),
        }
    }

    /// Whether this stream ended cleanly on a kept socket: both FINs, no STOP or RESET either
    /// way. Its socket then waits for the next exchange instead of shutting down (§8.7).
    fn keeps(&self) -> bool {
        self.socket.kept.load(Ordering::Acquire)
            && self.fin_read.load(Ordering::Acquire)
            && self.fin_written.load(Ordering::Acquire)
            && !self.spoiled.load(Ordering::Acquire)
    }

    /// Whether a peer's DATA after this stream may begin the next exchange on a kept socket: as
    /// [`Sock::keeps`], except that this side's FIN need only have begun. The peer writes the
    /// next exchange only once it has read that FIN, which may be before this side's write of
    /// it has returned.
    fn may_follow(&self) -> bool {
        self.socket.kept.load(Ordering::Acquire)
            && self.fin_read.load(Ordering::Acquire)
            && self.fin_begun.load(Ordering::Acquire)
            && !self.spoiled.load(Ordering::Acquire)
    }

    fn spoil(&self) {
        self.spoiled.store(true, Ordering::Release);
        self.events.notify_waiters();
    }

    /// One local handle is gone; at zero, what is still owed to the peer (a STOP or a RESET)
    /// is written and the write direction is shut down, in that order.
    fn release(self: &Arc<Self>) {
        if self.handles.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        // The pump's linger starts now (`lingered`).
        self.events.notify_waiters();
        if self.keeps() {
            // Kept for the next exchange (§8.7). A listener's pump reads it, or retires the
            // socket; a dialler's goes back to its pool, with its budget slot.
            let Some(pool) = self.socket.pool.as_ref() else {
                return;
            };
            if let Some(pool) = pool.upgrade() {
                let mut idle = pool.idle.lock().unwrap();
                if idle.len() < POOL_MAX {
                    // Idle since the exchange ended, as the listener counts it, not since the
                    // application let go of it.
                    let since = self.fin_read_at.get().copied();
                    idle.push((
                        self.socket.clone(),
                        since.unwrap_or_else(std::time::Instant::now),
                    ));
                    return;
                }
            }
            // No room, or the connection is gone: ended as a socket not kept is.
        }
        if self.drains() {
            // The request's FIN is still to come, and keeps the socket: the pump reads to it,
            // and ends the socket itself if a RESET or the end of file comes instead.
            return;
        }
        if let Ok(mut w) = self.socket.write.try_lock() {
            if self.flush_now(&mut w) {
                let _ = socket2::SockRef::from(w.as_ref()).shutdown(std::net::Shutdown::Write);
                return;
            }
        }
        let sock = self.clone();
        self.socket.runtime.spawn(async move {
            let mut w = sock.socket.write.lock().await;
            sock.flush(&mut w).await;
            let _ = socket2::SockRef::from(w.as_ref()).shutdown(std::net::Shutdown::Write);
        });
    }

    /// Queues a STOP or RESET chunk and starts a task to write it.
    fn owe(self: &Arc<Self>, ty: ChunkType, code: Code) {
        self.pending
            .lock()
            .unwrap()
            .extend_from_slice(&chunk::code_chunk(ty, code));
        self.write_owed();
    }

    /// This side's reader lets go of the peer's stream before its end: a STOP is owed, unless
    /// this is a listener's kept socket whose reply's FIN is begun. Then the request is read
    /// to its FIN and discarded instead (`draining`): a STOP after the reply's FIN could reach
    /// the dialler's next exchange (§8.7). Decided under the lock `finish` takes the owed
    /// chunks under as it begins the FIN, so a STOP owed goes before that FIN, never after.
    fn stop_reading(self: &Arc<Self>, code: Code) {
        let mut pending = self.pending.lock().unwrap();
        let listener_kept = self.socket.pool.is_none() && self.socket.kept.load(Ordering::Acquire);
        if listener_kept && self.fin_begun.load(Ordering::Acquire) {
            self.draining.store(true, Ordering::Release);
            return;
        }
        pending.extend_from_slice(&chunk::code_chunk(ChunkType::Stop, code));
        drop(pending);
        self.write_owed();
    }

    /// The stream ends with the owed chunk: spoiled, and a task writes it.
    fn write_owed(self: &Arc<Self>) {
        self.spoil();
        let sock = self.clone();
        self.socket.runtime.spawn(async move {
            let mut w = sock.socket.write.lock().await;
            sock.flush(&mut w).await;
        });
    }

    /// Whether what the peer still writes of its stream is read and discarded to its end
    /// rather than ending the socket (`draining`, unless the stream was spoiled since).
    fn drains(&self) -> bool {
        self.draining.load(Ordering::Acquire)
            && !self.spoiled.load(Ordering::Acquire)
            && !self.fin_read.load(Ordering::Acquire)
    }

    /// Writes what is owed without waiting; false if it would block (the caller then waits).
    fn flush_now(&self, w: &mut OwnedWriteHalf) -> bool {
        let mut p = self.pending.lock().unwrap();
        if p.is_empty() {
            return true;
        }
        while self.unfinished.load(Ordering::Acquire) > 0 {
            self.cut.store(true, Ordering::Release);
            let pad = self.padding(self.unfinished.load(Ordering::Acquire));
            match try_send(w, &pad) {
                Ok(n) if n > 0 => {
                    self.unfinished.fetch_sub(n, Ordering::AcqRel);
                }
                _ => return false,
            }
        }
        match try_send(w, &p) {
            Ok(n) if n == p.len() => {
                p.clear();
                true
            }
            Ok(n) => {
                p.drain(..n);
                false
            }
            Err(_) => false,
        }
    }

    fn stop_code(&self) -> Option<Code> {
        *self.stop.lock().unwrap()
    }

    /// The loss a socket that ended without FIN or RESET means here.
    fn loss(&self) -> LossCause {
        self.ended.get().cloned().unwrap_or(LossCause::PeerClosed)
    }

    /// Waits until no local handle is left, then `linger` more: how long a socket this side is
    /// done with waits for the peer's end of file (or its next chunk) before this side closes
    /// it anyway. Without it a peer that never closed a connection it was answered or refused
    /// on held the socket, its descriptor and its pump here for ever (PROTOCOL.md §8.5).
    async fn lingered(&self, linger: Option<Duration>) {
        let Some(linger) = linger else {
            return std::future::pending().await;
        };
        let mut until = None;
        loop {
            let n = self.events.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            // A kept socket between exchanges waits for the next one instead (`retired`); a
            // socket that becomes kept while lingering (its request's FIN read after this side
            // let go of it: `draining`) stops lingering. Counted from when it began: a stream's
            // state changes a bounded number of times, so a peer cannot stretch it.
            if self.handles.load(Ordering::Acquire) == 0 && !self.keeps() {
                let at = *until.get_or_insert_with(|| tokio::time::Instant::now() + linger);
                tokio::select! {
                    () = tokio::time::sleep_until(at) => return,
                    () = n => continue,
                }
            }
            until = None;
            n.await;
        }
    }

    /// Waits until this stream ended cleanly on a kept socket and `keep` more with no next
    /// exchange, then retires the socket (§8.7): a STOP and a RESET with GOING_AWAY, and the
    /// write direction shut down. Returns at once, doing nothing, if the next exchange
    /// started first.
    async fn retired(&self, keep: Duration) {
        loop {
            let n = self.events.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.keeps() {
                break;
            }
            n.await;
        }
        let streams = self.socket.turn.lock().unwrap().streams;
        tokio::time::sleep(keep).await;
        {
            let mut turn = self.socket.turn.lock().unwrap();
            if turn.streams != streams || turn.retired {
                return;
            }
            turn.retired = true;
        }
        self.spoil();
        let mut retire = chunk::code_chunk(ChunkType::Stop, Code::GoingAway);
        retire.extend(chunk::code_chunk(ChunkType::Reset, Code::GoingAway));
        let w = self.socket.write.lock().await;
        if send_all(&w, &retire).await.is_ok() {
            let _ = socket2::SockRef::from(w.as_ref()).shutdown(std::net::Shutdown::Write);
        }
    }

    /// Waits until the peer's STOP arrived or the socket's read side ended.
    async fn settled(&self) -> Option<Code> {
        loop {
            let n = self.events.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if let Some(c) = self.stop_code() {
                return Some(c);
            }
            if self.pump_done.load(Ordering::Acquire) {
                return None;
            }
            n.await;
        }
    }

    /// What completes the unfinished chunk, `left` bytes of it not written.
    fn padding(&self, left: usize) -> Vec<u8> {
        let head = self.unfinished_head.load(Ordering::Acquire).to_le_bytes();
        padding(head[..chunk::PREFIX].try_into().expect("five bytes"), left)
    }

    async fn flush(&self, w: &mut OwnedWriteHalf) {
        let owed = std::mem::take(&mut *self.pending.lock().unwrap());
        if owed.is_empty() {
            return;
        }
        let left = self.unfinished.swap(0, Ordering::AcqRel);
        if left > 0 {
            self.cut.store(true, Ordering::Release);
            if send_all(w, &self.padding(left)).await.is_err() {
                return;
            }
        }
        let _ = self.send_owed(w, owed).await;
    }

    /// Writes `owed`, chunks taken from `pending`; what is not written when this returns or is
    /// dropped goes back to the front of `pending`, so an owed chunk is never lost to a
    /// cancelled write, and one cut short is completed by the rest of its own bytes.
    async fn send_owed(&self, w: &OwnedWriteHalf, owed: Vec<u8>) -> io::Result<()> {
        struct Rest<'a> {
            sock: &'a Sock,
            owed: Vec<u8>,
            sent: usize,
        }
        impl Drop for Rest<'_> {
            fn drop(&mut self) {
                if self.sent < self.owed.len() {
                    let rest = self.owed[self.sent..].iter().copied();
                    let mut p = self.sock.pending.lock().unwrap_or_else(|e| e.into_inner());
                    p.splice(0..0, rest);
                }
            }
        }
        let mut rest = Rest {
            sock: self,
            owed,
            sent: 0,
        };
        let Rest { owed, sent, .. } = &mut rest;
        send_counted(w, owed, sent).await
    }
}

/// `buf` whole, as [`send_vectored`] sends it.
async fn send_all(w: &OwnedWriteHalf, buf: &[u8]) -> io::Result<()> {
    send_counted(w, buf, &mut 0).await
}

/// `buf` from `sent` on, whole, as [`send_vectored`] sends it, counting in `sent` what went
/// (for a caller that keeps what did not when this is dropped: `send_owed`).
async fn send_counted(w: &OwnedWriteHalf, buf: &[u8], sent: &mut usize) -> io::Result<()> {
    while *sent < buf.len() {
        let n = send_vectored(w, &[io::IoSlice::new(&buf[*sent..])]).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        *sent += n;
    }
    Ok(())
}

/// What the socket takes of `buf` now, without waiting (WouldBlock if nothing), sent with
/// MSG_NOSIGNAL as [`send_vectored`] sends.
fn try_send(w: &OwnedWriteHalf, buf: &[u8]) -> io::Result<usize> {
    let s: &UnixStream = w.as_ref();
    s.try_io(tokio::io::Interest::WRITABLE, || {
        socket2::SockRef::from(s).send_with_flags(buf, libc::MSG_NOSIGNAL)
    })
}

/// One vectored send of `bufs` on `w`, waiting until the socket takes some of it: `sendmsg` with
/// MSG_NOSIGNAL, because tokio's `write_vectored` is a `writev` and its `write` a `write` (std's
/// `UnixStream` sends with MSG_NOSIGNAL only through `send`; its `TcpStream` does), each of which
/// raises SIGPIPE on a socket the peer closed, and a host that does not ignore SIGPIPE dies of
/// it (the Swift test process did). Every write on a local socket goes through this or
/// [`try_send`]. Cancel-safe: nothing is sent until the socket is writable, and then at once.
async fn send_vectored(w: &OwnedWriteHalf, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
    let s: &UnixStream = w.as_ref();
    loop {
        s.writable().await?;
        let sent = s.try_io(tokio::io::Interest::WRITABLE, || {
            socket2::SockRef::from(s).send_vectored_with_flags(bufs, libc::MSG_NOSIGNAL)
        });
        match sent {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// What completes a chunk whose prefix is `head` when its last `left` bytes were not written:
/// the rest of the prefix if some of it is not written (zeros there would be read as another
/// length), then zeros for the payload.
fn padding(head: [u8; chunk::PREFIX], left: usize) -> Vec<u8> {
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let written = chunk::PREFIX + len - left;
    let mut pad = Vec::with_capacity(left);
    if written < chunk::PREFIX {
        pad.extend_from_slice(&head[written..]);
    }
    pad.resize(left, 0);
    pad
}

/// The writing half of a local socket stream.
pub(crate) struct Writer {
    sock: Arc<Sock>,
}

impl Writer {
    pub(crate) async fn write(&mut self, bufs: &mut [Bytes]) -> Result<(), StreamError> {
        if let Some(code) = self.sock.stop_code() {
            return Err(StreamError::Stopped(code));
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Ok(());
        }
        let r = if total <= COALESCE {
            let mut one = Vec::with_capacity(chunk::PREFIX + total);
            one.extend_from_slice(&chunk::prefix(ChunkType::Data, total as u32));
            for b in bufs.iter() {
                one.extend_from_slice(b);
            }
            self.write_raw(&[&one]).await
        } else {
            // The buffers gathered into chunks of up to GATHER, each one vectored write:
            // a chunk and two syscalls per buffer made a lane batch of 4 KiB bodies cost four
            // syscalls a message and ~7 µs of CPU on each side (PERFORMANCE.md).
            let mut r = Ok(());
            // Where the next chunk starts: a buffer, and how much of it went.
            let (mut at, mut off) = (0, 0);
            while at < bufs.len() {
                if let Some(code) = self.sock.stop_code() {
                    return Err(StreamError::Stopped(code));
                }
                let mut len = 0;
                // The prefix's place first; it is known once the chunk's length is.
                let mut parts: Vec<&[u8]> =
                    Vec::with_capacity((bufs.len() - at).min(GATHER_MAX) + 1);
                parts.push(&[]);
                while at < bufs.len() && parts.len() <= GATHER_MAX {
                    let rest = &bufs[at][off..];
                    // What does not fit goes in the next chunk, and a buffer above GATHER
                    // starts a chunk of its own, so a large body begins on a chunk boundary
                    // and only a body above WRITE_CHUNK spans chunks (the reader takes each
                    // chunk whole, and a body across two chunks is a copy there: measured, a
                    // 1 MiB Push/Pull a third slower).
                    if len > 0 && len + rest.len() > GATHER {
                        break;
                    }
                    if rest.len() > GATHER {
                        let now = &rest[..rest.len().min(WRITE_CHUNK)];
                        parts.push(now);
                        len = now.len();
                        match now.len() < rest.len() {
                            true => off += now.len(),
                            false => (at, off) = (at + 1, 0),
                        }
                        break;
                    }
                    if !rest.is_empty() {
                        parts.push(rest);
                        len += rest.len();
                    }
                    (at, off) = (at + 1, 0);
                }
                if len == 0 {
                    break;
                }
                let p = chunk::prefix(ChunkType::Data, len as u32);
                parts[0] = &p;
                r = self.write_raw(&parts).await;
                if r.is_err() {
                    break;
                }
            }
            r
        };
        match r {
            Ok(()) => Ok(()),
            Err(_) => Err(self.failure().await),
        }
    }

    /// Writes one chunk (its prefix first, in `parts[0]`, then its payload), counting what is
    /// left of it so that a cancelled write can be completed before a RESET.
    async fn write_raw(&self, parts: &[&[u8]]) -> io::Result<()> {
        let w = self.sock.socket.write.lock().await;
        self.write_locked(&w, parts).await
    }

    /// Whether an earlier write of this stream was cancelled mid-chunk: the stream is broken
    /// (OutgoingTransfer::write is not cancel-safe; the transfer must be cancelled), whether
    /// the chunk is still unfinished or was completed with filler (`cut`) for an owed chunk.
    fn broken(&self) -> bool {
        self.sock.unfinished.load(Ordering::Acquire) > 0 || self.sock.cut.load(Ordering::Acquire)
    }

    /// [`Writer::write_raw`] with the socket's write lock held.
    async fn write_locked(&self, w: &OwnedWriteHalf, parts: &[&[u8]]) -> io::Result<()> {
        if self.broken() {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        // What is owed goes first: the rest of a STOP a cancelled `finish` wrote in part
        // (`send_owed`) must not have a chunk start inside it.
        let owed = std::mem::take(&mut *self.sock.pending.lock().unwrap());
        if !owed.is_empty() {
            self.sock.send_owed(w, owed).await?;
        }
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut head = [0u8; 8];
        head[..chunk::PREFIX].copy_from_slice(&parts[0][..chunk::PREFIX]);
        self.sock
            .unfinished_head
            .store(u64::from_le_bytes(head), Ordering::Release);
        // Nothing is owed until a byte of the chunk is written: a write cancelled before then
        // leaves the stream at a chunk boundary, where padding would be read as chunks.
        let mut written = 0;
        // One writev for the prefix and every part, as many as the kernel takes.
        let mut slices: Vec<io::IoSlice<'_>> = parts.iter().map(|p| io::IoSlice::new(p)).collect();
        let mut left = &mut slices[..];
        while !left.is_empty() {
            let n = send_vectored(w, left).await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            written += n;
            self.sock
                .unfinished
                .store(total - written, Ordering::Release);
            io::IoSlice::advance_slices(&mut left, n);
        }
        Ok(())
    }

    /// Why a write failed: the peer's STOP if it sent one before closing; otherwise a loss, as
    /// `stopped` reports it (this side's close if it ended the socket, else the peer's: a
    /// reader that walks away sends its STOP first, so a socket closed without one is a peer
    /// that went).
    async fn failure(&self) -> StreamError {
        match self.sock.settled().await {
            Some(code) => StreamError::Stopped(code),
            None => StreamError::Lost(self.sock.loss()),
        }
    }

    pub(crate) async fn finish(&mut self) -> Result<(), StreamError> {
        if let Some(code) = self.sock.stop_code() {
            return Err(StreamError::Stopped(code));
        }
        // Dropped with its FIN begun and not written (a full socket), the stream is spoiled:
        // `may_follow` would otherwise take what the peer writes after as a next exchange.
        let _unwritten = Unwritten(&self.sock);
        let written = async {
            let w = self.sock.socket.write.lock().await;
            if self.broken() {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            // Begun before it is written: on a kept socket the peer's next exchange may follow
            // this FIN at once, before this write returns (`may_follow`). Written only once it
            // was: a finish dropped before then spoils the stream (`Unwritten`), and the
            // socket ends as one not kept. Begun under the lock the owed chunks are queued
            // under, and with them taken: a STOP this side's reader owes goes before the FIN,
            // and one it would owe after it is not written (`Sock::stop_reading`).
            let owed = {
                let mut pending = self.sock.pending.lock().unwrap();
                self.sock.fin_begun.store(true, Ordering::Release);
                std::mem::take(&mut *pending)
            };
            if !owed.is_empty() {
                self.sock.send_owed(&w, owed).await?;
            }
            self.write_locked(&w, &[&chunk::prefix(ChunkType::Fin, 0)])
                .await
        };
        if written.await.is_err() {
            self.sock.spoil();
            return Err(self.failure().await);
        }
        self.sock.fin_written.store(true, Ordering::Release);
        self.sock.events.notify_waiters();
        // The kernel holds the bytes now: that is the receipt (PATTERNS §1.10). A STOP that
        // already arrived still wins.
        match self.sock.stop_code() {
            Some(code) => Err(StreamError::Stopped(code)),
            None => Ok(()),
        }
    }

    pub(crate) fn reset(&mut self, code: Code) {
        self.sock.owe(ChunkType::Reset, code);
    }

    pub(crate) async fn stopped(&self) -> Result<Code, StreamError> {
        match self.sock.settled().await {
            Some(code) => Ok(code),
            None => Err(StreamError::Lost(self.sock.loss())),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.sock.release();
    }
}

/// Held by a `finish`: spoils its stream when dropped with the FIN begun and not written.
struct Unwritten<'a>(&'a Sock);

impl Drop for Unwritten<'_> {
    fn drop(&mut self) {
        if self.0.fin_begun.load(Ordering::Acquire) && !self.0.fin_written.load(Ordering::Acquire) {
            self.0.spoil();
        }
    }
}

/// The reading half of a local socket stream: a byte channel the socket's pump fills.
pub(crate) struct Reader {
    channel: byte_channel::Reader,
    sock: Arc<Sock>,
    // The stream ended (FIN or reset read) or was stopped: nothing to tell the writer on drop.
    // Also set for the back direction of a one-way stream, which carries no stream of its own.
    stopped: bool,
}

impl Reader {
    pub(crate) async fn read_chunk(&mut self, max: usize) -> Result<Option<Bytes>, StreamError> {
        let r = self.channel.read_chunk(max).await;
        if !matches!(r, Ok(Some(_))) {
            self.stopped = true;
        }
        r
    }

    pub(crate) fn stop(&mut self, code: Code) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        // The writer finished: there is nothing to stop, and on a kept socket a STOP now could
        // reach the peer's next exchange instead (PROTOCOL.md §8.7).
        if self.sock.fin_read.load(Ordering::Acquire) {
            return;
        }
        // Decided first: stopped, the channel refuses the pump's next bytes, and the pump
        // may then read the request's FIN before it knows to drain to it (`drains`).
        self.sock.stop_reading(code);
        self.channel.stop(code);
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // A reader that walks away stops the writer, as QUIC's STOP_SENDING(0) does.
        self.stop(Code::NoError);
        self.sock.release();
    }
}

/// How a data connection's pump ends besides its peer's end of file: with the life it is
/// watched by (a runtime's or a listener's), and, on the listener's side, after `linger` once
/// that side is done with it (`Sock::lingered`). A dialler has no linger: it holds a
/// connection, and its budget slot, until the listener's end of file, which is how a
/// listener that has not read a transfer slows its dialler down (§8.5).
struct Watch {
    life: Arc<Life>,
    linger: Option<Duration>,
}

/// How a listener hands on the next exchange of a kept socket (§8.7): to its accept, as a
/// new stream, with the peer the socket was accepted from; and how long the socket waits for
/// that exchange before it is retired.
struct Next {
    to: tokio::sync::mpsc::UnboundedSender<IncomingRaw>,
    peer: Option<PeerIdentity>,
    window: usize,
    keep: Duration,
}

/// What a socket is to its side, besides its stream: how its pump ends (`watch`), a
/// listener's place in a process's share (`slot`) and hand-on of kept exchanges (`next`), a
/// dialler's kept socket's pool (`pool`).
#[derive(Default)]
struct Ends {
    watch: Option<Watch>,
    slot: Option<ShareSlot>,
    next: Option<Next>,
    pool: Option<std::sync::Weak<Pool>>,
}

/// Splits a connected socket into its halves and starts the pump that reads its chunks.
fn stream(
    s: UnixStream,
    window: usize,
    permit: Option<OwnedSemaphorePermit>,
    bidi: bool,
    ends: Ends,
) -> (SendHalf, RecvHalf) {
    let Ends {
        watch,
        slot,
        next,
        pool,
    } = ends;
    let (rd, wr) = s.into_split();
    let mut socket = Socket::new(wr, tokio::runtime::Handle::current(), slot);
    // A dialler's kept socket: it asked with KEEP, and goes back to `pool` (§8.7).
    socket.kept = AtomicBool::new(pool.is_some());
    socket.pool = pool;
    socket.permit = Mutex::new(permit);
    let sock = Arc::new(Sock::new(Arc::new(socket)));
    let (pw, pr) = byte_channel(window, None, None, None);
    tokio::spawn(pump(rd, pw, sock.clone(), watch, next));
    (
        SendHalf::Unix(Writer { sock: sock.clone() }),
        RecvHalf::Unix(Reader {
            channel: pr,
            sock,
            stopped: !bidi,
        }),
    )
}

/// Reads chunks until EOF: stream bytes into the byte channel, STOP to the writer; on a kept
/// socket, one exchange after another. Holds the stream's descriptor budget slot until the
/// peer is done with the socket too.
async fn pump(
    rd: OwnedReadHalf,
    pw: byte_channel::Writer,
    sock: Arc<Sock>,
    watch: Option<Watch>,
    next: Option<Next>,
) {
    let (current, mut now) = tokio::sync::watch::channel(sock.clone());
    let Some(Watch { life, linger }) = watch else {
        return read_chunks(rd, pw, sock, next, current).await;
    };
    let keep = next.as_ref().map(|n| n.keep);
    let reading = read_chunks(rd, pw, sock, next, current);
    tokio::pin!(reading);
    let cause = loop {
        // The stream the pump reads now: a kept socket's changes with each exchange.
        let sock = now.borrow_and_update().clone();
        tokio::select! {
            biased;
            _ = &mut reading => {
                // Reading ended (the peer's end of file, or nobody here uses the stream any
                // more). A write of owed chunks stuck on a peer that reads nothing still holds
                // the socket, with its descriptor and share slot: ended at the linger (§8.5).
                if let Some(linger) = linger {
                    if tokio::time::timeout(linger, sock.socket.write.lock()).await.is_err() {
                        sock.socket.shut();
                    }
                }
                return;
            }
            // The runtime (or listener) holding this stream shut down: the socket goes with
            // it, so the peer learns a loss at once rather than at its next write, and this
            // side reads its own close.
            cause = life.dead() => break cause,
            // This side has been done with the socket for `linger` and the peer has not closed
            // it: nobody here reads or writes it, so only the peer's end is lost.
            () = sock.lingered(linger) => break LossCause::LocallyClosed,
            // A kept socket with no next exchange in time: retired, and read to its end (the
            // linger bounds that).
            () = async {
                match keep {
                    Some(keep) => sock.retired(keep).await,
                    None => std::future::pending().await,
                }
            } => continue,
            _ = now.changed() => continue,
        }
    };
    let sock = now.borrow().clone();
    let _ = sock.ended.set(cause);
    // Not under the write lock: a flush to a peer that does not read holds it (§8.5).
    sock.socket.shut();
    reading.await;
}

/// The pump moves on to a kept socket's next stream (§8.7): the last one is over both ways,
/// nothing more is read for it, and its handles, if any are left, no longer touch the socket.
fn move_on(
    pw: &mut byte_channel::Writer,
    sock: &mut Arc<Sock>,
    npw: byte_channel::Writer,
    nsock: Arc<Sock>,
    current: &tokio::sync::watch::Sender<Arc<Sock>>,
) {
    drop(std::mem::replace(pw, npw));
    sock.pump_done.store(true, Ordering::Release);
    sock.events.notify_waiters();
    *sock = nsock;
    let _ = current.send(sock.clone());
}

/// A socket's read half and what it has read of the next chunk's prefix. A payload is read
/// into a buffer sized to it and the next prefix, not zeroed first, so that in the steady state
/// one `recvfrom` takes a payload and the prefix after it, where reading each apart took two
/// (PERFORMANCE.md). The buffer is one handed back to the process's free list if its size is
/// kept there ([`recycle`]), and goes back to it when the last frame read from it goes. The
/// prefix bytes read with a payload are copied out of it, so nothing kept here holds a
/// payload's buffer once it has been handed on.
struct ChunkIn {
    rd: OwnedReadHalf,
    next: [u8; chunk::PREFIX],
    // Bytes of `next` already read.
    have: usize,
    // Where payload buffers come from and go back to: the process's, but in a test.
    list: &'static recycle::Recycler,
}

impl ChunkIn {
    fn new(rd: OwnedReadHalf) -> Self {
        Self::with_list(rd, &recycle::SHARED)
    }

    fn with_list(rd: OwnedReadHalf, list: &'static recycle::Recycler) -> Self {
        Self {
            rd,
            next: [0; chunk::PREFIX],
            have: 0,
            list,
        }
    }

    /// A payload read by [`payload`](Self::payload), handed on: its buffer goes back to the
    /// free list when the last frame read from it goes.
    fn freeze(&self, payload: Vec<u8>) -> Bytes {
        self.list.freeze(payload)
    }

    /// The next chunk's prefix. Not cancel-safe, as the payload's read is not: the pump
    /// reads a socket to its end or drops it.
    async fn prefix(&mut self) -> io::Result<[u8; chunk::PREFIX]> {
        self.rd.read_exact(&mut self.next[self.have..]).await?;
        self.have = 0;
        Ok(self.next)
    }

    /// A payload of `len` bytes, reading the next chunk's prefix with it if it has come: no
    /// read takes more than the rest of the payload and that prefix. Its buffer's capacity is
    /// `recycle::class(len + PREFIX)`; [`freeze`](Self::freeze) hands it on.
    async fn payload(&mut self, len: usize) -> io::Result<Vec<u8>> {
        use bytes::BufMut;
        if len == 0 {
            return Ok(Vec::new());
        }
        let mut buf = self.list.take(len + chunk::PREFIX);
        while buf.len() < len {
            let limit = len + chunk::PREFIX - buf.len();
            if self.rd.read_buf(&mut (&mut buf).limit(limit)).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        self.have = buf.len() - len;
        self.next[..self.have].copy_from_slice(&buf[len..]);
        buf.truncate(len);
        Ok(buf)
    }
}

async fn read_chunks(
    rd: OwnedReadHalf,
    mut pw: byte_channel::Writer,
    mut sock: Arc<Sock>,
    next: Option<Next>,
    current: tokio::sync::watch::Sender<Arc<Sock>>,
) {
    let mut rd = ChunkIn::new(rd);
    let mut open = true; // the byte channel still takes bytes
    let mut first = true; // no chunk read yet
    loop {
        if !open && sock.handles.load(Ordering::Acquire) == 0 && !sock.keeps() && !sock.drains() {
            // Nobody here reads or writes this stream any more: closing makes a writer that
            // is still sending fail now (with the STOP it was sent) instead of filling a void.
            // A request let go after the reply's FIN on a kept socket is read to its FIN
            // instead (`drains`; the linger bounds it).
            break;
        }
        let Ok(p) = rd.prefix().await else { break };
        let (ty, len) = match chunk::decode_prefix(p, READ_CHUNK_LIMIT) {
            Ok(x) => x,
            Err(e) => {
                tracing::debug!(error = %e, "malformed chunk on a local socket stream");
                sock.spoil();
                if open {
                    pw.reset(Code::ProtocolError);
                }
                break;
            }
        };
        let Ok(payload) = rd.payload(len as usize).await else {
            break;
        };
        let was_first = std::mem::replace(&mut first, false);
        // A dialler's kept socket (§8.7): what the listener writes after a clean exchange
        // belongs to the next exchange begun on it, if one was; to none, it is a retirement
        // (or a broken listener) and the socket ends.
        if next.is_none() && !open && sock.socket.kept.load(Ordering::Acquire) {
            let mut turn = sock.socket.turn.lock().unwrap();
            if let Some((npw, nsock)) = turn.next.take() {
                drop(turn);
                // The exchange begun on it was dropped before its answer: the socket ends.
                let Some(nsock) = nsock.upgrade() else {
                    sock.spoil();
                    break;
                };
                move_on(&mut pw, &mut sock, npw, nsock, &current);
                open = true;
            } else if sock.keeps() {
                turn.retired = true;
                break;
            }
        }
        match ty {
            // A listener keeps a socket whose dialler asks first (§8.7); anywhere else, or
            // toward a dialler, KEEP breaks the protocol.
            ChunkType::Keep if was_first && next.is_some() => {
                sock.socket.kept.store(true, Ordering::Release);
            }
            ChunkType::Keep => {
                tracing::debug!("a KEEP chunk that is not a listener's socket's first");
                sock.spoil();
                if open {
                    pw.reset(Code::ProtocolError);
                }
                break;
            }
            // The next exchange on a kept socket: a new stream, handed to the listener's
            // accept, unless the socket was retired first (then it is not read: §8.7).
            ChunkType::Data
                if !open
                    && sock.fin_read.load(Ordering::Acquire)
                    && sock.socket.kept.load(Ordering::Acquire) =>
            {
                let Some(n) = next.as_ref() else { break };
                if !sock.may_follow() {
                    // Before this side's FIN, or after a STOP or RESET: not how a dialler
                    // starts the next exchange. The socket ends with this stream.
                    tracing::debug!("an exchange on a kept socket before the last one ended");
                    sock.spoil();
                    break;
                }
                {
                    let mut turn = sock.socket.turn.lock().unwrap();
                    if turn.retired {
                        continue;
                    }
                    turn.streams += 1;
                }
                let (npw, npr) = byte_channel(n.window, None, None, None);
                let nsock = Arc::new(Sock::new(sock.socket.clone()));
                let raw = IncomingRaw {
                    recv: RecvHalf::Unix(Reader {
                        channel: npr,
                        sock: nsock.clone(),
                        stopped: false,
                    }),
                    send: Some(SendHalf::Unix(Writer {
                        sock: nsock.clone(),
                    })),
                    peer: n.peer.clone(),
                    live: None,
                };
                move_on(&mut pw, &mut sock, npw, nsock, &current);
                open = true;
                if n.to.send(raw).is_err() {
                    break; // the listener is gone
                }
                if pw.write(rd.freeze(payload)).await.is_err() {
                    open = false;
                }
            }
            ChunkType::Data => {
                if open && pw.write(rd.freeze(payload)).await.is_err() {
                    open = false; // our reader stopped: discard the rest
                }
            }
            ChunkType::Fin => {
                // A request drained to its end (`drains`) ended cleanly too: the socket is kept.
                if open || sock.drains() {
                    // Before the reader can see the end: the stream is then over this way.
                    let _ = sock.fin_read_at.set(std::time::Instant::now());
                    sock.fin_read.store(true, Ordering::Release);
                    sock.events.notify_waiters();
                }
                if open {
                    let _ = pw.finish();
                    open = false;
                }
            }
            ChunkType::Reset => {
                sock.spoil();
                if open {
                    pw.reset(chunk::decode_code(&payload).unwrap_or(Code::Canceled));
                    open = false;
                }
            }
            ChunkType::Stop => {
                let code = chunk::decode_code(&payload).unwrap_or(Code::NoError);
                sock.stop.lock().unwrap().get_or_insert(code);
                sock.spoil();
            }
        }
    }
    // EOF without FIN or RESET: the writing process went away (a deliberate cancel is a RESET
    // chunk), so the reader learns a loss, never a complete payload.
    if open {
        pw.lose(sock.loss());
    }
    drop(pw);
    // A kept socket ends here: it is not taken again, and an exchange begun on it that the
    // listener never answered learns the loss too.
    let socket = sock.socket.clone();
    let begun = {
        let mut turn = socket.turn.lock().unwrap();
        turn.retired = true;
        turn.next.take()
    };
    if let Some((mut npw, nsock)) = begun {
        // As the last stream's: this side's close if it ended the socket, else the peer's.
        let cause = sock.loss();
        npw.lose(cause.clone());
        if let Some(nsock) = nsock.upgrade() {
            let _ = nsock.ended.set(cause);
            nsock.pump_done.store(true, Ordering::Release);
            nsock.events.notify_waiters();
        }
    }
    sock.spoil();
    sock.pump_done.store(true, Ordering::Release);
    sock.events.notify_waiters();
    // The budget slot is given back when the peer is done with the socket (§8.5).
    drop(socket.permit.lock().unwrap().take());
    if socket.kept.load(Ordering::Acquire) {
        socket.shut();
    }
}

/// One connect that never blocks the thread: the socket, or the kernel's answer. A listener
/// whose backlog is full answers `WouldBlock` (AF_UNIX refuses with EAGAIN a non-blocking
/// connect it cannot queue; a blocking one would hold this runtime's thread until it could).
async fn connect_socket(target: &UnixTarget) -> io::Result<UnixStream> {
    use std::os::unix::ffi::OsStrExt;
    let addr = match target {
        UnixTarget::Path(p) => socket2::SockAddr::unix(p)?,
        // An abstract name is the name after a NUL byte, with no NUL after it.
        UnixTarget::Abstract(name) => {
            let bytes: Vec<u8> = std::iter::once(0).chain(name.bytes()).collect();
            socket2::SockAddr::unix(std::ffi::OsStr::from_bytes(&bytes))?
        }
    };
    let s = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)?;
    s.set_nonblocking(true)?;
    // AF_UNIX completes or refuses a stream connect at once: there is no EINPROGRESS to wait on.
    s.connect(&addr)?;
    let s = UnixStream::from_std(std::os::unix::net::UnixStream::from(
        std::os::fd::OwnedFd::from(s),
    ))?;
    // As tokio's own connect does: wait until the socket is writable and take its error, so a
    // connection queued on a listener that closed meanwhile (the kernel resets it) is refused
    // here rather than read as a session lost after it began.
    s.writable().await?;
    match s.take_error()? {
        Some(e) => Err(e),
        None => Ok(s),
    }
}

/// [`connect_socket`], trying again while the listener's backlog is full (after 1 ms, doubling
/// to at most 64 ms) until `life` ends, with its cause. The listener is there and behind on its
/// accepts: the connect waits, as a QUIC stream waits for its peer's credit, bounded by the
/// caller's own deadline (`connect_timeout`, `send_timeout`, a request's). A hostile process
/// flooding the listener's backlog must not end another dialler's session, or fail its dial at
/// once.
async fn connect_when_room(
    target: &UnixTarget,
    life: &Life,
) -> Result<io::Result<UnixStream>, LossCause> {
    let mut attempt = 0;
    loop {
        match connect_socket(target).await {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(1 << attempt)) => {
                    attempt = (attempt + 1).min(6);
                }
                c = life.dead() => return Err(c),
            },
            r => return Ok(r),
        }
    }
}

fn credentials(s: &UnixStream) -> Option<PeerIdentity> {
    s.peer_cred().ok().map(|c| PeerIdentity::Local {
        uid: c.uid(),
        gid: c.gid(),
        pid: c.pid().unwrap_or(0),
    })
}

struct Inner {
    target: UnixTarget,
    life: Arc<Life>,
    /// The dialling runtime's life: its streams, OS connections that outlive the session,
    /// end when the runtime shuts down or its drain ends (FAILURE_MODEL §2).
    runtime: Arc<Life>,
    budget: Arc<Semaphore>,
    window: usize,
    peer: Option<PeerIdentity>,
    /// The listener keeps sockets (its HELLO set FEATURES bit 4, §8.7): exchanges ask for it.
    keep: AtomicBool,
    /// Kept sockets idle between exchanges.
    pool: Arc<Pool>,
}

/// The dialling side of a local socket "connection": the control socket, and the address
/// every further stream connects to.
#[derive(Clone)]
pub(crate) struct Conn {
    inner: Arc<Inner>,
}

/// Connects the control socket; the caller runs HELLO on the returned halves.
pub(crate) async fn connect(
    target: &UnixTarget,
    limits: &Limits,
    runtime: Arc<Life>,
) -> Result<(Conn, SendHalf, RecvHalf), Error> {
    let connected = connect_when_room(target, &runtime)
        .await
        .map_err(|_| Error::Closed)?;
    let s = connected.map_err(|e| {
        Error::Io(io::Error::new(
            e.kind(),
            format!("cannot connect to local socket {target:?}: {e}"),
        ))
    })?;
    let peer = credentials(&s);
    let budget = Arc::new(Semaphore::new(limits.max_local_streams as usize));
    let (send, recv) = stream(
        s,
        limits.stream_receive_window as usize,
        None,
        true,
        Ends::default(),
    );
    let conn = Conn {
        inner: Arc::new(Inner {
            target: target.clone(),
            life: Life::new(),
            runtime,
            budget,
            window: limits.stream_receive_window as usize,
            peer,
            keep: AtomicBool::new(false),
            pool: Arc::default(),
        }),
    };
    Ok((conn, send, recv))
}

impl Conn {
    /// Whether the listener keeps sockets (its HELLO set FEATURES bit 4, §8.7): from now on
    /// exchanges ask for theirs to be kept, and take an idle kept one when there is one.
    pub(crate) fn keep_sockets(&self, keep: bool) {
        self.inner.keep.store(keep, Ordering::Release);
    }

    /// A stream for an exchange: on a kept socket idle for less than [`KEPT_REUSE`] when
    /// there is one and the listener keeps sockets, else on a new OS connection, kept if the
    /// listener keeps sockets (§8.7).
    pub(crate) async fn open_exchange(&self) -> Result<(SendHalf, RecvHalf), Error> {
        let i = &self.inner;
        if !i.keep.load(Ordering::Acquire) {
            return self.open(true).await;
        }
        if let Some(c) = i.life.cause() {
            return Err(Error::ConnectionLost(c));
        }
        loop {
            // An idle kept socket holds its budget slot: taking it needs no other.
            let Some((socket, since)) = i.pool.idle.lock().unwrap().pop() else {
                break;
            };
            if since.elapsed() >= KEPT_REUSE {
                // Idle so long the listener may be retiring it: ended here instead.
                socket.shut();
                continue;
            }
            let sock = Arc::new(Sock::new(socket.clone()));
            let (pw, pr) = byte_channel(i.window, None, None, None);
            {
                let mut turn = socket.turn.lock().unwrap();
                if turn.retired {
                    continue;
                }
                turn.streams += 1;
                turn.next = Some((pw, Arc::downgrade(&sock)));
            }
            return Ok((
                SendHalf::Unix(Writer { sock: sock.clone() }),
                RecvHalf::Unix(Reader {
                    channel: pr,
                    sock,
                    stopped: false,
                }),
            ));
        }
        self.open_socket(true, true).await
    }

    /// A new stream is a new OS connection, bounded by max_local_streams (PATTERNS §1.10).
    pub(crate) async fn open(&self, bidi: bool) -> Result<(SendHalf, RecvHalf), Error> {
        self.open_socket(bidi, false).await
    }

    /// A stream on a new OS connection; `keep`: it asks the listener to keep it (KEEP first).
    async fn open_socket(&self, bidi: bool, keep: bool) -> Result<(SendHalf, RecvHalf), Error> {
        let i = &self.inner;
        if i.budget.available_permits() == 0 {
            // Every slot is taken: an idle kept socket gives its own back (its pump ends at the
            // shutdown, and the slot with it) rather than wait for its listener to retire it.
            if let Some((idle, _)) = i.pool.idle.lock().unwrap().pop() {
                idle.shut();
            }
        }
        if let Some(c) = i.life.cause() {
            return Err(Error::ConnectionLost(c));
        }
        let permit = tokio::select! {
            p = i.budget.clone().acquire_owned() => p.map_err(|_| Error::Closed)?,
            c = i.life.dead() => return Err(Error::ConnectionLost(c)),
        };
        let connected = connect_when_room(&i.target, &i.life)
            .await
            .map_err(Error::ConnectionLost)?;
        // KEEP first: five bytes into a socket just connected, whose buffer is empty.
        if let (Ok(s), true) = (&connected, keep) {
            // A send that fails means a listener that refused and closed the socket as it
            // accepted it (§8.6): the pump reads its STOP and RESET, as for any stream.
            // MSG_NOSIGNAL: a closed socket must not raise SIGPIPE in a host that does not ignore it
            // (a Swift process died of it).
            let _ = socket2::SockRef::from(s)
                .send_with_flags(&chunk::prefix(ChunkType::Keep, 0), libc::MSG_NOSIGNAL);
        }
        match connected {
            Ok(s) => Ok(stream(
                s,
                i.window,
                Some(permit),
                bidi,
                Ends {
                    watch: Some(Watch {
                        life: i.runtime.clone(),
                        linger: None,
                    }),
                    pool: keep.then(|| Arc::downgrade(&i.pool)),
                    ..Ends::default()
                },
            )),
            Err(e) => {
                // Nobody answers on the address: the peer is gone (the kernel said so).
                tracing::debug!(error = %e, "local peer went away");
                i.life.kill(LossCause::PeerClosed);
                Err(Error::ConnectionLost(LossCause::PeerClosed))
            }
        }
    }

    pub(crate) fn close(&self) {
        self.inner.life.kill(LossCause::LocallyClosed);
        self.inner.pool.empty();
    }

    /// Marks the connection dead (its control socket ended).
    pub(crate) fn lost(&self, cause: LossCause) {
        self.inner.life.kill(cause);
        self.inner.pool.empty();
    }

    pub(crate) async fn closed(&self) -> LossCause {
        self.inner.life.dead().await
    }

    pub(crate) fn loss(&self) -> Option<LossCause> {
        self.inner.life.cause()
    }

    pub(crate) fn peer(&self) -> Option<PeerIdentity> {
        self.inner.peer.clone()
    }
}

/// A bound local socket. Dropping it removes the socket file, unless a later bind in this
/// process has taken the path since.
pub(crate) struct Bound {
    socket: Arc<Listening>,
    window: usize,
    linger: Duration,
    shares: Arc<Shares>,
    share: usize,
    /// The next exchanges of kept sockets (§8.7), from their pumps, and the sender each pump
    /// is given.
    kept: tokio::sync::mpsc::UnboundedReceiver<IncomingRaw>,
    keep_to: tokio::sync::mpsc::UnboundedSender<IncomingRaw>,
}

/// A bound local socket's listening socket and file, shared by its accept task ([`Bound`]) and
/// its listener's [`Closer`].
struct Listening {
    listener: UnixListener,
    /// The socket file, until it is released (once, by whichever of the closer and the drop
    /// comes first: a file released here may be another process's by the second).
    path: Mutex<Option<PathBuf>>,
    /// This binding's entry in PATHS.
    id: u64,
    /// Set by the closer before it shuts the socket down: from then on the accept fails at
    /// once. Not left to the socket: a listening socket shut down for reading stays readable
    /// and its accept answers EAGAIN, and tokio's `accept()` retries that within one poll for
    /// ever (it keeps a closed state's readiness, and gives back the budget unit of a try that
    /// made no progress), so the accept task would spin.
    closed: AtomicBool,
}

impl Listening {
    /// Removes the socket file and its PATHS entry, unless a later bind in this process has
    /// taken the path since; once.
    fn release(&self) {
        let taken = self
            .path
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(p) = taken else { return };
        let mut paths = PATHS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A later bind in this process took the path: the file is its socket now.
        if paths.get(&p).is_some_and(|b| b.id != self.id) {
            return;
        }
        paths.remove(&p);
        let _ = std::fs::remove_file(&p);
    }
}

/// Closes a bound local socket at once, from outside its accept task: a listener's `close`
/// (and its runtime's shutdown) returns with no connect accepted from then on, where the accept
/// task, which drops [`Bound`], may run only later (a connect the kernel accepted meanwhile
/// would be a connection lost, not a dial refused).
#[derive(Clone)]
pub(crate) struct Closer(std::sync::Weak<Listening>);

impl Closer {
    pub(crate) fn close(&self) {
        let Some(socket) = self.0.upgrade() else {
            return; // the accept task has ended and closed it
        };
        socket.closed.store(true, Ordering::Release);
        // The kernel refuses a connect to a listening socket whose receiving side is shut
        // down (ECONNREFUSED), which is what covers an abstract name; a path's file goes
        // too, so a dialler finds nothing there and a new bind may take it.
        let _ = socket2::SockRef::from(&socket.listener).shutdown(std::net::Shutdown::Read);
        socket.release();
    }
}

/// How long a kept socket waits for its next exchange at least (§8.7): a dialler reuses only
/// a socket idle for less than half of it ([`KEPT_REUSE`]).
pub(crate) const KEPT_IDLE_MIN: Duration = Duration::from_secs(2);

/// The longest a dialler lets a kept socket sit idle before it would reuse it (§8.7).
pub(crate) const KEPT_REUSE: Duration = Duration::from_secs(1);

/// The OS connections an AF_UNIX listener holds, counted per peer process (SO_PEERCRED's
/// pid; 0 where the kernel gave none). Each is a descriptor here whatever the peer does with
/// it, and a dialler's own `max_local_streams` is a courtesy a hostile process need not keep.
#[derive(Default)]
struct Shares(Mutex<std::collections::HashMap<i32, usize>>);

impl Shares {
    /// A place in `pid`'s share of at most `most`, or None when it holds them all.
    fn take(self: &Arc<Self>, pid: i32, most: usize) -> Option<ShareSlot> {
        let mut held = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = held.entry(pid).or_insert(0);
        if *n >= most {
            return None;
        }
        *n += 1;
        Some(ShareSlot {
            shares: self.clone(),
            pid,
        })
    }
}

/// One accepted connection's place in its peer process's share.
struct ShareSlot {
    shares: Arc<Shares>,
    pid: i32,
}

impl Drop for ShareSlot {
    fn drop(&mut self) {
        let mut held = self
            .shares
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = held.get_mut(&self.pid) {
            *n -= 1;
            // No entry outlives its last connection, so the table is bounded by the shares held.
            if *n == 0 {
                held.remove(&self.pid);
            }
        }
    }
}

/// A socket path bound in this process: the bind's id, the lives it lasts for (the
/// listener's and its runtime's) and the socket file's inode.
struct PathBinding {
    id: u64,
    lives: [Arc<Life>; 2],
    inode: u64,
}

/// The socket paths bound in this process. A path whose listener or runtime has ended is free
/// at once, before its accept task next runs and closes the socket. A bind holds the lock from
/// its first look at the file to its record of the new binding, and a binding's end holds it
/// from its look at the record to its removal of the file, so neither acts on the other's file:
/// when they raced on two threads, the old binding's end removed the new one's socket file
/// (made, not yet recorded), or the file the bind was replacing (ENOENT).
static PATHS: std::sync::LazyLock<Mutex<std::collections::HashMap<PathBuf, PathBinding>>> =
    std::sync::LazyLock::new(Mutex::default);

fn inode(p: &PathBuf) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).ok().map(|m| m.ino())
}

/// Whether the socket file at `p` is one a listener or runtime of this process bound and has
/// ended since (the same file: another process may have replaced it).
fn ended_here(paths: &std::collections::HashMap<PathBuf, PathBinding>, p: &PathBuf) -> bool {
    paths
        .get(p)
        .is_some_and(|b| b.lives.iter().any(|l| l.cause().is_some()) && inode(p) == Some(b.inode))
}

/// Whether a process listens on the socket file at `p`: a connect without blocking (under
/// [`PATHS`]' lock) is accepted, or refused for a full backlog (someone listens, busy).
fn listened_on(p: &std::path::Path) -> bool {
    let Ok(s) = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None) else {
        return false;
    };
    let Ok(addr) = socket2::SockAddr::unix(p) else {
        return false;
    };
    if s.set_nonblocking(true).is_err() {
        return false;
    }
    match s.connect(&addr) {
        Ok(()) => true,
        Err(e) => e.kind() == io::ErrorKind::WouldBlock,
    }
}

/// Binds `target`, for as long as both `lives` (the listener's and its runtime's) last. A
/// stale socket file nobody listens on is replaced, and so is one whose listener in this process
/// has ended; a live one is refused.
pub(crate) fn bind(
    target: &UnixTarget,
    limits: &Limits,
    lives: [Arc<Life>; 2],
) -> Result<Bound, Error> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let (keep_to, kept) = tokio::sync::mpsc::unbounded_channel();
    let (listener, path) = match target {
        UnixTarget::Path(p) => {
            // Held to the record of the new binding (PATHS).
            let mut paths = PATHS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if p.exists() && ended_here(&paths, p) {
                std::fs::remove_file(p)?;
            }
            if p.exists() {
                use std::os::unix::fs::FileTypeExt;
                let is_socket = std::fs::symlink_metadata(p)?.file_type().is_socket();
                let live = is_socket && listened_on(p);
                if !is_socket || live {
                    return Err(Error::Io(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!(
                            "{} {}",
                            p.display(),
                            if live {
                                "is in use"
                            } else {
                                "exists and is not a socket"
                            }
                        ),
                    )));
                }
                std::fs::remove_file(p)?;
            }
            let listener = UnixListener::bind(p)?;
            if let Some(inode) = inode(p) {
                let binding = PathBinding { id, lives, inode };
                paths.insert(p.clone(), binding);
            }
            drop(paths);
            (listener, Some(p.clone()))
        }
        UnixTarget::Abstract(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
            let l = std::os::unix::net::UnixListener::bind_addr(&addr)?;
            l.set_nonblocking(true)?;
            (UnixListener::from_std(l)?, None)
        }
    };
    Ok(Bound {
        socket: Arc::new(Listening {
            listener,
            path: Mutex::new(path),
            id,
            closed: AtomicBool::new(false),
        }),
        window: limits.stream_receive_window as usize,
        linger: limits.idle_timeout,
        shares: Arc::default(),
        share: limits.max_local_peer_connections,
        kept,
        keep_to,
    })
}

impl Bound {
    /// What closes this socket at once from elsewhere (the listener's `close`).
    pub(crate) fn closer(&self) -> Closer {
        Closer(Arc::downgrade(&self.socket))
    }

    /// The next OS connection within its peer process's share, as a stream whose type byte
    /// is still unread. A connection past the share is refused as it is accepted: a STOP
    /// chunk and a RESET chunk with LIMIT_EXCEEDED, sent without waiting (the socket is new,
    /// its buffer empty), then closed. So a process that floods the listener holds no more of
    /// its descriptors than its share, and costs the others one accept each (PROTOCOL §8.6).
    /// Cancel-safe: nothing is held between one accept and the next.
    pub(crate) async fn accept(&mut self, watch: Arc<Life>) -> io::Result<IncomingRaw> {
        loop {
            let s = tokio::select! {
                // The next exchange of a kept socket: a stream as an accepted one is.
                Some(raw) = self.kept.recv() => return Ok(raw),
                r = std::future::poll_fn(|cx| poll_accept(&self.socket, cx)) => r?.0,
            };
            let peer = credentials(&s);
            let pid = match &peer {
                Some(PeerIdentity::Local { pid, .. }) => *pid,
                _ => 0,
            };
            let Some(slot) = self.shares.take(pid, self.share) else {
                tracing::debug!(
                    pid,
                    max_local_peer_connections = self.share,
                    "a local connection refused"
                );
                // STOP for the dialler's direction, RESET for this one (the reply or HELLO
                // it may wait for), as a QUIC listener refuses a stream it never reads.
                let mut refusal = chunk::code_chunk(ChunkType::Stop, Code::LimitExceeded);
                refusal.extend(chunk::code_chunk(ChunkType::Reset, Code::LimitExceeded));
                // A plain send, not tokio's `try_write`, which may answer WouldBlock from
                // readiness it has not learned yet for a socket this new.
                let _ = socket2::SockRef::from(&s).send_with_flags(&refusal, libc::MSG_NOSIGNAL);
                continue;
            };
            let watch = Watch {
                life: watch,
                linger: Some(self.linger),
            };
            // A kept socket waits for its next exchange as long as any connection may sit
            // silent here, and never less than the dialler's reuse assumes (§8.7).
            let next = Next {
                to: self.keep_to.clone(),
                peer: peer.clone(),
                window: self.window,
                keep: self.linger.max(KEPT_IDLE_MIN),
            };
            let ends = Ends {
                watch: Some(watch),
                slot: Some(slot),
                next: Some(next),
                pool: None,
            };
            let (send, recv) = stream(s, self.window, None, true, ends);
            return Ok(IncomingRaw {
                recv,
                send: Some(send),
                peer,
                live: None,
            });
        }
    }
}

/// The listening socket's next connection, or an error once the closer has run.
fn poll_accept(
    socket: &Listening,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<io::Result<(UnixStream, tokio::net::unix::SocketAddr)>> {
    if socket.closed.load(Ordering::Acquire) {
        let closed = io::Error::new(io::ErrorKind::NotConnected, "the listener closed");
        return std::task::Poll::Ready(Err(closed));
    }
    socket.listener.poll_accept(cx)
}

impl Drop for Bound {
    fn drop(&mut self) {
        self.socket.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process's share is counted per pid, given back as each connection's slot is dropped
    /// (its descriptor closed), and its entry leaves the table with its last connection, so a
    /// listener remembers no process it no longer holds a connection from.
    #[test]
    fn a_share_is_per_process_and_given_back_when_its_connections_close() {
        let shares = Arc::new(Shares::default());
        let a: Vec<_> = (0..3).map(|_| shares.take(7, 3).unwrap()).collect();
        assert!(shares.take(7, 3).is_none(), "the fourth from pid 7");
        let other = shares
            .take(8, 3)
            .expect("another process has its own share");
        drop(other);
        let mut a = a.into_iter();
        drop(a.next());
        let again = shares
            .take(7, 3)
            .expect("a place given back is taken again");
        drop((again, a));
        assert!(
            shares.0.lock().unwrap().is_empty(),
            "no entry outlives its connections"
        );
    }

    /// A listener busy enough that its backlog is full (a flood of connects from another
    /// process, say) is behind, not gone: a session's connect and a stream's wait until there
    /// is room, and the dialler's session lives on. Before, the kernel's EAGAIN failed the
    /// dial at once and ended a session as though the listener had gone away, and over an
    /// abstract name the connect blocked the thread.
    async fn a_stream_waits_for_room_in_a_full_backlog(
        target: UnixTarget,
        listen_at: socket2::SockAddr,
    ) {
        use socket2::{Domain, Socket, Type};
        let listener = Socket::new(Domain::UNIX, Type::STREAM, None).unwrap();
        listener.bind(&listen_at).unwrap();
        listener.listen(1).unwrap();
        // Connects until the kernel refuses: the backlog is full.
        let fill = |queued: &mut Vec<Socket>| loop {
            let s = Socket::new(Domain::UNIX, Type::STREAM, None).unwrap();
            s.set_nonblocking(true).unwrap();
            match s.connect(&listen_at) {
                Ok(()) => queued.push(s),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        };
        let mut queued = Vec::new();
        fill(&mut queued);
        assert!(!queued.is_empty());
        // The session's own connect waits too, and gets in once the listener takes one.
        let connecting = tokio::spawn({
            let target = target.clone();
            async move { connect(&target, &Limits::default(), Life::new()).await }
        });
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        assert!(
            !connecting.is_finished(),
            "{:?}",
            connecting.await.map(|r| r.is_ok())
        );
        let _taken = listener.accept().unwrap();
        let (conn, _send, _recv) = tokio::time::timeout(Duration::from_secs(10), connecting)
            .await
            .expect("the connect gets in once there is room")
            .unwrap()
            .expect("a session's socket");
        fill(&mut queued);
        let opening = tokio::spawn({
            let conn = conn.clone();
            async move { conn.open(true).await.map(|_| ()) }
        });
        // On this one thread the open runs its first connect before the test goes on.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        assert!(!opening.is_finished(), "{:?}", opening.await);
        assert_eq!(conn.loss(), None, "the session lives on");
        // The listener takes one from its backlog: the stream's connect gets in.
        let _taken_too = listener.accept().unwrap();
        tokio::time::timeout(Duration::from_secs(10), opening)
            .await
            .expect("the open connects once there is room")
            .unwrap()
            .expect("a stream");
        assert_eq!(conn.loss(), None);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_stream_waits_for_room_in_a_full_backlog_at_a_path() {
        let dir = std::env::temp_dir().join(format!("weida-backlog-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let at = socket2::SockAddr::unix(&dir).unwrap();
        a_stream_waits_for_room_in_a_full_backlog(UnixTarget::Path(dir.clone()), at).await;
        let _ = std::fs::remove_file(&dir);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_stream_waits_for_room_in_a_full_backlog_at_an_abstract_name() {
        use std::os::unix::ffi::OsStrExt;
        let name = format!("weida-backlog-{}", std::process::id());
        let bytes: Vec<u8> = std::iter::once(0).chain(name.bytes()).collect();
        let at = socket2::SockAddr::unix(std::ffi::OsStr::from_bytes(&bytes)).unwrap();
        a_stream_waits_for_room_in_a_full_backlog(UnixTarget::Abstract(name), at).await;
    }

    /// A local socket stream on `a`'s halves, as the tests by hand use them.
    fn halves(a: UnixStream, ends: Ends) -> (Writer, Reader) {
        let (SendHalf::Unix(w), RecvHalf::Unix(r)) = stream(a, 1 << 16, None, true, ends) else {
            unreachable!("a local socket's halves")
        };
        (w, r)
    }

    /// A write of 4 MiB into a socket nobody reads, polled once: it stops inside its first
    /// chunk and is cancelled there.
    async fn cut_a_write(w: &mut Writer) {
        let mut big = [Bytes::from(vec![7u8; 4 << 20])];
        tokio::select! {
            biased;
            _ = w.write(&mut big) => panic!("4 MiB into a socket nobody reads"),
            () = std::future::ready(()) => {}
        }
        assert!(w.sock.unfinished.load(Ordering::Acquire) > 0);
    }

    /// The next chunk on `s`, as a peer by hand reads it: its type and payload.
    async fn chunk_from(s: &mut UnixStream) -> (ChunkType, Vec<u8>) {
        use tokio::io::AsyncReadExt as _;
        let mut p = [0u8; chunk::PREFIX];
        s.read_exact(&mut p).await.unwrap();
        let (ty, len) = chunk::decode_prefix(p, u32::MAX).unwrap();
        let mut payload = vec![0u8; len as usize];
        s.read_exact(&mut payload).await.unwrap();
        (ty, payload)
    }

    /// A listener by hand for the dialler's side of kept sockets (§8.7): it reads from `s`
    /// KEEP (when `first`) and an exchange to its FIN, and answers with `reply` and FIN.
    async fn answer_kept(s: &mut UnixStream, first: bool, reply: &[u8]) {
        use tokio::io::AsyncWriteExt as _;
        let mut got = Vec::new();
        loop {
            let (ty, _) = chunk_from(s).await;
            got.push(ty);
            if ty == ChunkType::Fin {
                break;
            }
        }
        let expected: &[ChunkType] = match first {
            true => &[ChunkType::Keep, ChunkType::Data, ChunkType::Fin],
            false => &[ChunkType::Data, ChunkType::Fin],
        };
        assert_eq!(got, expected);
        if reply.is_empty() {
            return;
        }
        let mut out = chunk::prefix(ChunkType::Data, reply.len() as u32).to_vec();
        out.extend_from_slice(reply);
        out.extend_from_slice(&chunk::prefix(ChunkType::Fin, 0));
        s.write_all(&out).await.unwrap();
    }

    /// One exchange from the dialler's side: `body` and FIN, then the reply read to its end.
    async fn exchange_on(conn: &Conn, body: &'static [u8]) -> Result<Vec<u8>, StreamError> {
        let (mut send, mut recv) = conn.open_exchange().await.unwrap();
        send.write(Bytes::from_static(body)).await?;
        let finished = send.finish().await.map(drop);
        let mut reply = Vec::new();
        while let Some(b) = recv.read_chunk(1 << 16).await? {
            reply.extend_from_slice(&b);
        }
        finished?;
        Ok(reply)
    }

    /// `exchange_on` in a task of its own, for the listener by hand to answer meanwhile.
    fn begin(
        conn: &Conn,
        body: &'static [u8],
    ) -> tokio::task::JoinHandle<Result<Vec<u8>, StreamError>> {
        let conn = conn.clone();
        tokio::spawn(async move { exchange_on(&conn, body).await })
    }

    /// A listener by hand at a fresh path, a dialler's connection to it whose listener keeps
    /// sockets, and that connection's first exchange answered on a kept socket, now idle in
    /// the dialler's pool: the listener, the connection, the kept socket (and the control
    /// socket and the path, to hold and remove).
    async fn kept_after_one_exchange(
        name: &str,
        limits: Limits,
    ) -> (UnixListener, Conn, UnixStream, UnixStream, PathBuf) {
        let path = std::env::temp_dir().join(format!("weida-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        let target = UnixTarget::Path(path.clone());
        let (conn, _send, _recv) = connect(&target, &limits, Life::new()).await.unwrap();
        let (control, _) = listener.accept().await.unwrap();
        conn.keep_sockets(true);
        let first = begin(&conn, b"one");
        let (mut kept, _) = listener.accept().await.unwrap();
        answer_kept(&mut kept, true, b"1").await;
        assert_eq!(first.await.unwrap().unwrap(), b"1");
        (listener, conn, kept, control, path)
    }

    /// A write of many buffers goes as DATA chunks of up to 64 KiB of gathered buffers, each
    /// one vectored write, a buffer above that in chunks of its own of at most 1 MiB, and the
    /// bytes are the buffers' in order: a lane's batch of 4 KiB bodies was a chunk (and two
    /// syscalls) per buffer.
    #[tokio::test(flavor = "current_thread")]
    async fn a_write_of_many_buffers_is_gathered_into_chunks_of_up_to_64_kib() {
        use tokio::io::AsyncReadExt as _;
        let within = tokio::time::timeout(Duration::from_secs(30), async {
            let path = std::env::temp_dir().join(format!("weida-gather-{}", std::process::id()));
            let _ = std::fs::remove_file(&path);
            let listener = UnixListener::bind(&path).unwrap();
            let target = UnixTarget::Path(path.clone());
            let (conn, _send, _recv) = connect(&target, &Limits::default(), Life::new())
                .await
                .unwrap();
            let (_control, _) = listener.accept().await.unwrap();
            let (mut send, _recv) = conn.open(false).await.unwrap();
            let (mut socket, _) = listener.accept().await.unwrap();
            // 2000 small buffers (a fifth empty) and one of 2.5 MiB after the 600th: more
            // bytes than a chunk holds, and more buffers than one writev takes (GATHER_MAX).
            let mut bufs: Vec<Bytes> = (0..2000u32)
                .map(|i| Bytes::from(vec![i as u8; (i % 5 * 3) as usize]))
                .collect();
            bufs.insert(600, Bytes::from(vec![0xab; 5 << 19]));
            // Then 40 of 3000 bytes: 21 fill a chunk as far as 64 KiB allows.
            let mut more: Vec<Bytes> = (0..40u8).map(|i| Bytes::from(vec![i; 3000])).collect();
            // Then the edges: a buffer of exactly GATHER, one of exactly WRITE_CHUNK, one byte
            // more than that, and small ones behind it.
            let mut edges: Vec<Bytes> = [GATHER, 10, WRITE_CHUNK, WRITE_CHUNK + 1, 20, 30]
                .iter()
                .enumerate()
                .map(|(i, &n)| Bytes::from(vec![0xc0 + i as u8; n]))
                .collect();
            let want: Vec<u8> = bufs
                .iter()
                .chain(&more)
                .chain(&edges)
                .flat_map(|b| b.iter().copied())
                .collect();
            let reading = tokio::spawn(async move {
                let (mut got, mut sizes) = (Vec::new(), Vec::new());
                loop {
                    let mut p = [0u8; chunk::PREFIX];
                    socket.read_exact(&mut p).await.unwrap();
                    let (ty, len) = chunk::decode_prefix(p, u32::MAX).unwrap();
                    if ty == ChunkType::Fin {
                        return (got, sizes);
                    }
                    assert_eq!(ty, ChunkType::Data);
                    let at = got.len();
                    got.resize(at + len as usize, 0);
                    socket.read_exact(&mut got[at..]).await.unwrap();
                    sizes.push(len as usize);
                }
            });
            send.write_all(&mut bufs).await.unwrap();
            send.write_all(&mut more).await.unwrap();
            send.write_all(&mut edges).await.unwrap();
            send.finish().await.unwrap();
            let (got, sizes) = reading.await.unwrap();
            assert!(got == want, "the bytes, in order");
            // The 480 small ones with bytes before the large one; the large one in chunks of its
            // own, 1 MiB, 1 MiB and its rest; the small ones after it cut at GATHER_MAX
            // buffers, 512 and 512 (128 runs of 3, 6, 9 and 12 bytes), then the last 96; then
            // 21 and 19 of 3000 bytes. Not a chunk for each of the 1641 buffers with bytes. Then
            // the edges: GATHER fills a chunk, so the 10 bytes after it go alone (the next buffer
            // is above GATHER); WRITE_CHUNK is one chunk; WRITE_CHUNK + 1 is one and its last
            // byte, which the small ones after it join.
            assert_eq!(
                sizes,
                [
                    3600,
                    WRITE_CHUNK,
                    WRITE_CHUNK,
                    1 << 19,
                    3840,
                    3840,
                    720,
                    63_000,
                    57_000,
                    GATHER,
                    10,
                    WRITE_CHUNK,
                    WRITE_CHUNK,
                    51
                ]
            );
            let _ = std::fs::remove_file(&path);
        });
        within.await.expect("within 30 s");
    }

    /// A chunk cut after any of its bytes and completed by `padding` reads as that one chunk:
    /// its prefix whole (zeros in place of its length's last bytes would declare another
    /// length, and the RESET after it would be read as payload), then its payload's length.
    #[test]
    fn a_cut_chunk_completed_by_padding_reads_as_the_one_chunk() {
        for len in [0u32, 1, 7, 300] {
            let head = chunk::prefix(ChunkType::Data, len);
            let total = chunk::PREFIX + len as usize;
            let mut whole = head.to_vec();
            whole.extend((0..len).map(|i| i as u8 | 1));
            for cut in 1..total {
                let mut got = whole[..cut].to_vec();
                got.extend(padding(head, total - cut));
                assert_eq!(got.len(), total, "{len} cut at {cut}");
                let p: [u8; chunk::PREFIX] = got[..chunk::PREFIX].try_into().unwrap();
                assert_eq!(
                    chunk::decode_prefix(p, u32::MAX).unwrap(),
                    (ChunkType::Data, len),
                    "{len} cut at {cut}"
                );
            }
        }
    }

    /// A chunk cut by a cancelled write and completed with filler before an owed chunk (here
    /// the reader's STOP) breaks the stream for good: a later write is refused rather than
    /// follow the filler, which the peer would read as data (PROTOCOL.md §8.3).
    #[tokio::test(flavor = "current_thread")]
    async fn no_write_follows_the_filler_of_a_cut_chunk() {
        let within = tokio::time::timeout(Duration::from_secs(30), async {
            let (a, mut b) = UnixStream::pair().unwrap();
            let (mut w, mut r) = halves(a, Ends::default());
            cut_a_write(&mut w).await;
            // The reader lets go: its STOP is owed, and goes after filler completes the chunk.
            r.stop(Code::NoError);
            let mut total = 0;
            loop {
                let (ty, payload) = chunk_from(&mut b).await;
                if ty == ChunkType::Stop {
                    break;
                }
                assert_eq!(ty, ChunkType::Data);
                total += payload.len();
            }
            // The first chunk (1 MiB) was cut: it whole, and no other.
            assert_eq!(total, WRITE_CHUNK, "the cut chunk, whole");
            let e = w
                .write_raw(&[&chunk::prefix(ChunkType::Data, 5), b"after"])
                .await
                .unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        });
        within.await.expect("within 30 s");
    }

    /// Every write to a socket whose peer has closed fails with an error and raises no SIGPIPE,
    /// which kills a host process that does not ignore it (a Swift one does not: the CI's Swift
    /// tests died of it when gathered chunks went with `writev`). Rust ignores SIGPIPE, so the
    /// writes run in a child process of this test that restores its default disposition.
    #[test]
    fn a_write_to_a_closed_peer_fails_without_sigpipe() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "transport::unix::tests::sigpipe_child",
                "--ignored",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("WEIDA_SIGPIPE_CHILD", "1")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{:?}: {said}", out.status);
        assert!(
            said.contains("every write failed, and the process lives"),
            "{said}"
        );
    }

    #[test]
    #[ignore = "run by a_write_to_a_closed_peer_fails_without_sigpipe, in a child process"]
    fn sigpipe_child() {
        // Run by hand with --include-ignored among other tests, it leaves their process alone.
        if std::env::var_os("WEIDA_SIGPIPE_CHILD").is_none() {
            return;
        }
        // SAFETY: a single-threaded test process, before any other thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for case in ["gathered", "small", "fin", "owed, at once", "owed, waiting"] {
                let (a, b) = UnixStream::pair().unwrap();
                let (mut w, mut r) = halves(a, Ends::default());
                drop(b);
                let failed = match case {
                    "gathered" => {
                        let mut bufs = vec![Bytes::from(vec![1u8; 8192]); 4];
                        w.write(&mut bufs).await.is_err()
                    }
                    "small" => w.write(&mut [Bytes::from_static(b"small")]).await.is_err(),
                    "fin" => w.finish().await.is_err(),
                    // The reader's STOP is owed, and written as the last handle's drop writes
                    // it (at once, once the socket is writable) or as a task does (waiting).
                    "owed, at once" => {
                        r.stop(Code::NoError);
                        let mut half = w.sock.socket.write.lock().await;
                        half.as_ref().writable().await.unwrap();
                        !w.sock.flush_now(&mut half)
                    }
                    _ => {
                        r.stop(Code::NoError);
                        let mut half = w.sock.socket.write.lock().await;
                        w.sock.flush(&mut half).await;
                        !w.sock.pending.lock().unwrap().is_empty()
                    }
                };
                assert!(failed, "{case}");
            }
            println!("every write failed, and the process lives");
        });
    }

    /// A socket this side is done with is ended at its linger even while the write of what it
    /// owes is stuck (the peer reads nothing): ending it does not wait for the write lock that
    /// write holds, which it did, so such a peer held the socket and its pump for ever.
    /// The same when the peer writes a chunk after this side let go (this side then stops
    /// reading at that chunk, §8.4): the socket is ended at the linger all the same.
    async fn linger_ends_a_stuck_socket(peer_writes: bool) {
        use tokio::io::AsyncWriteExt as _;
        let within = tokio::time::timeout(Duration::from_secs(30), async {
            let (a, mut b) = UnixStream::pair().unwrap();
            let ends = Ends {
                watch: Some(Watch {
                    life: Life::new(),
                    linger: Some(Duration::from_millis(100)),
                }),
                ..Ends::default()
            };
            let (mut w, r) = halves(a, ends);
            // A write cut inside its chunk with the socket full, then a RESET: its filler and
            // the RESET are owed, and cannot be written while the peer does not read.
            cut_a_write(&mut w).await;
            w.reset(Code::Canceled);
            drop(w);
            drop(r);
            if peer_writes {
                let mut data = chunk::prefix(ChunkType::Data, 3).to_vec();
                data.extend_from_slice(b"abc");
                b.write_all(&data).await.unwrap();
            }
            // The peer sees this side's end (POLLRDHUP) without reading a byte.
            let fd = std::os::fd::AsRawFd::as_raw_fd(&b);
            let hung_up = tokio::task::spawn_blocking(move || {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLRDHUP,
                    revents: 0,
                };
                // SAFETY: one valid pollfd; `b` outlives this task (awaited below).
                let n = unsafe { libc::poll(&mut p, 1, 20_000) };
                n == 1 && p.revents & libc::POLLRDHUP != 0
            })
            .await
            .unwrap();
            assert!(hung_up, "the socket was not ended at the linger");
            drop(b);
        });
        within.await.expect("within 30 s");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_linger_ends_a_socket_whose_owed_write_is_stuck() {
        linger_ends_a_stuck_socket(false).await;
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_linger_ends_a_stuck_socket_the_peer_wrote_to_after() {
        linger_ends_a_stuck_socket(true).await;
    }

    /// An owed chunk a cancelled write left in part goes back to the front of what is owed
    /// (`send_owed`), and is finished before the stream's next chunk starts, so no chunk starts
    /// inside it.
    #[tokio::test(flavor = "current_thread")]
    async fn an_owed_chunk_cut_short_is_finished_before_the_next_chunk() {
        let within = tokio::time::timeout(Duration::from_secs(30), async {
            let (a, mut b) = UnixStream::pair().unwrap();
            let (send, _recv) = stream(a, 1 << 16, None, true, Ends::default());
            let SendHalf::Unix(mut w) = send else {
                unreachable!("a local socket's half")
            };
            let stop = chunk::code_chunk(ChunkType::Stop, Code::Rejected);
            {
                // On another socket, full (its peer reads nothing): a `send_owed` cancelled
                // before the socket takes a byte puts all of it back.
                let (c, _d) = UnixStream::pair().unwrap();
                let (full, _reading) = stream(c, 1 << 16, None, true, Ends::default());
                let SendHalf::Unix(full) = full else {
                    unreachable!("a local socket's half")
                };
                let half = full.sock.socket.write.lock().await;
                while try_send(&half, &[0u8; 4096]).is_ok() {}
                tokio::select! {
                    biased;
                    _ = full.sock.send_owed(&half, stop.clone()) => panic!("sent to a full socket"),
                    () = std::future::ready(()) => {}
                }
                assert_eq!(*full.sock.pending.lock().unwrap(), stop, "all of it, back");
            }
            {
                let half = w.sock.socket.write.lock().await;
                // Its first three bytes written, the rest owed (as a cut `send_owed` leaves it).
                send_all(&half, &stop[..3]).await.unwrap();
                w.sock.pending.lock().unwrap().extend_from_slice(&stop[3..]);
            }
            w.write(&mut [Bytes::from_static(b"after")]).await.unwrap();
            assert_eq!(
                chunk_from(&mut b).await,
                (ChunkType::Stop, stop[5..].to_vec())
            );
            assert_eq!(
                chunk_from(&mut b).await,
                (ChunkType::Data, b"after".to_vec())
            );
        });
        within.await.expect("within 30 s");
    }

    /// STOP and RESET with GOING_AWAY: a listener's retirement of a kept socket.
    fn retirement() -> Vec<u8> {
        let mut retire = chunk::code_chunk(ChunkType::Stop, Code::GoingAway);
        retire.extend(chunk::code_chunk(ChunkType::Reset, Code::GoingAway));
        retire
    }

    /// The dialler's side of kept sockets (§8.7): the next exchange takes the socket the last
    /// one ended cleanly on; one that the listener retires as it is begun (STOP and RESET with
    /// GOING_AWAY as the first answer) reads the retirement, meaning it was not processed, and
    /// the one after it is on a new socket.
    #[tokio::test(flavor = "current_thread")]
    async fn a_dialler_takes_its_kept_socket_and_reads_a_retirement_as_not_processed() {
        use tokio::io::AsyncWriteExt as _;
        let within = tokio::time::timeout(Duration::from_secs(30), async {
            let (listener, conn, mut kept, _control, path) =
                kept_after_one_exchange("taken", Limits::default()).await;
            // The next exchange is on the same socket: no accept.
            let second = begin(&conn, b"two");
            answer_kept(&mut kept, false, b"").await;
            kept.write_all(&retirement()).await.unwrap();
            kept.shutdown().await.unwrap();
            match second.await.unwrap() {
                Err(
                    StreamError::Reset(Code::GoingAway) | StreamError::Stopped(Code::GoingAway),
                ) => {}
                other => panic!("{other:?}"),
            }
            // The retired socket is not taken again: the next exchange connects anew.
            let third = begin(&conn, b"three");
            let (mut fresh, _) = listener.accept().await.unwrap();
            answer_kept(&mut fresh, true, b"3").await;
            assert_eq!(third.await.unwrap().unwrap(), b"3");
            assert_eq!(conn.loss(), None);
            let _ = std::fs::remove_file(&path);
        });
        within.await.expect("within 30 s");
    }

    /// A socket the listener retires while it sits idle in the dialler's pool is not taken
    /// again: the dialler ends it, and the next exchange connects anew.
    #[tokio::test(flavor = "current_thread")]
    async fn a_kept_socket_retired_while_idle_is_not_taken_again() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let within = tokio::time::timeout(Duration::from_secs(30), async {
            let (listener, conn, mut kept, _control, path) =
                kept_after_one_exchange("idle", Limits::default()).await;
            kept.write_all(&retirement()).await.unwrap();
            // The dialler reads the retirement of its idle socket and ends it.
            let mut rest = Vec::new();
            kept.read_to_end(&mut rest).await.unwrap();
            assert!(rest.is_empty(), "{rest:?}");
            let second = begin(&conn, b"two");
            let (mut fresh, _) = listener.accept().await.unwrap();
            answer_kept(&mut fresh, true, b"2").await;
            assert_eq!(second.await.unwrap().unwrap(), b"2");
            let _ = std::fs::remove_file(&path);
        });
        within.await.expect("within 30 s");
    }

    /// An idle kept socket counts in the dialler's budget (`max_local_streams`), as a busy
    /// one does; a new socket that needs its slot ends it rather than wait.
    #[tokio::test(flavor = "current_thread")]
    async fn an_idle_kept_socket_gives_its_budget_slot_to_a_new_socket() {
        use tokio::io::AsyncReadExt as _;
        let within = tokio::time::timeout(Duration::from_secs(30), async {
            let limits = Limits {
                max_local_streams: 1,
                ..Limits::default()
            };
            let (listener, conn, mut kept, _control, path) =
                kept_after_one_exchange("slot", limits).await;
            assert_eq!(
                conn.inner.budget.available_permits(),
                0,
                "idle, it holds its slot"
            );
            // A one-way stream needs the one slot: the idle socket is ended for it.
            let opening = tokio::spawn({
                let conn = conn.clone();
                async move { conn.open(false).await.map(drop) }
            });
            let mut rest = Vec::new();
            kept.read_to_end(&mut rest).await.unwrap();
            assert!(rest.is_empty(), "{rest:?}");
            let _new = listener.accept().await.unwrap();
            opening.await.unwrap().unwrap();
            let _ = std::fs::remove_file(&path);
        });
        within.await.expect("within 30 s");
    }

    /// Chunks read through `ChunkIn` come out whole and in order however the bytes arrive,
    /// each payload in a buffer sized to it and the next prefix (at most an eighth more: a
    /// small payload after a large one holds no large block), a large one's buffer taken
    /// from the free list again once the last read's is handed back, and a writer gone inside
    /// a chunk is the end of file.
    #[tokio::test(flavor = "current_thread")]
    async fn a_chunk_is_read_with_at_most_the_next_prefix_however_its_bytes_arrive() {
        use tokio::io::AsyncWriteExt as _;
        let list = recycle::leaked();
        let mut large_at = None;
        // All at once, then a byte at a time, then in pieces of 4 KiB; each pass's large
        // payload differs, so that one read into a reused buffer shows only its own bytes.
        for (pass, piece) in [usize::MAX, 1, 4096].into_iter().enumerate() {
            let chunks: Vec<(ChunkType, Vec<u8>)> = vec![
                (ChunkType::Data, b"abc".to_vec()),
                (
                    ChunkType::Data,
                    (0..100_000u32)
                        .map(|i| (i as u8).wrapping_add(pass as u8))
                        .collect(),
                ),
                (ChunkType::Data, Vec::new()),
                (ChunkType::Stop, vec![0x07]),
                (ChunkType::Fin, Vec::new()),
            ];
            let mut bytes = Vec::new();
            for (ty, payload) in &chunks {
                bytes.extend(chunk::prefix(*ty, payload.len() as u32));
                bytes.extend(payload);
            }
            let (a, mut b) = UnixStream::pair().unwrap();
            let (rd, _wr) = a.into_split();
            let mut rd = ChunkIn::with_list(rd, list);
            let writer = tokio::spawn(async move {
                for part in bytes.chunks(piece.min(bytes.len())) {
                    b.write_all(part).await.unwrap();
                    tokio::task::yield_now().await;
                }
                b
            });
            for (ty, payload) in &chunks {
                let p = rd.prefix().await.unwrap();
                assert_eq!(chunk::decode_prefix(p, READ_CHUNK_LIMIT).unwrap().0, *ty);
                let got = rd.payload(payload.len()).await.unwrap();
                assert_eq!(&got[..], &payload[..], "pieces of {piece}");
                // Its buffer sized to it and the next prefix, whatever came before it, at most
                // an eighth more; none for an empty one.
                let need = payload.len() + chunk::PREFIX;
                let cap = got.capacity();
                if payload.is_empty() {
                    assert_eq!(cap, 0);
                } else {
                    assert!(cap >= need && cap - need <= need / 8, "{need}: {cap}");
                }
                if payload.len() == 100_000 {
                    // The first pass's buffer, handed back when its bytes went, is the next's:
                    // the list gave it (it is empty now) and has it again once it is let go.
                    let at = *large_at.get_or_insert(got.as_ptr());
                    assert_eq!(got.as_ptr(), at, "pass {pass}");
                    assert_eq!(list.held(), (0, vec![]), "pass {pass}");
                    drop(rd.freeze(got));
                    assert_eq!(list.held(), (cap, vec![cap]), "pass {pass}");
                } else {
                    drop(rd.freeze(got));
                }
            }
            drop(writer.await.unwrap());
            let end = rd.prefix().await.unwrap_err();
            assert_eq!(end.kind(), io::ErrorKind::UnexpectedEof);
        }
        // The writer gone inside a prefix, then inside a payload: the end of file, not a chunk.
        let mut bytes = chunk::prefix(ChunkType::Data, 3).to_vec();
        bytes.extend(b"abc");
        for cut in [2, chunk::PREFIX + 1] {
            let (a, mut b) = UnixStream::pair().unwrap();
            let (rd, _wr) = a.into_split();
            let mut rd = ChunkIn::new(rd);
            b.write_all(&bytes[..cut]).await.unwrap();
            drop(b);
            let end = match rd.prefix().await {
                Ok(_) => rd.payload(3).await.unwrap_err(),
                Err(e) => e,
            };
            assert_eq!(end.kind(), io::ErrorKind::UnexpectedEof, "cut at {cut}");
        }
    }

    /// A listener's reply on a kept socket whose `finish` is cancelled after its FIN was begun
    /// (the socket full, the FIN not written): the socket is not kept. The dialler reads the
    /// reply's bytes and then the end of file, never a FIN, so it learns a loss rather than a
    /// complete reply, and nothing it writes after is taken as a next exchange.
    #[tokio::test(flavor = "current_thread")]
    async fn a_kept_reply_whose_finish_is_cancelled_after_its_fin_began_ends_the_socket() {
        use futures_util::FutureExt as _;
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let within = tokio::time::timeout(Duration::from_secs(30), async {
            let (a, mut dialler) = UnixStream::pair().unwrap();
            let (to, mut next_exchanges) = tokio::sync::mpsc::unbounded_channel();
            let next = Next {
                to,
                peer: None,
                window: 1 << 16,
                keep: Duration::from_secs(60),
            };
            let ends = Ends {
                next: Some(next),
                ..Ends::default()
            };
            let (mut w, mut r) = halves(a, ends);
            // The dialler's request on a socket it asks to keep, read to its end.
            let mut req = chunk::prefix(ChunkType::Keep, 0).to_vec();
            req.extend(chunk::prefix(ChunkType::Data, 3));
            req.extend(b"req");
            req.extend(chunk::prefix(ChunkType::Fin, 0));
            dialler.write_all(&req).await.unwrap();
            let mut got = Vec::new();
            while let Some(b) = r.read_chunk(1 << 16).await.unwrap() {
                got.extend_from_slice(&b);
            }
            assert_eq!(got, b"req");
            assert!(w.sock.socket.kept.load(Ordering::Acquire));
            // The reply fills the socket, one-byte chunks until one would wait (written not
            // at all: the kernel takes a small write whole or not), so the FIN must wait too.
            let mut sent = 0usize;
            loop {
                let mut one = [Bytes::from_static(b"x")];
                // Unconstrained: out of its task's budget, the lock would wait too.
                match tokio::task::unconstrained(w.write(&mut one)).now_or_never() {
                    Some(r) => r.unwrap(),
                    None => break,
                }
                sent += 1;
            }
            assert_eq!(w.sock.unfinished.load(Ordering::Acquire), 0);
            let fin = tokio::task::unconstrained(w.finish()).now_or_never();
            assert!(fin.is_none(), "a FIN into a full socket");
            assert!(w.sock.fin_begun.load(Ordering::Acquire));
            assert!(!w.sock.fin_written.load(Ordering::Acquire));
            let sock = w.sock.clone();
            drop((w, r));
            assert!(
                sock.spoiled.load(Ordering::Acquire),
                "a FIN abandoned spoils the stream"
            );
            // The dialler reads every reply byte, then the end of file: no FIN.
            let mut reply = 0usize;
            loop {
                let mut p = [0u8; chunk::PREFIX];
                match dialler.read_exact(&mut p).await {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => panic!("{e}"),
                }
                let (ty, len) = chunk::decode_prefix(p, u32::MAX).unwrap();
                assert_eq!(ty, ChunkType::Data, "after {reply} reply bytes");
                let mut body = vec![0u8; len as usize];
                dialler.read_exact(&mut body).await.unwrap();
                reply += body.len();
            }
            assert_eq!(reply, sent);
            // What the dialler writes now is no next exchange.
            let mut more = chunk::prefix(ChunkType::Data, 4).to_vec();
            more.extend(b"next");
            let _ = dialler.write_all(&more).await;
            drop(dialler);
            assert!(next_exchanges.recv().await.is_none(), "a next exchange");
        });
        within.await.expect("within 30 s");
    }
}
