"""weida's Pub/Sub rows divided by pyzmq's of the same repetition (QUIC by tcp, AF_UNIX by
ipc), median [min–max]: python3 ratios.py (in this folder)."""

import json
import statistics

recs = json.load(open("targets/results.json"))["records"]
rate = {(r["system"], r["width"], r["transport"], r["rep"]): r["copies_per_s"] for r in recs}
reps = sorted({r["rep"] for r in recs})
ref = {"quic": "tcp", "unix": "ipc"}
for width in (1, 16):
    for system in ("weida", "weida-py", "weida-node"):
        for t in ("quic", "unix"):
            pairs = [(rate[(system, width, t, n)], rate[(("pyzmq", width, ref[t], n))]) for n in reps
                     if (system, width, t, n) in rate and ("pyzmq", width, ref[t], n) in rate]
            if not pairs:
                continue
            rs = [v / p for v, p in pairs]
            print(f"64 B ×{width} {system} {t}: {statistics.median(v for v, _ in pairs) / 1e6:.2f}M copies/s, "
                  f"÷ pyzmq {ref[t]} {statistics.median(rs):.2f} [{min(rs):.2f}–{max(rs):.2f}]")
    for peer in ("pyzmq", "zeromq.js"):
        for t in ("tcp", "ipc"):
            vs = [v for (s, w, tt, _), v in rate.items() if (s, w, tt) == (peer, width, t)]
            if vs:
                print(f"64 B ×{width} {peer} {t}: {statistics.median(vs) / 1e6:.2f}M copies/s")
