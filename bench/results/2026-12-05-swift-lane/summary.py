"""The A/B's table: medians of the rounds, per row (run in this folder)."""
import collections
import glob
import json
import statistics

rows = collections.defaultdict(lambda: collections.defaultdict(list))
for side in ("old", "new"):
    for path in sorted(glob.glob(f"{side}-*.json")):
        d = json.load(open(path))
        core = {(x["transport"], x["size"]): x["value"]["median"]
                for x in d["rows"] if x["system"] == "weida" and x["pattern"] == "push_pull"}
        for x in d["rows"]:
            key = (x["system"], x["pattern"], x["transport"], x["size"])
            c = x["cpu"]
            ratio = x["value"]["median"] / core[(x["transport"], x["size"])] if "batch" in x["system"] else None
            rows[key][side].append((x["value"]["median"], c["cpu_us_bind"]["median"], c["cpu_us_dial"]["median"], ratio))


def f(v, pattern):
    if pattern == "req_rep":
        return f"{v:.0f} µs"
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k"


print("| row | transport | size | old | new | CPU µs bind side (receiver, replier) old → new | dial side (sender, requester) | batched ÷ core, old → new (each round) |")
print("| --- | --- | --- | ---: | ---: | --- | --- | --- |")
for k in sorted(rows):
    o, n = rows[k]["old"], rows[k]["new"]
    med = lambda L, i: statistics.median([a[i] for a in L])
    rat = lambda L: ", ".join(f"{a[3]:.3f}" for a in L) if L[0][3] else ""
    print(f"| {k[0]} {k[1]} | {k[2]} | {k[3]} | {f(med(o, 0), k[1])} | {f(med(n, 0), k[1])} | "
          f"{med(o, 1):.2f} → {med(n, 1):.2f} | {med(o, 2):.2f} → {med(n, 2):.2f} | "
          f"{rat(o)}{' → ' if rat(o) else ''}{rat(n)} |")
