//! Push/Pull the other way round (PATTERNS §3.1): a pusher that binds and pullers that dial
//! it (ZeroMQ's ventilator and its workers). Each puller claims a share of the bound pusher
//! (CLAIM in the role PULLER, PROTOCOL.md §3.1.6) on a connection of its own; the pusher deals
//! its messages round-robin over the pullers holding a claim, each on a transfer it opens
//! toward that puller, which reads it through the listener's own dispatch.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

use super::claimed::{open_toward, Feed};
use super::{Dialer, Puller};
use crate::address::Address;
use crate::config::{Bounds, EndpointOptions};
use crate::connection::admission::RouteKind;
use crate::connection::context::Context;
use crate::connection::handles::OutgoingTransfer;
use crate::connection::handshake::Flow;
use crate::connection::link::Link;
use crate::connection::reverse::{Claimable, Publication, Way};
use crate::error::{Error, Result};
use crate::runtime::inbox::Inbox;
use crate::runtime::listener::Listener;
use crate::runtime::queue;
use crate::runtime::redial::Claim;
use crate::runtime::routes::RouteGuard;
use crate::runtime::Runtime;
use crate::wire::{claim_role, Code, Metadata};

/// A pusher bound at a path: the pullers that connect to it ([`DialingPuller`]) share its
/// messages, round-robin per message; one that connects later gets its share from then on.
///
/// ```no_run
/// # async fn f(listener: weida::Listener, worker: weida::Runtime) -> weida::Result<()> {
/// let jobs = listener.pusher("/jobs")?;
/// let puller = worker.puller();
/// puller.connect(&jobs.address().to_string()).await?;
/// jobs.send("job 1").await?; // waits for a puller, bounded by send_timeout
/// let m = puller.recv().await?;
/// # Ok(()) }
/// ```
pub struct BoundPusher {
    workers: Arc<Workers>,
    ctx: Arc<Context>,
    path: Arc<str>,
    address: Address,
    bounds: Bounds,
    _route: RouteGuard,
}

impl Listener {
    /// Binds a [`BoundPusher`] at `path`.
    pub fn pusher(&self, path: &str) -> Result<BoundPusher> {
        self.pusher_with(path, &EndpointOptions::new())
    }

    /// A [`BoundPusher`] with bounds of its own: `send_timeout`, how long a send waits for a
    /// puller and for its stream.
    pub fn pusher_with(&self, path: &str, options: &EndpointOptions) -> Result<BoundPusher> {
        let address = self.address().with_path(path)?;
        let bounds = options.resolve(&self.context().config)?;
        let workers = Arc::new(Workers {
            path: path.to_string(),
            held: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
            changed: Notify::new(),
            closed: AtomicBool::new(false),
        });
        let claim: Arc<dyn Claimable> = workers.clone();
        let route = self.route_claimed(
            path,
            RouteKind::Pusher,
            None,
            None::<Arc<dyn Publication>>,
            Some(claim),
            bounds,
        )?;
        Ok(BoundPusher {
            workers,
            ctx: self.context().clone(),
            path: path.into(),
            address,
            bounds,
            _route: route,
        })
    }
}

impl BoundPusher {
    /// The address pullers connect to.
    pub fn address(&self) -> &Address {
        &self.address
    }

    /// Pullers connected now.
    pub fn peer_count(&self) -> usize {
        self.workers.held.lock().unwrap().len()
    }

    /// Sends a whole message to the next puller, round-robin: waits for one to connect, then
    /// for its stream, both bounded by `send_timeout` (`Timeout`), and returns once the FIN is
    /// queued, the receipt kept for `drain`. A puller whose connection failed before anything
    /// was written to it is passed over for the next; one that leaves loses only what was
    /// written to it. Cancel-safe: dropped before it returns, nothing was sent, or the stream
    /// is reset.
    pub async fn send(&self, body: impl Into<Bytes>) -> Result<()> {
        self.send_with(Metadata::new(), body).await
    }

    /// [`BoundPusher::send`] with metadata. Cancel-safe as `send` is.
    pub async fn send_with(&self, meta: Metadata, body: impl Into<Bytes>) -> Result<()> {
        let t = self.open_with(meta, Some(body.into())).await?;
        drop(t.finish().await?);
        Ok(())
    }

    /// Opens a streamed message to the next puller, as `send` picks it. Cancel-safe: dropped
    /// before it returns, nothing was opened, or what was is reset.
    pub async fn open(&self, meta: Metadata) -> Result<OutgoingTransfer> {
        self.open_with(meta, None).await
    }

    async fn open_with(&self, meta: Metadata, body: Option<Bytes>) -> Result<OutgoingTransfer> {
        self.ctx.check_open()?;
        let started = tokio::time::Instant::now();
        let left = || {
            self.bounds
                .send_timeout
                .map(|d| d.saturating_sub(started.elapsed()))
        };
        loop {
            let (conn, way) = Context::within(left(), self.workers.next()).await?;
            match open_toward(
                &self.ctx,
                &way,
                &self.path,
                meta.clone(),
                body.clone(),
                left(),
            )
            .await
            {
                // Its connection failed before the stream opened: nothing was written to it,
                // so the next puller gets the message.
                Err(Error::ConnectionLost(_)) => self.workers.release(conn),
                r => return r,
            }
        }
    }

    /// Unbinds the path: pullers' claims end with it, and sends fail `Closed`.
    pub fn close(&self) {
        self.workers.closed.store(true, Ordering::Release);
        self.workers.changed.notify_waiters();
        self._route.close();
    }
}

impl std::fmt::Debug for BoundPusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundPusher")
            .field("address", &self.address.to_string())
            .field("pullers", &self.peer_count())
            .finish()
    }
}

/// The pullers holding a claim on a bound pusher, in the order they came, and the next to
/// deal to.
struct Workers {
    path: String,
    held: Mutex<Vec<(u64, Way)>>,
    next: AtomicUsize,
    /// Wakes a send waiting for a puller.
    changed: Notify,
    closed: AtomicBool,
}

impl Workers {
    /// The next puller, round-robin, waiting for one. Cancel-safe.
    async fn next(&self) -> Result<(u64, Way)> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.closed.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            {
                let held = self.held.lock().unwrap();
                if !held.is_empty() {
                    let i = self.next.fetch_add(1, Ordering::Relaxed) % held.len();
                    let (conn, way) = &held[i];
                    return Ok((*conn, way.clone()));
                }
            }
            changed.await;
        }
    }
}

impl Claimable for Workers {
    fn claim(&self, conn: u64, way: Way) -> std::result::Result<(), (Code, String)> {
        let mut held = self.held.lock().unwrap();
        if held.iter().any(|(c, _)| *c == conn) {
            return Err((
                Code::LimitExceeded,
                format!("this connection pulls from {:?} already", self.path),
            ));
        }
        held.push((conn, way));
        drop(held);
        self.changed.notify_waiters();
        Ok(())
    }

    fn release(&self, conn: u64) {
        self.held.lock().unwrap().retain(|(c, _)| *c != conn);
    }

    /// A bound pusher takes no stream.
    fn admits(&self, _: Option<u64>) -> bool {
        false
    }
}

/// A puller that dials bound pushers ([`BoundPusher`]) and receives its share of their
/// messages.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, ventilator: &str) -> weida::Result<()> {
/// let worker = rt.puller();
/// worker.connect(ventilator).await?;
/// let job = worker.recv().await?;
/// # Ok(()) }
/// ```
pub struct DialingPuller {
    dialer: Dialer,
    feed: Arc<Feed>,
    inbox: Puller,
}

impl Runtime {
    /// A [`DialingPuller`] with the runtime's bounds.
    pub fn puller(&self) -> DialingPuller {
        self.puller_with(&EndpointOptions::new())
            .expect("the runtime's own bounds are valid")
    }

    /// A [`DialingPuller`] with bounds of its own: `endpoint_queue` and `max_collected_body`
    /// for what it receives, `reconnect` for its addresses.
    pub fn puller_with(&self, options: &EndpointOptions) -> Result<DialingPuller> {
        let bounds = options.resolve(&self.pool.ctx.config)?;
        let (tx, rx) = queue::channel(bounds.endpoint_queue);
        let feed = Feed::new(self.pool.ctx.clone(), tx, bounds.max_collected_body, false);
        let reader = feed.clone();
        let claim = Claim {
            role: claim_role::PULLER,
            read: Box::new(move |link: &Arc<Link>| reader.read(link)),
        };
        let dialer = Dialer::claiming(self.pool.clone(), options, Flow::Claims, claim)?;
        let inbox = Puller::over(Inbox::unrouted(rx, self.pool.ctx.clone(), bounds));
        Ok(DialingPuller {
            dialer,
            feed,
            inbox,
        })
    }
}

super::receives_as_puller!(DialingPuller);

impl DialingPuller {
    /// Connects to a bound pusher's address (with its path) and claims a share of its
    /// messages: `Unsupported` when what is bound there is not a bound pusher (or the listener
    /// takes no claims), `UnknownEndpoint` when nothing is. Redialled, and claimed again, by
    /// the endpoint's `reconnect` policy. Cancel-safe: dropped before it returns, it adds no
    /// peer.
    pub async fn connect(&self, address: &str) -> Result<()> {
        self.feed.aim(address)?;
        let r = self.dialer.connect(address).await;
        if r.is_err() {
            self.feed.unaim(address);
        }
        r
    }

    /// Records a bound pusher's address at once and dials it in the background.
    ///
    /// Cancel-safe: it returns without waiting.
    pub async fn connect_later(&self, address: &str) -> Result<()> {
        self.feed.aim(address)?;
        self.dialer.connect_later(address)
    }

    /// Leaves a bound pusher; true if it was connected. What it wrote to this puller and this
    /// puller had not taken when its connection ended is lost with the connection.
    pub fn disconnect(&self, address: &str) -> Result<bool> {
        let left = self.dialer.disconnect(address)?;
        if left {
            self.feed.unaim(address);
        }
        Ok(left)
    }

    /// Bound pushers connected and live.
    pub fn peer_count(&self) -> usize {
        self.dialer.peers.live()
    }

    /// What happens to the addresses this puller connected ([`crate::PeerEvent`]).
    pub fn events(&self) -> crate::PeerEvents {
        self.dialer.peers.events.subscribe()
    }

    /// Leaves every bound pusher; what was received is still handed out, then `Closed`.
    pub fn close(&self) {
        self.dialer.leave_all();
        self.feed.close();
    }
}

impl Drop for DialingPuller {
    fn drop(&mut self) {
        self.feed.close();
    }
}

impl std::fmt::Debug for DialingPuller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DialingPuller")
            .field("peers", &self.peer_count())
            .finish()
    }
}
