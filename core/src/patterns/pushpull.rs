//! Push/Pull: one one-way stream per message, round-robin over connected pullers.

use std::sync::Arc;

use bytes::Bytes;

use super::Dialer;
use crate::error::{Error, Result};
use crate::runtime::{Inbox, Incoming, Shared};
use crate::stream::{IncomingTransfer, Message, OutgoingTransfer, Partial};
use crate::wire::{Header, Metadata};

/// Sends messages to pullers, one stream each, round-robin per message.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, addr: &str) -> weida::Result<()> {
/// let pusher = rt.pusher();
/// pusher.connect(addr).await?;
/// pusher.send("job 1").await?; // returns once the FIN is queued; arrives with no handle
/// # Ok(()) }
/// ```
pub struct Pusher {
    dialer: Dialer,
}

impl Pusher {
    pub(crate) fn new(shared: Arc<Shared>) -> Pusher {
        Pusher {
            dialer: Dialer::new(shared),
        }
    }

    /// Dials `address` (with its path) and adds it to the round-robin.
    pub async fn connect(&self, address: &str) -> Result<()> {
        self.dialer.connect(address).await
    }

    /// Removes `address`; true if it was connected.
    pub fn disconnect(&self, address: &str) -> Result<bool> {
        self.dialer.disconnect(address)
    }

    /// Live connections.
    pub fn peer_count(&self) -> usize {
        self.dialer.peers.live()
    }

    /// Sends a whole message: fire-and-forget. Returns once the FIN is queued; the receipt is
    /// kept by the runtime for `drain`. Waits for the peer's stream budget (backpressure).
    pub async fn send(&self, body: impl Into<Bytes>) -> Result<()> {
        self.send_with(Metadata::new(), body).await
    }

    /// [`Pusher::send`] with metadata.
    pub async fn send_with(&self, meta: Metadata, body: impl Into<Bytes>) -> Result<()> {
        let header = Header {
            meta,
            ..Header::default()
        };
        let t = self.dialer.transfer(header, Some(body.into())).await?;
        drop(t.finish().await?);
        Ok(())
    }

    /// Opens a streamed message; `finish()` returns the [`crate::Delivery`] for its receipt.
    pub async fn open(&self, meta: Metadata) -> Result<OutgoingTransfer> {
        let header = Header {
            meta,
            ..Header::default()
        };
        self.dialer.transfer(header, None).await
    }
}

/// Receives pushed messages at a bound path.
pub struct Puller {
    inbox: Inbox,
}

impl Puller {
    pub(crate) fn new(inbox: Inbox) -> Puller {
        Puller { inbox }
    }

    /// The address to dial this puller at.
    pub fn address(&self) -> &crate::Address {
        &self.inbox.address
    }

    /// The next whole message, bounded by `Limits::max_collected_body`. A message its sender
    /// cancelled is `Err(Canceled)` (never a short body) and the puller stays usable.
    /// Cancel-safe: a message half collected when the future is dropped is resumed.
    pub async fn recv(&self) -> Result<Message> {
        let max = self.inbox.shared.limits.max_collected_body;
        let mut rx = self.inbox.rx.lock().await;
        if rx.partial.is_none() {
            let t = match rx.next().await? {
                Incoming::Stream(t) => t,
                // The route admits only transfers.
                Incoming::Exchange(_) => {
                    return Err(Error::Protocol("an exchange reached a puller".into()))
                }
            };
            rx.partial = Some(Partial::new(t));
        }
        let r = rx.partial.as_mut().expect("set above").read_all(max).await;
        let p = rx.partial.take().expect("set above");
        r.map(|()| p.into_message())
    }

    /// Unbinds the path: a stream sent here from now on is refused with UNKNOWN_ENDPOINT, and
    /// once the streams already queued are taken, receiving ends with `Closed` (a receiver
    /// waiting on an empty queue gets it at once). The path may be bound again.
    pub fn close(&self) {
        self.inbox.close();
    }

    /// The next message as a stream, for bodies read in parts. Cancel-safe.
    pub async fn accept(&self) -> Result<IncomingTransfer> {
        match self.inbox.next().await? {
            Incoming::Stream(t) => Ok(t),
            Incoming::Exchange(_) => Err(Error::Protocol("an exchange reached a puller".into())),
        }
    }
}
