"""A job queue served by a handler: a back-off for what can wait, a dead letter at the limit.

Run: python examples/jobs_service.py — prints ``READY <address>`` (push jobs there), serves
until SIGINT or SIGTERM, then finishes the handlers in flight and prints each stop report.
"""

from __future__ import annotations

import asyncio

import weida
from weida.service import App, Job, retry_after


async def main() -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        dead = listener.puller("/dead")  # where a job goes after its fifth attempt
        app = App(rt, drain=10.0)

        @app.queue(listener, "/jobs", concurrency=4, max_attempts=5, dead_letter=dead.address)
        async def work(job: Job) -> None:
            body = job.message.body.decode()
            if body == "poison":
                raise ValueError("cannot parse it")  # a failure: logged, then a retry
            if body == "flaky" and job.attempt < 3:
                raise retry_after(0.05 * job.attempt)  # a copy, one attempt on, after a pause
            print("done", body, "attempt", job.attempt, flush=True)

        async def letters() -> None:
            async for m in dead:
                attempts = (m.meta.get("weida-attempt") or b"?").decode()
                print("dead", m.body.decode(), "after", attempts, flush=True)

        await app.start()
        reader = asyncio.ensure_future(letters())  # ends when the runtime closes
        print("READY", app.registrations[0].address, flush=True)
        print("stopped", await app.run(), flush=True)
        reader.cancel()


asyncio.run(main())
