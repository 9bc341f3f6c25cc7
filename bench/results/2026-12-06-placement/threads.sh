#!/bin/bash
# The Swift (or core) batched Push/Pull row in two processes, 1 KiB over AF_UNIX, with each
# worker's syscalls, switches and CPU counted per thread for 3 s (perf stat --per-thread):
#   threads.sh <swift|core> <quic|unix> <size> <secs>     (threads-before.txt, threads-direct.txt)
# <secs> at least 6: the count starts 2.5 s into the run and lasts 3 s. Needs perf, and the
# release builds in target/release. Kept as it ran (it starts the workers itself; pair.py is
# the folder's runner, on the suite's).
kind=$1; tr=$2; size=$3; secs=$4
cd "$(git rev-parse --show-toplevel)"
out=$(mktemp -d)
if [ $kind = swift ]; then
  B="kotlin-swift/swift/bench-worker.sh --pattern push_pull --transport $tr --size $size --width 1 --secs $secs --warmup 1 --variant batch"
else
  B="target/release/weida-bench --one --bench push_pull --size $size --system weida --transport $tr --secs $secs --warmup 1"
fi
rm -f $out/b.out
$B --role bind > $out/b.out 2>&1 &
bpid=$!
for i in $(seq 100); do grep -q ADDRESS $out/b.out && break; sleep 0.1; done
addr=$(awk '/ADDRESS/{print $2}' $out/b.out)
$B --role dial --address $addr > $out/d.out 2>&1 &
dpid=$!
sleep 2.5
# find the real worker pids (children of script)
bw=$(pgrep -P $bpid | head -1); [ -z "$bw" ] && bw=$bpid
dw=$(pgrep -P $dpid | head -1); [ -z "$dw" ] && dw=$dpid
echo "bind $bw dial $dw"
perf stat --per-thread -e 'syscalls:sys_enter_futex,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendmsg,syscalls:sys_enter_read,syscalls:sys_enter_recvmsg,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmmsg,syscalls:sys_enter_recvmmsg,context-switches,task-clock' -p $bw,$dw -- sleep 3 2>&1 | grep -v " 0 " | grep -v "^$"
wait $dpid; wait $bpid
cat $out/b.out $out/d.out | grep -v ADDRESS | tail -4
