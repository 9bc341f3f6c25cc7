"""Shared scaffolding: one test body per behaviour, run over every transport (as core/tests)."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

import weida

TRANSPORTS = ["quic", "inproc", "unix"]
_unique = itertools.count()


def unique() -> int:
    """A number no other test of this process uses."""
    return next(_unique) + os.getpid() * 1_000_000


def bind_address(transport: str) -> str:
    """A bind address on `transport` that no other test uses."""
    if transport == "quic":
        return "weida://127.0.0.1:0"
    if transport == "inproc":
        return f"weida+inproc://test-{unique()}"
    d = os.path.join(tempfile.gettempdir(), "weida-py-tests")
    os.makedirs(d, exist_ok=True)
    return f"weida+unix://{d}/s{unique()}.sock"


def payload(n: int) -> bytes:
    """`n` bytes of a recognisable pattern."""
    return bytes(i % 251 for i in range(n))


@dataclass
class Pair:
    """A bound runtime with its listener, and a dialling runtime."""

    server: weida.Runtime
    listener: weida.Listener
    client: weida.Runtime


async def make_pair(transport: str, limits: weida.Limits | None = None) -> Pair:
    """A bound runtime and a dialling one, both with `limits`. The dialling one does not
    redial: the tests written before redial existed assert what a loss does to an endpoint
    under `ReconnectPolicy.never()` (the behaviour before it); test_reconnect.py asserts the
    default, which redials."""
    server = weida.Runtime(limits=limits)
    listener = await server.bind(bind_address(transport))
    client = weida.Runtime(limits=limits, reconnect=weida.ReconnectPolicy.never())
    return Pair(server, listener, client)


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """Each transport in turn."""
    param: str = request.param
    return param


@pytest.fixture
async def pair(transport: str) -> AsyncIterator[Pair]:
    """A pair on the transport under test, shut down after the test."""
    p = await make_pair(transport)
    yield p
    p.client.shutdown()
    p.server.shutdown()
