#!/bin/bash
# The A/Bs of this folder: `ab.sh OLD NEW OUT -- ROWS...` alternates two builds of the Kotlin
# binding, three rounds, each side's release libweida_uniffi.so and compiled bench worker
# classes swapped into the places bench/suite/run.py runs them from, ROWS passed to run.py.
# Each side was built beforehand in /tmp/kab/<side>: `cargo build --release -p weida-uniffi`
# (the .so copied there) and, in bench/suite/kotlin, `mvn compile
# -Dweida.build.directory=/tmp/kab/<side>/build`, at its commit. The runs of this folder:
#   ab.sh old new2 /tmp/kab/runs2 -- --only weida/push_pull --only weida/req_rep \
#       --only weida-kotlin --only 'weida-kotlin batch' --only weida-py/req_rep --only pyzmq/req_rep
#     (old 94b7531, new2 e0b4db6: the top table; first/ is the same with new1 412ff70)
#   ab.sh new2 new3 /tmp/kab/runs3 -- --only weida/push_pull --only 'weida-kotlin batch'
#     (new3 785c259: sendmany/)
#   ab.sh new3 new4 /tmp/kab/runs4 -- --only weida/push_pull --only weida-kotlin --only 'weida-kotlin batch'
#     (new4 5167ba6: in-place/)
set -e
old=$1 new=$2 out=$3
shift 4
cd /work/main
mkdir -p "$out"
for r in 1 2 3; do
  for side in "$old" "$new"; do
    rm -rf target/kotlin-bench-build/classes
    cp -r /tmp/kab/$side/build/classes target/kotlin-bench-build/classes
    cp /tmp/kab/$side/libweida_uniffi.so target/release/libweida_uniffi.so
    target/bench-venv/bin/python bench/suite/run.py --processes 2 --reps 1 --secs 2 --warmup 4 \
      --size 64 --size 1024 "$@" --out "$out/$side-$r" > "$out/$side-$r.log" 2>&1
  done
done
