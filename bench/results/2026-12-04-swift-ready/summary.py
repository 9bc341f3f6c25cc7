# Medians of an A/B folder's runs: python3 summary.py FOLDER. Each FOLDER/<side>-<n>/results.json
# is one run of bench/suite/run.py; rows are grouped by side, the ratio to the core is taken per
# repetition against the Rust core's row of the same run, transport and repetition.
import collections
import glob
import json
import statistics as st
import sys

base = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
cpu = collections.defaultdict(lambda: collections.defaultdict(list))
ratio = collections.defaultdict(lambda: collections.defaultdict(list))
sides = []
for f in sorted(glob.glob(base + "/*/results.json")):
    side = f.split("/")[-2].rsplit("-", 1)[0]
    if side not in sides:
        sides.append(side)
    d = json.load(open(f))
    core = {(r["transport"], r["rep"]): r["msgs_per_s"] for r in d["records"] if r["system"] == "weida"}
    for r in d["records"]:
        k = (r["system"] + "/" + str(r.get("variant") or "core"), r["transport"])
        rows[k][side].append(r["msgs_per_s"])
        c = r.get("cpu", {})
        cpu[k][side].append((c.get("bind", {}).get("us_per_msg"), c.get("dial", {}).get("us_per_msg")))
        if r["system"] != "weida":
            ratio[k][side].append(r["msgs_per_s"] / core[(r["transport"], r["rep"])])
for k in sorted(rows):
    for s in sides:
        x = rows[k][s]
        if not x:
            continue
        c = cpu[k][s]
        b = st.median([a for a, _ in c if a])
        dl = st.median([a for _, a in c if a])
        rr = ratio[k][s]
        line = f"{k[0]:20} {k[1]:5} {s:5} {st.median(x) / 1e3:8.1f}k msgs/s [{min(x) / 1e3:.0f}-{max(x) / 1e3:.0f}] n={len(x)}"
        line += f"  CPU us/msg receiver {b:.2f} sender {dl:.2f}"
        if rr:
            line += f"  / core {st.median(rr):.3f} [{min(rr):.3f}-{max(rr):.3f}]"
        print(line)
