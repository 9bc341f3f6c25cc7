"""The exception hierarchy mirrors the core's one error type (docs/BINDINGS.md, "Errors")."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable

import pytest
from conftest import bind_address

import weida
from weida import _weida
from weida._errors import BY_CODE

CODES = [
    "NOT_CONNECTED",
    "CONNECTION_LOST",
    "INDETERMINATE",
    "UNTRUSTED",
    "UNKNOWN_ENDPOINT",
    "UNSUPPORTED",
    "REJECTED",
    "CANCELED",
    "LIMIT_EXCEEDED",
    "TIMEOUT",
    "INVALID_ADDRESS",
    "NEGOTIATION_FAILED",
    "PROTOCOL",
    "INVALID_CONFIG",
    "INVALID_FILTER",
    "CLOSED",
    "IO",
    "UNREACHABLE",
]


def test_one_class_per_core_code_under_the_base_error() -> None:
    assert sorted(BY_CODE) == sorted(CODES)
    for code, cls in BY_CODE.items():
        assert issubclass(cls, weida.WeidaError)
        assert cls.code == code
        assert getattr(weida, cls.__name__) is cls
        assert cls.__doc__


def test_indeterminate_is_not_a_definite_failure() -> None:
    assert not weida.Indeterminate.definite
    assert all(cls.definite for cls in BY_CODE.values() if cls is not weida.Indeterminate)
    for cls in BY_CODE.values():
        if cls is not weida.Indeterminate:
            assert not issubclass(weida.Indeterminate, cls)
    assert weida.Indeterminate.__mro__[1] is weida.WeidaError


def test_every_public_name_has_a_docstring() -> None:
    for name in weida.__all__:
        obj = getattr(weida, name)
        assert obj.__doc__, name
        for attr, member in vars(obj).items() if isinstance(obj, type) else []:
            if not attr.startswith("_") and callable(member):
                assert getattr(member, "__doc__", None), f"{name}.{attr}"


async def test_the_error_raised_carries_code_and_message() -> None:
    rt = weida.Runtime()
    try:
        await rt.pusher().send(b"x")
    except weida.WeidaError as e:
        assert e.code == "NOT_CONNECTED"
        assert "not connected" in str(e)
        assert e.definite
    else:
        raise AssertionError("no error")


# The fields each code's error carries, in every language (node/test/errors.test.mjs has the
# same table in camelCase): weida-ffi sets them from the core's `Error::fields`.
FIELDS = {
    "CONNECTION_LOST": {"loss_cause"},
    "INDETERMINATE": {"loss_cause"},
    "UNTRUSTED": {"fingerprint", "expected"},
    "UNKNOWN_ENDPOINT": {"path"},
    "UNSUPPORTED": {"reason"},
    "REJECTED": {"reason"},
    "LIMIT_EXCEEDED": {"limit", "detail"},
    "INVALID_ADDRESS": {"part", "reason"},
    "INVALID_FILTER": {"what", "text", "reason"},
    "IO": {"errno"},
    "TIMEOUT": {"loss_cause"},
    "UNREACHABLE": {"address", "why"},
}


def fields(e: weida.WeidaError) -> set[str]:
    """The fields an error carries: its attributes beyond what every error has."""
    return set(vars(e)) - {"message"}


async def raised(pending: Awaitable[object]) -> weida.WeidaError:
    try:
        await pending
    except weida.WeidaError as e:
        return e
    raise AssertionError("no error")


async def test_the_loss_cause_is_named_by_the_core() -> None:
    # The core names every cause (there is no binding's own "unknown" name): these eight.
    assert _weida.LOSS_CAUSES == (
        "idle_timeout",
        "peer_closed",
        "locally_closed",
        "reset",
        "transport_error",
        "peer_changed",
        "dial_failed",
        "unknown_endpoint",
    )
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address("inproc"))
        replier = listener.replier("/x")
        req = client.requester()
        await req.connect(replier.address)
        body, reply = await req.open()
        await body.write(b"part")
        _held = await replier.accept()  # unanswered but alive: its loss is the connection's
        server.shutdown()
        e = await raised(reply.body())
        assert isinstance(e, weida.ConnectionLost)
        assert e.loss_cause in _weida.LOSS_CAUSES
        assert fields(e) == {"loss_cause"}


async def test_errors_carry_their_fields_by_the_same_names_everywhere() -> None:
    # Every class declares its code's fields, and nothing else.
    for code, cls in BY_CODE.items():
        assert fields(cls("m")) == FIELDS.get(code, set()), code
    # Raised by the binding, each carries them, with values.
    rt = weida.Runtime()
    try:
        e = await raised(rt.bind("weida://127.0.0.1:0/path"))
        assert (e.code, fields(e)) == ("INVALID_ADDRESS", FIELDS["INVALID_ADDRESS"])
        assert isinstance(e, weida.InvalidAddress) and e.part == "path"
        e = await raised(rt.subscriber().subscribe("a..b"))
        assert isinstance(e, weida.InvalidFilter)
        assert (e.what, e.text, fields(e)) == ("filter", "a..b", FIELDS["INVALID_FILTER"])
        taken = await rt.bind("weida://127.0.0.1:0")
        e = await raised(rt.bind("weida://127.0.0.1:" + taken.address.rsplit(":", 1)[1]))
        assert isinstance(e, weida.IoError) and e.errno is not None
        assert fields(e) == FIELDS["IO"]
        listener = await rt.bind(bind_address("inproc"))
        replier = listener.replier("/x")
        req = rt.requester()
        await req.connect(replier.address)
        asking = asyncio.ensure_future(req.request(b"q"))
        await (await replier.accept()).reject("not today")
        e = await raised(asking)
        assert isinstance(e, weida.Rejected) and e.reason == "not today"
        assert fields(e) == FIELDS["REJECTED"]
        e = await raised(req.request(b"x", meta={"blob": "x" * 20_000}))
        assert isinstance(e, weida.LimitExceeded) and e.limit == "max_header_size"
        assert fields(e) == FIELDS["LIMIT_EXCEEDED"]
    finally:
        rt.shutdown()


async def test_fail_closed_is_going_away_on_the_wire() -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address("inproc"))
        replier = listener.replier("/x")
        req = client.requester()
        await req.connect(replier.address)

        async def answered(code: str) -> weida.WeidaError:
            asking = asyncio.ensure_future(req.request(b"q"))
            await (await replier.accept()).fail(code, "said so")
            return await raised(asking)

        # CLOSED goes as GOING_AWAY: the requester's connection is going away.
        e = await answered("CLOSED")
        assert isinstance(e, weida.ConnectionLost) and e.loss_cause == "peer_closed"
        # A code with no wire code of its own goes as INTERNAL_ERROR, read as Rejected with
        # the message.
        e = await answered("TIMEOUT")
        assert isinstance(e, weida.Rejected) and e.reason == "said so"
        e = await answered("UNSUPPORTED")
        assert isinstance(e, weida.Unsupported) and e.reason == "said so"
        # A name that is no code is the caller's InvalidConfig; the exchange is still owed.
        asking = asyncio.ensure_future(req.request(b"q"))
        ex = await replier.accept()
        with pytest.raises(weida.InvalidConfig, match="NOT_A_CODE"):
            await ex.fail("NOT_A_CODE", "x")
        ex.cancel()
        assert isinstance(await raised(asking), weida.Canceled)


async def test_a_dial_nobody_answers_is_unreachable_naming_the_address() -> None:
    # Over QUIC a port where a socket reads nothing is reported at connect_timeout; a name
    # with nothing bound is refused at once. Both name where the dial went.
    rt = weida.Runtime(limits=weida.Limits(connect_timeout=0.3))
    black_hole = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        black_hole.bind(("127.0.0.1", 0))
        at = f"127.0.0.1:{black_hole.getsockname()[1]}"
        e = await raised(rt.pusher().connect(f"weida://{at}/jobs"))
        assert isinstance(e, weida.Unreachable), e
        assert (e.address, e.why, fields(e)) == (at, "no_answer", FIELDS["UNREACHABLE"])
        assert f"no weida listener answered at {at} within 300 ms (connect_timeout)" in str(e)
        e = await raised(rt.requester().connect(f"{bind_address('inproc')}/x"))
        assert isinstance(e, weida.Unreachable) and e.why == "refused", e
        assert str(e).startswith("unreachable: nothing listens at in-process name"), e
    finally:
        black_hole.close()
        await rt.close()


def test_errors_are_named_as_the_package_exports_them() -> None:
    # A traceback says `weida.LimitExceeded: ...`, the name it is caught by.
    classes: list[type[weida.WeidaError]] = [weida.WeidaError, *BY_CODE.values()]
    for cls in classes:
        assert cls.__module__ == "weida", cls
        assert getattr(weida, cls.__name__) is cls
    # The package's namespace is its __all__ and its two private modules: nothing leaked.
    public = {n for n in dir(weida) if not n.startswith("_")}
    assert public == set(weida.__all__), public ^ set(weida.__all__)
