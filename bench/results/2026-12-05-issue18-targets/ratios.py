"""Issue 18's Push/Pull and Req/Rep targets from one two-process run: each weida row divided by
its reference of the same repetition (weida over QUIC by the other over tcp, or raw quinn over
QUIC; AF_UNIX by ipc), median [min–max] over the repetitions: python3 ratios.py (in this
folder). For latency a ratio above 1 means weida is slower."""

import json
import statistics
import sys

recs = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "results.json"))["records"]
val = {}
for r in recs:
    v = r.get("msgs_per_s") if r["pattern"] == "push_pull" else r.get("p50_us")
    val[(r["row"], r["pattern"], r["size"], r["transport"], r["rep"])] = v
reps = sorted({r["rep"] for r in recs})
zmq = {"quic": "tcp", "unix": "ipc"}


def show(label, a, b, pattern, size, ta, tb, size_b=None):
    sb = size if size_b is None else size_b
    pairs = [(val[(a, pattern, size, ta, n)], val[(b, pattern, sb, tb, n)]) for n in reps
             if (a, pattern, size, ta, n) in val and (b, pattern, sb, tb, n) in val]
    if not pairs:
        print(f"{label}: no pairs")
        return
    rs = [x / y for x, y in pairs]
    fa, fb = statistics.median(x for x, _ in pairs), statistics.median(y for _, y in pairs)
    unit = "msgs/s" if pattern == "push_pull" else "µs p50"
    print(f"{label}: {fa:,.0f} against {fb:,.0f} {unit}, {statistics.median(rs):.2f} "
          f"[{min(rs):.2f}–{max(rs):.2f}] (n={len(rs)})")


for t in ("quic", "unix"):
    show(f"Python one await ÷ pyzmq sync, 64 B, {t}", "weida-py", "pyzmq", "push_pull", 64, t, zmq[t])
    show(f"Python one await ÷ zmq.asyncio, 64 B, {t}", "weida-py", "pyzmq asyncio", "push_pull", 64, t, zmq[t])
    show(f"Python batched ÷ pyzmq sync, 64 B, {t}", "weida-py batch", "pyzmq", "push_pull", 64, t, zmq[t])
    show(f"Node one await ÷ zeromq.js, 64 B, {t}", "weida-node", "zeromq.js", "push_pull", 64, t, zmq[t])
    show(f"Node 64 B ÷ Node 1 KiB (msgs/s), {t}", "weida-node", "weida-node", "push_pull", 64, t, t, 1024)
    show(f"Python Req/Rep p50 ÷ pyzmq sync, {t}", "weida-py", "pyzmq", "req_rep", 64, t, zmq[t])
    show(f"Node Req/Rep p50 ÷ zeromq.js, {t}", "weida-node", "zeromq.js", "req_rep", 64, t, zmq[t])
show("Rust Req/Rep p50 ÷ raw quinn bidi, quic", "weida", "quinn-stream", "req_rep", 64, "quic", "quic")
show("Rust Push/Pull 64 B ÷ raw quinn long stream, quic", "weida", "quinn-long", "push_pull", 64, "quic", "quic")
