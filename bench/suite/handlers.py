#!/usr/bin/env python3
"""Handler throughput next to the bare receive loop (issue 22, docs/SERVICES.md), two processes.

    python3 bench/suite/handlers.py [--reps 5] [--secs 1.5] [--size 64] [--transport quic]
                                    [--json PATH]

Each row is weida-bench's two-process Push/Pull (`--one --bench push_pull --system weida`): a
pusher process sending flat out, and a puller process that measures messages received per
second, either with its bare `recv` loop or served as a queue registration with N no-op
handlers (`--handlers N`: 1 and 16). Every repetition runs the three rows in a rotated order, so
drift on a shared machine falls on all alike; it prints each row's median and the median
(min-max) of its per-repetition ratio to the bare loop of the same repetition. Needs
`target/release/weida-bench` (`cargo build --release -p weida-bench`). Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "target" / "release" / "weida-bench"
ROWS: list[tuple[str, list[str]]] = [
    ("recv loop", []),
    ("handlers, concurrency 1", ["--handlers", "1"]),
    ("handlers, concurrency 16", ["--handlers", "16"]),
]


def once(extra: list[str], a: argparse.Namespace) -> float:
    """Messages per second the puller measured in one two-process run."""
    common = [
        str(BENCH),
        "--one",
        "--bench",
        "push_pull",
        "--system",
        "weida",
        "--transport",
        a.transport,
        "--size",
        str(a.size),
        "--secs",
        str(a.secs),
        "--warmup",
        str(a.warmup),
    ]
    bind = subprocess.Popen([*common, "--role", "bind", *extra], stdout=subprocess.PIPE, text=True)
    assert bind.stdout is not None
    dial = None
    try:
        for line in bind.stdout:
            if line.startswith("ADDRESS "):
                address = line.split(None, 1)[1].strip()
                dial = subprocess.Popen(
                    [*common, "--role", "dial", "--address", address], stdout=subprocess.DEVNULL
                )
            elif line.startswith("{"):
                return float(json.loads(line)["msgs_per_s"])
        raise RuntimeError(f"the puller ended without a result (status {bind.wait()})")
    finally:
        for p in (dial, bind):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--secs", type=float, default=1.5)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--transport", choices=("quic", "unix"), default="quic")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if not BENCH.exists():
        print(f"build it first: cargo build --release -p weida-bench ({BENCH})", file=sys.stderr)
        return 2
    rates: dict[str, list[float]] = {name: [] for name, _ in ROWS}
    for rep in range(a.reps):
        order = ROWS[rep % len(ROWS) :] + ROWS[: rep % len(ROWS)]
        for name, extra in order:
            rates[name].append(once(extra, a))
        print(
            f"rep {rep + 1}: " + ", ".join(f"{n} {rates[n][-1]:,.0f}" for n, _ in ROWS), flush=True
        )
    base = rates[ROWS[0][0]]
    print(f"\n{a.size} B over {a.transport}, two processes, medians of {a.reps}:")
    out = []
    for name, _ in ROWS:
        ratios = [r / b for r, b in zip(rates[name], base, strict=True)]
        med = statistics.median(rates[name])
        print(
            f"  {name:26} {med:>12,.0f} msg/s   x{statistics.median(ratios):.2f} "
            f"({min(ratios):.2f}-{max(ratios):.2f}) of the recv loop"
        )
        out.append({"row": name, "msgs_per_sec": rates[name], "ratio_to_recv_loop": ratios})
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(
            json.dumps(
                {"command": sys.argv, "size": a.size, "transport": a.transport, "rows": out},
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
