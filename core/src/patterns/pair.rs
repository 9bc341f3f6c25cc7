//! PAIR (PATTERNS §6.1): two endpoints, one on each side of one connection, each sending to
//! the other. The dialling pair is a pusher whose slot claims the bound pair (CLAIM,
//! PROTOCOL.md §3.1.6) on a connection of its own, and receives what the bound pair opens
//! toward it there, admitted as a listener admits streams. The bound pair receives at a
//! pair's route, which takes streams only from the connection holding the claim, and sends on
//! streams it opens on that connection.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

use super::claimed::{open_toward, Feed};
use super::{Dialer, Puller, Pusher};
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
use crate::runtime::Runtime;
use crate::wire::{claim_role, Code, Metadata};

/// One end of a PAIR: the same calls whichever side bound. A dialling pair
/// ([`Runtime::pair`]) connects to one bound pair ([`Listener::pair`]); each sends to the
/// other and receives what the other sends. A second peer is refused with `LimitExceeded` and
/// the first keeps working; a peer that went away leaves the bound pair claimable again.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, other: weida::Runtime) -> weida::Result<()> {
/// let l = rt.bind("weida://127.0.0.1:0").await?;
/// let bound = l.pair("/chat")?;
/// let dialling = other.pair();
/// dialling.connect(&bound.address().unwrap().to_string()).await?;
/// dialling.send("hello").await?;
/// let m = bound.recv().await?;
/// bound.send("hello yourself").await?; // on a stream the bound side opens toward the dialler
/// let back = dialling.recv().await?;
/// # Ok(()) }
/// ```
pub struct Pair {
    side: Side,
    inbox: Puller,
}

enum Side {
    Dialling {
        pusher: Pusher,
        feed: Arc<Feed>,
    },
    Bound {
        holder: Arc<Holder>,
        ctx: Arc<Context>,
        path: Arc<str>,
        bounds: Bounds,
    },
}

impl Runtime {
    /// A dialling [`Pair`]: `connect` it to a bound pair.
    pub fn pair(&self) -> Pair {
        self.pair_with(&EndpointOptions::new())
            .expect("the runtime's own bounds are valid")
    }

    /// A dialling [`Pair`] with bounds of its own: a pusher's (`send_timeout`, `reconnect`,
    /// the outbox) for what it sends, a puller's (`endpoint_queue`, `max_collected_body`) for
    /// what it receives.
    pub fn pair_with(&self, options: &EndpointOptions) -> Result<Pair> {
        let bounds = options.resolve(&self.pool.ctx.config)?;
        let (tx, rx) = queue::channel(bounds.endpoint_queue);
        let feed = Feed::new(self.pool.ctx.clone(), tx, bounds.max_collected_body, true);
        let reader = feed.clone();
        let claim = Claim {
            role: claim_role::PAIR,
            read: Box::new(move |link: &Arc<Link>| reader.read(link)),
        };
        let dialer = Dialer::claiming(self.pool.clone(), options, Flow::Claims, claim)?;
        let pusher = Pusher::over(dialer, &self.pool);
        let inbox = Puller::over(Inbox::unrouted(rx, self.pool.ctx.clone(), bounds));
        Ok(Pair {
            side: Side::Dialling { pusher, feed },
            inbox,
        })
    }
}

impl Listener {
    /// Binds a [`Pair`] at `path`: one dialling pair at a time claims it.
    pub fn pair(&self, path: &str) -> Result<Pair> {
        self.pair_with(path, &EndpointOptions::new())
    }

    /// A bound [`Pair`] with bounds of its own: `send_timeout` (how long a send waits for a
    /// peer and for its stream), `endpoint_queue` and `max_collected_body` for what it
    /// receives.
    pub fn pair_with(&self, path: &str, options: &EndpointOptions) -> Result<Pair> {
        let address = self.address().with_path(path)?;
        let bounds = options.resolve(&self.context().config)?;
        let holder = Arc::new(Holder {
            path: path.to_string(),
            held: Mutex::new(None),
            changed: Notify::new(),
            closed: std::sync::atomic::AtomicBool::new(false),
        });
        let (tx, rx) = queue::channel(bounds.endpoint_queue);
        let claim: Arc<dyn Claimable> = holder.clone();
        let route = self.route_claimed(
            path,
            RouteKind::Pair,
            Some(tx),
            None::<Arc<dyn Publication>>,
            Some(claim),
            bounds,
        )?;
        let inbox = Inbox::new(rx, route, self.context().clone(), address, bounds);
        Ok(Pair {
            side: Side::Bound {
                holder,
                ctx: self.context().clone(),
                path: path.into(),
                bounds,
            },
            inbox: Puller::over(inbox),
        })
    }
}

super::receives_as_puller!(Pair);

impl Pair {
    /// The address a dialling pair connects to: a bound pair's; None for a dialling one.
    pub fn address(&self) -> Option<&Address> {
        match &self.side {
            Side::Bound { .. } => Some(self.inbox.address()),
            Side::Dialling { .. } => None,
        }
    }

    /// Connects a dialling pair to the bound pair at `address` (with its path) and claims it:
    /// `LimitExceeded` when another peer holds it, `Unsupported` when what is bound there is
    /// not a pair (or the listener takes no claims), `UnknownEndpoint` when nothing is. A pair
    /// connects to one address: `InvalidConfig` for a second, and for a bound pair, which does
    /// not dial. A lost connection is redialled, and claimed again, by the endpoint's
    /// `reconnect` policy. Cancel-safe: a `connect` dropped before it returns adds no peer.
    pub async fn connect(&self, address: &str) -> Result<()> {
        let (pusher, feed) = self.dialling()?;
        feed.aim(address)?;
        let r = pusher.connect(address).await;
        if r.is_err() {
            feed.unaim(address);
        }
        r
    }

    /// Records the bound pair's address at once and dials it in the background, as
    /// [`Pusher::connect_later`] does: until it is live, `send` fills the outbox.
    ///
    /// Cancel-safe: it returns without waiting.
    pub async fn connect_later(&self, address: &str) -> Result<()> {
        let (pusher, feed) = self.dialling()?;
        feed.aim(address)?;
        pusher.connect_later(address).await
    }

    /// Leaves the bound pair (a dialling pair); true if it was connected. The bound pair is
    /// claimable again once the connection is gone.
    pub fn disconnect(&self, address: &str) -> Result<bool> {
        let (pusher, feed) = self.dialling()?;
        let left = pusher.disconnect(address)?;
        if left {
            feed.unaim(address);
        }
        Ok(left)
    }

    /// 1 while the other side is there (a dialling pair's connection is up; a bound pair is
    /// claimed), else 0.
    pub fn peer_count(&self) -> usize {
        match &self.side {
            Side::Dialling { pusher, .. } => pusher.peer_count(),
            Side::Bound { holder, .. } => usize::from(holder.held.lock().unwrap().is_some()),
        }
    }

    /// What happens to a dialling pair's address ([`crate::PeerEvent`]); a bound pair's
    /// connections are its listener's events.
    pub fn events(&self) -> Result<crate::PeerEvents> {
        Ok(self.dialling()?.0.events())
    }

    /// Sends a whole message to the other side. A dialling pair sends as a pusher does (the
    /// outbox while its peer is away, redial). A bound pair waits for a peer to claim it, then
    /// opens a stream toward it, both bounded by `send_timeout` (`Timeout`); it returns once
    /// the FIN is queued, the receipt kept for `drain`. Cancel-safe as [`Pusher::send`] is.
    pub async fn send(&self, body: impl Into<Bytes>) -> Result<()> {
        self.send_with(Metadata::new(), body).await
    }

    /// [`Pair::send`] with metadata. Cancel-safe as `send` is.
    pub async fn send_with(&self, meta: Metadata, body: impl Into<Bytes>) -> Result<()> {
        match &self.side {
            Side::Dialling { pusher, .. } => pusher.send_with(meta, body).await,
            Side::Bound { .. } => {
                let t = self.open_bound(meta, Some(body.into())).await?;
                drop(t.finish().await?);
                Ok(())
            }
        }
    }

    /// Opens a streamed message to the other side: write it in parts, then `finish`. A bound
    /// pair waits for a peer as `send` does. Cancel-safe: dropped before it returns, nothing
    /// was opened, or what was is reset.
    pub async fn open(&self, meta: Metadata) -> Result<OutgoingTransfer> {
        match &self.side {
            Side::Dialling { pusher, .. } => pusher.open(meta).await,
            Side::Bound { .. } => self.open_bound(meta, None).await,
        }
    }

    /// A stream toward the peer that claimed this bound pair, its head (and `body`) written.
    async fn open_bound(&self, meta: Metadata, body: Option<Bytes>) -> Result<OutgoingTransfer> {
        let Side::Bound {
            holder,
            ctx,
            path,
            bounds,
        } = &self.side
        else {
            unreachable!("a bound pair's")
        };
        ctx.check_open()?;
        let started = tokio::time::Instant::now();
        let way = Context::within(bounds.send_timeout, holder.way()).await?;
        let left = bounds
            .send_timeout
            .map(|d| d.saturating_sub(started.elapsed()));
        open_toward(ctx, &way, path, meta, body, left).await
    }

    /// Closes this end: a bound pair unbinds its path (streams sent to it are refused) and its
    /// sends fail `Closed`; a dialling pair leaves its peer. What was received is still handed
    /// out, then `Closed`.
    pub fn close(&self) {
        match &self.side {
            Side::Dialling { pusher, feed } => {
                pusher.leave();
                feed.close();
            }
            Side::Bound { holder, .. } => {
                holder
                    .closed
                    .store(true, std::sync::atomic::Ordering::Release);
                holder.changed.notify_waiters();
                self.inbox.close();
            }
        }
    }

    fn dialling(&self) -> Result<(&Pusher, &Arc<Feed>)> {
        match &self.side {
            Side::Dialling { pusher, feed } => Ok((pusher, feed)),
            Side::Bound { .. } => Err(Error::InvalidConfig(
                "a bound pair does not dial: its peer connects to it".into(),
            )),
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        if let Side::Dialling { feed, .. } = &self.side {
            feed.close();
        }
    }
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = match self.side {
            Side::Dialling { .. } => "dialling",
            Side::Bound { .. } => "bound",
        };
        f.debug_struct("Pair")
            .field("side", &side)
            .field("peers", &self.peer_count())
            .finish()
    }
}

/// A bound pair's claim: the connection holding it and the way back to its dialler.
struct Holder {
    path: String,
    held: Mutex<Option<(u64, Way)>>,
    /// Wakes a send waiting for a peer.
    changed: Notify,
    /// The pair was closed: its sends fail `Closed`.
    closed: std::sync::atomic::AtomicBool,
}

impl Holder {
    /// The way to the peer, waiting for one to claim the pair. Cancel-safe.
    async fn way(&self) -> Result<Way> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.closed.load(std::sync::atomic::Ordering::Acquire) {
                return Err(Error::Closed);
            }
            if let Some((_, w)) = &*self.held.lock().unwrap() {
                return Ok(w.clone());
            }
            changed.await;
        }
    }
}

impl Claimable for Holder {
    fn claim(&self, conn: u64, way: Way) -> std::result::Result<(), (Code, String)> {
        let mut held = self.held.lock().unwrap();
        if let Some((by, _)) = &*held {
            if *by != conn {
                return Err((
                    Code::LimitExceeded,
                    format!("the pair at {:?} has its peer already", self.path),
                ));
            }
        }
        *held = Some((conn, way));
        drop(held);
        self.changed.notify_waiters();
        Ok(())
    }

    fn release(&self, conn: u64) {
        let mut held = self.held.lock().unwrap();
        if held.as_ref().is_some_and(|(by, _)| *by == conn) {
            *held = None;
        }
    }

    fn admits(&self, conn: Option<u64>) -> bool {
        match (&*self.held.lock().unwrap(), conn) {
            (Some((by, _)), Some(c)) => *by == c,
            (None, Some(_)) => false,
            // An AF_UNIX data connection names no connection (PROTOCOL.md Open point 3), and
            // may arrive after its session ended (the kernel held it): a local stream is taken
            // unless a remote connection holds the pair (the socket file's permissions are what
            // keeps other processes out).
            (Some((_, way)), None) => way.reverse.is_parked(),
            (None, None) => true,
        }
    }
}
