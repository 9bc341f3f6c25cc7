"""weida next to pyzmq (zmq.asyncio) in one run: Push/Pull messages/s at 64 B and 1 KiB, and
Req/Rep round-trip p50/p99 at 64 B. Both sides of each case run in this one process and one
event loop, as the Rust bench does (bench/README.md).

    python bench/bench.py [--quick] [--secs S] [--reps N]

weida rows: QUIC (weida://127.0.0.1), AF_UNIX and in process; "batch" uses send_many /
recv_many (256 per call), "single" one await per message. pyzmq rows: PUSH/PULL and REQ/REP
over tcp://127.0.0.1 and ipc://. Each cell is the median over the repetitions.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

import weida

try:
    import zmq
    import zmq.asyncio
except ImportError:  # the weida rows still run
    zmq = None  # type: ignore[assignment]

BATCH = 256


def tmp(name: str) -> str:
    return os.path.join(tempfile.mkdtemp(prefix="weida-bench-"), name)


def weida_bind(transport: str) -> str:
    return {
        "quic": "weida://127.0.0.1:0",
        "unix": f"weida+unix://{tmp('s.sock')}",
        "inproc": f"weida+inproc://bench-{os.getpid()}-{time.monotonic_ns()}",
    }[transport]


async def windowed(
    send: Callable[[], Awaitable[None]], recv: Callable[[], Awaitable[int]], secs: float
) -> float:
    """Messages/s received whole during `secs`, the sender running back to back."""
    stop = False

    async def sender() -> None:
        while not stop:
            await send()

    task = asyncio.ensure_future(sender())
    warm_until = time.perf_counter() + min(0.2, secs / 2)
    while time.perf_counter() < warm_until:
        await recv()
    n = 0
    t0 = time.perf_counter()
    end = t0 + secs
    while (now := time.perf_counter()) < end:
        n += await recv()
    stop = True
    rate = n / (now - t0)
    # Let the sender see `stop`; what it still sends is dropped with the runtime.
    try:
        await asyncio.wait_for(recv(), 1)
    except TimeoutError:
        pass
    task.cancel()
    return rate


async def weida_push_pull(transport: str, size: int, batch: bool, secs: float) -> float:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(weida_bind(transport))
        puller = listener.puller("/jobs")
        pusher = client.pusher()
        await pusher.connect(puller.address)
        body = b"x" * size
        bodies = [body] * BATCH
        if batch:

            async def send() -> None:
                await pusher.send_many(bodies)

            async def recv() -> int:
                return len(await puller.recv_many(BATCH))

        else:

            async def send() -> None:
                await pusher.send(body)

            async def recv() -> int:
                await puller.recv()
                return 1

        return await windowed(send, recv, secs)


async def zmq_push_pull(endpoint: str, size: int, secs: float) -> float:
    ctx = zmq.asyncio.Context()
    pull = ctx.socket(zmq.PULL)
    push = ctx.socket(zmq.PUSH)
    try:
        pull.bind(endpoint)
        push.connect(pull.getsockopt_string(zmq.LAST_ENDPOINT))
        body = b"x" * size

        async def send() -> None:
            await push.send(body)

        async def recv() -> int:
            await pull.recv()
            return 1

        return await windowed(send, recv, secs)
    finally:
        push.close(linger=0)
        pull.close(linger=0)
        ctx.term()


async def round_trips(request: Callable[[], Awaitable[object]], secs: float) -> tuple[float, float]:
    """p50 and p99 of round trips in microseconds, one request outstanding."""
    for _ in range(200):
        await request()
    lat = []
    end = time.perf_counter() + secs
    while time.perf_counter() < end:
        t = time.perf_counter()
        await request()
        lat.append(time.perf_counter() - t)
    lat.sort()
    return lat[len(lat) // 2] * 1e6, lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e6


async def weida_req_rep(transport: str, secs: float) -> tuple[float, float]:
    async with weida.Runtime() as server, weida.Runtime() as client:
        listener = await server.bind(weida_bind(transport))
        replier = listener.replier("/echo")

        async def serve() -> None:
            async for ex in replier:
                await ex.reply(await ex.take_body())

        task = asyncio.ensure_future(serve())
        req = client.requester()
        await req.connect(replier.address)
        body = b"x" * 64
        try:
            return await round_trips(lambda: req.request(body), secs)
        finally:
            task.cancel()


async def zmq_req_rep(endpoint: str, secs: float) -> tuple[float, float]:
    ctx = zmq.asyncio.Context()
    rep = ctx.socket(zmq.REP)
    req = ctx.socket(zmq.REQ)
    try:
        rep.bind(endpoint)
        req.connect(rep.getsockopt_string(zmq.LAST_ENDPOINT))

        async def serve() -> None:
            while True:
                await rep.send(await rep.recv())

        task = asyncio.ensure_future(serve())
        body = b"x" * 64

        async def request() -> bytes:
            await req.send(body)
            reply: bytes = await req.recv()
            return reply

        try:
            return await round_trips(request, secs)
        finally:
            task.cancel()
    finally:
        req.close(linger=0)
        rep.close(linger=0)
        ctx.term()


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: short windows, 1 rep")
    ap.add_argument("--secs", type=float, default=1.0, help="measured window per cell")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per cell (median)")
    args = ap.parse_args()
    secs, reps = (0.2, 1) if args.quick else (args.secs, args.reps)
    print(f"# {' '.join(sys.argv)}")
    print(
        f"# {platform.node()} nproc={os.cpu_count()} python={platform.python_version()} "
        f"weida={weida.__version__} pyzmq={zmq.__version__ if zmq else 'absent'} "
        f"loadavg={os.getloadavg()[0]:.2f} secs={secs} reps={reps}"
    )
    cases: list[tuple[str, int, Callable[[], Awaitable[float]]]] = []
    for size in (64, 1024):
        for t in ("quic", "unix", "inproc"):
            for batch in (True, False):
                kind = "batch" if batch else "single"
                run: Callable[[], Awaitable[float]] = functools.partial(
                    weida_push_pull, t, size, batch, secs
                )
                cases.append((f"weida {t} {kind} {size} B", size, run))
        if zmq is not None:
            for name, ep in (("tcp", "tcp://127.0.0.1:*"), ("ipc", f"ipc://{tmp('z.ipc')}")):
                cases.append(
                    (
                        f"pyzmq {name} {size} B",
                        size,
                        functools.partial(zmq_push_pull, ep, size, secs),
                    )
                )
    print("\n## Push/Pull, messages/s (median)\n")
    print("| case | msgs/s | MB/s |\n|---|---:|---:|")
    for name, size, run in cases:
        rates = [await run() for _ in range(reps)]
        m = statistics.median(rates)
        print(f"| {name} | {m:,.0f} | {m * size / 1e6:.1f} |", flush=True)
    rr: list[tuple[str, Callable[[], Awaitable[tuple[float, float]]]]] = [
        (f"weida {t}", functools.partial(weida_req_rep, t, secs))
        for t in ("quic", "unix", "inproc")
    ]
    if zmq is not None:
        rr += [
            ("pyzmq tcp", functools.partial(zmq_req_rep, "tcp://127.0.0.1:*", secs)),
            ("pyzmq ipc", functools.partial(zmq_req_rep, f"ipc://{tmp('r.ipc')}", secs)),
        ]
    print("\n## Req/Rep 64 B, round trip (median of reps)\n")
    print("| case | p50 µs | p99 µs |\n|---|---:|---:|")
    for name, trip in rr:
        res = [await trip() for _ in range(reps)]
        p50 = statistics.median(r[0] for r in res)
        p99 = statistics.median(r[1] for r in res)
        print(f"| {name} | {p50:.1f} | {p99:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
