#!/usr/bin/env python3
"""perf of weida's outbox drain: one pusher process, its puller killed, N messages sent into the
outbox, then `perf record` on the pusher while a new puller receives them.

    python3 bench/redial/profile_drain.py [--n 2000000] [--out /tmp/drain.perf.data]
    perf report -i /tmp/drain.perf.data --no-children --stdio -g none
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--out", default="/tmp/drain.perf.data")
    ap.add_argument("--weida", type=Path, default=run.ROOT / "target/release/weida-redial")
    a = ap.parse_args()
    ns = argparse.Namespace(weida=a.weida, python=sys.executable)
    place = run.Place(ns, "weida", "unix")
    live = place.puller("count", a.n)
    live.tell("bind")
    live.expect("bound", 10)
    pusher = place.pusher(None, a.n)
    pusher.tell("connect")
    pusher.expect("connected", 10)
    live.kill()
    pusher.expect("peer", 20, "lost")
    pusher.expect("peer", 20, "retrying")
    pusher.tell(f"burst {a.n}")
    print(pusher.expect("sent", 120))
    again = place.puller("count", a.n)
    cmd = ["perf", "record", "-F", "4000", "-g", "-o", a.out, "-p", str(pusher.p.pid)]
    perf = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    again.tell("bind")
    print(again.expect("received", 120))
    perf.send_signal(2)
    perf.wait()
    pusher.kill()
    again.kill()
    print(f"perf report -i {a.out} --no-children --stdio -g none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
