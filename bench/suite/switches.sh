#!/bin/bash
# Context switches per round trip of weida-py's Req/Rep in two processes (docs/PERFORMANCE.md,
# "Where a binding's round trip goes"): the suite's Python worker as replier and requester, then
# `perf stat --per-thread -e context-switches` on each process for 2 s while the requester runs.
# Divide each thread's count by the round trips of those 2 s (the requester's rate, printed last).
#   bench/suite/switches.sh [quic|unix]     (after bench/suite/setup.sh; needs perf, as root)
set -eu
T=${1:-unix}
cd "$(dirname "$0")/../.."
PY=${CARGO_TARGET_DIR:-target}/bench-venv/bin/python
W=bench/suite/workers/weida_worker.py
out=$(mktemp -d)
trap 'kill $REPPID 2>/dev/null || true; rm -rf "$out"' EXIT
"$PY" $W --pattern req_rep --transport "$T" --size 64 --secs 12 --warmup 0.3 --role bind > "$out/rep" 2>&1 &
REPPID=$!
for _ in $(seq 1 100); do grep -q ADDRESS "$out/rep" && break; sleep 0.1; done
ADDR=$(grep ADDRESS "$out/rep" | head -1 | cut -d' ' -f2)
"$PY" $W --pattern req_rep --transport "$T" --size 64 --secs 8 --warmup 0.3 --role dial --address "$ADDR" > "$out/req" 2>&1 &
REQPID=$!
sleep 1.5
perf stat --per-thread -e context-switches -p $REQPID -o "$out/cs.req" -- sleep 2
perf stat --per-thread -e context-switches -p $REPPID -o "$out/cs.rep" -- sleep 2
wait $REQPID
echo "requester:"; grep -E "^ +[a-z]" "$out/cs.req"
echo "replier:"; grep -E "^ +[a-z]" "$out/cs.rep"
tail -1 "$out/req" | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print(f\"p50 {d['p50_us']:.1f} us, {d['samples']/d['secs']:.0f} round trips/s\")"
