#!/bin/bash
# usage: reqrep-unix-2proc.sh path/to/weida-bench (built with cargo build --release -p weida-bench)
B=$1
coproc SRV { perf stat -x, -e task-clock,context-switches $B --one --system weida --bench req_rep --size 64 --transport unix --secs 1 --warmup 0.3 --role bind 2>/tmp/srv.stat; }
read -r _ ADDR <&${SRV[0]}
perf stat -x, -e task-clock,context-switches $B --one --system weida --bench req_rep --size 64 --transport unix --secs 1 --warmup 0.3 --role dial --address "$ADDR" 2>/tmp/cli.stat | grep '^{' > /tmp/cli.json
kill -INT $SRV_PID 2>/dev/null; wait 2>/dev/null
python3 - <<'PY'
import json
d=json.load(open('/tmp/cli.json'))
def st(f):
    r={}
    for l in open(f):
        p=l.split(',')
        if len(p)>3 and p[2] in ('task-clock','context-switches'): r[p[2]]=float(p[0])
    return r
s,c=st('/tmp/srv.stat'),st('/tmp/cli.stat')
n=d['samples']
print(f"p50 {d['p50_us']:.1f} us, samples {n}, cpu/req client {c.get('task-clock',0)*1000/n:.1f} us server {s.get('task-clock',0)*1000/n:.1f} us, ctxsw/req client {c.get('context-switches',0)/n:.1f} server {s.get('context-switches',0)/n:.1f}")
PY
