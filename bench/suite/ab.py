#!/usr/bin/env python3
"""A/B of weida against itself: the same rows from two checkouts, alternated in one sitting.

    python3 bench/suite/ab.py --a /path/to/before --b /path/to/after [--reps 5] [--secs 1.5]

Each checkout must be built as the suite builds it: `target/release/weida-bench`
(`cargo build --release -p weida-bench`), the Python wheel installed in `target/py-venv`
(`./dev python`, or the `python_env` and `python_build` steps of ./dev), and the Node package in
`node/` (`cd node && npm ci && npm run build`). The rows are the suite's workers (bench/suite/,
both ends in one process) from each checkout: Push/Pull 64 B and 1 KiB, Req/Rep 64 B and Pub/Sub
to 64 subscribers (64 B), in Rust, Python and Node, over QUIC on loopback (--transport unix or
inproc for the other transports); Python's and Node's batched Push/Pull too.

Every repetition runs every row on both sides, in the order A B for odd repetitions and B A for
even ones, so drift on a shared machine falls on both alike. For each row it prints the median
of each side and the median (min-max) of the per-repetition ratio B/A, oriented so that a ratio
above 1 means B is better (for Req/Rep latency it is A's p50 over B's). Stdlib only; writes a
JSON of every measurement with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

# (label, language, pattern, size, width, variant)
ROWS = (
    ("Rust Push/Pull 64 B", "rust", "push_pull", 64, 1, None),
    ("Rust Push/Pull 1 KiB", "rust", "push_pull", 1024, 1, None),
    ("Rust Req/Rep p50", "rust", "req_rep", 64, 1, None),
    ("Rust Pub/Sub x64, 64 B", "rust", "pub_sub", 64, 64, None),
    ("Python Push/Pull 64 B, one await each", "python", "push_pull", 64, 1, "single"),
    ("Python Push/Pull 1 KiB, one await each", "python", "push_pull", 1024, 1, "single"),
    ("Python Push/Pull 64 B, batched", "python", "push_pull", 64, 1, "batch"),
    ("Python Req/Rep p50", "python", "req_rep", 64, 1, "single"),
    ("Python Pub/Sub x64, 64 B", "python", "pub_sub", 64, 64, "single"),
    ("Node Push/Pull 64 B, one await each", "node", "push_pull", 64, 1, "await"),
    ("Node Push/Pull 1 KiB, one await each", "node", "push_pull", 1024, 1, "await"),
    ("Node Push/Pull 64 B, batched", "node", "push_pull", 64, 1, "batch"),
    ("Node Req/Rep p50", "node", "req_rep", 64, 1, "await"),
    ("Node Pub/Sub x64, 64 B", "node", "pub_sub", 64, 64, "await"),
)


def argv(tree: Path, row: tuple, secs: float, warmup: float, transport: str) -> list[str]:
    _, lang, pattern, size, width, variant = row
    window = ["--secs", str(secs), "--warmup", str(warmup)]
    if lang == "rust":
        cmd = [str(tree / "target/release/weida-bench"), "--one", "--bench", pattern]
        cmd += ["--size", str(size), "--system", "weida", "--transport", transport, *window]
        if pattern == "pub_sub":
            cmd += ["--width", str(width)]
        return cmd
    common = ["--pattern", pattern, "--transport", transport, "--size", str(size)]
    common += ["--width", str(width), *window, "--variant", variant]
    if lang == "python":
        worker = tree / "bench/suite/workers/weida_worker.py"
        return [str(tree / "target/py-venv/bin/python"), str(worker), *common]
    return ["node", str(tree / "bench/suite/node/weida_worker.mjs"), *common]


def figure(r: dict, pattern: str) -> float | None:
    if "error" in r:
        return None
    if pattern == "req_rep":
        return float(r["p50_us"])
    return float(r["copies_per_s" if pattern == "pub_sub" else "msgs_per_s"])


def measure(tree: Path, row: tuple, secs: float, warmup: float, transport: str) -> dict:
    cmd = argv(tree, row, secs, warmup, transport)
    try:
        p = subprocess.run(
            cmd,
            check=False,
            capture_output=True,
            text=True,
            timeout=warmup + 4 * secs + 60,
            cwd=cmd_dir(tree, row),
        )
    except subprocess.TimeoutExpired:
        return {"error": "timed out", "cmd": shlex.join(cmd)}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = " | ".join((p.stderr or p.stdout).strip().splitlines()[-3:])
        return {"error": f"exit {p.returncode}: {tail}", "cmd": shlex.join(cmd)}
    r = json.loads(lines[-1])
    r["cmd"] = shlex.join(cmd)
    return r


def cmd_dir(tree: Path, row: tuple) -> Path:
    return tree / ("bench/suite/node" if row[1] == "node" else "bench/suite")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", type=Path, required=True, help="the checkout measured first (before)")
    ap.add_argument("--b", type=Path, required=True, help="the other checkout (after)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--secs", type=float, default=1.5)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--only", action="append", default=[], help="rows whose label contains this")
    ap.add_argument("--transport", choices=("quic", "unix", "inproc"), default="quic")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    rows = [r for r in ROWS if not a.only or any(o.lower() in r[0].lower() for o in a.only)]
    sides = {"A": a.a.resolve(), "B": a.b.resolve()}
    results: dict[str, dict[str, list]] = {r[0]: {"A": [], "B": []} for r in rows}
    began = time.time()
    print(f"# {shlex.join([sys.executable, *sys.argv])}")
    print(f"# A = {sides['A']}\n# B = {sides['B']}")
    load = os.getloadavg()[0]
    print(f"# transport {a.transport}; nproc {os.cpu_count()}, load at start {load:.2f}")
    for rep in range(a.reps):
        order = ("A", "B") if rep % 2 == 0 else ("B", "A")
        for row in rows:
            for side in order:
                r = measure(sides[side], row, a.secs, a.warmup, a.transport)
                results[row[0]][side].append(r)
                v = figure(r, row[2])
                shown = r.get("error") if v is None else f"{v:,.1f}"
                print(f"rep {rep + 1} {side} {row[0]}: {shown}", file=sys.stderr, flush=True)
    print("\n| row | A median | B median | B/A median (min-max), higher is better |")
    print("| --- | ---: | ---: | ---: |")
    worst = None
    for row in rows:
        label, pattern = row[0], row[2]
        av = [figure(r, pattern) for r in results[label]["A"]]
        bv = [figure(r, pattern) for r in results[label]["B"]]
        pairs = [(x, y) for x, y in zip(av, bv, strict=True) if x is not None and y is not None]
        if not pairs:
            print(f"| {label} | failed | failed | |")
            continue
        if pattern == "req_rep":
            ratios = [x / y for x, y in pairs]
        else:
            ratios = [y / x for x, y in pairs]
        med = statistics.median(ratios)
        worst = med if worst is None else min(worst, med)
        unit = " µs" if pattern == "req_rep" else "/s"
        am = statistics.median(x for x, _ in pairs)
        bm = statistics.median(y for _, y in pairs)
        print(
            f"| {label} | {am:,.1f}{unit} | {bm:,.1f}{unit} | "
            f"{med:.3f} ({min(ratios):.3f}-{max(ratios):.3f}) |"
        )
    print(
        f"\n# {a.reps} repetitions, {a.secs} s windows, {time.time() - began:.0f} s in all; "
        f"load at end {os.getloadavg()[0]:.2f}; lowest median ratio {worst}"
    )
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
