//! A listener: a bound address, its accept loop (QUIC, in process or AF_UNIX), and the
//! endpoints bound on it by path. Each pattern's factory (`Listener::puller`, ...) is in the
//! pattern's own file, so this layer knows no pattern.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tracing::Instrument;

use super::events::{EventSender, PeerEvent, PeerEvents};
use super::inbox::Inbox;
use super::queue;
use super::routes::{Route, RouteGuard, RouteTable};
use crate::address::{Address, Target};
use crate::config::{Bounds, EndpointOptions};
use crate::connection::admission::RouteKind;
use crate::connection::context::Context;
use crate::connection::dial::pipe_unsupported;
use crate::connection::dispatch::{Arrivals, Dispatch, Queued};
use crate::connection::reverse::{Claimable, Publication};
use crate::error::{AddressPart, Error, LossCause, Result};
use crate::security::trust::ServerTls;
use crate::transport::{inproc, quic, unix, Conn, Life, PeerIdentity};
use crate::wire::Code;

/// A bound address: endpoints are registered on it by path.
///
/// ```no_run
/// # async fn f() -> weida::Result<()> {
/// let rt = weida::Runtime::new(Default::default())?;
/// let listener = rt.bind("weida://127.0.0.1:0").await?;
/// let replier = listener.replier("/echo")?;
/// println!("dial {}", replier.address()); // weida://sha256:…@127.0.0.1:port/echo
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Listener {
    inner: Arc<ListenerInner>,
}

pub(crate) struct ListenerInner {
    ctx: Arc<Context>,
    address: Address,
    routes: Arc<RouteTable>,
    life: Arc<Life>,
    quic: Option<quic::Server>,
    /// An AF_UNIX listener's socket, closed at once by `close`.
    local: Option<unix::Closer>,
    events: EventSender,
}

/// A listener's connections as its events: each one whose handshake completed
/// (`Connected`, `url` where it comes from) and how it ended (`Lost`).
struct Arrived(EventSender);

impl Arrivals for Arrived {
    fn connected(&self, from: &str, peer: Option<&PeerIdentity>) {
        let fingerprint = match peer {
            Some(PeerIdentity::Key(fp)) => Some(*fp),
            _ => None,
        };
        self.0.send(PeerEvent::Connected {
            url: from.into(),
            fingerprint,
        });
    }

    fn ended(&self, from: &str, cause: LossCause) {
        self.0.send(PeerEvent::Lost {
            url: from.into(),
            cause,
        });
    }
}

impl Drop for ListenerInner {
    fn drop(&mut self) {
        self.life.kill(LossCause::LocallyClosed);
        if let Some(ep) = &self.quic {
            ep.close(Code::GoingAway, b"listener dropped");
        }
        if let Some(local) = &self.local {
            local.close();
        }
    }
}

/// Every listener of a runtime, by its life and its routes: at shutdown the lives are killed
/// (local socket streams watch theirs), the routes dropped (which ends every endpoint's queue)
/// and AF_UNIX sockets closed; and its QUIC listeners, whose endpoints are closed then, and
/// waited for until their closes have been sent.
#[derive(Default)]
pub(crate) struct Listeners {
    ends: Mutex<Vec<End>>,
    /// Weak: a listener nothing holds any more closes itself (`ListenerInner`'s drop).
    quic: Mutex<Vec<Weak<ListenerInner>>>,
}

impl Listeners {
    fn add(&self, life: &Arc<Life>, routes: &Arc<RouteTable>, local: Option<unix::Closer>) {
        let entry = End {
            life: Arc::downgrade(life),
            routes: Arc::downgrade(routes),
            local,
        };
        self.ends.lock().unwrap().push(entry);
    }

    fn add_quic(&self, inner: &Arc<ListenerInner>) {
        let mut quic = self.quic.lock().unwrap();
        quic.retain(|l| l.strong_count() > 0);
        quic.push(Arc::downgrade(inner));
    }

    /// Ends every listener (shutdown), and returns the QUIC endpoints of those still held, to
    /// wait until their closes have been sent.
    pub(crate) fn close(&self) -> Vec<quic::Server> {
        for end in self.ends.lock().unwrap().drain(..) {
            if let Some(l) = end.life.upgrade() {
                l.kill(LossCause::LocallyClosed);
            }
            if let Some(r) = end.routes.upgrade() {
                r.clear();
            }
            if let Some(local) = end.local {
                local.close();
            }
        }
        let quic: Vec<_> = self.quic.lock().unwrap().drain(..).collect();
        quic.iter()
            .filter_map(Weak::upgrade)
            .filter_map(|l| l.quic.clone())
            .inspect(|ep| ep.close(Code::GoingAway, b"shutdown"))
            .collect()
    }
}

/// One listener as its runtime's shutdown ends it.
struct End {
    life: Weak<Life>,
    routes: Weak<RouteTable>,
    local: Option<unix::Closer>,
}

/// One connection of a listener's count, released when its task ends.
struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Binds `address` (no path) with `tls` and starts its accept loop.
pub(crate) async fn bind(
    ctx: &Arc<Context>,
    listeners: &Listeners,
    address: &str,
    tls: ServerTls,
) -> Result<Listener> {
    ctx.check_open()?;
    let addr = Address::parse(address)?;
    if addr.path().is_some() {
        return Err(Error::InvalidAddress {
            part: AddressPart::Path,
            reason: format!(
                "bind {:?} without a path; endpoints are bound by path on the listener",
                address
            ),
        });
    }
    let life = Life::new();
    let routes: Arc<RouteTable> = Arc::default();
    let events = EventSender::default();
    let arrived = Arc::new(Arrived(events.clone()));
    let dispatch = Dispatch::new(ctx.clone(), routes.clone(), arrived, life.clone());
    let limits = ctx.limits.clone();
    let (bound_address, quic_ep, local) = match addr.target() {
        Target::Quic { host, port } => {
            let at = quic::resolve(host, *port).await?;
            let server = quic::server_endpoint(at, &tls, &limits, ctx.config.udp_buffer)?;
            let local = server.local_addr()?;
            let bound = Address::parse(&format!(
                "weida://{}@{}",
                tls.identity().fingerprint(),
                match local {
                    std::net::SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
                    v4 => v4.to_string(),
                }
            ))?;
            let ep = server.clone();
            let (life2, d, rt_life) = (life.clone(), dispatch.clone(), ctx.life.clone());
            let most = limits.max_connections;
            tokio::spawn(async move {
                // Connections held, handshakes under way included: one more than
                // `max_connections` is refused before its handshake.
                let held = Arc::new(AtomicUsize::new(0));
                loop {
                    let incoming = tokio::select! {
                        i = server.next() => i,
                        _ = life2.dead() => break,
                        _ = rt_life.dead() => break,
                    };
                    let Some(incoming) = incoming else { break };
                    if held.fetch_add(1, Ordering::AcqRel) >= most {
                        held.fetch_sub(1, Ordering::AcqRel);
                        tracing::debug!(max_connections = most, "a connection refused");
                        server.refuse(incoming);
                        continue;
                    }
                    let (d, life, server) = (d.clone(), life2.clone(), server.clone());
                    let held = Held(held.clone());
                    tokio::spawn(async move {
                        let _held = held;
                        match server.accept(incoming).await {
                            Ok((c, remote)) => {
                                let span = tracing::debug_span!("connection", %remote);
                                d.connection(c, life).instrument(span).await
                            }
                            Err(e) => tracing::debug!(error = %e, "handshake failed"),
                        }
                    });
                }
            });
            (bound, Some(ep), None)
        }
        Target::Inproc(name) => {
            let lives = [life.clone(), ctx.names.clone()];
            let mut bound = inproc::bind(name, &limits, lives)?;
            let (life2, d, rt_life) = (life.clone(), dispatch.clone(), ctx.life.clone());
            tokio::spawn(async move {
                loop {
                    let c = tokio::select! {
                        c = bound.accept() => c,
                        _ = life2.dead() => break,
                        _ = rt_life.dead() => break,
                    };
                    let Some(c) = c else { break };
                    let span = tracing::debug_span!("connection", transport = "inproc");
                    tokio::spawn(
                        d.clone()
                            .connection(Conn::Inproc(c), life2.clone())
                            .instrument(span),
                    );
                }
            });
            (addr.clone(), None, None)
        }
        Target::Unix(t) => {
            let lives = [life.clone(), ctx.life.clone()];
            let mut bound = unix::bind(t, &limits, lives)?;
            let closer = bound.closer();
            let (life2, d, rt_life) = (life.clone(), dispatch.clone(), ctx.life.clone());
            tokio::spawn(async move {
                loop {
                    let raw = tokio::select! {
                        r = bound.accept(life2.clone()) => r,
                        _ = life2.dead() => break,
                        _ = rt_life.dead() => break,
                    };
                    match raw {
                        Ok(raw) => {
                            tokio::spawn(d.clone().stream(raw));
                        }
                        // The listener's close shut the socket down (its accept fails).
                        Err(_) if life2.cause().is_some() => break,
                        Err(e) => {
                            tracing::warn!(error = %e, "local socket accept failed");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
            });
            (addr.clone(), None, Some(closer))
        }
        Target::Pipe(_) => return Err(pipe_unsupported()),
        #[allow(unreachable_patterns)]
        _ => return Err(Error::Unsupported(format!("transport of {addr}"))),
    };
    tracing::debug!(address = %bound_address, "bound");
    listeners.add(&life, &routes, local.clone());
    let inner = Arc::new(ListenerInner {
        ctx: ctx.clone(),
        address: bound_address,
        routes,
        life,
        quic: quic_ep,
        local,
        events,
    });
    if inner.quic.is_some() {
        listeners.add_quic(&inner);
    }
    // Added only now, so a shutdown that began while this bind was under way (a QUIC
    // address's resolve awaited) may have closed the listeners before this one: then it ends
    // here, its drop closing what it holds.
    ctx.check_open()?;
    Ok(Listener { inner })
}

impl Listener {
    /// The bound address, with the real port and, over QUIC, the pin of the key it presents.
    pub fn address(&self) -> &Address {
        &self.inner.address
    }

    /// The connections this listener accepts from now on: `Connected` once a peer's
    /// handshake completed (`url` is where it comes from: a QUIC peer's UDP address, `unix`
    /// or `inproc`; `fingerprint` the key it presented, if any) and `Lost` when that
    /// connection ended, with its cause (`PeerClosed` when the peer closed or went away
    /// gracefully, `IdleTimeout`, `TransportError`, `LocallyClosed` when this side closed).
    /// Reading them is optional; a reader that falls behind is told how many it missed.
    ///
    /// ```no_run
    /// # async fn f(listener: weida::Listener) {
    /// let mut events = listener.events();
    /// while let Some(Ok(e)) = events.next().await {
    ///     println!("{} {}", e.name(), e.url()); // connected 127.0.0.1:50321
    /// }
    /// # }
    /// ```
    pub fn events(&self) -> PeerEvents {
        self.inner.events.subscribe()
    }

    /// What the listener's endpoints share with its runtime's connections.
    pub(crate) fn context(&self) -> &Arc<Context> {
        &self.inner.ctx
    }

    /// Binds `path` to an endpoint of `kind`: its queue `tx`, or for a publisher its
    /// `publication`.
    pub(crate) fn route(
        &self,
        path: &str,
        kind: RouteKind,
        tx: Option<queue::Sender<Queued>>,
        publication: Option<Arc<dyn Publication>>,
        bounds: Bounds,
    ) -> Result<RouteGuard> {
        self.route_claimed(path, kind, tx, publication, None, bounds)
    }

    /// [`Listener::route`] for an endpoint a dialler claims (a pair).
    pub(crate) fn route_claimed(
        &self,
        path: &str,
        kind: RouteKind,
        tx: Option<queue::Sender<Queued>>,
        publication: Option<Arc<dyn Publication>>,
        claim: Option<Arc<dyn Claimable>>,
        bounds: Bounds,
    ) -> Result<RouteGuard> {
        crate::address::validate_path(path)?;
        static NEXT_ROUTE: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ROUTE.fetch_add(1, Ordering::Relaxed);
        let route = Route {
            kind,
            tx,
            publication,
            claim,
            id,
            max_body: bounds.max_collected_body,
        };
        if !self.inner.routes.insert(path, route) {
            return Err(Error::InvalidConfig(format!(
                "path {path:?} is already bound on {}",
                self.inner.address
            )));
        }
        let routes = self.inner.routes.clone();
        Ok(RouteGuard::new(routes, path, id, self.inner.clone()))
    }

    /// Binds `path` to an endpoint of `kind` that takes streams, with its `options`: its
    /// receiving side.
    pub(crate) fn register(
        &self,
        path: &str,
        kind: RouteKind,
        options: &EndpointOptions,
    ) -> Result<Inbox> {
        let address = self.inner.address.with_path(path)?;
        let bounds = options.resolve(&self.inner.ctx.config)?;
        let (tx, rx) = queue::channel(bounds.endpoint_queue);
        let route = self.route(path, kind, Some(tx), None, bounds)?;
        Ok(Inbox::new(
            rx,
            route,
            self.inner.ctx.clone(),
            address,
            bounds,
        ))
    }

    /// Stops accepting connections, closes the ones it accepted, and ends its endpoints.
    pub fn close(&self) {
        self.inner.life.kill(LossCause::LocallyClosed);
        self.inner.routes.clear();
        if let Some(ep) = &self.inner.quic {
            ep.close(Code::GoingAway, b"listener closed");
        }
        if let Some(local) = &self.inner.local {
            local.close();
        }
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("address", &self.inner.address)
            .finish()
    }
}
