#!/bin/bash
# Alternates the Kotlin layer before (3396e18) and after (the fast lane), same library.
cd /work/main
for r in 1 2 3; do
  for side in old new; do
    rm -rf target/kotlin-bench-build/classes
    cp -r /tmp/kbb-$side/classes target/kotlin-bench-build/classes
    target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 2 --warmup 4 --size 64 --size 1024 \
      --only weida/push_pull --only weida-kotlin --only 'weida-kotlin batch' --out /tmp/ab-kt/$side-$r > /tmp/ab-kt/$side-$r.log 2>&1
  done
done
echo done
