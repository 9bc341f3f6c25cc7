#!/bin/bash
cd /work/main
out=/tmp/ps/abyield; mkdir -p $out
for r in ${ROUNDS:-1 2 3 4}; do
  for side in base yield; do
    bin=/tmp/ps/bench-base; [ $side = yield ] && bin=/tmp/ps/yield/weida-bench
    PYTHONPATH=/tmp/ps/py-$side target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 2 --warmup 1 --size 64 \
      --only weida/pub_sub --only weida-py/pub_sub --bench-bin $bin \
      --out $out/$side-$r > $out/$side-$r.log 2>&1
  done
done
echo ALLDONE > $out/done
