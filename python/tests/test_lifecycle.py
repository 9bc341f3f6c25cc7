"""Lifecycle and backpressure (PATTERNS §1.1, §1.4, §1.8, GUARANTEES §5;
core/tests/lifecycle.rs)."""

from __future__ import annotations

import ast
import asyncio
import time
from collections.abc import Callable
from pathlib import Path

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
    assert e.value.loss_cause in ("locally_closed", "peer_closed", "reset")
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
    assert e.value.loss_cause in ("locally_closed", "peer_closed", "reset")


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
            assert e.loss_cause == "peer_closed"
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
    with pytest.raises(weida.InvalidConfig):
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


def test_a_bad_option_is_invalid_config_naming_it() -> None:
    # One table checks every option, in every language: InvalidConfig naming the option as
    # the caller spelled it (node/test/lifecycle.test.mjs the same, in camelCase and ms).
    bad: list[tuple[Callable[[], object], str]] = [
        (lambda: weida.Limits(endpoint_queue=-1), "endpoint_queue"),
        (lambda: weida.Limits(endpoint_queue=1.5), "endpoint_queue"),  # type: ignore[arg-type]
        (lambda: weida.Limits(idle_timeout=-1), "idle_timeout"),
        (lambda: weida.Limits(idle_timeout=float("nan")), "idle_timeout"),
        (lambda: weida.Limits(max_filters=True), "max_filters"),
        (lambda: weida.Limits(send_window="1"), "send_window"),  # type: ignore[arg-type]
        (lambda: weida.Limits(nonsense=1), "nonsense"),  # type: ignore[call-arg]
        # The core's own check of a value, the same error.
        (lambda: weida.Limits(endpoint_queue=0), "endpoint_queue"),
        (lambda: weida.Runtime(ordering="total"), "ordering"),  # type: ignore[arg-type]
        (lambda: weida.Runtime(send_timeout=-1), "send_timeout"),
        (lambda: weida.Runtime(udp_buffer=-5), "udp_buffer"),
        (lambda: weida.Runtime(lane_max_message=2**64), "lane_max_message"),
    ]
    for make, named in bad:
        with pytest.raises(weida.InvalidConfig, match=named):
            make()
    # None is the default, except where it turns something off (the stub types the options
    # by their defaults, so only keep_alive is typed to take None).
    assert weida.Limits(idle_timeout=None) == weida.Limits()  # type: ignore[arg-type]
    assert weida.Limits(keep_alive=None).keep_alive is None
    assert weida.Limits(idle_timeout=1.5, endpoint_queue=8).idle_timeout == 1.5


async def test_udp_buffer_is_a_runtime_option() -> None:
    async with (
        weida.Runtime(udp_buffer=1 << 20) as server,
        weida.Runtime(udp_buffer=256 * 1024) as client,
    ):
        listener = await server.bind("weida://127.0.0.1:0")
        puller = listener.puller("/jobs")
        pusher = client.pusher()
        await pusher.connect(puller.address)
        await pusher.send(b"over a UDP socket of the size asked")
        assert (await puller.recv()).body == b"over a UDP socket of the size asked"


def test_counters_name_every_core_counter() -> None:
    c = weida.Runtime().counters()
    names = dir(c)
    assert sorted(names) == sorted(
        [
            "streams_opened",
            "streams_accepted",
            "streams_refused",
            "bytes_sent",
            "bytes_received",
            "connections_dialled",
            "connections_accepted",
            "receipts_delivered",
            "receipts_failed",
            "copies_published",
            "lane_messages_sent",
            "lane_messages_received",
            "lane_messages_lost",
            "outbox_queued",
            "outbox_written",
            "outbox_dropped",
            "outbox_abandoned",
        ]
    )
    assert all(getattr(c, n) == 0 for n in names)
    with pytest.raises(AttributeError):
        _ = c.nonsense  # type: ignore[attr-defined]


def test_limits_and_counters_name_every_core_field() -> None:
    # The stub lists the fields weida-ffi's tables read at runtime: the two must agree.
    stub = ast.parse((Path(weida.__file__).parent / "_weida.pyi").read_text())
    declared: dict[str, set[str]] = {}
    for node in stub.body:
        if isinstance(node, ast.ClassDef) and node.name in ("Limits", "Counters"):
            declared[node.name] = {
                n.name if isinstance(n, ast.FunctionDef) else n.target.id  # type: ignore[union-attr]
                for n in node.body
                if (isinstance(n, ast.FunctionDef) and not n.name.startswith("_"))
                or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
            }
    assert declared["Limits"] == set(dir(weida.Limits()))
    assert declared["Counters"] == set(dir(weida.Runtime().counters()))


async def test_close_resolves_once_closed_and_the_peer_learns_of_the_end(pair: Pair) -> None:
    # close() closes as shutdown() does, and resolves once the closes have been sent (a process
    # that exits next leaves its peers knowing at once: core/tests/lifecycle.rs
    # a_runtime_closed_before_its_process_exits_tells_its_peer_at_once).
    puller = pair.listener.puller("/jobs")
    pusher = pair.client.pusher()
    await pusher.connect(puller.address)
    held = await pusher.open()
    await held.write(b"half")
    incoming = await puller.accept()
    assert await incoming.read_chunk() == b"half"
    await pair.client.close()
    with pytest.raises((weida.ConnectionLost, weida.Canceled)):
        while await incoming.read_chunk() is not None:
            pass
    with pytest.raises(weida.Closed):
        await pusher.send(b"after")
    await pair.client.close()  # again: nothing left to close


def test_limits_signature_shows_the_core_defaults() -> None:
    # help(weida.Limits) and the stub an IDE reads both show every option with its real
    # default (no Ellipsis, no None standing for "the default"), equal to what Limits() holds.
    import ast
    import inspect
    from pathlib import Path

    made = weida.Limits()
    shown = {
        p.name: p.default
        for p in inspect.signature(weida.Limits).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert shown == {name: getattr(made, name) for name in dir(made)}
    stub = ast.parse((Path(__file__).parent.parent / "weida" / "_weida.pyi").read_text())
    limits = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Limits")
    new = next(n for n in limits.body if isinstance(n, ast.FunctionDef) and n.name == "__new__")
    stubbed = {
        a.arg: ast.literal_eval(d)
        for a, d in zip(new.args.kwonlyargs, new.args.kw_defaults, strict=True)
        if d is not None
    }
    assert stubbed == shown


async def test_a_listener_reports_each_connection_and_how_it_ended(transport: str) -> None:
    """``Listener.events()``: ``connected`` with where the connection comes from (a QUIC
    peer's UDP address, else the transport's name) and the key it presented, then ``lost``
    with its cause once the dialler closes (core/tests/listener_events.rs has the same name)."""
    server, client = weida.Runtime(), weida.Runtime()
    listener = await server.bind(bind_address(transport))
    events = listener.events()
    puller = listener.puller("/jobs")
    pusher = client.pusher()
    await pusher.connect(puller.address)
    await pusher.send(b"one")
    assert (await puller.recv()).body == b"one"
    connected = await asyncio.wait_for(events.next(), 30)
    assert connected.kind == "connected"
    if transport == "quic":
        host, _, port = connected.url.rpartition(":")
        assert host == "127.0.0.1" and int(port) > 0, connected.url
        assert connected.fingerprint == client.fingerprint
    else:
        assert connected.url == transport
        assert connected.fingerprint is None
    await client.close()
    lost = await asyncio.wait_for(events.next(), 30)
    assert (lost.kind, lost.url, lost.cause) == ("lost", connected.url, "peer_closed")
    await server.close()
