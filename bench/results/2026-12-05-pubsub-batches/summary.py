"""The A/B's table (run in the folder ab.sh wrote): per row, the median over the rounds of each
side, each side's CPU µs a copy, and the new side's ratio to pyzmq in the same round (QUIC
against tcp, AF_UNIX against ipc), each round's."""
import collections
import glob
import json
import statistics

PEER = {"quic": "tcp", "unix": "ipc"}
rows = collections.defaultdict(lambda: collections.defaultdict(list))
zmq = collections.defaultdict(dict)
for side in ("old", "new"):
    for path in sorted(glob.glob(f"{side}-*/results.json")):
        rnd = int(path.split("-")[1].split("/")[0])
        for x in json.load(open(path))["rows"]:
            key = (x["width"], x["size"], x["system"], x["transport"])
            c = x["cpu"]
            v = (x["value"]["median"], c["cpu_us_bind"]["median"], c["cpu_us_dial"]["median"], rnd)
            if x["system"] == "pyzmq":
                zmq[(x["width"], x["size"], x["transport"])][(side, rnd)] = v[0]
            else:
                rows[key][side].append(v)


def f(v):
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k"


print("| copies/s, two processes | old | new | new ÷ old | CPU µs a copy, publisher old → new "
      "| subscribers old → new | new ÷ pyzmq, each round |")
print("| --- | ---: | ---: | ---: | --- | --- | --- |")
for k in sorted(rows):
    width, size, system, transport = k
    o, n = rows[k]["old"], rows[k]["new"]
    med = lambda L, i: statistics.median([a[i] for a in L])
    ratios = []
    for v in n:
        z = zmq[(width, size, PEER[transport])].get(("new", v[3]))
        if z:
            ratios.append(f"{v[0] / z:.2f}")
    label = f"*{'64 B' if size == 64 else '1 KiB'} ×{width} / {system} / {transport}*"
    print(f"| {label} | {f(med(o, 0))} | {f(med(n, 0))} | {med(n, 0) / med(o, 0):.2f} "
          f"| {med(o, 1):.2f} → {med(n, 1):.2f} | {med(o, 2):.2f} → {med(n, 2):.2f} "
          f"| {', '.join(ratios)} |")
print()
print("pyzmq, medians of its rounds on both sides:")
for k in sorted(zmq):
    print(f"  {'64 B' if k[1] == 64 else '1 KiB'} ×{k[0]} {k[2]}: {f(statistics.median(zmq[k].values()))}")
