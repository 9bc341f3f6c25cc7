"""Medians of a rounds.sh or ab.sh log: each row under each condition (free or held to a CPU;
or each build), and each row over the core's of the same condition and round (the ratio issue
20 sets at 0.5 for the batched rows).

    python3 bench/results/2026-12-06-placement/summary.py < rounds.log       # rounds.txt
    python3 bench/results/2026-12-06-placement/summary.py < ab-direct.log    # ab-direct.txt
"""

import statistics
import sys
from collections import defaultdict

KINDS = ("core", "core-multi", "swift", "kotlin")
rates = defaultdict(dict)  # (condition, kind, transport, size) -> {round: msgs/s}
conditions: list[str] = []
for line in sys.stdin:
    f = line.split()
    if len(f) != 8 or f[7] == "failed":
        continue
    # rounds.sh: "round N ... bind=any|0 ..."; ab.sh: "<build> N ...".
    if f[0] == "round":
        condition = "free" if f[5] == "bind=any" else "held to a CPU each"
    else:
        condition = f[0]
    if condition not in conditions:
        conditions.append(condition)
    rates[(condition, f[2].split("<-")[0], f[3], int(f[4]))][int(f[1])] = float(f[7])

rows = sorted({k[1:] for k in rates}, key=lambda r: (KINDS.index(r[0]), r[1], r[2]))


def table(title, cell, skip_core=False):
    print(f"| {title} | transport | size | " + " | ".join(conditions) + " |")
    print("| --- | --- | --- |" + " --- |" * len(conditions))
    for r in rows:
        if skip_core and r[0] == "core":
            continue
        print(f"| {r[0]} | {r[1]} | {r[2]} | " + " | ".join(cell(c, r) for c in conditions) + " |")


def spread(xs, scale=1.0, unit=""):
    if not xs:
        return "-"
    xs = [x / scale for x in xs]
    return f"{statistics.median(xs):.2f}{unit} ({min(xs):.2f}–{max(xs):.2f}, n={len(xs)})"


def ratios(c, r):
    mine, core = rates[(c, *r)], rates[(c, "core", r[1], r[2])]
    return spread([mine[n] / core[n] for n in mine if n in core])


table("msgs/s, median (range)", lambda c, r: spread(list(rates[(c, *r)].values()), 1e6, "M"))
print()
table("over the core's row, same condition and round", ratios, skip_core=True)
