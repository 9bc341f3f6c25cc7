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

/// The dialling calls every connecting endpoint with a [`Dialer`] (in its field `dialer`)
/// shares, written once: `connect`, `connect_later`, `disconnect`, `peer_count` and `events`.
/// `$until_live` says what the endpoint's sends do while an address recorded by
/// `connect_later` is not live yet.
macro_rules! dialling {
    ($endpoint:ty, $until_live:literal) => {
        impl $endpoint {
            /// Dials `address` (with its path) and adds it to this endpoint's peers. The path
            /// is checked first, as every redial checks it: nothing bound there, or an endpoint
            /// that takes none of this one's streams, fails here (`UnknownEndpoint`,
            /// `Unsupported`) and adds nothing. Cancel-safe: a `connect` dropped before it
            /// returns adds no peer; call it again to retry.
            pub async fn connect(&self, address: &str) -> $crate::error::Result<()> {
                self.dialer.connect(address).await
            }

            #[doc = concat!(
                "Records `address` (with its path) at once and dials it in the background, ",
                "redialled by the endpoint's policy, as ZeroMQ's `connect` does: the listener ",
                "may be bound later. ", $until_live, " `events()` tells how the dialling goes ",
                "(Retrying, Connected, GaveUp). Fails at once only for an address that does not ",
                "parse or has no path, or a closed runtime; connecting an address already ",
                "connected changes nothing."
            )]
            ///
            /// Cancel-safe: it returns without waiting.
            pub async fn connect_later(&self, address: &str) -> $crate::error::Result<()> {
                self.dialer.connect_later(address)
            }

            /// Removes `address`; true if it was connected.
            pub fn disconnect(&self, address: &str) -> $crate::error::Result<bool> {
                self.dialer.disconnect(address)
            }

            /// Live connections (slots whose connection is up): the peers the next message can
            /// reach.
            pub fn peer_count(&self) -> usize {
                self.dialer.peers.live()
            }

            /// What happens to this endpoint's addresses from now on: connected, lost,
            /// retrying, given up ([`crate::PeerEvent`]). Reading them is optional; a reader
            /// that falls behind is told how many it missed.
            pub fn events(&self) -> $crate::PeerEvents {
                self.dialer.peers.events.subscribe()
            }
        }
    };
}
pub(crate) use dialling;

/// The receiving calls of an endpoint whose receive is a puller's over the field `inbox` (a
/// claiming dialler's, a pair's), written once: `recv`, `recv_many`, `try_recv`, `accept` and
/// `give_back`, each the [`Puller`] call of the same name.
macro_rules! receives_as_puller {
    ($endpoint:ty) => {
        impl $endpoint {
            /// The next whole message, bounded by `max_collected_body`. Cancel-safe, as
            /// [`crate::Puller::recv`] is.
            pub async fn recv(&self) -> $crate::error::Result<$crate::Message> {
                self.inbox.recv().await
            }

            /// Up to `max` whole messages: waits for the first. Cancel-safe, as
            /// [`crate::Puller::recv_many`] is.
            pub async fn recv_many(
                &self,
                max: usize,
            ) -> $crate::error::Result<Vec<$crate::Message>> {
                self.inbox.recv_many(max).await
            }

            /// A message if one is whole now.
            pub fn try_recv(&self) -> Option<$crate::error::Result<$crate::Message>> {
                self.inbox.try_recv()
            }

            /// The next message as a stream, for a body read in parts. Cancel-safe.
            pub async fn accept(&self) -> $crate::error::Result<$crate::IncomingTransfer> {
                self.inbox.accept().await
            }

            /// Puts a received message back in front of the queue.
            pub fn give_back(&self, m: $crate::Message) {
                self.inbox.give_back(m);
            }
        }
    };
}
pub(crate) use receives_as_puller;

mod bound_push;
mod bus;
mod claimed;
mod fan;
mod ordering;
mod pair;
pub(crate) mod pubsub;
mod pushpull;
mod raw;
mod receiving;
mod reqrep;
mod survey;

pub use bound_push::{BoundPusher, DialingPuller};
pub use bus::Bus;
pub use pair::Pair;
pub use pubsub::{
    BoundSubscriber, DialingPublisher, DropCause, Dropped, FanOut, Publisher, Subscriber,
};
pub use pushpull::{Puller, Pusher};
pub use raw::{Acceptor, Peer};
pub use receiving::Receiving;
pub use reqrep::{Replier, Requester};
pub use survey::{Respondent, SurveyRun, Surveyor};

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bytes::Bytes;

use crate::address::Address;
use crate::config::{Bounds, EndpointOptions};
use crate::connection::handles::{OutgoingTransfer, PendingReply};
use crate::connection::handshake::Flow;
use crate::connection::link::Link;
use crate::error::Result;
use crate::runtime::events::PeerEvent;
use crate::runtime::peers::PeerSet;
use crate::runtime::pool::Pool;
use crate::runtime::redial::{self, Owner, Pooled};
use crate::wire::{Header, StreamType};

/// The dialling half every connecting endpoint shares: its addresses and their connections.
pub(crate) struct Dialer {
    pub(crate) pool: Arc<Pool>,
    pub(crate) peers: Arc<PeerSet>,
    /// What the slots' redial tasks hold (weakly): the endpoint is gone when this is.
    owner: Arc<Pooled>,
    /// The endpoint's own bounds (its `EndpointOptions`, else the runtime's).
    pub(crate) bounds: Bounds,
}

impl Drop for Dialer {
    fn drop(&mut self) {
        self.leave_all();
    }
}

impl Dialer {
    /// A dialer for an endpoint that opens the stream kinds `streams`
    /// ([`crate::wire::check_streams`]): every path it connects must take one of them. `flow`
    /// is the ordering its connections offer and require.
    fn new(pool: Arc<Pool>, options: &EndpointOptions, streams: u64, flow: Flow) -> Result<Self> {
        let bounds = options.resolve(&pool.ctx.config)?;
        let peers = Arc::new(PeerSet::default());
        Ok(Self {
            owner: Arc::new(Pooled::new(pool.clone(), peers.clone(), streams, flow)),
            pool,
            peers,
            bounds,
        })
    }

    /// A dialer for an endpoint that claims the path it dials (a pair, PROTOCOL.md §3.1.6) in
    /// `claim.role`, on a connection of its own per slot.
    fn claiming(
        pool: Arc<Pool>,
        options: &EndpointOptions,
        flow: Flow,
        claim: redial::Claim,
    ) -> Result<Self> {
        let bounds = options.resolve(&pool.ctx.config)?;
        let peers = Arc::new(PeerSet::default());
        Ok(Self {
            owner: Arc::new(Pooled::claiming(pool.clone(), peers.clone(), flow, claim)),
            pool,
            peers,
            bounds,
        })
    }

    /// Dials `address` and makes it a slot of this endpoint, redialled by the endpoint's
    /// policy when its connection is lost. The path is checked first, as every redial checks
    /// it ([`Owner::dial`]): nothing bound there, or an endpoint that takes none of this
    /// endpoint's streams, fails here (UnknownEndpoint, Unsupported) and leaves no slot.
    async fn connect(&self, address: &str) -> Result<()> {
        self.pool.ctx.check_open()?;
        let a = Address::parse(address)?;
        a.endpoint_path()?;
        let link = self.owner.dial(&a).await?;
        self.peers.add(a.clone(), Some(link.clone()), None);
        let owner: std::sync::Weak<dyn Owner> = Arc::downgrade(&self.owner) as _;
        let task = tokio::spawn(redial::run(owner, a.clone(), &link, self.bounds.reconnect));
        let hopeful = redial::redials(&self.bounds.reconnect);
        self.peers.redialled_by(&a, task.abort_handle(), hopeful);
        self.peers.events.send(PeerEvent::Connected {
            url: a.to_string(),
            fingerprint: redial::fingerprint(&link),
        });
        Ok(())
    }

    /// Records `address` as a slot at once, down, and dials it in the background by the
    /// endpoint's policy (in process: once the name is bound): ZeroMQ's connect-before-bind.
    /// What becomes of it is told by the endpoint's events; until a slot is live, a send waits
    /// (or fills the outbox) as during an outage.
    fn connect_later(&self, address: &str) -> Result<()> {
        self.pool.ctx.check_open()?;
        let a = Address::parse(address)?;
        a.endpoint_path()?;
        if self.peers.has(&a) {
            return Ok(());
        }
        self.peers.add(a.clone(), None, None);
        let owner: std::sync::Weak<dyn Owner> = Arc::downgrade(&self.owner) as _;
        let task = tokio::spawn(redial::later(owner, a.clone(), self.bounds.reconnect));
        self.peers.redialled_by(&a, task.abort_handle(), true);
        Ok(())
    }

    /// Removes every slot, stops every redial, and lets go of the connections.
    fn leave_all(&self) {
        for link in self.peers.take_all() {
            self.pool.release(link);
        }
    }

    fn disconnect(&self, address: &str) -> Result<bool> {
        let address = Address::parse(address)?;
        Ok(match self.peers.remove(&address) {
            Some(link) => {
                if let Some(link) = link {
                    self.pool.release(link);
                }
                true
            }
            None => false,
        })
    }

    /// The next live peer, waiting for a redial when every slot is down, and what is left of
    /// `send_timeout` for the stream slot after that wait.
    async fn pick(&self) -> Result<(Arc<Link>, Option<std::time::Duration>)> {
        let started = tokio::time::Instant::now();
        let link = self.peers.pick(self.bounds.send_timeout).await?;
        let left = self
            .bounds
            .send_timeout
            .map(|d| d.saturating_sub(started.elapsed()));
        Ok((link, left))
    }

    /// Opens a one-way transfer on the next peer, with `body` (when whole) in the first write.
    async fn transfer(&self, header: Header, body: Option<Bytes>) -> Result<OutgoingTransfer> {
        self.pool.ctx.check_open()?;
        let (link, left) = self.pick().await?;
        self.transfer_within(&link, header, body, left).await
    }

    /// Opens a one-way transfer on `link` (already picked: one pick per message keeps the
    /// round-robin fair), waiting at most `within` for a stream slot.
    async fn transfer_within(
        &self,
        link: &Link,
        header: Header,
        body: Option<Bytes>,
        within: Option<std::time::Duration>,
    ) -> Result<OutgoingTransfer> {
        let (send, _) = link
            .open(StreamType::Transfer, header, body, within)
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
        let (link, left) = self.pick().await?;
        self.exchange_on(&link, header, body, left).await
    }

    /// Opens an exchange on `link`, waiting at most `within` for a stream slot.
    async fn exchange_on(
        &self,
        link: &Link,
        header: Header,
        body: Option<Bytes>,
        within: Option<std::time::Duration>,
    ) -> Result<(OutgoingTransfer, PendingReply)> {
        let (send, recv) = link
            .open(StreamType::Exchange, header, body, within)
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
