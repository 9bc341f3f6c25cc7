#!/bin/bash
# threads.sh SIZE TRANSPORT: per-thread CPU (% of a core) of both Swift workers over 4 s of a batched run
here="$(cd "$(dirname "$0")" && pwd)"; mkdir -p /tmp/sw; cd /tmp/sw; W=/work/main/kotlin-swift/swift/bench-worker.sh; S=$1; T=$2
rm -f bind.out
($W --pattern push_pull --transport $T --size $S --variant batch --role bind --secs 8 --warmup 0.5 > bind.out 2>bind.err &) ;
for i in $(seq 50); do grep -q ADDRESS bind.out 2>/dev/null && break; sleep 0.1; done; ADDR=$(grep ADDRESS bind.out | awk '{print $2}');
$W --pattern push_pull --transport $T --size $S --variant batch --role dial --address "$ADDR" --secs 8 --warmup 0.5 > dial.out 2>dial.err &
sleep 2; BP=$(pgrep -f "WeidaBenchWorker.*role bind"); DP=$(pgrep -f "WeidaBenchWorker.*role dial");
snap() { for p in $BP $DP; do for t in /proc/$p/task/*; do echo "$p $(basename $t) $(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done; done; }
snap > a.txt; sleep 4; snap > b.txt
python3 "$here/threads2.py" $BP
sleep 4; tail -1 bind.out | grep -o '"msgs_per_s":[0-9.]*'
