//! Raw streams: a `Peer` dials and opens either kind; an `Acceptor` binds one path and
//! receives both (PATTERNS §5).

use super::Dialer;
use crate::address::Address;
use crate::config::EndpointOptions;
use crate::connection::admission::RouteKind;
use crate::connection::handles::{Incoming, OutgoingTransfer, PendingReply};
use crate::connection::handshake::Flow;
use crate::error::Result;
use crate::runtime::inbox::Inbox;
use crate::runtime::listener::Listener;
use crate::runtime::Runtime;
use crate::wire::{check_streams, Header, Metadata};

/// Opens raw streams to acceptors: one-way transfers and exchanges.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, addr: &str) -> weida::Result<()> {
/// let peer = rt.peer();
/// peer.connect(addr).await?;
/// let mut feed = peer.open(Default::default()).await?; // a long-lived ordered stream
/// for frame in 0..3u8 {
///     feed.write(vec![frame]).await?;
/// }
/// feed.finish().await?;
/// # Ok(()) }
/// ```
pub struct Peer {
    dialer: Dialer,
}

impl Runtime {
    /// A raw [`Peer`].
    pub fn peer(&self) -> Peer {
        self.peer_with(&EndpointOptions::new())
            .expect("the runtime's own bounds are valid")
    }

    /// A raw [`Peer`] with bounds of its own: `send_timeout` (the wait to open a stream).
    pub fn peer_with(&self, options: &EndpointOptions) -> Result<Peer> {
        Ok(Peer {
            dialer: Dialer::new(
                self.pool.clone(),
                options,
                check_streams::TRANSFER | check_streams::EXCHANGE,
                Flow::Unordered,
            )?,
        })
    }
}

impl Listener {
    /// Binds a raw [`Acceptor`] at `path`.
    pub fn acceptor(&self, path: &str) -> Result<Acceptor> {
        self.acceptor_with(path, &EndpointOptions::new())
    }

    /// Binds a raw [`Acceptor`] at `path` with bounds of its own: `endpoint_queue`, and
    /// `max_collected_body` for an exchange's `take_body`.
    pub fn acceptor_with(&self, path: &str, options: &EndpointOptions) -> Result<Acceptor> {
        let inbox = self.register(path, RouteKind::Acceptor, options)?;
        Ok(Acceptor { inbox })
    }
}

super::dialling!(
    Peer,
    "Until it is live, `open` waits for it (bounded by `send_timeout`)."
);

impl Peer {
    /// Opens a one-way stream. Cancel-safe: an `open` dropped before it returns opens nothing
    /// the acceptor receives (a stream dropped during the write of its header is reset).
    pub async fn open(&self, meta: Metadata) -> Result<OutgoingTransfer> {
        self.dialer
            .transfer(
                Header {
                    meta,
                    ..Header::default()
                },
                None,
            )
            .await
    }

    /// Opens an exchange: a request stream and its reply. Cancel-safe, as `open` is.
    pub async fn exchange(&self, meta: Metadata) -> Result<(OutgoingTransfer, PendingReply)> {
        self.dialer
            .exchange(
                Header {
                    meta,
                    ..Header::default()
                },
                None,
            )
            .await
    }
}

/// Receives both stream kinds at a bound path.
pub struct Acceptor {
    inbox: Inbox,
}

impl Acceptor {
    /// The address to dial this acceptor at.
    pub fn address(&self) -> &Address {
        self.inbox.address()
    }

    /// Unbinds the path: a stream sent here from now on is refused with UNKNOWN_ENDPOINT, and
    /// once the streams already queued are taken, receiving ends with `Closed` (a receiver
    /// waiting on an empty queue gets it at once). The path may be bound again.
    pub fn close(&self) {
        self.inbox.close();
    }

    /// The next stream, of either kind. Cancel-safe.
    pub async fn accept(&self) -> Result<Incoming> {
        self.inbox.next().await
    }
}
