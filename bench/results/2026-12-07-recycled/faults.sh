#!/bin/bash
# Page faults, context switches and CPU time of each worker process of one two-process row,
# counted by `perf stat` over 1 s of its steady state (3 s after it starts):
#   bash bench/results/2026-12-07-recycled/faults.sh <swift|kotlin|core> <unix|quic> <size>
# (from the repository's root, after bench/suite/setup.sh; the build in target/release).
here=$(dirname "$0")
kind=$1 tr=$2 size=$3
python3 "$here/../2026-12-06-placement/pair.py" "$kind" "$tr" "$size" 6 &
sleep 3
for p in $(pgrep -f -- "--role (bind|dial)"); do
    role=$(tr '\0' ' ' < "/proc/$p/cmdline" | grep -o -- '--role [a-z]*')
    # The worker's counts: taskset or the launcher may be a parent, not the worker itself.
    case "$(tr '\0' ' ' < "/proc/$p/cmdline")" in
        *python3*) continue ;;
    esac
    echo "$kind $tr $size pid $p $role: $(perf stat -x, -e page-faults,context-switches,task-clock -p "$p" -- sleep 1 2>&1 | awk -F, '{printf "%s %s  ", $1, $3}')" &
done
wait
