"""Medians of rounds.log (rounds.sh): each row free and held, and each binding's batched row
over the core's of the same round and placement (the ratio issue 20 sets at 0.5).

    python3 bench/results/2026-12-06-placement/summary.py < rounds.log
"""

import statistics
import sys
from collections import defaultdict

rates = defaultdict(dict)  # (kind, transport, size, placement) -> {round: msgs/s}
for line in sys.stdin:
    f = line.split()
    if len(f) != 8 or f[0] != "round" or f[7] == "failed":
        continue
    kind = f[2].split("<-")[0]
    placement = "held" if f[5] != "bind=any" else "free"
    rates[(kind, f[3], int(f[4]), placement)][int(f[1])] = float(f[7])

def m(xs):
    return f"{statistics.median(xs) / 1e6:.2f}M"

print("| row | transport | size | free (median, range) | held to a CPU each (median, range) |")
print("| --- | --- | --- | --- | --- |")
for kind in ("core", "core-multi", "swift", "kotlin"):
    for tr in ("unix", "quic"):
        for size in sorted({k[2] for k in rates}):
            cells = []
            for placement in ("free", "held"):
                xs = list(rates[(kind, tr, size, placement)].values())
                cells.append(f"{m(xs)} ({min(xs) / 1e6:.2f}–{max(xs) / 1e6:.2f}, n={len(xs)})" if xs else "-")
            print(f"| {kind} | {tr} | {size} | {cells[0]} | {cells[1]} |")
print()
print("| ratio to the core's row, same round and placement | transport | size | free | held |")
print("| --- | --- | --- | --- | --- |")
for kind in ("core-multi", "swift", "kotlin"):
    for tr in ("unix", "quic"):
        for size in sorted({k[2] for k in rates}):
            cells = []
            for placement in ("free", "held"):
                mine, core = rates[(kind, tr, size, placement)], rates[("core", tr, size, placement)]
                rs = [mine[r] / core[r] for r in mine if r in core]
                cells.append(f"{statistics.median(rs):.2f} ({min(rs):.2f}–{max(rs):.2f})" if rs else "-")
            print(f"| {kind} | {tr} | {size} | {cells[0]} | {cells[1]} |")
