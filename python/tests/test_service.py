"""The handler runtime from Python (docs/SERVICES.md; core/tests/service.rs holds every row of
seed 002's tables): the outcomes returned or raised, the attempt header, the limit and the dead
letter, a registration without an address refused, concurrency, and App's decorators and stop."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import signal
import sys
from pathlib import Path

import pytest
from conftest import bind_address

import weida
from weida import _weida
from weida.service import App, Job, ack, drop, retry, retry_after


async def test_ack_and_drop_raise_unsupported_and_count_as_processed_and_dropped() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        reg = await weida.service.Service(rt).queue(listener, "/jobs")
        pusher = rt.pusher()
        await pusher.connect(reg.address or "")
        for body in (b"a", b"b", b"c"):
            await pusher.send(body)
        for outcome in ("ack", "drop", "done"):
            job = await reg.next()
            with pytest.raises(weida.Unsupported):
                job.ack()
            with pytest.raises(weida.Unsupported):
                job.discard()
            job.finish(outcome)
            with pytest.raises(weida.Closed):
                job.finish("done")  # an outcome is given once
        c = reg.counters
        assert (c["handled"], c["dropped"], c["retried"], c["in_flight"]) == (2, 1, 0, 0)
        with pytest.raises(weida.InvalidConfig):
            (await _one(rt, reg, pusher)).finish("later")


async def _one(rt: weida.Runtime, reg: weida.service.Registration, pusher: weida.Pusher) -> Job:
    await pusher.send(b"one more")
    return await reg.next()


async def test_retry_with_max_attempts_copies_until_the_limit_then_dead_letters(
    transport: str,
) -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind(bind_address(transport))
        dead = listener.puller("/dead")
        app = App(rt)
        seen: list[tuple[bytes, int]] = []

        @app.queue(listener, "/jobs", max_attempts=3, dead_letter=dead.address)
        async def work(job: Job) -> None:
            seen.append((job.message.body, job.attempt))
            raise retry()

        await app.start()
        served = asyncio.ensure_future(app.run(signals=False))
        pusher = rt.pusher()
        await pusher.connect(app.registrations[0].address or "")
        await pusher.send(b"job", {"trace": "t-1"})
        letter = await dead.recv()
        assert letter.body == b"job"
        assert letter.meta.get("trace") == b"t-1"
        assert letter.meta.get("weida-attempt") == b"3"
        assert seen == [(b"job", 1), (b"job", 2), (b"job", 3)]
        app.stop()
        (report,) = await served
        assert report == {"unfinished": 0, "copies_dropped": 0}
        c = app.registrations[0].counters
        assert (c["retried"], c["dead_lettered"], c["handled"]) == (2, 1, 0)


async def test_each_kind_of_registration_sends_its_copies_where_it_should() -> None:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind("weida://127.0.0.1:0")
        retries = listener.puller("/retries")
        service = weida.service.Service(client)
        # A bound fan-out: its copy comes back to its own path alone, under its topic.
        fan = await weida.service.Service(server).fan_out(
            listener, "/events", ["orders.#"], max_attempts=2
        )
        publisher = client.publisher()
        await publisher.connect(fan.address or "")
        assert publisher.publish("orders.new", b"o1") == 1
        first = await fan.next()
        assert (first.attempt, first.message.meta.topic) == (1, "orders.new")
        first.finish("retry")
        again = await fan.next()
        assert (again.message.body, again.attempt, again.message.meta.topic) == (
            b"o1",
            2,
            "orders.new",
        )
        again.finish("done")
        # A puller dialling a bound pusher: its copy goes to retry_to.
        work = listener.pusher("/work")
        pulling = await service.pulling(work.address, retry_to=retries.address)
        await work.send(b"w1")
        (await pulling.next()).finish("retry_after", delay=0.0)
        copy = await retries.recv()
        assert (copy.body, copy.meta.get("weida-attempt")) == (b"w1", b"2")
        # A subscriber dialling a bound publisher: what its filters hold, copied to retry_to
        # with its topic in a header.
        events = listener.publisher("/feed")
        subscribing = await service.subscribing(
            events.address, ["orders.#"], retry_to=retries.address, max_attempts=3
        )
        assert events.subscriber_count == 1
        assert events.publish("billing.paid", b"b1") == 0
        assert events.publish("orders.paid", b"o2") == 1
        job = await subscribing.next()
        assert (job.message.body, job.message.meta.topic) == (b"o2", "orders.paid")
        job.finish("retry")
        copy = await retries.recv()
        assert (copy.body, copy.meta.get("weida-attempt"), copy.meta.get("weida-topic")) == (
            b"o2",
            b"2",
            b"orders.paid",
        )
        assert (pulling.address, subscribing.address) == (None, None)
        with pytest.raises(weida.InvalidConfig):
            await service.subscribing(events.address, ["orders.#"])  # no retry_to


async def test_a_next_cancelled_as_its_job_arrives_loses_nothing() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        reg = await weida.service.Service(rt).queue(listener, "/jobs")
        pusher = rt.pusher()
        await pusher.connect(reg.address or "")
        for i in range(10):
            pending = asyncio.ensure_future(reg.next())
            await asyncio.sleep(0)
            fetched, orphans = _weida._fetched(), _weida._orphans()
            sent = pusher.send(str(i).encode())
            # The loop is held until the I/O thread has taken the job for the pending next:
            # the loop sees the cancellation first, then the job, which goes back.
            assert _weida._wait_fetched(fetched + 1, 10)
            pending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pending
            await sent
            job = await asyncio.wait_for(reg.next(), 5)
            assert (job.message.body, job.attempt) == (str(i).encode(), 1)
            job.finish("done")
            assert _weida._orphans() == orphans + 1, "the job came back: the race ran"
        c = reg.counters
        assert (c["handled"], c["failed"], c["dropped"], c["in_flight"]) == (10, 0, 0, 0)


async def test_retry_without_a_limit_redelivers_nothing_and_a_failure_is_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        app = App(rt)
        calls: list[bytes] = []
        last = asyncio.Event()

        @app.queue(listener, "/jobs")
        async def work(job: Job) -> weida.service.Outcome | None:
            calls.append(job.message.body)
            if job.message.body == b"last":
                last.set()
            if job.message.body == b"fail":
                raise ValueError("no disk")
            return retry() if job.message.body == b"again" else None

        await app.start()
        served = asyncio.ensure_future(app.run(signals=False))
        pusher = rt.pusher()
        await pusher.connect(app.registrations[0].address or "")
        for body in (b"again", b"fail", b"last"):
            await pusher.send(body)
        reg = app.registrations[0]
        await last.wait()
        app.stop()  # after the last handler finishes: the stop waits for it
        await served
        assert calls == [b"again", b"fail", b"last"]
        # The failure is logged with Python's logging, with its path and reason.
        failed = [r.getMessage() for r in caplog.records if r.name == "weida.service"]
        assert len(failed) == 1, failed
        assert "path=/jobs" in failed[0] and "reason=ValueError: no disk" in failed[0]
        c = reg.counters
        assert (c["handled"], c["dropped"], c["failed"], c["retried"]) == (1, 2, 1, 0)


async def test_a_refused_outcome_is_a_failure_and_serve_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        reg = await weida.service.Service(rt).queue(listener, "/jobs", max_attempts=2)
        retried, last = asyncio.Event(), asyncio.Event()

        async def work(job: Job) -> weida.service.Outcome | None:
            if job.message.body == b"last":
                last.set()
            elif job.attempt == 2:
                retried.set()
            else:
                return retry_after(-1.0)  # refused by the core: a failure, retried as declared
            return None

        served = asyncio.ensure_future(weida.service.serve(reg, work))
        pusher = rt.pusher()
        await pusher.connect(reg.address or "")
        await pusher.send(b"refused")
        await asyncio.wait_for(retried.wait(), 10)
        await pusher.send(b"last")
        await asyncio.wait_for(last.wait(), 10)
        await reg.stop()
        await served
        failed = [r.getMessage() for r in caplog.records if r.name == "weida.service"]
        assert len(failed) == 1, failed
        assert "path=/jobs" in failed[0] and "reason=the outcome was refused" in failed[0]
        c = reg.counters
        assert (c["failed"], c["retried"], c["handled"], c["in_flight"]) == (1, 1, 2, 0)


async def test_a_job_the_handler_finished_itself_is_not_finished_twice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        reg = await weida.service.Service(rt).queue(listener, "/jobs")
        last = asyncio.Event()

        async def work(job: Job) -> None:
            if job.message.body == b"last":
                last.set()
            else:
                job.finish("done")  # the pull API; serve then leaves the job as it is

        served = asyncio.ensure_future(weida.service.serve(reg, work))
        pusher = rt.pusher()
        await pusher.connect(reg.address or "")
        for body in (b"first", b"last"):
            await pusher.send(body)
        await asyncio.wait_for(last.wait(), 10)
        await reg.stop()
        await served
        gc.collect()  # a handler's task that raised would say so as it is freed
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        c = reg.counters
        assert (c["handled"], c["failed"], c["dropped"], c["in_flight"]) == (2, 0, 0, 0)


async def test_retry_after_waits_then_the_copy_is_the_next_attempt() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        reg = await weida.service.Service(rt).queue(listener, "/jobs")
        pusher = rt.pusher()
        await pusher.connect(reg.address or "")
        await pusher.send(b"later")
        job = await reg.next()
        loop = asyncio.get_running_loop()
        finished = loop.time()
        job.finish("retry_after", delay=0.2)
        assert reg.counters["delayed"] == 1
        copy = await reg.next()
        assert loop.time() - finished >= 0.2
        assert (copy.message.body, copy.attempt) == (b"later", 2)
        copy.finish("done")


async def test_a_registration_without_an_address_is_refused_at_start() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        service = weida.service.Service(rt)
        with pytest.raises(weida.InvalidConfig, match="retry_to"):
            await service.replying(listener, "/rpc")
        with pytest.raises(weida.InvalidConfig, match="retry_to"):
            await service.pulling(listener.address + "/work")
        with pytest.raises(weida.InvalidConfig, match="own path"):
            await service.queue(listener, "/jobs", retry_to=listener.address + "/elsewhere")
        with pytest.raises(weida.InvalidConfig, match="come back"):
            await service.queue(listener, "/jobs", dead_letter=listener.address + "/jobs")
        # Nothing stayed bound.
        listener.replier("/rpc")
        listener.puller("/jobs")


async def test_a_rep_handler_replies_with_what_it_returns_and_a_retry_is_refused() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        retries = listener.puller("/retries")
        app = App(rt)

        @app.replying(listener, "/rpc", retry_to=retries.address, max_attempts=2)
        async def answer(job: Job) -> bytes:
            if job.message.body == b"later":
                raise retry_after(0)
            if job.message.body == b"drop":
                return drop()  # type: ignore[return-value]
            if job.message.body == b"ack":
                raise ack()
            return job.message.body.upper()

        await app.start()
        served = asyncio.ensure_future(app.run(signals=False))
        req = rt.requester()
        await req.connect(listener.address + "/rpc")
        assert await req.request(b"ping") == b"PING"
        assert await req.request(b"ack") == b""
        with pytest.raises(weida.Rejected, match="retried"):
            await req.request(b"later")
        copy = await retries.recv()
        assert (copy.body, copy.meta.get("weida-attempt")) == (b"later", b"2")
        with pytest.raises(weida.Rejected, match="dropped"):
            await req.request(b"drop")
        app.stop()
        await served


async def test_concurrency_runs_that_many_handlers_at_once_and_a_stop_waits_for_them() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        app = App(rt, drain=30.0)
        running, most = 0, 0
        gate = asyncio.Event()
        three = asyncio.Event()

        @app.queue(listener, "/jobs", concurrency=3)
        async def work(job: Job) -> None:
            nonlocal running, most
            running += 1
            most = max(most, running)
            if running == 3:
                three.set()
            await gate.wait()
            running -= 1

        await app.start()
        served = asyncio.ensure_future(app.run(signals=False))
        pusher = rt.pusher()
        await pusher.connect(app.registrations[0].address or "")
        for i in range(8):
            await pusher.send(f"m{i}".encode())
        await three.wait()
        assert app.registrations[0].counters["in_flight"] == 3
        app.stop()  # the stop waits for the three in flight
        await asyncio.sleep(0)
        assert not served.done()
        gate.set()
        (report,) = await served
        assert report == {"unfinished": 0, "copies_dropped": 0}
        assert most == 3
        assert app.registrations[0].counters["handled"] == 3


async def test_a_handler_still_running_at_the_drain_deadline_is_cancelled_and_run_returns() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        app = App(rt, drain=0.2)
        started = asyncio.Event()

        @app.queue(listener, "/jobs")
        async def work(job: Job) -> None:
            started.set()
            await asyncio.Event().wait()  # never finishes by itself

        await app.start()
        served = asyncio.ensure_future(app.run(signals=False))
        pusher = rt.pusher()
        await pusher.connect(app.registrations[0].address or "")
        await pusher.send(b"stuck")
        await started.wait()
        app.stop()
        # Bounded: before, run waited for the handler, which never ends.
        (report,) = await asyncio.wait_for(served, 30)
        assert report == {"unfinished": 1, "copies_dropped": 0}
        c = app.registrations[0].counters
        # Cancelled: a failure, and with no limit declared, gone.
        assert (c["handled"], c["failed"], c["dropped"], c["in_flight"]) == (0, 1, 1, 0)


@pytest.mark.skipif(sys.platform == "win32", reason="asyncio's signal handlers are Unix's")
async def test_app_run_stops_on_sigterm_as_on_sigint() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        app = App(rt, drain=5.0)

        @app.queue(listener, "/jobs")
        async def work(job: Job) -> None:
            return None

        await app.start()
        served = asyncio.ensure_future(app.run())
        # One turn of the loop: run installs its signal handlers before its first wait.
        await asyncio.sleep(0)
        os.kill(os.getpid(), signal.SIGTERM)
        (report,) = await asyncio.wait_for(served, 30)
        assert report == {"unfinished": 0, "copies_dropped": 0}
        # run removed its handlers: SIGTERM's own is back.
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example_service(language: str) -> list[str]:
    """How to run the README's job service in ``language``."""
    if language == "python":
        return [sys.executable, str(EXAMPLES / "jobs_service.py")]
    peer = os.environ.get("WEIDA_PEER_BIN")
    if not peer:
        pytest.skip("the Rust examples are built by ./dev python (set WEIDA_PEER_BIN)")
    return [str(Path(peer).parent / "jobs_service")]


@pytest.mark.parametrize("language", ["python", "rust"])
async def test_the_example_service_retries_dead_letters_and_stops_on_sigint(language: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        *example_service(language), stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    try:
        ready = (await proc.stdout.readline()).decode().split()
        assert ready[0] == "READY", ready
        async with weida.Runtime() as rt:
            pusher = rt.pusher()
            await pusher.connect(ready[1])
            for body in (b"ok", b"flaky", b"poison"):
                await pusher.send(body)
            lines = {(await proc.stdout.readline()).decode().strip() for _ in range(3)}
        assert lines == {"done ok attempt 1", "done flaky attempt 3", "dead poison after 5"}
        proc.send_signal(signal.SIGINT)
        last = (await proc.stdout.readline()).decode().strip()
        # Nothing was left unfinished and no copy was waiting (each language prints its own).
        assert last.startswith("stopped") and "unfinished" in last, last
        assert re.search(r"unfinished'?:? ?=?0\b", last) and re.search(
            r"copies_dropped'?:? ?=?0\b", last
        ), last
        assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
