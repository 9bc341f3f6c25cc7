"""BUS (PATTERNS §6.3; core/tests/bus.rs: the same names): every member's message reaches every
other member, never itself, and a slow member costs only its own copies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from conftest import bind_address, payload

import weida


@asynccontextmanager
async def members(
    transport: str, n: int, limits: weida.Limits | None = None
) -> AsyncIterator[list[weida.Bus]]:
    """``n`` members, each in a runtime of its own, connected to each other (a mesh)."""
    runtimes = [weida.Runtime(limits=limits) for _ in range(n)]
    try:
        out = []
        for rt in runtimes:
            listener = await rt.bind(bind_address(transport))
            out.append(rt.bus(listener, "/bus"))
        for a in out:
            for b in out:
                if a is not b:
                    await a.connect(b.address)
        yield out
    finally:
        for rt in runtimes:
            rt.shutdown()


async def test_every_member_sees_every_other_members_message(transport: str) -> None:
    async with members(transport, 3) as (a, b, c):
        for name, m in (("a", a), ("b", b), ("c", c)):
            assert await m.send(name.encode()) == 2
        for name, m in (("a", a), ("b", b), ("c", c)):
            got = {(await m.recv()).body, (await m.recv()).body}
            assert got == {o.encode() for o in "abc" if o != name}


async def test_a_sender_never_receives_its_own_message(transport: str) -> None:
    async with members(transport, 2) as (a, b):
        for i in range(10):
            await a.send(f"a{i}".encode())
        await b.send(b"from b")
        assert (await a.recv()).body == b"from b"
        assert a.try_recv() is None
        assert [(await b.recv()).body for _ in range(10)] == [f"a{i}".encode() for i in range(10)]


async def test_a_body_above_the_fan_out_budget_is_refused_rather_than_dropped_for_everyone(
    transport: str,
) -> None:
    async with members(transport, 2, weida.Limits(subscriber_buffer_bytes=1000)) as (a, b):
        with pytest.raises(weida.LimitExceeded) as e:
            await a.send(payload(2000))
        assert e.value.limit == "byte_budget"
        assert a.dropped().total == 0
        assert await a.send(payload(500)) == 1
        assert len((await b.recv()).body) == 500
