"""Type stubs of the native module ``weida._weida`` (re-exported by ``weida``).

Every method that waits returns an ``asyncio.Future``: ``await`` it, pass it to
``asyncio.wait_for``/``gather``, or wrap it with ``asyncio.ensure_future``. Cancelling the
future cancels the operation.
"""

from asyncio import Future
from collections.abc import Iterable, Mapping
from os import PathLike
from types import TracebackType
from typing import Literal, TypedDict, final

from typing_extensions import Unpack

from weida._errors import WeidaError

_Buffer = bytes | bytearray | memoryview
"""A body: ``bytes`` (large ones are sent without a copy), ``bytearray`` or ``memoryview``."""
_MetaValue = bytes | bytearray | memoryview | str
"""A metadata value; ``str`` is sent as UTF-8."""
_Meta = Mapping[str, _MetaValue] | Iterable[tuple[str, _MetaValue]]
"""Metadata: a mapping, or ``(name, value)`` pairs kept in order (names may repeat)."""
_StrPath = str | PathLike[str]
_Ordering = Literal["none", "detect", "reassemble"]
_OutboxFull = Literal["block", "drop", "reject"]
"""An ordering level (``RuntimeConfig::guarantees``): ``"detect"`` numbers each publisher's
and pusher's messages and reports gaps; ``"reassemble"`` also holds out-of-order copies
(``Limits.max_reorder_hold``; subscribers only: a runtime that requires it refuses pushers with
``NegotiationFailed``)."""

@final
class ReconnectPolicy:
    """How a dialling endpoint redials an address whose connection was lost. Durations are
    seconds; give at most one of ``give_up_after_attempts`` and ``give_up_after`` (neither:
    never give up)."""

    def __new__(
        cls,
        *,
        initial: float = 0.1,
        max: float = 30.0,
        jitter: bool = True,
        stop_refused: bool = False,
        stop_handshake_failed: bool = False,
        stop_peer_closed: bool = False,
        give_up_after_attempts: int | None = None,
        give_up_after: float | None = None,
    ) -> ReconnectPolicy: ...
    @staticmethod
    def never() -> ReconnectPolicy:
        """No redial: a lost address is given up and the next operation fails with the loss."""
    @property
    def initial(self) -> float:
        """Seconds before the first redial. Default 0.1."""
    @property
    def max(self) -> float:
        """The longest delay between two attempts, in seconds. Default 30."""
    @property
    def jitter(self) -> bool:
        """Each delay is drawn between half of it and the whole. Default True."""
    @property
    def stop_refused(self) -> bool:
        """Give up when a redial finds nothing listening. Default False."""
    @property
    def stop_handshake_failed(self) -> bool:
        """Give up when a redial's handshake fails. Default False."""
    @property
    def stop_peer_closed(self) -> bool:
        """Give up when the peer closed the connection on purpose. Default False."""
    @property
    def give_up_after_attempts(self) -> int | None:
        """Give up after this many failed attempts (0: never redial). Default None."""
    @property
    def give_up_after(self) -> float | None:
        """Give up this many seconds after the loss. Default None."""

_PeerEventKind = Literal["connected", "lost", "retrying", "gave_up", "missed"]

@final
class PeerEvent:
    """One transition of one address of a dialling endpoint."""

    @property
    def kind(self) -> _PeerEventKind:
        """``connected``, ``lost``, ``retrying``, ``gave_up``, or ``missed`` (fell behind)."""
    @property
    def url(self) -> str:
        """The address as the endpoint connected it (empty for ``missed``)."""
    @property
    def fingerprint(self) -> str | None:
        """``connected``: the key the peer proved (None over a local transport)."""
    @property
    def cause(self) -> str | None:
        """``lost``, ``gave_up``: the loss cause's name (``"peer_changed"``, ...)."""
    @property
    def reason(self) -> str | None:
        """``lost``, ``gave_up``: the cause as a sentence."""
    @property
    def attempt(self) -> int | None:
        """``retrying``: which attempt since the loss, from 1."""
    @property
    def delay(self) -> float | None:
        """``retrying``: seconds it waits first (0 in process: it waits for the name)."""
    @property
    def missed(self) -> int | None:
        """``missed``: how many events this reader fell behind by."""

@final
class PeerEvents:
    """A dialling endpoint's events from the moment ``events()`` was called."""

    def next(self) -> Future[PeerEvent]:
        """The next event; raises StopAsyncIteration once the endpoint is gone."""
    def __aiter__(self) -> PeerEvents: ...
    def __anext__(self) -> Future[PeerEvent]: ...

class _EndpointOptions(TypedDict, total=False):
    """An endpoint's own bounds, given as keyword arguments when it is made
    (``listener.puller("/uploads", max_collected_body=256 << 20)``); each absent one is the
    runtime's. An option that does not apply to the endpoint (``endpoint_queue`` on a pusher)
    is accepted and has no effect."""

    max_collected_body: int
    """The largest body this endpoint's ``recv``, ``take_body``, ``body`` and a subscriber's
    copies collect whole."""
    endpoint_queue: int
    """Streams and messages a bound endpoint (or a subscriber) holds before the application
    takes them; a publisher's copies queued per subscriber. Above zero."""
    send_timeout: float | None
    """Seconds ``send``/``request``/``open`` wait for a peer, a stream slot or lane room
    before ``Timeout``; ``None``: unbounded."""
    reconnect: ReconnectPolicy
    """How this dialling endpoint redials a lost address."""
    outbox_messages: int
    """Messages a pusher's outbox holds while no peer is live (default 1000; 0: none)."""
    outbox_bytes: int
    """Body bytes a pusher's outbox holds (default 8 MiB); a larger body is refused at the call."""
    outbox_full: _OutboxFull
    """What ``send`` does at a full outbox: ``"block"`` (wait for room, bounded by
    ``send_timeout``), ``"drop"`` (counted in ``outbox_dropped``) or ``"reject"``
    (``LimitExceeded``)."""

@final
class Address:
    """A parsed weida address; ``str(address)`` is its canonical text."""

    def __new__(cls, address: str) -> Address: ...
    def with_path(self, path: str) -> Address:
        """This address with endpoint path ``path``."""
    def with_pin(self, fingerprint: str) -> Address:
        """This address pinning ``fingerprint``."""
    def without_path(self) -> Address:
        """This address without its endpoint path."""
    @property
    def path(self) -> str | None:
        """The endpoint path, if any."""
    @property
    def pin(self) -> str | None:
        """The pinned fingerprint, if any."""

@final
class Limits:
    """Per-connection bounds, with the core's names and defaults. Durations are seconds."""

    def __new__(
        cls,
        *,
        stream_receive_window: int = 1048576,
        connection_receive_window: int = 8388608,
        send_window: int = 8388608,
        max_concurrent_uni_streams: int = 256,
        max_concurrent_bidi_streams: int = 256,
        max_local_streams: int = 255,
        endpoint_queue: int = 256,
        peer_share: int = 64,
        max_header_size: int = 16384,
        max_collected_body: int = 16777216,
        idle_timeout: float = 30.0,
        keep_alive: float | None = 10.0,
        connect_timeout: float = 5.0,
        header_timeout: float = 10.0,
        body_idle_timeout: float = 30.0,
        subscriber_buffer_bytes: int = 1048576,
        max_reorder_hold: int = 256,
        max_parked_reverse: int = 8,
        max_filters: int = 1024,
        fanout_wait: float = 1.0,
        max_udp_payload: int = 65527,
        max_connections: int = 1024,
        max_local_peer_connections: int = 1024,
    ) -> Limits: ...
    @property
    def stream_receive_window(self) -> int:
        """Bytes a writer may run ahead of the reader on one stream. Default 1 MiB."""
    @property
    def connection_receive_window(self) -> int:
        """Bytes all streams of one connection may run ahead of their readers. Default 8 MiB."""
    @property
    def send_window(self) -> int:
        """Bytes this side may have in flight on one connection. Default 8 MiB."""
    @property
    def max_concurrent_uni_streams(self) -> int:
        """One-way streams the peer may have open toward us at once. Default 256."""
    @property
    def max_concurrent_bidi_streams(self) -> int:
        """Exchanges the peer may have open toward us at once. Default 256."""
    @property
    def max_local_streams(self) -> int:
        """Streams a local socket connection may hold at once. Default 255."""
    @property
    def endpoint_queue(self) -> int:
        """Incoming streams an endpoint holds before its application takes them. Default 256."""
    @property
    def peer_share(self) -> int:
        """Streams one connection may have at one endpoint, queued or being read. Default 64."""
    @property
    def max_header_size(self) -> int:
        """The largest header accepted. Default 16 KiB."""
    @property
    def max_collected_body(self) -> int:
        """The largest body ``recv``/``request``/``take_body`` collect. Default 16 MiB."""
    @property
    def idle_timeout(self) -> float:
        """Seconds without traffic after which a connection is dead. A silent peer is learned dead
        between this and this plus one ``keep_alive`` (30 to 40 s by default). Default 30."""
    @property
    def keep_alive(self) -> float | None:
        """Seconds between keep-alives from the dialling side; None: never. Adds up to this to the
        time a silent peer takes to be learned dead. Default 10."""
    @property
    def connect_timeout(self) -> float:
        """Seconds a dial waits for a weida listener to answer (else ``Unreachable``). Default 5."""
    @property
    def header_timeout(self) -> float:
        """Seconds a peer's stream may take to say what it is (type and header). Default 10."""
    @property
    def body_idle_timeout(self) -> float:
        """Seconds a reader waits for a peer's next bytes mid-message. Default 30."""
    @property
    def subscriber_buffer_bytes(self) -> int:
        """Pub/Sub: bytes a publisher holds queued for one subscriber. Default 1 MiB."""
    @property
    def max_reorder_hold(self) -> int:
        """Pub/Sub, ``ordering="reassemble"``: copies held per producer. Default 256."""
    @property
    def max_parked_reverse(self) -> int:
        """Pub/Sub over AF_UNIX: reverse connections parked per publisher. Default 8."""
    @property
    def max_filters(self) -> int:
        """Pub/Sub: filters one subscriber may hold on one publisher. Default 1024."""
    @property
    def fanout_wait(self) -> float:
        """Pub/Sub: seconds ``FanOut.write`` waits for a slow subscriber. Default 1."""
    @property
    def max_udp_payload(self) -> int:
        """QUIC: the largest UDP payload accepted and sent. Default 65527."""
    @property
    def max_connections(self) -> int:
        """QUIC: connections a listener holds at once; one more is refused before its
        handshake (its dialler's ``connect`` raises ``Unreachable``). Default 1024."""
    @property
    def max_local_peer_connections(self) -> int:
        """AF_UNIX: connections a listener holds at once from one peer process; one more
        is refused with LIMIT_EXCEEDED (its dialler's ``connect`` or request raises
        ``LimitExceeded``). Default 1024."""

@final
class Identity:
    """The key a runtime presents; peers name it by its fingerprint."""

    @staticmethod
    def ephemeral() -> Identity:
        """A fresh P-256 key in a self-signed certificate; nothing is written anywhere."""
    @staticmethod
    def load_or_create(dir: _StrPath) -> Identity:
        """The identity kept in ``dir``, created there on first use."""
    @staticmethod
    def load(dir: _StrPath) -> Identity:
        """The identity kept in ``dir`` (``key.pem`` and ``cert.pem``)."""
    @staticmethod
    def from_pem(cert_chain_pem: str, key_pem: str) -> Identity:
        """An identity from a PEM certificate chain (leaf first) and the leaf's key."""
    def save(self, dir: _StrPath) -> None:
        """Writes this identity into ``dir``, replacing what is there."""
    @property
    def fingerprint(self) -> str:
        """``sha256:<64 hex>`` of the public key: what a peer pins."""

def fingerprint_of_certificate(der: bytes) -> str:
    """The fingerprint (``sha256:<hex>``) of the key in a DER certificate."""

LOSS_CAUSES: tuple[str, ...]
"""Every loss cause a ``ConnectionLost`` or ``Indeterminate`` carries (``loss_cause``), as the
core names them."""

def _orphans() -> int: ...
def _fetched() -> int: ...
def _wait_fetched(n: int, timeout: float) -> bool: ...

@final
class Trust:
    """Whom a dialling side accepts, or which clients ``bind(require_client=...)`` lets in."""

    @staticmethod
    def address() -> Trust:
        """Only the key the address pins (the default)."""
    @staticmethod
    def pinned(fingerprints: Iterable[str]) -> Trust:
        """These keys (``sha256:<hex>``), besides an address pin."""
    @staticmethod
    def anchors(ca_ders: Iterable[bytes]) -> Trust:
        """Certificate chains that validate to one of these CA certificates (DER)."""
    @staticmethod
    def anchors_pem(pem: str) -> Trust:
        """``anchors`` from PEM."""
    @staticmethod
    def unverified() -> Trust:
        """Any key: for tests and trusted networks only."""
    def with_pin(self, fingerprint: str) -> Trust:
        """This trust plus one pinned key."""
    def with_anchor_der(self, der: bytes) -> Trust:
        """This trust plus one CA certificate (DER)."""
    @property
    def pins(self) -> list[str]:
        """The pinned fingerprints."""

@final
class Counters:
    """Counters, monotonic since the runtime started."""

    streams_opened: int
    streams_accepted: int
    streams_refused: int
    bytes_sent: int
    bytes_received: int
    connections_dialled: int
    connections_accepted: int
    receipts_delivered: int
    receipts_failed: int
    copies_published: int
    lane_messages_sent: int
    """Messages written as frames on message lanes (each also counts in `bytes_sent`); those a
    dead QUIC lane's peer may lack move to `lane_messages_lost`."""
    lane_messages_received: int
    """Messages read from message lanes and handed to an endpoint."""
    lane_messages_lost: int
    """Messages a lane that ended early (a refusal or a loss) may not have delivered to the peer's
    transport: never written, or over QUIC written in its last `send_window` bytes. An upper
    bound."""
    outbox_queued: int
    """Messages a pusher's ``send`` put in its outbox (no peer was live, or it was draining)."""
    outbox_written: int
    """Messages written from an outbox to a live connection."""
    outbox_dropped: int
    """Messages a full ``"drop"`` outbox discarded at the call."""
    outbox_abandoned: int
    """Messages an outbox held when it could no longer drain (pusher closed, every address
    given up, the runtime closed)."""

@final
class Drained:
    """What a drain achieved: counts, not a promise."""

    delivered: int
    outstanding: int
    unsent: int
    """Messages the pushers' outboxes still held at the deadline, never written."""
    def __new__(cls, delivered: int, outstanding: int, unsent: int = 0) -> Drained: ...

@final
class Runtime:
    """The process-wide entry point: dials, binds, owns every connection.

    ``async with Runtime() as rt:`` shuts it down on exit. ``ordering`` is the ordering level
    it requires of what it receives; its subscribers and pullers receive under it (``"detect"``:
    gaps in ``msg.meta.gap``; ``"reassemble"``: subscribers' copies reordered too, and pushers,
    requesters and raw peers refused; ``"detect"`` refuses requesters and raw peers).
    ``lane_max_message`` is the largest body ``send``/``publish`` write as a frame on a message
    lane (0: off; default 16 KiB).
    """

    def __new__(
        cls,
        *,
        identity: Identity | None = None,
        trust: Trust | None = None,
        limits: Limits | None = None,
        present_identity: bool = True,
        send_timeout: float | None = None,
        udp_buffer: int | None = None,
        ordering: _Ordering = "none",
        lane_max_message: int | None = None,
        reconnect: ReconnectPolicy | None = None,
        outbox_messages: int = 1000,
        outbox_bytes: int = 8388608,
        outbox_full: _OutboxFull = "block",
    ) -> Runtime: ...
    @property
    def fingerprint(self) -> str:
        """The fingerprint of the key this runtime presents."""
    def bind(self, address: str, *, require_client: Trust | None = None) -> Future[Listener]:
        """Binds ``address`` (no path); endpoints are bound by path on the listener."""
    def pusher(self, **options: Unpack[_EndpointOptions]) -> Pusher:
        """A Push endpoint; ``send_timeout``, ``reconnect`` and its outbox's options of its own."""
    def requester(self, **options: Unpack[_EndpointOptions]) -> Requester:
        """A Req endpoint; ``send_timeout`` and ``max_collected_body`` (replies) of its own."""
    def bus(self, listener: Listener, path: str, **options: Unpack[_EndpointOptions]) -> Bus:
        """A bus member bound at ``path`` on ``listener`` (this runtime's): ``connect`` it to
        the other members; ``endpoint_queue`` (copies per member) and ``max_collected_body``
        of its own."""
    def puller(self, **options: Unpack[_EndpointOptions]) -> DialingPuller:
        """A puller that dials bound pushers (``Listener.pusher``): ``connect``, then
        ``recv``; ``max_collected_body`` and ``endpoint_queue`` of its own."""
    def pair(self, **options: Unpack[_EndpointOptions]) -> Pair:
        """A dialling PAIR: ``connect`` it to a bound pair (``Listener.pair``); a pusher's
        options for what it sends, a puller's for what it receives."""
    def publisher(self, **options: Unpack[_EndpointOptions]) -> DialingPublisher:
        """A publisher that dials collectors (``Listener.subscriber``): ``connect``, then
        ``publish``; ``endpoint_queue`` (copies per collector) of its own."""
    def surveyor(self, **options: Unpack[_EndpointOptions]) -> Surveyor:
        """A Surveyor: ``connect`` it to respondents, then ``await survey(body, deadline)``;
        ``max_collected_body`` (answers) of its own."""
    def subscriber(self, **options: Unpack[_EndpointOptions]) -> Subscriber:
        """A Sub endpoint: ``connect`` and ``subscribe`` (in either order), then ``recv``;
        ``max_collected_body`` and ``endpoint_queue`` of its own."""
    def peer(self, **options: Unpack[_EndpointOptions]) -> Peer:
        """A raw endpoint; ``send_timeout`` of its own."""
    def counters(self) -> Counters:
        """The counters."""
    def drain(self, seconds: float) -> Future[Drained]:
        """Lets finished transfers arrive for up to ``seconds``, then closes everything."""
    def shutdown(self) -> None:
        """Closes every connection now."""
    def close(self) -> Future[None]:
        """Closes every connection now and resolves once the closes have been sent (at most 1 s)."""
    def __aenter__(self) -> Future[Runtime]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Listener:
    """A bound address; endpoints are registered on it by path."""

    @property
    def address(self) -> str:
        """The bound address (real port; over QUIC the pin of its key)."""
    def puller(self, path: str, **options: Unpack[_EndpointOptions]) -> Puller:
        """Binds a Puller at ``path``; ``max_collected_body`` and ``endpoint_queue`` of its own."""
    def replier(self, path: str, **options: Unpack[_EndpointOptions]) -> Replier:
        """Binds a Replier at ``path``; ``max_collected_body`` and ``endpoint_queue`` of its own."""
    def respondent(self, path: str, **options: Unpack[_EndpointOptions]) -> Replier:
        """Binds a respondent at ``path``: a ``Replier`` by another name (surveys arrive as
        exchanges, each answered once)."""
    def publisher(self, path: str, **options: Unpack[_EndpointOptions]) -> Publisher:
        """Binds a Publisher at ``path``; ``endpoint_queue`` (copies per subscriber) of its own."""
    def pusher(self, path: str, **options: Unpack[_EndpointOptions]) -> BoundPusher:
        """Binds a pusher at ``path``: pullers that connect share its messages, round-robin;
        ``send_timeout`` (a send waits for a puller) of its own."""
    def pair(self, path: str, **options: Unpack[_EndpointOptions]) -> Pair:
        """Binds a PAIR at ``path``: one dialling pair at a time claims it; ``send_timeout``
        (a send waits for a peer), ``max_collected_body`` and ``endpoint_queue`` of its own."""
    def subscriber(self, path: str, **options: Unpack[_EndpointOptions]) -> BoundSubscriber:
        """Binds a collector at ``path``: dialling publishers feed it; ``max_collected_body``
        and ``endpoint_queue`` of its own."""
    def acceptor(self, path: str, **options: Unpack[_EndpointOptions]) -> Acceptor:
        """Binds a raw Acceptor at ``path``; ``max_collected_body`` and ``endpoint_queue``."""
    def events(self) -> PeerEvents:
        """The connections it accepts: ``connected`` (``url`` where from, ``fingerprint``),
        ``lost`` (``cause``); ``async for event in listener.events()``."""
    def close(self) -> None:
        """Stops accepting, closes accepted connections, ends its endpoints."""
    def __aenter__(self) -> Future[Listener]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Pusher:
    """Sends messages to pullers, one stream each, round-robin."""

    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Dials ``address`` (with its path); ``wait=False`` records it at once and dials in
        the background (connect-before-bind; ``events()`` says how it goes)."""
    def disconnect(self, address: str) -> bool:
        """Removes ``address``; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up: ``async for event in endpoint.events()``."""
    @property
    def peer_count(self) -> int:
        """Live connections."""
    def send(self, body: _Buffer, meta: _Meta | None = None) -> Future[None]:
        """Sends a whole message; returns once its FIN is queued."""
    def try_send(self, body: _Buffer) -> bool:
        """Sends a whole message only if that can be done now: True if sent, False if not."""
    def send_many(self, bodies: Iterable[_Buffer]) -> Future[None]:
        """Sends each body as its own message, in one crossing."""
    def open(self, meta: _Meta | None = None) -> Future[OutgoingTransfer]:
        """Opens a streamed message."""
    def close(self) -> None:
        """Forgets this endpoint's connections."""
    def __aenter__(self) -> Future[Pusher]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Puller:
    """Receives pushed messages at a bound path; ``async for msg in puller``."""

    @property
    def address(self) -> str:
        """The address to dial this puller at."""
    def recv(self) -> Future[Message]:
        """The next whole message. Cancel-safe."""
    def try_recv(self) -> Message | None:
        """The next whole message if one is ready now, else None."""
    def recv_many(self, max: int) -> Future[list[Message]]:
        """Up to ``max`` messages (at least one). Cancel-safe."""
    def accept(self) -> Future[IncomingTransfer]:
        """The next message as a stream."""
    def close(self) -> None:
        """Releases the path."""
    def __aiter__(self) -> Puller: ...
    def __anext__(self) -> Future[Message]: ...
    def __aenter__(self) -> Future[Puller]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Requester:
    """Sends requests and awaits replies, round-robin."""

    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Dials ``address`` (with its path); ``wait=False`` records it at once and dials in
        the background (connect-before-bind; ``events()`` says how it goes)."""
    def disconnect(self, address: str) -> bool:
        """Removes ``address``; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up: ``async for event in endpoint.events()``."""
    @property
    def peer_count(self) -> int:
        """Live connections."""
    def request(self, body: _Buffer, meta: _Meta | None = None) -> Future[bytes]:
        """Sends ``body``, returns the reply body."""
    def request_with(self, body: _Buffer, meta: _Meta) -> Future[Message]:
        """``request`` with metadata both ways."""
    def open(self, meta: _Meta | None = None) -> Future[tuple[OutgoingTransfer, PendingReply]]:
        """Opens a streamed request."""
    def close(self) -> None:
        """Forgets this endpoint's connections."""
    def __aenter__(self) -> Future[Requester]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Bus:
    """A bus member: ``send`` reaches every member it connected (one shared copy each; a slow
    member's copies are dropped and counted); ``async for msg in member`` receives what the
    others send. A member never receives its own message."""

    @property
    def address(self) -> str:
        """The address other members connect to."""
    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Connects to another member's address (with its path)."""
    def disconnect(self, address: str) -> bool:
        """Leaves a member; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up, for the members this one connected."""
    @property
    def peer_count(self) -> int:
        """Members connected and live."""
    def send(self, body: _Buffer, meta: _Meta | None = None) -> Future[int]:
        """Queues a copy for every live member connected; returns how many. A body above
        ``Limits.subscriber_buffer_bytes`` raises ``LimitExceeded``."""
    def recv(self) -> Future[Message]:
        """The next message another member sent. Cancel-safe."""
    def try_recv(self) -> Message | None:
        """The next message if one is ready now."""
    def recv_many(self, max: int) -> Future[list[Message]]:
        """Up to ``max`` messages (at least one)."""
    def dropped(self) -> Dropped:
        """Copies dropped, by cause (``queue_full``, ``byte_budget``, ``dead_subscriber``)."""
    def close(self) -> None:
        """Unbinds the path and leaves every member."""
    def __aiter__(self) -> Bus: ...
    def __anext__(self) -> Future[Message]: ...
    def __aenter__(self) -> Future[Bus]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class BoundPusher:
    """A pusher bound at a path: the pullers that connect to it share its messages,
    round-robin per message; one that connects later gets its share from then on."""

    @property
    def address(self) -> str:
        """The address pullers connect to."""
    @property
    def peer_count(self) -> int:
        """Pullers connected now."""
    def send(self, body: _Buffer, meta: _Meta | None = None) -> Future[None]:
        """Sends a whole message to the next puller; waits for one, bounded by
        ``send_timeout``."""
    def open(self, meta: _Meta | None = None) -> Future[OutgoingTransfer]:
        """Opens a streamed message to the next puller."""
    def close(self) -> None:
        """Unbinds the path; later sends raise ``Closed``."""
    def __aenter__(self) -> Future[BoundPusher]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class DialingPuller:
    """A puller that dials bound pushers and receives its share of their messages."""

    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Connects to a bound pusher's address and claims a share of its messages."""
    def disconnect(self, address: str) -> bool:
        """Leaves a bound pusher; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up, for the addresses this puller connected."""
    @property
    def peer_count(self) -> int:
        """Bound pushers connected and live."""
    def recv(self) -> Future[Message]:
        """The next message. Cancel-safe."""
    def try_recv(self) -> Message | None:
        """The next message if one is ready now."""
    def recv_many(self, max: int) -> Future[list[Message]]:
        """Up to ``max`` messages (at least one)."""
    def accept(self) -> Future[IncomingTransfer]:
        """The next message as a stream, read in parts."""
    def close(self) -> None:
        """Leaves every bound pusher; what was received is still handed out, then ``Closed``."""
    def __aiter__(self) -> DialingPuller: ...
    def __anext__(self) -> Future[Message]: ...
    def __aenter__(self) -> Future[DialingPuller]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Pair:
    """One end of a PAIR, dialling or bound, with the same calls: ``send`` reaches the other
    end, ``async for msg in pair`` receives what it sends. A bound pair takes one peer at a
    time: a second is refused with ``LimitExceeded``, and the first keeps working."""

    @property
    def address(self) -> str | None:
        """The address a dialling pair connects to (a bound pair's); None when dialling."""
    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Connects a dialling pair to the bound pair at ``address`` and claims it."""
    def disconnect(self, address: str) -> bool:
        """Leaves the bound pair; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up, for a dialling pair's address."""
    @property
    def peer_count(self) -> int:
        """1 while the other end is there, else 0."""
    def send(self, body: _Buffer, meta: _Meta | None = None) -> Future[None]:
        """Sends a whole message to the other end; a bound pair waits for a peer, bounded
        by ``send_timeout``."""
    def open(self, meta: _Meta | None = None) -> Future[OutgoingTransfer]:
        """Opens a streamed message to the other end."""
    def recv(self) -> Future[Message]:
        """The next message from the other end. Cancel-safe."""
    def try_recv(self) -> Message | None:
        """The next message if one is ready now."""
    def recv_many(self, max: int) -> Future[list[Message]]:
        """Up to ``max`` messages (at least one)."""
    def accept(self) -> Future[IncomingTransfer]:
        """The next message as a stream, read in parts."""
    def close(self) -> None:
        """A bound pair unbinds its path; a dialling pair leaves its peer."""
    def __aiter__(self) -> Pair: ...
    def __anext__(self) -> Future[Message]: ...
    def __aenter__(self) -> Future[Pair]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class DialingPublisher:
    """A publisher that dials its subscribers (collectors): each one connected gets a copy of
    every message, whatever the topic (the collector filters); a slow one's copies are
    dropped and counted."""

    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Connects to a collector's address (with its path)."""
    def disconnect(self, address: str) -> bool:
        """Leaves a collector; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up, for the collectors this one connected."""
    @property
    def peer_count(self) -> int:
        """Collectors connected and live."""
    def publish(self, topic: str, body: _Buffer, meta: _Meta | None = None) -> int:
        """Queues a copy for every live collector connected; returns how many. Never waits.
        Raises ``LimitExceeded`` for a body above ``Limits.subscriber_buffer_bytes``,
        ``InvalidFilter`` for a malformed topic."""
    def dropped(self) -> Dropped:
        """Copies dropped, by cause (``queue_full``, ``byte_budget``, ``dead_subscriber``)."""
    def close(self) -> None:
        """Leaves every collector."""
    def __aenter__(self) -> Future[DialingPublisher]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class BoundSubscriber:
    """A subscriber bound at a path that dialling publishers feed (a collector). It keeps what
    its filters select, when it receives it, and counts the rest in ``discarded``; with no
    filter it keeps nothing."""

    @property
    def address(self) -> str:
        """The address publishers dial."""
    def subscribe(self, filter: str) -> None:
        """Adds ``filter`` here, at once. Raises ``InvalidFilter``."""
    def unsubscribe(self, filter: str) -> bool:
        """Removes one entry of ``filter``; False if it was not held."""
    @property
    def filters(self) -> list[str]:
        """The filters held, in the order given."""
    @property
    def discarded(self) -> int:
        """Messages that arrived and that no filter selected."""
    def recv(self) -> Future[Message]:
        """The next selected message. Cancel-safe."""
    def try_recv(self) -> Message | None:
        """The next selected message if one is ready now."""
    def recv_many(self, max: int) -> Future[list[Message]]:
        """Up to ``max`` selected messages (at least one)."""
    def close(self) -> None:
        """Unbinds the path: what is queued is still received, then ``Closed``."""
    def __aiter__(self) -> BoundSubscriber: ...
    def __anext__(self) -> Future[Message]: ...
    def __aenter__(self) -> Future[BoundSubscriber]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Surveyor:
    """Asks every connected respondent the same question."""

    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Dials ``address`` (with its path) and adds it to the respondents asked."""
    def disconnect(self, address: str) -> bool:
        """Removes ``address``; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up: ``async for event in endpoint.events()``."""
    @property
    def peer_count(self) -> int:
        """Live connections: the respondents the next survey asks."""
    def survey(
        self, body: _Buffer, deadline: float, meta: _Meta | None = None
    ) -> Future[SurveyRun]:
        """Asks every live respondent ``body``; returns once each was asked or ``deadline``
        (seconds) passed. No respondent is an empty run, never ``NotConnected``."""
    def close(self) -> None:
        """Forgets this endpoint's connections."""
    def __aenter__(self) -> Future[Surveyor]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class SurveyRun:
    """A survey's answers until its deadline: ``async for answer in run``, each a
    ``Message`` or the ``WeidaError`` of a respondent that refused or failed (returned, not
    raised). Dropping the run ends the exchanges still open."""

    def answer(self) -> Future[Message | WeidaError | None]:
        """The next answer; None once every respondent answered or the deadline passed."""
    @property
    def respondents(self) -> int:
        """How many respondents were asked."""
    @property
    def late(self) -> int:
        """Answers that arrived after the deadline: counted, not delivered."""
    @property
    def expired(self) -> bool:
        """The deadline has passed."""
    def settled(self) -> Future[None]:
        """Resolves once every asked respondent's exchange has ended (answered, failed, or late
        and counted in ``late``)."""
    def __aiter__(self) -> SurveyRun: ...
    def __anext__(self) -> Future[Message | WeidaError]: ...

@final
class Replier:
    """Answers requests at a bound path; ``async for exchange in replier``."""

    @property
    def address(self) -> str:
        """The address to dial this replier at."""
    def accept(self) -> Future[Exchange]:
        """The next exchange. Cancel-safe."""
    def close(self) -> None:
        """Releases the path."""
    def __aiter__(self) -> Replier: ...
    def __anext__(self) -> Future[Exchange]: ...
    def __aenter__(self) -> Future[Replier]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Peer:
    """Opens raw streams to acceptors: one-way transfers and exchanges."""

    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Dials ``address`` (with its path); ``wait=False`` records it at once and dials in
        the background (connect-before-bind; ``events()`` says how it goes)."""
    def disconnect(self, address: str) -> bool:
        """Removes ``address``; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up: ``async for event in endpoint.events()``."""
    @property
    def peer_count(self) -> int:
        """Live connections."""
    def open(self, meta: _Meta | None = None) -> Future[OutgoingTransfer]:
        """Opens a one-way stream."""
    def exchange(self, meta: _Meta | None = None) -> Future[tuple[OutgoingTransfer, PendingReply]]:
        """Opens an exchange."""
    def close(self) -> None:
        """Forgets this endpoint's connections."""
    def __aenter__(self) -> Future[Peer]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Acceptor:
    """Receives both stream kinds at a bound path."""

    @property
    def address(self) -> str:
        """The address to dial this acceptor at."""
    def accept(self) -> Future[IncomingTransfer | Exchange]:
        """The next stream. Cancel-safe."""
    def close(self) -> None:
        """Releases the path."""
    def __aiter__(self) -> Acceptor: ...
    def __anext__(self) -> Future[IncomingTransfer | Exchange]: ...
    def __aenter__(self) -> Future[Acceptor]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Dropped:
    """Copies a publisher dropped, by cause. A refusal raised by ``publish`` is not a drop."""

    queue_full: int
    byte_budget: int
    reverse_pool_empty: int
    dead_subscriber: int
    refused: int
    def __new__(
        cls,
        *,
        queue_full: int = 0,
        byte_budget: int = 0,
        reverse_pool_empty: int = 0,
        dead_subscriber: int = 0,
        refused: int = 0,
    ) -> Dropped: ...
    @property
    def total(self) -> int:
        """Every drop, whatever its cause."""

@final
class Publisher:
    """Publishes messages by topic to the subscribers whose filters select it.

    ``publish`` never waits: a subscriber that cannot take a copy loses it, counted in
    ``dropped()``.
    """

    @property
    def address(self) -> str:
        """The address subscribers dial."""
    def publish(self, topic: str, body: _Buffer) -> int:
        """Queues ``body`` for every subscriber ``topic`` selects; returns the copies queued."""
    def open(self, topic: str) -> FanOut:
        """Opens a streamed message to the subscribers ``topic`` selects now."""
    def dropped(self) -> Dropped:
        """Copies dropped since the publisher was bound, by cause."""
    def dropped_on(self, topic: str) -> Dropped:
        """Copies of ``topic`` dropped, by cause."""
    @property
    def subscriber_count(self) -> int:
        """Subscribers connected now (with at least one filter)."""
    def _until_subscribers(self, n: int) -> Future[None]: ...
    def close(self) -> None:
        """Unbinds the path and ends every subscription."""
    def __aenter__(self) -> Future[Publisher]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class FanOut:
    """A message streamed to every subscriber ``Publisher.open`` matched.

    ``write``/``write_now`` chunks, then ``finish()`` or ``cancel()``. As an async context
    manager it finishes on a clean exit and cancels on an exception.
    """

    @property
    def copies(self) -> int:
        """Copies still attached; after ``finish()``, those it was finished for."""
    def write(self, chunk: _Buffer) -> Future[int]:
        """Writes ``chunk`` to every copy, waiting up to ``Limits.fanout_wait`` for room."""
    def write_now(self, chunk: _Buffer) -> int:
        """Writes ``chunk`` to every copy without waiting; returns the copies attached."""
    def finish(self) -> int:
        """Ends the message; returns the copies still attached."""
    def cancel(self) -> None:
        """Cancels every copy: subscribers never see half a message."""
    def __aenter__(self) -> Future[FanOut]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class Subscriber:
    """Receives what its filters select from the publishers it connects to.

    ``async for msg in subscriber``; ``msg.meta.topic``, ``sequence`` and ``gap`` say what
    it is and what was missed.
    """

    def connect(self, address: str, *, wait: bool = True) -> Future[None]:
        """Dials the publisher at ``address`` and installs every filter held there;
        ``wait=False`` records it at once and does that in the background (connect-before-bind)."""
    def disconnect(self, address: str) -> bool:
        """Closes the connection to ``address``; True if it was connected."""
    def events(self) -> PeerEvents:
        """Connected, lost, retrying, gave up: ``async for event in endpoint.events()``."""
    @property
    def peer_count(self) -> int:
        """Live connections."""
    def subscribe(self, filter: str) -> Future[None]:
        """Adds ``filter``; returns once every connected publisher installed it."""
    def unsubscribe(self, filter: str) -> Future[bool]:
        """Removes one entry of ``filter``; False if it was not held."""
    @property
    def filters(self) -> list[str]:
        """The filters held, in the order given."""
    def recv(self) -> Future[Message]:
        """The next message. Cancel-safe."""
    def try_recv(self) -> Message | None:
        """The next message if one is ready now, else None."""
    def recv_many(self, max: int) -> Future[list[Message]]:
        """Up to ``max`` messages (at least one). Cancel-safe."""
    @property
    def queued(self) -> int:
        """Messages received and waiting for ``recv``."""
    def _until_queued(self, n: int) -> Future[None]: ...
    def close(self) -> None:
        """Closes every connection; receiving returns what is queued, then ``Closed``."""
    def __aiter__(self) -> Subscriber: ...
    def __anext__(self) -> Future[Message]: ...
    def __aenter__(self) -> Future[Subscriber]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class PeerKey:
    """A QUIC peer, by the key it proved."""

    fingerprint: str
    def __new__(cls, fingerprint: str) -> PeerKey: ...

@final
class PeerLocal:
    """An AF_UNIX peer, as the kernel reported it."""

    uid: int
    gid: int
    pid: int
    def __new__(cls, uid: int, gid: int, pid: int) -> PeerLocal: ...

@final
class IncomingMeta:
    """What arrived with an incoming stream."""

    @property
    def peer(self) -> PeerKey | PeerLocal | None:
        """The peer as the transport proved it (None in process or anonymous)."""
    @property
    def path(self) -> str:
        """The endpoint path the stream was addressed to."""
    @property
    def metadata(self) -> list[tuple[str, bytes]]:
        """Application metadata, in order."""
    def get(self, name: str) -> bytes | None:
        """The first value of metadata ``name``."""
    @property
    def topic(self) -> str | None:
        """The Pub/Sub topic, when there is one."""
    @property
    def sequence(self) -> int | None:
        """The PerProducer sequence number: a Pub/Sub copy's or a pushed message's, when the
        receiving runtime requires ordering."""
    @property
    def gap(self) -> int | None:
        """Numbers missed before this one, under PerProducer ordering."""

@final
class Message:
    """A whole message."""

    @property
    def meta(self) -> IncomingMeta:
        """What arrived with it."""
    @property
    def body(self) -> bytes:
        """The body."""

@final
class Delivery:
    """The transport receipt of a finished transfer; dropping it is free."""

    def delivered(self) -> Future[None]:
        """Resolves when the peer's transport holds every byte and the FIN."""

@final
class OutgoingTransfer:
    """An outgoing stream: ``write``, then ``finish()`` or ``cancel()``.

    As an async context manager it finishes on a clean exit and cancels on an exception.
    """

    def write(self, body: _Buffer) -> Future[None]:
        """Writes all of ``body``; waits while the peer's window is full."""
    def write_chunks(self, bodies: Iterable[_Buffer]) -> Future[None]:
        """Writes several bodies in order."""
    def finish(self) -> Future[Delivery]:
        """Queues the FIN; returns the Delivery."""
    def cancel(self) -> None:
        """Abandons the transfer: the reader sees Canceled."""
    def __aenter__(self) -> Future[OutgoingTransfer]: ...
    def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Future[None]: ...

@final
class IncomingTransfer:
    """An incoming stream; ``async for chunk in transfer``."""

    @property
    def meta(self) -> IncomingMeta:
        """What arrived with the stream."""
    def read_chunk(self) -> Future[bytes | None]:
        """The next chunk, None after the FIN. Cancel-safe."""
    def collect(self, max: int) -> Future[bytes]:
        """The whole body, refusing one above ``max`` bytes."""
    def refuse(self, code: str, message: str = "") -> None:
        """Refuses the stream with ``code`` (e.g. ``"REJECTED"``)."""
    def __aiter__(self) -> IncomingTransfer: ...
    def __anext__(self) -> Future[bytes]: ...

@final
class Exchange:
    """An incoming exchange: the request and the reply half."""

    @property
    def meta(self) -> IncomingMeta:
        """What arrived with the request."""
    def read_chunk(self) -> Future[bytes | None]:
        """The request's next chunk, None at its end. Cancel-safe."""
    def take_body(self, max: int | None = None) -> Future[bytes]:
        """The whole request body."""
    def reply(self, body: _Buffer, meta: _Meta | None = None) -> Future[None]:
        """Replies with ``body`` and finishes."""
    def open_reply(self, meta: _Meta | None = None) -> Future[OutgoingTransfer]:
        """Opens the reply as a stream."""
    def reject(self, reason: str) -> Future[None]:
        """Answers REJECTED with ``reason``."""
    def fail(self, code: str, message: str) -> Future[None]:
        """Answers with an error code and message: the code's own wire code (``"CLOSED"``:
        GOING_AWAY), any other as REJECTED; a name that is no code raises ``InvalidConfig``."""
    def cancel(self) -> None:
        """Abandons the exchange unanswered: the requester sees ``Canceled``."""

@final
class PendingReply:
    """The reply half of an exchange this side opened."""

    def reply(self) -> Future[IncomingTransfer]:
        """Waits for the reply's start; the body streams."""
    def body(self) -> Future[Message]:
        """The whole reply."""

@final
class Service:
    """Registrations of handlers on one runtime's endpoints (docs/SERVICES.md)."""

    def __new__(cls, runtime: Runtime) -> Service: ...
    def queue(
        self,
        listener: Listener,
        path: str,
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        dead_letter: str | None = None,
        retry_to: str | None = None,
    ) -> Future[Registration]:
        """A bound Pull path; copies go to it."""
    def fan_out(
        self,
        listener: Listener,
        path: str,
        filters: list[str],
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        dead_letter: str | None = None,
        retry_to: str | None = None,
    ) -> Future[Registration]:
        """A bound Sub path holding ``filters``; copies come back to it alone."""
    def pulling(
        self,
        address: str,
        *,
        retry_to: str | None = None,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        dead_letter: str | None = None,
    ) -> Future[Registration]:
        """A puller dialling a bound pusher; ``retry_to`` is required."""
    def subscribing(
        self,
        address: str,
        filters: list[str],
        *,
        retry_to: str | None = None,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        dead_letter: str | None = None,
    ) -> Future[Registration]:
        """A subscriber dialling a bound publisher, holding ``filters``; ``retry_to`` is
        required."""
    def replying(
        self,
        listener: Listener,
        path: str,
        *,
        retry_to: str | None = None,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        dead_letter: str | None = None,
    ) -> Future[Registration]:
        """A Rep path; ``retry_to`` is required."""

@final
class Registration:
    """One endpoint read for a handler."""

    def next(self) -> Future[Job]:
        """The next job; ``Closed`` once stopping. Cancel-safe."""
    @property
    def counters(self) -> dict[str, int]:
        """handled, retried, dead_lettered, dropped, failed, in_flight, delayed."""
    @property
    def address(self) -> str | None:
        """A bound queue's or fan-out's own address."""
    @property
    def retry_address(self) -> str:
        """Where copies go."""
    def take_warnings(self) -> list[str]:
        """The warnings logged since the last call, oldest first."""
    def stop(self, deadline: float = 30.0) -> Future[dict[str, int]]:
        """Takes nothing more, waits for handlers in flight, then closes."""

@final
class Job:
    """One message handed to a handler, until its outcome is given."""

    @property
    def message(self) -> Message: ...
    @property
    def attempt(self) -> int: ...
    def ack(self) -> None:
        """Raises ``Unsupported``, always."""
    def discard(self) -> None:
        """Raises ``Unsupported``, always."""
    def finish(
        self, outcome: str, *, delay: float | None = None, body: bytes | None = None
    ) -> None:
        """Gives the outcome by name; ``Closed`` if given already."""
    def fail(self, reason: str) -> None:
        """The handler failed: logged, counted, then a retry."""
    def _conclude(
        self, outcome: str, *, delay: float | None = None, body: bytes | None = None
    ) -> list[str]:
        """For the serve loop: a refused outcome a failure, a job already finished left as
        it is; the registration's warnings since."""
    def _conclude_failed(self, reason: str) -> list[str]:
        """For the serve loop: ``fail``, a job already finished left as it is; the
        registration's warnings since."""
