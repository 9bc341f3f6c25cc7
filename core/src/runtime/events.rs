//! What happens to a dialling endpoint's addresses, as a bounded stream the application may
//! read: each connection made, lost, retried and given up (ZeroMQ's socket monitor, without
//! the side socket); and, with the same events, a listener's accepted connections. An endpoint nobody reads the events of pays one failed channel send per
//! transition; a reader that falls behind is told how many it missed.

use std::time::Duration;

use tokio::sync::broadcast;

use crate::error::LossCause;
use crate::security::fingerprint::Fingerprint;

/// Events a reader may fall behind by before the oldest are dropped (and counted).
const CAPACITY: usize = 64;

/// One transition of one address of a dialling endpoint, or of one connection a listener
/// accepted (`Connected` and `Lost` only, `url` where it comes from).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerEvent {
    /// A connection to `url` is up (a first connect, or a redial). `fingerprint` is the key
    /// it proved (None over a local transport, which proves no key).
    Connected {
        /// The address as the endpoint dialled it.
        url: String,
        /// The key the peer proved.
        fingerprint: Option<Fingerprint>,
    },
    /// The connection to `url` was lost.
    Lost {
        /// The address.
        url: String,
        /// Why.
        cause: LossCause,
    },
    /// Redial attempt `attempt` (from 1) of `url` starts after `delay`.
    Retrying {
        /// The address.
        url: String,
        /// Which attempt since the loss.
        attempt: u32,
        /// How long it waits first (zero in process: it waits for the name to be bound).
        delay: Duration,
    },
    /// `url` is no longer redialled: the policy gave up, or the peer changed.
    GaveUp {
        /// The address.
        url: String,
        /// The last loss or failure ([`LossCause::PeerChanged`] when another key answered).
        cause: LossCause,
    },
}

impl PeerEvent {
    /// The event's name, as the bindings spell it: `connected`, `lost`, `retrying`,
    /// `gave_up`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Connected { .. } => "connected",
            Self::Lost { .. } => "lost",
            Self::Retrying { .. } => "retrying",
            Self::GaveUp { .. } => "gave_up",
        }
    }

    /// The address the event is about.
    pub fn url(&self) -> &str {
        match self {
            Self::Connected { url, .. }
            | Self::Lost { url, .. }
            | Self::Retrying { url, .. }
            | Self::GaveUp { url, .. } => url,
        }
    }
}

/// Events a reader missed by falling more than the stream's bound behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missed(pub u64);

/// A reader of a dialling endpoint's (or a listener's) [`PeerEvent`]s, from the moment it was
/// made.
///
/// ```no_run
/// # async fn f(pusher: weida::Pusher) {
/// let mut events = pusher.events();
/// while let Some(e) = events.next().await {
///     match e {
///         Ok(event) => println!("{event:?}"),
///         Err(missed) => println!("fell behind: {} events missed", missed.0),
///     }
/// }
/// # }
/// ```
pub struct PeerEvents {
    rx: broadcast::Receiver<PeerEvent>,
}

impl PeerEvents {
    /// The next event; `Err(Missed(n))` once when `n` were dropped because this reader fell
    /// behind; None once the endpoint is gone. Cancel-safe.
    pub async fn next(&mut self) -> Option<Result<PeerEvent, Missed>> {
        match self.rx.recv().await {
            Ok(e) => Some(Ok(e)),
            Err(broadcast::error::RecvError::Lagged(n)) => Some(Err(Missed(n))),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The next event if one is there now.
    pub fn try_next(&mut self) -> Option<Result<PeerEvent, Missed>> {
        match self.rx.try_recv() {
            Ok(e) => Some(Ok(e)),
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(Err(Missed(n))),
            Err(_) => None,
        }
    }
}

/// The sending side an endpoint keeps: cheap when nobody listens.
#[derive(Clone)]
pub(crate) struct EventSender(broadcast::Sender<PeerEvent>);

impl Default for EventSender {
    fn default() -> Self {
        Self(broadcast::channel(CAPACITY).0)
    }
}

impl EventSender {
    pub(crate) fn send(&self, e: PeerEvent) {
        tracing::debug!(event = ?e, "peer event");
        // No reader: nothing to do.
        let _ = self.0.send(e);
    }

    pub(crate) fn subscribe(&self) -> PeerEvents {
        PeerEvents {
            rx: self.0.subscribe(),
        }
    }
}
