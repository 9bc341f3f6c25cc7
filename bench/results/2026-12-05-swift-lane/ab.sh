#!/bin/bash
# The A/B of this folder: `ab.sh OLD NEW OUT -- ROWS...` alternates two builds of the Swift
# bench worker, three rounds, each side's WeidaBenchWorker copied into the place
# kotlin-swift/swift/bench-worker.sh runs it from, ROWS passed to bench/suite/run.py. The
# library is the same for both (target/release/libweida_uniffi.so; the fast lane's C functions
# are in it at both commits). Each side was built beforehand with
# `kotlin-swift/swift/run.sh --bench` at its commit and the binary copied to /tmp/sw/<side>-worker.
# The run of this folder:
#   ab.sh old new /tmp/sw/ab -- --only weida/push_pull --only weida/req_rep \
#       --only weida-swift --only 'weida-swift batch'
#     (old 18899fb, new 544939c)
set -e
old=$1 new=$2 out=$3
shift 4
cd /work/main
mkdir -p "$out"
for r in 1 2 3; do
  for side in "$old" "$new"; do
    cp /tmp/sw/$side-worker target/swift-root/build/release/WeidaBenchWorker
    target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 2 --warmup 4 \
      ${SIZES:---size 64 --size 1024} "$@" --out "$out/$side-$r" > "$out/$side-$r.log" 2>&1
  done
done
