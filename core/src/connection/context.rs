//! What every connection and stream of one runtime reads and reports to: its configuration,
//! whether it is still open, its counters and the receipts it keeps for `drain`.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use super::receipts::Receipts;
use crate::config::{Limits, RuntimeConfig};
use crate::error::{Error, LossCause, Result};
use crate::transport::{Conn, Life};
use crate::wire::Code;

const OPEN: u8 = 0;
const DRAINING: u8 = 1;
const CLOSED: u8 = 2;
/// A drain's first step: no new work is admitted, and the pushers' outboxes are written out
/// on the connections that are up (`Context::check_running` still passes).
const FLUSHING: u8 = 3;

/// The runtime's side of every connection and stream: held by the runtime, its listeners,
/// links, lanes, endpoints and stream handles (one `Arc` each, cloned per handle, never per
/// read or write).
pub(crate) struct Context {
    pub(crate) config: RuntimeConfig,
    pub(crate) limits: Limits,
    pub(crate) stats: Stats,
    pub(crate) receipts: Receipts,
    /// Every connection dialled or accepted, closed at shutdown.
    conns: Mutex<Vec<Conn>>,
    state: AtomicU8,
    /// Killed at shutdown: accept loops and control readers end.
    pub(crate) life: Arc<Life>,
    /// Killed first at shutdown, before any connection closes: the runtime's in-process names
    /// are free by the time a peer learns of the close, so a peer's redial that looks finds
    /// them unbound and waits for them to be bound again.
    pub(crate) names: Arc<Life>,
}

/// The runtime's counters as they are counted: atomics the connection layer adds to where
/// things happen (`runtime/counters.rs` reads them into the public `Counters`).
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) streams_opened: AtomicU64,
    pub(crate) streams_accepted: AtomicU64,
    pub(crate) streams_refused: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    pub(crate) bytes_received: AtomicU64,
    pub(crate) connections_dialled: AtomicU64,
    pub(crate) connections_accepted: AtomicU64,
    pub(crate) copies_published: AtomicU64,
    pub(crate) lane_messages_sent: AtomicU64,
    pub(crate) lane_messages_received: AtomicU64,
    pub(crate) lane_messages_lost: AtomicU64,
    pub(crate) outbox_queued: AtomicU64,
    pub(crate) outbox_written: AtomicU64,
    pub(crate) outbox_dropped: AtomicU64,
    pub(crate) outbox_abandoned: AtomicU64,
}

impl Stats {
    pub(crate) fn add_sent(&self, n: u64) {
        self.bytes_sent.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn add_received(&self, n: u64) {
        self.bytes_received.fetch_add(n, Ordering::Relaxed);
    }
}

impl Context {
    pub(crate) fn new(config: RuntimeConfig) -> Self {
        Self {
            limits: config.limits.clone(),
            config,
            stats: Stats::default(),
            receipts: Receipts::default(),
            conns: Mutex::new(Vec::new()),
            state: AtomicU8::new(OPEN),
            life: Life::new(),
            names: Life::new(),
        }
    }

    /// `Closed` once the runtime drains or shuts down: no new work is admitted.
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.state.load(Ordering::Acquire) == OPEN {
            Ok(())
        } else {
            Err(Error::Closed)
        }
    }

    /// `Closed` once a drain is past its flush, or the runtime shut down: what the layers
    /// below the patterns check, so a drain's flush can still write what the outboxes hold.
    pub(crate) fn check_running(&self) -> Result<()> {
        match self.state.load(Ordering::Acquire) {
            OPEN | FLUSHING => Ok(()),
            _ => Err(Error::Closed),
        }
    }

    /// The runtime stops admitting work but writes out its outboxes (a drain began); a second
    /// call changes nothing.
    pub(crate) fn start_flushing(&self) {
        let _ = self
            .state
            .compare_exchange(OPEN, FLUSHING, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The runtime writes nothing new: what was written is given its time (a drain's second
    /// step); a second call changes nothing.
    pub(crate) fn start_draining(&self) {
        for from in [OPEN, FLUSHING] {
            let _ =
                self.state
                    .compare_exchange(from, DRAINING, Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// Keeps `conn` to close at shutdown.
    pub(crate) fn track(&self, conn: &Conn) {
        let mut c = self.conns.lock().unwrap();
        if c.len() % 32 == 31 {
            c.retain(|c| c.loss().is_none());
        }
        c.push(conn.clone());
    }

    /// Closes every connection with GOING_AWAY, then kills the runtime's life (accept loops
    /// and control readers end). Connections first: a task woken by the runtime's end must
    /// find its connection already closed, so its peer learns GOING_AWAY, not a half-closed
    /// control stream.
    pub(crate) fn close(&self) {
        self.state.store(CLOSED, Ordering::Release);
        self.names.kill(LossCause::LocallyClosed);
        for c in self.conns.lock().unwrap().drain(..) {
            c.close(Code::GoingAway, "shutdown");
        }
        self.life.kill(LossCause::LocallyClosed);
    }

    /// Bounds a wait for a stream slot by `send_timeout` (the endpoint's, which defaults to
    /// the runtime's).
    pub(crate) async fn within<T>(
        send_timeout: Option<std::time::Duration>,
        f: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        match send_timeout {
            Some(d) => tokio::time::timeout(d, f)
                .await
                .map_err(|_| Error::Timeout { last_loss: None })?,
            None => f.await,
        }
    }
}
