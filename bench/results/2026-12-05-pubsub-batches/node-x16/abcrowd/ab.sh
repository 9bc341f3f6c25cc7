#!/bin/bash
cd /work/main
out=/tmp/ps/abcrowd; mkdir -p $out
for r in 1 2 3 4 5; do
  for side in base crowd; do
    cp /tmp/ps/$side/node.node node/weida.linux-x64-gnu.node
    cp /tmp/ps/$side/libweida_uniffi.so target/release/libweida_uniffi.so
    PYTHONPATH=/tmp/ps/py-$side target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 1 --warmup 0.3 --size 64 \
      --only weida-node/pub_sub --only weida-py/pub_sub --only weida-py/push_pull --only weida-node/push_pull --only weida-py/req_rep --only weida-node/req_rep \
      --only weida-kotlin/req_rep --only weida-swift/req_rep \
      --out $out/$side-$r > $out/$side-$r.log 2>&1
  done
done
cp /tmp/ps/crowd/node.node node/weida.linux-x64-gnu.node
cp /tmp/ps/crowd/libweida_uniffi.so target/release/libweida_uniffi.so
echo ALLDONE > $out/done
