"""Each row of an A/B log by variant: msgs/s of every round and their median, and the sending
(dial) and receiving (bind) worker's CPU a message.

    python3 summary.py ab-three.log
"""

import collections
import re
import statistics
import sys

LINE = re.compile(
    r"^(\S+) (\d+) .*push_pull (\d+ \w+)\s+(.+?) (\w+): ([\d.]+)([kM]?) msgs/s "
    r"\(CPU µs/msg bind ([\d.]+), dial ([\d.]+)\)"
)


def rate(r: float) -> str:
    return f"{r / 1e6:.2f}M" if r >= 1e5 else f"{r / 1e3:.2f}k"


def main() -> None:
    rows = collections.defaultdict(list)
    for ln in open(sys.argv[1], encoding="utf-8"):
        m = LINE.match(ln)
        if not m:
            continue
        v, _, size, system, t, x, unit, bind, dial = m.groups()
        msgs = float(x) * {"M": 1e6, "k": 1e3, "": 1}[unit]
        rows[(size, system, t)].append((v, msgs, float(bind), float(dial)))
    variants = sorted({v for got in rows.values() for v, *_ in got})
    for (size, system, t), got in rows.items():
        out = []
        for v in variants:
            mine = [g for g in got if g[0] == v]
            rates = [r for _, r, _, _ in mine]
            dial = [d for *_, d in mine]
            bind = [b for _, _, b, _ in mine]
            out.append(
                f"{v}: {'/'.join(rate(r) for r in rates)} "
                f"(median {rate(statistics.median(rates))}; "
                f"sender µs {statistics.median(dial):.2f}, receiver {statistics.median(bind):.2f})"
            )
        print(f"{size:7} {system:20} {t:5} | " + " | ".join(out))


main()
