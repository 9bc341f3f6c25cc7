"""Cancel (PATTERNS §1.5; core/tests/cancel.rs): the reader never observes a cancelled transfer
as complete, and cancelling an await (asyncio) cancels the operation."""

from __future__ import annotations

import asyncio
import gc
import itertools
from collections.abc import Awaitable, Callable

import pytest
from conftest import Pair, payload

import weida
from weida import _weida

# Above the 1 MiB stream window: a write of this much waits for a reader that does not read.
BLOCKING = 4 << 20


async def blocked_write(t: weida.OutgoingTransfer) -> asyncio.Future[None]:
    """A write left waiting for a reader that does not read (in process the first writes are
    taken whole, so write until one waits)."""
    for _ in range(8):
        w = t.write(payload(BLOCKING))
        # A write taken whole finishes at once (on this thread, or on the I/O thread after a
        # streak of ready operations); one that waits for the reader never does.
        done, _ = await asyncio.wait({w}, timeout=0.5)
        if not done:
            return w
        await w
    raise AssertionError("no write ever waited")


async def read_to_end(t: weida.IncomingTransfer | weida.Exchange) -> bytes:
    parts = []
    while (c := await t.read_chunk()) is not None:
        parts.append(c)
    return b"".join(parts)


async def test_push_cancel_mid_transfer_is_canceled_at_the_reader(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    t = await pusher.open()
    await t.write(payload(100_000))
    incoming = await puller.accept()
    first = await incoming.read_chunk()
    assert first
    t.cancel()
    with pytest.raises(weida.Canceled):
        await read_to_end(incoming)
    await pusher.send(b"next")
    assert (await puller.recv()).body == b"next"


async def test_a_dropped_transfer_is_a_cancellation_not_a_short_payload(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    t = await pusher.open()
    await t.write(b"half a frame")
    incoming = await puller.accept()
    del t
    gc.collect()
    with pytest.raises(weida.Canceled):
        await incoming.collect(1 << 20)


async def test_a_cancelled_request_is_canceled_at_the_replier(pair: Pair) -> None:
    replier = pair.listener.replier("/rpc")
    req = pair.client.requester()
    await req.connect(replier.address)
    body, _reply = await req.open()
    await body.write(b"partial request")
    ex = await replier.accept()
    body.cancel()
    with pytest.raises(weida.Canceled):
        await ex.take_body()


async def test_an_exchange_dropped_without_an_answer_is_canceled_for_the_requester(
    pair: Pair,
) -> None:
    replier = pair.listener.replier("/rpc")

    async def serve() -> None:
        ex = await replier.accept()
        await ex.take_body()
        del ex  # walks away without answering

    server = asyncio.create_task(serve())
    req = pair.client.requester()
    await req.connect(replier.address)
    with pytest.raises(weida.Canceled):
        await req.request(b"q")
    await server


async def test_an_asyncio_cancelled_write_cancels_the_transfer_at_the_reader(
    pair: Pair, request: pytest.FixtureRequest, transport: str
) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    t = await pusher.open()
    await t.write(b"first")
    incoming = await puller.accept()
    assert await incoming.read_chunk() == b"first"
    blocked = await blocked_write(t)
    blocked.cancel()
    with pytest.raises(asyncio.CancelledError):
        await blocked
    with pytest.raises(weida.Canceled):
        await read_to_end(incoming)
    # The transfer is gone: a later write says so.
    with pytest.raises(weida.Canceled):
        await t.write(b"late")


async def test_cancel_interrupts_a_pending_write(
    pair: Pair, request: pytest.FixtureRequest, transport: str
) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    t = await pusher.open()
    await t.write(b"first")
    incoming = await puller.accept()
    assert await incoming.read_chunk() == b"first"
    blocked = await blocked_write(t)
    t.cancel()
    with pytest.raises(weida.Canceled):
        await blocked
    with pytest.raises(weida.Canceled):
        await read_to_end(incoming)


async def test_an_asyncio_cancelled_request_is_canceled_at_the_replier(
    pair: Pair, request: pytest.FixtureRequest, transport: str
) -> None:
    replier = pair.listener.replier("/rpc")
    req = pair.client.requester()
    await req.connect(replier.address)
    pending = req.request(payload(BLOCKING))
    ex = await replier.accept()
    assert await ex.read_chunk()
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    # The replier sees Canceled: while reading a request cut short, or (when the request had
    # arrived whole, as in process) while writing the reply nobody reads any more.
    with pytest.raises(weida.Canceled):
        await read_to_end(ex)
        out = await ex.open_reply()
        for _ in range(1000):
            await out.write(payload(64 * 1024))


async def test_an_asyncio_cancelled_recv_loses_nothing(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    # A receive waiting for nothing, cancelled.
    waiting = asyncio.ensure_future(puller.recv())
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    # A receive cancelled while it collects half a message: the next one resumes it.
    t = await pusher.open()
    await t.write(b"first half, ")
    half = asyncio.ensure_future(puller.recv())
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.shield(half), 0.05)
    half.cancel()
    with pytest.raises(asyncio.CancelledError):
        await half
    await t.write(b"second half")
    await t.finish()
    assert (await puller.recv()).body == b"first half, second half"


async def test_a_receive_cancelled_as_its_message_arrives_hands_it_back(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    receives: list[Callable[[], Awaitable[object]]] = [
        puller.recv,
        lambda: puller.recv_many(8),
        puller.__anext__,
    ]
    for i in range(30):
        pending = asyncio.ensure_future(receives[i % 3]())
        await asyncio.sleep(0)
        fetched, orphans = _weida._fetched(), _weida._orphans()
        sent = pusher.send(str(i).encode())
        # The loop thread is held until the I/O thread has received the message for the
        # pending receive: the loop sees the cancellation first, then the message, which is
        # kept for the next receive.
        assert _weida._wait_fetched(fetched + 1, 10)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        await sent
        assert (await asyncio.wait_for(puller.recv(), 5)).body == str(i).encode()
        assert _weida._orphans() == orphans + 1, "the message came back: the race ran"


async def test_leaving_async_with_on_an_exception_cancels_the_transfer(pair: Pair) -> None:
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    with pytest.raises(RuntimeError, match="producer failed"):
        async with await pusher.open() as t:
            await t.write(b"some of it")
            incoming = await puller.accept()
            raise RuntimeError("producer failed")
    with pytest.raises(weida.Canceled):
        await read_to_end(incoming)
    async with await pusher.open() as t:
        await t.write(b"all of it")
    assert (await puller.recv()).body == b"all of it"


async def test_receives_raced_and_cancelled_keep_the_order(pair: Pair) -> None:
    # A new user's race: two receives, the first to finish wins, the other is cancelled. A
    # message the loser had taken as it was cancelled goes back to the endpoint, and must be
    # the next one any receive takes: the messages come out in the order they were sent.
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    n = 20_000

    async def send() -> None:
        for i in range(n):
            await pusher.send(i.to_bytes(4, "big"))

    sending = asyncio.ensure_future(send())
    got: list[int] = []
    while len(got) < n:
        first, second = puller.recv(), puller.recv()
        _, pending = await asyncio.wait({first, second}, return_when=asyncio.FIRST_COMPLETED)
        for p in pending:
            p.cancel()
        await asyncio.wait({first, second})
        # Both may have finished: the one called first holds the earlier message.
        got += [
            int.from_bytes(f.result().body, "big") for f in (first, second) if not f.cancelled()
        ]
    await sending
    out_of_order = [(a, b) for a, b in itertools.pairwise(got) if b != a + 1]
    assert got == list(range(n)), f"out of order: {out_of_order[:5]}"
