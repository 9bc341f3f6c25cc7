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


async def test_connect_to_an_unbound_path_or_a_path_of_another_pattern_fails_at_connect(
    pair: Pair,
) -> None:
    # `connect` asks the listener whether the path is bound to an endpoint that takes what
    # this one opens (PROTOCOL §3.1.5): nothing is sent into a mistyped path and lost.
    listener, client = pair.listener, pair.client
    _kept = [
        listener.puller("/jobs"),
        listener.replier("/rpc"),
        listener.acceptor("/raw"),
        listener.publisher("/prices"),
    ]
    pusher, requester, peer = client.pusher(), client.requester(), client.peer()
    for endpoint in (pusher, requester, peer):
        with pytest.raises(weida.UnknownEndpoint) as e:
            await endpoint.connect(at(listener, "/nowhere"))
        assert e.value.path == "/nowhere" and e.value.definite
    other_patterns = (
        (pusher, "/rpc"),
        (pusher, "/prices"),
        (requester, "/jobs"),
        (peer, "/prices"),
    )
    for endpoint, path in other_patterns:
        with pytest.raises(weida.Unsupported):
            await endpoint.connect(at(listener, path))
    # No slot was made: the endpoints are not connected, and nothing was sent.
    assert pusher.peer_count == 0
    with pytest.raises(weida.NotConnected):
        await pusher.send(b"lost?")
    assert client.counters().streams_opened == 0
    # Compatible pairs connect (PATTERNS §5).
    await pusher.connect(at(listener, "/jobs"))
    await pusher.connect(at(listener, "/raw"))
    await requester.connect(at(listener, "/rpc"))
    await requester.connect(at(listener, "/raw"))
    for path in ("/jobs", "/rpc", "/raw"):
        await peer.connect(at(listener, path))
    assert (pusher.peer_count, requester.peer_count, peer.peer_count) == (2, 2, 3)


# The refusals below reach a path that passed the check at connect and was unbound (or bound to
# another pattern) after it: the refusal race of PATTERNS §1.6 is left to exactly this case.


async def test_push_to_an_unknown_path_is_reported(pair: Pair) -> None:
    _puller = pair.listener.puller("/jobs")
    gone = pair.listener.puller("/nowhere")
    pusher = pair.client.pusher()
    await pusher.connect(at(pair.listener, "/nowhere"))
    gone.close()
    with pytest.raises(weida.UnknownEndpoint) as e:
        await pusher.send(payload(BIG))
    assert e.value.path == "/nowhere"
    assert e.value.code == "UNKNOWN_ENDPOINT" and e.value.definite


async def test_push_to_rep_path_is_unsupported(pair: Pair) -> None:
    before = pair.listener.puller("/rpc")
    pusher = pair.client.pusher()
    await pusher.connect(at(pair.listener, "/rpc"))
    before.close()
    _replier = pair.listener.replier("/rpc")
    with pytest.raises(weida.Unsupported):
        await pusher.send(payload(BIG))


async def test_unknown_endpoint_is_reported(pair: Pair) -> None:
    gone = pair.listener.replier("/nowhere")
    req = pair.client.requester()
    await req.connect(at(pair.listener, "/nowhere"))
    gone.close()
    with pytest.raises(weida.UnknownEndpoint) as e:
        await req.request(payload(BIG))
    assert e.value.path == "/nowhere"
    with pytest.raises(weida.UnknownEndpoint):
        await req.request(b"x")


async def test_request_to_pull_path_is_unsupported(pair: Pair) -> None:
    before = pair.listener.replier("/jobs")
    req = pair.client.requester()
    await req.connect(at(pair.listener, "/jobs"))
    before.close()
    _puller = pair.listener.puller("/jobs")
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


async def test_a_listener_refuses_connections_beyond_max_connections_and_serves_those_it_holds() -> (  # noqa: E501
    None
):
    async with weida.Runtime(limits=weida.Limits(max_connections=1)) as server:
        replier = (await server.bind("weida://127.0.0.1:0")).replier("/echo")

        async def echo() -> None:
            while True:
                ex = await replier.accept()
                await ex.reply(await ex.take_body())

        serving = asyncio.ensure_future(echo())
        async with weida.Runtime() as first, weida.Runtime() as second:
            held = first.requester()
            await held.connect(replier.address)
            with pytest.raises(weida.Unreachable, match="max_connections"):
                await second.requester().connect(replier.address)
            assert await held.request(b"still served") == b"still served"
        serving.cancel()
