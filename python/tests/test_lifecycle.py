"""Lifecycle and backpressure (PATTERNS §1.1, §1.4, §1.8, GUARANTEES §5;
core/tests/lifecycle.rs)."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import Pair, bind_address, make_pair

import weida


async def test_a_finished_transfer_needs_no_local_handle_to_arrive(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")

    async def push() -> None:
        pusher = pair.client.pusher()
        await pusher.connect(puller.address)
        for i in range(20):
            await pusher.send(bytes([i]) * 4096)

    await push()  # the pusher and its transfers are gone
    got = sorted([(await puller.recv()).body[0] for _ in range(20)])
    assert got == list(range(20))


async def test_a_finished_transfer_that_shutdown_cuts_short_arrives_under_drain(
    pair: Pair,
) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    for _ in range(50):
        await pusher.send(b"\x07" * 1024)

    async def reader() -> int:
        n = 0
        while n < 50:
            assert len((await puller.recv()).body) == 1024
            n += 1
        return n

    r = asyncio.ensure_future(reader())
    started = time.monotonic()
    drained = await pair.client.drain(30)
    assert drained == weida.Drained(delivered=50, outstanding=0)
    assert await r == 50
    assert time.monotonic() - started < 30
    with pytest.raises(weida.Closed):
        await pusher.send(b"late")


async def test_the_stream_budget_is_backpressure_not_an_error(transport: str) -> None:
    limits = weida.Limits(max_concurrent_uni_streams=2, max_local_streams=2)
    server = weida.Runtime(limits=limits)
    listener = await server.bind(bind_address(transport))
    puller = listener.puller("/jobs")
    # A stream per message (lanes off): with lanes, small sends share one stream, and their
    # backpressure is the lane's queue and window.
    # send_timeout also bounds d's wait for the slot the read frees: long enough for a loaded
    # machine (the peer's stream credit must come back).
    client = weida.Runtime(limits=limits, send_timeout=1.0, lane_max_message=0)
    pusher = client.pusher()
    await pusher.connect(puller.address)
    await pusher.send(b"a")
    await pusher.send(b"b")
    with pytest.raises(weida.Timeout):
        await pusher.send(b"c")
    first = await puller.recv()
    # The slot comes back when the peer's stream credit does; a send that times out first
    # sent nothing, and is tried again.
    while True:
        try:
            await pusher.send(b"d")
            break
        except weida.Timeout:
            continue
    rest = sorted([first.body, (await puller.recv()).body, (await puller.recv()).body])
    assert rest == [b"a", b"b", b"d"]


async def test_a_reply_lost_after_the_request_fin_is_indeterminate(pair: Pair) -> None:
    replier = pair.listener.replier("/charge")
    seen: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    held: list[weida.Exchange] = []

    async def serve() -> None:
        ex = await replier.accept()
        seen.set_result(await ex.take_body())
        held.append(ex)  # acted, never answers

    server = asyncio.ensure_future(serve())
    req = pair.client.requester()
    await req.connect(replier.address)
    pending = req.request(b"card 42")
    assert await seen == b"card 42"
    pair.server.shutdown()
    with pytest.raises(weida.Indeterminate) as e:
        await pending
    assert not e.value.definite
    assert not isinstance(e.value, weida.ConnectionLost)
    assert e.value.cause in ("locally_closed", "peer_closed", "reset")
    await server


async def test_a_loss_before_the_request_fin_is_connection_lost(pair: Pair) -> None:
    replier = pair.listener.replier("/upload")
    req = pair.client.requester()
    await req.connect(replier.address)
    body, reply = await req.open()
    await body.write(b"first part")
    _ex = await replier.accept()
    pair.server.shutdown()
    with pytest.raises(weida.ConnectionLost) as e:
        await reply.body()
    assert e.value.definite
    assert e.value.cause in ("locally_closed", "peer_closed", "reset")


async def test_a_peer_that_goes_away_is_reported_as_connection_loss(transport: str) -> None:
    p = await make_pair(transport)
    puller = p.listener.puller("/jobs")
    pusher = p.client.pusher()
    await pusher.connect(puller.address)
    await pusher.send(b"one")
    assert (await puller.recv()).body == b"one"
    p.server.shutdown()
    puller.close()
    p.listener.close()
    for _ in range(10_000):
        try:
            await pusher.send(b"two")
        except weida.ConnectionLost as e:
            assert e.cause == "peer_closed"
            break
        await asyncio.sleep(0)
    else:
        raise AssertionError("the loss was never reported")
    assert pusher.peer_count == 0


async def test_an_endpoint_never_connected_is_not_connected() -> None:
    rt = weida.Runtime()
    with pytest.raises(weida.NotConnected):
        await rt.pusher().send(b"x")
    with pytest.raises(weida.NotConnected):
        await rt.requester().request(b"x")


async def test_configurations_that_cannot_be_honoured_are_refused() -> None:
    with pytest.raises(weida.InvalidConfig):
        weida.Runtime(limits=weida.Limits(endpoint_queue=0))
    rt = weida.Runtime()
    with pytest.raises(weida.Unsupported):
        await rt.bind("weida+pipe://name")
    with pytest.raises(weida.InvalidAddress) as e:
        await rt.bind("weida://127.0.0.1:0/path")
    assert e.value.part == "path"
    with pytest.raises(ValueError):
        weida.Limits(idle_timeout=-1)


async def test_a_closed_endpoint_or_consumed_handle_is_closed(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    t = await pusher.open()
    d = await t.finish()
    with pytest.raises(weida.Closed):
        await t.write(b"after finish")
    await d.delivered()
    with pytest.raises(weida.Closed):
        await d.delivered()
    # Taken here, so it cannot reach the puller bound again below.
    assert (await puller.recv()).body == b""
    async with pair.client.pusher() as scoped:
        await scoped.connect(puller.address)
    with pytest.raises(weida.Closed):
        await scoped.send(b"x")
    # The path can be bound again once its endpoint is closed.
    puller.close()
    again = pair.listener.puller("/jobs")
    await pusher.send(b"to the new one")
    assert (await again.recv()).body == b"to the new one"


async def test_async_with_shuts_the_runtime_and_listener_down(transport: str) -> None:
    async with weida.Runtime() as server:
        async with await server.bind(bind_address(transport)) as listener:
            puller = listener.puller("/jobs")
            async with weida.Runtime() as client:
                pusher = client.pusher()
                await pusher.connect(puller.address)
                await pusher.send(b"x")
                assert (await puller.recv()).body == b"x"
        with pytest.raises(weida.Closed):
            await puller.recv()
    with pytest.raises(weida.Closed):
        await server.bind(bind_address(transport))


async def test_the_event_loop_is_never_blocked_by_a_pending_operation(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    waiting = asyncio.ensure_future(puller.recv())
    ticks = 0
    for _ in range(100):
        await asyncio.sleep(0)
        ticks += 1
    assert ticks == 100 and not waiting.done()
    waiting.cancel()


async def test_counters_count(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    await pusher.send_many([b"abc", b"de"])
    for _ in range(2):
        await puller.recv()
    c = pair.client.counters()
    # Both small messages went as frames on one message lane.
    assert c.streams_opened == 1 and c.bytes_sent == 5 and c.connections_dialled == 1
    assert (c.lane_messages_sent, c.lane_messages_lost) == (2, 0)
    s = pair.server.counters()
    assert s.bytes_received == 5 and s.lane_messages_received == 2
    assert s.connections_accepted == 1
