//! BUS: every member's message reaches every other member, with no relay (PATTERNS §6.3). A
//! member is bound (a puller's route: other members' messages arrive as pushed ones) and
//! dialling (it writes each message to every member it connected). A member never dials itself,
//! so no copy is ever addressed to it: nothing has to be filtered out.

use std::sync::Arc;

use bytes::Bytes;

use super::fan::Fan;
use super::{Dialer, Dropped, Puller};
use crate::address::Address;
use crate::config::EndpointOptions;
use crate::connection::handles::Message;
use crate::connection::handshake::Flow;
use crate::error::{Error, Result};
use crate::runtime::listener::Listener;
use crate::runtime::Runtime;
use crate::wire::{check_streams, Header, Metadata};

/// A bus member: bound at a path of a listener, and connected to the other members' paths.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, l: weida::Listener, other: &str) -> weida::Result<()> {
/// let me = rt.bus(&l, "/chat")?;
/// me.connect(other).await?; // and every other member connects to me.address()
/// me.send("hello").await?;  // one copy to each member I connected
/// let m = me.recv().await?; // what the others sent
/// # Ok(()) }
/// ```
pub struct Bus {
    inbox: Puller,
    dialer: Dialer,
    fan: Arc<Fan>,
}

impl Runtime {
    /// A [`Bus`] member bound at `path` on `listener` (one of this runtime's), dialling through
    /// this runtime: its own bounds are `endpoint_queue` (copies a member's writer holds) and
    /// `max_collected_body`; the byte budget per member is `Limits::subscriber_buffer_bytes`.
    pub fn bus(&self, listener: &Listener, path: &str) -> Result<Bus> {
        self.bus_with(listener, path, &EndpointOptions::new())
    }

    /// [`Runtime::bus`] with bounds of its own.
    pub fn bus_with(
        &self,
        listener: &Listener,
        path: &str,
        options: &EndpointOptions,
    ) -> Result<Bus> {
        if !Arc::ptr_eq(listener.context(), &self.pool.ctx) {
            return Err(Error::InvalidConfig(
                "a bus member's listener must be its runtime's".into(),
            ));
        }
        let dialer = Dialer::new(
            self.pool.clone(),
            options,
            check_streams::TRANSFER,
            Flow::Numbers,
        )?;
        let fan = Fan::new(
            self.pool.ctx.clone(),
            dialer.bounds.endpoint_queue,
            self.pool.ctx.limits.subscriber_buffer_bytes,
        );
        Ok(Bus {
            inbox: listener.puller_with(path, options)?,
            dialer,
            fan,
        })
    }
}

super::dialling!(Bus, "It gets the messages sent after it is live.");

impl Bus {
    /// The address other members connect to.
    pub fn address(&self) -> &Address {
        self.inbox.address()
    }

    /// Queues one copy of `body` for every live member this one connected, and returns how
    /// many were queued. One `Bytes` is shared by every copy. A member whose writer already
    /// holds `endpoint_queue` copies, or whose bytes would pass the byte budget, loses this
    /// copy, counted in [`Bus::dropped`]; no member's pace delays the send or another member.
    /// A body above the byte budget could be queued for nobody: `LimitExceeded` (limit
    /// `byte_budget`), not a drop per member. Cancel-safe (it does not wait).
    pub async fn send(&self, body: impl Into<Bytes>) -> Result<usize> {
        self.send_with(Metadata::new(), body).await
    }

    /// [`Bus::send`] with metadata. Cancel-safe.
    pub async fn send_with(&self, meta: Metadata, body: impl Into<Bytes>) -> Result<usize> {
        let links = self.dialer.peers.live_links();
        self.fan.send(links, Header::with_meta(meta), body.into())
    }

    /// The next message another member sent. Cancel-safe.
    pub async fn recv(&self) -> Result<Message> {
        self.inbox.recv().await
    }

    /// Up to `max` messages: waits for the first, then takes those that are ready.
    /// Cancel-safe, as [`Puller::recv_many`] is.
    pub async fn recv_many(&self, max: usize) -> Result<Vec<Message>> {
        self.inbox.recv_many(max).await
    }

    /// A message if one is ready now.
    pub fn try_recv(&self) -> Option<Result<Message>> {
        self.inbox.try_recv()
    }

    /// Hands back a message a caller received but could not deliver: the next `recv` returns
    /// it first.
    pub fn give_back(&self, m: Message) {
        self.inbox.give_back(m);
    }

    /// Copies this member dropped, by cause: `queue_full`, `byte_budget`, and
    /// `dead_subscriber` (lost with a member whose connection failed).
    pub fn dropped(&self) -> Dropped {
        self.fan.dropped()
    }

    /// Unbinds the path and leaves every member.
    pub fn close(&self) {
        self.inbox.close();
        self.dialer.leave_all();
    }
}
