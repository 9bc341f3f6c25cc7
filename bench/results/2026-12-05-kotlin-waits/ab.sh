#!/bin/bash
# The A/B of this folder: alternates the Kotlin layer and library of 94b7531 (old: every waiting
# call through UniFFI's futures) and of e0b4db6 (new: waiting calls and an accepted
# exchange's calls on the fast lane), three rounds, each side's release libweida_uniffi.so and
# compiled bench worker classes swapped into the places bench/suite/run.py runs them from. Each
# side was built beforehand: `cargo build --release -p weida-uniffi` and, in bench/suite/kotlin,
# `mvn compile -Dweida.build.directory=/tmp/kab/<side>/build` at its commit. first/ is the same
# A/B run earlier against 412ff70 (waiting receives, requests and accepts only).
cd /work/main
mkdir -p /tmp/kab/runs2
for r in 1 2 3; do
  for side in old new2; do
    rm -rf target/kotlin-bench-build/classes
    cp -r /tmp/kab/$side/build/classes target/kotlin-bench-build/classes
    cp /tmp/kab/$side/libweida_uniffi.so target/release/libweida_uniffi.so
    target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 2 --warmup 4 --size 64 --size 1024 \
      --only weida/push_pull --only weida/req_rep --only weida-kotlin --only 'weida-kotlin batch' \
      --only weida-py/req_rep --only pyzmq/req_rep --out /tmp/kab/runs2/$side-$r > /tmp/kab/runs2/$side-$r.log 2>&1
  done
done
