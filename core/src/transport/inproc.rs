//! In-process transport: a connection is a pair of channels of new streams, a stream is a pair
//! of [`byte_channel`]s. No sockets, no copies, no identity (there is no boundary to prove across).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use tokio::sync::{mpsc, Semaphore};

use super::byte_channel::byte_channel;
use super::{IncomingRaw, Life, RecvHalf, SendHalf};
use crate::config::Limits;
use crate::error::{Error, LossCause};

struct Registration {
    id: u64,
    tx: mpsc::UnboundedSender<Conn>,
    limits: Limits,
    /// The listener's life and its runtime's: the name is free the moment either ends, not
    /// when the accept task next runs and drops the `Bound`.
    lives: [Arc<Life>; 2],
}

impl Registration {
    fn live(&self) -> bool {
        !self.tx.is_closed() && self.lives.iter().all(|l| l.cause().is_none())
    }
}

static REGISTRY: LazyLock<Mutex<HashMap<String, Registration>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Wakes every [`wait_bound`] when a name is bound: a redial in process waits on this, not on
/// a timer.
static BOUND: LazyLock<tokio::sync::Notify> = LazyLock::new(tokio::sync::Notify::new);

/// Whether `name` is bound by a live listener now.
pub(crate) fn is_bound(name: &str) -> bool {
    REGISTRY
        .lock()
        .unwrap()
        .get(name)
        .is_some_and(Registration::live)
}

/// Resolves once `name` is bound by a live listener (at once if it is). Cancel-safe.
pub(crate) async fn wait_bound(name: &str) {
    loop {
        // Registered before the check, so a bind between the check and the wait wakes it.
        let bound = BOUND.notified();
        tokio::pin!(bound);
        bound.as_mut().enable();
        if REGISTRY
            .lock()
            .unwrap()
            .get(name)
            .is_some_and(Registration::live)
        {
            return;
        }
        bound.await;
    }
}

/// A bound in-process name. Dropping it frees the name.
pub(crate) struct Bound {
    id: u64,
    name: String,
    rx: mpsc::UnboundedReceiver<Conn>,
}

/// Binds `name` in this process, for as long as both `lives` (the listener's and its
/// runtime's) last.
pub(crate) fn bind(name: &str, limits: &Limits, lives: [Arc<Life>; 2]) -> Result<Bound, Error> {
    let mut reg = REGISTRY.lock().unwrap();
    if reg.get(name).is_some_and(Registration::live) {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("in-process name {name:?} is already bound"),
        )));
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (tx, rx) = mpsc::unbounded_channel();
    reg.insert(
        name.to_string(),
        Registration {
            id,
            tx,
            limits: limits.clone(),
            lives,
        },
    );
    drop(reg);
    BOUND.notify_waiters();
    Ok(Bound {
        id,
        name: name.to_string(),
        rx,
    })
}

impl Bound {
    /// The next connection dialled to this name.
    pub(crate) async fn accept(&mut self) -> Option<Conn> {
        self.rx.recv().await
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        let mut reg = REGISTRY.lock().unwrap();
        if reg.get(&self.name).is_some_and(|r| r.id == self.id) {
            reg.remove(&self.name);
        }
    }
}

struct Side {
    my_life: Arc<Life>,
    peer_life: Arc<Life>,
    to_peer: mpsc::UnboundedSender<IncomingRaw>,
    incoming: tokio::sync::Mutex<mpsc::UnboundedReceiver<IncomingRaw>>,
    // Budgets the peer granted us, and the window its byte channels give our writers.
    uni_budget: Arc<Semaphore>,
    bi_budget: Arc<Semaphore>,
    window: usize,
}

impl Drop for Side {
    fn drop(&mut self) {
        self.my_life.kill(LossCause::LocallyClosed);
        self.peer_life.kill(LossCause::PeerClosed);
    }
}

/// One end of an in-process connection.
#[derive(Clone)]
pub(crate) struct Conn {
    side: Arc<Side>,
}

/// Dials `name`: the listener's limits grant our budgets, ours grant its.
pub(crate) fn connect(name: &str, limits: &Limits) -> Result<Conn, Error> {
    let reg = REGISTRY.lock().unwrap();
    let r = reg.get(name).filter(|r| r.live()).ok_or_else(|| {
        Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("nothing is bound at in-process name {name:?}"),
        ))
    })?;
    let dial_life = Life::new();
    let listen_life = Life::new();
    let (to_listener, listener_in) = mpsc::unbounded_channel();
    let (to_dialer, dialer_in) = mpsc::unbounded_channel();
    let dialer = Conn {
        side: Arc::new(Side {
            my_life: dial_life.clone(),
            peer_life: listen_life.clone(),
            to_peer: to_listener,
            incoming: tokio::sync::Mutex::new(dialer_in),
            uni_budget: Arc::new(Semaphore::new(r.limits.max_concurrent_uni_streams as usize)),
            // One more than the budget: the control stream is not an exchange.
            bi_budget: Arc::new(Semaphore::new(
                r.limits.max_concurrent_bidi_streams as usize + 1,
            )),
            window: r.limits.stream_receive_window as usize,
        }),
    };
    let listener = Conn {
        side: Arc::new(Side {
            my_life: listen_life,
            peer_life: dial_life,
            to_peer: to_dialer,
            incoming: tokio::sync::Mutex::new(listener_in),
            uni_budget: Arc::new(Semaphore::new(limits.max_concurrent_uni_streams as usize)),
            bi_budget: Arc::new(Semaphore::new(
                limits.max_concurrent_bidi_streams as usize + 1,
            )),
            window: limits.stream_receive_window as usize,
        }),
    };
    r.tx.send(listener).map_err(|_| {
        Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("in-process name {name:?} stopped accepting"),
        ))
    })?;
    Ok(dialer)
}

impl Conn {
    async fn permit(
        &self,
        budget: &Arc<Semaphore>,
    ) -> Result<Arc<tokio::sync::OwnedSemaphorePermit>, Error> {
        tokio::select! {
            p = budget.clone().acquire_owned() => Ok(Arc::new(p.map_err(|_| Error::Closed)?)),
            c = self.side.my_life.dead() => Err(Error::ConnectionLost(c)),
        }
    }

    pub(crate) async fn open_uni(&self) -> Result<SendHalf, Error> {
        if let Some(c) = self.loss() {
            return Err(Error::ConnectionLost(c));
        }
        let permit = self.permit(&self.side.uni_budget).await?;
        let s = &self.side;
        let (w, r) = byte_channel(
            s.window,
            Some(s.my_life.clone()),
            Some(s.peer_life.clone()),
            Some(permit),
        );
        self.deliver(IncomingRaw {
            recv: RecvHalf::Channel(r),
            send: None,
            peer: None,
            live: None,
        })?;
        Ok(SendHalf::Channel(w))
    }

    pub(crate) async fn open_bi(&self) -> Result<(SendHalf, RecvHalf), Error> {
        if let Some(c) = self.loss() {
            return Err(Error::ConnectionLost(c));
        }
        let permit = self.permit(&self.side.bi_budget).await?;
        let s = &self.side;
        let (req_w, req_r) = byte_channel(
            s.window,
            Some(s.my_life.clone()),
            Some(s.peer_life.clone()),
            Some(permit.clone()),
        );
        let (rep_w, rep_r) = byte_channel(
            s.window,
            Some(s.peer_life.clone()),
            Some(s.my_life.clone()),
            Some(permit),
        );
        self.deliver(IncomingRaw {
            recv: RecvHalf::Channel(req_r),
            send: Some(SendHalf::Channel(rep_w)),
            peer: None,
            live: None,
        })?;
        Ok((SendHalf::Channel(req_w), RecvHalf::Channel(rep_r)))
    }

    fn deliver(&self, raw: IncomingRaw) -> Result<(), Error> {
        self.side
            .to_peer
            .send(raw)
            .map_err(|_| Error::ConnectionLost(self.loss().unwrap_or(LossCause::PeerClosed)))
    }

    /// The next stream the peer opened; `None` once the connection is gone.
    pub(crate) async fn accept(&self) -> Option<IncomingRaw> {
        let mut rx = self.side.incoming.lock().await;
        tokio::select! {
            r = rx.recv() => r,
            _ = self.side.my_life.dead() => None,
        }
    }

    /// The peer's side ended (its control stream closed): a loss this side did not cause.
    pub(crate) fn lost(&self) {
        self.side.my_life.kill(LossCause::PeerClosed);
        self.side.peer_life.kill(LossCause::LocallyClosed);
    }

    pub(crate) fn close(&self) {
        self.side.my_life.kill(LossCause::LocallyClosed);
        self.side.peer_life.kill(LossCause::PeerClosed);
    }

    pub(crate) async fn closed(&self) -> LossCause {
        self.side.my_life.dead().await
    }

    pub(crate) fn loss(&self) -> Option<LossCause> {
        self.side.my_life.cause()
    }
}
