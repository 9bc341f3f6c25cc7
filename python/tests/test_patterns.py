"""One body per pattern over every transport (PATTERNS §2, §3, §5; core/tests/patterns.rs)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import Pair, bind_address, make_pair, payload

import weida


async def test_req_rep_echoes_small_and_large_bodies_with_metadata(pair: Pair) -> None:
    replier = pair.listener.replier("/echo")

    async def serve() -> None:
        async for ex in replier:
            body = await ex.take_body()
            tag = ex.meta.get("tag") or b""
            await ex.reply(body, {"tag": tag})

    server = asyncio.create_task(serve())
    req = pair.client.requester()
    await req.connect(str(weida.Address(pair.listener.address).with_path("/echo")))
    assert await req.request(b"ping") == b"ping"
    big = payload(3 << 20)
    m = await req.request_with(big, {"tag": "t1"})
    assert m.body == big
    assert m.meta.get("tag") == b"t1"
    assert m.meta.metadata == [("tag", b"t1")]
    server.cancel()


async def test_push_pull_delivers_every_message_and_a_streamed_one_with_its_receipt(
    pair: Pair,
) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    assert pusher.peer_count == 1
    for i in range(100):
        await pusher.send(i.to_bytes(4, "big"))
    seen = []
    for _ in range(100):
        m = await puller.recv()
        assert m.meta.path == "/jobs"
        seen.append(int.from_bytes(m.body, "big"))
    assert sorted(seen) == list(range(100))
    t = await pusher.open({"k": "v"})
    await t.write(b"part1-")
    await t.write(b"part2")
    delivery = await t.finish()
    await delivery.delivered()
    m = await puller.recv()
    assert m.body == b"part1-part2"
    assert m.meta.get("k") == b"v"


async def test_send_and_recv_complete_at_once_when_ready_yet_yield_to_the_event_loop(
    pair: Pair,
) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    # A callback scheduled now must run while a loop keeps finding its sends ready: the ready
    # path gives way to the event loop every so often (docs/BINDINGS.md, "Threading").
    fired = False

    def fire() -> None:
        nonlocal fired
        fired = True

    asyncio.get_running_loop().call_soon(fire)
    sent = 0
    received = 0
    while not fired:
        await pusher.send(b"m")
        sent += 1
        if puller.try_recv() is not None:
            received += 1
        assert sent < 1_000_000, "the callback never ran"
    while received < sent:
        await puller.recv()
        received += 1
    assert puller.try_recv() is None


async def test_acceptor_receives_both_stream_kinds(pair: Pair) -> None:
    acceptor = pair.listener.acceptor("/raw")
    peer = pair.client.peer()
    await peer.connect(acceptor.address)
    one_way = await peer.open()
    await one_way.write(b"one-way")
    await one_way.finish()
    req, reply = await peer.exchange()
    await req.write(b"question")
    await req.finish()
    kinds = []
    for _ in range(2):
        incoming = await acceptor.accept()
        if isinstance(incoming, weida.IncomingTransfer):
            assert await incoming.collect(1 << 20) == b"one-way"
            kinds.append("stream")
        else:
            assert await incoming.take_body() == b"question"
            await incoming.reply(b"answer")
            kinds.append("exchange")
    assert sorted(kinds) == ["exchange", "stream"]
    assert (await reply.body()).body == b"answer"


async def test_send_many_and_recv_many_move_every_message_in_batches(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    await pusher.send_many(i.to_bytes(4, "big") for i in range(200))
    seen: list[int] = []
    while len(seen) < 200:
        batch = await puller.recv_many(64)
        assert 1 <= len(batch) <= 64
        seen.extend(int.from_bytes(m.body, "big") for m in batch)
    assert sorted(seen) == list(range(200))


async def test_an_error_inside_a_batch_is_returned_by_the_next_receive(transport: str) -> None:
    p = await make_pair(transport, weida.Limits(max_collected_body=1000))
    puller = p.listener.puller("/jobs")
    pusher = p.client.pusher()
    await pusher.connect(puller.address)
    await pusher.send_many([payload(10), payload(1001), payload(20), payload(30)])
    bodies: list[int] = []
    errors: list[str] = []
    while len(bodies) + len(errors) < 4:
        try:
            bodies.extend(len(m.body) for m in await puller.recv_many(10))
        except weida.LimitExceeded as e:
            errors.append(e.code)
    assert sorted(bodies) == [10, 20, 30]
    assert errors == ["LIMIT_EXCEEDED"]


async def test_bodies_accept_bytes_bytearray_and_memoryview(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    big = payload(100_000)
    kinds: list[bytes | bytearray | memoryview] = [
        b"bytes",
        bytearray(b"bytearray"),
        memoryview(b"xmemoryviewx")[1:-1],
        big,
    ]
    for body in kinds:
        await pusher.send(body)
        assert (await puller.recv()).body == bytes(body)
    # A large bytes body is kept alive, not copied: it arrives intact after the caller drops it.
    await pusher.send(bytes(big))
    assert (await puller.recv()).body == big
    # A memoryview of a bytearray, and metadata values of every kind.
    await pusher.send(
        memoryview(bytearray(b"abc")), [("a", b"1"), ("a", "2"), ("b", bytearray(b"3"))]
    )
    m = await puller.recv()
    assert m.body == b"abc"
    assert m.meta.metadata == [("a", b"1"), ("a", b"2"), ("b", b"3")]
    try:
        await pusher.send("text")  # type: ignore[arg-type]
        raise AssertionError("a str body was accepted")
    except TypeError as e:
        assert "bytes" in str(e)


async def test_async_for_ends_when_the_listener_closes(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    await pusher.send_many([b"a", b"b"])

    async def drain() -> list[bytes]:
        got = []
        async for m in puller:
            got.append(m.body)
            if len(got) == 2:
                pair.listener.close()
        return got

    assert sorted(await drain()) == [b"a", b"b"]


async def test_a_streamed_reply_and_chunked_reads(pair: Pair) -> None:
    replier = pair.listener.replier("/stream")

    async def serve() -> None:
        ex = await replier.accept()
        chunks = []
        while (c := await ex.read_chunk()) is not None:
            chunks.append(c)
        out = await ex.open_reply({"parts": str(len(chunks))})
        async with out:
            await out.write_chunks([b"x" * 10, bytearray(b"y" * 10)])
            await out.write(memoryview(b"z" * 10))

    server = asyncio.create_task(serve())
    req = pair.client.requester()
    await req.connect(replier.address)
    body, pending = await req.open()
    async with body:
        await body.write(payload(200_000))
    reply = await pending.reply()
    assert reply.meta.get("parts") is not None
    got = b"".join([c async for c in reply])
    assert got == b"x" * 10 + b"y" * 10 + b"z" * 10
    await server


async def test_try_send_queues_at_once_or_returns_false_and_try_recv_takes_what_is_ready(
    pair: Pair,
) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    # Nothing connected: what send would raise.
    with pytest.raises(weida.NotConnected):
        pusher.try_send(b"x")
    await pusher.connect(puller.address)
    assert puller.try_recv() is None
    at_once = 0
    for i in range(50):
        body = i.to_bytes(4, "big")
        if pusher.try_send(body):
            at_once += 1
        else:
            await pusher.send(body)
    # The runtime offers lanes by default: a lane with room takes a small body at once.
    assert at_once > 0
    # A body larger than a lane takes is not sent.
    assert pusher.try_send(payload(64 * 1024)) is False
    seen: list[int] = []
    while len(seen) < 50:
        ready = puller.try_recv()
        m = ready if ready is not None else await puller.recv()
        seen.append(int.from_bytes(m.body, "big"))
    assert seen == list(range(50))  # one lane: in order
    assert puller.try_recv() is None
    puller.close()
    with pytest.raises(weida.Closed):
        puller.try_recv()


async def test_send_many_says_how_many_were_sent() -> None:
    # One stream slot, taken by the first body (nobody reads): the second waits for one and
    # times out. The error says one was sent (node/test/patterns.test.mjs the same).
    limits = weida.Limits(max_concurrent_uni_streams=1, max_local_streams=1)
    async with (
        weida.Runtime(limits=limits) as server,
        weida.Runtime(limits=limits, send_timeout=0.5, lane_max_message=0) as client,
    ):
        listener = await server.bind(bind_address("inproc"))
        puller = listener.puller("/jobs")
        pusher = client.pusher()
        await pusher.connect(puller.address)
        with pytest.raises(weida.Timeout) as e:
            await pusher.send_many([b"takes the only slot", b"waits", b"never tried"])
        assert e.value.sent == 1
