"""Refusals (PATTERNS §1.6; core/tests/refusals.rs), with 2 MiB payloads: beyond the stream
window, so the refusal cannot lose the race to the transport receipt."""

from __future__ import annotations

import asyncio

import pytest
from conftest import Pair, make_pair, payload

import weida

BIG = 2 << 20


def at(listener: weida.Listener, path: str) -> str:
    return str(weida.Address(listener.address).with_path(path))


async def test_push_to_an_unknown_path_is_reported(pair: Pair) -> None:
    _puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(at(pair.listener, "/nowhere"))
    with pytest.raises(weida.UnknownEndpoint) as e:
        await pusher.send(payload(BIG))
    assert e.value.path == "/nowhere"
    assert e.value.code == "UNKNOWN_ENDPOINT" and e.value.definite


async def test_push_to_rep_path_is_unsupported(pair: Pair) -> None:
    _replier = pair.listener.replier("/rpc")
    pusher = pair.client.pusher()
    await pusher.connect(at(pair.listener, "/rpc"))
    with pytest.raises(weida.Unsupported):
        await pusher.send(payload(BIG))


async def test_unknown_endpoint_is_reported(pair: Pair) -> None:
    req = pair.client.requester()
    await req.connect(at(pair.listener, "/nowhere"))
    with pytest.raises(weida.UnknownEndpoint) as e:
        await req.request(payload(BIG))
    assert e.value.path == "/nowhere"
    with pytest.raises(weida.UnknownEndpoint):
        await req.request(b"x")


async def test_request_to_pull_path_is_unsupported(pair: Pair) -> None:
    _puller = pair.listener.puller("/jobs")
    req = pair.client.requester()
    await req.connect(at(pair.listener, "/jobs"))
    with pytest.raises(weida.Unsupported) as e:
        await req.request(payload(BIG))
    assert e.value.definite


async def test_a_replier_rejection_reaches_the_requester_with_its_reason(pair: Pair) -> None:
    replier = pair.listener.replier("/guarded")

    async def serve() -> None:
        ex = await replier.accept()
        await ex.reject("not on a weekend")

    server = asyncio.create_task(serve())
    req = pair.client.requester()
    await req.connect(replier.address)
    with pytest.raises(weida.Rejected) as e:
        await req.request(b"x")
    assert e.value.reason == "not on a weekend"
    await server


async def test_a_replier_failure_by_code_reaches_the_requester(pair: Pair) -> None:
    replier = pair.listener.replier("/picky")

    async def serve() -> None:
        ex = await replier.accept()
        await ex.fail("UNSUPPORTED", "only on Tuesdays")

    server = asyncio.create_task(serve())
    req = pair.client.requester()
    await req.connect(replier.address)
    with pytest.raises(weida.Unsupported) as e:
        await req.request(b"x")
    assert "only on Tuesdays" in str(e.value)
    await server


async def test_a_header_above_the_peers_limit_is_refused_before_sending(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    with pytest.raises(weida.LimitExceeded) as e:
        await pusher.send(b"body", {"blob": b"x" * weida.Limits().max_header_size})
    assert e.value.limit == "max_header_size"
    await pusher.send(b"after")
    assert (await puller.recv()).body == b"after"


async def test_a_body_above_max_collected_body_is_limit_exceeded_and_the_puller_goes_on(
    transport: str,
) -> None:
    p = await make_pair(transport, weida.Limits(max_collected_body=1000))
    puller = p.listener.puller("/jobs")
    pusher = p.client.pusher()
    await pusher.connect(puller.address)
    await pusher.send(payload(1001))
    await pusher.send(payload(1000))
    outcomes: list[str | int] = []
    for _ in range(2):
        try:
            outcomes.append(len((await puller.recv()).body))
        except weida.LimitExceeded as e:
            outcomes.append(e.code)
    assert sorted(outcomes, key=str) == [1000, "LIMIT_EXCEEDED"]
