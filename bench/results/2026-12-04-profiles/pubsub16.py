"""Pub/Sub 64 B: one publisher process and 16 subscriber processes (the suite's two-process row,
run by hand so that perf samples the whole machine inside the window):

    python3 bench/results/2026-12-04-profiles/pubsub16.py quic 6 1

from the repository root after bench/suite/setup.sh. Prints the publisher's pid and the sum of
the subscribers' copies/s; with the last argument 1 it leaves ps.data for `perf report`.
"""

import json
import subprocess
import sys
import time

transport, secs, profile = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
worker = ["target/release/weida-bench", "--one", "--bench", "pub_sub", "--size", "64",
          "--system", "weida", "--transport", transport, "--width", "16", "--secs", secs,
          "--warmup", "2"]
pub = subprocess.Popen(worker + ["--role", "bind"], stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                       text=True)
address = None
while address is None:
    line = pub.stdout.readline()
    if line.startswith("ADDRESS"):
        address = line.split()[1]
subs = [subprocess.Popen(worker + ["--role", "dial", "--address", address],
                         stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
        for _ in range(16)]
# Each subscriber says READY once it has a message, and starts its window at "go" (bench/README.md).
for s in subs:
    while not s.stdout.readline().startswith("READY"):
        pass
for s in subs:
    s.stdin.write("go\n")
    s.stdin.flush()
if profile:
    time.sleep(2.5)
    print("publisher pid", pub.pid, flush=True)
    subprocess.run(["perf", "record", "-a", "-F", "999", "-g", "-o", "ps.data", "--", "sleep", "3"],
                   capture_output=True, check=False)
total = 0.0
for s in subs:
    for line in s.stdout.read().splitlines():
        if line.startswith("{"):
            total += json.loads(line).get("copies_per_s", 0)
pub.kill()
print("copies/s, all subscribers:", round(total))
