"""The demo's worker, in Python: a puller at /jobs that takes the jobs pushed to it.

Started by demo/run.py (``./dev demo``) with the number of jobs to expect. It binds loopback
with an ephemeral key, prints ``READY <address>``, receives until its stdin closes (then at most
two seconds more for jobs already here), and prints ``RESULT <json>``: the jobs it received and
the key of whoever pushed each.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

import weida


def say(line: str) -> None:
    print(line, flush=True)


async def work(jobs: weida.Puller, expected: int, received: list[dict[str, Any]]) -> None:
    async for msg in jobs:
        job = (msg.meta.get("job") or b"?").decode()
        peer = msg.meta.peer
        sender = peer.fingerprint if isinstance(peer, weida.PeerKey) else repr(peer)
        received.append({"job": job, "body": msg.body.decode(), "peer": sender})
        say(f"job {job}: {msg.body.decode()} (pushed by {sender})")
        if len(received) == expected:
            return


async def main(expected: int) -> None:
    async with weida.Runtime() as rt:
        listener = await rt.bind("weida://127.0.0.1:0")
        jobs = listener.puller("/jobs")
        say(f"READY {jobs.address}")
        say(f"pulling /jobs as {rt.fingerprint}, expecting {expected}")
        received: list[dict[str, Any]] = []
        task = asyncio.ensure_future(work(jobs, expected, received))
        # Stay up until the demo closes our stdin: the pusher's receipts need this side's
        # transport to acknowledge what it received.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        # Every receipt resolved before the demo closed stdin, so what is missing is queued
        # here, not on its way.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(task, 2)
        task.cancel()
        say(f"RESULT {json.dumps({'fingerprint': rt.fingerprint, 'received': received})}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
