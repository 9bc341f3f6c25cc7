//! Which streams a bound endpoint takes (PROTOCOL.md §9.1 step 7).

use crate::wire::StreamType;

/// What a path is bound to, and which streams it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteKind {
    /// Raw streams: both kinds.
    Acceptor,
    /// Req/Rep: exchanges only.
    Replier,
    /// Push/Pull: one-way transfers only.
    Puller,
    /// Pub/Sub: takes no stream; subscribers reach it with SUBSCRIBE.
    Publisher,
}

impl RouteKind {
    /// Whether an endpoint of this kind takes a stream of type `ty`.
    pub(crate) fn takes(self, ty: StreamType) -> bool {
        matches!(
            (self, ty),
            (
                RouteKind::Acceptor,
                StreamType::Transfer | StreamType::Exchange
            ) | (RouteKind::Replier, StreamType::Exchange)
                | (RouteKind::Puller, StreamType::Transfer)
                | (RouteKind::Acceptor | RouteKind::Puller, StreamType::Lane)
        )
    }

    /// How a refusal names it (`"/p" is a replier, which ...`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            RouteKind::Acceptor => "an acceptor",
            RouteKind::Replier => "a replier",
            RouteKind::Puller => "a puller",
            RouteKind::Publisher => "a publisher",
        }
    }
}
