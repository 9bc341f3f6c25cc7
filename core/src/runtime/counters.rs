//! The public counters: a snapshot of what the connection layer counts.

use std::sync::atomic::Ordering;

use crate::connection::context::Context;

/// Counters a user can read without a metrics stack. Monotonic since the runtime started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counters {
    /// Streams this runtime opened (transfers and exchanges).
    pub streams_opened: u64,
    /// Streams it accepted and dispatched to an endpoint.
    pub streams_accepted: u64,
    /// Streams it refused (unknown path, unsupported, bad header, ...).
    pub streams_refused: u64,
    /// Body bytes written.
    pub bytes_sent: u64,
    /// Body bytes read.
    pub bytes_received: u64,
    /// Connections dialled.
    pub connections_dialled: u64,
    /// Connections accepted.
    pub connections_accepted: u64,
    /// Receipts of finished transfers nobody awaited that resolved: delivered.
    pub receipts_delivered: u64,
    /// ... that resolved with a refusal or a loss.
    pub receipts_failed: u64,
    /// Pub/Sub copies queued for subscribers by this runtime's publishers.
    pub copies_published: u64,
    /// Messages written as frames on message lanes (each also counts in `bytes_sent`). When a
    /// QUIC lane dies, the frames its peer's transport may not hold move from here to
    /// `lane_messages_lost`: every lane message is counted once, in one or the other.
    pub lane_messages_sent: u64,
    /// Messages read from message lanes and handed to an endpoint.
    pub lane_messages_received: u64,
    /// Messages a lane that ended early (a refusal or a loss) may not have delivered to the
    /// peer's transport: those queued and never written, and over QUIC those written in the
    /// lane's last `send_window` bytes, which quinn may not have had acknowledged (it says
    /// no stream's acknowledged offset, and never holds more than `send_window` bytes
    /// unacknowledged). An upper bound: a message not counted here reached the peer's
    /// transport (`faults.rs: a_partition_longer_than_the_idle_timeout_is_redialled_and_the_outbox_drains_in_order`).
    pub lane_messages_lost: u64,
    /// Messages a pusher's `send` copied into its outbox (no peer was live, or the outbox was
    /// draining). Each is then written, or abandoned: `outbox_queued` = `outbox_written` +
    /// `outbox_abandoned` + what the outboxes hold now.
    pub outbox_queued: u64,
    /// Messages written from an outbox to a live connection (then at most once, as any send).
    pub outbox_written: u64,
    /// Messages a full outbox discarded at the call (`OutboxFull::Drop`); never queued.
    pub outbox_dropped: u64,
    /// Messages an outbox held when it could no longer drain: its pusher dropped, every
    /// address given up, or the runtime closed (a drain's deadline passed).
    pub outbox_abandoned: u64,
}

impl Counters {
    /// What `ctx` counted so far.
    pub(crate) fn read(ctx: &Context) -> Self {
        let s = &ctx.stats;
        let r = &ctx.receipts;
        Self {
            streams_opened: s.streams_opened.load(Ordering::Relaxed),
            streams_accepted: s.streams_accepted.load(Ordering::Relaxed),
            streams_refused: s.streams_refused.load(Ordering::Relaxed),
            bytes_sent: s.bytes_sent.load(Ordering::Relaxed),
            bytes_received: s.bytes_received.load(Ordering::Relaxed),
            connections_dialled: s.connections_dialled.load(Ordering::Relaxed),
            connections_accepted: s.connections_accepted.load(Ordering::Relaxed),
            receipts_delivered: r.delivered(),
            receipts_failed: r.failed(),
            copies_published: s.copies_published.load(Ordering::Relaxed),
            lane_messages_sent: s.lane_messages_sent.load(Ordering::Relaxed),
            lane_messages_received: s.lane_messages_received.load(Ordering::Relaxed),
            lane_messages_lost: s.lane_messages_lost.load(Ordering::Relaxed),
            outbox_queued: s.outbox_queued.load(Ordering::Relaxed),
            outbox_written: s.outbox_written.load(Ordering::Relaxed),
            outbox_dropped: s.outbox_dropped.load(Ordering::Relaxed),
            outbox_abandoned: s.outbox_abandoned.load(Ordering::Relaxed),
        }
    }
}
