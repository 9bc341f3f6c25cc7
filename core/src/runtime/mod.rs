//! The runtime layer: [`Runtime`] (dials, binds, drains), its [`Listener`]s, the pool of
//! dialled connections, each dialling endpoint's peers, the routes of a listener and each bound
//! endpoint's queue and inbox, and the public counters.
//!
//! Owns: which connection serves an address, which endpoint a path is bound to, the order in
//! which a bound endpoint receives, a runtime's start and end (drain, shutdown).
//! Must not: know a pattern (each pattern adds its own factories to `Runtime` and `Listener`
//! in its file), speak the wire beyond what the connection layer gives it, or name quinn.
//! It imports only the layers below it, `connection` and down (docs/ARCHITECTURE.md §1;
//! `core/layers.py` checks it).

pub(crate) mod counters;
pub(crate) mod events;
pub(crate) mod inbox;
pub(crate) mod listener;
pub(crate) mod outbox;
pub(crate) mod peers;
pub(crate) mod pool;
pub(crate) mod queue;
pub(crate) mod redial;
pub(crate) mod routes;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::config::RuntimeConfig;
use crate::connection::context::Context;
use crate::error::{Error, Result};
use crate::security::fingerprint::Fingerprint;
use crate::security::identity::Identity;
use crate::security::trust::ServerTls;
use counters::Counters;
use listener::{Listener, Listeners};
use pool::Pool;

/// How long `Runtime::close` (and the end of a drain) waits, at most, for the closes to have
/// been sent: a peer on a lossy or silent path keeps a closed connection draining longer, and
/// is not waited for.
const CLOSES_SENT_WITHIN: Duration = Duration::from_secs(1);

/// What a drain achieved: counts, not a promise (PATTERNS §1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// Finished transfers whose receipt nobody awaited and whose peer's transport
    /// acknowledged them, over the runtime's life up to the end of the drain.
    pub delivered: u64,
    /// Finished transfers still unacknowledged at the deadline, cut short by the close.
    pub outstanding: u64,
    /// Messages the pushers' outboxes still held at the deadline, never written (also
    /// counted in `Counters::outbox_abandoned`).
    pub unsent: u64,
}

/// The process-wide entry point: dials addresses, binds listeners, owns every connection.
///
/// ```no_run
/// # async fn f() -> weida::Result<()> {
/// use weida::{Runtime, RuntimeConfig};
/// let rt = Runtime::new(RuntimeConfig::default())?;
/// let listener = rt.bind("weida://127.0.0.1:0").await?;
/// let replier = listener.replier("/echo")?;
/// let address = replier.address().to_string();
/// tokio::spawn(async move {
///     while let Ok(mut ex) = replier.accept().await {
///         let body = ex.take_body().await.unwrap();
///         ex.reply(body).await.unwrap();
///     }
/// });
/// let requester = rt.requester();
/// requester.connect(&address).await?;
/// assert_eq!(&requester.request("hi").await?[..], b"hi");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runtime {
    pub(crate) pool: Arc<Pool>,
    listeners: Arc<Listeners>,
}

impl Runtime {
    /// A runtime with `config`. Refuses a configuration it cannot honour (GUARANTEES §4).
    /// Its tasks run on the tokio runtime of the caller of each async method.
    pub fn new(config: RuntimeConfig) -> Result<Self> {
        config.limits.validate()?;
        if !config.guarantees.other.is_empty() {
            return Err(Error::InvalidConfig(format!(
                "only the ordering dimension has non-core levels here; cannot honour {:?}",
                config.guarantees.other
            )));
        }
        Ok(Self {
            pool: Arc::new(Pool::new(Arc::new(Context::new(config)))),
            listeners: Arc::default(),
        })
    }

    /// The identity this runtime presents (for `bind_with`, e.g. with `require_client`).
    pub fn identity(&self) -> Identity {
        self.pool.ctx.config.identity.clone()
    }

    /// The fingerprint of the key this runtime presents.
    pub fn fingerprint(&self) -> Fingerprint {
        self.pool.ctx.config.identity.fingerprint()
    }

    /// Binds `address` (no path), presenting this runtime's identity. Cancel-safe: a `bind`
    /// dropped before it returns binds nothing.
    pub async fn bind(&self, address: &str) -> Result<Listener> {
        self.bind_with(
            address,
            ServerTls::new(self.pool.ctx.config.identity.clone()),
        )
        .await
    }

    /// Binds `address` with explicit server TLS terms (e.g. `require_client`). Cancel-safe,
    /// as `bind` is.
    pub async fn bind_with(&self, address: &str, tls: ServerTls) -> Result<Listener> {
        listener::bind(&self.pool.ctx, &self.listeners, address, tls).await
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        Counters::read(&self.pool.ctx)
    }

    /// Stops admitting work, writes out what the pushers' outboxes hold onto the connections
    /// that are up, gives finished transfers until `deadline` to reach the peer's
    /// transport, then closes everything and waits, as `close` does, until the closes have been
    /// sent (at most a second more). The deadline is mandatory and finite.
    /// An expired drain with transfers outstanding is not an error. Not cancel-safe: a drain
    /// dropped before it returns leaves the runtime draining (it admits no new work) with
    /// what it had not closed still open, until `shutdown` or another `drain`.
    pub async fn drain(&self, deadline: Duration) -> Drained {
        let now = tokio::time::Instant::now();
        // A deadline too far to represent is as good as a very long one.
        let until = now
            .checked_add(deadline)
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        let ctx = &self.pool.ctx;
        let abandoned = || ctx.stats.outbox_abandoned.load(Ordering::Relaxed);
        let abandoned_before = abandoned();
        ctx.start_flushing();
        // The outboxes first: what they hold was sent, and is written while the connections
        // are up; what is left at the deadline is abandoned, counted.
        let outboxes = self.pool.outboxes();
        let _ = tokio::time::timeout_at(
            until,
            futures_util::future::join_all(outboxes.iter().map(|o| o.until_empty())),
        )
        .await;
        for o in &outboxes {
            o.abandon();
        }
        // Abandoned by the deadline here, or earlier by an outbox whose addresses all gave up.
        let unsent = abandoned() - abandoned_before;
        ctx.start_draining();
        // Lanes first: each writes what it queued and finishes, and its receipt joins the rest.
        let links = self.pool.links();
        let _ = tokio::time::timeout_at(
            until,
            futures_util::future::join_all(links.iter().map(|l| l.close_lane())),
        )
        .await;
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        let outstanding = ctx.receipts.settle(left).await;
        // Then GOAWAY on every dialled connection, and give each peer until the deadline to
        // take what arrived and close (a close from here would discard streams the peer's
        // transport holds but its application has not taken yet).
        for l in &links {
            l.go_away().await;
        }
        let _ = tokio::time::timeout_at(
            until,
            futures_util::future::join_all(links.iter().map(|l| l.conn.closed())),
        )
        .await;
        self.close_all_and_wait().await;
        Drained {
            delivered: ctx.receipts.delivered(),
            outstanding,
            unsent,
        }
    }

    /// Closes every connection now: finished transfers still in flight are cut short. The
    /// closes leave with the runtime's tasks: a process about to exit awaits `close` instead.
    pub fn shutdown(&self) {
        let _ = self.close_all();
    }

    /// Closes every connection now, as `shutdown` does, and returns once the closes have been
    /// sent: once no QUIC endpoint of the runtime has a connection left (its CONNECTION_CLOSE
    /// sent and its draining period over), at most a second after the call. A process that
    /// exits right after `shutdown` can exit before its CONNECTION_CLOSE and STOP_SENDING
    /// frames leave, and its peers then learn of the end only at their idle timeout
    /// (PROTOCOL.md §3.4). Cancel-safe: dropped, it has closed everything all the same and
    /// only stops waiting.
    pub async fn close(&self) {
        self.close_all_and_wait().await;
    }

    /// Closes every connection and stops every accept loop; returns the QUIC endpoints of its
    /// listeners, for a wait until their closes have been sent.
    fn close_all(&self) -> Vec<crate::transport::quic::Server> {
        // Connections and the runtime's life first (see `Context::close`), then the listeners,
        // then the pool and its QUIC endpoint.
        self.pool.ctx.close();
        let servers = self.listeners.close();
        self.pool.close();
        servers
    }

    /// `close_all`, then waits (at most [`CLOSES_SENT_WITHIN`]) until every QUIC endpoint of
    /// the runtime, dialling and listening, has no connection left.
    async fn close_all_and_wait(&self) {
        let servers = self.close_all();
        let idle = futures_util::future::join(
            self.pool.idle(),
            futures_util::future::join_all(servers.iter().map(|s| s.idle())),
        );
        let _ = tokio::time::timeout(CLOSES_SENT_WITHIN, idle).await;
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("fingerprint", &self.fingerprint())
            .finish()
    }
}
