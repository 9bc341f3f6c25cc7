import json,statistics,collections
rows=collections.defaultdict(lambda: collections.defaultdict(list))
for side in ("old","new"):
    for r in (1,2,3):
        d=json.load(open(f"{side}-{r}.json"))
        core={}
        for x in d["rows"]:
            if x["system"]=="weida": core[(x["transport"],x["size"])]=x["value"]["median"] if x["pattern"]=="push_pull" else core.get((x["transport"],x["size"]))
        for x in d["rows"]:
            key=(x["system"],x["pattern"],x["transport"],x["size"])
            c=x["cpu"]
            ratio = x["value"]["median"]/core[(x["transport"],x["size"])] if "batch" in x["system"] else None
            rows[key][side].append((x["value"]["median"], c["cpu_us_dial"]["median"], c["cpu_us_bind"]["median"], ratio))
print("| row | transport | size | old | new | CPU µs/msg receiver old → new | sender old → new | batched ÷ core, old → new (per round) |")
for k in sorted(rows):
    o=rows[k]["old"]; n=rows[k]["new"]
    med=lambda L,i: statistics.median([a[i] for a in L])
    rat = ", ".join(f"{a[3]:.3f}" for a in n) if n[0][3] else ""
    rato = ", ".join(f"{a[3]:.3f}" for a in o) if o[0][3] else ""
    f=lambda v: f"{v/1e6:.2f}M" if v>=1e6 else f"{v/1e3:.1f}k"
    print(f"| {k[0]} {k[1]} | {k[2]} | {k[3]} | {f(med(o,0))} | {f(med(n,0))} | {med(o,2):.2f} → {med(n,2):.2f} | {med(o,1):.2f} → {med(n,1):.2f} | {rato} → {rat} |")
