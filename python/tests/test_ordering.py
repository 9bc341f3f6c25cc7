"""PerProducer ordering outside Pub/Sub (PATTERNS §1.7, §6.1, GUARANTEES §4;
core/tests/ordering.rs): a puller or a pair whose runtime requires detect gets each message
numbered with the gap before it, and a level a pattern cannot honour is refused with
NegotiationFailed, never downgraded."""

from __future__ import annotations

import pytest
from conftest import bind_address, payload

import weida


async def test_a_puller_that_requires_ordering_gets_every_message_numbered(
    transport: str,
) -> None:
    async with weida.Runtime(ordering="detect") as server, weida.Runtime() as client:
        listener = await server.bind(bind_address(transport))
        puller = listener.puller("/jobs")
        pusher = client.pusher()
        await pusher.connect(puller.address)
        # Small bodies (a lane's frames) and large ones (a stream each), one at a time.
        for i in range(12):
            body = payload(40_000) if i % 4 == 3 else payload(10 + i)
            await pusher.send(body)
            m = await puller.recv()
            assert (m.meta.sequence, m.meta.gap, m.body) == (i + 1, 0, body)


async def test_a_refused_push_shows_up_as_a_gap(transport: str) -> None:
    limits = weida.Limits(max_collected_body=1000)
    async with (
        weida.Runtime(ordering="detect", limits=limits) as server,
        weida.Runtime() as client,
    ):
        listener = await server.bind(bind_address(transport))
        puller = listener.puller("/jobs")
        pusher = client.pusher()
        await pusher.connect(puller.address)
        await pusher.send(payload(100))
        first = await puller.recv()
        assert (first.meta.sequence, first.meta.gap) == (1, 0)
        # Number 2 is above the puller's max_collected_body: its receive fails.
        await pusher.send(payload(2000))
        with pytest.raises(weida.LimitExceeded):
            await puller.recv()
        await pusher.send(payload(100))
        third = await puller.recv()
        assert (third.meta.sequence, third.meta.gap) == (3, 1)


async def test_a_level_a_pattern_cannot_honour_is_refused_not_downgraded(
    transport: str,
) -> None:
    async with (
        weida.Runtime(ordering="reassemble") as server,
        weida.Runtime() as client,
    ):
        listener = await server.bind(bind_address(transport))
        puller = listener.puller("/jobs")
        replier = listener.replier("/echo")
        pair = listener.pair("/chat")
        # A pusher and a dialling pair offer detect only; a requester offers no ordering.
        with pytest.raises(weida.NegotiationFailed):
            await client.pusher().connect(puller.address)
        with pytest.raises(weida.NegotiationFailed):
            await client.requester().connect(replier.address)
        assert pair.address is not None
        with pytest.raises(weida.NegotiationFailed):
            await client.pair().connect(pair.address)
        # A runtime that requires reassemble does not dial a pair at all: it holds nothing back.
        async with weida.Runtime() as plain:
            bound = (await plain.bind(bind_address(transport))).pair("/chat")
            assert bound.address is not None
            with pytest.raises(weida.NegotiationFailed):
                await server.pair().connect(bound.address)


async def test_a_pair_refused_above_its_peers_limit_is_a_gap(transport: str) -> None:
    limits = weida.Limits(max_collected_body=1000)
    async with (
        weida.Runtime(ordering="detect", limits=limits) as server,
        weida.Runtime(ordering="detect", limits=limits) as client,
    ):
        bound = (await server.bind(bind_address(transport))).pair("/chat")
        assert bound.address is not None
        dialling = client.pair()
        await dialling.connect(bound.address)
        # Both ways: the dialling pair numbers per connection, the bound pair per claim.
        for sender, receiver in ((dialling, bound), (bound, dialling)):
            await sender.send(payload(100))
            first = await receiver.recv()
            assert (first.meta.sequence, first.meta.gap) == (1, 0)
            # Number 2 is above the receiver's max_collected_body; the send may itself be
            # refused before its FIN is queued (the refusal race, PATTERNS §1.6).
            try:
                await sender.send(payload(2000))
            except weida.LimitExceeded:
                pass
            with pytest.raises(weida.LimitExceeded):
                await receiver.recv()
            await sender.send(payload(100))
            third = await receiver.recv()
            assert (third.meta.sequence, third.meta.gap) == (3, 1)
