//! The patterns layer: thin wrappers over streams (PATTERNS.md §2, §3, §4, §5), one file or
//! folder per pattern. Dialling endpoints share [`Dialer`]; bound endpoints share the
//! runtime's `Inbox`. Each pattern's file also adds its factories to `Runtime` and `Listener`
//! (`Runtime::pusher`, `Listener::puller`, ...), so the layers below know no pattern.
//!
//! Owns: a pattern's API and which stream kinds its bound side takes; Pub/Sub's hub (the
//! publisher's side) and feed (the subscriber's side), with its filters and ordering.
//! Must not: speak to a transport or a socket directly, or name quinn. It may import every
//! layer below it (docs/ARCHITECTURE.md §1, checked by
//! `core/layers.py`).

pub(crate) mod pubsub;
mod pushpull;
mod raw;
mod receiving;
mod reqrep;

pub use pubsub::{DropCause, Dropped, FanOut, Publisher, Subscriber};
pub use pushpull::{Puller, Pusher};
pub use raw::{Acceptor, Peer};
pub use receiving::Receiving;
pub use reqrep::{Replier, Requester};

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bytes::Bytes;

use crate::address::Address;
use crate::config::{Bounds, EndpointOptions};
use crate::connection::handles::{OutgoingTransfer, PendingReply};
use crate::connection::link::Link;
use crate::error::Result;
use crate::runtime::peers::PeerSet;
use crate::runtime::pool::Pool;
use crate::wire::{Header, StreamType};

/// The dialling half every connecting endpoint shares: its addresses and their connections.
pub(crate) struct Dialer {
    pub(crate) pool: Arc<Pool>,
    pub(crate) peers: PeerSet,
    /// The endpoint's own bounds (its `EndpointOptions`, else the runtime's).
    pub(crate) bounds: Bounds,
}

impl Drop for Dialer {
    fn drop(&mut self) {
        for (address, link) in self.peers.take_all() {
            self.pool.release(&address, link);
        }
    }
}

impl Dialer {
    fn new(pool: Arc<Pool>, options: &EndpointOptions) -> Result<Self> {
        let bounds = options.resolve(&pool.ctx.config)?;
        Ok(Self {
            pool,
            peers: PeerSet::default(),
            bounds,
        })
    }

    async fn connect(&self, address: &str) -> Result<()> {
        let a = Address::parse(address)?;
        a.endpoint_path()?;
        let link = self.pool.link(&a).await?;
        self.peers.add(a, link);
        Ok(())
    }

    fn disconnect(&self, address: &str) -> Result<bool> {
        let address = Address::parse(address)?;
        Ok(match self.peers.remove(&address) {
            Some(link) => {
                self.pool.release(&address, link);
                true
            }
            None => false,
        })
    }

    /// Opens a one-way transfer on the next peer, with `body` (when whole) in the first write.
    async fn transfer(&self, header: Header, body: Option<Bytes>) -> Result<OutgoingTransfer> {
        self.pool.ctx.check_open()?;
        let link = self.peers.pick()?;
        self.transfer_on(&link, header, body).await
    }

    /// Opens a one-way transfer on `link` (already picked: one pick per message keeps the
    /// round-robin fair).
    async fn transfer_on(
        &self,
        link: &Link,
        header: Header,
        body: Option<Bytes>,
    ) -> Result<OutgoingTransfer> {
        let (send, _) = link
            .open(StreamType::Transfer, header, body, self.bounds.send_timeout)
            .await?;
        Ok(OutgoingTransfer::new(
            send,
            link.path.clone(),
            self.pool.ctx.clone(),
        ))
    }

    /// Opens an exchange on the next peer.
    async fn exchange(
        &self,
        header: Header,
        body: Option<Bytes>,
    ) -> Result<(OutgoingTransfer, PendingReply)> {
        self.pool.ctx.check_open()?;
        let link = self.peers.pick()?;
        let (send, recv) = link
            .open(StreamType::Exchange, header, body, self.bounds.send_timeout)
            .await?;
        let finished = Arc::new(AtomicBool::new(false));
        let reply = PendingReply::new(
            recv.expect("an exchange has a reply half"),
            link.path.clone(),
            self.pool.ctx.clone(),
            link.peer.clone(),
            finished.clone(),
            self.bounds.max_collected_body,
        );
        let t = OutgoingTransfer::new(send, link.path.clone(), self.pool.ctx.clone())
            .with_finish_flag(finished);
        Ok((t, reply))
    }
}
