import re,sys,glob,statistics,collections
d=sys.argv[1]; sides=sys.argv[2:]
vals=collections.defaultdict(lambda: collections.defaultdict(list))
for side in sides:
    for f in sorted(glob.glob(f"{d}/{side}-*.log")):
        for line in open(f):
            m=re.match(r"\[.*?\] rep \d+ 2p (\S+) 64 B\s+(×\d+)?\s*(\S+) (\w+): (?:p50 )?([\d.]+)([kM]?)",line)
            if not m: continue
            case,w,sysn,tr,v,u=m.groups()
            v=float(v)*{'k':1e3,'M':1e6,'':1}[u]
            vals[(case,w or '',sysn,tr)][side].append(v)
for k in sorted(vals):
    row=vals[k]
    s=" | ".join(f"{side}: med {statistics.median(row[side]):>10,.0f} [{min(row[side]):,.0f}–{max(row[side]):,.0f}] n={len(row[side])}" for side in sides if row[side])
    print(f"{' '.join(k):40s} {s}")
