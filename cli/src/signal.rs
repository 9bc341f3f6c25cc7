//! Ctrl-C and SIGTERM. A serving role stops taking work at the first signal and finishes what
//! it holds; a second signal abandons it. A client role is interrupted at the first.

use std::future::Future;
use std::io;

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::Failure;
use crate::progress;

/// The signals that stop a command, registered once at start (so none is missed, and the
/// default "die at once" action no longer applies: a stop is always orderly).
pub(crate) struct Stop {
    interrupt: Signal,
    terminate: Signal,
    requested: bool,
}

impl Stop {
    /// Registers SIGINT and SIGTERM handlers. Must run inside the tokio runtime.
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            requested: false,
        })
    }

    /// Resolves at the next SIGINT or SIGTERM. Cancel-safe.
    pub(crate) async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }

    /// Runs `work` to its end. The first signal calls `on_stop` and lets the work go on (a
    /// serving role closes its endpoint, and what it holds is still answered); a second one
    /// abandons the work with [`Failure::interrupted`].
    pub(crate) async fn finish<F: Future>(
        &mut self,
        work: F,
        on_stop: impl Fn(),
    ) -> Result<F::Output, Failure> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                out = &mut work => return Ok(out),
                _ = self.next() => {
                    if self.requested {
                        return Err(Failure::interrupted());
                    }
                    self.requested = true;
                    progress::note("stopping: finishing what was received (again to abandon it)");
                    on_stop();
                }
            }
        }
    }

    /// Runs `work` unless a signal comes first, which drops it (a dropped request or transfer
    /// is cancelled: the peer sees CANCELED, never a short body).
    pub(crate) async fn interrupt<T>(
        &mut self,
        work: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        tokio::select! {
            out = work => out,
            _ = self.next() => Err(Failure::interrupted()),
        }
    }
}
