"""PAIR (PATTERNS §6.1; core/tests/pair.rs: the same names): one bound pair and one dialling
pair, each sending to the other on one connection; a second peer is refused and the first
keeps working; a peer that goes away leaves the bound pair claimable."""

from __future__ import annotations

import asyncio

import pytest
from conftest import bind_address, payload

import weida


async def test_both_directions_carry_transfers_concurrently(transport: str) -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(transport))
        bound = listener.pair("/chat")
        dialling = client.pair()
        assert bound.address is not None and dialling.address is None
        await dialling.connect(bound.address)
        assert dialling.peer_count == 1
        bodies = [payload(300_000 + i) if i % 5 == 4 else payload(10 + i) for i in range(20)]

        async def send_all(p: weida.Pair) -> None:
            for b in bodies:
                await p.send(b)

        await asyncio.gather(send_all(dialling), send_all(bound))
        at_bound = {(await bound.recv()).body for _ in bodies}
        at_dialling = set()
        for _ in bodies:
            m = await dialling.recv()
            assert m.meta.path == "/chat"
            at_dialling.add(m.body)
        assert at_bound == at_dialling == set(bodies)
        assert bound.peer_count == 1


async def test_a_second_connection_is_refused_and_the_first_keeps_working(transport: str) -> None:
    async with weida.Runtime() as server, weida.Runtime() as a, weida.Runtime() as b:
        listener = await server.bind(bind_address(transport))
        bound = listener.pair("/chat")
        assert bound.address is not None
        first, second = a.pair(), b.pair()
        await first.connect(bound.address)
        with pytest.raises(weida.LimitExceeded):
            await second.connect(bound.address)
        assert second.peer_count == 0
        with pytest.raises(weida.Unsupported):
            await b.pusher().connect(bound.address)
        await first.send(b"still here")
        assert (await bound.recv()).body == b"still here"
        await bound.send(b"and you", {"k": "v"})
        m = await first.recv()
        assert (m.body, m.meta.get("k")) == (b"and you", b"v")


async def test_a_peer_that_goes_away_leaves_the_endpoint_claimable(transport: str) -> None:
    async with weida.Runtime() as server, weida.Runtime() as later:
        listener = await server.bind(bind_address(transport))
        events = listener.events()
        bound = listener.pair("/chat")
        assert bound.address is not None
        first_rt = weida.Runtime()
        first = first_rt.pair()
        await first.connect(bound.address)
        await first.send(b"one")
        assert (await bound.recv()).body == b"one"
        await first_rt.close()
        async for e in events:
            if e.kind == "lost":
                break
        assert bound.peer_count == 0
        nxt = later.pair()
        await nxt.connect(bound.address)
        await bound.send(b"to the next")
        async for m in nxt:
            assert m.body == b"to the next"
            break


async def test_a_bound_pairs_send_waits_for_a_peer_bounded_by_send_timeout(transport: str) -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(transport))
        lonely = listener.pair("/alone", send_timeout=0.05)
        with pytest.raises(weida.Timeout):
            await lonely.send(b"nobody")
        bound = listener.pair("/chat")
        assert bound.address is not None
        dialling = client.pair()
        await asyncio.gather(bound.send(b"first"), dialling.connect(bound.address))
        assert (await dialling.recv()).body == b"first"


async def test_what_is_not_a_pair_takes_no_claim(transport: str) -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(transport))
        puller = listener.puller("/jobs")
        dialling = client.pair()
        with pytest.raises(weida.Unsupported):
            await dialling.connect(puller.address)
        bound = listener.pair("/chat")
        with pytest.raises(weida.InvalidConfig):
            await bound.connect(puller.address)
        with pytest.raises(weida.InvalidConfig):
            bound.events()
