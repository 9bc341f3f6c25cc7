//! The pool of dialled connections: one per dialled address (path included), shared by the
//! endpoints of one runtime that dial it, held until the last of them lets go (ARCHITECTURE.md
//! §4).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tracing::Instrument;

use super::outbox::Outbox;
use crate::address::Address;
use crate::connection::context::Context;
use crate::connection::dial::{subscriber_session, Dialler};
use crate::connection::handshake::Flow;
use crate::connection::link::Link;
use crate::error::Result;

/// The dialled connections of one runtime, and what dialling them needs.
pub(crate) struct Pool {
    pub(crate) ctx: Arc<Context>,
    dialler: Dialler,
    // Strong: a finished transfer needs no local handle, only its connection, and the pool is
    // what keeps it (PATTERNS §1.1). Connections end with drain/shutdown or the peer. Keyed by
    // address and flow: a pusher's HELLO offers what a requester's does not.
    links: Mutex<HashMap<(String, Flow), Arc<Link>>>,
    /// The runtime the connections run on, for work started from a drop.
    runtime: OnceLock<tokio::runtime::Handle>,
    /// The pushers' outboxes, for a drain to write out first.
    outboxes: Mutex<Vec<Weak<Outbox>>>,
    /// The connections endpoints dialled for themselves (`dial_own`), for a drain to write
    /// out too.
    own: Mutex<Vec<Weak<Link>>>,
}

impl Pool {
    pub(crate) fn new(ctx: Arc<Context>) -> Self {
        Self {
            dialler: Dialler::new(&ctx.config),
            ctx,
            links: Mutex::new(HashMap::new()),
            runtime: OnceLock::new(),
            outboxes: Mutex::default(),
            own: Mutex::default(),
        }
    }

    /// A new endpoint's outbox, known to `Runtime::drain`.
    pub(crate) fn outbox(&self, bounds: crate::config::Outbox) -> Arc<Outbox> {
        let o = Arc::new(Outbox::new(bounds, self.ctx.clone()));
        let mut all = self.outboxes.lock().unwrap();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&o));
        o
    }

    /// Every outbox whose endpoint lives.
    pub(crate) fn outboxes(&self) -> Vec<Arc<Outbox>> {
        let all = self.outboxes.lock().unwrap();
        all.iter().filter_map(Weak::upgrade).collect()
    }

    /// An endpoint let go of `link`. When no other endpoint holds it, it leaves the pool and
    /// goes away gracefully: GOAWAY, and the listener closes once it has taken every stream,
    /// so what was finished on it still arrives (PATTERNS §1.1).
    pub(crate) fn release(&self, link: Arc<Link>) {
        let mut pool = self.links.lock().unwrap();
        // Found by identity: a redialled slot's link is pooled under its pinned address.
        let key = pool
            .iter()
            .find(|(_, l)| Arc::ptr_eq(l, &link))
            .map(|(k, _)| k.clone());
        // Held by the pool and by `link` only: nobody else sends on it. A link the pool never
        // held (an endpoint's own, `dial_own`) is its endpoint's alone: it goes now.
        let last = match key {
            Some(key) if Arc::strong_count(&link) == 2 => {
                pool.remove(&key);
                true
            }
            Some(_) => false,
            None => true,
        };
        if last {
            drop(pool);
            if let Some(rt) = self.runtime.get() {
                let wait = self.ctx.limits.idle_timeout;
                rt.spawn(async move {
                    link.close_lane().await;
                    link.go_away().await;
                    // Keep the connection (and its control stream) until the listener closes
                    // it: dropping the last handle would close it under unread streams.
                    let _ = tokio::time::timeout(wait, link.conn.closed()).await;
                });
            }
        }
    }

    /// The live connection for `address` (one per dialled path and flow), dialling it if needed.
    /// A drain's flush may still dial (a slot recorded by `connect_later` whose outbox waits),
    /// so this checks that the runtime runs, not that it admits work: the endpoints do that.
    pub(crate) async fn link(&self, address: &Address, flow: Flow) -> Result<Arc<Link>> {
        self.ctx.check_running()?;
        let _ = self.runtime.set(tokio::runtime::Handle::current());
        let path: Arc<str> = address.endpoint_path()?.into();
        let key = (address.to_string(), flow);
        if let Some(l) = self.links.lock().unwrap().get(&key).cloned() {
            if l.conn.loss().is_none() {
                return Ok(l);
            }
        }
        let span = tracing::debug_span!("dial", %address);
        let dial = self.dialler.dial(&self.ctx, address, path, None, flow);
        let link = dial.instrument(span).await?;
        self.links.lock().unwrap().insert(key, link.clone());
        Ok(link)
    }

    /// A connection of its own for a subscriber (never pooled: a subscriber is what its
    /// publisher counts and bounds). Over AF_UNIX it announces the reverse connections it
    /// parks (PROTOCOL.md §3.7).
    pub(crate) async fn dial_subscriber(&self, address: &Address) -> Result<Arc<Link>> {
        self.ctx.check_open()?;
        let _ = self.runtime.set(tokio::runtime::Handle::current());
        let path: Arc<str> = address.endpoint_path()?.into();
        let session = subscriber_session(&self.ctx.limits, address);
        let span = tracing::debug_span!("dial", %address, subscriber = true);
        let dial = self
            .dialler
            .dial(&self.ctx, address, path, session, Flow::Receives);
        dial.instrument(span).await
    }

    /// A connection of its own for an endpoint that claims what it dials (a pair: the listener
    /// opens streams toward it on this connection, PROTOCOL.md §3.1.6; over AF_UNIX on
    /// connections it parks, §3.7), never pooled with other endpoints'. [`Pool::release`]
    /// closes it gracefully.
    pub(crate) async fn dial_own(&self, address: &Address, flow: Flow) -> Result<Arc<Link>> {
        self.ctx.check_running()?;
        let _ = self.runtime.set(tokio::runtime::Handle::current());
        let path: Arc<str> = address.endpoint_path()?.into();
        // Over AF_UNIX the listener reaches it on connections it parks, as a subscriber does.
        let session = subscriber_session(&self.ctx.limits, address);
        let span = tracing::debug_span!("dial", %address, own = true);
        let dial = self.dialler.dial(&self.ctx, address, path, session, flow);
        let link = dial.instrument(span).await?;
        let mut own = self.own.lock().unwrap();
        own.retain(|w| w.strong_count() > 0);
        own.push(Arc::downgrade(&link));
        Ok(link)
    }

    /// Every pooled link and every endpoint's own that is still held, for a drain.
    pub(crate) fn links(&self) -> Vec<Arc<Link>> {
        let mut all: Vec<Arc<Link>> = self.links.lock().unwrap().values().cloned().collect();
        all.extend(self.own.lock().unwrap().iter().filter_map(Weak::upgrade));
        all
    }

    /// Empties the pool and closes the dialling QUIC endpoint (shutdown).
    pub(crate) fn close(&self) {
        self.links.lock().unwrap().clear();
        self.dialler.close();
    }

    /// Resolves once the dialling QUIC endpoint has no connection left (after `close`: every
    /// close has been sent). Cancel-safe.
    pub(crate) async fn idle(&self) {
        self.dialler.idle().await;
    }
}
