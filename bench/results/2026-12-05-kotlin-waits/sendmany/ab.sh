#!/bin/bash
# This folder's A/B: alternates e0b4db6 (old: sendMany through UniFFI's sendPacked future) and
# 785c259 (new: sendMany on the fast lane), three rounds, each side's release
# libweida_uniffi.so and compiled bench worker classes swapped in (built as ../ab.sh says).
cd /work/main
mkdir -p /tmp/kab/runs3
for r in 1 2 3; do
  for side in new2 new3; do
    rm -rf target/kotlin-bench-build/classes
    cp -r /tmp/kab/$side/build/classes target/kotlin-bench-build/classes
    cp /tmp/kab/$side/libweida_uniffi.so target/release/libweida_uniffi.so
    target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 2 --warmup 4 --size 64 --size 1024 \
      --only weida/push_pull --only 'weida-kotlin batch' --out /tmp/kab/runs3/$side-$r > /tmp/kab/runs3/$side-$r.log 2>&1
  done
done
