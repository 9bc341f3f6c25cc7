//! The I/O runtime: one current-thread tokio runtime on a dedicated `weida-io` thread, started
//! on first use, beside the language's own event loop (docs/BINDINGS.md, "Threading"; the
//! flavour is measured in docs/ARCHITECTURE.md §5). Every binding runs the core here.
//!
//! Fork-aware for every language: a child forked after the runtime started has no I/O thread
//! (fork copies only the forking thread), so a `pthread_atfork` handler, registered when the
//! runtime first starts, forgets it in the child, and the child's first use starts its own.
//! It runs whatever forked (Python's `os.fork`, a C extension, a Node addon), with no hook of
//! the language's (tests: `a_forked_child_starts_its_own_runtime`).

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Once;

use tokio::runtime::{EnterGuard, Handle};

/// The running I/O runtime's handle, leaked once per start so guards and tasks can borrow it
/// for the life of the process; null before the first use (and in a child just forked).
static IO: AtomicPtr<Handle> = AtomicPtr::new(ptr::null_mut());

/// Held by the one thread starting the runtime. A flag, not a mutex: the fork handler resets
/// it, where a mutex a vanished thread held could never be unlocked in the child.
static STARTING: AtomicBool = AtomicBool::new(false);

/// The I/O runtime's handle, starting it on first use (and again in a forked child).
pub fn io() -> &'static Handle {
    let h = IO.load(Ordering::Acquire);
    if h.is_null() {
        return start();
    }
    // SAFETY: a non-null IO points at a leaked Handle, never freed.
    unsafe { &*h }
}

#[cold]
fn start() -> &'static Handle {
    static AT_FORK: Once = Once::new();
    AT_FORK.call_once(|| {
        // SAFETY: registers a plain function with no captured state; it only stores atomics.
        unsafe { libc::pthread_atfork(None, None, Some(forget_in_child)) };
    });
    while STARTING
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::thread::yield_now();
    }
    let h = IO.load(Ordering::Acquire);
    if !h.is_null() {
        STARTING.store(false, Ordering::Release);
        // SAFETY: as in `io`.
        return unsafe { &*h };
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("weida-io")
        .build()
        .expect("the weida I/O runtime starts");
    let handle: &'static Handle = Box::leak(Box::new(rt.handle().clone()));
    std::thread::Builder::new()
        .name("weida-io".into())
        .spawn(move || rt.block_on(std::future::pending::<()>()))
        .expect("the weida I/O thread starts");
    IO.store(ptr::from_ref(handle).cast_mut(), Ordering::Release);
    STARTING.store(false, Ordering::Release);
    handle
}

/// In a forked child: the parent's I/O thread did not come along, so its runtime is forgotten
/// (leaked: its thread's stack and tasks are unreachable here) and the next use starts one.
extern "C" fn forget_in_child() {
    IO.store(ptr::null_mut(), Ordering::Release);
    STARTING.store(false, Ordering::Release);
}

/// Enters the I/O runtime's context (on the I/O thread itself too: contexts nest), for a
/// synchronous core call that may spawn a task (an AF_UNIX stream's drop writes its RESET or
/// STOP in one, docs/ARCHITECTURE.md §5). Asking first whether a context is entered would cost
/// more than entering: that clones the current handle.
pub fn enter() -> EnterGuard<'static> {
    io().enter()
}

/// Runs `f` inside the I/O runtime's context ([`enter`]).
pub fn on_io<T>(f: impl FnOnce() -> T) -> T {
    let _entered = enter();
    f()
}

/// A core value dropped inside the I/O runtime's context, whichever thread drops it: a
/// language drops handles when its garbage collector runs, on its own thread, where a core
/// drop that starts a task would find no runtime.
pub struct OnIo<T>(ManuallyDrop<T>);

impl<T> OnIo<T> {
    /// Wraps `v`.
    pub fn new(v: T) -> Self {
        Self(ManuallyDrop::new(v))
    }
}

impl<T> Deref for OnIo<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for OnIo<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T> Drop for OnIo<T> {
    fn drop(&mut self) {
        let _entered = enter();
        // SAFETY: dropped once, here; the value is not used after.
        unsafe { ManuallyDrop::drop(&mut self.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Runs `f` on the I/O thread and waits for its result.
    fn on_the_io_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        io().spawn(async move {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(5)).ok()
    }

    #[test]
    fn one_runtime_on_its_own_thread_started_once() {
        let a = io() as *const Handle;
        assert_eq!(a, io() as *const Handle);
        let name = on_the_io_thread(|| std::thread::current().name().map(str::to_string));
        assert_eq!(name.flatten().as_deref(), Some("weida-io"));
    }

    #[test]
    fn a_value_on_io_drops_inside_the_runtime() {
        struct NeedsRuntime;
        impl Drop for NeedsRuntime {
            fn drop(&mut self) {
                // Panics outside a runtime's context, as an AF_UNIX stream's drop would.
                drop(tokio::spawn(async {}));
            }
        }
        drop(OnIo::new(NeedsRuntime));
        assert!(on_io(|| Handle::try_current().is_ok()));
    }

    #[test]
    fn a_forked_child_starts_its_own_runtime() {
        // The parent's runtime runs before the fork; the child has no I/O thread of it.
        assert_eq!(on_the_io_thread(|| 1), Some(1));
        // SAFETY: the child only starts a runtime, waits on a channel and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            let ok = on_the_io_thread(|| 2) == Some(2);
            // SAFETY: ends the child without running the parent's test harness.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "the child ended on its own");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "a child's first use ran on a runtime of its own"
        );
    }
}
