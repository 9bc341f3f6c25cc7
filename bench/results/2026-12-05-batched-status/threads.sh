#!/bin/bash
# threads.sh TRANSPORT SIZE [perf|fp|dwarf]: per-thread CPU of both Kotlin workers over 4 s of the batched row,
# optionally profiled (perf -a -g; fp or dwarf: the dialling worker, or with WHO=bind the binding one)
mkdir -p /tmp/pf; cd /tmp/pf; T=$1; S=$2
CP=$(cat /work/main/target/kotlin-bench-build/worker.classpath)
J="java -Djna.library.path=/work/main/target/release -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints -XX:+PreserveFramePointer -XX:+DumpPerfMapAtExit -cp /work/main/target/kotlin-bench-build/classes:$CP weida.bench.WorkerKt"
rm -f bind.out
$J --pattern push_pull --transport $T --size $S --width 1 --secs 10 --warmup 0.5 --role bind --variant batch > bind.out 2>bind.err &
BP=$!
for i in $(seq 100); do grep -q ADDRESS bind.out 2>/dev/null && break; sleep 0.1; done; ADDR=$(grep ADDRESS bind.out | awk '{print $2}')
$J --pattern push_pull --transport $T --size $S --width 1 --secs 10 --warmup 0.5 --role dial --address "$ADDR" --variant batch > dial.out 2>dial.err &
DP=$!
sleep 3; [ "$WHO" = bind ] && PERFPID=$BP
snap() { for p in $BP $DP; do for t in /proc/$p/task/*; do echo "$p $(basename $t) $(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done; done; }
snap > a.txt
if [ "$3" = perf ]; then perf record -F 1999 -g -a -o perf.data -- sleep 4 2>/dev/null >/dev/null; elif [ "$3" = fp ]; then perf record -F 1999 -g -p ${PERFPID:-$DP} -o perf.data -- sleep 3 2>/dev/null >/dev/null; elif [ "$3" = dwarf ]; then perf record -F 499 --call-graph dwarf,16384 -p ${PERFPID:-$DP} -o perf.data -- sleep 3 2>/dev/null >/dev/null; else sleep 4; fi
snap > b.txt
python3 - $BP $DP <<'PY'
import sys
a={};b={}
for f,d in (("a.txt",a),("b.txt",b)):
    for l in open(f):
        p,t,*c,v=l.split(); d[(p,t)]=(" ".join(c),int(v))
bp,dp=sys.argv[1:3]
for who,pid in (("bind",bp),("dial",dp)):
    rows=[(b[k][1]-a[k][1], b[k][0]) for k in b if k[0]==pid and k in a]
    rows.sort(reverse=True)
    tot=sum(r[0] for r in rows)
    print(who, "total %.0f%%"%(tot/4), ", ".join("%s %.0f%%"%(n,d/4) for d,n in rows[:6]))
PY
wait $BP; kill $DP 2>/dev/null; wait $DP 2>/dev/null
grep -o '"msgs_per_s":[0-9.]*' bind.out | tail -1
