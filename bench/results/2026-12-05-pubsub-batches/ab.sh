#!/bin/bash
# The A/B of this folder: `ab.sh OUT -- ROWS...` alternates two builds, three rounds: the
# Rust bench binary (--bench-bin) and the Python module (PYTHONPATH ahead of the bench venv's
# own), each side's copied beforehand to /tmp/ps/<side>/ (weida-bench, lib_weida.so) and
# /tmp/ps/py-<side>/weida/ (the installed package with that lib_weida.so as _weida.abi3.so).
# ROWS go to bench/suite/run.py. The run of this folder (old e1bc88a, new bc8f17f):
#   ab.sh /tmp/ps/ab -- --only weida/pub_sub --only weida-py/pub_sub --only pyzmq/pub_sub
set -e
out=$1
shift 2
cd /work/main
mkdir -p "$out"
for r in ${ROUNDS:-1 2 3}; do
  for side in old new; do
    PYTHONPATH=/tmp/ps/py-$side target/bench-venv/bin/python bench/suite/run.py --processes 2 \
      --reps 1 --secs 2 --warmup 1 --bench-bin /tmp/ps/$side/weida-bench \
      ${SIZES:---size 64 --size 1024} "$@" --out "$out/$side-$r" > "$out/$side-$r.log" 2>&1
  done
done
