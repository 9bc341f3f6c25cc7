#!/usr/bin/env python3
"""A deliberately broken agent for the runner's self-test: it speaks the control protocol
perfectly and does nothing. Every op is acknowledged.

    lying_agent.py lazy        every op answers {"ok": true, "result": {}}
    lying_agent.py plausible   every op answers a well-formed, plausible result it made up
                               (a request "echoes" its own body, a bind returns the address it
                               was given, ...), but nothing is ever sent and no event is emitted
    lying_agent.py crash       answers hello, then exits at the first op
    lying_agent.py unsupported answers every op but hello AGENT_UNSUPPORTED (naming the op)

The runner must fail every cell it runs with any of them (conformance/runner/test_runner.py),
unless its registry entry lists the op `unsupported` answers for, with a reason: then it skips.
"""

import hashlib
import json
import sys

def summary(spec):
    if not isinstance(spec, dict):
        return {"size": 0, "sha256": hashlib.sha256(b"").hexdigest()}
    if "text" in spec:
        b = spec["text"].encode()
    elif "hex" in spec:
        b = bytes.fromhex(spec["hex"])
    else:
        n, off = spec.get("size", 0), spec.get("offset", 0)
        b = bytes(n) if spec.get("pattern") == "zero" else bytes((off + i) % 251 for i in range(n))
    return {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()}


def made_up(op, args, mode="plausible"):
    if mode == "lazy":
        return {}
    body = summary(args.get("body"))
    return {
        "runtime": {"fingerprint": "sha256:" + "ab" * 32},
        "bind": {"address": args.get("address", "")},
        "replier": {"address": "weida+inproc://made-up" + str(args.get("path", ""))},
        "puller": {"address": "weida+inproc://made-up" + str(args.get("path", ""))},
        "connect": {"peer_count": 1},
        "disconnect": {"removed": True},
        "peer_count": {"peer_count": 1},
        "request": {"body": body, "metadata": args.get("metadata") or {}, "path": "/", "peer": None},
        "reply_body": {"body": summary(None), "metadata": {}, "path": "/", "peer": None},
        "recv": {"body": summary(None), "metadata": {}, "path": "/", "peer": None},
        "drain": {"delivered": 0, "outstanding": 0},
        "write": {"written": body["size"]},
        "finish": {"delivered": True} if args.get("delivered") else {},
        "counters": dict.fromkeys(
            ["streams_opened", "streams_accepted", "streams_refused", "bytes_sent", "bytes_received",
             "connections_dialled", "connections_accepted", "receipts_delivered", "receipts_failed"], 0),
    }.get(op, {})


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "lazy"
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op, args = req.get("op"), req.get("args") or {}
        if op != "hello" and mode == "crash":
            sys.exit(3)
        if op == "hello":
            result = {"protocol": 1, "language": "python", "agent": f"lying-{mode}", "weida": "0"}
        elif mode == "unsupported":
            error = {"code": "AGENT_UNSUPPORTED", "message": f"no {op} here", "unsupported": op}
            print(json.dumps({"id": req["id"], "ok": False, "error": error}), flush=True)
            continue
        else:
            result = made_up(op, args, mode)
        print(json.dumps({"id": req["id"], "ok": True, "result": result}), flush=True)


if __name__ == "__main__":
    main()
