#!/usr/bin/env python3
"""A two-process soak of the one-await row (issue 18, docs/PERFORMANCE.md): a puller process and
a pusher process, one ``await`` per send and per receive, as the suite's headline row runs them,
for ``--secs``. The pusher numbers its bodies (an 8-byte big-endian counter, padded to
``--size``) and records every PeerEvent of its address; the puller records its listener's events
and checks that each number arrives once and in order (small messages ride one lane). At the end
the pusher sends an end marker and both print one JSON line; the script prints the verdict and
exits non-zero on a lost connection, a gap, a repeat or a reorder.

    target/bench-venv/bin/python bench/soak/twoproc.py --secs 600            # QUIC, 64 B
    target/bench-venv/bin/python bench/soak/twoproc.py --secs 600 --transport unix

It needs weida's wheel in the interpreter that runs it (bench/suite/setup.sh puts it in
``target/bench-venv``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import weida

END = b"\xff" * 8


def events_of(source: Any, sink: list[dict[str, Any]],
              lost: asyncio.Event | None = None) -> asyncio.Task[None]:
    """Records every event of ``source`` (a listener or an endpoint) as it comes, and sets
    ``lost`` at the first loss."""

    async def read() -> None:
        async for e in source.events():
            sink.append({"kind": e.kind, "url": getattr(e, "url", None),
                         "cause": getattr(e, "cause", None), "at": round(time.monotonic(), 3)})
            if lost is not None and e.kind == "lost":
                lost.set()

    return asyncio.ensure_future(read())


async def pull(a: argparse.Namespace) -> dict[str, Any]:
    if a.transport == "unix":
        bind = f"weida+unix://{tempfile.mkdtemp(prefix='weida-soak-')}/s.sock"
    else:
        bind = "weida://127.0.0.1:0"
    async with weida.Runtime() as server:
        listener = await server.bind(bind)
        events: list[dict[str, Any]] = []
        gone = asyncio.Event()
        watch = events_of(listener, events, gone)
        puller = listener.puller("/soak")
        print("ADDRESS", puller.address, flush=True)
        expected, gaps, repeats, received = 0, 0, 0, 0
        began = None
        while True:
            body = (await puller.recv()).body
            head = bytes(body[:8])
            if head == END:
                break
            if began is None:
                began = time.monotonic()
            n = int.from_bytes(head, "big")
            received += 1
            if n > expected:
                gaps += 1
            elif n < expected:
                repeats += 1
            expected = max(expected, n + 1)
        ended = time.monotonic()
        took = ended - (began or ended)
        # The pusher closes first (after its drain), so that the end is its doing.
        await asyncio.wait_for(gone.wait(), 30)
        watch.cancel()
        return {"role": "pull", "received": received, "highest": expected - 1, "gaps": gaps,
                "repeats_or_reorders": repeats, "seconds": round(took, 1), "ended": ended,
                "msgs_per_s": round(received / took) if took else 0, "events": events}


async def push(a: argparse.Namespace) -> dict[str, Any]:
    async with weida.Runtime() as client:
        pusher = client.pusher()
        events: list[dict[str, Any]] = []
        watch = events_of(pusher, events)
        await pusher.connect(a.address)
        pad = bytes(max(a.size - 8, 0))
        deadline = time.monotonic() + a.secs
        n = 0
        while True:
            await pusher.send(n.to_bytes(8, "big") + pad)
            n += 1
            if n % 4096 == 0 and time.monotonic() >= deadline:
                break
        await pusher.send(END + pad)
        ended = time.monotonic()
        # The drain ends the connection: the listener closes it after the drain's GOAWAY
        # (peer_closed), and the slot gives up (locally_closed), after `ended`.
        await client.drain(10.0)
        watch.cancel()
        return {"role": "push", "sent": n, "ended": ended, "events": events}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--secs", type=float, default=600)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--transport", choices=("quic", "unix"), default="quic")
    ap.add_argument("--role", choices=("both", "pull", "push"), default="both")
    ap.add_argument("--address")
    a = ap.parse_args()
    if a.role == "pull":
        print(json.dumps(asyncio.run(pull(a))), flush=True)
        return 0
    if a.role == "push":
        print(json.dumps(asyncio.run(push(a))), flush=True)
        return 0
    me = [sys.executable, os.path.abspath(__file__), "--secs", str(a.secs), "--size", str(a.size),
          "--transport", a.transport]
    puller = subprocess.Popen(me + ["--role", "pull"], stdout=subprocess.PIPE, text=True)
    assert puller.stdout is not None
    address = puller.stdout.readline().split()[1]
    pushed = subprocess.run(me + ["--role", "push", "--address", address],
                            stdout=subprocess.PIPE, text=True, check=True)
    push_result = json.loads(pushed.stdout.strip().splitlines()[-1])
    pull_result = json.loads(puller.stdout.read().strip().splitlines()[-1])
    puller.wait()
    # A connection lost during the run is any loss, retry or give-up before the side's end
    # (CLOCK_MONOTONIC is one clock for both processes); after it, the drain ends the
    # connection, and a retry then is a failure too.
    lost = [e for e in push_result["events"]
            if e["kind"] in ("lost", "retrying", "gave_up") and e["at"] < push_result["ended"]
            or e["kind"] == "retrying"]
    # The listener may learn of the drain's end before its puller read the last messages
    # (over AF_UNIX they wait in the kernel), so its losses are measured against the pusher's end.
    lost += [e for e in pull_result["events"]
             if e["kind"] == "lost" and e["at"] < push_result["ended"]]
    ok = (not lost and pull_result["gaps"] == 0 and pull_result["repeats_or_reorders"] == 0
          and pull_result["received"] == push_result["sent"])
    print(json.dumps({"ok": ok, "transport": a.transport, "size": a.size, "sent": push_result["sent"],
                      "received": pull_result["received"], "gaps": pull_result["gaps"],
                      "repeats_or_reorders": pull_result["repeats_or_reorders"],
                      "seconds": pull_result["seconds"], "msgs_per_s": pull_result["msgs_per_s"],
                      "lost_events": lost, "listener_events": pull_result["events"],
                      "pusher_events": push_result["events"]}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
