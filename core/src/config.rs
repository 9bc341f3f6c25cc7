//! `RuntimeConfig` (per process) and `Limits` (per connection): every bound weida enforces,
//! with its default and why.

use std::time::Duration;

use crate::security::identity::Identity;
use crate::security::trust::Trust;
use crate::wire::GuaranteeSet;

/// Per-connection bounds. The receiving side grants the windows and budgets; each is a
/// transport parameter over QUIC and a local bound in process and over AF_UNIX.
///
/// ```
/// use weida::Limits;
/// let l = Limits { max_concurrent_uni_streams: 2, ..Limits::default() };
/// assert_eq!(l.endpoint_queue, 256);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Bytes a writer may run ahead of the reader on one stream (QUIC stream receive
    /// window; the pipe window locally). A buffer size, not a message size (PATTERNS §1.3).
    /// Default 1 MiB. Over QUIC, quinn 0.11 can close a connection whose stalled stream holds
    /// many small pieces of a window this large (`too many gaps in stream buffer`, with no
    /// byte lost); under 64 KiB it cannot, at the cost of each stream's rate over a long path
    /// (RELIABILITY §3; `lane_stall.rs`).
    pub stream_receive_window: u64,
    /// Bytes all streams of one connection may run ahead of their readers. Default 8 MiB.
    pub connection_receive_window: u64,
    /// Bytes this side may have in flight on one connection. Default 8 MiB.
    pub send_window: u64,
    /// One-way streams the peer may have open toward us at once: the message credit
    /// (PATTERNS §1.4). At the budget the peer's `open` waits. Default 256.
    pub max_concurrent_uni_streams: u64,
    /// Exchanges the peer may have open toward us at once. Default 256.
    pub max_concurrent_bidi_streams: u64,
    /// Descriptors (streams) a local socket connection may hold at once; at the ceiling
    /// `open` waits (PATTERNS §1.10). Default 255.
    pub max_local_streams: u64,
    /// Incoming streams an endpoint holds before its application takes them; beyond it the
    /// streams wait in the transport, holding their budget (backpressure, not refusal).
    /// Whole messages from a lane count one each. Default 256: a receiver slower than its
    /// sender wakes the sender's thread once per half a queue, and at 32 that wakeup was the
    /// largest single cost of a binding's receive (the Node and Python profiles, ~10 % of
    /// their thread); 256 lane messages of at most `lane_max_message` bound it to 4 MiB.
    pub endpoint_queue: usize,
    /// Streams (transfers, requests) one connection may have at one endpoint at once, queued
    /// or being read whole or unanswered; past it that connection's next stream waits in its
    /// transport, so no one peer fills an endpoint's queue or holds all it is reading
    /// (PATTERNS §1.12). Whole messages from a lane are not counted: they hold no stream.
    /// Not applied over AF_UNIX, where every stream is a connection of its own. Default 64, a
    /// quarter of `endpoint_queue`.
    pub peer_share: usize,
    /// The largest DATA header accepted; a larger one is refused with LIMIT_EXCEEDED.
    /// Default 16 KiB.
    pub max_header_size: u64,
    /// The largest body `recv`/`request`/`take_body` collect into memory; a larger one is
    /// LimitExceeded (stream it with `accept`/`open` instead). Default 16 MiB.
    pub max_collected_body: u64,
    /// A connection with no traffic for this long is dead; the smaller of the two peers'
    /// values governs. A peer that goes silent is learned dead between this and this plus one
    /// `keep_alive` after its last packet: QUIC restarts the idle timer when this side sends
    /// its first ack-eliciting packet after the last one it received, and on an otherwise
    /// quiet connection that is the next keep-alive (RFC 9000 §10.1). At the low end, up to
    /// the peer's ACK delay (25 ms) sooner, when the silence swallowed the acknowledgement of
    /// a keep-alive sent just before it. With the defaults, 30 to 40 s (`faults.rs: a_silent_peer_is_detected_between_the_idle_timeout_and_one_keep_alive_later`).
    /// A side sending data when the peer goes silent learns it at about this. Default 30 s.
    pub idle_timeout: Duration,
    /// How often the dialling side sends keep-alives (`None`: never), which keep an idle
    /// connection open and add up to this much to the time a silent peer takes to be learned
    /// dead (see `idle_timeout`). Default 10 s.
    pub keep_alive: Option<Duration>,
    /// How long a dial waits for a weida listener to answer (the transport's handshake and
    /// the listener's HELLO) before it fails `Unreachable` naming the address: over QUIC a
    /// port where nothing listens answers nothing (UDP has no refusal), so this is how long
    /// such a mistake takes to report. A local socket or name with nothing there fails at
    /// once. Default 5 s.
    pub connect_timeout: Duration,
    /// How long a stream the peer opened may wait to say what it is (its type byte and its
    /// DATA header, or a lane's head) before it is stopped with LIMIT_EXCEEDED: a stream
    /// that never names its endpoint holds nothing for longer (PATTERNS §1.12). Default 10 s.
    pub header_timeout: Duration,
    /// How long a reader of a peer's stream waits for the writer's next bytes mid-message
    /// (a transfer's body, a request, a streamed copy, a lane frame cut short) before the
    /// stream is stopped with LIMIT_EXCEEDED; the receive that waited fails
    /// `LimitExceeded` (`body_idle_timeout`). It runs only while a reader waits: a writer held
    /// back by this side's window, or a lane idle between messages, is not idle. Keep-alives
    /// do not reset it (PATTERNS §1.12). Not applied to this side's own reply readers (a
    /// request's wait for its reply is the caller's to bound). Default 30 s.
    pub body_idle_timeout: Duration,
    /// Pub/Sub: payload bytes a publisher holds queued for one subscriber. A copy that would
    /// pass it is dropped for that subscriber and counted (`ByteBudget`); a body above it is
    /// refused to the publisher (`LimitExceeded`), and it bounds one chunk of a `FanOut`.
    /// With `endpoint_queue` it sets the crossover `subscriber_buffer_bytes / endpoint_queue`
    /// (4 KiB at the defaults) below which the queue bound refuses first. Default 1 MiB.
    pub subscriber_buffer_bytes: usize,
    /// Pub/Sub under PerProducer reassemble: out-of-order copies a subscriber holds per
    /// producer; at the bound the oldest is released with its gap. 0 holds nothing (detect).
    /// Default 256.
    pub max_reorder_hold: usize,
    /// Pub/Sub over AF_UNIX: reverse connections a subscriber parks with each publisher in
    /// advance (a publisher cannot dial a local subscriber, PATTERNS §4), at most
    /// `max_local_streams - 1` (parked connections are streams). 0 parks none, and such a
    /// subscriber is refused at subscribe. Default 8.
    pub max_parked_reverse: usize,
    /// Pub/Sub: filters one subscriber may hold on one publisher; one more is refused with
    /// LIMIT_EXCEEDED. Default 1024.
    pub max_filters: usize,
    /// Pub/Sub: how long `FanOut::write` waits for a subscriber's backlog to make room for a
    /// chunk before that subscriber's copy is dropped (`FanOut::write_now` never waits).
    /// Default 1 s.
    pub fanout_wait: Duration,
    /// QUIC: the largest UDP payload this side accepts (the `max_udp_payload_size` transport
    /// parameter) and sends. A connection to a loopback address starts at it, within the
    /// loopback interface's MTU: 64 KiB datagrams carry many lane frames each, and fan-out to
    /// hundreds of local subscribers or a large transfer runs two to three times faster than
    /// at Ethernet's 1452 bytes (docs/PERFORMANCE.md). Any other path starts at 1200 bytes and
    /// path MTU discovery probes upward to it; a probe larger than the local interface carries
    /// is refused by the kernel before it leaves, so on Ethernet the search settles at 1452
    /// after a few seconds of failed probes (1452 here gives quinn's own search). From 1200 to
    /// 65527. Default 65527.
    pub max_udp_payload: u64,
    /// QUIC: connections a listener holds at once, handshakes under way included. One more is
    /// refused before its handshake, at no cost but a packet: its dialler's `connect` fails
    /// `Unreachable` (refused), and it may redial. Each connection costs its state (about
    /// 90 KiB idle, docs/RELIABILITY.md §2) and up to its receive windows, so this bounds what
    /// a flood of connections can take. Over AF_UNIX see `max_local_peer_connections`; in
    /// process every connection is this process's own. Above zero. Default 1024.
    pub max_connections: usize,
    /// AF_UNIX: OS connections a listener holds at once from one peer process (the pid the
    /// kernel names, SO_PEERCRED; processes it names none for, such as those in another pid
    /// namespace, share one count): its control, data and parked connections together, each a
    /// descriptor of the listener's process until the listener closes it. One more is
    /// accepted and closed at once with a STOP and a RESET of LIMIT_EXCEEDED (PROTOCOL §8.6):
    /// the dialler's `connect`, request or parked connection fails `LimitExceeded`, and the
    /// connections it holds, and every other process's, are served. A small one-way transfer
    /// can be in the kernel, and its `send` done, before the refusal: such a message is lost,
    /// as a one-way transfer refused after its receipt is (docs/FAILURE_MODEL.md §4, rule 4).
    ///
    /// An honest dialler holds at most one more than its own `max_local_streams` per
    /// connection, and each subscriber or pair dials a connection of its own (a subscriber
    /// parks `max_parked_reverse` connections besides), so the default fits four connections
    /// at the default budget, or a hundred subscribers of one process. It protects the
    /// listener's other peers only below the process's descriptor limit (`ulimit -n`; 1024 is
    /// a common soft limit): lower it, or raise that limit, where it is not. Above zero.
    /// Default 1024.
    pub max_local_peer_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            stream_receive_window: 1 << 20,
            connection_receive_window: 8 << 20,
            send_window: 8 << 20,
            max_concurrent_uni_streams: 256,
            max_concurrent_bidi_streams: 256,
            max_local_streams: 255,
            endpoint_queue: 256,
            peer_share: 64,
            max_header_size: 16 * 1024,
            max_collected_body: 16 << 20,
            idle_timeout: Duration::from_secs(30),
            keep_alive: Some(Duration::from_secs(10)),
            connect_timeout: Duration::from_secs(5),
            header_timeout: Duration::from_secs(10),
            body_idle_timeout: Duration::from_secs(30),
            subscriber_buffer_bytes: 1 << 20,
            max_reorder_hold: 256,
            max_parked_reverse: 8,
            max_filters: 1024,
            fanout_wait: Duration::from_secs(1),
            max_udp_payload: 65527,
            max_connections: 1024,
            max_local_peer_connections: 1024,
        }
    }
}

impl Limits {
    /// Refuses a profile that cannot work, before any traffic (GUARANTEES §4).
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |s: &str| Err(crate::Error::InvalidConfig(s.to_string()));
        if self.stream_receive_window == 0 || self.connection_receive_window == 0 {
            return bad("receive windows must be above zero");
        }
        if self.max_concurrent_uni_streams == 0 && self.max_concurrent_bidi_streams == 0 {
            return bad("a connection needs some stream budget");
        }
        if self.max_local_streams == 0 {
            return bad("max_local_streams must be above zero");
        }
        if self.endpoint_queue == 0 {
            return bad("endpoint_queue must be above zero");
        }
        if self.max_connections == 0 {
            return bad("max_connections must be above zero");
        }
        if self.max_local_peer_connections == 0 {
            return bad("max_local_peer_connections must be above zero");
        }
        if self.peer_share == 0 {
            return bad("peer_share must be above zero");
        }
        if self.max_header_size < 64 {
            return bad("max_header_size below 64 bytes cannot carry a path");
        }
        if self.subscriber_buffer_bytes == 0 {
            return bad("subscriber_buffer_bytes must be above zero");
        }
        if !(1200..=65527).contains(&self.max_udp_payload) {
            return bad("max_udp_payload must be from 1200 (QUIC's minimum) to 65527 bytes");
        }
        if self.idle_timeout.is_zero() || self.connect_timeout.is_zero() {
            return bad("idle_timeout and connect_timeout must be above zero");
        }
        if self.header_timeout.is_zero() || self.body_idle_timeout.is_zero() {
            return bad("header_timeout and body_idle_timeout must be above zero");
        }
        if let Some(k) = self.keep_alive {
            if k.is_zero() {
                return bad("keep_alive must be above zero (or None)");
            }
        }
        Ok(())
    }
}

/// Per-process configuration of a [`crate::Runtime`].
///
/// ```
/// use weida::{RuntimeConfig, Trust};
/// let cfg = RuntimeConfig { trust: Trust::unverified(), ..RuntimeConfig::default() };
/// assert!(cfg.send_timeout.is_none());
/// ```
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// The key this runtime presents when it dials and, by default, when it binds.
    /// Default: an ephemeral key made at start.
    pub identity: Identity,
    /// Whom a dialled peer must be. Default: only what the address names (its pin).
    pub trust: Trust,
    /// Whether dialling presents `identity` (true) or stays anonymous.
    pub present_identity: bool,
    /// Per-connection bounds, for dialled and accepted connections alike.
    pub limits: Limits,
    /// The guarantee set this runtime requires of every connection (GUARANTEES §4). It offers
    /// every level it implements (ordering up to PerProducer reassemble), so two weida
    /// runtimes agree on any level either requires. A subscriber receives at the ordering
    /// level it requires: gaps under `Detect`, held and reordered copies under `Reassemble`.
    pub guarantees: GuaranteeSet,
    /// How long `open`/`send`/`request` may wait for a stream slot before `Timeout`.
    /// Default: unbounded, as ZeroMQ's ZMQ_SNDTIMEO.
    pub send_timeout: Option<Duration>,
    /// UDP socket buffer size asked of the kernel. Default 4 MiB.
    pub udp_buffer: usize,
    /// Message lanes (docs/decisions/0001-message-lanes.md): a whole message up to this many
    /// bytes, handed to `Pusher::send` or `Publisher::publish`, travels as a frame on one
    /// long-lived stream per connection and path instead of a stream of its own, when the peer
    /// offers lanes too. `open`, requests and larger bodies keep their own stream. 0 turns
    /// lanes off (and refuses a peer's lane). Default 16 KiB.
    pub lane_max_message: usize,
    /// What a dialling endpoint does when a connection it dialled is lost: redial the address
    /// with backoff (the default), or give it up ([`ReconnectPolicy::never`], the next send
    /// then fails with the loss). Each endpoint may set its own ([`EndpointOptions`]).
    pub reconnect: ReconnectPolicy,
    /// How many messages a Pusher's outbox holds while no peer is live (or while it drains):
    /// `send` copies a body there and returns, and the outbox is drained in order onto the
    /// next live connection. Default 1000 (ZeroMQ's high-water mark). 0: no outbox, so a
    /// `send` with no live peer does what `outbox_full` says at once.
    pub outbox_messages: usize,
    /// How many body bytes the outbox holds. Default 8 MiB. A body larger than this on its own
    /// is refused at the call (`LimitExceeded`, limit `outbox_bytes`), not left to block.
    pub outbox_bytes: usize,
    /// What `send` does when the outbox is full ([`OutboxFull`]). Default `Block`.
    pub outbox_full: OutboxFull,
}

/// What a Pusher's `send` does when its outbox is full (GUARANTEES §3's vocabulary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum OutboxFull {
    /// Waits for room (or a live peer), bounded by `send_timeout`: then `Timeout` with the
    /// last loss.
    #[default]
    Block,
    /// Discards the message and returns: counted in `Counters::outbox_dropped`.
    Drop,
    /// Fails with `LimitExceeded` (limit `outbox_messages` or `outbox_bytes`).
    Reject,
}

impl OutboxFull {
    /// The stable name: `block`, `drop`, `reject` (what the bindings and the CLI take).
    pub fn name(self) -> &'static str {
        match self {
            Self::Block => "block",
            Self::Drop => "drop",
            Self::Reject => "reject",
        }
    }

    /// The policy named `name` (as [`OutboxFull::name`] gives it).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Block, Self::Drop, Self::Reject]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            identity: Identity::ephemeral(),
            trust: Trust::address(),
            present_identity: true,
            limits: Limits::default(),
            guarantees: GuaranteeSet::core(),
            send_timeout: None,
            udp_buffer: 4 << 20,
            lane_max_message: 16 * 1024,
            reconnect: ReconnectPolicy::default(),
            outbox_messages: 1000,
            outbox_bytes: 8 << 20,
            outbox_full: OutboxFull::Block,
        }
    }
}

/// The bounds one endpoint may set for itself, each defaulting to its runtime's: a service
/// with one endpoint that takes 200 MiB uploads raises `max_collected_body` there alone, not
/// for every endpoint and connection of the runtime.
///
/// ```
/// # async fn f(rt: weida::Runtime, listener: weida::Listener) -> weida::Result<()> {
/// use std::time::Duration;
/// use weida::EndpointOptions;
/// let uploads = listener.puller_with(
///     "/uploads",
///     &EndpointOptions::new().max_collected_body(256 << 20).endpoint_queue(16),
/// )?;
/// let jobs = rt.pusher_with(&EndpointOptions::new().send_timeout(Some(Duration::from_secs(2))))?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointOptions {
    max_collected_body: Option<u64>,
    endpoint_queue: Option<usize>,
    send_timeout: Option<Option<Duration>>,
    reconnect: Option<ReconnectPolicy>,
    outbox_messages: Option<usize>,
    outbox_bytes: Option<usize>,
    outbox_full: Option<OutboxFull>,
}

impl EndpointOptions {
    /// Every bound the runtime's.
    pub fn new() -> Self {
        Self::default()
    }

    /// The largest body this endpoint's `recv`, `take_body`, `body` and a subscriber's copies
    /// collect whole (`Limits::max_collected_body` for this endpoint).
    pub fn max_collected_body(mut self, bytes: u64) -> Self {
        self.max_collected_body = Some(bytes);
        self
    }

    /// How many incoming streams and messages a bound endpoint (or a subscriber) holds before
    /// its application takes them (`Limits::endpoint_queue` for this endpoint; above zero).
    pub fn endpoint_queue(mut self, n: usize) -> Self {
        self.endpoint_queue = Some(n);
        self
    }

    /// How long this endpoint's `send`, `request` and `open` wait for a stream slot or lane
    /// room before `Timeout` (`RuntimeConfig::send_timeout` for this endpoint; `None`:
    /// unbounded).
    pub fn send_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.send_timeout = Some(timeout);
        self
    }

    /// How this dialling endpoint redials an address whose connection was lost
    /// (`RuntimeConfig::reconnect` for this endpoint).
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = Some(policy);
        self
    }

    /// How many messages this pusher's outbox holds (`RuntimeConfig::outbox_messages`).
    pub fn outbox_messages(mut self, n: usize) -> Self {
        self.outbox_messages = Some(n);
        self
    }

    /// How many body bytes this pusher's outbox holds (`RuntimeConfig::outbox_bytes`).
    pub fn outbox_bytes(mut self, n: usize) -> Self {
        self.outbox_bytes = Some(n);
        self
    }

    /// What this pusher's `send` does at a full outbox (`RuntimeConfig::outbox_full`).
    pub fn outbox_full(mut self, full: OutboxFull) -> Self {
        self.outbox_full = Some(full);
        self
    }

    /// The endpoint's bounds: each option given, else the runtime's. `InvalidConfig` for an
    /// `endpoint_queue` of zero, as `Limits::validate` refuses it.
    pub(crate) fn resolve(&self, config: &RuntimeConfig) -> crate::Result<Bounds> {
        if self.endpoint_queue == Some(0) {
            return Err(crate::Error::InvalidConfig(
                "endpoint_queue must be above zero".into(),
            ));
        }
        Ok(Bounds {
            max_collected_body: self
                .max_collected_body
                .unwrap_or(config.limits.max_collected_body),
            endpoint_queue: self.endpoint_queue.unwrap_or(config.limits.endpoint_queue),
            send_timeout: self.send_timeout.unwrap_or(config.send_timeout),
            reconnect: self.reconnect.unwrap_or(config.reconnect),
            outbox: Outbox {
                messages: self.outbox_messages.unwrap_or(config.outbox_messages),
                bytes: self.outbox_bytes.unwrap_or(config.outbox_bytes),
                full: self.outbox_full.unwrap_or(config.outbox_full),
            },
        })
    }
}

/// One endpoint's bounds, resolved against its runtime's ([`EndpointOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) max_collected_body: u64,
    pub(crate) endpoint_queue: usize,
    pub(crate) send_timeout: Option<Duration>,
    pub(crate) reconnect: ReconnectPolicy,
    pub(crate) outbox: Outbox,
}

/// An outbox's bounds and what a full one does, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outbox {
    pub(crate) messages: usize,
    pub(crate) bytes: usize,
    pub(crate) full: OutboxFull,
}

/// How a dialling endpoint redials an address whose connection was lost (ZeroMQ's
/// ZMQ_RECONNECT_IVL, _IVL_MAX and _STOP, with a jitter and a give-up of its own).
///
/// The delay before attempt `n` is `initial × 2ⁿ⁻¹`, at most `max`, and with `jitter` a
/// uniformly drawn part of it between a half and the whole, so a restarted server is not met
/// by every client at the same instant. In process there is no delay: the redial waits for the
/// name to be bound again.
///
/// ```
/// use std::time::Duration;
/// use weida::{GiveUp, ReconnectPolicy};
/// let patient = ReconnectPolicy {
///     max: Duration::from_secs(5),
///     give_up: GiveUp::After(Duration::from_secs(60)),
///     ..ReconnectPolicy::default()
/// };
/// assert_eq!(patient.initial, Duration::from_millis(100));
/// assert_eq!(ReconnectPolicy::never().give_up, GiveUp::AfterAttempts(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// The delay before the first redial. Default 100 ms.
    pub initial: Duration,
    /// The longest delay between two attempts. Default 30 s.
    pub max: Duration,
    /// Draw each delay between half of it and the whole. Default true.
    pub jitter: bool,
    /// Losses and failures after which the address is given up at once. Default: none.
    pub stop: StopOn,
    /// When to stop trying. Default [`GiveUp::Never`].
    pub give_up: GiveUp,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(30),
            jitter: true,
            stop: StopOn::default(),
            give_up: GiveUp::Never,
        }
    }
}

impl ReconnectPolicy {
    /// No redial: a lost connection's address is given up at once, and the next operation on
    /// the endpoint fails with the loss (`ConnectionLost`), as before redial existed.
    pub fn never() -> Self {
        Self {
            give_up: GiveUp::AfterAttempts(0),
            ..Self::default()
        }
    }

    /// The delay before attempt `attempt` (from 1), before jitter.
    pub(crate) fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(30);
        self.initial
            .saturating_mul(1u32 << doublings)
            .min(self.max.max(self.initial))
    }

    /// `delay` with the jitter applied, drawn with `unit` in `[0, 1)`.
    pub(crate) fn jittered(&self, attempt: u32, unit: f64) -> Duration {
        let d = self.delay(attempt);
        match self.jitter {
            true => d.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0)),
            false => d,
        }
    }
}

/// Losses and dial failures after which a [`ReconnectPolicy`] gives an address up at once
/// (ZeroMQ's ZMQ_RECONNECT_STOP).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StopOn {
    /// A redial found nothing listening (`Unreachable`, refused or unanswered), or a listener
    /// with nothing bound at the path (`UnknownEndpoint`, the path check).
    pub refused: bool,
    /// A redial reached a listener whose handshake failed (TLS, HELLO or its negotiation).
    pub handshake_failed: bool,
    /// The peer closed the connection on purpose (it went away, or its listener closed).
    pub peer_closed: bool,
}

/// When a [`ReconnectPolicy`] stops redialling an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// Never: the address is redialled until the endpoint is dropped or disconnects it.
    Never,
    /// After this many failed attempts since the loss (0: no redial at all).
    AfterAttempts(u32),
    /// Once this long has passed since the loss.
    After(Duration),
}
