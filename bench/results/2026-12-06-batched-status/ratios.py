import json,statistics,sys
recs=json.load(open(sys.argv[1]))['records']
core={}; rows={}
for r in recs:
    if r.get('msgs_per_s') is None: continue
    k=(r['size'],r['transport'],r['rep'])
    if r['system']=='weida': core[k]=r['msgs_per_s']
    else: rows.setdefault((r['system'],r['size'],r['transport']),[]).append((r['rep'],r['msgs_per_s']))
for (sysn,size,t),v in sorted(rows.items()):
    rat=[m/core[(size,t,rep)] for rep,m in sorted(v) if (size,t,rep) in core]
    print(f"{sysn:22s} {size:5d} {t:5s} median {statistics.median(rat):.2f}  each {' '.join(f'{x:.2f}' for x in rat)}")
