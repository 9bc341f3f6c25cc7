#!/usr/bin/env python3
"""A flood of connections and stalled requests at one listener, and what a well-behaved peer of
the same endpoint sees meanwhile: the resident set of a `weida rep` process (its own process, as
users run it) and the request latency of a good requester in another process, with no attack,
while an attacker process holds 1,000 idle connections, then while each of them also holds a
stalled request (a header and part of a body, never finished), then while it tries more
connections than `max_connections` (1024) allows, and once it is gone.

    python3 bench/isolation/flood.py [--connections 1000] [--stalled 1] [--body 1024]
                                     [--extra 40] [--requests 2000] [--rounds 3]
                                     [--concurrency 16]

Needs `target/release/weida` (cargo build --release -p weida-cli) and the Python binding in
`target/py-venv` (./dev python). The attacker is one child process with one `weida.Runtime`
(one UDP socket, one connection) per attacking connection; the good requester is another, with
one connection, 64 B requests one after another. Latency is the median over `--rounds` rounds of
each round's p50 and p99. `weida rep` reads every request as it comes and answers up to
`--concurrency` read ones at once, so stalled requests hold no answer slot (`--concurrency 16`,
its default, shows it). The resident set is read from /proc (VmRSS)
once it has been steady for five 100 ms samples: a measurement's settling rule, not
synchronisation of anything a test asserts. Prints Markdown tables and the command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

from procs import WEIDA_BIN, child, raise_fd_limit, say, steady

# The good requester: `measure N DEADLINE` runs up to N sequential 64 B requests (stopping at
# DEADLINE seconds) and prints the count, p50, p99 and max in microseconds.
GOOD = r"""
import asyncio, sys, time, weida
async def main():
    rt = weida.Runtime()
    req = rt.requester()
    await req.connect(sys.argv[1])
    print("connected", flush=True)
    body = b"x" * 64
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line.strip():
            break
        _, n, deadline = line.split()
        end = time.monotonic() + float(deadline)
        lat = []
        while len(lat) < int(n) and time.monotonic() < end:
            t0 = time.perf_counter_ns()
            try:
                await asyncio.wait_for(req.request(body), end - time.monotonic())
            except asyncio.TimeoutError:
                break
            lat.append((time.perf_counter_ns() - t0) / 1000)
        lat.sort()
        if lat:
            p50, p99 = lat[len(lat) // 2], lat[min(len(lat) - 1, len(lat) * 99 // 100)]
            print(len(lat), p50, p99, lat[-1], flush=True)
        else:
            print(0, 0, 0, 0, flush=True)
asyncio.run(main())
"""

# The attacker: N connections (one runtime each), then on a line a stalled request on each,
# then on a line `extra M`: M more connections, counting those refused.
ATTACKER = r"""
import asyncio, sys, weida
address, n_conn, stalled, body = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
async def dial():
    rt = weida.Runtime(reconnect=weida.ReconnectPolicy.never())
    r = rt.requester()
    await r.connect(address)
    return rt, r
async def main():
    loop = asyncio.get_running_loop()
    peers = []
    while len(peers) < n_conn:
        batch = min(50, n_conn - len(peers))
        peers += await asyncio.gather(*(dial() for _ in range(batch)))
    print("connected", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    held = []
    for rt, r in peers:
        for _ in range(stalled):
            t, reply = await r.open()
            await t.write(b"x" * body)
            held.append((t, reply))
    print("stalled", flush=True)
    line = await loop.run_in_executor(None, sys.stdin.readline)
    extra = int(line.split()[1])
    ok, refused = 0, {}
    for _ in range(extra):
        try:
            peers.append(await dial())
            ok += 1
        except weida.WeidaError as e:
            key = type(e).__name__ + (" (max_connections)" if "max_connections" in str(e) else "")
            refused[key] = refused.get(key, 0) + 1
    kinds = ", ".join(f"{v} {k}" for k, v in refused.items()) or "none"
    print("extra", ok, kinds, flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    await asyncio.gather(*(rt.close() for rt, _ in peers))
asyncio.run(main())
"""


def latency(good: subprocess.Popen[str], n: int, rounds: int, deadline: float) -> str:
    """The median over `rounds` of each round's p50 and p99 (µs), or what a round managed."""
    runs = []
    for _ in range(rounds):
        count, p50, p99, worst = (float(x) for x in say(good, f"measure {n} {deadline}").split())
        runs.append((int(count), p50, p99, worst))
    if all(c == n for c, *_ in runs):
        p50 = statistics.median(r[1] for r in runs)
        p99 = statistics.median(r[2] for r in runs)
        return f"{p50:,.0f} µs | {p99:,.0f} µs |"
    if all(c == 0 for c, *_ in runs):
        return f"none of {n:,} answered within {deadline:g} s, in each of {rounds} rounds | |"
    done = ", ".join(f"{c:,} of {n:,} (max {w / 1e6:.1f} s)" for c, _, _, w in runs)
    return f"{done} within {deadline:g} s each | |"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--stalled", type=int, default=1)
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--extra", type=int, default=40)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--deadline", type=float, default=20.0, help="seconds per round at most")
    a = ap.parse_args()
    load = os.getloadavg()[0]
    raise_fd_limit(a.connections + a.extra + 256)
    rep = subprocess.Popen(
        [
            WEIDA_BIN,
            "rep",
            "--echo",
            "--quiet",
            "--ready",
            "--concurrency",
            str(a.concurrency),
            "weida://127.0.0.1:0/echo",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    procs: list[subprocess.Popen[str]] = [rep]
    rows: list[str] = []

    def row(state: str, rss: int, per: str, lat: str) -> None:
        rows.append(f"| {state} | {rss:,} KiB | {per} | {lat}")
        print(rows[-1], file=sys.stderr, flush=True)

    try:
        assert rep.stdout is not None
        ready = rep.stdout.readline().split()
        assert ready[0] == "READY", ready
        address = ready[1]
        base = steady(rep.pid)
        row("bound, no peer", base, "", " | |")
        good = child(GOOD, address)
        procs.append(good)
        assert good.stdout is not None and good.stdout.readline().strip() == "connected"
        lat = latency(good, a.requests, a.rounds, a.deadline)
        alone = steady(rep.pid)
        row("the good requester alone", alone, "", lat)
        attacker = child(ATTACKER, address, str(a.connections), str(a.stalled), str(a.body))
        procs.append(attacker)
        assert attacker.stdout is not None
        assert attacker.stdout.readline().strip() == "connected"
        connected = steady(rep.pid)
        per_conn = (connected - alone) / a.connections
        lat = latency(good, a.requests, a.rounds, a.deadline)
        state = f"{a.connections:,} idle connections"
        row(state, connected, f"{per_conn:.1f} KiB per connection", lat)
        assert say(attacker, "") == "stalled"
        stalled = steady(rep.pid)
        n = a.connections * a.stalled
        per_stream = (stalled - connected) / n
        lat = latency(good, a.requests, a.rounds, a.deadline)
        state = f"{n:,} stalled requests ({a.stalled} per connection, {a.body} B each)"
        row(state, stalled, f"{per_stream:.1f} KiB per stalled request", lat)
        extra = say(attacker, f"extra {a.extra}").split(maxsplit=2)
        held = 1 + a.connections + int(extra[1])
        lat = latency(good, a.requests, a.rounds, a.deadline)
        state = (
            f"{a.extra} more connections tried: {extra[1]} held ({held:,} in all), "
            f"refused: {extra[2]}"
        )
        row(state, steady(rep.pid), "", lat)
        assert attacker.stdin is not None
        attacker.stdin.write("\n")
        attacker.stdin.flush()
        attacker.wait()
        lat = latency(good, a.requests, a.rounds, a.deadline)
        row("the attacker gone", steady(rep.pid), "", lat)
    finally:
        for p in procs:
            p.kill()
    command = "python3 bench/isolation/flood.py"
    args = (
        f"--connections {a.connections} --stalled {a.stalled} --body {a.body} --extra {a.extra}"
        f" --requests {a.requests} --rounds {a.rounds} --concurrency {a.concurrency}"
        f" --deadline {a.deadline:g}"
    )
    print(f"`{command} {args}` (1-minute load before: {load:.2f})\n")
    print("| state | `weida rep` resident set | per unit | good requester p50 | p99 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
