"""The exception hierarchy of weida: one class per core error code (docs/BINDINGS.md, "Errors").

Every class carries ``code`` (the core's stable code) and ``definite`` (False only for
:class:`Indeterminate`, whose outcome is unknown). The native module maps each core error to
its class in one place and sets every field the core keeps as an attribute of the same name
(weida-ffi's ``Fail::fields``): the same fields as the Node binding's, in snake_case.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "BY_CODE",
    "Canceled",
    "Closed",
    "ConnectionLost",
    "Indeterminate",
    "InvalidAddress",
    "InvalidConfig",
    "InvalidFilter",
    "IoError",
    "LimitExceeded",
    "NegotiationFailed",
    "NotConnected",
    "ProtocolError",
    "Rejected",
    "Timeout",
    "UnknownEndpoint",
    "Unreachable",
    "Unsupported",
    "Untrusted",
    "WeidaError",
]


class WeidaError(Exception):
    """Base class of every weida error.

    ``sent`` is set only on errors raised by :meth:`Pusher.send_many`: how many bodies were
    sent before the failure (None otherwise).
    """

    code: ClassVar[str] = ""
    """The core's stable error code, e.g. ``"CONNECTION_LOST"``."""
    definite: ClassVar[bool] = True
    """True when the operation certainly failed; False only for :class:`Indeterminate`."""
    sent: int | None = None

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


class NotConnected(WeidaError):
    """The endpoint was never connected to any address."""

    code = "NOT_CONNECTED"


class ConnectionLost(WeidaError):
    """The connection ended before the operation reached a definite outcome that succeeded.

    ``loss_cause`` is one of ``idle_timeout``, ``peer_closed``, ``locally_closed``, ``reset``,
    ``transport_error`` (the core names every cause: ``weida._weida.LOSS_CAUSES``).
    """

    code = "CONNECTION_LOST"

    def __init__(self, message: str = "", *, loss_cause: str = "peer_closed") -> None:
        super().__init__(message)
        self.loss_cause = loss_cause


class Indeterminate(WeidaError):
    """The request reached the peer whole but its reply was lost: the peer may or may not have
    acted on it. Neither a success nor a definite failure, so not a subclass of one; do not
    blindly retry. ``loss_cause`` is the loss cause, as for :class:`ConnectionLost`.
    """

    code = "INDETERMINATE"
    definite = False

    def __init__(self, message: str = "", *, loss_cause: str = "peer_closed") -> None:
        super().__init__(message)
        self.loss_cause = loss_cause


class Untrusted(WeidaError):
    """The peer presented a key outside the configured trust.

    ``fingerprint`` is the key that answered; ``expected`` the pin the address named, if any.
    """

    code = "UNTRUSTED"

    def __init__(
        self, message: str = "", *, fingerprint: str = "", expected: str | None = None
    ) -> None:
        super().__init__(message)
        self.fingerprint = fingerprint
        self.expected = expected


class UnknownEndpoint(WeidaError):
    """Nothing is bound at that path; ``path`` is the path that was asked for."""

    code = "UNKNOWN_ENDPOINT"

    def __init__(self, message: str = "", *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class Unsupported(WeidaError):
    """The endpoint at that path cannot serve this kind of stream or request."""

    code = "UNSUPPORTED"

    def __init__(self, message: str = "", *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class Rejected(WeidaError):
    """The peer's application refused; ``reason`` is what it said."""

    code = "REJECTED"

    def __init__(self, message: str = "", *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class Canceled(WeidaError):
    """The transfer was cancelled (by either side) before it completed."""

    code = "CANCELED"


class LimitExceeded(WeidaError):
    """A configured bound was exceeded; ``limit`` names it (``max_header_size``,
    ``max_collected_body``, ``remote``, ``byte_budget``, ``queue``, ``max_filters``) and
    ``detail`` says what exceeded it.
    """

    code = "LIMIT_EXCEEDED"

    def __init__(self, message: str = "", *, limit: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.limit = limit
        self.detail = detail


class Timeout(WeidaError):
    """A caller's or the configured deadline (``send_timeout``) passed. ``loss_cause`` is the
    last loss when it was a wait for a redial (every connection down), else None."""

    code = "TIMEOUT"

    def __init__(self, message: str = "", *, loss_cause: str | None = None) -> None:
        super().__init__(message)
        self.loss_cause = loss_cause


class InvalidAddress(WeidaError):
    """The address could not be parsed; ``part`` says which part, ``reason`` why."""

    code = "INVALID_ADDRESS"

    def __init__(self, message: str = "", *, part: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.part = part
        self.reason = reason


class NegotiationFailed(WeidaError):
    """The peers' guarantee sets or versions do not meet."""

    code = "NEGOTIATION_FAILED"


class ProtocolError(WeidaError):
    """The peer sent bytes that violate the wire protocol."""

    code = "PROTOCOL"


class InvalidConfig(WeidaError):
    """A configuration was refused before any traffic."""

    code = "INVALID_CONFIG"


class InvalidFilter(WeidaError):
    """A Pub/Sub filter or topic that breaks the segment grammar: refused, never widened.

    ``what`` is ``"filter"`` or ``"topic"``, ``text`` the text as given, ``reason`` why (e.g.
    ``"has an empty segment"``).
    """

    code = "INVALID_FILTER"

    def __init__(
        self, message: str = "", *, what: str = "", text: str = "", reason: str = ""
    ) -> None:
        super().__init__(message)
        self.what = what
        self.text = text
        self.reason = reason


class Closed(WeidaError):
    """The runtime, listener, endpoint or handle was closed (or already consumed)."""

    code = "CLOSED"


class IoError(WeidaError):
    """An operating-system error; ``errno`` is its number, ``__cause__`` the ``OSError``."""

    code = "IO"

    def __init__(self, message: str = "", *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


class Unreachable(WeidaError):
    """A dial found no weida listener, and nothing was sent.

    ``address`` is where the dial went (``host:port``, the socket, the in-process name);
    ``why`` is ``"no_answer"`` (nothing answered within ``Limits(connect_timeout=...)``, 5 s
    by default: over QUIC a port where nothing listens says nothing) or ``"refused"`` (no
    socket file, nothing accepting on it, nothing bound at the name: at once).
    """

    code = "UNREACHABLE"

    def __init__(self, message: str = "", *, address: str = "", why: str = "") -> None:
        super().__init__(message)
        self.address = address
        self.why = why


BY_CODE: dict[str, type[WeidaError]] = {
    cls.code: cls
    for cls in (
        NotConnected,
        ConnectionLost,
        Indeterminate,
        Untrusted,
        UnknownEndpoint,
        Unsupported,
        Rejected,
        Canceled,
        LimitExceeded,
        Timeout,
        InvalidAddress,
        NegotiationFailed,
        ProtocolError,
        InvalidConfig,
        InvalidFilter,
        Closed,
        IoError,
        Unreachable,
    )
}
"""The class of each core error code (the native module's one mapping reads it)."""

# Shown as `weida.LimitExceeded` in tracebacks and reprs, the name a user catches it by
# (test_errors.py `errors_are_named_as_the_package_exports_them`); pickling finds them there too.
for _cls in (WeidaError, *BY_CODE.values()):
    _cls.__module__ = "weida"
del _cls
