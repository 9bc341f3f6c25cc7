#!/usr/bin/env bash
# Builds every fuzz target in core/fuzz and runs each for N seconds (default 10), as many at once
# as there are cores:
#
#   core/fuzz/run.sh [SECONDS]
#
# Needs cargo-fuzz (`./dev fuzz` installs it under target/tools). Uses the nightly toolchain when rustup has one,
# else the default toolchain with RUSTC_BOOTSTRAP=1 (cargo fuzz passes nightly-only flags).
# Each target's corpus, core/fuzz/corpus/<target>/ (not committed), is seeded from
# conformance/vectors when python3 is there. A crash leaves its input under
# core/fuzz/artifacts/<target>/ and makes the script exit non-zero; replay it with
# `cargo +nightly fuzz run <target> <file>` from core/.
set -euo pipefail

secs="${1:-10}"
case "$secs" in
  '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

fuzz_dir="$(cd "$(dirname "$0")" && pwd)"
cd "$fuzz_dir/.." # core/: cargo fuzz looks for fuzz/ beside Cargo.toml
# The sanitizer build (about 1 GB) goes under the workspace's target directory with the rest.
target_dir="${CARGO_TARGET_DIR:-$fuzz_dir/../../target}/fuzz"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2
  exit 2
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  echo "no nightly toolchain: building with RUSTC_BOOTSTRAP=1 on $(rustc --version)" >&2
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi

"${fuzz[@]}" build --target-dir "$target_dir"

vectors="$fuzz_dir/../../conformance/vectors"
if command -v python3 >/dev/null && [ -d "$vectors" ]; then
  python3 - "$vectors" "$fuzz_dir/corpus" <<'PY'
import hashlib, json, os, sys

vectors, corpus = sys.argv[1], sys.argv[2]
seeds = {"header": ["header.json"], "control": ["hello.json"], "reply": ["reply.json"],
         "chunk": ["chunk.json"], "lane": ["lane.json"]}
addresses = [
    "weida://127.0.0.1:4433/jobs",
    "weida://sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff@[::1]:0",
    "weida+unix:///tmp/w.sock//jobs",
    "weida+unix://@bus",
    "weida+inproc://bus/a/b",
    "weida+pipe://p",
]
def put(target, data):
    os.makedirs(os.path.join(corpus, target), exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()
    with open(os.path.join(corpus, target, name), "wb") as f:
        f.write(data)
for target, files in seeds.items():
    for file in files:
        with open(os.path.join(vectors, file)) as f:
            doc = json.load(f)
        for v in doc["vectors"] + doc["invalid"]:
            put(target, bytes.fromhex(v["hex"]))
for a in addresses:
    put("address", a.encode())
PY
fi

# As many targets at once as there are cores (a libFuzzer run is one thread), each into a log
# of its own, printed when it ends; the first that fails is reported after the others end.
logs="$(mktemp -d)"
# On an early exit, the targets still running are stopped before their logs go.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT
at_once="$(nproc 2>/dev/null || echo 1)"
failed=""
pids=()
names=()
wait_one() {
  local pid="${pids[0]}" name="${names[0]}"
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  if wait "$pid"; then status=0; else status=$?; fi
  echo "== $name: ${secs}s"
  cat "$logs/$name.log"
  if [ "$status" != 0 ]; then
    echo "== $name failed (exit $status)"
    failed="${failed:-$name}"
  fi
}
for target in $("${fuzz[@]}" list); do
  mkdir -p "fuzz/corpus/$target"
  "${fuzz[@]}" run --target-dir "$target_dir" "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$secs" >"$logs/$target.log" 2>&1 &
  pids+=("$!")
  names+=("$target")
  if [ "${#pids[@]}" -ge "$at_once" ]; then wait_one; fi
done
while [ "${#pids[@]}" -gt 0 ]; do wait_one; done
if [ -n "$failed" ]; then
  echo "fuzz target $failed failed: its input is under core/fuzz/artifacts/$failed/" >&2
  exit 1
fi
echo "all fuzz targets ran ${secs}s without a crash"
