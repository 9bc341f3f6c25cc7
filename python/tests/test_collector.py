"""Pub/Sub the other way round (PATTERNS §4.4; core/tests/collector.rs: the same names):
dialling publishers feed a bound subscriber, a collector, which keeps what its filters select."""

from __future__ import annotations

import pytest
from conftest import bind_address, payload

import weida


async def test_two_dialling_publishers_feed_one_collector(transport: str) -> None:
    async with weida.Runtime() as rc, weida.Runtime() as ra, weida.Runtime() as rb:
        listener = await rc.bind(bind_address(transport))
        collector = listener.subscriber("/logs")
        collector.subscribe("logs.#")
        a, b = ra.publisher(), rb.publisher()
        for p in (a, b):
            await p.connect(collector.address)
            assert p.peer_count == 1
        for i in range(20):
            assert a.publish("logs.a", f"a{i}".encode()) == 1
            assert b.publish("logs.b.x", f"b{i}".encode(), {"n": str(i)}) == 1
        got: dict[bytes, weida.Message] = {}
        while len(got) < 40:
            m = await collector.recv()
            got[m.body] = m
        assert set(got) == {f"{x}{i}".encode() for x in "ab" for i in range(20)}
        assert got[b"a3"].meta.topic == "logs.a"
        assert got[b"b7"].meta.topic == "logs.b.x"
        assert got[b"b7"].meta.get("n") == b"7"
        assert collector.discarded == 0
        assert a.dropped().total == b.dropped().total == 0


async def test_a_collector_keeps_what_its_filters_select_and_counts_the_rest(
    transport: str,
) -> None:
    async with weida.Runtime() as rc, weida.Runtime() as rp:
        listener = await rc.bind(bind_address(transport))
        collector = listener.subscriber("/logs")
        collector.subscribe("logs.*.error")
        assert collector.filters == ["logs.*.error"]
        p = rp.publisher()
        await p.connect(collector.address)
        for topic in ("logs.web.info", "logs.db.error", "metrics.web.error", "logs.web.error"):
            p.publish(topic, topic.encode())
        kept = {(await collector.recv()).body for _ in range(2)}
        assert kept == {b"logs.db.error", b"logs.web.error"}
        assert collector.unsubscribe("logs.*.error")
        assert not collector.unsubscribe("logs.*.error")
        with pytest.raises(weida.InvalidFilter):
            collector.subscribe("logs.**")
        with pytest.raises(weida.InvalidFilter):
            p.publish("bad..topic", b"x")
        collector.subscribe("end")
        p.publish("end", b"end")
        assert (await collector.recv()).body == b"end"


async def test_what_a_dialling_publisher_cannot_send_is_refused_to_it(transport: str) -> None:
    limits = weida.Limits(subscriber_buffer_bytes=1000)
    async with weida.Runtime() as rc, weida.Runtime(limits=limits) as rp:
        p = rp.publisher()
        assert p.publish("t", b"alone") == 0
        listener = await rc.bind(bind_address(transport))
        collector = listener.subscriber("/logs")
        collector.subscribe("t")
        async with p:
            await p.connect(collector.address)
            with pytest.raises(weida.LimitExceeded):
                p.publish("t", payload(2000))
            assert p.dropped().total == 0
            rpc = listener.replier("/rpc")
            with pytest.raises(weida.Unsupported):
                await p.connect(rpc.address)
            assert p.publish("t", b"fits") == 1
            async for m in collector:
                assert m.body == b"fits"
                break
