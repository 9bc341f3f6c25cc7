"""One two-process Push/Pull measurement, run as the suite runs its two-process rows (run.py's
worker commands, processes.measure_two), each worker optionally held to CPUs with taskset
(BIND_CPUS / DIAL_CPUS): prints one line, the receiver's msgs/s last.

    python3 bench/results/2026-12-06-placement/pair.py <kind> <quic|unix> <size> <secs>

kinds: core (the suite's `weida` row, a current-thread runtime), core-multi (the same with
`--flavour multi`: tokio's multi-thread runtime, 2 workers), swift, kotlin (their batched rows).
After bench/suite/setup.sh has built the suite's workers (the Kotlin and Swift ones too).
"""

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "suite"))

import run
from processes import measure_two
from systems import BY_KEY, PP, Case, Job, target_dir

ROWS = {
    "core": "weida",
    "core-multi": "weida",
    "swift": "weida-swift batch",
    "kotlin": "weida-kotlin batch",
}


def main() -> None:
    kind, transport, size, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    bench_bin = target_dir() / "release" / "weida-bench"
    a = argparse.Namespace(secs=secs, warmup=1.0, bench_bin=bench_bin)
    job = Job(Case(PP, size), BY_KEY[ROWS[kind]], transport, procs=2)
    cpus = {"bind": os.environ.get("BIND_CPUS", ""), "dial": os.environ.get("DIAL_CPUS", "")}

    def argv(j: Job, a: argparse.Namespace, role: str = "both", address: str = "") -> list[str]:
        cmd = run.argv(j, a, role, address)
        if kind == "core-multi":
            cmd += ["--flavour", "multi"]
        # taskset execs the worker: its pid, so the CPU time measure_two reads, is the worker's.
        return (["taskset", "-c", cpus[role]] if cpus.get(role) else []) + cmd

    r = measure_two(job, a, argv)
    rate = r.get("msgs_per_s")
    print(
        f"{kind}<-{kind} {transport} {size} bind={cpus['bind'] or 'any'} "
        f"dial={cpus['dial'] or 'any'} {rate if rate else 'failed'}"
    )


if __name__ == "__main__":
    main()
