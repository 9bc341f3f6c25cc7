"""Services: handlers on endpoints (docs/SERVICES.md).

A handler is an ``async def`` taking a :class:`Job` (``job.message``, ``job.attempt``). It
returns normally (processed; on a Rep path, ``bytes`` returned are the reply) or returns or
raises an outcome: :func:`ack`, :func:`retry`, :func:`retry_after`, :func:`drop`. Any other
exception is a failure: logged with the message's peer and path, counted, then a retry. What
each outcome can mean with no broker (an ack completes nothing, a retry is a copy this process
sends) is the core's, the same in every language.

    app = weida.service.App(runtime)

    @app.queue(listener, "/jobs", concurrency=4, max_attempts=5, dead_letter=dead_address)
    async def work(job: weida.service.Job) -> None:
        if not ready(job.message.body):
            raise weida.service.retry_after(2.0 * job.attempt)

    await app.run()  # until app.stop(), SIGINT or SIGTERM
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from ._errors import Closed, WeidaError
from ._weida import Job, Listener, Registration, Runtime, Service

__all__ = [
    "App",
    "Job",
    "Outcome",
    "Registration",
    "Service",
    "ack",
    "drop",
    "logger",
    "retry",
    "retry_after",
    "serve",
]


class Outcome(Exception):
    """What a handler says happened: returned or raised, either is the same."""

    def __init__(self, name: str, delay: float | None = None) -> None:
        super().__init__(name if delay is None else f"{name}({delay})")
        self.name = name
        self.delay = delay


def ack() -> Outcome:
    """Processed. Nothing is completed on a brokerless hop: the registration logs
    ``Unsupported`` once, and counts the message handled."""
    return Outcome("ack")


def drop() -> Outcome:
    """Gone, counted dropped (``Unsupported`` logged once, as for ack)."""
    return Outcome("drop")


def retry() -> Outcome:
    """With no ``max_attempts`` or ``dead_letter`` declared: gone (at most once). With one: a
    copy at once, as ``retry_after(0)``."""
    return Outcome("retry")


def retry_after(seconds: float) -> Outcome:
    """A copy after ``seconds``, waited in this process: a crash before then loses it."""
    return Outcome("retry_after", float(seconds))


Handler = Callable[[Job], Awaitable[Any]]

#: Where the runtime's warnings go: a failure with its peer, path, attempt and reason;
#: ``Unsupported`` once per registration; a message dropped at its limit; a copy not sent.
logger = logging.getLogger("weida.service")


def _log(registration: Registration, warnings: list[str]) -> None:
    for text in warnings:
        logger.warning("%s: %s", registration.address or registration.retry_address, text)


def _conclude(job: Job, result: Any) -> list[str]:
    """What the handler returned, converted: what it then comes to (a refused outcome is a
    failure, a job the handler finished itself is left as it is) is weida-ffi's."""
    if isinstance(result, Outcome):
        return job._conclude(result.name, delay=result.delay)
    if isinstance(result, (bytes, bytearray, memoryview)):
        return job._conclude("reply", body=bytes(result))
    if result is None:
        return job._conclude("done")
    return job._conclude_failed(
        f"the handler returned {type(result).__name__}, not None, bytes or an outcome"
    )


async def _handle(job: Job, handler: Handler, registration: Registration) -> None:
    try:
        result = await handler(job)
    except Outcome as o:
        result = o
    except asyncio.CancelledError:
        _log(registration, job._conclude_failed("the handler was cancelled"))
        raise
    except Exception as e:
        _log(registration, job._conclude_failed(f"{type(e).__name__}: {e}"))
        return
    _log(registration, _conclude(job, result))


async def serve(registration: Registration, handler: Handler) -> None:
    """Runs ``handler`` on every job of ``registration`` until it stops (the registration's
    ``concurrency`` bounds the handlers at once: ``next`` waits for a free one). Returns once
    the registration is stopping and the handlers it started are done."""
    running: set[asyncio.Task[None]] = set()
    try:
        while True:
            try:
                job = await registration.next()
            except Closed:
                break
            except WeidaError:
                continue  # one message the endpoint could not take whole; the next goes on
            task = asyncio.ensure_future(_handle(job, handler, registration))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        _log(registration, registration.take_warnings())


class App:
    """Handlers registered on one runtime's endpoints, started and stopped together.

    Each decorator registers an ``async def`` handler; :meth:`run` starts every registration,
    serves until :meth:`stop` (or SIGINT/SIGTERM where ``run`` installs the handlers), then
    stops them within ``drain`` seconds.
    """

    def __init__(self, runtime: Runtime, *, drain: float = 30.0) -> None:
        self._service = Service(runtime)
        self._drain = drain
        self._pending: list[tuple[Callable[[], Awaitable[Registration]], Handler]] = []
        self.registrations: list[Registration] = []
        self._stopping = asyncio.Event()

    def _add(self, start: Callable[[], Awaitable[Registration]]) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self._pending.append((start, handler))
            return handler

        return register

    def queue(self, listener: Listener, path: str, **settings: Any) -> Callable[[Handler], Handler]:
        """A bound Pull path; copies go to it. ``concurrency``, ``max_attempts``,
        ``dead_letter``."""
        return self._add(lambda: self._service.queue(listener, path, **settings))

    def fan_out(
        self, listener: Listener, path: str, filters: list[str], **settings: Any
    ) -> Callable[[Handler], Handler]:
        """A bound Sub path holding ``filters``; copies come back to it alone."""
        return self._add(lambda: self._service.fan_out(listener, path, filters, **settings))

    def pulling(self, address: str, **settings: Any) -> Callable[[Handler], Handler]:
        """A puller dialling a bound pusher; ``retry_to`` is required."""
        return self._add(lambda: self._service.pulling(address, **settings))

    def subscribing(
        self, address: str, filters: list[str], **settings: Any
    ) -> Callable[[Handler], Handler]:
        """A subscriber dialling a bound publisher, holding ``filters``; ``retry_to`` is
        required."""
        return self._add(lambda: self._service.subscribing(address, filters, **settings))

    def replying(
        self, listener: Listener, path: str, **settings: Any
    ) -> Callable[[Handler], Handler]:
        """A Rep path: bytes returned are the reply; ``retry_to`` is required."""
        return self._add(lambda: self._service.replying(listener, path, **settings))

    async def start(self) -> None:
        """Starts every registration (a refusal raises, and those started are stopped)."""
        try:
            for start, _ in self._pending:
                self.registrations.append(await start())
        except BaseException:
            await asyncio.gather(*(r.stop(0.0) for r in self.registrations))
            raise

    def stop(self) -> None:
        """Asks :meth:`run` to stop (safe from a signal handler)."""
        self._stopping.set()

    async def run(self, *, signals: bool = True) -> list[dict[str, int]]:
        """Starts, serves until :meth:`stop` (or SIGINT/SIGTERM with ``signals``, when run on
        the main thread on Unix), then stops every registration within ``drain`` seconds; each
        one's stop report, in order."""
        if not self.registrations:
            await self.start()
        loop = asyncio.get_running_loop()
        # asyncio installs signal handlers only from the main thread, and only on Unix; a loop
        # run elsewhere ends by stop() alone.
        can = sys.platform != "win32" and threading.current_thread() is threading.main_thread()
        installed = [signal.SIGINT, signal.SIGTERM] if signals and can else []
        for s in installed:
            loop.add_signal_handler(s, self.stop)
        servers = [
            asyncio.ensure_future(serve(r, h))
            for r, (_, h) in zip(self.registrations, self._pending, strict=True)
        ]
        try:
            await self._stopping.wait()
        finally:
            for s in installed:
                loop.remove_signal_handler(s)
            reports = await asyncio.gather(*(r.stop(self._drain) for r in self.registrations))
            # The stops returned (every job done, or the deadline passed): what is still running
            # is cancelled (a job it had not finished then a failure: its copy, past the
            # deadline, dropped and counted), so run returns then, not with the handlers.
            for server in servers:
                server.cancel()
            await asyncio.gather(*servers, return_exceptions=True)
            for r in self.registrations:
                _log(r, r.take_warnings())
        return list(reports)
