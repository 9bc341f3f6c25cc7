#!/bin/bash
# A/B of the fast lane's batches written where they are read: the HEAD library (base) against
# the change (new), the same workers (and the same core binary, target/release/weida-bench),
# alternated. As run, its output in /tmp/ps/abwrite (copied here).
cd /work/main
out=/tmp/ps/abwrite; mkdir -p $out
for r in ${ROUNDS:-1 2 3 4}; do
  for side in base new; do
    cp /tmp/ps/ab-$side/libweida_uniffi.so target/release/libweida_uniffi.so
    WEIDA_DEV=1 target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 2 --warmup 1 \
      --size 64 --size 1024 --only weida/push_pull --only 'weida-swift batch/push_pull' \
      --only 'weida-kotlin batch/push_pull' --out $out/$side-$r > $out/$side-$r.log 2>&1
  done
done
echo ALLDONE > $out/done
