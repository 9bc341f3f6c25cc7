import re,sys,glob,statistics,collections
d=sys.argv[1]; sides=sys.argv[2:]
vals=collections.defaultdict(lambda: collections.defaultdict(list))
ratio=collections.defaultdict(lambda: collections.defaultdict(list))
for side in sides:
    for f in sorted(glob.glob(f"{d}/{side}-*.log")):
        core={}
        rows=[]
        for line in open(f):
            m=re.match(r"\[.*?\] rep \d+ 2p (\S+) (\d+ \S+)\s+(.+?) (quic|unix|tcp|ipc): (?:p50 )?([\d.]+)([kM]?).*?bind ([\d.]+), dial ([\d.]+)",line)
            if not m: continue
            case,size,sysn,tr,v,u,cb,cd=m.groups()
            v=float(v)*{'k':1e3,'M':1e6,'':1}[u]
            vals[(size,sysn,tr)][side].append((v,float(cb),float(cd)))
            if sysn=="weida": core[(size,tr)]=v
            else: rows.append((size,sysn,tr,v))
        for size,sysn,tr,v in rows:
            if (size,tr) in core: ratio[(size,sysn,tr)][side].append(v/core[(size,tr)])
for k in sorted(vals):
    row=vals[k]
    s=" | ".join(f"{side}: {statistics.median(x[0] for x in row[side])/1e6:5.2f}M [{min(x[0] for x in row[side])/1e6:.2f}–{max(x[0] for x in row[side])/1e6:.2f}] cpu {statistics.median(x[1] for x in row[side]):.2f}/{statistics.median(x[2] for x in row[side]):.2f}" + (f" ÷core {statistics.median(ratio[k][side]):.2f}" if ratio[k][side] else "") for side in sides if row[side])
    print(f"{' '.join(k):34s} {s}")
