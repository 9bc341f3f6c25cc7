"""Push/Pull the other way round (PATTERNS §3.1; core/tests/bound_push.rs: the same names): a
pusher that binds deals round-robin to the pullers that dialled it."""

from __future__ import annotations

import asyncio

import pytest
from conftest import bind_address

import weida


async def test_workers_that_connect_before_and_after_the_first_send_each_get_their_share(
    transport: str,
) -> None:
    async with weida.Runtime() as server, weida.Runtime() as ra, weida.Runtime() as rb:
        listener = await server.bind(bind_address(transport))
        jobs = listener.pusher("/jobs")
        a = ra.puller()
        await a.connect(jobs.address)
        assert jobs.peer_count == 1
        for i in range(4):
            await jobs.send(f"job {i}".encode())
        assert [(await a.recv()).body for _ in range(4)] == [f"job {i}".encode() for i in range(4)]
        b = rb.puller()
        await b.connect(jobs.address)
        assert jobs.peer_count == 2
        for i in range(4, 14):
            await jobs.send(f"job {i}".encode(), {"n": str(i)})
        got = [await a.recv() for _ in range(5)] + [await b.recv() for _ in range(5)]
        assert {m.body for m in got} == {f"job {i}".encode() for i in range(4, 14)}
        assert all(m.meta.get("n") == m.body.split()[1] for m in got)
        assert a.try_recv() is None and b.try_recv() is None


async def test_a_bound_pushers_send_waits_for_a_puller_bounded_by_send_timeout(
    transport: str,
) -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(transport))
        lonely = listener.pusher("/alone", send_timeout=0.05)
        with pytest.raises(weida.Timeout):
            await lonely.send(b"nobody")
        jobs = listener.pusher("/jobs")
        worker = client.puller()
        await asyncio.gather(jobs.send(b"first"), worker.connect(jobs.address))
        async for m in worker:
            assert m.body == b"first"
            break
        jobs.close()
        with pytest.raises(weida.Closed):
            await jobs.send(b"after")


async def test_what_is_not_a_bound_pusher_takes_no_puller(transport: str) -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(transport))
        puller = listener.puller("/pull")
        jobs = listener.pusher("/jobs")
        with pytest.raises(weida.Unsupported):
            await client.puller().connect(puller.address)
        with pytest.raises(weida.Unsupported):
            await client.pusher().connect(jobs.address)
