//! A dialled address outlives its connection: one task per slot waits for the slot's
//! connection to end, then redials the address with the endpoint's [`ReconnectPolicy`] until a
//! connection is back, the policy gives up, or the endpoint lets go of the address. Every
//! transition is a [`PeerEvent`].
//!
//! The slot pins the key its first connection proved: a redial answered by another key is
//! refused in the TLS handshake, never goes live, and gives the address up
//! ([`LossCause::PeerChanged`]). In process there is no network to wait out: the redial waits
//! for the name to be bound again, with no timer.

use std::sync::{Arc, Weak};

use futures_util::future::BoxFuture;

use super::events::{EventSender, PeerEvent};
use super::peers::PeerSet;
use super::pool::Pool;
use crate::address::{Address, Target};
use crate::config::{GiveUp, ReconnectPolicy};
use crate::connection::context::Context;
use crate::connection::handshake::Flow;
use crate::connection::link::Link;
use crate::error::{Error, ErrorCode, LossCause, Result};
use crate::transport::{inproc, PeerIdentity};

/// The endpoint a slot belongs to, as its redial task sees it.
pub(crate) trait Owner: Send + Sync + 'static {
    /// Dials `address` (the slot's, pinned) for this endpoint.
    fn dial<'a>(&'a self, address: &'a Address) -> BoxFuture<'a, Result<Arc<Link>>>;
    /// Puts `link`, the slot `url`'s new connection, to use: false when the slot is gone; an
    /// error (a publisher refused a filter again) counts as a failed attempt.
    fn attach<'a>(&'a self, url: &'a Address, link: Arc<Link>) -> BoxFuture<'a, Result<bool>>;
    /// The slot `url` is given up for `cause`: it stays down, and nothing waits for it any
    /// more.
    fn gave_up(&self, url: &Address, cause: &LossCause);
    /// Where the endpoint's events go.
    fn events(&self) -> &EventSender;
    /// The runtime the endpoint lives in, whose state says whether a loss is its own doing.
    fn ctx(&self) -> &Context;
}

/// A sending endpoint's slots (Pusher, Requester, Peer): redialled through the runtime's pool.
pub(crate) struct Pooled {
    pool: Arc<Pool>,
    peers: Arc<PeerSet>,
    /// The stream kinds the endpoint opens, which the path it dials must take
    /// ([`crate::wire::check_streams`]).
    streams: u64,
    /// The ordering its connections offer and require.
    flow: Flow,
    /// An endpoint that claims what it dials (a pair) has a connection of its own per slot,
    /// claims the path on it instead of checking it, and puts each new one to use.
    claim: Option<Claim>,
}

/// How a claiming endpoint dials: the role it claims in, and how it reads each connection it
/// claims on (the streams the listener opens on it).
pub(crate) struct Claim {
    pub(crate) role: u64,
    pub(crate) read: Reads,
}

/// Starts reading the streams the listener opens on a claiming endpoint's new connection.
pub(crate) type Reads = Box<dyn Fn(&Arc<Link>) + Send + Sync>;

impl Pooled {
    pub(crate) fn new(pool: Arc<Pool>, peers: Arc<PeerSet>, streams: u64, flow: Flow) -> Self {
        Self {
            pool,
            peers,
            streams,
            flow,
            claim: None,
        }
    }

    /// The slots of an endpoint that claims what it dials.
    pub(crate) fn claiming(pool: Arc<Pool>, peers: Arc<PeerSet>, flow: Flow, claim: Claim) -> Self {
        Self {
            pool,
            peers,
            streams: 0,
            flow,
            claim: Some(claim),
        }
    }
}

impl Owner for Pooled {
    /// The pool's connection to `address`, once its listener said the path takes what this
    /// endpoint opens (PROTOCOL.md §3.1.5). The one way into a live slot, for `connect` and for
    /// every redial alike, so no slot goes live on a path that is not bound, or bound to
    /// another pattern. A refused check lets go of the connection (the pool closes it when no
    /// other endpoint holds it).
    fn dial<'a>(&'a self, address: &'a Address) -> BoxFuture<'a, Result<Arc<Link>>> {
        Box::pin(async move {
            if let Some(c) = &self.claim {
                let link = self.pool.dial_own(address, self.flow).await?;
                // Read before the claim: over AF_UNIX the listener answers it only once the
                // connections this side parks for it have arrived (PROTOCOL.md §3.7). It sends
                // nothing on them before the claim is held.
                (c.read)(&link);
                return match link.claim(c.role).await {
                    Ok(()) => Ok(link),
                    Err(e) => {
                        self.pool.release(link);
                        Err(e)
                    }
                };
            }
            let link = self.pool.link(address, self.flow).await?;
            match link.check(self.streams).await {
                Ok(()) => Ok(link),
                Err(e) => {
                    self.pool.release(link);
                    Err(e)
                }
            }
        })
    }

    fn attach<'a>(&'a self, url: &'a Address, link: Arc<Link>) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let attached = self.peers.replace(url, link.clone());
            if !attached {
                self.pool.release(link);
            }
            Ok(attached)
        })
    }

    fn gave_up(&self, url: &Address, cause: &LossCause) {
        self.peers.gave_up(url, cause.clone());
    }

    fn events(&self) -> &EventSender {
        &self.peers.events
    }

    fn ctx(&self) -> &Context {
        &self.pool.ctx
    }
}

/// The address a slot redials. When the runtime trusts any key (`Trust::unverified`) and the
/// address names none, it is `url` with the key `link` proved pinned into it, so a redial
/// answered by another key is refused in the handshake (trust on first use). When the address
/// pins a key, that key is required anyway; when the trust lists pins or anchors, it decides
/// again at each redial, so a key it accepts is the same peer (a rotation within the trust,
/// docs/DEPLOYING.md way b). A local transport proves no key.
pub(crate) fn pinned(url: &Address, link: &Link) -> Address {
    if !link.ctx.config.trust.accepts_any_key() {
        return url.clone();
    }
    match (&link.peer, url.pin(), url.target()) {
        (Some(PeerIdentity::Key(fp)), None, Target::Quic { .. }) => {
            url.with_pin(*fp).unwrap_or_else(|_| url.clone())
        }
        _ => url.clone(),
    }
}

/// Whether `policy` redials at all (`ReconnectPolicy::never()` does not).
pub(crate) fn redials(policy: &ReconnectPolicy) -> bool {
    !matches!(policy.give_up, GiveUp::AfterAttempts(0))
}

/// The key `link` proved, for [`PeerEvent::Connected`].
pub(crate) fn fingerprint(link: &Link) -> Option<crate::Fingerprint> {
    match &link.peer {
        Some(PeerIdentity::Key(fp)) => Some(*fp),
        _ => None,
    }
}

/// The slot `url`'s task: from its first live `link`, redial on every loss by `policy`. It
/// watches the connection, not the link: the pool counts a link's holders to know when the
/// last endpoint let go of it, and a watcher is none of them.
pub(crate) fn run(
    owner: Weak<dyn Owner>,
    url: Address,
    link: &Link,
    policy: ReconnectPolicy,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let dial_to = pinned(&url, link);
    let conn = link.conn.clone();
    watch(owner, url, dial_to, conn, policy)
}

/// The task of a slot recorded before its first connection (`connect_later`): dials `url` at
/// once, then by `policy` (in process: when the name is bound) until a connection is attached,
/// and from then on is the slot's task as [`run`] is. The key the first connection proves is
/// pinned for the redials after it.
pub(crate) async fn later(owner: Weak<dyn Owner>, url: Address, policy: ReconnectPolicy) {
    let name = url.to_string();
    let first = match first_dial(&owner, &url).await {
        Some(Ok(link)) => Ok(link),
        Some(Err(cause)) => Err(cause),
        None => return,
    };
    let link = match first {
        Ok(link) => {
            let Some(o) = owner.upgrade() else { return };
            o.events().send(PeerEvent::Connected {
                url: name,
                fingerprint: fingerprint(&link),
            });
            link
        }
        Err(cause) => match redial(&owner, &url, &url, &name, &policy, cause).await {
            Some(link) => link,
            None => return,
        },
    };
    let dial_to = pinned(&url, &link);
    let conn = link.conn.clone();
    watch(owner, url, dial_to, conn, policy).await
}

/// `later`'s first attempt, with no delay: the link attached, why it failed, or None when the
/// slot or its endpoint is gone. In process, a name not bound yet is not dialled.
async fn first_dial(
    owner: &Weak<dyn Owner>,
    url: &Address,
) -> Option<std::result::Result<Arc<Link>, LossCause>> {
    let o = owner.upgrade()?;
    if let Target::Inproc(n) = url.target() {
        if !inproc::is_bound(n) {
            return Some(Err(LossCause::DialFailed(format!("{n} is not bound"))));
        }
    }
    let dialled = match o.dial(url).await {
        Ok(link) => match o.attach(url, link.clone()).await {
            Ok(true) => Ok(link),
            Ok(false) => return None,
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    Some(dialled.map_err(|e| failed_because(&e)))
}

/// The loss cause of a failed dial: the path unbound is one of its own.
fn failed_because(e: &Error) -> LossCause {
    match e {
        Error::UnknownEndpoint { path } => LossCause::UnknownEndpoint(path.clone()),
        _ => LossCause::DialFailed(e.to_string()),
    }
}

async fn watch(
    owner: Weak<dyn Owner>,
    url: Address,
    dial_to: Address,
    mut conn: crate::transport::Conn,
    policy: ReconnectPolicy,
) {
    let name = url.to_string();
    loop {
        let cause = conn.closed().await;
        let Some(o) = owner.upgrade() else { return };
        o.events().send(PeerEvent::Lost {
            url: name.clone(),
            cause: cause.clone(),
        });
        // This side closed it (shutdown, close), or drained: a drain's GOAWAY has the listener
        // close each connection once what it sent was taken, which reads as the peer's close
        // but is this side's doing. Nothing to come back to.
        if cause == LossCause::LocallyClosed || o.ctx().check_running().is_err() {
            return give_up(&*o, &url, LossCause::LocallyClosed);
        }
        let stop_now =
            !redials(&policy) || (policy.stop.peer_closed && cause == LossCause::PeerClosed);
        if stop_now {
            return give_up(&*o, &url, cause);
        }
        drop(o);
        match redial(&owner, &url, &dial_to, &name, &policy, cause).await {
            Some(l) => conn = l.conn.clone(),
            None => return,
        }
    }
}

/// Redials until a connection is attached (Some) or the slot is given up or gone (None).
async fn redial(
    owner: &Weak<dyn Owner>,
    url: &Address,
    dial_to: &Address,
    name: &str,
    policy: &ReconnectPolicy,
    mut last: LossCause,
) -> Option<Arc<Link>> {
    let since = tokio::time::Instant::now();
    let in_process = match url.target() {
        Target::Inproc(n) => Some(n.clone()),
        _ => None,
    };
    let mut attempt: u32 = 0;
    loop {
        attempt = attempt.saturating_add(1);
        let exhausted = match policy.give_up {
            GiveUp::Never => false,
            GiveUp::AfterAttempts(n) => attempt > n,
            GiveUp::After(d) => since.elapsed() >= d,
        };
        if exhausted {
            let o = owner.upgrade()?;
            give_up(&*o, url, last);
            return None;
        }
        // In process, a name not bound yet is waited for, with no timer; a name bound whose dial
        // failed (its path not bound yet, a filter refused) waits the policy's delay, as any
        // transport does, rather than retrying in a loop.
        let for_name = in_process.as_ref().filter(|n| !inproc::is_bound(n));
        let delay = match for_name {
            Some(_) => std::time::Duration::ZERO,
            None => policy.jittered(attempt, rand::random::<f64>()),
        };
        owner.upgrade()?.events().send(PeerEvent::Retrying {
            url: name.to_string(),
            attempt,
            delay,
        });
        match for_name {
            Some(n) => bounded_wait(policy, since, inproc::wait_bound(n)).await,
            None => tokio::time::sleep(delay).await,
        }
        let o = owner.upgrade()?;
        let dialled = match o.dial(dial_to).await {
            Ok(link) => match o.attach(url, link.clone()).await {
                Ok(true) => Ok(link),
                Ok(false) => return None,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        match dialled {
            Ok(link) => {
                o.events().send(PeerEvent::Connected {
                    url: name.to_string(),
                    fingerprint: fingerprint(&link),
                });
                return Some(link);
            }
            // The pinned key did not answer: another peer holds the address now.
            Err(Error::Untrusted { .. }) if dial_to.pin().is_some() => {
                give_up(&*o, url, LossCause::PeerChanged);
                return None;
            }
            // The runtime closed while the redial waited: it is over, with nothing to report.
            Err(Error::Closed) => {
                give_up(&*o, url, LossCause::LocallyClosed);
                return None;
            }
            // The listener serves the path with another pattern now: the address no longer
            // names what was connected, as with another key (PeerChanged).
            Err(e @ Error::Unsupported(_)) => {
                give_up(&*o, url, LossCause::DialFailed(e.to_string()));
                return None;
            }
            Err(e) => {
                let stop = match e.code() {
                    // Nothing bound at the path is a refusal, retried like a closed port: a
                    // restarting server binds its listener a moment before its paths.
                    ErrorCode::Unreachable | ErrorCode::UnknownEndpoint => policy.stop.refused,
                    ErrorCode::Untrusted | ErrorCode::NegotiationFailed | ErrorCode::Protocol => {
                        policy.stop.handshake_failed
                    }
                    _ => false,
                };
                tracing::debug!(address = %url, attempt, error = %e, "redial failed");
                last = failed_because(&e);
                if stop {
                    give_up(&*o, url, last);
                    return None;
                }
            }
        }
    }
}

/// Waits for `f`, or until a `GiveUp::After` deadline passes (the next attempt then gives up).
async fn bounded_wait(
    policy: &ReconnectPolicy,
    since: tokio::time::Instant,
    f: impl std::future::Future<Output = ()>,
) {
    match policy.give_up {
        GiveUp::After(d) => {
            let _ = tokio::time::timeout_at(since + d, f).await;
        }
        _ => f.await,
    }
}

fn give_up(o: &dyn Owner, url: &Address, cause: LossCause) {
    o.gave_up(url, &cause);
    o.events().send(PeerEvent::GaveUp {
        url: url.to_string(),
        cause,
    });
}
