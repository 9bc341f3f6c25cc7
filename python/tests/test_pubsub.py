"""Pub/Sub (PATTERNS §4, §4.1; core/tests/pubsub.rs, same names): filters end to end, typed
refusals, a slow subscriber that costs only its own copies, PerProducer gaps, the streamed
fan-out, the reverse pool of AF_UNIX, and what the binding adds: a cancelled receive loses
nothing, ``async for``, ``async with``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from conftest import Pair, bind_address, make_pair, payload

import weida
from weida import _weida


async def take(sub: weida.Subscriber, n: int) -> list[weida.Message]:
    """The next ``n`` messages."""
    return [await sub.recv() for _ in range(n)]


async def queued(sub: weida.Subscriber, n: int) -> None:
    """Waits until ``sub`` holds at least ``n`` messages: the event the core raises as each
    arrives (``Subscriber::until_queued``), not a poll."""
    await asyncio.wait_for(sub._until_queued(n), 30)


async def test_subscribe_filters_topics_by_segment(pair: Pair, transport: str) -> None:
    publisher = pair.listener.publisher("/feed")
    sub = pair.client.subscriber()
    await sub.connect(publisher.address)
    await sub.subscribe("sensors.*.temp")
    await sub.subscribe("alerts.#")
    assert sub.filters == ["sensors.*.temp", "alerts.#"]
    # (topic, selected): the grammar's table, end to end.
    table = [
        ("sensors.kitchen.temp", True),
        ("sensors.temp", False),
        ("sensors.kitchen.temperature", False),
        ("sensors.kitchen.temp.max", False),
        ("alerts", True),
        ("alerts.fire.kitchen", True),
        ("alertsx", False),
        ("other", False),
    ]
    expected = []
    for i, (topic, selected) in enumerate(table):
        assert publisher.publish(topic, str(i).encode()) == int(selected), topic
        if selected:
            expected.append(topic)
    got = await take(sub, len(expected))
    assert sorted(m.meta.topic or "" for m in got) == sorted(expected)
    for m in got:
        assert m.meta.path == "/feed"
        assert m.meta.gap is None, "no ordering required: no gap"
        if transport == "quic":
            assert isinstance(m.meta.peer, weida.PeerKey)
        elif transport == "unix":
            assert isinstance(m.meta.peer, weida.PeerLocal)
        else:
            assert m.meta.peer is None
    assert publisher.dropped().total == 0
    assert publisher.subscriber_count == 1
    assert sub.peer_count == 1
    assert pair.server.counters().copies_published == len(expected)


async def test_unsubscribe_stops_delivery_once_it_returns(pair: Pair) -> None:
    publisher = pair.listener.publisher("/feed")
    sub = pair.client.subscriber()
    await sub.connect(publisher.address)
    await sub.subscribe("a.#")
    await sub.subscribe("b")
    assert publisher.publish("a.x", b"1") == 1
    assert await sub.unsubscribe("a.#")
    assert not await sub.unsubscribe("a.#"), "no longer held"
    assert publisher.publish("a.x", b"2") == 0
    publisher.publish("b", b"3")
    # "1" may or may not have been delivered before the unsubscribe; "2" never is.
    while (body := (await sub.recv()).body) != b"3":
        assert body != b"2"
    assert sub.filters == ["b"]


async def test_a_filter_given_before_connect_is_installed_by_connect(pair: Pair) -> None:
    publisher = pair.listener.publisher("/feed")
    sub = pair.client.subscriber()
    with pytest.raises(weida.NotConnected):
        await sub.recv()
    await sub.subscribe("x")
    await sub.connect(publisher.address)
    assert publisher.subscriber_count == 1
    assert publisher.publish("x", b"hello") == 1
    assert (await sub.recv()).body == b"hello"


async def test_refusals_are_typed(transport: str) -> None:
    p = await make_pair(transport, weida.Limits(max_filters=2))
    publisher = p.listener.publisher("/feed")
    puller = p.listener.puller("/jobs")
    # A malformed filter is refused locally, never widened.
    sub = p.client.subscriber()
    for bad in ["", "a..b", "a.#.b", "a*", "#x"]:
        with pytest.raises(weida.InvalidFilter) as e:
            await sub.subscribe(bad)
        assert e.value.code == "INVALID_FILTER"
        assert (e.value.what, e.value.text) == ("filter", bad)
        assert e.value.reason
    # Nothing bound there / not a publisher.
    unknown = p.client.subscriber()
    await unknown.subscribe("x")
    nowhere = str(weida.Address(publisher.address).with_path("/nothing"))
    with pytest.raises(weida.UnknownEndpoint) as u:
        await unknown.connect(nowhere)
    assert u.value.path == "/nothing"
    with pytest.raises(weida.Unsupported):
        await unknown.connect(puller.address)
    # max_filters.
    await sub.connect(publisher.address)
    await sub.subscribe("a")
    await sub.subscribe("b")
    with pytest.raises(weida.LimitExceeded):
        await sub.subscribe("c")
    assert sub.filters == ["a", "b"]
    # The publisher: a malformed topic, a body above the byte budget.
    with pytest.raises(weida.InvalidFilter) as t:
        publisher.publish("a.", b"x")
    assert t.value.what == "topic"
    with pytest.raises(weida.LimitExceeded) as big:
        publisher.publish("a", payload(weida.Limits().subscriber_buffer_bytes + 1))
    assert big.value.limit == "byte_budget"
    with pytest.raises(TypeError):
        publisher.publish("a", "text")  # type: ignore[arg-type]
    assert publisher.dropped().total == 0, "a refusal is not a drop"
    p.client.shutdown()
    p.server.shutdown()


async def test_a_publisher_path_refuses_inbound_transfers(pair: Pair) -> None:
    publisher = pair.listener.publisher("/feed")
    pusher = pair.client.pusher()
    # The path check at connect says so at once (PROTOCOL §3.1.5) ...
    with pytest.raises(weida.Unsupported):
        await pusher.connect(publisher.address)
    # ... and a publisher bound after the check refuses the transfer itself.
    before = pair.listener.puller("/later")
    await pusher.connect(before.address)
    before.close()
    _later = pair.listener.publisher("/later")
    # 2 MiB: beyond the stream window, so the refusal (not the receipt) decides the outcome.
    with pytest.raises(weida.Unsupported):
        await pusher.send(payload(2 << 20))


async def test_slow_subscriber_drops_not_blocks(transport: str) -> None:
    # Small windows, so a stalled subscriber's lane (or its streams) fills them soon.
    limits = weida.Limits(
        endpoint_queue=4,
        max_concurrent_uni_streams=4,
        max_parked_reverse=2,
        stream_receive_window=16 * 1024,
        connection_receive_window=32 * 1024,
    )
    p = await make_pair(transport, limits)
    publisher = p.listener.publisher("/feed")
    fast = p.client.subscriber()
    await fast.connect(publisher.address)
    await fast.subscribe("t")
    slow = p.client.subscriber()
    await slow.connect(publisher.address)
    await slow.subscribe("t")
    n = 300
    for i in range(n):
        # Never blocks, whatever the stalled subscriber does; paced by the fast one.
        body = f"{i}:".encode().ljust(512, b".")
        assert publisher.publish("t", body) >= 1
        assert (await fast.recv()).body == body
    stalled = publisher.dropped_on("t")
    assert stalled.total > 0, stalled
    assert stalled.dead_subscriber == 0
    # Now the stalled one reads: what it gets and what was dropped add up to every copy.
    # Drops on the writer's side (an empty reverse pool) have no event to wait on, hence the
    # receive with a timeout, which (cancel-safe) loses nothing.
    received = 0
    while received + publisher.dropped_on("t").total < n:
        try:
            await asyncio.wait_for(slow.recv(), 0.01)
            received += 1
        except TimeoutError:
            pass
    assert received + publisher.dropped_on("t").total == n
    assert received >= 4, f"the stalled subscriber still got its queue: {received}"
    p.client.shutdown()
    p.server.shutdown()


async def test_a_dropped_copy_shows_up_as_a_gap(transport: str) -> None:
    # The core runs on its own thread here, so a byte-budget drop is not deterministic as in
    # core/tests; the subscriber's own bound refuses the middle copy instead.
    async with (
        weida.Runtime() as server,
        weida.Runtime(limits=weida.Limits(max_collected_body=1000), ordering="detect") as client,
    ):
        listener = await server.bind(bind_address(transport))
        publisher = listener.publisher("/feed")
        sub = client.subscriber()
        await sub.connect(publisher.address)
        await sub.subscribe("t")
        # Copy 1 is taken before the others are published: over AF_UNIX each copy has a
        # connection of its own, and copies published together may arrive in any order.
        assert publisher.publish("t", payload(100)) == 1
        got = await take(sub, 1)
        for size in (2000, 100):
            assert publisher.publish("t", payload(size)) == 1
        got += await take(sub, 1)
        assert [(m.meta.sequence, m.meta.gap, len(m.body)) for m in got] == [
            (1, 0, 100),
            (3, 1, 100),
        ]
        # Not asserted: dropped_on("t").refused. The publisher counts a refusal only when it
        # reaches the writer before the copy's FIN (hub.rs, write_whole); a 2000 B copy is
        # usually finished first.


async def test_a_full_hold_reports_the_drop_it_was_waiting_for(transport: str) -> None:
    limits = weida.Limits(max_collected_body=1000, max_reorder_hold=1)
    async with (
        weida.Runtime() as server,
        weida.Runtime(limits=limits, ordering="reassemble") as client,
    ):
        listener = await server.bind(bind_address(transport))
        publisher = listener.publisher("/feed")
        sub = client.subscriber()
        await sub.connect(publisher.address)
        await sub.subscribe("t")
        # Copy 1 first (copies published together may arrive in any order over AF_UNIX).
        publisher.publish("t", payload(100))
        got = await take(sub, 1)
        for size in (2000, 100, 100):  # 2 is refused by the subscriber
            publisher.publish("t", payload(size))
        got += await take(sub, 2)
        # 3 waits for 2; the next held copy passes the hold of 1, which releases 3 with the
        # gap it was waiting for.
        assert [(m.meta.sequence, m.meta.gap) for m in got] == [(1, 0), (3, 1), (4, 0)]


async def test_a_subscriber_that_requires_ordering_negotiates_it(pair: Pair) -> None:
    # The publisher's runtime requires nothing; it offers every level it implements.
    publisher = pair.listener.publisher("/feed")
    async with weida.Runtime(ordering="reassemble") as client:
        sub = client.subscriber()
        await sub.connect(publisher.address)
        await sub.subscribe("#")
        for i in range(20):
            publisher.publish("x.y", str(i).encode())
            m = await sub.recv()
            assert (m.meta.sequence, m.meta.gap, m.body) == (i + 1, 0, str(i).encode())


async def test_a_streamed_publish_carries_a_payload_no_publish_could_take(
    transport: str,
) -> None:
    p = await make_pair(transport, weida.Limits(subscriber_buffer_bytes=64 * 1024))
    publisher = p.listener.publisher("/video")
    a = p.client.subscriber()
    await a.connect(publisher.address)
    await a.subscribe("frames.#")
    b = p.client.subscriber()
    await b.connect(publisher.address)
    await b.subscribe("frames.hd")
    # 1.25 MiB: twenty times the byte budget, which publish refuses.
    body = payload(40 * 32 * 1024)
    with pytest.raises(weida.LimitExceeded):
        publisher.publish("frames.hd", body)
    fan = publisher.open("frames.hd")
    assert fan.copies == 2

    async def send() -> int:
        view = memoryview(body)
        for at in range(0, len(body), 32 * 1024):
            assert await fan.write(view[at : at + 32 * 1024]) == 2
        return fan.finish()

    attached, ma, mb = await asyncio.gather(send(), a.recv(), b.recv())
    assert attached == 2 and fan.copies == 2
    for m in (ma, mb):
        assert m.meta.topic == "frames.hd"
        assert m.body == body, "byte-exact"
    assert publisher.dropped().total == 0
    p.client.shutdown()
    p.server.shutdown()


async def test_a_streamed_publish_keeps_the_reader_when_another_stalls(transport: str) -> None:
    limits = weida.Limits(
        subscriber_buffer_bytes=64 * 1024,
        endpoint_queue=1,
        stream_receive_window=64 * 1024,
        connection_receive_window=128 * 1024,
        max_concurrent_uni_streams=4,
        # The reader must find room within it too: long enough for a loaded machine.
        fanout_wait=3.0,
    )
    p = await make_pair(transport, limits)
    publisher = p.listener.publisher("/video")
    reader = p.client.subscriber()
    await reader.connect(publisher.address)
    await reader.subscribe("f")
    stalled = p.client.subscriber()
    await stalled.connect(publisher.address)
    await stalled.subscribe("f")
    # The stalled subscriber's queue is full (it never reads from here on).
    publisher.publish("f", b"first")
    assert (await reader.recv()).body == b"first"
    await queued(stalled, 1)
    body = payload(4 << 20)
    fan = publisher.open("f")
    assert fan.copies == 2

    async def send() -> int:
        for at in range(0, len(body), 32 * 1024):
            await fan.write(body[at : at + 32 * 1024])
        return fan.finish()

    attached, m = await asyncio.gather(send(), reader.recv())
    assert m.body == body, "the reading subscriber got the whole payload"
    assert attached == 1, "the stalled copy was dropped, the reader's kept"
    assert publisher.dropped_on("f").byte_budget == 1
    # The stalled subscriber never sees a fragment: what it has is the first message only.
    assert (await stalled.recv()).body == b"first"
    assert stalled.queued == 0
    p.client.shutdown()
    p.server.shutdown()


@pytest.mark.parametrize("transport", ["quic", "inproc"])
async def test_a_dead_subscriber_loses_its_queue_counted(transport: str) -> None:
    async with (
        weida.Runtime() as server,
        weida.Runtime(
            limits=weida.Limits(
                endpoint_queue=2,
                max_concurrent_uni_streams=2,
                stream_receive_window=16 * 1024,
                connection_receive_window=32 * 1024,
            )
        ) as c,
    ):
        listener = await server.bind(bind_address(transport))
        publisher = listener.publisher("/feed")
        sub = c.subscriber()
        await sub.connect(publisher.address)
        await sub.subscribe("t")
        for _ in range(2):
            assert publisher.publish("t", b"x") == 1
        await queued(sub, 2)
        for _ in range(20):
            assert publisher.publish("t", b"y" * 4096) == 1
        c.shutdown()  # the subscriber goes without unsubscribing
        # The subscriber leaves the filters before its queued copies are counted (hub.rs):
        # both, from the I/O thread.
        # The publisher sees it go, its queued copies counted first (hub.rs): an event, from
        # the I/O thread.
        await asyncio.wait_for(publisher._until_subscribers(0), 30)
        assert publisher.dropped_on("t").dead_subscriber >= 1
        assert publisher.publish("t", b"z") == 0, "gone from the filters"


async def test_a_local_subscriber_that_parks_nothing_is_refused_at_subscribe() -> None:
    async with (
        weida.Runtime() as server,
        weida.Runtime(limits=weida.Limits(max_parked_reverse=0)) as client,
    ):
        listener = await server.bind(bind_address("unix"))
        publisher = listener.publisher("/feed")
        sub = client.subscriber()
        await sub.connect(publisher.address)
        with pytest.raises(weida.Unsupported):
            await sub.subscribe("t")
        assert sub.filters == []
        assert publisher.subscriber_count == 0


async def test_an_empty_reverse_pool_drops_and_the_subscription_survives() -> None:
    limits = weida.Limits(max_parked_reverse=2, endpoint_queue=2)
    async with weida.Runtime() as server, weida.Runtime(limits=limits) as client:
        listener = await server.bind(bind_address("unix"))
        publisher = listener.publisher("/feed")
        sub = client.subscriber()
        await sub.connect(publisher.address)
        await sub.subscribe("t")
        # Above lane_max_message (16 KiB): each copy takes a parked connection of its own; a
        # small one would ride the session's lane (PATTERNS §4.2).
        big = bytes(32 * 1024)
        for _ in range(50):
            publisher.publish("t", big)
            await asyncio.sleep(0)
        received = 0
        while received + publisher.dropped_on("t").total < 50:
            try:
                await asyncio.wait_for(sub.recv(), 0.01)
                received += 1
            except TimeoutError:
                pass
        d = publisher.dropped_on("t")
        assert d.reverse_pool_empty > 0, d
        assert received + d.total == 50
        # The subscription survives: once connections are parked again, copies arrive.
        for _ in range(500):
            publisher.publish("t", big)
            try:
                assert (await asyncio.wait_for(sub.recv(), 0.01)).body == big
                break
            except TimeoutError:
                pass
        else:
            raise AssertionError("no copy arrived after the pool emptied")


async def test_an_asyncio_cancelled_recv_loses_nothing(pair: Pair) -> None:
    publisher = pair.listener.publisher("/feed")
    sub = pair.client.subscriber()
    await sub.connect(publisher.address)
    await sub.subscribe("t")
    # A receive waiting for nothing, cancelled.
    waiting = asyncio.ensure_future(sub.recv())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    # A receive that completes on the I/O thread just as the caller cancels it (the loop
    # thread is held meanwhile, so it sees the cancellation first): the copy is handed back
    # and the next receive returns it. Through recv, recv_many and async for alike.
    receives: list[Callable[[], Awaitable[object]]] = [
        sub.recv,
        lambda: sub.recv_many(8),
        sub.__anext__,
    ]
    for i in range(60):
        pending = asyncio.ensure_future(receives[i % 3]())
        await asyncio.sleep(0)
        fetched, orphans = _weida._fetched(), _weida._orphans()
        publisher.publish("t", str(i).encode())
        # The loop thread is held until the I/O thread has received the copy for the pending
        # receive: the loop sees the cancellation first, then the copy, kept for the next.
        assert _weida._wait_fetched(fetched + 1, 10)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        assert (await sub.recv()).body == str(i).encode()
        assert _weida._orphans() == orphans + 1, "the copy came back: the race ran"
    assert sub.queued == 0
    assert publisher.dropped().total == 0


async def test_async_for_and_async_with_end_with_the_subscriber(pair: Pair) -> None:
    async with pair.listener.publisher("/feed") as publisher, pair.client.subscriber() as sub:
        await sub.connect(publisher.address)
        await sub.subscribe("#")
        for body in (b"a", b"b", b"c"):
            publisher.publish("x", body)
        got = []
        async for m in sub:
            got.append(m.body)
            if len(got) == 2:
                # What is queued is still returned after close; then the iteration ends.
                await queued(sub, 1)
                sub.close()
        assert got == [b"a", b"b", b"c"]
        with pytest.raises(weida.Closed):
            await sub.recv()
    # Leaving async with closed the publisher: publish says so, its counts stay readable.
    with pytest.raises(weida.Closed):
        publisher.publish("x", b"late")
    assert publisher.dropped() == weida.Dropped()


async def test_a_fanout_cancelled_is_never_seen(pair: Pair) -> None:
    publisher = pair.listener.publisher("/feed")
    sub = pair.client.subscriber()
    await sub.connect(publisher.address)
    await sub.subscribe("t")
    fan = publisher.open("t")
    assert fan.write_now(b"half a message") == 1
    fan.cancel()
    assert fan.copies == 0
    with pytest.raises(weida.Canceled):
        fan.write_now(b"late")
    # Leaving async with on an exception cancels; on a clean exit it finishes.
    with pytest.raises(RuntimeError, match="producer failed"):
        async with publisher.open("t") as f:
            await f.write(b"some of it")
            raise RuntimeError("producer failed")
    async with publisher.open("t") as f:
        await f.write(b"all ")
        f.write_now(b"of it")
    assert f.copies == 1
    with pytest.raises(weida.Closed):
        f.finish()
    assert (await sub.recv()).body == b"all of it"
    assert publisher.dropped().total == 0


@pytest.mark.parametrize("how", ["asyncio", "cancel"])
async def test_a_pending_fanout_write_cancelled_cancels_the_message(
    transport: str, how: str
) -> None:
    limits = weida.Limits(
        subscriber_buffer_bytes=64 * 1024,
        endpoint_queue=1,
        stream_receive_window=64 * 1024,
        connection_receive_window=128 * 1024,
        fanout_wait=60,
    )
    p = await make_pair(transport, limits)
    publisher = p.listener.publisher("/video")
    reader = p.client.subscriber()
    await reader.connect(publisher.address)
    await reader.subscribe("f")
    stalled = p.client.subscriber()
    await stalled.connect(publisher.address)
    await stalled.subscribe("f")
    publisher.publish("f", b"first")
    assert (await reader.recv()).body == b"first"
    await queued(stalled, 1)
    fan = publisher.open("f")
    # Write until a write waits for the stalled subscriber's room (fanout_wait: a minute).
    for _ in range(64):
        pending = fan.write(payload(32 * 1024))
        # A write with room finishes at once on the I/O thread; one that waits for room waits
        # fanout_wait. A second tells them apart however loaded the machine.
        done, _ = await asyncio.wait({pending}, timeout=1)
        if not done:
            break
        await pending
    else:
        raise AssertionError("no write ever waited")
    # A synchronous call while the write holds the fan-out: await it first.
    with pytest.raises(RuntimeError, match="pending"):
        fan.write_now(b"x")
    if how == "asyncio":
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        await asyncio.sleep(0)  # the future's done callbacks (the cancellation) run
    else:
        fan.cancel()
        with pytest.raises(weida.Canceled):
            await pending
    assert fan.copies == 0
    with pytest.raises(weida.Canceled):
        await fan.write(b"late")
    with pytest.raises(weida.Canceled):
        fan.finish()
    # Neither subscriber ever sees the message: the next one is what comes after it.
    publisher.publish("f", b"after")
    assert (await reader.recv()).body == b"after"
    assert [m.body for m in await take(stalled, 2)] == [b"first", b"after"]
    p.client.shutdown()
    p.server.shutdown()


def test_limits_ordering_and_dropped_convert_both_ways() -> None:
    d = weida.Limits()
    assert (d.subscriber_buffer_bytes, d.max_reorder_hold, d.max_parked_reverse) == (
        1 << 20,
        256,
        8,
    )
    assert (d.max_filters, d.fanout_wait, d.max_udp_payload) == (1024, 1.0, 65527)
    l2 = weida.Limits(
        subscriber_buffer_bytes=1000,
        max_reorder_hold=3,
        max_parked_reverse=0,
        max_filters=7,
        fanout_wait=0.25,
        max_udp_payload=1452,
    )
    assert (l2.subscriber_buffer_bytes, l2.max_reorder_hold, l2.max_parked_reverse) == (1000, 3, 0)
    assert (l2.max_filters, l2.fanout_wait, l2.max_udp_payload) == (7, 0.25, 1452)
    with pytest.raises(weida.InvalidConfig, match="fanout_wait"):
        weida.Limits(fanout_wait=-1)
    with pytest.raises(weida.InvalidConfig, match="ordering"):
        weida.Runtime(ordering="total")  # type: ignore[arg-type]
    with pytest.raises(weida.InvalidConfig):
        weida.Runtime(limits=weida.Limits(subscriber_buffer_bytes=0))
    with pytest.raises(weida.InvalidConfig, match="max_udp_payload"):
        weida.Runtime(limits=weida.Limits(max_udp_payload=1199))
    x = weida.Dropped(queue_full=1, refused=2)
    assert (x.total, x.byte_budget) == (3, 0)
    assert x == weida.Dropped(refused=2, queue_full=1) and x != weida.Dropped()
    assert "refused=2" in repr(x)


async def test_try_recv_takes_what_is_ready_without_waiting(pair: Pair) -> None:
    publisher = pair.listener.publisher("/feed")
    sub = pair.client.subscriber()
    with pytest.raises(weida.NotConnected):
        sub.try_recv()
    await sub.connect(publisher.address)
    await sub.subscribe("a.#")
    assert sub.try_recv() is None
    # No more than the parked reverse connections over AF_UNIX (one copy each).
    for i in range(5):
        publisher.publish("a.b", bytes([i]))
    got: list[int] = []
    while len(got) < 5:
        ready = sub.try_recv()
        m = ready if ready is not None else await sub.recv()
        assert m.meta.topic == "a.b"
        got.append(m.body[0])
    assert got == [0, 1, 2, 3, 4]
    assert sub.try_recv() is None
    sub.close()
    with pytest.raises(weida.Closed):
        sub.try_recv()
