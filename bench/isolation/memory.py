#!/usr/bin/env python3
"""What a hostile peer costs a listener in memory: the resident set of a `weida pull` process
(its own process, as users run it) while other processes' connections sit idle, then while each
holds stalled transfers (a header and some body, never finished), then after the listener's
`body_idle_timeout` reset them.

    python3 bench/isolation/memory.py [--connections 50] [--stalled 32] [--body 1024]

Needs `target/release/weida` (cargo build --release -p weida-cli) and the Python binding in
`target/py-venv` (./dev python); the attacking peers run in that venv, one runtime (one
connection) each, in a child process. Prints a Markdown table and the command. The resident
set is read from /proc/<pid>/status (VmRSS) once it has been steady for five 100 ms samples:
a measurement's settling rule, not synchronisation of anything the test asserts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from procs import WEIDA_BIN, child, steady

ATTACKER = r"""
import asyncio, sys, weida
address, n_conn, stalled, body = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
async def main():
    peers = []
    for _ in range(n_conn):
        rt = weida.Runtime()
        p = rt.pusher()
        await p.connect(address)
        peers.append((rt, p, []))
    print("connected", flush=True)
    sys.stdin.readline()
    for rt, p, held in peers:
        for _ in range(stalled):
            t = await p.open()
            await t.write(b"x" * body)
            held.append(t)
    print("stalled", flush=True)
    sys.stdin.readline()
asyncio.run(main())
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--stalled", type=int, default=32)
    ap.add_argument("--body", type=int, default=1024)
    a = ap.parse_args()
    pull = subprocess.Popen(
        [WEIDA_BIN, "pull", "--quiet", "--ready", "weida://127.0.0.1:0/jobs"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        ready = pull.stdout.readline().split()
        assert ready[0] == "READY", ready
        address = ready[1]
        base = steady(pull.pid)
        attacker = child(ATTACKER, address, str(a.connections), str(a.stalled), str(a.body))
        assert attacker.stdout.readline().strip() == "connected"
        connected = steady(pull.pid)
        attacker.stdin.write("\n")
        attacker.stdin.flush()
        assert attacker.stdout.readline().strip() == "stalled"
        stalled = steady(pull.pid)
        attacker.stdin.write("\n")
        attacker.stdin.flush()
        attacker.wait()
        gone = steady(pull.pid)
    finally:
        pull.kill()
    n = a.connections * a.stalled
    per_conn = (connected - base) / a.connections
    per_stream = (stalled - connected) / n
    command = "python3 bench/isolation/memory.py"
    print(f"`{command} --connections {a.connections} --stalled {a.stalled} --body {a.body}`\n")
    print("| state | `weida pull` resident set | per unit |")
    print("| --- | ---: | ---: |")
    print(f"| bound, no peer | {base:,} KiB | |")
    conns = f"{a.connections} idle connections"
    print(f"| {conns} | {connected:,} KiB | {per_conn:.1f} KiB per connection |")
    held = f"{n:,} stalled transfers ({a.stalled} per connection, {a.body} B each)"
    print(f"| {held} | {stalled:,} KiB | {per_stream:.1f} KiB per stalled transfer |")
    print(f"| the peers gone | {gone:,} KiB | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
