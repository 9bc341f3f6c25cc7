"""weida: ZeroMQ's idea on QUIC, asyncio-native.

Req/Rep, Push/Pull, Pub/Sub and raw streams over QUIC (``weida://``), in process
(``weida+inproc://``) and AF_UNIX (``weida+unix://``), with peers named by the SHA-256
fingerprint of their key.
Every operation that waits is awaited; cancelling the await cancels the operation.

    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        puller = listener.puller("/jobs")
        pusher = rt.pusher()
        await pusher.connect(puller.address)
        await pusher.send(b"hello")
        msg = await puller.recv()

        publisher = listener.publisher("/prices")
        sub = rt.subscriber()
        await sub.connect(publisher.address)
        await sub.subscribe("prices.*.eur")
        publisher.publish("prices.btc.eur", b"42000")
        msg = await sub.recv()  # msg.meta.topic == "prices.btc.eur"
"""

from . import service
from ._errors import (
    Canceled,
    Closed,
    ConnectionLost,
    Indeterminate,
    InvalidAddress,
    InvalidConfig,
    InvalidFilter,
    IoError,
    LimitExceeded,
    NegotiationFailed,
    NotConnected,
    ProtocolError,
    Rejected,
    Timeout,
    UnknownEndpoint,
    Unreachable,
    Unsupported,
    Untrusted,
    WeidaError,
)
from ._weida import (
    Acceptor,
    Address,
    BoundPusher,
    BoundSubscriber,
    Bus,
    Counters,
    Delivery,
    DialingPublisher,
    DialingPuller,
    Drained,
    Dropped,
    Exchange,
    FanOut,
    Identity,
    IncomingMeta,
    IncomingTransfer,
    Limits,
    Listener,
    Message,
    OutgoingTransfer,
    Pair,
    Peer,
    PeerEvent,
    PeerEvents,
    PeerKey,
    PeerLocal,
    PendingReply,
    Publisher,
    Puller,
    Pusher,
    ReconnectPolicy,
    Replier,
    Requester,
    Runtime,
    Subscriber,
    Surveyor,
    SurveyRun,
    Trust,
    fingerprint_of_certificate,
)

# A forked child starts its own I/O thread on first use: weida-ffi's fork handler forgets the
# parent's (its thread was not forked), whatever forked, with no hook here.

__version__ = "0.1.0"

__all__ = [
    "Acceptor",
    "Address",
    "BoundPusher",
    "BoundSubscriber",
    "Bus",
    "Canceled",
    "Closed",
    "ConnectionLost",
    "Counters",
    "Delivery",
    "DialingPublisher",
    "DialingPuller",
    "Drained",
    "Dropped",
    "Exchange",
    "FanOut",
    "Identity",
    "IncomingMeta",
    "IncomingTransfer",
    "Indeterminate",
    "InvalidAddress",
    "InvalidConfig",
    "InvalidFilter",
    "IoError",
    "LimitExceeded",
    "Limits",
    "Listener",
    "Message",
    "NegotiationFailed",
    "NotConnected",
    "OutgoingTransfer",
    "Pair",
    "Peer",
    "PeerEvent",
    "PeerEvents",
    "PeerKey",
    "PeerLocal",
    "PendingReply",
    "ProtocolError",
    "Publisher",
    "Puller",
    "Pusher",
    "ReconnectPolicy",
    "Rejected",
    "Replier",
    "Requester",
    "Runtime",
    "Subscriber",
    "SurveyRun",
    "Surveyor",
    "Timeout",
    "Trust",
    "UnknownEndpoint",
    "Unreachable",
    "Unsupported",
    "Untrusted",
    "WeidaError",
    "fingerprint_of_certificate",
    "service",
]
