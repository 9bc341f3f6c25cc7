//! The reverse direction of Pub/Sub (PROTOCOL.md §3.7): how a publisher reaches a subscriber
//! with a new stream (a stream the listener opens on the subscriber's connection, or over
//! AF_UNIX a connection the subscriber parked in advance), and the publisher as the
//! connection's control reader sees it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::transport::reader::StreamReader;
use crate::transport::{Conn, SendHalf};
use crate::wire::Code;

/// A bound publisher as the connection layer sees it: where a connection's SUBSCRIBE and
/// UNSUBSCRIBE go. The publisher's side of Pub/Sub (patterns/pubsub/hub.rs) implements it, so
/// dispatch hands it a subscriber without knowing what a hub is.
pub(crate) trait Publication: Send + Sync {
    /// Adds `filter` for the subscriber `id` (made on its first filter), answering the code to
    /// send back.
    fn subscribe(
        self: Arc<Self>,
        id: &mut Option<u64>,
        conn: &SubscriberConn,
        filter: &str,
    ) -> Result<(), (Code, String)>;
    /// Removes one `filter` entry of subscriber `id`; removing one it does not hold is done.
    fn unsubscribe(&self, id: Option<u64>, filter: &str);
    /// The subscriber's connection ended.
    fn remove(&self, id: u64);
}

/// A bound endpoint a dialler claims (a PAIR, PROTOCOL.md §3.1.6), as the connection layer
/// sees it: dispatch hands it the claiming connection's way back, tells it when that
/// connection ends, and asks it whose streams it takes.
pub(crate) trait Claimable: Send + Sync {
    /// The connection `conn` (an id unique in the runtime) claims it; `way` is how to reach the
    /// dialler. Err: the code and reason of the ANSWER (LIMIT_EXCEEDED: another connection
    /// holds it).
    fn claim(&self, conn: u64, way: Way) -> Result<(), (Code, String)>;
    /// The connection `conn` ended: if it held the endpoint, the endpoint is claimable again.
    fn release(&self, conn: u64);
    /// Whether a stream of connection `conn` is taken: only the claimant's are. `None` is an
    /// AF_UNIX data connection, which names no connection (Open point 3), and is not.
    fn admits(&self, conn: Option<u64>) -> bool;
}

/// How a claimed endpoint reaches the dialler that claimed it.
#[derive(Clone)]
pub(crate) struct Way {
    /// Opens a stream toward the dialler.
    pub(crate) reverse: Reverse,
    /// The dialler's MAX_HEADER_SIZE: a header above it is not sent.
    pub(crate) peer_max_header: u64,
    /// The dialler requires PerProducer ordering: what the claimed endpoint opens toward it is
    /// numbered, one producer per claim (PROTOCOL.md §3.1.6, §4).
    pub(crate) numbering: Option<Arc<super::numbering::Numbering>>,
}

/// Where a subscriber's copies go, as its connection handler knows it.
pub(crate) struct SubscriberConn {
    pub(crate) reverse: Reverse,
    pub(crate) number: bool,
    pub(crate) lanes: bool,
    /// The subscriber's MAX_HEADER_SIZE (its HELLO's): no copy's header is written above it.
    pub(crate) max_header: u64,
}

/// Connections a local-socket subscriber parked for its publisher to write copies on.
pub(crate) struct ParkedPool {
    conns: Mutex<VecDeque<(SendHalf, StreamReader)>>,
    /// How many the subscriber said it parks in advance (its HELLO SESSION).
    pub(crate) announced: u64,
    arrived: AtomicU64,
    notify: Notify,
    dead: AtomicBool,
}

impl ParkedPool {
    pub(crate) fn new(announced: u64) -> Arc<Self> {
        Arc::new(Self {
            conns: Mutex::new(VecDeque::new()),
            announced,
            arrived: AtomicU64::new(0),
            notify: Notify::new(),
            dead: AtomicBool::new(false),
        })
    }

    /// Takes a parked connection, or hands its reader back when the pool is at its bound or
    /// the session ended (the caller refuses it; the send half is dropped).
    pub(crate) fn park(
        &self,
        send: SendHalf,
        reader: StreamReader,
        bound: usize,
    ) -> Result<(), StreamReader> {
        let mut c = self.conns.lock().unwrap();
        if c.len() >= bound.max(1) || self.dead.load(Ordering::Acquire) {
            drop(send);
            return Err(reader);
        }
        c.push_back((send, reader));
        self.arrived.fetch_add(1, Ordering::AcqRel);
        drop(c);
        self.notify.notify_waiters();
        Ok(())
    }

    /// Waits until as many connections as the session announced have arrived (so a first
    /// publish after SUBSCRIBE is answered finds them), at most `wait`.
    pub(crate) async fn ready(&self, wait: std::time::Duration) -> bool {
        let need = self.announced.max(1);
        let fut = async {
            loop {
                let n = self.notify.notified();
                tokio::pin!(n);
                n.as_mut().enable();
                if self.arrived.load(Ordering::Acquire) >= need {
                    return;
                }
                n.await;
            }
        };
        tokio::time::timeout(wait, fut).await.is_ok()
    }

    fn take(&self) -> Option<SendHalf> {
        // Its reader (the subscriber's half, which carries nothing after the token) goes with
        // the copy: dropping it would stop the subscriber's half, which is harmless, but the
        // socket should close only once the copy is written, so it is dropped by the writer.
        self.conns.lock().unwrap().pop_front().map(|(s, _r)| s)
    }

    pub(crate) fn close(&self) {
        self.dead.store(true, Ordering::Release);
        self.conns.lock().unwrap().clear();
        self.notify.notify_waiters();
    }

    /// A parked connection, waiting until one is parked (a sender that must not drop: a
    /// pair's); `Lost` once the session ended. Cancel-safe.
    pub(crate) async fn take_waiting(&self) -> Result<SendHalf, OpenFail> {
        loop {
            let parked = self.notify.notified();
            tokio::pin!(parked);
            parked.as_mut().enable();
            if self.dead.load(Ordering::Acquire) {
                return Err(OpenFail::Lost);
            }
            if let Some(s) = self.take() {
                return Ok(s);
            }
            parked.await;
        }
    }
}

/// How a publisher reaches one subscriber with a new stream.
#[derive(Clone)]
pub(crate) enum Reverse {
    /// QUIC and in process: the listener opens a one-way stream on the subscriber's connection.
    Conn(Conn),
    /// AF_UNIX: a connection the subscriber parked in advance.
    Parked(Arc<ParkedPool>),
}

/// Why [`Reverse::open`] gave no stream.
pub(crate) enum OpenFail {
    /// Over AF_UNIX: no parked connection is left.
    PoolEmpty,
    /// The subscriber's connection (or session) is gone.
    Lost,
}

impl Reverse {
    /// A new one-way stream toward the dialler, waiting over AF_UNIX for a parked connection
    /// rather than giving up when none is left (a pair's send, which is not dropped).
    pub(crate) async fn open_waiting(&self) -> Result<SendHalf, OpenFail> {
        match self {
            Self::Conn(_) => self.open().await,
            Self::Parked(p) => p.take_waiting().await,
        }
    }

    /// Whether it reaches the dialler on connections it parked (AF_UNIX).
    pub(crate) fn is_parked(&self) -> bool {
        matches!(self, Self::Parked(_))
    }

    /// A new one-way stream toward the subscriber.
    pub(crate) async fn open(&self) -> Result<SendHalf, OpenFail> {
        match self {
            Self::Conn(c) => c.open_uni().await.map_err(|_| OpenFail::Lost),
            Self::Parked(p) => {
                if p.dead.load(Ordering::Acquire) {
                    return Err(OpenFail::Lost);
                }
                p.take().ok_or(OpenFail::PoolEmpty)
            }
        }
    }
}
