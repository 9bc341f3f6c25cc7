"""A dialled address outlives its connection (core/tests/reconnect.rs has the same names): an
endpoint whose peer restarts delivers again with no second ``connect``, says so as
``PeerEvent``s, and ``ReconnectPolicy.never()`` is the behaviour before redial. The restart
keeps the address: the same AF_UNIX path or in-process name (a QUIC port is not free again the
moment its runtime closes; the core's tests restart over QUIC behind a relay)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import bind_address

import weida

RESTARTABLE = ["unix", "inproc"]


def redialling() -> weida.Runtime:
    """Redial fast and without jitter, so the tests' outages are short."""
    return weida.Runtime(reconnect=weida.ReconnectPolicy(initial=0.02, max=0.1, jitter=False))


async def until(events: weida.PeerEvents, kind: str, between: tuple[str, ...]) -> weida.PeerEvent:
    """Reads events up to the first of `kind`; every one before it must be of `between`."""
    while True:
        e = await asyncio.wait_for(events.next(), 30)
        if e.kind == kind:
            return e
        assert e.kind in between, e


@pytest.mark.parametrize("transport", RESTARTABLE)
async def test_a_pusher_whose_server_restarts_delivers_again_with_no_second_connect(
    transport: str,
) -> None:
    bind = bind_address(transport)
    server = weida.Runtime()
    listener = await server.bind(bind)
    puller = listener.puller("/jobs")
    async with redialling() as client:
        pusher = client.pusher()
        events = pusher.events()
        await pusher.connect(puller.address)
        assert (await events.next()).kind == "connected"
        await pusher.send(b"one")
        assert (await puller.recv()).body == b"one"
        await server.close()
        lost = await events.next()
        assert (lost.kind, lost.url) == ("lost", puller.address)
        retrying = await events.next()
        assert (retrying.kind, retrying.attempt) == ("retrying", 1)
        assert retrying.delay == (0.0 if transport == "inproc" else 0.02)
        assert pusher.peer_count == 0
        async with weida.Runtime() as second:
            puller = (await second.bind(bind)).puller("/jobs")
            e = await until(events, "connected", ("retrying",))
            assert e.url == puller.address
            assert pusher.peer_count == 1
            await pusher.send(b"two")
            assert (await puller.recv()).body == b"two"


@pytest.mark.parametrize("transport", RESTARTABLE)
async def test_never_reports_connection_lost_as_before(transport: str) -> None:
    bind = bind_address(transport)
    server = weida.Runtime()
    puller = (await server.bind(bind)).puller("/jobs")
    async with redialling() as client:
        pusher = client.pusher(reconnect=weida.ReconnectPolicy.never())
        events = pusher.events()
        await pusher.connect(puller.address)
        await server.close()
        await until(events, "lost", ("connected",))
        assert (await events.next()).kind == "gave_up"
        with pytest.raises(weida.ConnectionLost):
            await pusher.open()


@pytest.mark.parametrize("transport", RESTARTABLE)
async def test_a_transfer_opened_during_the_outage_completes_on_the_redialled_connection(
    transport: str,
) -> None:
    # In process too: the name is bound again a moment before the path, and a redial in that
    # gap is refused by the path check (PROTOCOL §3.1.5) and retried, so the waiting open goes
    # out only once the path is bound, never into the refusal race.
    bind = bind_address(transport)
    server = weida.Runtime()
    first = (await server.bind(bind)).puller("/jobs")  # kept: a dropped endpoint unbinds
    async with redialling() as client:
        pusher = client.pusher()
        events = pusher.events()
        await pusher.connect(first.address)
        await server.close()
        await until(events, "retrying", ("connected", "lost"))

        async def during() -> None:
            t = await pusher.open()  # waits for the redial: every slot is down
            await t.write(b"during")
            await t.finish()

        opening = asyncio.ensure_future(during())
        async with weida.Runtime() as second:
            puller = (await second.bind(bind)).puller("/jobs")
            assert (await puller.recv()).body == b"during"
            await opening


@pytest.mark.parametrize("transport", RESTARTABLE)
async def test_a_subscriber_hears_the_next_publish_after_its_publisher_restarts_with_every_filter(
    transport: str,
) -> None:
    bind = bind_address(transport)
    server = weida.Runtime()
    publisher = (await server.bind(bind)).publisher("/feed")
    async with redialling() as client:
        sub = client.subscriber()
        events = sub.events()
        await sub.connect(publisher.address)
        await sub.subscribe("a.#")
        assert publisher.publish("a.1", b"1") == 1
        assert (await sub.recv()).meta.topic == "a.1"
        await server.close()
        await until(events, "retrying", ("connected", "lost"))
        await sub.subscribe("b.#")  # during the outage: installed when the redial is up
        async with weida.Runtime() as second:
            publisher = (await second.bind(bind)).publisher("/feed")
            await until(events, "connected", ("retrying",))
            assert publisher.publish("b.2", b"2") == 1
            assert publisher.publish("a.3", b"3") == 1
            assert (await sub.recv()).meta.topic == "b.2"
            assert (await sub.recv()).meta.topic == "a.3"


@pytest.mark.parametrize("transport", RESTARTABLE)
async def test_a_redial_to_a_listener_that_no_longer_serves_the_path_gives_up_with_unknown_endpoint(
    transport: str,
) -> None:
    bind = bind_address(transport)
    server = weida.Runtime()
    first = (await server.bind(bind)).puller("/jobs")  # kept: a dropped endpoint unbinds
    policy = weida.ReconnectPolicy(initial=0.02, max=0.1, jitter=False, give_up_after=1.0)
    async with weida.Runtime(reconnect=policy) as client:
        pusher = client.pusher()
        events = pusher.events()
        await pusher.connect(first.address)
        await server.close()
        await until(events, "lost", ("connected",))
        async with weida.Runtime() as second:
            other = (await second.bind(bind)).puller("/other")  # back, without /jobs
            gave_up = await until(events, "gave_up", ("retrying",))
            assert (gave_up.url, gave_up.cause) == (first.address, "unknown_endpoint")
            with pytest.raises(weida.ConnectionLost):
                await pusher.send(b"gone")
            assert other.address.endswith("/other")


async def test_a_lagging_event_reader_is_told_how_many_it_missed() -> None:
    bind = bind_address("unix")
    server = weida.Runtime()
    first = (await server.bind(bind)).puller("/jobs")  # kept: a dropped endpoint unbinds
    fast = weida.ReconnectPolicy(initial=0.001, max=0.001, jitter=False)
    async with weida.Runtime(reconnect=fast) as client:
        pusher = client.pusher()
        keeping_up, lagging = pusher.events(), pusher.events()
        await pusher.connect(first.address)
        await server.close()
        # A missing socket is refused at once: a retry every millisecond. (This reader may
        # fall behind too, on a loaded machine: it is told so, and reads on.)
        for _ in range(100):
            await until(keeping_up, "retrying", ("connected", "lost", "missed"))
        missed = await lagging.next()
        assert missed.kind == "missed" and missed.missed is not None and missed.missed >= 36
        assert (await lagging.next()).kind in ("retrying", "lost")


def test_a_reconnect_policy_is_checked_and_named() -> None:
    p = weida.ReconnectPolicy(initial=0.05, give_up_after=60)
    assert (p.initial, p.max, p.jitter, p.give_up_after, p.give_up_after_attempts) == (
        0.05,
        30.0,
        True,
        60.0,
        None,
    )
    assert weida.ReconnectPolicy.never().give_up_after_attempts == 0
    with pytest.raises(weida.InvalidConfig, match="give_up_after"):
        weida.ReconnectPolicy(give_up_after=1, give_up_after_attempts=1)
    with pytest.raises(weida.InvalidConfig, match="initial"):
        weida.ReconnectPolicy(initial=-1)


# The outbox. A redial goes live only once the path is bound again (the path check), so a
# restart's bind and its endpoint's registration may be separate steps, as here.


class Outage:
    """A pusher whose only server is down (its redial is retrying), and the way to bring the
    server back at the same address."""

    def __init__(self, client: weida.Runtime, pusher: weida.Pusher, bind: str) -> None:
        self.client, self.pusher, self.bind = client, pusher, bind
        self.events = pusher.events()
        self.servers: list[weida.Runtime] = []

    @staticmethod
    async def start(client: weida.Runtime, transport: str = "unix", **options: object) -> Outage:
        bind = bind_address(transport)
        server = weida.Runtime()
        first = (await server.bind(bind)).puller("/jobs")
        o = Outage(client, client.pusher(**options), bind)  # type: ignore[arg-type]
        await o.pusher.connect(first.address)
        await server.close()
        await until(o.events, "retrying", ("connected", "lost"))
        return o

    async def restart(self) -> weida.Puller:
        server = weida.Runtime()
        self.servers.append(server)
        return (await server.bind(self.bind)).puller("/jobs")

    async def close(self) -> None:
        for s in self.servers:
            await s.close()


async def bodies(puller: weida.Puller, n: int) -> list[bytes]:
    return [(await puller.recv()).body for _ in range(n)]


@pytest.mark.parametrize("transport", RESTARTABLE)
async def test_a_hundred_sends_during_an_outage_arrive_in_order_after_it(transport: str) -> None:
    async with redialling() as client:
        o = await Outage.start(client, transport)
        sent = [b"m%03d" % i for i in range(100)]
        for m in sent:
            await o.pusher.send(m)  # returns at once: the body is the outbox's
        c = client.counters()
        assert (c.outbox_queued, c.outbox_written) == (100, 0)
        puller = await o.restart()
        assert await bodies(puller, 100) == sent  # in order: one lane carries them
        await o.pusher.send(b"after")
        assert await bodies(puller, 1) == [b"after"]
        c = client.counters()
        assert (c.outbox_written, c.outbox_abandoned) == (100, 0)
        await o.close()


async def test_the_fourth_send_at_a_bound_of_three_blocks_until_the_drain_starts() -> None:
    async with redialling() as client:
        o = await Outage.start(client, outbox_messages=3)
        for i in range(3):
            await o.pusher.send(b"m%d" % i)
        fourth = asyncio.ensure_future(o.pusher.send(b"m3"))
        # Full and no peer: it waits (the core's test shows it pending deterministically).
        done, _ = await asyncio.wait([fourth], timeout=0.2)
        assert not done
        puller = await o.restart()
        await fourth
        assert await bodies(puller, 4) == [b"m0", b"m1", b"m2", b"m3"]
        await o.close()


async def test_a_drop_outbox_counts_what_it_discarded() -> None:
    async with redialling() as client:
        o = await Outage.start(client, outbox_messages=3, outbox_full="drop")
        for i in range(5):
            await o.pusher.send(b"m%d" % i)
        c = client.counters()
        assert (c.outbox_queued, c.outbox_dropped) == (3, 2)
        puller = await o.restart()
        assert await bodies(puller, 3) == [b"m0", b"m1", b"m2"]
        await o.close()


async def test_a_reject_outbox_and_a_body_larger_than_the_outbox_fail_by_name() -> None:
    async with redialling() as client:
        o = await Outage.start(client, outbox_messages=2, outbox_bytes=1024, outbox_full="reject")
        await o.pusher.send(b"m0")
        await o.pusher.send(b"m1")
        with pytest.raises(weida.LimitExceeded) as full:
            await o.pusher.send(b"m2")
        assert full.value.limit == "outbox_messages"
        with pytest.raises(weida.LimitExceeded, match="outbox_bytes") as large:
            await o.pusher.send(bytes(2048))
        assert large.value.limit == "outbox_bytes"
        with pytest.raises(weida.InvalidConfig, match="outbox_full"):
            client.pusher(outbox_full="sometimes")  # type: ignore[arg-type]


async def test_a_body_written_before_the_restart_arrives_once() -> None:
    bind = bind_address("unix")
    server = weida.Runtime()
    first = (await server.bind(bind)).puller("/jobs")
    async with redialling() as client:
        pusher = client.pusher()
        events = pusher.events()
        await pusher.connect(first.address)
        before = [b"m%d" % i for i in range(10)]
        for m in before:
            await pusher.send(m)
        assert await bodies(first, 10) == before
        await server.close()
        await until(events, "retrying", ("connected", "lost"))
        async with weida.Runtime() as second:
            puller = (await second.bind(bind)).puller("/jobs")
            await until(events, "connected", ("retrying",))
            after = [b"m%d" % i for i in range(10, 20)]
            for m in after:
                await pusher.send(m)
            # The new server hears what was sent after the restart, and nothing before it.
            assert await bodies(puller, 10) == after
            assert client.counters().outbox_queued == 0


@pytest.mark.parametrize("transport", RESTARTABLE)
async def test_connect_before_bind_delivers_once_the_listener_appears(transport: str) -> None:
    bind = bind_address(transport)
    address = str(weida.Address(bind).with_path("/jobs"))
    async with redialling() as client:
        pusher = client.pusher()
        events = pusher.events()
        with pytest.raises(weida.Unreachable):
            await pusher.connect(address)  # waits for the first dial, which fails
        await pusher.connect(address, wait=False)  # recorded; dialled in the background
        assert pusher.peer_count == 0
        await pusher.send(b"early")
        async with weida.Runtime() as server:
            puller = (await server.bind(bind)).puller("/jobs")
            e = await until(events, "connected", ("retrying",))
            assert e.url == address
            assert await bodies(puller, 1) == [b"early"]
            assert pusher.peer_count == 1


async def test_a_drain_writes_out_the_outbox_first() -> None:
    bind = bind_address("unix")
    async with weida.Runtime() as server:
        client = redialling()
        pusher = client.pusher()
        await pusher.connect(str(weida.Address(bind).with_path("/jobs")), wait=False)
        await pusher.send(b"early")  # nothing is bound yet: the outbox's
        nowhere = client.pusher()
        await nowhere.connect(
            str(weida.Address(bind_address("unix")).with_path("/jobs")), wait=False
        )
        await nowhere.send(b"never")
        puller = (await server.bind(bind)).puller("/jobs")
        drained = await client.drain(1.5)
        assert drained.unsent == 1
        c = client.counters()
        assert (c.outbox_written, c.outbox_abandoned) == (1, 1)
        assert await bodies(puller, 1) == [b"early"]
        with pytest.raises(weida.Closed):
            await pusher.send(b"late")


async def test_a_subscriber_connected_before_its_publisher_binds_hears_it_with_its_filters() -> (
    None
):
    bind = bind_address("unix")
    async with redialling() as client:
        sub = client.subscriber()
        events = sub.events()
        await sub.connect(str(weida.Address(bind).with_path("/feed")), wait=False)
        await sub.subscribe("a.#")  # held, and installed before the slot counts as live
        assert sub.peer_count == 0
        async with weida.Runtime() as server:
            publisher = (await server.bind(bind)).publisher("/feed")
            await until(events, "connected", ("retrying",))
            assert publisher.publish("b.0", b"0") == 0
            assert publisher.publish("a.1", b"1") == 1
            assert (await sub.recv()).meta.topic == "a.1"
            assert sub.peer_count == 1


@pytest.mark.parametrize("transport", RESTARTABLE)
async def test_open_waits_for_a_redial_at_most_send_timeout(transport: str) -> None:
    bind = bind_address(transport)
    server = weida.Runtime()
    first = (await server.bind(bind)).puller("/jobs")  # kept: a dropped endpoint unbinds
    async with redialling() as client:
        pusher = client.pusher(send_timeout=0.2)
        events = pusher.events()
        await pusher.connect(first.address)
        await server.close()
        await until(events, "lost", ("connected",))
        with pytest.raises(weida.Timeout) as waited:
            await pusher.open()
        # It says what it waited out: the last loss of the endpoint's connections.
        assert waited.value.loss_cause is not None
        with pytest.raises(weida.NotConnected):
            await client.pusher().open()  # never connected: told so at once


@pytest.mark.parametrize("transport", ["quic", "unix", "inproc"])
async def test_a_drained_runtime_does_not_redial(transport: str) -> None:
    """A drain's GOAWAY has the listener close the connection, which the dialler sees as the
    peer's close; that loss is the drain's doing, so the slot gives up with no retry."""
    async with weida.Runtime() as server:
        puller = (await server.bind(bind_address(transport))).puller("/jobs")
        client = redialling()
        pusher = client.pusher()
        events = pusher.events()
        await pusher.connect(puller.address)
        await pusher.send(b"one")
        assert (await puller.recv()).body == b"one"
        await client.drain(5.0)
        gave_up = await until(events, "gave_up", ("connected", "lost"))
        assert gave_up.cause == "locally_closed"
        assert pusher.peer_count == 0
        await client.close()
