#!/bin/bash
# One two-process Push/Pull measurement of the suite's workers, each worker optionally held to
# one CPU (BIND_CPUS / DIAL_CPUS, taskset lists): prints the receiver's msgs/s.
#   pair.sh <bind kind> <dial kind> <quic|unix> <size> <secs>
# kinds: core (the core's row, current-thread runtime), core-multi (--flavour multi),
# swift, kotlin (their batched rows). Run from the repository's root, after
# `cargo build --release -p weida-bench -p weida-uniffi` and one suite run of the Kotlin and
# Swift rows (which builds their workers).
set -u
bk=$1; dk=$2; tr=$3; size=$4; secs=$5
root=$(pwd)
tgt=${CARGO_TARGET_DIR:-$root/target}
cmd() {
    case $1 in
    core) echo "$tgt/release/weida-bench --one --bench push_pull --size $size --system weida --transport $tr --secs $secs --warmup 1" ;;
    core-multi) echo "$tgt/release/weida-bench --one --bench push_pull --size $size --system weida --transport $tr --secs $secs --warmup 1 --flavour multi" ;;
    swift) echo "$root/kotlin-swift/swift/bench-worker.sh --pattern push_pull --transport $tr --size $size --width 1 --secs $secs --warmup 1 --variant batch" ;;
    kotlin)
        # The classpath the suite gives its Kotlin worker (`run.py --list`).
        local cp
        cp=$(python3 bench/suite/run.py --processes 2 --size "$size" --only 'weida-kotlin batch/push_pull' --list \
            | sed -n '1s/.* -cp \([^ ]*\) .*/\1/p')
        echo "java -Djna.library.path=$tgt/release -cp $cp weida.bench.WorkerKt --pattern push_pull --transport $tr --size $size --width 1 --secs $secs --warmup 1 --variant batch" ;;
    esac
}
out=$(mktemp -d)
pin() { if [ -n "$1" ]; then echo "taskset -c $1"; fi; }
$(pin "${BIND_CPUS:-}") $(cmd "$bk") --role bind > "$out/bind" 2>&1 &
bpid=$!
for _ in $(seq 300); do grep -qs ADDRESS "$out/bind" && break; sleep 0.1; done
addr=$(awk '/ADDRESS/{print $2}' "$out/bind")
$(pin "${DIAL_CPUS:-}") $(cmd "$dk") --role dial --address "$addr" > "$out/dial" 2>&1 &
dpid=$!
wait $dpid; wait $bpid
rate=$(grep -o '"msgs_per_s": *[0-9.]*' "$out/bind" | grep -o '[0-9.]*$')
echo "$bk<-$dk $tr $size bind=${BIND_CPUS:-any} dial=${DIAL_CPUS:-any} ${rate:-failed}"
rm -rf "$out"
