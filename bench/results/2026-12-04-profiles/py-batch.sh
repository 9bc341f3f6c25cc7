#!/bin/bash
# The Python batched row (send_many / recv_many of 256, 64 B) in two processes, with perf on each:
#   bench/results/2026-12-04-profiles/py-batch.sh quic 8 1
# from the repository root, after bench/suite/setup.sh. PYP=DIR puts DIR first on PYTHONPATH
# (an unstripped build of the module, for symbols: cargo build --release -p weida-python, then
# target/release/lib_weida.so copied as DIR/weida/_weida.abi3.so beside the wheel's .py files).
T=${1:-quic}; S=${2:-8}; P=${3:-1}
W="env PYTHONPATH=${PYP:-} target/bench-venv/bin/python bench/suite/workers/weida_worker.py --pattern push_pull --transport $T --size 64 --width 1 --secs $S --warmup 2 --variant batch"
out=$(mktemp)
$W --role bind > "$out" 2>&1 &
BP=$!
while ! grep -q ADDRESS "$out" 2>/dev/null; do sleep 0.05; done
A=$(grep ADDRESS "$out" | head -1 | cut -d' ' -f2)
$W --role dial --address "$A" > /dev/null 2>&1 &
DP=$!
if [ "$P" = 1 ]; then
  sleep 3
  perf record -F 1999 -g -p $BP -o recv.data -- sleep 3 > /dev/null 2>&1 &
  perf record -F 1999 -g -p $DP -o send.data -- sleep 3 > /dev/null 2>&1 &
  wait %3 %4 2>/dev/null
fi
wait $BP
kill $DP 2>/dev/null; wait $DP 2>/dev/null
tail -1 "$out"; rm -f "$out"
