#!/usr/bin/env python3
"""What subscribers can cost a publisher: one subscriber that tries to hold 100,000 filters, then
1,000 subscribers that subscribe and never read, while a good subscriber of the same publisher
receives. Each side is its own process, as users run it: the publisher (a Python script on the
release binding), the good subscriber, the filter attacker, and the stalled subscribers (one
`weida.Runtime`, so one connection, each).

    python3 bench/isolation/subscribers.py [--stalled 1000] [--filters 100000] [--rate 1000]
                                           [--seconds 5] [--size 64] [--rounds 3]
                                           [--max-udp-payload 65527]

Needs the Python binding in `target/py-venv` (./dev python). The publisher publishes `--size`
byte copies on topic `t` at `--rate` a second for `--seconds`, `--rounds` times per state; each
copy carries its publish time (CLOCK_MONOTONIC, one clock for every process of the machine) and
its number, and the good subscriber reports the median over rounds of each round's p50 and p99
latency, and the copies of the round it got (waiting for the round's last one, or for a second
with none). `--max-udp-payload` is the publisher's `Limits.max_udp_payload`. The stalled
subscribers take a small stream window (16 KiB) and a queue of one, as an attacker who wants
the publisher to hold its copies would: what they do not read then waits in the publisher,
bounded per subscriber by `endpoint_queue` (256 copies) and `subscriber_buffer_bytes` (1 MiB);
beyond that each copy is dropped and counted, which the table gives from `publisher.dropped()`.
The resident set is read from /proc (VmRSS) once it has been steady for five 100 ms samples: a
measurement's settling rule, not synchronisation of anything a test asserts. Prints Markdown
tables and the command.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from procs import child, raise_fd_limit, say, steady

# The publisher: `subscribers N` waits until N subscribers are connected; `publish RATE SECS
# SIZE` publishes and prints how many it published and its drop counters since its start.
PUBLISHER = r"""
import asyncio, struct, sys, time, weida
async def main():
    rt = weida.Runtime(limits=weida.Limits(max_udp_payload=int(sys.argv[1])))
    listener = await rt.bind("weida://127.0.0.1:0")
    pub = listener.publisher("/feed")
    print(pub.address, flush=True)
    loop = asyncio.get_running_loop()
    seq = 0
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
        if not line:
            break
        if line[0] == "subscribers":
            await pub._until_subscribers(int(line[1]))
            print("ok", flush=True)
            continue
        if line[0] == "gone":
            while pub.subscriber_count > int(line[1]):
                await asyncio.sleep(0.01)
            print("ok", flush=True)
            continue
        rate, secs, size = int(line[1]), float(line[2]), int(line[3])
        pad = b"x" * max(0, size - 16)
        first, start, n = seq, time.monotonic(), 0
        while (now := time.monotonic()) - start < secs:
            due = int((now - start) * rate)
            while n < due:
                pub.publish("t", struct.pack("<qq", time.monotonic_ns(), seq) + pad)
                n, seq = n + 1, seq + 1
            await asyncio.sleep(0.005)
        d = pub.dropped()
        print(first, seq - 1, d.queue_full, d.byte_budget, d.dead_subscriber, d.total, flush=True)
asyncio.run(main())
"""

# The good subscriber: receives all along; `report FIRST LAST` waits for copy LAST (or a second
# with no copy), then prints how many of copies FIRST..LAST it got and the p50, p99 of their
# latency (µs).
GOOD = r"""
import asyncio, struct, sys, time, weida
async def main():
    rt = weida.Runtime()
    sub = rt.subscriber()
    await sub.connect(sys.argv[1])
    await sub.subscribe("t")
    print("subscribed", flush=True)
    lat = {}
    last = [-1, time.monotonic()]
    async def receive():
        while True:
            m = await sub.recv()
            sent, seq = struct.unpack("<qq", m.body[:16])
            lat[seq] = (time.monotonic_ns() - sent) / 1000
            last[:] = [seq, time.monotonic()]
    task = asyncio.create_task(receive())
    loop = asyncio.get_running_loop()
    while line := (await loop.run_in_executor(None, sys.stdin.readline)).split():
        first, end = int(line[1]), int(line[2])
        while last[0] < end and time.monotonic() - last[1] < 1.0:
            await asyncio.sleep(0.01)
        got = sorted(v for k, v in lat.items() if first <= k <= end)
        p50 = got[len(got) // 2] if got else 0
        p99 = got[min(len(got) - 1, len(got) * 99 // 100)] if got else 0
        print(len(got), p50, p99, flush=True)
    task.cancel()
asyncio.run(main())
"""

# The filter attacker: one subscriber, `filters N` tries N distinct filters and prints how many
# were held and what refused the others.
FILTERS = r"""
import asyncio, sys, weida
async def main():
    rt = weida.Runtime()
    sub = rt.subscriber()
    await sub.connect(sys.argv[1])
    print("connected", flush=True)
    n = int(sys.stdin.readline().split()[1])
    held, refused = 0, {}
    for i in range(n):
        try:
            await sub.subscribe(f"f.{i}")
            held += 1
        except weida.WeidaError as e:
            key = type(e).__name__ + (" (max_filters)" if "max_filters" in str(e) else "")
            refused[key] = refused.get(key, 0) + 1
    kinds = ", ".join(f"{v:,} {k}" for k, v in refused.items()) or "none"
    print(held, len(sub.filters), kinds, flush=True)
    sys.stdin.readline()
asyncio.run(main())
"""

# The stalled subscribers: N connections that subscribe to `t` and never read.
STALLED = r"""
import asyncio, sys, weida
address, n = sys.argv[1], int(sys.argv[2])
limits = weida.Limits(stream_receive_window=16384, connection_receive_window=65536)
async def one():
    rt = weida.Runtime(limits=limits, reconnect=weida.ReconnectPolicy.never())
    sub = rt.subscriber(endpoint_queue=1)
    await sub.connect(address)
    await sub.subscribe("t")
    return rt, sub
async def main():
    held = []
    while len(held) < n:
        held += await asyncio.gather(*(one() for _ in range(min(50, n - len(held)))))
    print("subscribed", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await asyncio.gather(*(rt.close() for rt, _ in held))
asyncio.run(main())
"""


# Three empty cells: copies, p50, p99.
EMPTY = " |  | "


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stalled", type=int, default=1000)
    ap.add_argument("--filters", type=int, default=100_000)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-udp-payload", type=int, default=65527, help="the publisher's")
    a = ap.parse_args()
    load = os.getloadavg()[0]
    raise_fd_limit(a.stalled + 256)
    publisher = child(PUBLISHER, str(a.max_udp_payload))
    procs = [publisher]
    filters_row, rows = "", []

    def row(state: str, rss: int, per: str, lat: str, dropped: str) -> None:
        rows.append(f"| {state} | {rss:,} KiB | {per} | {lat} | {dropped} |")
        print(rows[-1], file=sys.stderr, flush=True)

    def rounds(good: subprocess.Popen[str]) -> tuple[str, str]:
        runs, drops = [], ""
        for _ in range(a.rounds):
            first, end, *d = say(publisher, f"publish {a.rate} {a.seconds} {a.size}").split()
            got, p50, p99 = say(good, f"report {first} {end}").split()
            runs.append((int(got), int(end) - int(first) + 1, float(p50), float(p99)))
            drops = "queue full {}, byte budget {}, dead {}, total {}".format(
                *(f"{int(x):,}" for x in d)
            )
        got_of = ", ".join(f"{g:,}/{p:,}" for g, p, _, _ in runs)
        p50 = statistics.median(r[2] for r in runs)
        p99 = statistics.median(r[3] for r in runs)
        return f"{got_of} | {p50:,.0f} µs | {p99:,.0f} µs", drops

    try:
        assert publisher.stdout is not None
        address = publisher.stdout.readline().strip()
        base = steady(publisher.pid)
        row("bound, no subscriber", base, "", EMPTY, "")
        if a.filters:
            attacker = child(FILTERS, address)
            procs.append(attacker)
            assert attacker.stdout is not None
            assert attacker.stdout.readline().strip() == "connected"
            one = steady(publisher.pid)
            t0 = time.monotonic()
            held, listed, refused = say(attacker, f"filters {a.filters}").split(maxsplit=2)
            took = time.monotonic() - t0
            full = steady(publisher.pid)
            filters_row = (
                f"| {a.filters:,} | {int(held):,} (the subscriber lists {int(listed):,}) "
                f"| {refused} | {took:.1f} s | {one:,} → {full:,} KiB "
                f"({(full - one) * 1024 / max(1, int(held)):,.0f} B per filter held) |"
            )
            print(filters_row, file=sys.stderr, flush=True)
            say(attacker, "")
            attacker.wait()
        good = child(GOOD, address)
        procs.append(good)
        assert good.stdout is not None and good.stdout.readline().strip() == "subscribed"
        alone = steady(publisher.pid)
        lat, drops = rounds(good)
        row("the good subscriber alone", alone, "", lat, drops)
        stalled = child(STALLED, address, str(a.stalled))
        procs.append(stalled)
        assert stalled.stdout is not None
        assert stalled.stdout.readline().strip() == "subscribed"
        assert say(publisher, f"subscribers {a.stalled + 1}") == "ok"
        connected = steady(publisher.pid)
        per_sub = (connected - alone) / a.stalled
        state = f"{a.stalled:,} stalled subscribers, nothing published"
        row(state, connected, f"{per_sub:.1f} KiB per subscriber", EMPTY, "")
        lat, drops = rounds(good)
        full = steady(publisher.pid)
        per_stalled = (full - connected) / a.stalled
        state = f"{a.stalled:,} stalled subscribers, publishing"
        row(state, full, f"{per_stalled:.1f} KiB per stalled subscriber", lat, drops)
        say(stalled, "")
        stalled.wait()
        assert say(publisher, "gone 1") == "ok"
        lat, drops = rounds(good)
        row("the stalled subscribers gone", steady(publisher.pid), "", lat, drops)
    finally:
        for p in procs:
            p.kill()
    args = (
        f"--stalled {a.stalled} --filters {a.filters} --rate {a.rate} --seconds {a.seconds:g}"
        f" --size {a.size} --rounds {a.rounds} --max-udp-payload {a.max_udp_payload}"
    )
    print(f"`python3 bench/isolation/subscribers.py {args}` (1-minute load before: {load:.2f})\n")
    if filters_row:
        print("| filters tried | held | refused | took | publisher resident set |")
        print("| ---: | ---: | --- | ---: | ---: |")
        print(filters_row + "\n")
    print(
        "| state | publisher resident set | per unit | good subscriber: copies got/published "
        "per round | p50 | p99 | publisher.dropped() since its start |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
