"""Medians of an ab.sh log: each case under each build, and each batched binding row over the
core's row of the same build and round (the ratio issue 20 sets at 0.5).

    python3 bench/results/2026-12-06-placement/absummary.py < ab-direct.log
"""

import statistics
import sys
from collections import defaultdict

rates = defaultdict(dict)  # (variant, kind, transport, size) -> {round: msgs/s}
variants = []
for line in sys.stdin:
    f = line.split()
    if len(f) != 8 or f[7] == "failed":
        continue
    if f[0] not in variants:
        variants.append(f[0])
    rates[(f[0], f[2].split("<-")[0], f[3], int(f[4]))][int(f[1])] = float(f[7])

cases = sorted({k[1:] for k in rates}, key=lambda c: (["core", "core-multi", "swift", "kotlin"].index(c[0]), c[1], c[2]))
print("| row | transport | size | " + " | ".join(f"{v} (median, range)" for v in variants) + " |")
print("| --- | --- | --- |" + " --- |" * len(variants))
for c in cases:
    cells = []
    for v in variants:
        xs = list(rates[(v, *c)].values())
        cells.append(f"{statistics.median(xs) / 1e6:.2f}M ({min(xs) / 1e6:.2f}–{max(xs) / 1e6:.2f}, n={len(xs)})")
    print(f"| {c[0]} | {c[1]} | {c[2]} | " + " | ".join(cells) + " |")
print()
print("| ratio to the core's row, same build and round | transport | size | " + " | ".join(variants) + " |")
print("| --- | --- | --- |" + " --- |" * len(variants))
for c in cases:
    if c[0] == "core":
        continue
    cells = []
    for v in variants:
        mine, core = rates[(v, *c)], rates[(v, "core", c[1], c[2])]
        rs = [mine[r] / core[r] for r in mine if r in core]
        cells.append(f"{statistics.median(rs):.2f} ({min(rs):.2f}–{max(rs):.2f})" if rs else "-")
    print(f"| {c[0]} | {c[1]} | {c[2]} | " + " | ".join(cells) + " |")
