#!/bin/bash
cd /work/main
# As run: OUT=/tmp/ps/abcore3 (copied here as presize/).
out=${OUT:-/tmp/ps/abcore}; mkdir -p $out
for r in ${ROUNDS:-1 2 3 4 5 6}; do
  for side in base new; do
    WEIDA_DEV=1 target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 2 --warmup 1 \
      --size ${SIZE:-1024} --only weida/push_pull --bench-bin /tmp/ps/ab-$side/weida-bench --out $out/$side-$r > $out/$side-$r.log 2>&1
  done
done
echo ALLDONE > $out/done
