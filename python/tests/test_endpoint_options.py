"""An endpoint's own bounds: ``max_collected_body``, ``endpoint_queue`` and ``send_timeout``
given when it is made apply to it alone (core/tests/endpoint_options.rs has the same names)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from conftest import Pair, make_pair, payload

import weida


async def test_a_pullers_max_collected_body_is_its_own(transport: str) -> None:
    p = await make_pair(transport, weida.Limits(max_collected_body=1000))
    try:
        small = p.listener.puller("/small", max_collected_body=100)
        plain = p.listener.puller("/plain")
        large = p.listener.puller("/large", max_collected_body=1 << 20)
        to_small, to_plain, to_large = p.client.pusher(), p.client.pusher(), p.client.pusher()
        await to_small.connect(small.address)
        await to_plain.connect(plain.address)
        await to_large.connect(large.address)
        await to_small.send(payload(101))
        with pytest.raises(weida.LimitExceeded) as e:
            await small.recv()
        assert e.value.limit == "max_collected_body"
        assert "max_collected_body 100 " in str(e.value)
        await to_plain.send(payload(101))
        assert len((await plain.recv()).body) == 101
        for n in (4 << 10, 200 << 10):
            await to_large.send(payload(n))
            assert (await large.recv()).body == payload(n)
    finally:
        await p.client.close()
        await p.server.close()


async def test_a_requesters_and_a_repliers_max_collected_body_are_their_own(pair: Pair) -> None:
    echo = pair.listener.replier("/echo")
    strict = pair.listener.replier("/strict", max_collected_body=10)
    small = pair.client.requester(max_collected_body=10)
    await small.connect(echo.address)

    async def echoing() -> None:
        ex = await echo.accept()
        # The requester stops a reply above its bound: the reply may fail here, LIMIT_EXCEEDED.
        with contextlib.suppress(weida.LimitExceeded):
            await ex.reply(await ex.take_body())

    served = asyncio.ensure_future(echoing())
    with pytest.raises(weida.LimitExceeded):
        await small.request(payload(11))
    await served
    plain = pair.client.requester()
    await plain.connect(strict.address)
    asking = asyncio.ensure_future(plain.request(payload(11)))
    ex = await strict.accept()
    with pytest.raises(weida.LimitExceeded):
        await ex.take_body()
    del ex
    with pytest.raises(weida.WeidaError):
        await asking


async def test_a_pushers_send_timeout_is_its_own(transport: str) -> None:
    limits = weida.Limits(max_concurrent_uni_streams=1, max_local_streams=1)
    p = await make_pair(transport, limits)
    try:
        puller = p.listener.puller("/jobs")
        holder = p.client.pusher()
        await holder.connect(puller.address)
        held = await holder.open()  # the one stream the listener allows, unfinished
        bounded = p.client.pusher(send_timeout=0.2)
        await bounded.connect(puller.address)
        with pytest.raises(weida.Timeout):
            await bounded.open()
        held.cancel()
    finally:
        await p.client.close()
        await p.server.close()


async def test_an_endpoint_option_is_checked_and_named() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida+inproc://endpoint-options")
        with pytest.raises(weida.InvalidConfig, match="endpoint_queue"):
            listener.puller("/jobs", endpoint_queue=0)
        with pytest.raises(weida.InvalidConfig, match="idle_timeout"):
            rt.pusher(idle_timeout=1)  # type: ignore[call-arg]
        with pytest.raises(weida.InvalidConfig, match="send_timeout"):
            rt.requester(send_timeout=-1)
        listener.puller("/jobs")  # the refused endpoint took no path
