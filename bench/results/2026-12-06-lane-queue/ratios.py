"""Issue 20's ratios from a bench/suite/run.py log whose lines start "run <n>": each
repetition's row ÷ the core's row of the same run, repetition, size and transport, and the
median of each run.

    python3 ratios.py status.log
"""

import collections
import re
import statistics
import sys

LINE = re.compile(
    r"^run (\d+) .*rep (\d+) 2p push_pull (\d+ \w+)\s+(.+?) (\w+): ([\d.]+)([kM]?) msgs/s"
)


def main() -> None:
    vals = {}
    for ln in open(sys.argv[1], encoding="utf-8"):
        m = LINE.match(ln)
        if m:
            run, rep, size, system, t, x, unit = m.groups()
            vals[(run, rep, size, system, t)] = float(x) * {"M": 1e6, "k": 1e3, "": 1}[unit]
    out = collections.defaultdict(list)
    for (run, rep, size, system, t), v in vals.items():
        core = vals.get((run, rep, size, "weida", t))
        if system != "weida" and core:
            out[(size, system, t, run)].append(v / core)
    for (size, system, t, run), r in sorted(out.items()):
        print(
            f"{size:6} {system:20} {t:5} run {run}: median {statistics.median(r):.2f}  "
            f"by rep {' '.join(f'{x:.2f}' for x in r)}"
        )


main()
