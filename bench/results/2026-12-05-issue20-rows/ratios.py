"""Each Kotlin and Swift batched row divided by the core's row of the same repetition, size and
transport: python3 ratios.py (in this folder)."""

import json
import statistics
from collections import defaultdict

recs = json.load(open("results.json"))["records"]
rate = {(r["system"], r["size"], r["transport"], r["rep"]): r["msgs_per_s"] for r in recs}
ratios = defaultdict(list)
for (system, size, transport, rep), v in rate.items():
    core = rate.get(("weida", size, transport, rep))
    if system != "weida" and core:
        ratios[(system, size, transport)].append(v / core)
print("| row | size | transport | ÷ core, each repetition | median |")
print("| --- | ---: | --- | --- | ---: |")
for (system, size, transport), rs in sorted(ratios.items()):
    each = ", ".join(f"{x:.2f}" for x in rs)
    print(f"| {system} | {size} | {transport} | {each} | {statistics.median(rs):.2f} |")
